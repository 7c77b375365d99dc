//! Grants, allow-lists and the reasons stored with pending calls, through the driver: a grant
//! covers later calls of its scope (and pending ones of the tree), never what the guard or
//! the blacklist flags; revoking it takes effect at the next call; an agent grant is a new
//! version of the agent; an allow-list runs exactly its tools unasked, also when another
//! process approves.

use super::*;
use rein_core::intervention::{GrantScope, ReasonSource};
use rein_core::spec::{AgentRef, OperationSpec};
use rein_operation::grants::GrantError;
use rein_operation::{DriverError, StoredAgents};
use rein_store::{Accounts, AgentRecord, GrantFilter, Grants};

fn deploy_cmd(id: &str, command: &str) -> (String, String, String) {
    (
        id.into(),
        "deploy__release".into(),
        serde_json::json!({"version": "1", "command": command}).to_string(),
    )
}

fn on_topic(topic: &str) -> StartOptions {
    StartOptions {
        topic_id: Some(topic.into()),
        ..Default::default()
    }
}

async fn parked(d: &Driver, prompt: &str, opts: &StartOptions) -> (OperationId, RunEnd) {
    let id = d.start(prompt, opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    (id, end)
}

#[tokio::test]
async fn a_grant_covers_its_scope_never_what_the_guard_flags_and_revoking_stops_it() {
    let e = env(vec![
        // A: asks, granted for the conversation.
        tools(&[deploy("d1")]),
        Canned::openai_text("Released."),
        // B, same conversation: runs unasked; then a command the guard flags asks.
        tools(&[deploy("d2")]),
        tools(&[deploy_cmd("d3", "rm -rf ~")]),
        Canned::openai_text("Not that."),
        // C, another conversation: asks.
        tools(&[deploy("d4")]),
        // D, the first conversation after revoking: asks again.
        tools(&[deploy("d5")]),
    ])
    .await;
    let d = driver(&e, false);

    let (a, end) = parked(&d, "ship", &on_topic("t-one")).await;
    assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
    let asked = d.pending(a).await.unwrap();
    let why = asked[0].reason.clone().expect("a reason is stored");
    assert_eq!(why.source, ReasonSource::ToolPolicy);
    assert_eq!(why.rule.as_deref(), Some("tool:deploy/release"));
    assert!(!why.every_time);
    // The event says it too.
    let events = e.store.events(a, None).await.unwrap();
    let reasons = events
        .iter()
        .find_map(|ev| match &ev.kind {
            EventKind::HumanApproveRequired { reasons, .. } => Some(reasons.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(reasons.get("d1"), Some(&why));

    let (end, grant) = d
        .approve_always(a, "d1", GrantScope::Topic, Some("alice"))
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    assert_eq!(
        (grant.scope, grant.target.as_str()),
        (GrantScope::Topic, "t-one")
    );
    assert_eq!(grant.tool, "deploy/release");
    assert_eq!(e.runs.load(Ordering::SeqCst), 1);

    // B: the harmless call runs unasked; the flagged one asks, every time, and cannot be
    // granted.
    let (b, end) = parked(&d, "ship again", &on_topic("t-one")).await;
    assert_eq!(e.runs.load(Ordering::SeqCst), 2, "d2 ran under the grant");
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("{end:?}")
    };
    assert_eq!(&*pending[0].id, "d3");
    let why = d.pending(b).await.unwrap()[0].reason.clone().unwrap();
    assert_eq!(why.source, ReasonSource::Guard);
    assert_eq!(why.rule.as_deref(), Some("security_blacklist:rm_home_dir"));
    assert!(why.every_time && why.node.is_some(), "{why:?}");
    let refused = d.approve_always(b, "d3", GrantScope::Topic, None).await;
    assert!(
        matches!(
            refused,
            Err(DriverError::Grant(GrantError::EveryTime { .. }))
        ),
        "{refused:?}"
    );
    let end = d
        .decide(
            b,
            None,
            Decision::Reject {
                reason: Some("no".into()),
                halt: false,
            },
            None,
        )
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    assert_eq!(e.runs.load(Ordering::SeqCst), 2);

    // C: another conversation is not covered.
    let (_, end) = parked(&d, "ship elsewhere", &on_topic("t-two")).await;
    assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
    assert_eq!(e.runs.load(Ordering::SeqCst), 2);

    // D: revoked, the first conversation asks again.
    let revoked = d
        .revoke_grant(None, &grant.id, Some("alice"))
        .await
        .unwrap();
    assert!(revoked.revoked_at.is_some());
    let (_, end) = parked(&d, "ship once more", &on_topic("t-one")).await;
    assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
    assert_eq!(e.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_grant_approves_the_pending_calls_it_covers_and_not_the_flagged_one() {
    let e = env(vec![
        tools(&[deploy("d1"), deploy("d2"), deploy_cmd("d3", "rm -rf /")]),
        Canned::openai_text("Done."),
    ])
    .await;
    let d = driver(&e, false);
    let (id, end) = parked(&d, "ship three", &StartOptions::default()).await;
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("{end:?}")
    };
    assert_eq!(pending.len(), 3);
    let (end, _) = d
        .approve_always(id, "d1", GrantScope::Operation, None)
        .await
        .unwrap();
    // d1 and d2 ran; d3 still waits.
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("{end:?}")
    };
    assert_eq!(pending.iter().map(|c| &*c.id).collect::<Vec<_>>(), ["d3"]);
    assert_eq!(e.runs.load(Ordering::SeqCst), 2);
    let iv = e.store.interventions(id).await.unwrap();
    let d2 = iv.iter().find(|i| &*i.call.id == "d2").unwrap();
    assert!(
        d2.decided_by
            .as_deref()
            .is_some_and(|b| b.starts_with("grant grant_")),
        "{:?}",
        d2.decided_by
    );
}

#[tokio::test]
async fn an_agent_grant_is_a_new_agent_version_and_covers_that_agent_only() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("Released."),
        // The same agent in another conversation: unasked.
        tools(&[deploy("d2")]),
        Canned::openai_text("Released again."),
        // Another agent: asks.
        tools(&[deploy("d3")]),
    ])
    .await;
    let user = e.store.create_user("local").await.unwrap();
    for name in ["shipper", "other"] {
        e.store
            .put_agent(&AgentRecord {
                owner: user.id.clone(),
                name: name.into(),
                config: serde_json::json!({}),
                version: 0,
                created_at: chrono::Utc::now(),
                updated_at: chrono::Utc::now(),
            })
            .await
            .unwrap();
    }
    let d = driver(&e, false).with_agents(Arc::new(StoredAgents {
        accounts: e.store.clone(),
        local_user: Some(user.id.clone()),
        fixed: Default::default(),
    }));
    let as_agent = |name: &str, topic: &str| StartOptions {
        spec: OperationSpec {
            agent: Some(AgentRef {
                name: name.into(),
                version: Some(1),
            }),
            ..Default::default()
        },
        topic_id: Some(topic.into()),
        ..Default::default()
    };
    let (id, _) = parked(&d, "ship", &as_agent("shipper", "t-a")).await;
    let (_, grant) = d
        .approve_always(id, "d1", GrantScope::Agent, None)
        .await
        .unwrap();
    assert_eq!(grant.target, "shipper");
    let version = |name: &'static str| {
        let (store, user) = (e.store.clone(), user.id.clone());
        async move { store.get_agent(&user, name).await.unwrap().unwrap().version }
    };
    assert_eq!(
        version("shipper").await,
        2,
        "the grant is a new version of the agent"
    );
    let (_, end) = parked(&d, "ship", &as_agent("shipper", "t-b")).await;
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    assert_eq!(e.runs.load(Ordering::SeqCst), 2);
    let (_, end) = parked(&d, "ship", &as_agent("other", "t-b")).await;
    assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
    // An operation of no agent cannot take an agent grant.
    d.revoke_grant(None, &grant.id, None).await.unwrap();
    assert_eq!(version("shipper").await, 3, "revoking is a new version too");
    assert!(
        e.store
            .list_grants(None, &GrantFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_agent_grant_needs_an_agent() {
    let e = env(vec![tools(&[deploy("d1")])]).await;
    let d = driver(&e, false);
    let (id, _) = parked(&d, "ship", &StartOptions::default()).await;
    let refused = d.approve_always(id, "d1", GrantScope::Agent, None).await;
    assert!(
        matches!(refused, Err(DriverError::Grant(GrantError::NoAgent(_)))),
        "{refused:?}"
    );
    // Nothing was decided.
    assert_eq!(
        e.store.interventions(id).await.unwrap()[0].status,
        InterventionStatus::Pending
    );
}

#[tokio::test]
async fn allow_list_mode_runs_exactly_the_listed_tools_also_when_another_process_approves() {
    let e = env(vec![
        tools(&[calc("c1", "2+2"), deploy("d1")]),
        tools(&[calc("c2", "3+3")]),
        Canned::openai_text("4, released, 6."),
    ])
    .await;
    let opts = StartOptions {
        spec: OperationSpec {
            approval: ApprovalMode::AllowList,
            allow: vec!["calculator".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let (id, end) = parked(&driver(&e, false), "sum and ship", &opts).await;
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("{end:?}")
    };
    assert_eq!(pending.iter().map(|c| &*c.id).collect::<Vec<_>>(), ["d1"]);
    let why = e.store.interventions(id).await.unwrap()[0]
        .reason
        .clone()
        .unwrap();
    assert_eq!(
        (why.source, why.rule.as_deref()),
        (ReasonSource::Mode, Some("approval_mode:allow_list"))
    );
    // Another process approves: the calculator still runs unasked after it.
    let end = driver(&e, false)
        .decide(id, None, Decision::Approve, None)
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let results: Vec<String> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text_content())
        .collect();
    assert_eq!(results, ["4", "released 1.2.0", "6"]);
    assert_eq!(op.spec.allow, ["calculator"]);
}
