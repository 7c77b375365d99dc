//! What each provider refuses, checked on the request bodies the scripted server receives:
//! the rules the providers document and enforce (an empty conversation, a first message that is
//! not the user's, a tool call without its result or a result without its call, tool blocks
//! without tools), each with the provider's own 400 body and wording. The scripted server
//! ([`super::serve`]) answers every request that breaks one with that 400, as the provider
//! would, so a test against it fails where the real provider would refuse.

use crate::Protocol;
use serde_json::{Value, json};

/// Why a provider refuses a request: its own message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// The protocol of a chat request to `path` (`None` for any other request).
pub fn protocol_of(path: &str) -> Option<Protocol> {
    let path = path.split('?').next().unwrap_or_default();
    if path.ends_with("/messages") {
        Some(Protocol::Anthropic)
    } else if path.ends_with("/chat/completions") {
        Some(Protocol::OpenaiChat)
    } else if path.ends_with("/responses") {
        Some(Protocol::OpenaiResponses)
    } else if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
        Some(Protocol::Gemini)
    } else if path.ends_with("/api/chat") {
        Some(Protocol::Ollama)
    } else {
        None
    }
}

/// Check `body` as the provider speaking `protocol` does: `Err` with the message it refuses
/// it with. A new protocol does not compile here until its rules are written (Ollama checks
/// none of these).
pub fn check(protocol: Protocol, body: &Value) -> Result<(), Refusal> {
    match protocol {
        Protocol::Anthropic => anthropic(body),
        Protocol::OpenaiChat => openai_chat(body),
        Protocol::OpenaiResponses => openai_responses(body),
        Protocol::Gemini => gemini(body),
        Protocol::Ollama => Ok(()),
    }
    .map_err(Refusal)
}

/// The provider's 400 body for a refusal saying `message`.
pub fn refusal(protocol: Protocol, message: &str) -> Value {
    match protocol {
        Protocol::Anthropic => json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message}
        }),
        Protocol::OpenaiChat | Protocol::OpenaiResponses => json!({
            "error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": null}
        }),
        Protocol::Gemini => json!({
            "error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
        }),
        Protocol::Ollama => json!({"error": message}),
    }
}

/// OpenAI's Images API (`POST …/images/generations`; `Ok` for any other path): a prompt is
/// required; GPT Image models take no `response_format` and only their own sizes and
/// qualities; DALL·E 3 draws one image a call.
pub fn images(path: &str, body: &Value) -> Result<(), Refusal> {
    if !path
        .split('?')
        .next()
        .unwrap_or_default()
        .ends_with("/images/generations")
    {
        return Ok(());
    }
    let text = |k: &str| body.get(k).and_then(Value::as_str);
    let model = text("model").unwrap_or("dall-e-2");
    if text("prompt").is_none_or(str::is_empty) {
        return Err(Refusal("Missing required parameter: 'prompt'.".into()));
    }
    let one_of = |field: &str, allowed: &[&str]| -> Result<(), Refusal> {
        match text(field) {
            Some(v) if !allowed.contains(&v) => {
                let listed: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
                Err(Refusal(format!(
                    "Invalid value: '{v}'. Supported values are: {}.",
                    listed.join(", ")
                )))
            }
            _ => Ok(()),
        }
    };
    if model.starts_with("gpt-image") {
        if body.get("response_format").is_some() {
            return Err(Refusal("Unknown parameter: 'response_format'.".into()));
        }
        one_of("size", &["1024x1024", "1024x1536", "1536x1024", "auto"])?;
        one_of("quality", &["low", "medium", "high", "auto"])?;
    } else if model == "dall-e-3" {
        one_of("size", &["1024x1024", "1792x1024", "1024x1792"])?;
        one_of("quality", &["standard", "hd"])?;
        if body
            .get("n")
            .and_then(Value::as_u64)
            .is_some_and(|n| n != 1)
        {
            return Err(Refusal(
                "Invalid 'n': integer above maximum value. Expected a value <= 1, but got a larger value instead.".into(),
            ));
        }
    }
    match body.get("n").and_then(Value::as_u64) {
        Some(n) if !(1..=10).contains(&n) => Err(Refusal(format!(
            "Invalid 'n': integer out of range. Expected a value between 1 and 10, but got {n} instead."
        ))),
        _ => Ok(()),
    }
}

