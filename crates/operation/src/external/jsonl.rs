//! rein's generic JSON-lines agent format, for any CLI an adapter would be a few lines of
//! script for. The prompt arrives on standard input; a resumed turn gets the session id in
//! `REIN_EXTERNAL_SESSION`. Each line of standard output is one object:
//!
//! | line | meaning |
//! |---|---|
//! | `{"type":"session","id":"…","model":"…"}` | the session (and model) |
//! | `{"type":"turn"}` | a new model turn begins (optional) |
//! | `{"type":"text","text":"…"}` | answer text |
//! | `{"type":"reasoning","text":"…"}` | reasoning text |
//! | `{"type":"tool_call","id":"…","name":"…","arguments":{…}}` | a tool call it makes |
//! | `{"type":"tool_result","id":"…","content":"…","is_error":false}` | its outcome |
//! | `{"type":"usage","input_tokens":1,"output_tokens":2,"cost_usd":0.01}` | one turn's usage |
//! | `{"type":"result","text":"…"}` | the final answer (optional) |
//! | `{"type":"error","message":"…"}` | the run failed |
//!
//! Other lines are skipped.

use super::{Invocation, Observed, StreamReader};
use rein_core::Usd;
use rein_core::usage::TokenUsage;
use serde_json::Value;

/// No arguments of its own (the session goes in the environment, see [`SESSION_ENV`]).
pub fn args(inv: &Invocation) -> (Vec<String>, String) {
    let prompt = if inv.resume.is_some() {
        inv.prompt.clone()
    } else {
        super::framed_prompt(inv.system_role.as_deref(), &[], &inv.prompt)
    };
    (Vec::new(), prompt)
}

/// The variable a resumed run finds its session id in.
pub const SESSION_ENV: &str = crate::env::EXTERNAL_SESSION;

/// Reads the stream (every line stands alone).
pub struct Reader;

impl StreamReader for Reader {
    fn line(&mut self, line: &str) -> Vec<Observed> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let mut out = Vec::new();
        match v.get("type").and_then(Value::as_str) {
            Some("session") => {
                out.push(Observed::Session(s("id")));
                if v.get("model").is_some() {
                    out.push(Observed::Model(s("model")));
                }
            }
            Some("turn") => out.push(Observed::Turn),
            Some("text") => out.push(Observed::Text(s("text"))),
            Some("reasoning") => out.push(Observed::Reasoning(s("text"))),
            Some("tool_call") => out.push(Observed::ToolCall {
                id: s("id"),
                name: s("name"),
                arguments: v.get("arguments").cloned().unwrap_or(Value::Null),
            }),
            Some("tool_result") => out.push(Observed::ToolResult {
                id: s("id"),
                content: match v.get("content") {
                    Some(Value::String(t)) => t.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                },
                is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            }),
            Some("usage") => {
                let (input, output) = (n("input_tokens"), n("output_tokens"));
                out.push(Observed::Usage {
                    tokens: TokenUsage {
                        input,
                        output,
                        total: input + output,
                        ..Default::default()
                    },
                    cost: v
                        .get("cost_usd")
                        .and_then(Value::as_f64)
                        .map(Usd::from_dollars),
                });
            }
            Some("result") => out.push(Observed::Result(s("text"))),
            Some("error") => out.push(Observed::Failed(s("message"))),
            _ => {}
        }
        out
    }
}
