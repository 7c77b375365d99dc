//! What rein sends: one conversation (system prompt, an image, assistant reasoning with a
//! signature, a tool call with its Gemini thought signature, the tool's result) rendered by
//! every protocol, snapshotted.

use rein_core::message::{ContentPart, Message, Reasoning, ToolCall, ToolStatus};
use rein_model::request::{ReasoningConfig, ReasoningEffort};
use rein_model::{ChatRequest, Protocol, ToolSpec};
use serde_json::json;
use std::sync::Arc;

fn conversation() -> ChatRequest {
    let mut user = Message::user("What is in this image, and what is the weather in Paris?");
    user.content.push(ContentPart::Image {
        url: "data:image/png;base64,iVBORw0KGgo=".into(),
        media_type: Some("image/png".into()),
        detail: None,
    });
    let mut call = ToolCall::new("call_1", "weather", "get", r#"{"city":"Paris"}"#);
    call.thought_signature = Some("c2lnbmF0dXJl".into());
    let mut assistant = Message::assistant("Let me check the weather.");
    assistant.reasoning = Some(Reasoning {
        text: "The user wants weather.".into(),
        signature: Some("EqQBsig==".into()),
        redacted: vec![],
        encrypted: Some(rein_core::message::EncryptedReasoning {
            id: "rs_1".into(),
            content: "ZW5jcnlwdGVkLXJlYXNvbmluZw==".into(),
        }),
    });
    assistant.tool_calls = vec![call.clone()];
    let result = Message::tool_result(
        &call,
        Some(assistant.id),
        ToolStatus::Succeeded,
        "18°C, sunny",
    );
    let messages = vec![Message::system("You are terse."), user, assistant, result]
        .into_iter()
        .map(Arc::new)
        .collect();
    let mut req = ChatRequest::new("model-x", messages);
    req.tools = vec![ToolSpec {
        name: "weather__get".into(),
        description: "Current weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
    }];
    req.temperature = Some(0.25);
    req.max_tokens = Some(512);
    req.reasoning = Some(ReasoningConfig {
        effort: Some(ReasoningEffort::Medium),
        budget_tokens: Some(2048),
    });
    req.stop = vec!["END".into()];
    req
}

/// Every protocol rein speaks.
const PROTOCOLS: [Protocol; 5] = [
    Protocol::OpenaiChat,
    Protocol::OpenaiResponses,
    Protocol::Anthropic,
    Protocol::Gemini,
    Protocol::Ollama,
];

fn snapshot(protocol: Protocol) -> serde_json::Value {
    let w = protocol.build(&conversation(), true);
    json!({"path": w.path, "body": w.body})
}

#[test]
fn openai_chat_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::OpenaiChat));
}

#[test]
fn openai_responses_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::OpenaiResponses));
}

#[test]
fn anthropic_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::Anthropic));
}

#[test]
fn gemini_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::Gemini));
}

#[test]
fn ollama_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::Ollama));
}

#[test]
fn responses_asks_for_encrypted_reasoning_only_where_the_model_reasons() {
    let mut req = conversation();
    req.reasoning = None;
    let body = |req: &ChatRequest| Protocol::OpenaiResponses.build(req, true).body;
    // Models that do not reason refuse the include ("Encrypted content is not supported").
    assert!(body(&req).get("include").is_none());
    req.replay_reasoning = true;
    assert_eq!(
        body(&req)["include"],
        json!(["reasoning.encrypted_content"])
    );
    // A turn without encrypted reasoning sends no reasoning item (it could not be resolved).
    let mut plain = (*req.messages[2]).clone();
    plain.reasoning.as_mut().unwrap().encrypted = None;
    req.messages[2] = Arc::new(plain);
    let input = body(&req)["input"].clone();
    assert!(
        !input
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "reasoning"),
        "{input}"
    );
}

/// The conversation, as each protocol renders it, is a request its provider takes.
#[test]
fn every_protocol_renders_a_request_its_provider_takes() {
    use rein_model::testing::validate::{check, protocol_of};
    for protocol in PROTOCOLS {
        let w = protocol.build(&conversation(), true);
        let protocol = protocol_of(&w.path).expect("a chat path");
        check(protocol, &w.body).unwrap_or_else(|e| panic!("{protocol:?}: {e}\n{}", w.body));
    }
}