/// OpenAI's image edits (`POST …/images/edits`, a multipart form; `Ok` for any other path): an
/// `image` part and a `prompt` are required, and DALL·E 3 edits nothing.
pub fn image_edits(path: &str, raw: &[u8]) -> Result<(), Refusal> {
    if !path
        .split('?')
        .next()
        .unwrap_or_default()
        .ends_with("/images/edits")
    {
        return Ok(());
    }
    let has = |needle: &str| raw.windows(needle.len()).any(|w| w == needle.as_bytes());
    if !has("name=\"image\"") && !has("name=\"image[]\"") {
        return Err(Refusal("Missing required parameter: 'image'.".into()));
    }
    if !has("name=\"prompt\"") {
        return Err(Refusal("Missing required parameter: 'prompt'.".into()));
    }
    if has("name=\"model\"\r\n\r\ndall-e-3\r\n") {
        return Err(Refusal(
            "Invalid value: 'dall-e-3'. Value must be 'dall-e-2' or a GPT Image model.".into(),
        ));
    }
    Ok(())
}

/// Gemini's Veo (`POST …/models/{model}:predictLongRunning`; `Ok` for any other path): one
/// or more instances with a prompt, and only Veo's parameters with the values Veo 3 takes.
pub fn videos(path: &str, body: &Value) -> Result<(), Refusal> {
    if !path
        .split('?')
        .next()
        .unwrap_or_default()
        .ends_with(":predictLongRunning")
    {
        return Ok(());
    }
    let instances = array(body, "instances");
    if instances.is_empty() {
        return Err(Refusal(
            "* PredictLongRunningRequest.instances: instances is required".into(),
        ));
    }
    for (i, instance) in instances.iter().enumerate() {
        if instance["prompt"].as_str().is_none_or(str::is_empty) {
            return Err(Refusal(format!(
                "instances[{i}].prompt: a prompt is required"
            )));
        }
    }
    let Some(parameters) = body.get("parameters") else {
        return Ok(());
    };
    const KNOWN: [&str; 8] = [
        "aspectRatio",
        "resolution",
        "durationSeconds",
        "negativePrompt",
        "personGeneration",
        "sampleCount",
        "seed",
        "generateAudio",
    ];
    for key in parameters.as_object().into_iter().flatten().map(|(k, _)| k) {
        if !KNOWN.contains(&key.as_str()) {
            return Err(Refusal(format!(
                "Invalid JSON payload received. Unknown name \"{key}\" at 'parameters': Cannot find field."
            )));
        }
    }
    let text = |k: &str| parameters.get(k).and_then(Value::as_str);
    if text("aspectRatio").is_some_and(|a| !matches!(a, "16:9" | "9:16")) {
        return Err(Refusal("Aspect ratio must be one of 16:9, 9:16.".into()));
    }
    if text("resolution").is_some_and(|r| !matches!(r, "720p" | "1080p")) {
        return Err(Refusal("Resolution must be one of 720p, 1080p.".into()));
    }
    match parameters.get("durationSeconds") {
        None => Ok(()),
        Some(d) if matches!(d.as_u64(), Some(4 | 6 | 8)) => Ok(()),
        Some(d) => Err(Refusal(format!(
            "The number value for `durationSeconds` is out of bound: {d}. Please provide one of 4, 6, 8."
        ))),
    }
}

/// The recordings OpenAI writes down, by file name extension.
const TRANSCRIBABLE: [&str; 10] = [
    "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm",
];

