//! What each model of a goal is told: the planner, a work's agent, a verifier and the final
//! acceptance. Plain text built from the graph, so the same graph always asks the same thing
//! (a step run again after a crash sends the same request).

use super::graph::{AttemptEnd, Goal, Work};
use std::fmt::Write;

/// The planner's instructions: decompose the objective into works (its answer follows the
/// strict schema of [`super::plan::ProposedPlan`]); `agents` are the owner's agents, by name
/// and description, that works may be assigned to.
pub fn plan(goal: &Goal, why: &str, agents: &[(String, String)]) -> String {
    let mut p = format!(
        "Plan how to achieve this objective, as a small set of works that independent agents can each do and a reviewer can each check.\n\nObjective:\n{}\n\nThe objective is achieved when:\n{}\n",
        goal.objective,
        goal.criteria()
    );
    let _ = write!(p, "\nWhy a plan is needed now: {why}\n");
    let kept: Vec<&Work> = goal.works.iter().filter(|w| w.status.unblocks()).collect();
    if !kept.is_empty() {
        p.push_str("\nWorks already done (keep them; new works may depend on them by id):\n");
        for w in kept {
            let _ = writeln!(p, "- {} ({}): {}", w.id, w.status, w.instruction);
        }
    }
    if !agents.is_empty() {
        p.push_str(
            "\nAgents a work may be assigned to (omit the assignee for the default agent):\n",
        );
        for (name, description) in agents {
            let _ = writeln!(p, "- {name}: {description}");
        }
    }
    let _ = write!(
        p,
        "\nRules: at most {} works; each has a short id (letters, digits, - and _), an instruction complete enough for an agent that knows nothing else, the ids of the works it needs first (no cycles), and acceptance criteria a reviewer can check from its output alone. Prefer works that can run in parallel.",
        goal.limits.max_works
    );
    p
}

/// What the agent doing attempt `attempt` of `work` is asked: the objective for context, its
/// instruction, the criteria its output is checked against, what the works it depends on
/// produced, and (after a failed attempt) what was missing.
pub fn work(goal: &Goal, work: &Work, attempt: u32) -> String {
    let mut p = format!(
        "You are doing one part of a larger objective.\n\nObjective: {}\n\nYour work ({}):\n{}\n\nIt is checked by an independent reviewer against:\n{}\n",
        goal.objective, work.id, work.instruction, work.acceptance
    );
    let inputs: Vec<(&str, &str)> = work
        .depends_on
        .iter()
        .filter_map(|d| {
            goal.work(d)
                .and_then(|w| w.output().map(|o| (w.id.as_str(), o)))
        })
        .collect();
    if !inputs.is_empty() {
        p.push_str("\nWhat the works before yours produced:\n");
        for (id, output) in inputs {
            let _ = write!(p, "\n<work id=\"{id}\">\n{output}\n</work>\n");
        }
    }
    if attempt > 1 {
        let feedback = work.feedback(attempt);
        let _ = write!(p, "\nThis is attempt {attempt}. ");
        if feedback.is_empty() {
            p.push_str("The last attempt did not pass.\n");
        } else {
            p.push_str("The reviewer found these gaps in the last attempt; fix them:\n");
            for gap in feedback {
                let _ = writeln!(p, "- {gap}");
            }
        }
    }
    p.push_str(
        "\nWhen you are done, answer with the result itself and the evidence a reviewer needs (what you did, what you checked). Say plainly what you could not do.",
    );
    p
}

/// What the verifier of attempt `attempt` of `work` is asked: the criteria and the attempt's
/// output, to judge with the strict verdict schema ([`super::Verdict`]), never taking the
/// worker's word for it.
pub fn verify(goal: &Goal, work: &Work, attempt: u32) -> String {
    let output = work
        .attempts
        .iter()
        .find(|a| a.n == attempt)
        .and_then(|a| match &a.end {
            Some(AttemptEnd::Finished { answer }) => Some(answer.as_str()),
            Some(AttemptEnd::Failed { .. }) | None => None,
        })
        .unwrap_or("");
    format!(
        "You are an independent reviewer. Judge whether this work meets its acceptance criteria, from its output alone. A claim of success without evidence in the output is a gap. Be strict and specific: each gap names what is missing or wrong.\n\nObjective (context): {}\n\nWork ({}): {}\n\nAcceptance criteria:\n{}\n\nThe work's output (attempt {attempt}):\n<output>\n{output}\n</output>\n\nAnswer with passed (true only if every criterion is met), gaps (empty when passed) and evidence (what in the output your judgement rests on).",
        goal.objective, work.id, work.instruction, work.acceptance
    )
}

/// What the final acceptance is asked: the objective's criteria against what every work
/// produced.
pub fn accept(goal: &Goal) -> String {
    let mut p = format!(
        "You are an independent reviewer. Judge whether the objective is achieved, from the works' outputs alone. A claim without evidence is a gap.\n\nObjective: {}\n\nIt is achieved when:\n{}\n\nThe works and what they produced:\n",
        goal.objective,
        goal.criteria()
    );
    for w in &goal.works {
        match w.output() {
            Some(output) => {
                let _ = write!(
                    p,
                    "\n<work id=\"{}\">\n{}\n\n{output}\n</work>\n",
                    w.id, w.instruction
                );
            }
            None => {
                let _ = write!(
                    p,
                    "\n<work id=\"{}\" status=\"{}\">\n{}\n</work>\n",
                    w.id, w.status, w.instruction
                );
            }
        }
    }
    p.push_str("\nAnswer with passed (true only if the objective is fully achieved), gaps (empty when passed) and evidence.");
    p
}

/// What a verifier that is an agent (not a model held to a schema) is told after `prompt`
/// ([`verify`] or [`accept`]): how to write its verdict so it can be read.
pub fn verdict_format(prompt: &str) -> String {
    format!(
        "{prompt}\n\nYou may use your tools to look at what the work made. End your answer with the verdict as one JSON object and nothing after it: {{\"passed\": true or false, \"gaps\": [\"...\"], \"evidence\": [\"...\"]}}."
    )
}
