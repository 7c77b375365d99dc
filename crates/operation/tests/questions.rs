//! Questions to a person (`ask_user`) through the driver: a scripted model asks, the operation
//! parks whatever the approval mode (auto-run too), a decision that does not fit is refused with
//! nothing written, the answer becomes the call's result in the next model request, a second
//! answer is refused; a headless run never parks; an expired question takes its default.

use crate::common;

use rein_core::engine::DecisionError;
use rein_core::intervention::ApprovalMode;
use rein_core::question::Answer;
use rein_core::state::{FinishReason, Status};
use rein_model::testing::{Canned, Server, serve};
use rein_operation::{Decision, DriverError, OperationSpec, RunEnd, StartOptions};
use rein_store::{Briefs, InterventionStatus, SqlStore, Store};
use std::sync::Arc;

fn ask(args: serde_json::Value) -> Canned {
    Canned::openai_tools(&[("q1", "ask_user__ask", &args.to_string())])
}

fn deploy_question() -> serde_json::Value {
    serde_json::json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}],
        "default": "no"
    })
}

async fn setup(responses: Vec<Canned>) -> (Server, Arc<SqlStore>) {
    let (_, store) = common::temp_store("rein-questions").await;
    (serve(responses, 3).await, store)
}

use common::driver;

fn spec(approval: ApprovalMode) -> StartOptions {
    StartOptions {
        spec: OperationSpec {
            approval,
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn a_question_parks_even_in_auto_run_and_only_a_fitting_answer_continues_it() {
    let (server, store) = setup(vec![
        ask(deploy_question()),
        Canned::openai_text("Waiting, as you chose."),
    ])
    .await;
    let d = driver(&server, &store);
    let id = d
        .start("ship it if I agree", &spec(ApprovalMode::AutoRun))
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("a question parks even under auto-run, got {end:?}")
    };
    assert_eq!(&*pending[0].id, "q1");
    assert_eq!(
        store.interventions(id).await.unwrap()[0].status,
        InterventionStatus::Pending
    );

    // Decisions that do not fit are refused before anything is written.
    let refused = [
        (Decision::Approve, "approving a question"),
        (
            Decision::Answer(Answer::Option("maybe".into())),
            "an unknown option",
        ),
        (
            Decision::Answer(Answer::Text(" ".into())),
            "an empty answer",
        ),
    ];
    for (decision, what) in refused {
        let err = d
            .decide(id, Some(&["q1".into()]), decision, Some("alice"))
            .await
            .expect_err(what);
        assert!(matches!(err, DriverError::Decision(_)), "{what}: {err:?}");
        assert_eq!(
            store.interventions(id).await.unwrap()[0].status,
            InterventionStatus::Pending,
            "{what} wrote nothing"
        );
    }
    // Approving "everything" has nothing to approve: only a question waits.
    assert!(matches!(
        d.decide(id, None, Decision::Approve, None).await,
        Err(DriverError::Refused(_))
    ));
    assert_eq!(server.requests().len(), 1, "no model call while refusing");

    // Another process answers the one open question (no call named).
    let end = driver(&server, &store)
        .decide(
            id,
            None,
            Decision::Answer(Answer::Option("no".into())),
            Some("alice"),
        )
        .await
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].tool_result("q1"), "The user chose `no` (Wait).");
    let iv = &store.interventions(id).await.unwrap()[0];
    assert_eq!(iv.status, InterventionStatus::Answered);
    assert_eq!(iv.outcome.as_deref(), Some("no"));
    assert_eq!(iv.decided_by.as_deref(), Some("alice"));

    // A second answer is refused.
    let again = d
        .decide(
            id,
            Some(&["q1".into()]),
            Decision::Answer(Answer::Text("yes".into())),
            None,
        )
        .await;
    assert!(again.is_err(), "a question is answered once: {again:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_free_text_answer_is_the_result_and_a_declined_question_lets_the_model_go_on() {
    let (server, store) = setup(vec![
        ask(serde_json::json!({"question": "Which branch?"})),
        Canned::openai_text("Using release/2.0."),
        ask(serde_json::json!({"question": "Which branch?"})),
        Canned::openai_text("I will pick main."),
    ])
    .await;
    let d = driver(&server, &store);
    let id = d.start("merge", &spec(ApprovalMode::Manual)).await.unwrap();
    assert!(matches!(
        d.run(id).await.unwrap(),
        RunEnd::WaitingForHuman { .. }
    ));
    // Text is what a question without options takes; an option is refused.
    let err = d
        .decide(id, None, Decision::Answer(Answer::Option("x".into())), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DriverError::Decision(DecisionError::BadAnswer { .. })),
        "{err:?}"
    );
    d.decide(
        id,
        None,
        Decision::Answer(Answer::Text("release/2.0".into())),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        server.requests()[1].tool_result("q1"),
        "The user answered: release/2.0"
    );

    let id = d
        .start("merge again", &spec(ApprovalMode::Manual))
        .await
        .unwrap();
    assert!(matches!(
        d.run(id).await.unwrap(),
        RunEnd::WaitingForHuman { .. }
    ));
    let reason = Some("not now".to_owned());
    let end = d
        .decide(
            id,
            None,
            Decision::Reject {
                reason,
                halt: false,
            },
            None,
        )
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    assert!(server.requests()[3].tool_result("q1").contains("not now"));
}

