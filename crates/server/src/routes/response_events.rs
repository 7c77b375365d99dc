//! The typed events of a streamed response (`POST /v1/responses` with `stream: true`), made
//! from its operation's live events: `response.created` and `response.in_progress`, then for
//! each model call's reasoning summary a `reasoning` item (`output_item.added`,
//! `reasoning_summary_part.added`, `reasoning_summary_text.delta`…, their `.done` events), for
//! its answer text a `message` item (`output_item.added`, `content_part.added`,
//! `output_text.delta`…, `output_text.done`, `content_part.done`, `output_item.done`), for
//! each tool call rein ran an `mcp_call` item (added, then done with its output), and at the
//! end the response as it is stored (`response.completed`, `.incomplete` or `.failed`; a
//! response queued behind another of its conversation ends at once, `response.queued`). Every
//! event carries `sequence_number`, from 0 without a gap; item ids are those the stored
//! response gives the same items.

use crate::AppState;
use crate::runner::Ended;
use axum::response::sse::Event;
use rein_core::event::{EventKind, StreamChunk};
use rein_core::{AgentEvent, OperationId};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use tokio::sync::mpsc;

/// A stream of SSE events.
pub type Events = futures::stream::BoxStream<'static, Result<Event, Infallible>>;

/// Numbers events and sends them; false once the client is gone.
struct Out {
    tx: mpsc::UnboundedSender<Event>,
    seq: u64,
}

impl Out {
    fn send(&mut self, kind: &str, mut body: Value) -> bool {
        body["type"] = json!(kind);
        body["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.tx
            .send(Event::default().event(kind).data(body.to_string()))
            .is_ok()
    }
}

/// The answer text of one model call, while it streams.
struct Open {
    item_id: String,
    output_index: u64,
    text: String,
}

/// What the stream has said so far.
struct Said {
    id: OperationId,
    next_index: u64,
    open: Option<Open>,
    /// The reasoning summary of the model call under way, while it streams.
    reasoning: Option<Open>,
    /// The message the model call under way writes (its id as hex).
    writing: Option<String>,
    /// Tool calls asked for, by id: name and arguments.
    calls: HashMap<String, (String, String)>,
}

impl Said {
    /// Close the open reasoning item, if any.
    fn close_reasoning(&mut self, out: &mut Out) -> bool {
        let Some(open) = self.reasoning.take() else {
            return true;
        };
        let part = json!({"type": "summary_text", "text": open.text});
        out.send(
            "response.reasoning_summary_text.done",
            json!({"item_id": open.item_id, "output_index": open.output_index, "summary_index": 0, "text": open.text}),
        ) && out.send(
            "response.reasoning_summary_part.done",
            json!({"item_id": open.item_id, "output_index": open.output_index, "summary_index": 0, "part": part}),
        ) && out.send(
            "response.output_item.done",
            json!({"output_index": open.output_index, "item": {"type": "reasoning", "id": open.item_id, "summary": [part]}}),
        )
    }

    /// Close the open items (reasoning, then the message).
    fn close(&mut self, out: &mut Out) -> bool {
        self.close_reasoning(out) && self.close_message(out)
    }

    /// Close the open message item, if any.
    fn close_message(&mut self, out: &mut Out) -> bool {
        let Some(open) = self.open.take() else {
            return true;
        };
        let part =
            json!({"type": "output_text", "text": open.text, "annotations": [], "logprobs": []});
        out.send(
            "response.output_text.done",
            json!({"item_id": open.item_id, "output_index": open.output_index, "content_index": 0, "text": open.text, "logprobs": []}),
        ) && out.send(
            "response.content_part.done",
            json!({"item_id": open.item_id, "output_index": open.output_index, "content_index": 0, "part": part}),
        ) && out.send(
            "response.output_item.done",
            json!({"output_index": open.output_index, "item": {
                "type": "message", "id": open.item_id, "status": "completed", "role": "assistant",
                "content": [part]
            }}),
        )
    }

