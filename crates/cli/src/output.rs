//! What `rein` prints: answer text on stdout, tool activity on stderr (or JSON lines).

use rein_core::AgentEvent;
use rein_core::engine::EventSink;
use rein_core::event::{EventKind, StreamChunk};
use rein_store::StepRecord;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Prints events as they happen.
pub struct Printer {
    json: bool,
    waiting: Arc<Waiting>,
    /// Operations announced as sub-agents: their words are not the answer (stdout), their
    /// tool activity is shown indented.
    sub_agents: Mutex<std::collections::HashSet<rein_core::OperationId>>,
    /// The answer's last line on stdout is not ended yet: the model's result ends it, so a
    /// shell prompt or the next command's output starts on a line of its own.
    open_line: std::sync::atomic::AtomicBool,
}

/// A spinner on a terminal's stderr while the model has said nothing for over a second.
#[derive(Default)]
struct Waiting {
    /// Bumped by every event: a spinner scheduled under an older value never appears.
    generation: AtomicU64,
    spinner: Mutex<Option<indicatif::ProgressBar>>,
}

impl Waiting {
    fn stop(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Some(s) = self
            .spinner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            s.finish_and_clear();
        }
    }

    fn after_a_second(self: &Arc<Self>, message: &'static str) {
        self.stop();
        let (Ok(rt), true) = (
            tokio::runtime::Handle::try_current(),
            std::io::stderr().is_terminal(),
        ) else {
            return;
        };
        let generation = self.generation.load(Ordering::SeqCst);
        let me = Arc::clone(self);
        rt.spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let mut slot = me.spinner.lock().unwrap_or_else(|p| p.into_inner());
            if me.generation.load(Ordering::SeqCst) == generation {
                let s = indicatif::ProgressBar::new_spinner().with_message(message);
                s.enable_steady_tick(Duration::from_millis(100));
                *slot = Some(s);
            }
        });
    }
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            waiting: Arc::default(),
            sub_agents: Mutex::default(),
            open_line: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

fn short(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() > n {
        format!("{}…", one_line.chars().take(n).collect::<String>())
    } else {
        one_line
    }
}

impl EventSink for Printer {
    fn publish(&self, e: &AgentEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(e) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
            return;
        }
        if let EventKind::SubAgentStarted { sub_agent, .. } = &e.kind {
            self.sub_agents
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(*sub_agent);
        }
        let sub = self
            .sub_agents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&e.operation_id);
        if sub {
            self.waiting.stop();
            sub_agent_line(&e.kind);
            return;
        }
        match &e.kind {
            EventKind::LlmStart { .. } => self.waiting.after_a_second("waiting for the model"),
            EventKind::ToolPending { .. } => self.waiting.after_a_second("running tools"),
            _ => self.waiting.stop(),
        }
        match &e.kind {
            EventKind::LlmStream {
                chunk: StreamChunk::Text { text },
                ..
            } => {
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{text}");
                let _ = out.flush();
                if !text.is_empty() {
                    self.open_line
                        .store(!text.ends_with('\n'), std::sync::atomic::Ordering::Relaxed);
                }
            }
            EventKind::LlmResult { .. }
                if self
                    .open_line
                    .swap(false, std::sync::atomic::Ordering::Relaxed) =>
            {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out);
                let _ = out.flush();
            }
            EventKind::ToolPending { tool_calls } => {
                for c in tool_calls {
                    eprintln!("\n→ {}({})", c.key(), short(&c.arguments, 200));
                }
            }
            EventKind::ToolResult {
                status, content, ..
            } => {
                let status = status.to_string();
                eprintln!("← {status}: {}", short(content, 300));
            }
            EventKind::StreamRetry {
                attempt,
                max_attempts,
                delay_ms,
                error_kind,
            } => {
                eprintln!(
                    "(model call failed: {}; retry {attempt}/{max_attempts} in {delay_ms} ms)",
                    error_kind.as_deref().unwrap_or("error")
                );
            }
            EventKind::BudgetExceeded { budget, .. } => eprintln!("(budget exceeded: {budget:?})"),
            EventKind::SubAgentStarted {
                sub_agent,
                agent,
                title,
                ..
            } => eprintln!(
                "\n⇢ {} started \"{}\" (op {sub_agent})",
                agent.as_deref().unwrap_or("sub-agent"),
                short(title, 80)
            ),
            EventKind::SubAgentEnded {
                agent,
                status,
                success,
                cost,
                ..
            } => eprintln!(
                "⇠ {} {} ({}) · {cost}",
                agent.as_deref().unwrap_or("sub-agent"),
                if *success {
                    "answered"
                } else {
                    "did not finish"
                },
                status
            ),
            _ => {}
        }
    }
}

