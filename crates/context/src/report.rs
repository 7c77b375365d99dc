//! What a call admitted: the pipeline run with every processor's draft observed, the tokens
//! each processor added or removed, and those deltas summed per item (the agent's
//! instructions, memories, knowledge, skills, the tool listing, the plan, the compression
//! summary, the conversation). The transcript's own messages open the account (its system
//! messages are the agent's instructions, its summaries the summary, the rest history), and
//! every processor's delta goes to the item it works on, so the items sum to the tokens of the
//! messages sent exactly, whatever a later processor merges or cuts; the tool schemas are one
//! more item.

use crate::estimate::TiktokenEstimator;
use crate::pipeline::{ContextInput, ContextOutput, Pipeline};
use rein_core::event::{AdmittedItem, ContextReport, ProcessorEffect};
use rein_core::message::{Message, MessageKind, Role};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Message addresses, hashed by a multiply (they are distinct pointers: no need for SipHash's
/// resistance, and it is the diff's main cost).
type Addresses = HashSet<usize, BuildHasherDefault<AddressHasher>>;

#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(26);
    }
}

fn addresses(messages: &[Arc<Message>]) -> Addresses {
    let mut set = Addresses::with_capacity_and_hasher(messages.len(), Default::default());
    set.extend(messages.iter().map(|m| Arc::as_ptr(m) as usize));
    set
}

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

/// The item `processor` works on; processors that only rewrite the conversation (truncation,
/// attachments, result limits, pairing, relabeling, cleanup) work on history.
fn item_of(processor: &str) -> &'static str {
    match processor {
        "system_role" => "system_role",
        "memory_injection" => "memories",
        "knowledge_injection" => "knowledge",
        "skills" => "skills",
        "tool_disclosure" => "tool_list",
        "plan" => "plan",
        "summary_placement" => "summary",
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
    let key = |m: &Arc<Message>| Arc::as_ptr(m) as usize;
    let mut items: Vec<(&'static str, i64, i64)> = ITEMS.iter().map(|i| (*i, 0, 0)).collect();
    let mut add = |item: &str, tokens: i64, count: i64| {
        if let Some(e) = items.iter_mut().find(|(i, _, _)| *i == item) {
            e.1 += tokens;
            e.2 += count;
        }
    };
    for m in input.messages {
        let item = if m.kind == MessageKind::CompressionSummary {
            "summary"
        } else if m.role == Role::System {
            // The stored instructions (the agent's system role).
            "system_role"
        } else {
            "history"
        };
        add(item, estimator.message_tokens(m) as i64, 1);
    }
    // The previous draft is kept alive while the next is compared with it, so no message's
    // address can be reused by a new one in between. Most processors change nothing: a
    // pointer comparison settles those; only a changed draft is diffed (its address set
    // becomes the next comparison's), and only its added and removed messages are counted.
    let mut previous: Vec<Arc<Message>> = input.messages.to_vec();
    let mut previous_set: Option<Addresses> = None;
    let mut processors = Vec::new();
    let output = pipeline.run_observed(input, |name, draft| {
        let now = &draft.messages;
        let same = now.len() == previous.len()
            && now.iter().zip(&previous).all(|(a, b)| Arc::ptr_eq(a, b));
        let (changed, delta) = if same {
            (0, 0)
        } else {
            let before = previous_set.take().unwrap_or_else(|| addresses(&previous));
            let after = addresses(now);
            let mut changed = 0;
            let mut gained = 0;
            for m in now.iter().filter(|m| !before.contains(&key(m))) {
                changed += 1;
                gained += estimator.message_tokens(m);
            }
            let lost: u64 = previous
                .iter()
                .filter(|m| !after.contains(&key(m)))
                .map(|m| estimator.message_tokens(m))
                .sum();
            previous_set = Some(after);
            (changed, gained as i64 - lost as i64)
        };
        // Counts are of messages before cleanup merges adjacent system messages: a merge
        // removes no content.
        let count = if name == "cleanup" {
            0
        } else {
            now.len() as i64 - previous.len() as i64
        };
        add(item_of(name), delta, count);
        processors.push(ProcessorEffect {
            processor: name.to_owned(),
            messages_before: previous.len() as u32,
            messages_after: now.len() as u32,
            changed: changed as u32,
            tokens_delta: delta,
        });
        if !same {
            previous = now.clone();
        }
    });
    let mut report = ContextReport {
        processors,
        ..Default::default()
    };
    for (item, tokens, count) in items {
        if tokens != 0 || count > 0 {
            let tokens = tokens.max(0) as u64;
            report.items.push(AdmittedItem {
                item: item.to_owned(),
                tokens,
                count: count.max(0) as u32,
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
