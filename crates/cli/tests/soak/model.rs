//! The soak's model: an OpenAI-protocol server on loopback that answers by what the request's
//! last user message asks (so restarted steps, sub-agents and task runs each get the answer
//! their own conversation calls for, in any order), streamed piece by piece after a delay that
//! stands for the provider's time.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What the soak's scenarios put in their first message; the model reads it back.
pub const CALC: &str = "SOAK calc";
pub const LEDGER: &str = "SOAK ledger";
pub const DELEGATE: &str = "SOAK delegate";
pub const FOREVER: &str = "SOAK forever";
pub const SUB: &str = "SOAK-SUB";
pub const TASK: &str = "SOAK-TASK";

/// Calculator rounds of a `CALC` request before its answer.
pub const CALC_ROUNDS: usize = 3;

/// A running model server.
pub struct Model {
    /// `http://127.0.0.1:PORT/v1`, for `OPENAI_BASE_URL`.
    pub base: String,
    /// Requests answered.
    pub answered: Arc<AtomicU64>,
}

#[derive(Clone)]
struct Shared {
    delay: Duration,
    answered: Arc<AtomicU64>,
}

/// Serve on a free loopback port; each answer starts after `delay`.
pub async fn start(delay: Duration) -> Model {
    let answered = Arc::new(AtomicU64::new(0));
    let shared = Shared {
        delay,
        answered: Arc::clone(&answered),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Model { base, answered }
}

/// What one request is answered with.
#[derive(Debug, PartialEq)]
enum Answer {
    Call { name: &'static str, args: Value },
    Text(String),
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// The answer to `req`: read from its last user message and the tool results after it.
fn answer(req: &Value) -> Answer {
    let messages = req["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let last_user = messages.iter().rposition(|m| m["role"] == "user");
    let asked = last_user.map_or_else(String::new, |i| text_of(&messages[i]["content"]));
    let results = last_user.map_or(0, |i| {
        messages[i..].iter().filter(|m| m["role"] == "tool").count()
    });
    // A forced final answer withdraws the tools (tool_choice none, or none offered).
    let tools_offered =
        req["tools"].as_array().is_some_and(|t| !t.is_empty()) && req["tool_choice"] != "none";
    let calc = |n: usize| Answer::Call {
        name: "calculator__evaluate",
        args: json!({"expression": format!("6*7+{n}")}),
    };
    if !tools_offered {
        return Answer::Text("Out of steps; here is what I have.".into());
    }
    if asked.contains(SUB) || asked.contains(TASK) {
        Answer::Text("Done here.".into())
    } else if let Some(entry) = asked.strip_prefix(LEDGER) {
        if results == 0 {
            Answer::Call {
                name: "ledger__append",
                args: json!({"entry": entry.trim()}),
            }
        } else {
            Answer::Text("Appended.".into())
        }
    } else if asked.starts_with(DELEGATE) {
        if results == 0 {
            Answer::Call {
                name: "agents__delegate",
                args: json!({"title": "sub", "task": format!("{SUB}: say done"), "role": "You answer briefly."}),
            }
        } else {
            Answer::Text("The sub-agent is done.".into())
        }
    } else if asked.starts_with(FOREVER) || results < CALC_ROUNDS {
        calc(results)
    } else {
        Answer::Text("The answer is 42.".into())
    }
}

fn chunk(delta: Value, finish: Value) -> Bytes {
    Bytes::from(format!(
        "data: {}\n\n",
        json!({"id": "soak", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    ))
}

async fn chat(State(shared): State<Shared>, body: String) -> axum::response::Response {
    let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let answer = answer(&req);
    let mut pieces = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let finish = match answer {
        Answer::Call { name, args } => {
            let id = format!(
                "call_{}",
                shared.answered.load(Ordering::Relaxed).wrapping_mul(7919)
            );
            pieces.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}]}),
                Value::Null,
            ));
            "tool_calls"
        }
        Answer::Text(text) => {
            for word in text.split_inclusive(' ') {
                pieces.push(chunk(json!({"content": word}), Value::Null));
            }
            "stop"
        }
    };
    pieces.push(chunk(json!({}), json!(finish)));
    pieces.push(Bytes::from(format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "soak", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
               "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}})
    )));
    shared.answered.fetch_add(1, Ordering::Relaxed);
    let delay = shared.delay;
    let first = futures::stream::once(async move {
        tokio::time::sleep(delay).await;
        Ok::<_, std::convert::Infallible>(Bytes::new())
    });
    let rest = futures::stream::iter(pieces.into_iter().map(Ok));
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(first.chain(rest)))
        .unwrap()
}

#[test]
fn each_scenario_gets_the_answer_its_conversation_calls_for() {
    let user = |text: &str| json!({"role": "user", "content": text});
    let tool = json!({"role": "tool", "content": "42"});
    let req = |messages: Vec<Value>| json!({"messages": messages, "tools": [{}]});
    assert!(matches!(
        answer(&req(vec![user("SOAK calc")])),
        Answer::Call {
            name: "calculator__evaluate",
            ..
        }
    ));
    // Tool results of an earlier turn of the conversation do not count.
    let earlier = vec![user("SOAK calc"), tool.clone(), tool.clone(), tool.clone()];
    let mut again = earlier.clone();
    again.push(user("SOAK calc"));
    assert!(matches!(answer(&req(again)), Answer::Call { .. }));
    assert!(matches!(answer(&req(earlier)), Answer::Text(_)));
    assert_eq!(
        answer(&req(vec![user("SOAK ledger e17")])),
        Answer::Call {
            name: "ledger__append",
            args: json!({"entry": "e17"})
        }
    );
    assert!(matches!(
        answer(&req(vec![user("SOAK ledger e17"), tool.clone()])),
        Answer::Text(_)
    ));
    assert!(matches!(
        answer(&req(vec![user("SOAK delegate")])),
        Answer::Call {
            name: "agents__delegate",
            ..
        }
    ));
    assert!(matches!(
        answer(&req(vec![user("SOAK-SUB: say done")])),
        Answer::Text(_)
    ));
    let many: Vec<Value> = std::iter::once(user("SOAK forever"))
        .chain(std::iter::repeat_n(tool, 9))
        .collect();
    assert!(matches!(answer(&req(many.clone())), Answer::Call { .. }));
    let forced = json!({"messages": many, "tools": [{}], "tool_choice": "none"});
    assert!(matches!(answer(&forced), Answer::Text(_)));
}