/// OpenAI's audio endpoints (`Ok` for any other path): speech needs an `input` and takes
/// only its voices and formats; a transcription is a multipart form with a `file` and a
/// `model`.
pub fn audio(path: &str, body: &Value, raw: &[u8]) -> Result<(), Refusal> {
    let path = path.split('?').next().unwrap_or_default();
    if path.ends_with("/audio/speech") {
        let text = |k: &str| body.get(k).and_then(Value::as_str);
        if text("input").is_none_or(str::is_empty) {
            return Err(Refusal("Missing required parameter: 'input'.".into()));
        }
        let one_of = |field: &str, allowed: &[&str]| match text(field) {
            Some(v) if !allowed.contains(&v) => {
                let listed: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
                Err(Refusal(format!(
                    "Invalid value: '{v}'. Supported values are: {}.",
                    listed.join(", ")
                )))
            }
            _ => Ok(()),
        };
        one_of("voice", &crate::audio::VOICES)?;
        one_of("response_format", &crate::audio::SPEECH_FORMATS)?;
        if text("voice").is_none() {
            return Err(Refusal("Missing required parameter: 'voice'.".into()));
        }
    } else if path.ends_with("/audio/transcriptions") {
        let has = |name: &str| {
            let needle = format!("name=\"{name}\"");
            raw.windows(needle.len()).any(|w| w == needle.as_bytes())
        };
        if !has("file") {
            return Err(Refusal("Missing required parameter: 'file'.".into()));
        }
        if !has("model") {
            return Err(Refusal("you must provide a model parameter".into()));
        }
        // OpenAI judges a recording by its file name's extension.
        let named = String::from_utf8_lossy(raw)
            .split("filename=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(str::to_owned)
            .unwrap_or_default();
        let extension = named.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        if !extension.is_some_and(|e| TRANSCRIBABLE.contains(&e.as_str())) {
            return Err(Refusal(format!(
                "Invalid file format. Supported formats: {TRANSCRIBABLE:?}"
            )));
        }
    }
    Ok(())
}

fn array<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v[field].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn has_tools(body: &Value) -> bool {
    !array(body, "tools").is_empty()
}

/// Anthropic Messages.
fn anthropic(body: &Value) -> Result<(), String> {
    let messages = array(body, "messages");
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    if body.get("tool_choice").is_some() && !has_tools(body) {
        return Err("tool_choice: tool_choice may only be specified while providing tools".into());
    }
    anthropic_tools(body)?;
    anthropic_cache_control(body)?;
    let blocks = |m: &Value| -> Vec<Value> {
        match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        }
    };
    let last = messages.len() - 1;
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(format!(
                "messages.{i}.role: Input should be 'user' or 'assistant'"
            ));
        }
        if i == 0 && role != "user" {
            return Err("messages: first message must use the \"user\" role".into());
        }
        let content = blocks(m);
        let empty = content.is_empty()
            || content
                .iter()
                .all(|b| b["type"] == "text" && b["text"].as_str().is_none_or(str::is_empty));
        if empty && !(i == last && role == "assistant") {
            return Err(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
        let uses: Vec<&str> = content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
        let results: Vec<&str> = content
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str())
            .collect();
        if (!uses.is_empty() || !results.is_empty()) && !has_tools(body) {
            return Err(
                "Requests which include `tool_use` or `tool_result` blocks must define tools."
                    .into(),
            );
        }
        if let Some(late) = content
            .iter()
            .skip_while(|b| b["type"] == "tool_result")
            .position(|b| b["type"] == "tool_result")
        {
            return Err(format!(
                "messages.{i}.content.{late}: tool_result blocks must come first in the content of a user message, before any other block"
            ));
        }
        for (j, b) in content.iter().enumerate() {
            if b["type"] != "tool_result" {
                continue;
            }
            for (k, inner) in array(b, "content").iter().enumerate() {
                let kind = inner["type"].as_str().unwrap_or_default();
                if !matches!(kind, "text" | "image" | "search_result" | "document") {
                    return Err(format!(
                        "messages.{i}.content.{j}.tool_result.content.{k}: Input tag '{kind}' found using 'type' does not match any of the expected tags: 'document', 'image', 'search_result', 'text'"
                    ));
                }
            }
        }
        if !results.is_empty() {
            let previous: Vec<Value> = i
                .checked_sub(1)
                .map(|p| blocks(&messages[p]))
                .unwrap_or_default();
            for id in &results {
                let called = previous
                    .iter()
                    .any(|b| b["type"] == "tool_use" && b["id"].as_str() == Some(id));
                if !called {
                    return Err(format!(
                        "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    ));
                }
            }
        }
        if !uses.is_empty() {
            let next: Vec<Value> = messages.get(i + 1).map(blocks).unwrap_or_default();
            let missing: Vec<&str> = uses
                .iter()
                .filter(|id| {
                    !next.iter().any(|b| {
                        b["type"] == "tool_result" && b["tool_use_id"].as_str() == Some(id)
                    })
                })
                .copied()
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// OpenAI Chat Completions.
fn openai_chat(body: &Value) -> Result<(), String> {
    let messages = array(body, "messages");
    if messages.is_empty() {
        return Err("[] is too short - 'messages'".into());
    }
    if body.get("tool_choice").is_some() && !has_tools(body) {
        return Err(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
                .into(),
        );
    }
    openai_tools(body, OpenAiShape::Chat)?;
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let image = array(m, "content").iter().any(|p| p["type"] == "image_url");
        if image && role != "user" {
            return Err(format!(
                "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '{role}' contains an image URL."
            ));
        }
    }
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m["role"].as_str().unwrap_or_default() {
            "tool" => {
                return Err(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[{i}])"
                ));
            }
            "assistant" if !array(m, "tool_calls").is_empty() => {
                let calls: Vec<&str> = array(m, "tool_calls")
                    .iter()
                    .filter_map(|c| c["id"].as_str())
                    .collect();
                let mut answered = Vec::new();
                let mut j = i + 1;
                while j < messages.len() && messages[j]["role"] == "tool" {
                    let id = messages[j]["tool_call_id"].as_str().unwrap_or_default();
                    if !calls.contains(&id) {
                        return Err(format!(
                            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[{j}])"
                        ));
                    }
                    answered.push(id);
                    j += 1;
                }
                let missing: Vec<&str> = calls
                    .iter()
                    .filter(|c| !answered.contains(c))
                    .copied()
                    .collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                        missing.join(", ")
                    ));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// OpenAI Responses.
fn openai_responses(body: &Value) -> Result<(), String> {
    let input = match &body["input"] {
        Value::String(s) if !s.is_empty() => return Ok(()),
        Value::Array(a) if !a.is_empty() => a.as_slice(),
        _ => return Err("Missing required parameter: 'input'.".into()),
    };
    if body.get("tool_choice").is_some() && !has_tools(body) {
        return Err("Tool choice requires 'tools' to be specified.".into());
    }
    openai_tools(body, OpenAiShape::Responses)?;
    for (i, item) in input.iter().enumerate() {
        if item["type"] != "function_call_output" {
            continue;
        }
        match &item["output"] {
            Value::String(_) => {}
            Value::Array(parts) => {
                for (j, p) in parts.iter().enumerate() {
                    let kind = p["type"].as_str().unwrap_or_default();
                    if !matches!(kind, "input_text" | "input_image" | "input_file") {
                        return Err(format!(
                            "Invalid value: '{kind}'. Supported values are: 'input_text', 'input_image', and 'input_file'. (input[{i}].output[{j}].type)"
                        ));
                    }
                }
            }
            _ => {
                return Err(format!(
                    "Invalid type for 'input[{i}].output': expected one of a string or array of objects."
                ));
            }
        }
    }
    let calls: Vec<&str> = input
        .iter()
        .filter(|i| i["type"] == "function_call")
        .filter_map(|i| i["call_id"].as_str())
        .collect();
    let outputs: Vec<&str> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .filter_map(|i| i["call_id"].as_str())
        .collect();
    for id in &outputs {
        if !calls.contains(id) {
            return Err(format!(
                "No tool call found for function call output with call_id {id}."
            ));
        }
    }
    for id in &calls {
        if !outputs.contains(id) {
            return Err(format!("No tool output found for function call {id}."));
        }
    }
    Ok(())
}

/// Where an OpenAI API keeps a tool's function.
#[derive(Clone, Copy)]
enum OpenAiShape {
    /// Chat Completions: `tools[i].function.{name, description, parameters}`.
    Chat,
    /// Responses: `tools[i].{name, description, parameters}`.
    Responses,
}

/// The most tools a Chat Completions request may offer.
const OPENAI_MAX_TOOLS: usize = 128;

/// OpenAI's rules for function tools: names of letters, digits, `_` and `-` up to 64 long, an
/// object schema; on Chat Completions, at most 128 tools and descriptions up to 1,024
/// characters.
fn openai_tools(body: &Value, shape: OpenAiShape) -> Result<(), String> {
    let tools = array(body, "tools");
    if matches!(shape, OpenAiShape::Chat) && tools.len() > OPENAI_MAX_TOOLS {
        return Err(format!(
            "Invalid 'tools': array too long. Expected an array with maximum length {OPENAI_MAX_TOOLS}, but got an array with length {} instead.",
            tools.len()
        ));
    }
    for (i, tool) in tools.iter().enumerate() {
        if tool["type"] != "function" {
            continue;
        }
        let (f, at) = match shape {
            OpenAiShape::Chat => (&tool["function"], format!("tools[{i}].function")),
            OpenAiShape::Responses => (tool, format!("tools[{i}]")),
        };
        let name = f["name"].as_str().unwrap_or_default();
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            || name.is_empty()
        {
            return Err(format!(
                "Invalid '{at}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            ));
        }
        if name.len() > 64 {
            return Err(format!(
                "Invalid '{at}.name': string too long. Expected a string with maximum length 64, but got a string with length {} instead.",
                name.len()
            ));
        }
        let description = f["description"]
            .as_str()
            .unwrap_or_default()
            .chars()
            .count();
        if matches!(shape, OpenAiShape::Chat) && description > 1024 {
            return Err(format!(
                "Invalid '{at}.description': string too long. Expected a string with maximum length 1024, but got a string with length {description} instead."
            ));
        }
        if let Some(params) = f.get("parameters")
            && params["type"] != "object"
        {
            let got = params["type"].as_str().unwrap_or("None");
            return Err(format!(
                "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
            ));
        }
    }
    Ok(())
}

/// Anthropic's rules for custom tools: unique names of letters, digits, `_` and `-` up to 128
/// long, an object `input_schema` whose property names are letters, digits, `_`, `.` and `-`
/// up to 64 long.
/// Anthropic takes at most four `cache_control` breakpoints, never on an empty text block.
fn anthropic_cache_control(body: &Value) -> Result<(), String> {
    let mut marked: Vec<&Value> = Vec::new();
    marked.extend(
        array(body, "tools")
            .iter()
            .filter(|t| t.get("cache_control").is_some()),
    );
    if let Some(system) = body["system"].as_array() {
        marked.extend(system.iter().filter(|b| b.get("cache_control").is_some()));
    }
    for m in array(body, "messages") {
        if let Some(content) = m["content"].as_array() {
            marked.extend(content.iter().filter(|b| b.get("cache_control").is_some()));
        }
    }
    if marked.len() > 4 {
        return Err(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {}.",
            marked.len()
        ));
    }
    if marked
        .iter()
        .any(|b| b["type"] == "text" && b["text"].as_str().is_none_or(str::is_empty))
    {
        return Err("cache_control cannot be set for empty text blocks".into());
    }
    Ok(())
}

fn anthropic_tools(body: &Value) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, tool) in array(body, "tools").iter().enumerate() {
        if tool.get("input_schema").is_none() {
            continue; // A server tool (web search, code execution) has a type instead.
        }
        let name = tool["name"].as_str().unwrap_or_default();
        if name.is_empty()
            || name.len() > 128
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            ));
        }
        if !seen.insert(name) {
            return Err("tools: Tool names must be unique.".into());
        }
        let schema = &tool["input_schema"];
        if schema["type"] != "object" {
            return Err(format!(
                "tools.{i}.custom.input_schema.type: Input should be 'object'"
            ));
        }
        let key_ok = |k: &str| {
            !k.is_empty()
                && k.len() <= 64
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        };
        if schema["properties"]
            .as_object()
            .is_some_and(|p| !p.keys().all(|k| key_ok(k)))
        {
            return Err(format!(
                "tools.{i}.custom.input_schema.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{{1,64}}$'"
            ));
        }
    }
    Ok(())
}

