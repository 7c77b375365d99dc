//! How `rein op replay` prints a comparison: one row per answer (the original first), with its
//! tokens, cost, latency, why it stopped, whether it asked for the original's tools, and the
//! start of what it said or the tools it asked for; a chain as one line per replayed call and
//! where it diverged.

use rein_operation::{ChainReplay, ReplayAnswer, StepReplay};

/// What an answer said, in one line: its tool calls, else its text's first line (cut).
fn said(a: &ReplayAnswer) -> String {
    if let Some(e) = &a.error {
        return format!("failed: {e}");
    }
    let text = if a.tool_calls.is_empty() {
        a.answer.lines().next().unwrap_or_default().to_owned()
    } else {
        a.tool_calls
            .iter()
            .map(|c| format!("→ {} {}", c.name, c.arguments))
            .collect::<Vec<_>>()
            .join("; ")
    };
    const SHOWN: usize = 72;
    if text.chars().count() <= SHOWN {
        return text;
    }
    let mut cut: String = text.chars().take(SHOWN - 1).collect();
    cut.push('…');
    cut
}

fn ms(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v} ms"))
}

fn row(a: &ReplayAnswer) -> String {
    format!(
        "{:<28} {:>4} {:>13} {:>12} {:>9} {:>9} {:<10} {:<5} {}",
        a.model,
        if a.run == 0 {
            "was".to_owned()
        } else {
            a.run.to_string()
        },
        format!("{}/{}", a.input_tokens, a.output_tokens),
        a.cost.to_string(),
        ms(a.first_token_ms),
        ms(a.total_ms),
        a.finish.as_deref().unwrap_or("–"),
        match a.same_tool_calls {
            None => "",
            Some(true) => "same",
            Some(false) => "other",
        },
        said(a)
    )
}

/// Print `r` as a table.
pub fn step(r: &StepReplay) {
    println!("step {} of operation {}", r.step, r.operation);
    println!(
        "{:<28} {:>4} {:>13} {:>12} {:>9} {:>9} {:<10} {:<5} said",
        "model", "run", "tokens in/out", "cost (USD)", "first", "total", "finish", "tools"
    );
    println!("{}", row(&r.original));
    for a in &r.answers {
        println!("{}", row(a));
    }
}

/// Print `c`: each replayed call, and where it diverged.
pub fn chain(c: &ChainReplay) {
    println!("operation {} replayed by {}", c.operation, c.model);
    for s in &c.steps {
        for a in &s.answers {
            println!(
                "step {:<4} {:<5} {}",
                s.step,
                if a.same_tool_calls == Some(true) {
                    "same"
                } else {
                    "other"
                },
                said(a)
            );
        }
    }
    match (c.diverged_at, c.steps.last()) {
        (Some(step), Some(s)) => println!(
            "diverged at step {step}: the original {}",
            said(&s.original)
        ),
        _ => println!("no divergence: every call asked for the original's tools"),
    }
}
