//! The goal's own model calls: the planner, and the independent verifier of each work and of
//! the whole objective. Each is one strict-JSON request whose tokens and cost count against
//! the goal's budget; an answer that does not fit its schema is a failed plan, or a verdict
//! that does not pass (never a pass by default). A verifier that is an agent judges in an
//! operation of its own instead, read the same way.

use super::{Followed, GoalRunError, GoalRunner, Judged};
use crate::driver::{ask_metered, json_in};
use rein_core::OperationId;
use rein_core::goal::plan::{self, ProposedPlan};
use rein_core::goal::{AttemptEnd, GoalEvent, Verdict, prompts};
use rein_core::state::ModelRef;
use rein_model::request::ResponseFormat;
use rein_store::{Accounts, GoalRecord, GoalSpend};

/// The planner's instructions (its input is the prompt built from the goal).
const PLANNER: &str = "You plan long-horizon work for a team of agents. Answer only with the JSON object the schema describes.";
/// The verifier's instructions, for `subject` (work `ID`, or the whole objective).
fn verifier_instructions(subject: &str) -> String {
    format!(
        "You are an independent, strict reviewer of {subject}. You did not do the work and you do not take the worker's word for it. Answer only with the JSON object the schema describes."
    )
}

impl GoalRunner {
    fn planner(&self, record: &GoalRecord) -> ModelRef {
        record
            .settings
            .planner
            .clone()
            .or_else(|| self.host.system_model.clone())
            .unwrap_or_else(|| self.host.default_model.clone())
    }

    fn verifier(&self, record: &GoalRecord) -> ModelRef {
        record
            .settings
            .verifier
            .clone()
            .unwrap_or_else(|| self.planner(record))
    }

    /// What one call of `model` that used `usage` (and reported `reported`) spent.
    fn spend(&self, model: &ModelRef, answer: &crate::driver::MeteredAnswer) -> GoalSpend {
        let pricing = crate::pricing::Pricing::new(
            std::sync::Arc::clone(&self.host.catalog),
            &rein_core::spec::OperationSpec {
                prices: self.host.prices.clone(),
                ..Default::default()
            },
        );
        GoalSpend {
            cost: pricing
                .cost(
                    &model.provider,
                    &model.model,
                    &answer.usage,
                    answer.reported,
                )
                .unwrap_or_default(),
            tokens: answer.usage.total,
        }
    }

    /// Ask the planner for the goal's next plan: the checked plan, or why there is none.
    pub(super) async fn plan(
        &self,
        record: &GoalRecord,
        why: &str,
    ) -> Result<(GoalEvent, GoalSpend), GoalRunError> {
        let agents: Vec<(String, String)> = self
            .store
            .list_agents(&self.agents_of)
            .await?
            .into_iter()
            .map(|a| {
                let description = a.config["description"]
                    .as_str()
                    .or(a.config["system"].as_str())
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect();
                (a.name, description)
            })
            .collect();
        let model = self.planner(record);
        let asked = ask_metered(
            &*self.host.models,
            &model,
            tokio_util::sync::CancellationToken::new(),
            PLANNER,
            prompts::plan(&record.goal, why, &agents),
            ResponseFormat::JsonSchema {
                name: "goal_plan".into(),
                schema: plan::schema(),
                strict: true,
            },
        )
        .await;
        let answer = match asked {
            Ok(a) => a,
            Err(e) => {
                return Ok((
                    GoalEvent::PlanFailed {
                        why: format!("the planner ({}) failed: {e}", model.key()),
                    },
                    GoalSpend::default(),
                ));
            }
        };
        let spend = self.spend(&model, &answer);
        let proposed = json_in(&answer.text)
            .map_err(|e| e.to_string())
            .and_then(|v| serde_json::from_value::<ProposedPlan>(v).map_err(|e| e.to_string()));
        let names: Vec<String> = agents.into_iter().map(|(n, _)| n).collect();
        let checked = proposed.and_then(|p| {
            plan::check(
                &record.goal,
                &p,
                &format!("planner:{}", model.key()),
                why,
                |a| names.iter().any(|n| n == a),
            )
            .map_err(|e| e.to_string())
        });
        Ok(match checked {
            Ok((works, revision)) => (GoalEvent::Planned { works, revision }, spend),
            Err(why) => (
                GoalEvent::PlanFailed {
                    why: format!("the planner's plan was refused: {why}"),
                },
                spend,
            ),
        })
    }

