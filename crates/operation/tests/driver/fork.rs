//! Forks: a new operation from the state another had right after one of its steps, with
//! another model, tools or instructions; the original untouched.

use super::*;
use rein_core::instruction::InstructionKind;
use rein_core::spec::ForkedFrom;
use rein_operation::{DriverError, ForkChanges, ForkError, ForkOptions};
use rein_store::{OperationFilter, StepRan, Trigger};

fn gpt_4o() -> ModelRef {
    ModelRef {
        provider: "openai".into(),
        model: "gpt-4o".into(),
    }
}

fn fork_of(from: OperationId, at: u64, changes: ForkChanges) -> ForkOptions {
    ForkOptions {
        from,
        at,
        changes,
        trigger: Trigger::Cli,
        admission: None,
        max_cost: None,
        max_tokens: None,
    }
}

/// Two tool rounds, then a fork after the first round's tool step with another model: its
/// first request is the original's request after that step but for the model, it answers
/// on its own, and nothing of the original changed.
#[tokio::test]
async fn a_fork_runs_from_exactly_the_committed_state_with_another_model() {
    let e = env(vec![
        tools(&[calc("c1", "17*23")]),
        tools(&[calc("c2", "391+1")]),
        Canned::openai_text("17 × 23 + 1 = 392."),
        Canned::openai_text("The fork's answer."),
    ])
    .await;
    let d = driver(&e, false);
    let id = d
        .start("What is 17*23, plus one?", &steady(&["calculator"]))
        .await
        .unwrap();
    d.run(id).await.unwrap();
    let steps = e.store.steps(id).await.unwrap();
    let kinds: Vec<Vec<StepRan>> = steps.iter().map(|s| s.instructions.clone()).collect();
    assert_eq!(
        kinds[..3],
        [
            vec![StepRan::Instruction(InstructionKind::CallLlm)],
            vec![StepRan::Instruction(InstructionKind::CallTool)],
            vec![StepRan::Instruction(InstructionKind::CallLlm)],
        ],
        "step 2 ran the first tool call; step 3 asked the model again"
    );
    let before = e.store.load_operation(id).await.unwrap().unwrap();
    let events_before = e.store.events(id, None).await.unwrap();
    let topic_before = e
        .store
        .topic_messages(&before.record.topic_id)
        .await
        .unwrap();

    let fork = d
        .fork(&fork_of(
            id,
            steps[1].step_index,
            ForkChanges {
                model: Some(gpt_4o()),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .id;
    let end = d.run(fork).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");

    let requests = e.server.requests();
    assert_eq!(requests.len(), 4);
    let original = serde_json::to_string(&requests[1].body)
        .unwrap()
        .replace("gpt-4o-mini", "gpt-4o");
    assert_eq!(
        serde_json::to_string(&requests[3].body).unwrap(),
        original,
        "the fork's first request is the original's request after step 2, with the other model"
    );
    assert_eq!(requests[3].body["model"], "gpt-4o");

    let forked = e.store.load_operation(fork).await.unwrap().unwrap();
    assert_eq!(
        forked.spec.forked_from,
        Some(ForkedFrom {
            operation: id,
            step: steps[1].step_index
        })
    );
    assert_ne!(forked.record.topic_id, before.record.topic_id);
    assert_eq!(
        forked.state.messages.last().unwrap().text_content(),
        "The fork's answer."
    );
    let original_ids: std::collections::HashSet<_> = topic_before.iter().map(|m| m.id).collect();
    assert!(
        forked
            .state
            .messages
            .iter()
            .all(|m| !original_ids.contains(&m.id)),
        "the fork's messages are its own"
    );
    assert_consistent(&e.store, fork).await;
    assert_eq!(
        forked.state.usage.llm.calls, 1,
        "the fork counts its own calls only"
    );
    assert!(forked.record.cost > Usd::ZERO);

    // The original: the same record, events, steps, messages.
    let after = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(after.record, before.record);
    assert_eq!(after.state.messages, before.state.messages);
    assert_eq!(e.store.events(id, None).await.unwrap(), events_before);
    assert_eq!(e.store.steps(id).await.unwrap(), steps);
    assert_eq!(
        e.store
            .topic_messages(&before.record.topic_id)
            .await
            .unwrap(),
        topic_before
    );
}

/// What a fork may not be: wider in tools, at a step that does not exist, or at a step after
/// which the operation did not run on; each refused before anything is written.
#[tokio::test]
async fn a_fork_is_refused_when_it_widens_the_tools_or_has_no_next_step() {
    let e = env(vec![tools(&[calc("c1", "2+2")]), Canned::openai_text("4.")]).await;
    let d = driver(&e, false);
    let id = d.start("2+2?", &steady(&["calculator"])).await.unwrap();
    d.run(id).await.unwrap();
    let count = || async {
        e.store
            .list_operations(&OperationFilter::default())
            .await
            .unwrap()
            .len()
    };
    let ops = count().await;

    let wider = d
        .fork(&fork_of(
            id,
            1,
            ForkChanges {
                tools: Some(vec!["calculator".into(), "deploy".into()]),
                ..Default::default()
            },
        ))
        .await;
    let Err(DriverError::Fork(ForkError::WiderTools { tools, .. })) = &wider else {
        panic!("{wider:?}")
    };
    assert_eq!(tools, &["deploy".to_owned()]);
    assert!(
        wider
            .unwrap_err()
            .to_string()
            .contains("deploy is not among them")
    );

    let missing = d.fork(&fork_of(id, 99, ForkChanges::default())).await;
    let Err(DriverError::Fork(ForkError::NoStep { last, .. })) = &missing else {
        panic!("{missing:?}")
    };
    let last = last.unwrap();
    assert_eq!(last, e.store.steps(id).await.unwrap().len() as u64);

    let ended = d.fork(&fork_of(id, last, ForkChanges::default())).await;
    let Err(DriverError::Fork(ForkError::NotRunning { status, .. })) = &ended else {
        panic!("{ended:?}")
    };
    assert_eq!(*status, Status::Done);

    let nobody = d
        .fork(&fork_of(OperationId::new(), 1, ForkChanges::default()))
        .await;
    assert!(
        matches!(nobody, Err(DriverError::NotFound(_))),
        "{nobody:?}"
    );
    assert_eq!(count().await, ops, "nothing was written");

    // Narrower is fine.
    let narrower = d
        .fork(&fork_of(
            id,
            1,
            ForkChanges {
                tools: Some(vec!["calculator/evaluate".into()]),
                system_role: Some("Answer in words.".into()),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .id;
    let forked = e.store.load_operation(narrower).await.unwrap().unwrap();
    assert_eq!(
        forked.spec.allowed_tools,
        Some(vec!["calculator/evaluate".to_owned()])
    );
    assert_eq!(forked.state.messages[0].role, Role::System);
    assert_eq!(forked.state.messages[0].text_content(), "Answer in words.");
}