/// Gemini `generateContent`.
fn gemini(body: &Value) -> Result<(), String> {
    if body.get("cachedContent").is_some()
        && ["systemInstruction", "tools", "toolConfig"]
            .iter()
            .any(|f| body.get(*f).is_some())
    {
        return Err("CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.".into());
    }
    gemini_tools(body, "GenerateContentRequest")?;
    let contents = array(body, "contents");
    if contents.is_empty() {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    }
    let count = |c: &Value, kind: &str| {
        array(c, "parts")
            .iter()
            .filter(|p| p.get(kind).is_some())
            .count()
    };
    for (i, c) in contents.iter().enumerate() {
        let role = c["role"].as_str().unwrap_or("user");
        if role != "user" && role != "model" {
            return Err(format!(
                "Please use a valid role: user, model. (contents[{i}].role: {role})"
            ));
        }
        if array(c, "parts").is_empty() {
            return Err(format!(
                "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            ));
        }
        let calls = count(c, "functionCall");
        if calls > 0 {
            // A function-response turn is a user turn too.
            let after_user = i
                .checked_sub(1)
                .is_some_and(|p| contents[p]["role"].as_str().unwrap_or("user") == "user");
            if !after_user {
                return Err("Please ensure that function call turn comes immediately after a user turn or after a function response turn.".into());
            }
            let responses = contents
                .get(i + 1)
                .map_or(0, |n| count(n, "functionResponse"));
            if responses != calls {
                return Err("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.".into());
            }
        }
        let responses = count(c, "functionResponse");
        if responses > 0 {
            let after_call = i
                .checked_sub(1)
                .is_some_and(|p| count(&contents[p], "functionCall") > 0);
            if !after_call {
                return Err("Please ensure that function response turn comes immediately after a function call turn.".into());
            }
        }
    }
    Ok(())
}

/// Gemini `cachedContents.create`: the tokens it holds, or why it is refused (a model not
/// named as `models/…`, a tool Gemini refuses, less than the model's minimum: 1,024 tokens
/// for Flash models, 4,096 for the others; counted here at about four bytes a token).
pub fn gemini_cache(body: &Value) -> Result<u64, Refusal> {
    let model = body["model"].as_str().unwrap_or_default();
    if !model.starts_with("models/") {
        return Err(Refusal(format!(
            "* CreateCachedContentRequest.cached_content.model: unexpected model name format: {model}"
        )));
    }
    gemini_tools(body, "CreateCachedContentRequest.cached_content").map_err(Refusal)?;
    let held: String = ["systemInstruction", "tools", "toolConfig", "contents"]
        .iter()
        .filter_map(|f| body.get(*f).map(Value::to_string))
        .collect();
    let tokens = held.len() as u64 / 4;
    let min = if model.contains("flash") { 1024 } else { 4096 };
    if tokens < min {
        return Err(Refusal(format!(
            "Cached content is too small. total_token_count={tokens}, min_total_token_count={min}"
        )));
    }
    Ok(tokens)
}

/// Gemini's rules for function declarations, in a request or a cache.
fn gemini_tools(body: &Value, request: &str) -> Result<(), String> {
    for (t, tool) in array(body, "tools").iter().enumerate() {
        for (f, decl) in array(tool, "functionDeclarations").iter().enumerate() {
            let name = decl["name"].as_str().unwrap_or_default();
            let opens = name
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
            if !opens
                || name.len() > 64
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            {
                return Err(format!(
                    "* {request}.tools[{t}].function_declarations[{f}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.) or dashes (-), with a maximum length of 64."
                ));
            }
            if let Some(word) = unknown_schema_field(&decl["parameters"]) {
                return Err(format!(
                    "Invalid JSON payload received. Unknown name \"{word}\" at 'tools[{t}].function_declarations[{f}].parameters': Cannot find field."
                ));
            }
            if let Some(at) = enum_not_on_a_string(&decl["parameters"], "parameters") {
                return Err(format!(
                    "* {request}.tools[{t}].function_declarations[{f}].{at}.enum: only allowed for STRING type"
                ));
            }
        }
    }
    Ok(())
}

/// Where in `schema` (a path from `at`) an `enum` constrains something other than a string:
/// Gemini takes enumerations of strings only.
fn enum_not_on_a_string(schema: &Value, at: &str) -> Option<String> {
    let m = schema.as_object()?;
    if m.contains_key("enum")
        && m.get("type")
            .is_some_and(|t| t != "string" && t != "STRING")
    {
        return Some(at.to_owned());
    }
    m.iter().find_map(|(k, v)| match (k.as_str(), v) {
        ("properties", Value::Object(props)) => props
            .iter()
            .find_map(|(name, p)| enum_not_on_a_string(p, &format!("{at}.properties[{name}]"))),
        ("items", _) => enum_not_on_a_string(v, &format!("{at}.items")),
        ("anyOf" | "oneOf" | "allOf", Value::Array(all)) => all
            .iter()
            .enumerate()
            .find_map(|(i, s)| enum_not_on_a_string(s, &format!("{at}.{k}[{i}]"))),
        _ => None,
    })
}

/// A keyword Gemini's OpenAPI-subset schema does not have, anywhere in `schema`.
fn unknown_schema_field(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(m) => m.iter().find_map(|(k, v)| {
            if matches!(
                k.as_str(),
                "$ref" | "$defs" | "definitions" | "$schema" | "additionalProperties" | "const"
            ) {
                return Some(k.clone());
            }
            if k == "type" && v.is_array() {
                return Some("type".into());
            }
            // Property names are the caller's words, not keywords.
            if k == "properties" {
                return v
                    .as_object()
                    .and_then(|p| p.values().find_map(unknown_schema_field));
            }
            unknown_schema_field(v)
        }),
        Value::Array(a) => a.iter().find_map(unknown_schema_field),
        _ => None,
    }
}
