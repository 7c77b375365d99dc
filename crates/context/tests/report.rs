//! The context report: every item a call admits is accounted for, and the items sum exactly to
//! the estimate of the messages sent, whatever the processors insert, rewrite or merge.

use crate::common;

use common::*;
use rein_context::report::{admit_tool_schemas, explain};
use rein_context::{
    AgentFacts, ContextInput, KnowledgeChunk, ModelFacts, Pipeline, SkillBrief, SkillText,
    TiktokenEstimator, ToolBrief,
};
use rein_core::agent::TokenEstimator;
use rein_core::message::{Message, MessageKind, ToolStatus};
use rein_core::state::{TodoItem, TodoStatus};
use std::sync::Arc;

fn summary(text: &str) -> Arc<Message> {
    let mut m = Message::assistant(text);
    m.kind = MessageKind::CompressionSummary;
    Arc::new(m)
}

#[test]
fn every_item_is_accounted_for_and_the_items_sum_to_the_messages_sent() {
    let messages = vec![
        system("You are the release manager."),
        summary("Earlier: the team agreed to ship on Friday."),
        user("Prepare the notes."),
        calling("Checking.", &["c1"]),
        result("c1", ToolStatus::Succeeded, &"changelog line\n".repeat(400)),
        assistant(""),
        user("And the checklist."),
    ];
    let agent = AgentFacts {
        name: Some("release-bot".into()),
        memories: vec!["The user prefers bullet points.".into()],
        knowledge: vec![KnowledgeChunk {
            source: "RELEASING.md".into(),
            text: "Tag, build, publish.".into(),
        }],
        max_tool_result_chars: Some(500),
        tool_roles: vec![("git".into(), "Never force-push.".into())],
        active_skills: vec![SkillText {
            name: "release-notes".into(),
            body: "Group changes by kind.".into(),
            from_call: false,
        }],
        ..Default::default()
    };
    let mut step = step();
    step.inactive_tools = vec![ToolBrief {
        name: "deploy".into(),
        description: "Deploy a build.".into(),
    }];
    step.available_skills = vec![SkillBrief {
        name: "incident".into(),
        description: "Write an incident note.".into(),
    }];
    step.todos = vec![TodoItem {
        text: "Write notes".into(),
        status: TodoStatus::InProgress,
    }];
    let model = ModelFacts::default();
    let input = ContextInput {
        messages: &messages,
        agent: &agent,
        model: &model,
        step: &step,
    };
    let estimator = TiktokenEstimator::default();
    let (out, mut report) = explain(&Pipeline::standard(), &input, &estimator);
    // The same messages as a plain run.
    let plain = Pipeline::standard().run(&input);
    assert_eq!(render(&out.messages), render(&plain.messages));
    // Exactly the estimate of what is sent.
    assert_eq!(report.total_tokens, estimator.messages(&out.messages));
    let items: Vec<&str> = report.items.iter().map(|i| i.item.as_str()).collect();
    assert_eq!(
        items,
        [
            "system_role",
            "memories",
            "knowledge",
            "skills",
            "tool_list",
            "plan",
            "summary",
            "history"
        ]
    );
    assert_eq!(
        report.items.iter().map(|i| i.tokens).sum::<u64>(),
        report.total_tokens
    );
    // The long tool result was cut: history lost tokens to `tool_result_limit`.
    let cut = report
        .processors
        .iter()
        .find(|p| p.processor == "tool_result_limit")
        .unwrap();
    assert!(cut.tokens_delta < 0 && cut.changed == 1, "{cut:?}");
    // Processors that changed nothing say so.
    let truncate = &report.processors[0];
    assert_eq!(
        (
            truncate.processor.as_str(),
            truncate.changed,
            truncate.tokens_delta
        ),
        ("history_truncate", 0, 0)
    );
    // The tool schemas come last and count into the total.
    let before = report.total_tokens;
    admit_tool_schemas(&mut report, 120, 3);
    assert_eq!(report.total_tokens, before + 120);
    assert_eq!(report.items.last().unwrap().item, "tool_schemas");
    // The same input again gives the same report (nothing remembered changes a count).
    let (_, again) = explain(&Pipeline::standard(), &input, &estimator);
    assert_eq!(again.total_tokens, before);
}

#[test]
fn a_large_skill_catalog_is_listed_within_its_budget() {
    use rein_context::processors::skills::LISTING_BUDGET_CHARS;
    let skills: Vec<SkillBrief> = (0..1000)
        .map(|i| SkillBrief {
            name: format!("skill-{i:03}"),
            description: format!(
                "Procedures for area {i}: reviews, checklists and incident notes."
            ),
        })
        .collect();
    let mut step = step();
    step.available_skills = skills;
    let messages = vec![user("hi")];
    let agent = AgentFacts::default();
    let model = ModelFacts::default();
    let input = ContextInput {
        messages: &messages,
        agent: &agent,
        model: &model,
        step: &step,
    };
    let out = Pipeline::standard().run(&input);
    let listing = out.messages[0].text_content();
    // Described while the budget lasts, then named, then counted: never the whole catalog.
    assert!(
        listing.contains("- skill-000: Procedures for area 0"),
        "{listing}"
    );
    assert!(listing.contains("Also: skill-"), "{listing}");
    assert!(listing.contains("more not listed."), "{listing}");
    assert!(!listing.contains("skill-999"), "{listing}");
    assert!(
        listing.len() < 2 * LISTING_BUDGET_CHARS + 400,
        "{}",
        listing.len()
    );
    let described = listing
        .lines()
        .filter(|l| l.starts_with("- skill-"))
        .count();
    let named = listing
        .lines()
        .find_map(|l| l.strip_prefix("Also: "))
        .map_or(0, |l| l.split(", ").count());
    let counted: usize = listing
        .lines()
        .find_map(|l| l.strip_prefix("And "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(described + named + counted, 1000);
}