#[tokio::test]
async fn a_headless_run_never_parks_on_a_question() {
    let (server, store) = setup(vec![
        ask(deploy_question()),
        Canned::openai_text("Nobody answered; not deploying."),
    ])
    .await;
    let d = driver(&server, &store);
    let id = d
        .start("nightly", &spec(ApprovalMode::Headless))
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    assert!(store.interventions(id).await.unwrap().is_empty());
    assert_eq!(
        server.requests()[1].tool_result("q1"),
        "Nobody answered (no person is available in this run); the default `no` (Wait) applies."
    );
}

/// An unattended run whose spec asks for it raises its agent's question as an urgent decision
/// brief (the options as its actions) for the person it works for, says so in the call's
/// result, and runs on; without the setting it only declines.
#[tokio::test]
async fn an_unattended_question_becomes_an_urgent_decision_brief_when_asked_for() {
    let (server, store) = setup(vec![
        ask(deploy_question()),
        Canned::openai_text("Waiting for the decision; not deploying."),
        ask(deploy_question()),
        Canned::openai_text("Not deploying."),
    ])
    .await;
    let d = driver(&server, &store).with_brief_owner("usr_me".into());
    let unattended = |question_briefs: bool| StartOptions {
        spec: OperationSpec {
            unattended: true,
            question_briefs,
            approval: ApprovalMode::AutoRun,
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("nightly", &unattended(true)).await.unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let briefs = store
        .list_briefs(&rein_store::BriefFilter {
            owner: Some("usr_me".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(briefs.len(), 1, "{briefs:?}");
    let b = &briefs[0];
    assert_eq!(
        (b.kind, b.priority, b.title.as_str()),
        (
            rein_store::BriefKind::Decision,
            rein_store::BriefPriority::Urgent,
            "Deploy to production now?"
        )
    );
    let keys: Vec<&str> = b.actions.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["yes", "no", "acknowledge"]);
    assert!(
        b.summary.contains("Deploy (yes), Wait (no)"),
        "{}",
        b.summary
    );
    let result = server.requests()[1].tool_result("q1");
    assert!(
        result.starts_with(
            "Nobody answered (no person is available in this run); the default `no` (Wait) applies."
        ) && result.contains(&b.id),
        "{result}"
    );

    let again = d.start("nightly", &unattended(false)).await.unwrap();
    assert!(matches!(d.run(again).await.unwrap(), RunEnd::Done { .. }));
    assert_eq!(
        store
            .list_briefs(&rein_store::BriefFilter {
                owner: Some("usr_me".into()),
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap()
            .len(),
        1,
        "declined only"
    );
}

#[tokio::test]
async fn an_expired_question_takes_its_default_and_the_operation_runs_on() {
    let mut question = deploy_question();
    question["expires_in_secs"] = serde_json::json!(1);
    let (server, store) = setup(vec![ask(question), Canned::openai_text("Not deploying.")]).await;
    let d = driver(&server, &store);
    let id = d.start("ship", &spec(ApprovalMode::Manual)).await.unwrap();
    assert!(matches!(
        d.run(id).await.unwrap(),
        RunEnd::WaitingForHuman { .. }
    ));
    let iv = store.interventions(id).await.unwrap();
    let expires_at = iv[0].expires_at.expect("the question carries its expiry");
    common::wait_past(expires_at).await;
    // A late answer finds the question expired: the default answered it, the model went on.
    let end = driver(&server, &store)
        .decide(
            id,
            None,
            Decision::Answer(Answer::Option("yes".into())),
            Some("late"),
        )
        .await
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    let result = server.requests()[1].tool_result("q1");
    assert!(
        result.starts_with("Nobody answered (the question expired at ")
            && result.ends_with("the default `no` (Wait) applies."),
        "{result}"
    );
    assert_eq!(
        store.interventions(id).await.unwrap()[0].status,
        InterventionStatus::Expired
    );
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.state.status, Status::Done);
}