/// A sub-agent's activity, indented under its parent's: its tool calls and results only.
fn sub_agent_line(kind: &EventKind) {
    match kind {
        EventKind::ToolPending { tool_calls } => {
            for c in tool_calls {
                eprintln!("    → {}({})", c.key(), short(&c.arguments, 120));
            }
        }
        EventKind::ToolResult {
            status, content, ..
        } => eprintln!("    ← {}: {}", status, short(content, 160)),
        EventKind::SubAgentStarted { agent, title, .. } => eprintln!(
            "    ⇢ {} started \"{}\"",
            agent.as_deref().unwrap_or("sub-agent"),
            short(title, 80)
        ),
        _ => {}
    }
}

/// `rein op show`.
/// Why a pending call asks, indented under it (and that no grant covers it, when so).
pub fn why(r: &rein_core::intervention::ApprovalReason) -> String {
    let mut out = format!("             why: {} ({})", r.line(), r.source.as_str());
    if r.every_time {
        out.push_str("; asked every time");
    }
    out
}

/// `n` and the noun, singular for one (`1 step`, `3 steps`).
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `rein op list`'s table, local or from a server: a header, then one line per operation.
pub fn op_list(records: &[rein_store::OperationRecord]) {
    if records.is_empty() {
        println!("no operations");
        return;
    }
    println!(
        "{:<36}  {:<22} {:>9} {:>14}  {:>12}  {:<19}  asked",
        "operation", "status", "steps", "tokens", "cost (USD)", "created"
    );
    for r in records {
        let cost = r.cost.to_string();
        println!(
            "{:<36}  {:<22} {:>9} {:>14}  {:>12}  {}  {}",
            r.id,
            r.status.as_str(),
            count(r.step_count, "step"),
            format!("{} tokens", r.total_tokens),
            cost,
            r.created_at.format("%Y-%m-%d %H:%M:%S"),
            asked(r.prompt.as_deref())
        );
    }
}

/// The start of what an operation was asked, as `op list` shows it: at most 48 characters.
fn asked(prompt: Option<&str>) -> String {
    const SHOWN: usize = 48;
    let Some(p) = prompt else {
        return "—".into();
    };
    if p.chars().count() <= SHOWN {
        return p.to_owned();
    }
    let mut cut: String = p.chars().take(SHOWN - 1).collect();
    cut.push('…');
    cut
}

