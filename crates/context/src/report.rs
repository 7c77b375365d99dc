//! What a call admitted: the pipeline run with every processor's draft observed, each message
//! of the request attributed to the item it carries (the agent's instructions, memories,
//! knowledge, skills, the tool listing, the plan, the compression summary, the conversation),
//! and the token cost of each. Items sum to the request's total by construction: every message
//! sent is attributed to exactly one item and the tool schemas are one more.

use crate::estimate::TiktokenEstimator;
use crate::pipeline::{ContextInput, ContextOutput, Pipeline};
use rein_core::event::{AdmittedItem, ContextReport, ProcessorEffect};
use rein_core::message::{Message, MessageKind, Role};
use std::collections::HashMap;
use std::sync::Arc;

/// Items in the order a report lists them.
const ITEMS: [&str; 10] = [
    "system_role",
    "memories",
    "knowledge",
    "skills",
    "tool_list",
    "plan",
    "summary",
    "history",
    "force_finish",
    "tool_schemas",
];

/// The item a message added by `processor` carries; processors that only rewrite the
/// conversation (truncation, attachments, result limits, pairing, relabeling, cleanup) leave
/// it history.
fn item_of(processor: &str) -> &'static str {
    match processor {
        "system_role" => "system_role",
        "memory_injection" => "memories",
        "knowledge_injection" => "knowledge",
        "skills" => "skills",
        "tool_disclosure" => "tool_list",
        "plan" => "plan",
        "force_finish" => "force_finish",
        _ => "history",
    }
}

/// Run `pipeline` over `input` and account for the result with `estimator`. The report has no
/// `tool_schemas` item yet: the caller adds it ([`admit_tool_schemas`]) once it knows which
/// schemas it sends.
pub fn explain(
    pipeline: &Pipeline,
    input: &ContextInput<'_>,
    estimator: &TiktokenEstimator,
) -> (ContextOutput, ContextReport) {
    // Drafts are kept alive until the end, so no message's address is reused by a later one.
    let mut drafts: Vec<Vec<Arc<Message>>> = vec![input.messages.to_vec()];
    let mut names: Vec<&'static str> = Vec::new();
    let output = pipeline.run_observed(input, |name, draft| {
        names.push(name);
        drafts.push(draft.messages.clone());
    });
    let key = |m: &Arc<Message>| Arc::as_ptr(m) as usize;
    let tokens = |ms: &[Arc<Message>]| -> u64 { ms.iter().map(|m| estimator.message_tokens(m)).sum() };
    // Where each message first appeared: 0 the transcript, i the i-th processor.
    let mut origin: HashMap<usize, usize> = HashMap::new();
    let mut processors = Vec::with_capacity(names.len());
    for (i, draft) in drafts.iter().enumerate() {
        let mut changed = 0u32;
        for m in draft {
            if let std::collections::hash_map::Entry::Vacant(e) = origin.entry(key(m)) {
                e.insert(i);
                changed += 1;
            }
        }
        if i > 0 {
            let before = &drafts[i - 1];
            processors.push(ProcessorEffect {
                processor: names[i - 1].to_owned(),
                messages_before: before.len() as u32,
                messages_after: draft.len() as u32,
                changed,
                tokens_delta: tokens(draft) as i64 - tokens(before) as i64,
            });
        }
    }
    let mut sums: HashMap<&'static str, (u64, u32)> = HashMap::new();
    for m in &output.messages {
        let item = if m.kind == MessageKind::CompressionSummary {
            "summary"
        } else {
            match origin.get(&key(m)).copied().unwrap_or(0) {
                // The stored instructions (the agent's system role) are the transcript's
                // system messages.
                0 if m.role == Role::System => "system_role",
                0 => "history",
                i => item_of(names[i - 1]),
            }
        };
        let e = sums.entry(item).or_default();
        e.0 += estimator.message_tokens(m);
        e.1 += 1;
    }
    let mut report = ContextReport {
        processors,
        ..Default::default()
    };
    for item in ITEMS {
        if let Some((tokens, count)) = sums.get(item) {
            report.items.push(AdmittedItem {
                item: item.to_owned(),
                tokens: *tokens,
                count: *count,
            });
            report.total_tokens += tokens;
        }
    }
    (output, report)
}

/// Tokens and functions of `manifest`'s APIs that `allowed` lets through, counted as
/// [`rein_core::agent::TokenEstimator::tools`] counts them (remembered per manifest when every
/// API is allowed).
pub fn schema_tokens(
    estimator: &TiktokenEstimator,
    manifest: &Arc<rein_core::tool::ToolManifest>,
    allowed: impl Fn(&str) -> bool,
) -> (u64, u32) {
    let apis = manifest.apis.iter().filter(|a| allowed(&a.name)).count() as u32;
    if apis as usize == manifest.apis.len() {
        return (estimator.manifest_tokens(manifest), apis);
    }
    let tokens = manifest
        .apis
        .iter()
        .filter(|a| allowed(&a.name))
        .map(|a| estimator.function_tokens(&manifest.identifier, a))
        .sum();
    (tokens, apis)
}

/// Add the tool schemas a call sends (`count` functions costing `tokens`) to `report`.
pub fn admit_tool_schemas(report: &mut ContextReport, tokens: u64, count: u32) {
    if count == 0 {
        return;
    }
    report.items.push(AdmittedItem {
        item: "tool_schemas".into(),
        tokens,
        count,
    });
    report.total_tokens += tokens;
}