/// Force-finish: the tools withdrawn with a choice of none while the history holds a tool
/// call and its result; every provider takes it (Anthropic refuses tool blocks without tools).
#[test]
fn withdrawn_tools_stay_defined_and_every_provider_takes_the_request() {
    use rein_model::testing::validate::{check, protocol_of};
    for protocol in PROTOCOLS {
        let mut req = conversation();
        req.tool_choice = rein_model::ToolChoice::None;
        let w = protocol.build(&req, true);
        let protocol = protocol_of(&w.path).expect("a chat path");
        check(protocol, &w.body).unwrap_or_else(|e| panic!("{protocol:?}: {e}\n{}", w.body));
    }
    // Without tools, Anthropic's refusal is the one the provider sends.
    let mut bare = conversation();
    bare.tools.clear();
    let w = Protocol::Anthropic.build(&bare, true);
    let refused = check(Protocol::Anthropic, &w.body).unwrap_err().0;
    assert!(refused.contains("must define tools"), "{refused}");
}

/// A tool whose schema keeps its types in `$defs` (one of them recursive), with a literal and
/// a nullable field, as an MCP server generated from Python models declares it: every
/// provider takes it, and Gemini's copy has no reference left.
#[test]
fn schemas_with_definitions_and_recursion_reach_every_provider_without_dangling_references() {
    use rein_model::testing::validate::{check, protocol_of};
    let schema = json!({
        "$defs": {
            "Node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name"]},
            "Filter": {"type": "object", "properties": {"field": {"type": "string"}, "value": {"type": ["string", "null"]}}}
        },
        "type": "object",
        "properties": {
            "root": {"$ref": "#/$defs/Node"},
            "filters": {"type": "array", "items": {"$ref": "#/$defs/Filter"}},
            "mode": {"const": "strict"}
        },
        "required": ["root"]
    });
    for protocol in PROTOCOLS {
        let mut req = conversation();
        req.tools.push(ToolSpec {
            name: "tree__walk".into(),
            description: "Walk a tree".into(),
            parameters: schema.clone(),
        });
        let w = protocol.build(&req, true);
        let protocol = protocol_of(&w.path).expect("a chat path");
        check(protocol, &w.body).unwrap_or_else(|e| panic!("{protocol:?}: {e}\n{}", w.body));
        if protocol == Protocol::Gemini {
            let params = &w.body["tools"][0]["functionDeclarations"][1]["parameters"];
            assert!(!rein_model::protocol::schema::has_ref(params), "{params}");
            assert_eq!(
                params["properties"]["root"]["properties"]["name"]["type"],
                "string"
            );
            assert_eq!(params["properties"]["mode"]["enum"], json!(["strict"]));
            assert_eq!(
                params["properties"]["filters"]["items"]["properties"]["value"]["nullable"],
                true
            );
        }
    }
}

/// Tools as MCP servers declare them, at the edges of what providers take: a description of
/// 3,000 characters, a schema with no type (`{}`), parameters named like schema keywords.
/// Every protocol renders a request its provider takes; OpenAI Chat cuts the description to
/// its 1,024 characters and gives the model the whole text in the system message; nothing is
/// dropped from the parameters.
#[test]
fn tool_definitions_are_rendered_within_every_providers_limits() {
    use rein_model::testing::validate::{check, protocol_of};
    let long = "Search the archive. ".repeat(150);
    for protocol in PROTOCOLS {
        let mut req = conversation();
        req.tools.push(ToolSpec {
            name: "archive__search".into(),
            description: long.clone(),
            parameters: json!({
                "type": "object",
                "properties": {"const": {"type": "string"}, "definitions": {"type": "array", "items": {"type": "string"}}},
                "required": ["const"]
            }),
        });
        req.tools.push(ToolSpec {
            name: "clock__now".into(),
            description: "The time".into(),
            parameters: json!({}),
        });
        let w = protocol.build(&req, true);
        let protocol = protocol_of(&w.path).expect("a chat path");
        check(protocol, &w.body).unwrap_or_else(|e| panic!("{protocol:?}: {e}\n{}", w.body));
        let body = w.body.to_string();
        assert!(
            body.contains("\"definitions\"") && body.contains("\"const\""),
            "{protocol:?}: {body}"
        );
        if protocol == Protocol::OpenaiChat {
            let d = w.body["tools"][1]["function"]["description"]
                .as_str()
                .unwrap();
            assert_eq!(d.chars().count(), 1024, "{d}");
            assert!(d.ends_with("(continued in the instructions)"));
            let system = w.body["messages"][0]["content"].as_str().unwrap();
            assert!(system.starts_with("You are terse."), "{system}");
            assert!(system.contains(&format!("`archive__search`:\n{long}")));
            assert_eq!(
                w.body["tools"][2]["function"]["parameters"],
                json!({"type": "object"})
            );
        }
        if protocol == Protocol::Gemini {
            let decl = &w.body["tools"][0]["functionDeclarations"][2];
            assert_eq!(decl["name"], "clock__now");
            assert!(decl.get("parameters").is_none(), "{decl}");
        }
    }
}