pub fn show(
    r: &rein_store::OperationRecord,
    spec: &rein_core::spec::OperationSpec,
    steps: &[StepRecord],
    pending: &[rein_store::Intervention],
    cache: &rein_operation::pricing::CacheUse,
) {
    let status = r.status.to_string();
    println!("operation {}", r.id);
    println!(
        "  status     {status}{}",
        r.finish_reason
            .map(|f| format!(" ({})", f))
            .unwrap_or_default()
    );
    if let Some(d) = &r.finish_detail {
        println!("  detail     {d}");
    }
    if let Some(e) = &r.error {
        println!("  error      {e}");
    }
    if let Some(f) = &spec.forked_from {
        println!("  forked     from {} after step {}", f.operation, f.step);
    }
    if let Some(n) = &r.recovery {
        println!(
            "  recovery   cannot resume here: {} (attempt {}{})",
            n.reason,
            n.attempts,
            n.retry_at
                .map(|t| format!(", retry at {}", t.to_rfc3339()))
                .unwrap_or_default()
        );
    }
    let tools = match &spec.allowed_tools {
        None => "all".to_owned(),
        Some(t) if t.is_empty() => "none".to_owned(),
        Some(t) => t.join(", "),
    };
    println!("  tools      {tools}");
    let approval = spec.approval.to_string();
    if spec.allow.is_empty() {
        println!("  approval   {approval}");
    } else {
        println!(
            "  approval   {approval}, unasked: {}",
            spec.allow.join(", ")
        );
    }
    println!("  surface    {}", spec.surface);
    let sb = spec.sandbox;
    println!(
        "  sandbox    {}{}",
        sb.mode.as_str(),
        match (sb.mode, sb.network) {
            (rein_core::spec::SandboxMode::Off, _) => "",
            (_, true) => ", network allowed",
            (_, false) => ", no network",
        }
    );
    println!(
        "  model      {}/{}",
        r.provider.as_deref().unwrap_or("?"),
        r.model.as_deref().unwrap_or("?")
    );
    println!("  steps      {} (commits {})", r.step_count, r.commit_seq);
    println!(
        "  tokens     {} in, {} out, {} total",
        r.input_tokens, r.output_tokens, r.total_tokens
    );
    println!("  cost       {}", r.cost);
    if cache.input_tokens > 0 && cache.read_tokens + cache.written_tokens > 0 {
        println!(
            "  cache      {} of {} input tokens read from the provider's cache ({:.0}%), {} written, {} saved",
            cache.read_tokens,
            cache.input_tokens,
            100.0 * cache.read_tokens as f64 / cache.input_tokens as f64,
            cache.written_tokens,
            cache.saved
        );
    }
    println!("  created    {}", r.created_at);
    for i in pending {
        let c = &i.call;
        let by = if i.operation_id == r.id {
            String::new()
        } else {
            format!(" (sub-agent {})", i.operation_id)
        };
        println!("  pending    {} {}({}){by}", c.id, c.key(), c.arguments);
        if let Some(r) = &i.reason {
            println!("{}", why(r));
        }
    }
    println!("  timeline");
    for s in steps {
        let status = s.status.to_string();
        println!(
            "    {:>3}  {:<18} {}",
            s.step_index,
            status,
            s.instructions
                .iter()
                .map(|i| i.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// `rein op show --tree`: the operation's sub-agents, indented by depth.
pub fn tree(root: &rein_store::OperationRecord, sub_agents: &[rein_store::OperationRecord]) {
    println!("  tree");
    fn print(parent: rein_core::OperationId, depth: usize, all: &[rein_store::OperationRecord]) {
        for r in all.iter().filter(|r| r.parent_operation == Some(parent)) {
            let status = r.status.to_string();
            let finish = r
                .finish_reason
                .map(|f| format!(" ({})", f))
                .unwrap_or_default();
            println!(
                "  {:indent$}└ {} {} {status}{finish} · {} · {}",
                "",
                r.id,
                r.agent.as_deref().unwrap_or("sub-agent"),
                count(r.step_count, "step"),
                r.cost,
                indent = depth * 2
            );
            print(r.id, depth + 1, all);
        }
    }
    print(root.id, 1, sub_agents);
}

/// A group run's turns since the last human message, each with its speaker, on stdout.
pub fn turns(messages: &[&rein_core::Message]) {
    let since = messages
        .iter()
        .rposition(|m| m.role == rein_core::Role::User && m.author.is_none())
        .map_or(0, |i| i + 1);
    let mut out = std::io::stdout().lock();
    for m in &messages[since..] {
        if let (rein_core::Role::Assistant, Some(who)) = (m.role, m.author.as_deref()) {
            let _ = writeln!(out, "{who}: {}\n", m.text_content().trim());
        }
    }
}

/// What the model calls of one step admitted (`rein op show ID --context STEP`).
pub fn call_contexts(
    calls: &[rein_operation::context_report::CallContext],
    step: u32,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(calls)?);
        return Ok(());
    }
    if calls.is_empty() {
        anyhow::bail!(
            "step {step} made no model call with a context report (see the steps in `rein op show`)"
        );
    }
    for c in calls {
        println!(
            "step {} · model call for message {}",
            c.step, c.assistant_message_id
        );
        println!("  {:<14} {:>8} {:>6}", "admitted", "tokens", "count");
        for i in &c.report.items {
            println!("  {:<14} {:>8} {:>6}", i.item, i.tokens, i.count);
        }
        println!("  {:<14} {:>8}", "total", c.report.total_tokens);
        println!(
            "  {:<14} {:>8}  (the start of the request equal to the last call's: what a prompt cache can serve)",
            "stable prefix", c.report.stable_prefix_tokens
        );
        println!("  processors (messages before → after, added or rewritten, tokens)");
        for p in &c.report.processors {
            if p.changed == 0 && p.tokens_delta == 0 && p.messages_before == p.messages_after {
                continue;
            }
            println!(
                "  {:<20} {:>4} → {:<4} {:>3} changed {:>+8}",
                p.processor, p.messages_before, p.messages_after, p.changed, p.tokens_delta
            );
        }
    }
    Ok(())
}
