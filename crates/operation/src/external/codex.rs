//! Codex's headless mode with JSON-lines output (`codex exec --json`): `thread.started` with
//! the thread id (what `codex exec resume ID` continues); `item.started`/`item.completed` with
//! typed items (`agent_message`, `reasoning`, `command_execution` with its output and exit
//! code, `file_change`, `mcp_tool_call`, `web_search`, ...); `turn.completed` with the turn's
//! usage; `turn.failed` and `error` when it fails. Codex reports no cost.

use super::{Invocation, Observed, StreamReader};
use rein_core::usage::TokenUsage;
use serde_json::{Value, json};

/// The arguments and standard input of one run: `-` reads the prompt from standard input.
pub fn args(inv: &Invocation) -> (Vec<String>, String) {
    let mut args: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .into();
    if let Some(id) = &inv.resume {
        args.extend(["resume".into(), id.clone()]);
    }
    args.push("-".into());
    let prompt = if inv.resume.is_some() {
        inv.prompt.clone()
    } else {
        super::framed_prompt(inv.system_role.as_deref(), &[], &inv.prompt)
    };
    (args, prompt)
}

/// Reads the stream (every line stands alone).
pub struct Reader;

fn str_of(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The call an item stands for, if it is a tool the agent ran.
fn call_of(item: &Value) -> Option<(String, Value)> {
    match item.get("type").and_then(Value::as_str)? {
        "command_execution" => Some((
            "shell".into(),
            json!({ "command": str_of(item, "command") }),
        )),
        "file_change" => Some((
            "apply_patch".into(),
            json!({ "changes": item.get("changes").cloned().unwrap_or(Value::Null) }),
        )),
        "mcp_tool_call" => Some((
            format!("mcp__{}__{}", str_of(item, "server"), str_of(item, "tool")),
            item.get("arguments").cloned().unwrap_or(Value::Null),
        )),
        "web_search" => Some((
            "web_search".into(),
            json!({ "query": str_of(item, "query") }),
        )),
        _ => None,
    }
}

/// A finished tool item's outcome: its text and whether it failed.
fn outcome_of(item: &Value) -> (String, bool) {
    let status = str_of(item, "status");
    let failed_status = matches!(status.as_str(), "failed" | "declined");
    match item.get("type").and_then(Value::as_str) {
        Some("command_execution") => {
            let code = item.get("exit_code").and_then(Value::as_i64);
            let mut text = str_of(item, "aggregated_output");
            if let Some(c) = code.filter(|c| *c != 0) {
                text.push_str(&format!("\n(exit code {c})"));
            }
            (text, failed_status || code.is_some_and(|c| c != 0))
        }
        Some("file_change") => {
            let changes = item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| format!("{} {}", str_of(c, "kind"), str_of(c, "path")))
                .collect::<Vec<_>>()
                .join("\n");
            (changes, failed_status)
        }
        Some("mcp_tool_call") => match item.pointer("/error/message").and_then(Value::as_str) {
            Some(e) => (e.to_owned(), true),
            None => {
                let text = item
                    .pointer("/result/content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n");
                (text, failed_status)
            }
        },
        _ => (status, failed_status),
    }
}

impl StreamReader for Reader {
    fn line(&mut self, line: &str) -> Vec<Observed> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        match v.get("type").and_then(Value::as_str) {
            Some("thread.started") => out.push(Observed::Session(str_of(&v, "thread_id"))),
            Some("item.started") => {
                if let Some(item) = v.get("item")
                    && let Some((name, arguments)) = call_of(item)
                {
                    out.push(Observed::ToolCall {
                        id: str_of(item, "id"),
                        name,
                        arguments,
                    });
                }
            }
            Some("item.completed") => {
                let Some(item) = v.get("item") else {
                    return out;
                };
                match item.get("type").and_then(Value::as_str) {
                    Some("agent_message") => out.push(Observed::Text(str_of(item, "text"))),
                    Some("reasoning") => out.push(Observed::Reasoning(str_of(item, "text"))),
                    _ => {
                        if let Some((name, arguments)) = call_of(item) {
                            let id = str_of(item, "id");
                            // Items that only complete (file changes) are announced here; the
                            // transcript keeps one call per id.
                            out.push(Observed::ToolCall {
                                id: id.clone(),
                                name,
                                arguments,
                            });
                            let (content, is_error) = outcome_of(item);
                            out.push(Observed::ToolResult {
                                id,
                                content,
                                is_error,
                            });
                        }
                    }
                }
            }
            Some("turn.completed") => {
                let u = v.get("usage").cloned().unwrap_or(Value::Null);
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                let (input, output) = (n("input_tokens"), n("output_tokens"));
                out.push(Observed::Usage {
                    tokens: TokenUsage {
                        input,
                        output,
                        total: input + output,
                        cached_read: n("cached_input_tokens"),
                        ..Default::default()
                    },
                    cost: None,
                });
            }
            Some("turn.failed") => out.push(Observed::Failed(
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the turn failed")
                    .to_owned(),
            )),
            Some("error") => out.push(Observed::Failed(str_of(&v, "message"))),
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reads_as_a_call_and_its_result() {
        let mut r = Reader;
        let started = r.line(r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#);
        assert!(
            matches!(&started[..], [Observed::ToolCall { id, name, .. }] if id == "item_1" && name == "shell")
        );
        let done = r.line(r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"nope\n","exit_code":2,"status":"failed"}}"#);
        assert!(
            matches!(&done[1], Observed::ToolResult { is_error: true, content, .. } if content.contains("exit code 2"))
        );
        let (args, prompt) = args(&Invocation {
            prompt: "go".into(),
            resume: Some("th_1".into()),
            system_role: Some("be brief".into()),
        });
        assert_eq!(args[args.len() - 3..], ["resume", "th_1", "-"]);
        assert_eq!(prompt, "go");
    }
}
