//! Parse + normalize throughput: a 2 MB streamed response (OpenAI Chat and Anthropic formats,
//! realistic frame sizes, multi-byte text) pushed through the framer and the protocol parser
//! in 8 KiB reads, as a relay would. Prints MB/s and allocations per MB.
//!
//! `cargo bench -p rein-model --bench stream_parse`
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The shared counting allocator needs `unsafe impl GlobalAlloc`.
#![allow(unsafe_code)]

use rein_model::framing::Decoder;
use rein_model::{ModelEvent, Protocol};
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Instant;

#[path = "../../../bench/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::ALLOCATIONS;

const TARGET: usize = 2 * 1024 * 1024;
const WORDS: [&str; 8] = [
    " the", " café", " model", " streams", " naïve", " tokens", " 👋", " quickly",
];

fn openai_body() -> Vec<u8> {
    let mut body = String::new();
    let mut i = 0;
    while body.len() < TARGET {
        let text = WORDS[i % WORDS.len()];
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"gpt-4o-mini-2024-07-18\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_560af6e559\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null,\"obfuscation\":\"kQ\"}}\n\n"
        ));
        i += 1;
    }
    body.push_str("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\ndata: [DONE]\n\n");
    body.into_bytes()
}

fn anthropic_body() -> Vec<u8> {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    let mut i = 0;
    while body.len() < TARGET {
        let text = WORDS[i % WORDS.len()];
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
        ));
        i += 1;
    }
    body.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    body.into_bytes()
}

fn consume(events: &mut Vec<ModelEvent>) -> usize {
    let mut text = 0;
    for e in events.drain(..) {
        if let ModelEvent::TextDelta { text: t } = &e {
            text += t.len();
        }
        black_box(e);
    }
    text
}

/// Parse the whole body in 8 KiB reads; returns the number of text bytes produced.
fn parse(protocol: Protocol, body: &[u8]) -> usize {
    let mut decoder = Decoder::new(protocol.framing());
    let mut parser = protocol.parser();
    let mut events = Vec::with_capacity(64);
    let mut text = 0;
    for read in body.chunks(8 * 1024) {
        decoder.push(read, &mut |f| parser.frame(f, &mut events));
        text += consume(&mut events);
    }
    decoder.finish(&mut |f| parser.frame(f, &mut events));
    parser.finish(&mut events);
    text += consume(&mut events);
    text
}

fn measure(name: &str, protocol: Protocol, body: &[u8]) {
    let text = parse(protocol, body);
    assert!(text > 0);
    let iterations = 40;
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(parse(protocol, black_box(body)));
    }
    let secs = start.elapsed().as_secs_f64();
    let allocs = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let mb = body.len() as f64 * iterations as f64 / 1e6;
    println!(
        "{name:>10}: {:.2} MB body, {:>8.1} MB/s, {:>8.0} allocations per MB, {} bytes of text per pass",
        body.len() as f64 / 1e6,
        mb / secs,
        allocs as f64 / mb,
        text
    );
}

fn main() {
    measure("openai", Protocol::OpenaiChat, &openai_body());
    measure("anthropic", Protocol::Anthropic, &anthropic_body());
}