    /// Say what `e` adds; false once the client is gone.
    fn event(&mut self, e: &AgentEvent, out: &mut Out) -> bool {
        if e.operation_id != self.id {
            return true;
        }
        match &e.kind {
            EventKind::LlmStart {
                assistant_message_id,
                ..
            } => {
                self.writing = Some(assistant_message_id.as_uuid().simple().to_string());
                true
            }
            EventKind::LlmStream {
                chunk: StreamChunk::Reasoning { text },
                ..
            } if !text.is_empty() => {
                if self.reasoning.is_none() {
                    let hex = self.writing.clone().unwrap_or_else(|| {
                        format!("{}_{}", self.id.as_uuid().simple(), self.next_index)
                    });
                    let item_id = format!("rs_{hex}");
                    let output_index = self.next_index;
                    self.next_index += 1;
                    let added = out.send(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": {"type": "reasoning", "id": item_id, "summary": []}}),
                    ) && out.send(
                        "response.reasoning_summary_part.added",
                        json!({"item_id": item_id, "output_index": output_index, "summary_index": 0,
                               "part": {"type": "summary_text", "text": ""}}),
                    );
                    if !added {
                        return false;
                    }
                    self.reasoning = Some(Open {
                        item_id,
                        output_index,
                        text: String::new(),
                    });
                }
                let Some(open) = self.reasoning.as_mut() else {
                    return true;
                };
                open.text.push_str(text);
                let body = json!({"item_id": open.item_id, "output_index": open.output_index,
                                  "summary_index": 0, "delta": text});
                out.send("response.reasoning_summary_text.delta", body)
            }
            EventKind::LlmStream {
                chunk: StreamChunk::Text { text },
                ..
            } if !text.is_empty() => {
                // The reasoning comes before the answer it leads to.
                if !self.close_reasoning(out) {
                    return false;
                }
                if self.open.is_none() {
                    let item_id = format!(
                        "msg_{}",
                        self.writing.clone().unwrap_or_else(|| {
                            format!("{}_{}", self.id.as_uuid().simple(), self.next_index)
                        })
                    );
                    let output_index = self.next_index;
                    self.next_index += 1;
                    let added = out.send(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": {
                            "type": "message", "id": item_id, "status": "in_progress",
                            "role": "assistant", "content": []
                        }}),
                    ) && out.send(
                        "response.content_part.added",
                        json!({"item_id": item_id, "output_index": output_index, "content_index": 0,
                               "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
                    );
                    if !added {
                        return false;
                    }
                    self.open = Some(Open {
                        item_id,
                        output_index,
                        text: String::new(),
                    });
                }
                let Some(open) = self.open.as_mut() else {
                    return true;
                };
                open.text.push_str(text);
                let body = json!({"item_id": open.item_id, "output_index": open.output_index,
                                  "content_index": 0, "delta": text, "logprobs": []});
                out.send("response.output_text.delta", body)
            }
            EventKind::LlmResult { .. } => self.close(out),
            EventKind::ToolPending { tool_calls } => {
                for c in tool_calls {
                    self.calls
                        .insert(c.id.to_string(), (c.key(), c.arguments.to_string()));
                }
                self.close(out)
            }
            EventKind::ToolResult {
                tool_call_id,
                status,
                content,
                ..
            } => {
                let (name, arguments) = self.calls.remove(&**tool_call_id).unwrap_or_default();
                let failed = *status != rein_core::message::ToolStatus::Succeeded;
                let output_index = self.next_index;
                self.next_index += 1;
                let item = |state: &str, result: Value| {
                    let mut item = json!({
                        "type": "mcp_call", "id": format!("mcp_{tool_call_id}"), "server_label": "rein",
                        "name": name, "arguments": arguments, "status": state,
                        "output": Value::Null, "error": Value::Null,
                    });
                    if !result.is_null() {
                        item[if failed { "error" } else { "output" }] = result;
                    }
                    item
                };
                out.send(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": item("in_progress", Value::Null)}),
                ) && out.send(
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item("completed", json!(content))}),
                )
            }
            _ => true,
        }
    }
}

/// The events of response `start` (the stored response as it began) over operation `id`, from
/// its live `events` until its run `ended`; `end` builds the stored response once it stopped.
pub fn stream<F>(
    app: AppState,
    id: OperationId,
    start: Value,
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
    ended: Option<Ended>,
    end: F,
) -> Events
where
    F: FnOnce(
            AppState,
        )
            -> futures::future::BoxFuture<'static, Result<Value, crate::error::ApiError>>
        + Send
        + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    tokio::spawn(async move {
        let mut out = Out { tx, seq: 0 };
        let mut said = Said {
            id,
            next_index: 0,
            open: None,
            reasoning: None,
            writing: None,
            calls: HashMap::new(),
        };
        if !(out.send("response.created", json!({"response": start.clone()}))
            && out.send("response.in_progress", json!({"response": start})))
        {
            return;
        }
        // Queued behind another operation of its conversation: nothing runs for this request.
        if let Some(ended) = ended {
            let mut ended = Box::pin(ended.wait());
            loop {
                tokio::select! {
                    e = events.recv() => match e {
                        Some(e) => if !said.event(&e, &mut out) { return; },
                        None => { (&mut ended).await; break; }
                    },
                    _ = &mut ended => break,
                }
            }
        }
        // The run has ended: what its sink sent is all here.
        while let Ok(e) = events.try_recv() {
            if !said.event(&e, &mut out) {
                return;
            }
        }
        if !said.close(&mut out) {
            return;
        }
        match end(app).await {
            Ok(response) => {
                let kind = match response["status"].as_str() {
                    Some("completed") => "response.completed",
                    Some("failed") => "response.failed",
                    Some("queued") => "response.queued",
                    Some("in_progress") => "response.in_progress",
                    _ => "response.incomplete",
                };
                out.send(kind, json!({ "response": response }));
            }
            Err(e) => {
                out.send(
                    "error",
                    json!({"code": e.code.to_string(), "message": e.message, "param": Value::Null}),
                );
            }
        }
    });
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok(e), rx))
    }))
}