    /// Ask the verifier to judge `prompt` about `subject`: its verdict (one that does not
    /// parse, or a failed call, is a verdict that does not pass, naming why).
    pub(super) async fn judge(
        &self,
        record: &GoalRecord,
        subject: &str,
        prompt: &str,
    ) -> (Verdict, GoalSpend) {
        let model = self.verifier(record);
        let asked = ask_metered(
            &*self.host.models,
            &model,
            tokio_util::sync::CancellationToken::new(),
            &verifier_instructions(subject),
            prompt.to_owned(),
            ResponseFormat::JsonSchema {
                name: "verdict".into(),
                schema: Verdict::schema(),
                strict: true,
            },
        )
        .await;
        match asked {
            Ok(answer) => {
                let spend = self.spend(&model, &answer);
                let verdict = json_in(&answer.text)
                    .map_err(|e| e.to_string())
                    .and_then(|v| serde_json::from_value::<Verdict>(v).map_err(|e| e.to_string()));
                match verdict {
                    Ok(v) => (strict(v), spend),
                    Err(why) => (unjudged(format!("the verifier's answer: {why}")), spend),
                }
            }
            Err(e) => (
                unjudged(format!("the verifier ({}) failed: {e}", model.key())),
                GoalSpend::default(),
            ),
        }
    }

    /// Have verifier agent `agent` judge `prompt` as operation `operation` (made once, run
    /// like a work's): its verdict once it answered (one that cannot be read, or an operation
    /// that did not finish, is a verdict that does not pass, naming why), or where it stands.
    /// What it spends is its operation's, counted in the goal's ledger.
    pub(super) async fn judge_by_agent(
        &self,
        record: &GoalRecord,
        agent: &str,
        operation: OperationId,
        prompt: &str,
    ) -> Result<Judged, GoalRunError> {
        let verdict = match self.follow(operation).await? {
            Some(Followed::Running) => return Ok(Judged::Progressing),
            Some(Followed::Parked) => return Ok(Judged::Parked),
            Some(Followed::Ended(AttemptEnd::Finished { answer })) => match verdict_in(&answer) {
                Ok(v) => strict(v),
                Err(why) => unjudged(format!("the verifier agent `{agent}`'s answer: {why}")),
            },
            Some(Followed::Ended(AttemptEnd::Failed { why })) => unjudged(format!(
                "the verifier agent `{agent}` did not finish: {why}"
            )),
            None => {
                let asked = prompts::verdict_format(prompt);
                match self
                    .start_op(record, Some(agent), operation, &asked)
                    .await?
                {
                    Ok(()) => return Ok(Judged::Progressing),
                    Err(why) => unjudged(format!(
                        "the verifier agent `{agent}` could not start: {why}"
                    )),
                }
            }
        };
        Ok(Judged::Verdict(verdict, GoalSpend::default()))
    }
}

/// A verdict that did not come: no pass, naming why.
fn unjudged(why: String) -> Verdict {
    Verdict {
        passed: false,
        gaps: vec![format!("it could not be verified: {why}")],
        evidence: Vec::new(),
    }
}

/// `v` held to the rule: a pass with gaps is not a pass.
fn strict(v: Verdict) -> Verdict {
    if v.passed && !v.gaps.is_empty() {
        Verdict { passed: false, ..v }
    } else {
        v
    }
}

/// The verdict an agent ended its answer with: the answer itself as JSON (fenced or not), else
/// the last JSON object it ends with (an agent may explain before it).
fn verdict_in(answer: &str) -> Result<Verdict, String> {
    if let Ok(v) = json_in(answer) {
        return serde_json::from_value(v).map_err(|e| e.to_string());
    }
    let body = answer.trim_end();
    let body = body.strip_suffix("```").unwrap_or(body).trim_end();
    // The earliest `{` whose rest parses whole is the outermost object the answer ends with.
    body.char_indices()
        .filter(|&(_, c)| c == '{')
        .find_map(|(i, _)| serde_json::from_str::<Verdict>(&body[i..]).ok())
        .ok_or_else(|| "it does not end with a verdict as a JSON object".to_owned())
}

#[cfg(test)]
mod tests {
    use super::verdict_in;

    #[test]
    fn an_agents_verdict_is_the_json_object_its_answer_ends_with() {
        let v = verdict_in("{\"passed\": true, \"gaps\": [], \"evidence\": [\"ok\"]}").unwrap();
        assert!(v.passed);
        let v = verdict_in(
            "I opened {notes.md} and {x}.\n```json\n{\"passed\": false, \"gaps\": [\"no {gamma}\"], \"evidence\": []}\n```\n",
        )
        .unwrap();
        assert_eq!(v.gaps, ["no {gamma}"]);
        assert!(!v.passed);
        for bad in [
            "Looks good to me.",
            "{\"passed\": true} and then more words",
            "{\"verdict\": \"pass\"}",
        ] {
            assert!(verdict_in(bad).is_err(), "{bad}");
        }
    }
}