/// The validators refuse, in the provider's words, the tool definitions each provider refuses.
#[test]
fn validators_refuse_tool_definitions_the_providers_refuse() {
    use rein_model::testing::validate::check;
    let chat = |tools: serde_json::Value| json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools});
    let f = |name: &str, description: &str, parameters: serde_json::Value| json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}});
    let object = json!({"type": "object", "properties": {}});
    let refused =
        |protocol: Protocol, body: serde_json::Value| check(protocol, &body).unwrap_err().0;
    assert!(
        refused(
            Protocol::OpenaiChat,
            chat(json!([f("a.b", "", object.clone())]))
        )
        .contains("does not match pattern")
    );
    assert!(
        refused(
            Protocol::OpenaiChat,
            chat(json!([f(&"a".repeat(65), "", object.clone())]))
        )
        .contains("maximum length 64")
    );
    assert!(
        refused(
            Protocol::OpenaiChat,
            chat(json!([f("a", &"d".repeat(1025), object.clone())]))
        )
        .contains("maximum length 1024")
    );
    assert!(
        refused(Protocol::OpenaiChat, chat(json!([f("a", "", json!({}))])))
            .contains("got 'type: \"None\"'")
    );
    let many: Vec<_> = (0..129)
        .map(|i| f(&format!("t{i}"), "", object.clone()))
        .collect();
    assert!(refused(Protocol::OpenaiChat, chat(json!(many))).contains("maximum length 128"));
    let responses = json!({"model": "m", "input": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "name": "a/b", "parameters": object}]});
    assert!(refused(Protocol::OpenaiResponses, responses).contains("'tools[0].name'"));
    let anthropic = |tools: serde_json::Value| json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": tools});
    let t = |name: &str, schema: serde_json::Value| json!({"name": name, "description": "", "input_schema": schema});
    assert!(
        refused(
            Protocol::Anthropic,
            anthropic(json!([t("a.b", object.clone())]))
        )
        .contains("custom.name")
    );
    assert!(
        refused(
            Protocol::Anthropic,
            anthropic(json!([t("a", object.clone()), t("a", object.clone())]))
        )
        .contains("must be unique")
    );
    assert!(
        refused(
            Protocol::Anthropic,
            anthropic(json!([t("a", json!({"properties": {}}))]))
        )
        .contains("Input should be 'object'")
    );
    assert!(
        refused(
            Protocol::Anthropic,
            anthropic(json!([t(
                "a",
                json!({"type": "object", "properties": {"名前": {"type": "string"}}})
            )]))
        )
        .contains("Property keys")
    );
    let gemini = |name: &str| json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [{"name": name, "parameters": {"type": "object"}}]}]});
    assert!(refused(Protocol::Gemini, gemini("3d__print")).contains("Must start with a letter"));
    assert!(check(Protocol::Gemini, &gemini("_3d.print-x")).is_ok());
    // Gemini enumerates strings only.
    let numbers = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [{"name": "film", "parameters": {"type": "object", "properties": {"seconds": {"type": "integer", "enum": [4, 6, 8]}}}}]}]});
    assert!(
        refused(Protocol::Gemini, numbers)
            .contains("parameters.properties[seconds].enum: only allowed for STRING type")
    );
    assert!(
        check(
            Protocol::Anthropic,
            &anthropic(json!([t("a", object.clone())]))
        )
        .is_ok()
    );
}

