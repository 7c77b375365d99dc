//! Streams in each native protocol's wire format, as the providers send them: what the
//! scripted server answers with when a test drives Anthropic, Gemini, Ollama or the OpenAI
//! Responses API (OpenAI Chat's are [`Canned::openai_text`] and [`Canned::openai_tools`]).

use super::Canned;
use serde_json::{Value, json};

/// An Anthropic Messages stream of `blocks`: `{"thinking", "signature"}`, `{"text"}` or
/// `{"id", "name", "input"}` (tool use).
pub fn anthropic(blocks: &[Value], stop: &str) -> Canned {
    let mut body = String::new();
    let mut ev = |data: Value| {
        body.push_str(&format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        ))
    };
    ev(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 90, "output_tokens": 1}}}),
    );
    for (i, b) in blocks.iter().enumerate() {
        if let Some(thinking) = b.get("thinking") {
            ev(
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            );
            ev(
                json!({"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": thinking}}),
            );
            ev(
                json!({"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": b["signature"]}}),
            );
        } else if let Some(text) = b.get("text") {
            ev(
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
            );
            ev(
                json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": text}}),
            );
        } else {
            ev(
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}),
            );
            ev(
                json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": b["input"].to_string()}}),
            );
        }
        ev(json!({"type": "content_block_stop", "index": i}));
    }
    ev(
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}}),
    );
    ev(json!({"type": "message_stop"}));
    stream(body, "text/event-stream")
}

/// A 200 response streaming `body` as `content_type`, in pieces of up to 7 bytes.
pub fn stream(body: String, content_type: &str) -> Canned {
    Canned {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        body: body.into_bytes(),
        max_piece: 7,
        stall_after: None,
        delay: None,
    }
}

/// A Gemini `streamGenerateContent?alt=sse` stream: one chunk per part, usage on each, the
/// finish reason on the last.
pub fn gemini(parts: &[Value]) -> Canned {
    let mut body = String::new();
    for (i, part) in parts.iter().enumerate() {
        let mut candidate = json!({"content": {"parts": [part], "role": "model"}, "index": 0});
        if i + 1 == parts.len() {
            candidate["finishReason"] = json!("STOP");
        }
        let chunk = json!({
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
            "modelVersion": "gemini-2.5-flash",
        });
        body.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    stream(body, "text/event-stream")
}

/// An Ollama `/api/chat` NDJSON stream: thinking, then text or tool calls, then the done line
/// with its counts.
pub fn ollama(thinking: Option<&str>, text: &str, calls: &[Value]) -> Canned {
    let mut lines = Vec::new();
    let line = |message: Value, done: bool| {
        let mut l = json!({"model": "qwen3:8b", "created_at": "2026-12-01T10:00:00Z", "message": message, "done": done});
        if done {
            l["done_reason"] = json!("stop");
            l["prompt_eval_count"] = json!(100);
            l["eval_count"] = json!(20);
        }
        l.to_string()
    };
    if let Some(t) = thinking {
        lines.push(line(
            json!({"role": "assistant", "content": "", "thinking": t}),
            false,
        ));
    }
    if !text.is_empty() {
        lines.push(line(json!({"role": "assistant", "content": text}), false));
    }
    if !calls.is_empty() {
        lines.push(line(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
            false,
        ));
    }
    lines.push(line(json!({"role": "assistant", "content": ""}), true));
    stream(lines.join("\n") + "\n", "application/x-ndjson")
}

/// Encrypted content of the Responses reasoning item (what `include:
/// ["reasoning.encrypted_content"]` returns).
pub const ENCRYPTED_REASONING: &str = "Z0FBQUFBQm8tZW5jcnlwdGVkLXJlYXNvbmluZy1mb3ItdGhlLWJhdGNo";

/// An OpenAI Responses stream: a reasoning item (its summary and encrypted content), then
/// `calls` (`call_id`, name, arguments) as function-call items with their arguments streamed,
/// or a text message; then `response.completed` with usage.
pub fn responses(summary: Option<&str>, text: &str, calls: &[(&str, &str, &str)]) -> Canned {
    let mut seq = 0;
    let mut body = String::new();
    let mut ev = |mut data: Value| {
        data["sequence_number"] = json!(seq);
        seq += 1;
        body.push_str(&format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        ));
    };
    let response = |status: &str, output: Value, usage: Value| json!({"id": "resp_1", "object": "response", "status": status, "model": "o4-mini", "output": output, "usage": usage});
    ev(
        json!({"type": "response.created", "response": response("in_progress", json!([]), Value::Null)}),
    );
    let mut output = Vec::new();
    if let Some(s) = summary {
        let item = json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": s}], "encrypted_content": ENCRYPTED_REASONING});
        ev(
            json!({"type": "response.output_item.added", "output_index": output.len(), "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        );
        ev(
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": output.len(), "summary_index": 0, "delta": s}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": output.len(), "item": item}),
        );
        output.push(item);
    }
    if !text.is_empty() {
        let item = json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
        ev(
            json!({"type": "response.output_item.added", "output_index": output.len(), "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}}),
        );
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": output.len(), "content_index": 0, "delta": text}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": output.len(), "item": item}),
        );
        output.push(item);
    }
    for (n, (call_id, name, args)) in calls.iter().enumerate() {
        let id = format!("fc_{n}");
        let added = json!({"id": id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": name});
        ev(
            json!({"type": "response.output_item.added", "output_index": output.len(), "item": added}),
        );
        let (head, tail) = args.split_at(args.len() / 2);
        for delta in [head, tail] {
            ev(
                json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": output.len(), "delta": delta}),
            );
        }
        ev(
            json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": output.len(), "arguments": args}),
        );
        let done = json!({"id": id, "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id, "name": name});
        ev(
            json!({"type": "response.output_item.done", "output_index": output.len(), "item": done}),
        );
        output.push(done);
    }
    let usage = json!({"input_tokens": 100, "output_tokens": 20, "total_tokens": 120});
    ev(
        json!({"type": "response.completed", "response": response("completed", json!(output), usage)}),
    );
    stream(body, "text/event-stream")
}
