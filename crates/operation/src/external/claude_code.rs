//! Claude Code in print mode with its streamed JSON output (`claude -p --output-format
//! stream-json --verbose`): a `system`/`init` line with the session id and model; `assistant`
//! lines with one message's content blocks (`text`, `thinking`, `tool_use`; one message may
//! span several lines, and a new `message.id` is a new model turn); `user` lines with the
//! `tool_result` blocks of the tools it ran; and a closing `result` line with the answer, the
//! session id, the usage and `total_cost_usd` (`is_error` when the run failed).

use super::{Invocation, Observed, StreamReader};
use rein_core::Usd;
use rein_core::usage::TokenUsage;
use serde_json::Value;

/// The arguments and standard input of one run: the prompt goes on standard input.
pub fn args(inv: &Invocation) -> (Vec<String>, String) {
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"]
        .map(String::from)
        .into();
    if let Some(id) = &inv.resume {
        args.extend(["--resume".into(), id.clone()]);
    } else if let Some(role) = inv.system_role.as_deref().filter(|r| !r.trim().is_empty()) {
        args.extend(["--append-system-prompt".into(), role.to_owned()]);
    }
    (args, inv.prompt.clone())
}

/// Reads the stream; remembers the message being written so a message spread over several
/// lines is one turn, and its usage is counted once (its last report).
#[derive(Default)]
pub struct Reader {
    message: Option<String>,
    usage: Option<TokenUsage>,
}

impl Reader {
    fn flush_usage(&mut self, out: &mut Vec<Observed>) {
        if let Some(tokens) = self.usage.take() {
            out.push(Observed::Usage { tokens, cost: None });
        }
    }
}

/// Claude's usage object: `input_tokens` excludes the cached ones, which come separately.
fn tokens(u: &Value) -> Option<TokenUsage> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    u.is_object().then(|| {
        let cached_read = n("cache_read_input_tokens");
        let cache_write = n("cache_creation_input_tokens");
        let input = n("input_tokens") + cached_read + cache_write;
        let output = n("output_tokens");
        TokenUsage {
            input,
            output,
            total: input + output,
            cached_read,
            cache_write,
            reasoning: 0,
        }
    })
}

/// A tool result's content: a string, or text blocks.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) if !other.is_null() => other.to_string(),
        _ => String::new(),
    }
}

impl StreamReader for Reader {
    fn line(&mut self, line: &str) -> Vec<Observed> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut out = Vec::new();
        match v.get("type").and_then(Value::as_str) {
            Some("system") if v.get("subtype").and_then(Value::as_str) == Some("init") => {
                out.extend(str_of(&v, "session_id").map(Observed::Session));
                out.extend(str_of(&v, "model").map(Observed::Model));
            }
            Some("assistant") => {
                let Some(message) = v.get("message") else {
                    return out;
                };
                let id = str_of(message, "id");
                if id.is_none() || id != self.message {
                    self.flush_usage(&mut out);
                    out.push(Observed::Turn);
                    self.message = id;
                }
                if let Some(u) = message.get("usage").and_then(tokens) {
                    self.usage = Some(u);
                }
                for block in message
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => out.extend(str_of(block, "text").map(Observed::Text)),
                        Some("thinking") => {
                            out.extend(str_of(block, "thinking").map(Observed::Reasoning));
                        }
                        Some("tool_use") => out.push(Observed::ToolCall {
                            id: str_of(block, "id").unwrap_or_default(),
                            name: str_of(block, "name").unwrap_or_default(),
                            arguments: block.get("input").cloned().unwrap_or(Value::Null),
                        }),
                        _ => {}
                    }
                }
            }
            Some("user") => {
                for block in v
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                {
                    out.push(Observed::ToolResult {
                        id: str_of(block, "tool_use_id").unwrap_or_default(),
                        content: result_text(block.get("content")),
                        is_error: block
                            .get("is_error")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    });
                }
            }
            Some("result") => {
                self.flush_usage(&mut out);
                out.extend(str_of(&v, "session_id").map(Observed::Session));
                out.push(Observed::Totals {
                    tokens: v.get("usage").and_then(tokens),
                    cost: v
                        .get("total_cost_usd")
                        .and_then(Value::as_f64)
                        .map(Usd::from_dollars),
                });
                let text = str_of(&v, "result").unwrap_or_default();
                let failed = v.get("is_error").and_then(Value::as_bool).unwrap_or(false)
                    || v.get("subtype")
                        .and_then(Value::as_str)
                        .is_some_and(|s| s != "success");
                if failed {
                    let subtype = str_of(&v, "subtype").unwrap_or_else(|| "error".into());
                    out.push(Observed::Failed(if text.is_empty() {
                        subtype
                    } else {
                        format!("{subtype}: {text}")
                    }));
                } else {
                    out.push(Observed::Result(text));
                }
            }
            _ => {}
        }
        out
    }

    fn end(&mut self) -> Vec<Observed> {
        let mut out = Vec::new();
        self.flush_usage(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_over_several_lines_is_one_turn_counted_once() {
        let mut r = Reader::default();
        let a = r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Hi"}],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}"#;
        let b = r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":7}}}"#;
        let first = r.line(a);
        assert_eq!(first, [Observed::Turn, Observed::Text("Hi".into())]);
        let second = r.line(b);
        assert!(matches!(&second[..], [Observed::ToolCall { name, .. }] if name == "Bash"));
        let end = r.end();
        let [Observed::Usage { tokens, .. }] = &end[..] else {
            panic!("{end:?}")
        };
        assert_eq!(
            (tokens.input, tokens.output, tokens.cached_read),
            (15, 7, 5)
        );
        assert!(r.line("not json").is_empty());
    }
}