/// Anthropic's cache breakpoints by the rule: the last tool, the system prompt, and the last
/// block of the last message the next call sends again (a step's notes after it are not
/// cached; a thinking block never carries one); the validator takes the result, and refuses a
/// fifth breakpoint with Anthropic's words.
#[test]
fn anthropic_breakpoints_sit_where_the_rule_says() {
    let marked = |req: &ChatRequest| {
        let body = Protocol::Anthropic.build(req, true).body;
        assert!(
            rein_model::testing::validate::check(Protocol::Anthropic, &body).is_ok(),
            "{body:#}"
        );
        let mut at = Vec::new();
        if body["tools"][0].get("cache_control").is_some() {
            at.push("tool".to_owned());
        }
        if body["system"][0].get("cache_control").is_some() {
            at.push("system".to_owned());
        }
        for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
            for (j, b) in m["content"].as_array().unwrap().iter().enumerate() {
                if b.get("cache_control").is_some() {
                    at.push(format!("{i}.{j} {}", b["type"].as_str().unwrap()));
                }
            }
        }
        at
    };
    let mut req = conversation();
    assert!(marked(&req).is_empty(), "no marks unless asked");
    req.prompt_cache = Some(rein_model::PromptCache::default());
    // user (text, image), assistant (thinking, text, tool_use), user (tool_result).
    assert_eq!(marked(&req), ["tool", "system", "2.0 tool_result"]);
    // This step's note after the conversation is not cached.
    let mut with_note = req.clone();
    with_note
        .messages
        .push(Arc::new(Message::user("[Runtime note] Your plan: ...")));
    with_note.prompt_cache = Some(rein_model::PromptCache {
        stable_messages: Some(4),
        long_ttl: true,
        key: None,
    });
    assert_eq!(marked(&with_note), ["tool", "system", "2.0 tool_result"]);
    let body = Protocol::Anthropic.build(&with_note, true).body;
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    // Up to the assistant's turn: its last block is the tool use, not its thinking.
    req.prompt_cache = Some(rein_model::PromptCache {
        stable_messages: Some(3),
        long_ttl: false,
        key: None,
    });
    assert_eq!(marked(&req), ["tool", "system", "1.2 tool_use"]);
    // A fifth breakpoint is refused as Anthropic refuses it.
    let mut body = Protocol::Anthropic.build(&req, true).body;
    for m in body["messages"].as_array_mut().unwrap() {
        for b in m["content"].as_array_mut().unwrap() {
            if b["type"] != "thinking" {
                b["cache_control"] = json!({"type": "ephemeral"});
            }
        }
    }
    let refused = rein_model::testing::validate::check(Protocol::Anthropic, &body).unwrap_err();
    assert!(
        refused
            .0
            .starts_with("A maximum of 4 blocks with cache_control may be provided."),
        "{refused}"
    );
}

/// The conversation, its tool result carrying a plot the call drew.
fn with_tool_image() -> ChatRequest {
    let mut req = conversation();
    let mut result = (*req.messages[3]).clone();
    result.content.push(ContentPart::Image {
        url: "data:image/png;base64,iVBORw0KGgo=".into(),
        media_type: Some("image/png".into()),
        detail: None,
    });
    req.messages[3] = Arc::new(result);
    req
}

/// A tool result's image reaches a model that can see where each provider takes an image
/// answering a call: OpenAI Chat in a user message after the turn's tool messages (it refuses
/// one in a tool message), Responses and Anthropic inside the result, Gemini after the
/// function responses of the turn, Ollama as the tool message's images; every provider takes
/// the request.
#[test]
fn a_tool_results_image_sits_where_each_provider_takes_it() {
    use rein_model::testing::validate::{check, protocol_of};
    let req = with_tool_image();
    for protocol in PROTOCOLS {
        let w = protocol.build(&req, true);
        let checked = protocol_of(&w.path).expect("a chat path");
        check(checked, &w.body).unwrap_or_else(|e| panic!("{protocol:?}: {e}\n{}", w.body));
        let b = &w.body;
        match protocol {
            Protocol::OpenaiChat => {
                let last = b["messages"].as_array().unwrap().last().unwrap().clone();
                assert_eq!(last["role"], "user", "{b}");
                assert_eq!(
                    last["content"][0]["text"],
                    "The images of tool call call_1:"
                );
                assert_eq!(
                    last["content"][1]["image_url"]["url"],
                    "data:image/png;base64,iVBORw0KGgo="
                );
                let tool = &b["messages"].as_array().unwrap()[3];
                assert_eq!(
                    tool["content"], "18°C, sunny",
                    "the tool message stays text"
                );
            }
            Protocol::OpenaiResponses => {
                let out = b["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|i| i["type"] == "function_call_output")
                    .unwrap();
                assert_eq!(
                    out["output"][0],
                    json!({"type": "input_text", "text": "18°C, sunny"})
                );
                assert_eq!(out["output"][1]["type"], "input_image");
            }
            Protocol::Anthropic => {
                let last = b["messages"].as_array().unwrap().last().unwrap();
                let result = &last["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(result["content"][0]["text"], "18°C, sunny");
                assert_eq!(result["content"][1]["source"]["data"], "iVBORw0KGgo=");
            }
            Protocol::Gemini => {
                let last = b["contents"].as_array().unwrap().last().unwrap();
                let parts = last["parts"].as_array().unwrap();
                assert!(parts[0].get("functionResponse").is_some(), "{last}");
                assert_eq!(parts[1]["text"], "The images of the call of weather__get:");
                assert_eq!(parts[2]["inlineData"]["data"], "iVBORw0KGgo=");
            }
            Protocol::Ollama => {
                let last = b["messages"].as_array().unwrap().last().unwrap();
                assert_eq!(last["role"], "tool");
                assert_eq!(last["images"], json!(["iVBORw0KGgo="]));
            }
        }
    }
}

/// What the providers refuse: OpenAI an image in a tool message, Responses an output part of
/// another type, Anthropic a block of another kind in a tool result.
#[test]
fn validators_refuse_a_tool_image_where_the_provider_refuses_it() {
    use rein_model::testing::validate::check;
    let req = with_tool_image();
    let mut chat = Protocol::OpenaiChat.build(&req, true).body;
    chat["messages"][3]["content"] =
        json!([{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]);
    let refused = check(Protocol::OpenaiChat, &chat).unwrap_err().0;
    assert!(
        refused.contains("Image URLs are only allowed for messages with role 'user', but this message with role 'tool'"),
        "{refused}"
    );
    let mut responses = Protocol::OpenaiResponses.build(&req, true).body;
    let at = responses["input"]
        .as_array()
        .unwrap()
        .iter()
        .position(|i| i["type"] == "function_call_output")
        .unwrap();
    responses["input"][at]["output"][1]["type"] = json!("image_url");
    let refused = check(Protocol::OpenaiResponses, &responses).unwrap_err().0;
    assert!(refused.contains("Supported values are"), "{refused}");
    let mut anthropic = Protocol::Anthropic.build(&req, true).body;
    let last = anthropic["messages"].as_array().unwrap().len() - 1;
    anthropic["messages"][last]["content"][0]["content"][1]["type"] = json!("image_url");
    let refused = check(Protocol::Anthropic, &anthropic).unwrap_err().0;
    assert!(
        refused.contains("does not match any of the expected tags"),
        "{refused}"
    );
}

/// A model that cannot see reads a note where a tool result's image was, even when the
/// request may not degrade (the person did not send it); an image the person sent still
/// refuses such a request.
#[test]
fn a_model_that_cannot_see_reads_a_note_for_a_tool_results_image() {
    let caps = rein_model::catalog::Capabilities {
        vision: false,
        ..rein_model::catalog::Capabilities::ASSUMED
    };
    let mut req = with_tool_image();
    req.allow_degrade = false;
    let refused = rein_model::catalog::check_capabilities(&mut req, "blind", &caps).unwrap_err();
    assert!(
        refused.to_string().contains("does not accept images"),
        "{refused}"
    );
    // Without the person's image, the tool's image becomes a line of the result.
    let mut req = with_tool_image();
    req.allow_degrade = false;
    let mut user = (*req.messages[1]).clone();
    user.content.truncate(1);
    req.messages[1] = Arc::new(user);
    rein_model::catalog::check_capabilities(&mut req, "blind", &caps).unwrap();
    assert_eq!(
        req.messages[3].text_content(),
        "18°C, sunny\n[image omitted: an image the call produced; this model cannot see images]"
    );
    let w = Protocol::OpenaiChat.build(&req, true);
    assert_eq!(
        w.body["messages"].as_array().unwrap().len(),
        4,
        "no image message"
    );
}
