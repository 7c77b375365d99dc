//! One conformance suite for every backend: SQLite always, PostgreSQL when
//! `REIN_TEST_DATABASE_URL` is set (each run in a fresh schema).

use chrono::Utc;
use rein_core::event::EventKind;
use rein_core::phase::{Phase, RuntimeContext};
use rein_core::state::{Finish, FinishReason, Status};
use rein_core::{AgentEvent, AgentState, Message, OperationId, ToolCall, Usd};
use rein_store::*;
use std::sync::Arc;

fn new_op() -> NewOperation {
    let mut state = AgentState::new(OperationId::new()).with_message(Message::user("hello"));
    state.max_steps = Some(10);
    NewOperation {
        prompt: Some("hello".into()),
        state,
        topic_id: format!("topic-{}", OperationId::new()),
        agent: Some("default".into()),
        trigger: Trigger::Cli,
        parent_operation: None,
        next_context: Some(RuntimeContext::new(Phase::Init)),
        owner: None,
        spec: rein_core::spec::OperationSpec {
            allowed_tools: Some(vec!["calculator".into()]),
            max_steps: Some(10),
            ..Default::default()
        },
        admission: None,
        thread: None,
        gate: None,
        response: None,
    }
}

fn event(op: OperationId, seq: u64, kind: EventKind) -> AgentEvent {
    AgentEvent {
        operation_id: op,
        step: 1,
        seq,
        kind,
    }
}

fn guard_reason() -> rein_core::intervention::ApprovalReason {
    use rein_core::intervention::{ApprovalReason, ReasonSource};
    ApprovalReason {
        source: ReasonSource::Guard,
        rule: Some("security_blacklist:rm_home_dir".into()),
        explanation: "security_blacklist:rm_home_dir matched".into(),
        node: Some("`rm -rf ~`".into()),
        every_time: true,
    }
}

/// Grants: made once per owner, scope, target and tool; found for the operations they apply
/// to (its tree, its topic, its agent) and no other; another owner's are invisible; revoking
/// stops them at once and keeps the record.
async fn grants(store: &SqlStore) {
    use rein_core::intervention::GrantScope;
    let new = |owner: Option<&str>, scope, target: &str, tool: &str| NewGrant {
        owner: owner.map(str::to_owned),
        scope,
        target: target.to_owned(),
        tool: tool.to_owned(),
        operation_id: Some("op-a".into()),
        tool_call_id: Some("call_1".into()),
        created_by: Some("alice".into()),
    };
    let op = store
        .create_grant(&new(Some("alice"), GrantScope::Operation, "op-a", "shell"))
        .await
        .unwrap();
    assert!(valid_grant_id(&op.id), "{}", op.id);
    let again = store
        .create_grant(&new(Some("alice"), GrantScope::Operation, "op-a", "shell"))
        .await
        .unwrap();
    assert_eq!(again.id, op.id, "granting twice makes one grant");
    let topic = store
        .create_grant(&new(Some("alice"), GrantScope::Topic, "t-1", "files/read"))
        .await
        .unwrap();
    let agent = store
        .create_grant(&new(
            Some("alice"),
            GrantScope::Agent,
            "coder",
            "calculator",
        ))
        .await
        .unwrap();
    // The local CLI's grants have no owner.
    let local = store
        .create_grant(&new(None, GrantScope::Topic, "t-1", "shell"))
        .await
        .unwrap();
    let subject = |root, topic, agent| GrantSubject {
        owner: Some("alice"),
        root,
        topic,
        agent,
    };
    let ids = |v: Vec<rein_core::intervention::ActiveGrant>| {
        let mut ids: Vec<String> = v.into_iter().map(|g| g.id).collect();
        ids.sort();
        ids
    };
    let mut all = vec![op.id.clone(), topic.id.clone(), agent.id.clone()];
    all.sort();
    assert_eq!(
        ids(store
            .grants_for(&subject("op-a", "t-1", Some("coder")))
            .await
            .unwrap()),
        all
    );
    assert_eq!(
        ids(store
            .grants_for(&subject("op-b", "t-2", None))
            .await
            .unwrap()),
        Vec::<String>::new(),
        "another operation, topic and no agent: nothing"
    );
    assert_eq!(
        ids(store
            .grants_for(&subject("op-b", "t-1", Some("writer")))
            .await
            .unwrap()),
        vec![topic.id.clone()]
    );
    let local_subject = GrantSubject {
        owner: None,
        root: "op-a",
        topic: "t-1",
        agent: Some("coder"),
    };
    assert_eq!(
        ids(store.grants_for(&local_subject).await.unwrap()),
        vec![local.id.clone()],
        "owners never see each other's grants"
    );
    assert!(store.grant(Some("bob"), &op.id).await.unwrap().is_none());
    assert!(matches!(
        store.revoke_grant(Some("bob"), &op.id, Some("bob")).await,
        Err(StoreError::NotFound(_))
    ));
    // Revoke: gone from what applies, kept in the record.
    let revoked = store
        .revoke_grant(Some("alice"), &op.id, Some("alice"))
        .await
        .unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(revoked.revoked_by.as_deref(), Some("alice"));
    let twice = store
        .revoke_grant(Some("alice"), &op.id, Some("mallory"))
        .await
        .unwrap();
    assert_eq!(twice.revoked_by.as_deref(), Some("alice"));
    assert!(
        !ids(store
            .grants_for(&subject("op-a", "t-1", Some("coder")))
            .await
            .unwrap())
        .contains(&op.id)
    );
    let listed = store
        .list_grants(Some("alice"), &GrantFilter::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 2, "active ones only by default");
    assert_eq!(listed[0].id, agent.id, "newest first");
    let with_revoked = store
        .list_grants(
            Some("alice"),
            &GrantFilter {
                include_revoked: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(with_revoked.len(), 3);
    let topics = store
        .list_grants(
            Some("alice"),
            &GrantFilter {
                scope: Some(GrantScope::Topic),
                target: Some("t-1".into()),
                include_revoked: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(topics, vec![topic.clone()]);
    // A new grant after a revocation is a new grant.
    let renewed = store
        .create_grant(&new(Some("alice"), GrantScope::Operation, "op-a", "shell"))
        .await
        .unwrap();
    assert_ne!(renewed.id, op.id);
    // Eight "always" given at the same moment make one grant: revoking it revokes all that
    // covers the tool.
    let store = std::sync::Arc::new(store.clone());
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (store, g) = (
                store.clone(),
                new(Some("carol"), GrantScope::Topic, "t-race", "shell"),
            );
            tokio::spawn(async move { store.create_grant(&g).await })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap().unwrap().id);
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    let active = store
        .list_grants(Some("carol"), &GrantFilter::default())
        .await
        .unwrap();
    assert_eq!(active.len(), 1, "{active:?}");
}

/// The read before each step: one round trip that says what the separate reads say (the
/// cancel flag, the grants that apply in their order, whether a message exists), for an
/// operation with grants and one without, and for one that does not exist.
async fn step_check(store: &SqlStore) {
    use rein_core::intervention::GrantScope;
    let op = new_op();
    store.create_operation(&op).await.unwrap();
    let id = op.state.operation_id;
    let root = id.to_string();
    let subject = GrantSubject {
        owner: Some("dora"),
        root: &root,
        topic: &op.topic_id,
        agent: Some("coder"),
    };
    let first = op.state.messages[0].id;
    let check = |message| StepCheckFor {
        operation: id,
        grants: subject.clone(),
        message,
    };
    let none = store.step_check(&check(Some(first))).await.unwrap();
    assert_eq!(
        none,
        StepCheck {
            cancel_requested: false,
            grants: Vec::new(),
            message_exists: Some(store.message_exists(first).await.unwrap()),
        },
        "no grant: one row of NULL grant columns, read as none"
    );
    assert_eq!(none.message_exists, Some(true), "the prompt is stored");
    for (scope, target, tool) in [
        (GrantScope::Topic, op.topic_id.as_str(), "files/read"),
        (GrantScope::Operation, root.as_str(), "shell"),
        (GrantScope::Agent, "coder", "calculator"),
        // Another owner's, another agent's: not this operation's.
        (GrantScope::Agent, "writer", "shell"),
    ] {
        store
            .create_grant(&NewGrant {
                owner: Some("dora".into()),
                scope,
                target: target.into(),
                tool: tool.into(),
                operation_id: None,
                tool_call_id: None,
                created_by: None,
            })
            .await
            .unwrap();
    }
    store
        .create_grant(&NewGrant {
            owner: Some("eve".into()),
            scope: GrantScope::Topic,
            target: op.topic_id.clone(),
            tool: "shell".into(),
            operation_id: None,
            tool_call_id: None,
            created_by: None,
        })
        .await
        .unwrap();
    assert!(store.request_cancel(id).await.unwrap());
    let gone = rein_core::MessageId::new();
    let with = store.step_check(&check(Some(gone))).await.unwrap();
    assert_eq!(
        with,
        StepCheck {
            cancel_requested: true,
            grants: store.grants_for(&subject).await.unwrap(),
            message_exists: Some(false),
        }
    );
    assert_eq!(with.grants.len(), 3, "{:?}", with.grants);
    assert_eq!(
        store.step_check(&check(None)).await.unwrap().message_exists,
        None,
        "no message asked about"
    );
    // An operation that is not there reads as the separate reads do.
    let missing = StepCheckFor {
        operation: OperationId::new(),
        grants: subject.clone(),
        message: Some(first),
    };
    assert_eq!(
        store.step_check(&missing).await.unwrap(),
        StepCheck {
            cancel_requested: false,
            grants: with.grants.clone(),
            message_exists: Some(true),
        }
    );
}

/// A top-level operation of `topic` under `when_busy`, its prompt deferred as given.
fn gated(topic: &str, when_busy: rein_core::spec::WhenBusy, prompt: &str) -> NewOperation {
    let mut op = new_op();
    op.state = AgentState::new(OperationId::new()).with_message(Message::user(prompt));
    op.topic_id = topic.to_owned();
    op.gate = Some(TopicGate {
        when_busy,
        deferred: serde_json::json!({"prompt": prompt}),
    });
    op
}

/// Commit `op` finished (step 1).
async fn finish(store: &SqlStore, op: &NewOperation) {
    let mut done = op.state.clone();
    done.status = Status::Done;
    let c = StepCommit {
        thread_id: None,
        children: Vec::new(),
        step_index: 1,
        state: done.clone(),
        topic_id: op.topic_id.clone(),
        changes: StateChanges::between(&op.state, &done),
        events: Vec::new(),
        tool_executions: vec![],
        interventions: vec![],
        instructions: vec![rein_core::instruction::InstructionKind::Finish.into()],
        next_context: None,
        operation_id: op.state.operation_id,
    };
    assert_eq!(
        store.commit_step(&c).await.unwrap(),
        CommitOutcome::Committed
    );
}

/// The state after every committed step comes back whole — the message list, each message's
/// body as it was then, the tool manifests, the counters and the next context — across steps
/// that append, change a message in place, compress the list and change the manifests; a step
/// that does not exist, or an operation that does not, is said to be missing.
async fn checkpoints(store: &SqlStore) {
    let op = new_op();
    let id = op.state.operation_id;
    store.create_operation(&op).await.unwrap();
    let mut states = vec![op.state.clone()];
    let mut s = op.state.clone();
    let commit = |before: &AgentState, after: &AgentState, step: u64| StepCommit {
        thread_id: None,
        children: Vec::new(),
        step_index: step,
        state: after.clone(),
        topic_id: op.topic_id.clone(),
        changes: StateChanges::between(before, after),
        events: Vec::new(),
        tool_executions: vec![],
        interventions: vec![],
        instructions: vec![rein_core::instruction::InstructionKind::CallLlm.into()],
        next_context: Some(RuntimeContext::new(Phase::Error(
            rein_core::phase::ErrorPayload {
                code: rein_core::failure::FailureCode::Rein(rein_core::failure::Fault::Store),
                message: format!("after step {step}"),
            },
        ))),
        operation_id: id,
    };
    type Edit = Box<dyn Fn(&mut AgentState)>;
    let mut edits: Vec<Edit> = vec![
        Box::new(|s| s.messages.push(Arc::new(Message::assistant("first")))),
        Box::new(|s| {
            let mut changed = Message::assistant("second");
            changed.id = s.messages[1].id;
            s.messages[1] = Arc::new(changed);
        }),
        Box::new(|s| s.messages = vec![Arc::new(Message::user("summary"))]),
        Box::new(|s| {
            let m: rein_core::tool::ToolManifest =
                serde_json::from_value(serde_json::json!({"identifier": "calc", "api": []}))
                    .unwrap();
            Arc::make_mut(&mut s.tool_manifests).insert("calc".into(), Arc::new(m));
            s.messages.push(Arc::new(Message::assistant("after")));
        }),
    ];
    for (i, edit) in edits.drain(..).enumerate() {
        let before = s.clone();
        edit(&mut s);
        s.step_count += 1;
        s.status = Status::Running;
        let c = commit(&before, &s, i as u64 + 1);
        assert_eq!(
            store.commit_step(&c).await.unwrap(),
            CommitOutcome::Committed
        );
        states.push(s.clone());
    }
    for (step, want) in states.iter().enumerate() {
        let Rewound::Found(got) = store.state_at(id, step as u64).await.unwrap() else {
            panic!("step {step} was committed")
        };
        let texts = |s: &AgentState| -> Vec<(rein_core::MessageId, String)> {
            s.messages
                .iter()
                .map(|m| (m.id, m.text_content()))
                .collect()
        };
        assert_eq!(texts(&got.state), texts(want), "messages after step {step}");
        assert_eq!(
            got.state.tool_manifests, want.tool_manifests,
            "manifests after step {step}"
        );
        assert_eq!(got.state.step_count, want.step_count);
        assert_eq!(got.topic_id, op.topic_id);
        assert_eq!(got.spec, op.spec);
        assert!(got.missing_messages.is_empty());
        match got.next_context.map(|c| c.phase) {
            Some(Phase::Error(e)) => assert_eq!(e.message, format!("after step {step}")),
            Some(Phase::Init) if step == 0 => {}
            other => panic!("the next context after step {step}: {other:?}"),
        }
    }
    assert!(matches!(
        store.state_at(id, 9).await.unwrap(),
        Rewound::NoStep { last: Some(4) }
    ));
    assert!(matches!(
        store.state_at(OperationId::new(), 1).await.unwrap(),
        Rewound::NoOperation
    ));
}

/// A2A push configurations: kept per task and id (the same id replaces), listed for their
/// owner only, followed again while their task is unfinished, forgotten once deleted.
async fn a2a_push(store: &SqlStore) {
    let owner = format!("pusher-{}", OperationId::new());
    let mut op = new_op();
    op.owner = Some(owner.clone());
    store.create_operation(&op).await.unwrap();
    let id = op.state.operation_id;
    let config = |cid: &str, url: &str| PushConfig {
        operation_id: id,
        id: cid.into(),
        url: url.into(),
        token: Some("tok".into()),
        auth_scheme: Some("Bearer".into()),
        auth_credentials: Some("s3cret ✓".into()),
        created_at: Utc::now(),
    };
    store
        .put_push_config(&owner, &config("a", "https://one.example/hook"))
        .await
        .unwrap();
    store
        .put_push_config(&owner, &config("b", "https://two.example/hook"))
        .await
        .unwrap();
    store
        .put_push_config(&owner, &config("a", "https://three.example/hook"))
        .await
        .unwrap();
    let kept = store.push_configs(&owner, id).await.unwrap();
    let urls: Vec<&str> = kept.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(urls.len(), 2, "{kept:?}");
    assert!(
        urls.contains(&"https://three.example/hook") && urls.contains(&"https://two.example/hook")
    );
    assert_eq!(kept[0].auth_credentials.as_deref(), Some("s3cret ✓"));
    assert!(
        store
            .push_configs("someone-else", id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .pushed_unfinished()
            .await
            .unwrap()
            .contains(&(owner.clone(), id))
    );
    assert!(store.delete_push_config(&owner, id, "b").await.unwrap());
    assert!(!store.delete_push_config(&owner, id, "b").await.unwrap());
    assert!(
        !store
            .delete_push_config("someone-else", id, "a")
            .await
            .unwrap()
    );
    finish(store, &op).await;
    assert!(
        !store
            .pushed_unfinished()
            .await
            .unwrap()
            .contains(&(owner.clone(), id)),
        "a finished task is not followed again"
    );
}

/// One operation at a time per conversation, decided in the store: refused, queued behind
/// (nothing of it in the conversation), activated oldest first only once nothing else holds
/// the topic, dropped; and under 12 concurrent creations exactly one holds the topic.
async fn topic_gate(store: &SqlStore) {
    use rein_core::spec::WhenBusy::{Enqueue, Interrupt, Reject};
    let topic = format!("gate-{}", OperationId::new());
    let a = gated(&topic, Enqueue, "first");
    assert_eq!(store.create_operation(&a).await.unwrap(), Created::Ready);
    let a_id = a.state.operation_id;
    let b = gated(&topic, Reject, "refused");
    match store.create_operation(&b).await {
        Err(StoreError::TopicBusy {
            operation, status, ..
        }) => {
            assert_eq!((operation, status.as_str()), (a_id.to_string(), "idle"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        store
            .operation(b.state.operation_id)
            .await
            .unwrap()
            .is_none()
    );
    let c = gated(&topic, Enqueue, "second");
    let d = gated(&topic, Interrupt, "third");
    for op in [&c, &d] {
        assert_eq!(
            store.create_operation(op).await.unwrap(),
            Created::Queued {
                behind: a_id,
                status: Status::Idle
            }
        );
    }
    let c_id = c.state.operation_id;
    assert_eq!(
        store.operation_status(c_id).await.unwrap(),
        Some(Status::Queued)
    );
    let conv = store.conversation(&topic).await.unwrap().unwrap();
    assert_eq!(
        conv.messages
            .iter()
            .map(|m| m.text_content())
            .collect::<Vec<_>>(),
        ["first"],
        "a queued prompt is not in the conversation"
    );
    // A new one with nothing active still queues behind the queued ones (first come, first
    // served), and the holder is the active one.
    assert_eq!(
        store.topic_holder(&topic, c_id).await.unwrap(),
        Some((a_id, Status::Idle))
    );
    let next = store.next_queued(&topic).await.unwrap().unwrap();
    assert_eq!(next.id, c_id);
    assert_eq!(next.deferred, serde_json::json!({"prompt": "second"}));
    // Not while the first one holds the topic; not out of order.
    let mut c_ready = c.clone();
    c_ready.state.status = Status::Idle;
    c_ready.gate = None;
    assert!(!store.activate_queued(&c_ready).await.unwrap());
    assert!(
        store
            .stalled_topics()
            .await
            .unwrap()
            .iter()
            .all(|t| t != &topic)
    );
    finish(store, &a).await;
    assert!(store.stalled_topics().await.unwrap().contains(&topic));
    let mut d_ready = d.clone();
    d_ready.state.status = Status::Idle;
    d_ready.gate = None;
    assert!(
        !store.activate_queued(&d_ready).await.unwrap(),
        "not before the older one"
    );
    assert!(store.activate_queued(&c_ready).await.unwrap());
    assert!(!store.activate_queued(&c_ready).await.unwrap(), "once");
    assert_eq!(
        store.operation_status(c_id).await.unwrap(),
        Some(Status::Idle)
    );
    let conv = store.conversation(&topic).await.unwrap().unwrap();
    assert_eq!(
        conv.messages
            .iter()
            .map(|m| m.text_content())
            .collect::<Vec<_>>(),
        ["first", "second"]
    );
    // Dropping the last queued one ends it without running.
    let mut dropped = d.state.clone();
    dropped.status = Status::Interrupted;
    assert!(
        store
            .drop_queued(d.state.operation_id, &dropped)
            .await
            .unwrap()
    );
    assert!(
        !store
            .drop_queued(d.state.operation_id, &dropped)
            .await
            .unwrap()
    );
    assert_eq!(
        store.operation_status(d.state.operation_id).await.unwrap(),
        Some(Status::Interrupted)
    );
    assert!(store.next_queued(&topic).await.unwrap().is_none());

    // Twelve at once on a new topic, refusing when busy: one holds it, eleven are refused.
    let racing = format!("race-{}", OperationId::new());
    let store = std::sync::Arc::new(store.clone());
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let (store, op) = (store.clone(), gated(&racing, Reject, &format!("r{i}")));
            tokio::spawn(async move { store.create_operation(&op).await })
        })
        .collect();
    let mut outcomes = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(Created::Ready) => outcomes.0 += 1,
            Err(StoreError::TopicBusy { .. }) => outcomes.1 += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(outcomes, (1, 11));
    // And queueing: one ready, eleven queued behind it.
    let queueing = format!("queue-{}", OperationId::new());
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let (store, op) = (store.clone(), gated(&queueing, Enqueue, &format!("q{i}")));
            tokio::spawn(async move { store.create_operation(&op).await })
        })
        .collect();
    let mut ready = 0;
    for t in tasks {
        if t.await.unwrap().unwrap() == Created::Ready {
            ready += 1;
        }
    }
    assert_eq!(ready, 1);
}

async fn suite(store: &SqlStore) {
    // Create and load back.
    let op = new_op();
    let id = op.state.operation_id;
    store.create_operation(&op).await.unwrap();
    assert!(matches!(
        store.create_operation(&op).await,
        Err(StoreError::OperationExists(_))
    ));
    let loaded = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(loaded.state, op.state);
    assert_eq!(loaded.next_context, op.next_context);
    assert_eq!(loaded.spec, op.spec, "the spec is read back as written");
    assert_eq!(
        (
            loaded.record.status,
            loaded.record.commit_seq,
            loaded.record.max_steps
        ),
        (Status::Idle, 0, Some(10))
    );
    assert_eq!(loaded.record.trigger, Trigger::Cli);
    assert_eq!(loaded.record.prompt.as_deref(), Some("hello"));
    // What it was asked is kept as its start: one line, cut with an ellipsis.
    let mut long = new_op();
    long.prompt = Some(format!("Read \0 these\nfiles:\t{}", "x".repeat(300)));
    store.create_operation(&long).await.unwrap();
    let kept = store
        .operation(long.state.operation_id)
        .await
        .unwrap()
        .unwrap()
        .prompt
        .unwrap();
    assert!(kept.starts_with("Read \u{2400} these files: xxx"), "{kept}");
    assert_eq!(kept.chars().count(), rein_store::PROMPT_START_CHARS);
    assert!(kept.ends_with('…'));
    let mut blank = new_op();
    blank.prompt = Some(" \n ".into());
    store.create_operation(&blank).await.unwrap();
    let record = store
        .operation(blank.state.operation_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.prompt, None, "nothing asked is no prompt");

    // A step: new assistant message with a tool call, a pending tool row, events, an intervention.
    let mut state = loaded.state.clone();
    state.status = Status::WaitingForHuman;
    state.step_count = 1;
    state.usage.record_llm(
        "p/m",
        &rein_core::TokenUsage {
            input: 10,
            output: 5,
            total: 15,
            ..Default::default()
        },
        3,
    );
    state.cost.record_llm("p/m", Usd::from_nanos(1234));
    state.usage.human.approval_requests = 1;
    let call = ToolCall::new("call_1", "shell", "run", r#"{"command":"ls"}"#);
    let mut assistant = Message::assistant("let me look");
    assistant.tool_calls = vec![call.clone()];
    assistant.parent_id = Some(state.messages[0].id);
    let pending = Message::tool_result(
        &call,
        Some(assistant.id),
        rein_core::ToolStatus::Pending,
        "",
    );
    let (a, p) = (Arc::new(assistant), Arc::new(pending));
    state.messages.push(a.clone());
    state.messages.push(p.clone());
    let commit = StepCommit {
        thread_id: None,
        children: Vec::new(),
        operation_id: id,
        step_index: 1,
        state: state.clone(),
        next_context: None,
        instructions: vec![
            rein_core::instruction::InstructionKind::CallLlm.into(),
            rein_core::instruction::InstructionKind::RequestHumanApprove.into(),
        ],
        topic_id: loaded.record.topic_id.clone(),
        changes: StateChanges::between(&loaded.state, &state),
        events: vec![
            event(
                id,
                0,
                EventKind::StepStart {
                    phase: "init".into(),
                },
            ),
            event(
                id,
                1,
                EventKind::HumanApproveRequired {
                    pending_tool_calls: vec![call.clone()],
                    parent_message_id: Some(a.id),
                    reasons: [("call_1".to_owned(), guard_reason())].into(),
                },
            ),
        ],
        tool_executions: vec![ToolExecution {
            operation_id: id,
            tool_call_id: "call_1".into(),
            step_index: 1,
            tool: "shell/run".into(),
            effect: Effect::AtMostOnce,
            status: ExecStatus::Pending,
            result: None,
            job: None,
        }],
        interventions: vec![Intervention {
            operation_id: id,
            call: call.clone(),
            owner: Some("alice".into()),
            status: InterventionStatus::Pending,
            reason: Some(guard_reason()),
            outcome: None,
            decided_by: None,
            decided_at: None,
            expires_at: None,
            created_at: Utc::now(),
        }],
    };
    assert_eq!(
        store.commit_step(&commit).await.unwrap(),
        CommitOutcome::Committed
    );
    // The same step again (a retried commit after a crash) writes nothing.
    let mut again = commit.clone();
    again.state.status = Status::Error;
    assert_eq!(
        store.commit_step(&again).await.unwrap(),
        CommitOutcome::Duplicate
    );
    let loaded = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(loaded.state, state);
    let r = &loaded.record;
    assert_eq!(
        (r.status, r.commit_seq, r.step_count),
        (Status::WaitingForHuman, 1, 1)
    );
    assert_eq!(
        (r.input_tokens, r.output_tokens, r.total_tokens, r.cost),
        (10, 5, 15, Usd::from_nanos(1234))
    );
    assert_eq!(r.approval_requests, 1);

    // Events with a replay cursor.
    let all = store.events(id, None).await.unwrap();
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(all, commit.events);
    assert_eq!(store.events(id, Some(0)).await.unwrap().len(), 1);
    assert!(store.events(id, Some(1)).await.unwrap().is_empty());

    // Step timeline.
    let steps = store.steps(id).await.unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(
        steps[0]
            .instructions
            .iter()
            .map(|i| i.as_str())
            .collect::<Vec<_>>(),
        ["call_llm", "request_human_approve"]
    );

    // Messages of the topic, and the parent preflight primitives.
    let msgs = store.topic_messages(&op.topic_id).await.unwrap();
    assert_eq!(msgs.len(), 3);
    assert!(store.message_exists(a.id).await.unwrap());

    // Tool executions: "running" is recorded on its own, then finished by a commit.
    let mut exec = commit.tool_executions[0].clone();
    exec.status = ExecStatus::Running;
    store.record_tool_execution(&exec).await.unwrap();
    assert_eq!(
        store
            .tool_execution(id, "call_1")
            .await
            .unwrap()
            .unwrap()
            .status,
        ExecStatus::Running
    );
    assert_eq!(store.tool_execution(id, "nope").await.unwrap(), None);
    // The outside job it waits for is recorded while it runs and kept by every later record
    // (the finished one a step commits names none).
    exec.job = Some("models/veo/operations/1".into());
    store.record_tool_execution(&exec).await.unwrap();
    exec.job = None;
    exec.status = ExecStatus::Succeeded;
    exec.result = Some("Rendered.".into());
    store.record_tool_execution(&exec).await.unwrap();
    let kept = store.tool_execution(id, "call_1").await.unwrap().unwrap();
    assert_eq!(
        (kept.status, kept.job.as_deref(), kept.result.as_deref()),
        (
            ExecStatus::Succeeded,
            Some("models/veo/operations/1"),
            Some("Rendered.")
        )
    );
    exec.status = ExecStatus::Running;
    exec.result = None;
    store.record_tool_execution(&exec).await.unwrap();

    // Interventions are single-use.
    let pending = store.interventions(id).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].status, pending[0].owner.as_deref()),
        (InterventionStatus::Pending, Some("alice"))
    );
    store
        .decide_intervention(
            id,
            "call_1",
            InterventionStatus::Rejected,
            Some("alice"),
            Some("not now"),
        )
        .await
        .unwrap();
    assert!(matches!(
        store
            .decide_intervention(
                id,
                "call_1",
                InterventionStatus::Approved,
                Some("bob"),
                None
            )
            .await,
        Err(StoreError::AlreadyDecided(_))
    ));
    assert!(matches!(
        store
            .decide_intervention(id, "call_9", InterventionStatus::Approved, None, None)
            .await,
        Err(StoreError::InterventionNotFound(_))
    ));
    let decided = &store.interventions(id).await.unwrap()[0];
    assert_eq!(
        (
            decided.status,
            decided.outcome.as_deref(),
            decided.decided_by.as_deref()
        ),
        (InterventionStatus::Rejected, Some("not now"), Some("alice"))
    );
    // Why it asked is kept through the decision.
    assert_eq!(decided.reason, Some(guard_reason()));

    // Finish, then list by status.
    let mut done = state.clone();
    done.status = Status::Done;
    done.finish = Some(Finish {
        reason: FinishReason::Completed,
        detail: Some("ok".into()),
    });
    let mut edited = (*p).clone();
    edited.tool_status = Some(rein_core::ToolStatus::Rejected);
    edited.set_text("rejected");
    let edited = Arc::new(edited);
    done.messages[2] = edited.clone();
    let c2 = StepCommit {
        thread_id: None,
        children: Vec::new(),
        step_index: 2,
        state: done.clone(),
        topic_id: loaded.record.topic_id.clone(),
        changes: StateChanges::between(&state, &done),
        events: vec![event(
            id,
            2,
            EventKind::Done {
                reason: FinishReason::Completed,
                reason_detail: None,
            },
        )],
        tool_executions: vec![],
        interventions: vec![],
        instructions: vec![rein_core::instruction::InstructionKind::Finish.into()],
        next_context: None,
        operation_id: id,
    };
    store.commit_step(&c2).await.unwrap();
    let loaded = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(loaded.state.messages[2].text_content(), "rejected");
    assert_eq!(loaded.record.finish_reason, Some(FinishReason::Completed));
    assert!(loaded.record.finished_at.is_some());
    let other = new_op();
    store.create_operation(&other).await.unwrap();
    let done_ops = store
        .list_operations(&OperationFilter {
            status: Some(Status::Done),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        store.operation_status(id).await.unwrap(),
        Some(Status::Done)
    );
    assert_eq!(
        store.operation(id).await.unwrap().unwrap(),
        store.load_operation(id).await.unwrap().unwrap().record
    );
    assert_eq!(
        store.operation_status(OperationId::new()).await.unwrap(),
        None
    );
    assert!(
        done_ops.iter().any(|o| o.id == id)
            && !done_ops.iter().any(|o| o.id == other.state.operation_id)
    );
    assert!(
        store
            .list_operations(&OperationFilter::default())
            .await
            .unwrap()
            .len()
            >= 2
    );

    // Cancellation requests and deleted parents.
    assert!(
        store
            .request_cancel(other.state.operation_id)
            .await
            .unwrap()
    );
    assert!(
        store
            .load_operation(other.state.operation_id)
            .await
            .unwrap()
            .unwrap()
            .record
            .cancel_requested
    );
    assert!(!store.request_cancel(OperationId::new()).await.unwrap());
    let first = other.state.messages[0].id;
    assert!(store.delete_message(first).await.unwrap());
    assert!(!store.message_exists(first).await.unwrap());
    let orphaned = store
        .load_operation(other.state.operation_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(orphaned.missing_messages, [first.to_string()]);
    assert!(orphaned.state.messages.is_empty());
    assert!(
        store
            .load_operation(OperationId::new())
            .await
            .unwrap()
            .is_none()
    );
    documents(store).await;
    knowledge(store).await;
    accounts(store).await;
    concurrent_commits(store).await;
    admission(store).await;
    a2a_push(store).await;
    goals(store).await;
    leases(store).await;
    tasks(store).await;
    sub_agents(store).await;
    briefs(store).await;
}

/// Goals: created once, read by their owner only, listed newest first; a commit writes the
/// graph with its event only against the seq read (a second commit from the same seq writes
/// nothing); the events come back in order; a goal that is over is no longer open.
async fn goals(store: &SqlStore) {
    use rein_core::goal::{Goal, GoalDecision, GoalEvent, GoalSettings, GoalStatus};
    use rein_core::usage::Usd;
    use rein_store::{GoalRecord, GoalSpend, Goals};
    let owner = format!("goal-owner-{}", OperationId::new());
    let now = chrono::Utc::now();
    let record = |objective: &str| GoalRecord {
        owner: owner.clone(),
        goal: Goal::new(objective),
        settings: GoalSettings {
            agent: Some("coder".into()),
            ..GoalSettings::default()
        },
        seq: 0,
        spent: Usd::ZERO,
        spent_tokens: 0,
        created_at: now,
        updated_at: now,
    };
    let first = record("first");
    store.create_goal(&first).await.unwrap();
    assert!(matches!(
        store.create_goal(&first).await,
        Err(rein_store::StoreError::Conflict(_))
    ));
    let mut second = record("second");
    second.created_at = now + chrono::Duration::seconds(1);
    store.create_goal(&second).await.unwrap();
    let id = first.goal.id;
    let read = store.goal(Some(&owner), id).await.unwrap().unwrap();
    assert_eq!(read.goal, first.goal);
    assert_eq!(read.settings.agent.as_deref(), Some("coder"));
    assert!(
        store
            .goal(Some("someone-else"), id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.goal(None, id).await.unwrap().is_some());
    let listed: Vec<String> = store
        .list_goals(&owner, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.goal.objective)
        .collect();
    assert_eq!(listed, ["second", "first"]);
    let mut paused = read.goal.clone();
    let event = GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Pause,
    };
    paused.apply(&event).unwrap();
    let spend = GoalSpend {
        cost: Usd::from_nanos(1_500),
        tokens: 42,
    };
    assert!(
        store
            .commit_goal(0, &paused, &event, spend, None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .commit_goal(0, &paused, &event, spend, None)
            .await
            .unwrap(),
        "a commit from a seq already passed writes nothing"
    );
    let after = store.goal(Some(&owner), id).await.unwrap().unwrap();
    assert_eq!((after.seq, after.goal.status), (1, GoalStatus::Paused));
    assert_eq!(
        (after.spent, after.spent_tokens),
        (Usd::from_nanos(1_500), 42)
    );
    assert_eq!(after.settings, read.settings, "no settings given: kept");
    // New limits are committed with the event that set them.
    let raised = GoalEvent::LimitsSet {
        by: "ann".into(),
        cost_limit: Some(Usd::from_dollars(9.0)),
        token_limit: None,
    };
    let mut settings = after.settings.clone();
    settings.budget.max_cost = Some(Usd::from_dollars(9.0));
    assert!(
        store
            .commit_goal(1, &paused, &raised, GoalSpend::default(), Some(&settings))
            .await
            .unwrap()
    );
    let after = store.goal(Some(&owner), id).await.unwrap().unwrap();
    assert_eq!(after.seq, 2);
    assert_eq!(after.settings.budget.max_cost, Some(Usd::from_dollars(9.0)));
    // One process at a time advances a goal.
    let soon = chrono::Utc::now() + chrono::Duration::seconds(30);
    assert!(store.claim_goal(id, "p1", soon).await.unwrap());
    assert!(!store.claim_goal(id, "p2", soon).await.unwrap(), "held");
    assert!(store.claim_goal(id, "p1", soon).await.unwrap(), "extended");
    store.release_goal(id, "p2").await.unwrap();
    assert!(
        !store.claim_goal(id, "p2", soon).await.unwrap(),
        "not p2's to release"
    );
    store.release_goal(id, "p1").await.unwrap();
    assert!(store.claim_goal(id, "p2", soon).await.unwrap(), "released");
    let past = chrono::Utc::now() - chrono::Duration::seconds(1);
    assert!(store.claim_goal(id, "p2", past).await.unwrap());
    assert!(
        store.claim_goal(id, "p3", soon).await.unwrap(),
        "an expired claim is taken"
    );
    let mut cancelled = paused.clone();
    let cancel = GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Cancel,
    };
    cancelled.apply(&cancel).unwrap();
    let open = |all: Vec<(String, rein_core::ids::GoalId)>| all.iter().any(|(_, g)| *g == id);
    assert!(open(store.open_goals().await.unwrap()));
    assert!(
        store
            .commit_goal(2, &cancelled, &cancel, GoalSpend::default(), None)
            .await
            .unwrap()
    );
    assert!(
        !open(store.open_goals().await.unwrap()),
        "a cancelled goal is over"
    );
    let log = store.goal_events(id, 0).await.unwrap();
    assert_eq!(
        log.iter()
            .map(|e| (e.seq, e.event.clone()))
            .collect::<Vec<_>>(),
        [(1, event), (2, raised), (3, cancel.clone())]
    );
    assert_eq!(store.goal_events(id, 1).await.unwrap().len(), 2);
}

/// Briefs: newest first per owner, unresolved filter, read once, resolved once; hooks; the
/// hook outbox claimed by one process at a time, retried, delivered once.
async fn briefs(store: &SqlStore) {
    use chrono::SubsecRound;
    // The store keeps microseconds.
    let t0 = Utc::now().trunc_subsecs(6);
    let owner = format!("brief-owner-{}", OperationId::new());
    let brief = |id: &str, minutes: i64, priority: BriefPriority| Brief {
        id: format!("{owner}-{id}"),
        owner: owner.clone(),
        task_id: Some(format!("{owner}-task")),
        operation_id: None,
        agent: None,
        kind: BriefKind::Decision,
        priority,
        title: format!("title {id}"),
        summary: "summary".into(),
        artifacts: vec![Artifact {
            kind: "operation".into(),
            reference: "op-1".into(),
            title: None,
        }],
        actions: vec![BriefAction {
            key: "approve".into(),
            label: "Approve".into(),
        }],
        read_at: None,
        resolution: None,
        created_at: t0 + chrono::Duration::minutes(minutes),
    };
    let urgent = brief("b1", 0, BriefPriority::Urgent);
    store.add_brief(&urgent, Some(t0)).await.unwrap();
    store
        .add_brief(&brief("b2", 1, BriefPriority::Info), None)
        .await
        .unwrap();
    assert!(matches!(
        store.add_brief(&urgent, None).await,
        Err(StoreError::Conflict(_))
    ));
    let mine = BriefFilter {
        owner: Some(owner.clone()),
        ..Default::default()
    };
    let listed = store.list_briefs(&mine).await.unwrap();
    assert_eq!(
        listed.iter().map(|b| b.title.as_str()).collect::<Vec<_>>(),
        ["title b2", "title b1"],
        "newest first"
    );
    assert_eq!(listed[1], urgent, "read back as written");
    assert!(listed[1].holds_task());
    let others = BriefFilter {
        owner: Some("someone-else".into()),
        ..Default::default()
    };
    assert!(store.list_briefs(&others).await.unwrap().is_empty());

    assert!(store.mark_brief_read(&urgent.id, t0).await.unwrap());
    let later = t0 + chrono::Duration::minutes(5);
    assert!(store.mark_brief_read(&urgent.id, later).await.unwrap());
    let read = store.get_brief(&urgent.id).await.unwrap().unwrap();
    assert_eq!(
        read.read_at.map(|t| t.timestamp_micros()),
        Some(t0.timestamp_micros()),
        "read once"
    );
    assert!(!store.mark_brief_read("no-such-brief", t0).await.unwrap());

    let resolution = Resolution {
        action: "approve".into(),
        comment: Some("go".into()),
        by: Some(owner.clone()),
        at: later,
    };
    assert!(store.resolve_brief(&urgent.id, &resolution).await.unwrap());
    assert!(
        !store.resolve_brief(&urgent.id, &resolution).await.unwrap(),
        "resolved once"
    );
    let resolved = store.get_brief(&urgent.id).await.unwrap().unwrap();
    assert_eq!(
        resolved.resolution.as_ref().map(|r| r.comment.clone()),
        Some(Some("go".into()))
    );
    assert!(!resolved.holds_task());
    let open = BriefFilter {
        owner: Some(owner.clone()),
        unresolved: true,
        ..Default::default()
    };
    assert_eq!(store.list_briefs(&open).await.unwrap().len(), 1);

    // Hooks.
    let hook = BriefHook {
        owner: owner.clone(),
        url: "http://127.0.0.1:9/hook".into(),
        secret: "s3cret".into(),
        created_at: t0,
    };
    store.set_brief_hook(&hook).await.unwrap();
    let moved = BriefHook {
        url: "http://127.0.0.1:9/other".into(),
        ..hook.clone()
    };
    store.set_brief_hook(&moved).await.unwrap();
    assert_eq!(
        store.brief_hook(&owner).await.unwrap().unwrap().url,
        moved.url
    );
    assert!(store.delete_brief_hook(&owner).await.unwrap());
    assert!(store.brief_hook(&owner).await.unwrap().is_none());

    // The outbox: one claim at a time, retried after a failure, delivered once.
    let lease = t0 + chrono::Duration::seconds(30);
    let mine = |n: &[BriefNotice]| n.iter().filter(|n| n.owner == owner).count();
    let first = store.claim_brief_notices(t0, lease, 100).await.unwrap();
    assert_eq!(mine(&first), 1);
    let notice = first.iter().find(|n| n.owner == owner).unwrap();
    assert_eq!(
        (notice.brief_id.as_str(), notice.attempts),
        (urgent.id.as_str(), 1)
    );
    assert_eq!(
        mine(&store.claim_brief_notices(t0, lease, 100).await.unwrap()),
        0,
        "claimed"
    );
    let retry = t0 + chrono::Duration::seconds(2);
    store
        .settle_brief_notice(&urgent.id, None, Some("HTTP 500"), Some(retry))
        .await
        .unwrap();
    assert_eq!(
        mine(
            &store
                .claim_brief_notices(retry - chrono::Duration::microseconds(1), lease, 100)
                .await
                .unwrap()
        ),
        0
    );
    let second = store.claim_brief_notices(retry, lease, 100).await.unwrap();
    assert_eq!(
        second.iter().find(|n| n.owner == owner).map(|n| n.attempts),
        Some(2)
    );
    store
        .settle_brief_notice(&urgent.id, Some(retry), None, None)
        .await
        .unwrap();
    let far = t0 + chrono::Duration::days(365);
    assert_eq!(
        mine(&store.claim_brief_notices(far, far, 100).await.unwrap()),
        0,
        "delivered once"
    );
}

/// Memories and notes: upsert, scope isolation, newest first, delete.
/// Knowledge bases: per user, files written whole (chunks replaced, skipped files kept with
/// their reason), searched by full text with the best match first, nothing of a removed file
/// or base found again.
async fn knowledge(store: &SqlStore) {
    let owner = format!("kb-{}", OperationId::new());
    let kb = store
        .create_knowledge_base(Some(&owner), "manuals")
        .await
        .unwrap();
    assert!(matches!(
        store.create_knowledge_base(Some(&owner), "manuals").await,
        Err(StoreError::Conflict(_))
    ));
    // The same name for another user (or the local CLI) is another base.
    let local = store.create_knowledge_base(None, "manuals").await;
    let chunk = |heading: &str, line: u64, text: &str| NewChunk {
        headings: vec![heading.to_owned()],
        line_start: line,
        line_end: line + 1,
        text: text.to_owned(),
    };
    let install = [
        chunk("Install", 1, "Install rein with cargo install rein-cli."),
        chunk(
            "Upgrade",
            5,
            "Upgrading keeps the database; migrations run at start.",
        ),
    ];
    store
        .put_knowledge_file(&kb.id, "guide.md", "h1", &install, None, None)
        .await
        .unwrap();
    store
        .put_knowledge_file(&kb.id, "logo.png", "h2", &[], Some("a binary file"), None)
        .await
        .unwrap();
    let files = store.knowledge_files(&kb.id).await.unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!((files[0].path.as_str(), files[0].chunks), ("guide.md", 2));
    assert_eq!(files[1].skipped.as_deref(), Some("a binary file"));
    let hits = store
        .search_knowledge(&kb.id, "how do I install rein?", 5)
        .await
        .unwrap();
    assert_eq!(hits[0].text, install[0].text, "{hits:?}");
    assert_eq!(
        (hits[0].line_start, hits[0].headings[0].as_str()),
        (1, "Install")
    );
    let hits = store
        .search_knowledge(&kb.id, "migrations database", 5)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].ordinal, 1);
    // Nothing in the query the index knows, or only punctuation: no hits, no error.
    assert!(
        store
            .search_knowledge(&kb.id, "\"*OR)", 5)
            .await
            .unwrap()
            .is_empty()
    );
    // A changed file replaces its chunks.
    store
        .put_knowledge_file(
            &kb.id,
            "guide.md",
            "h3",
            &[chunk("Use", 1, "Ask it things.")],
            None,
            None,
        )
        .await
        .unwrap();
    assert!(
        store
            .search_knowledge(&kb.id, "install", 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .knowledge_file(&kb.id, "guide.md")
            .await
            .unwrap()
            .unwrap()
            .content_hash,
        "h3"
    );
    assert!(
        store
            .remove_knowledge_file(&kb.id, "guide.md")
            .await
            .unwrap()
    );
    assert!(
        store
            .search_knowledge(&kb.id, "ask things", 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .list_knowledge_bases(Some(&owner))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(store.delete_knowledge_base(&kb.id).await.unwrap());
    assert!(
        store
            .knowledge_base(Some(&owner), "manuals")
            .await
            .unwrap()
            .is_none()
    );
    if let Ok(local) = local {
        store.delete_knowledge_base(&local.id).await.unwrap();
    }
}

async fn documents(store: &SqlStore) {
    use rein_core::document::{Document, DocumentKind};
    let t0 = Utc::now();
    let doc = |scope: &str, id: &str, body: &str, minutes: i64| Document {
        kind: DocumentKind::Note,
        scope: scope.into(),
        id: id.into(),
        title: format!("title {id}"),
        body: body.into(),
        created_at: t0,
        updated_at: t0 + chrono::Duration::minutes(minutes),
        embedding: None,
    };
    store
        .put_document(&doc("u/a", "n1", "first", 0))
        .await
        .unwrap();
    store
        .put_document(&doc("u/a", "n2", "second", 1))
        .await
        .unwrap();
    store
        .put_document(&doc("u/b", "n1", "other agent", 0))
        .await
        .unwrap();
    // Upsert keeps the creation time and takes the new body.
    store
        .put_document(&doc("u/a", "n1", "first, edited", 2))
        .await
        .unwrap();
    let n1 = store
        .get_document(DocumentKind::Note, "u/a", "n1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n1.body, "first, edited");
    assert_eq!(n1.created_at.timestamp_micros(), t0.timestamp_micros());
    let listed: Vec<String> = store
        .list_documents(DocumentKind::Note, "u/a", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(listed, ["n1", "n2"], "newest first, only this scope");
    // An embedding is stored and read back exactly, and replaced on upsert.
    let embedding = rein_core::document::Embedding {
        model: "openai/text-embedding-3-small".into(),
        vector: vec![0.25, -1.5, 3.0e-7],
    };
    let mut embedded = doc("u/a", "n3", "with a vector", 3);
    embedded.embedding = Some(embedding.clone());
    store.put_document(&embedded).await.unwrap();
    let back = store
        .get_document(DocumentKind::Note, "u/a", "n3")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back.embedding, Some(embedding));
    store
        .put_document(&doc("u/a", "n3", "vector dropped", 4))
        .await
        .unwrap();
    let back = store
        .get_document(DocumentKind::Note, "u/a", "n3")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back.embedding, None);
    assert!(
        store
            .delete_document(DocumentKind::Note, "u/a", "n3")
            .await
            .unwrap()
    );
    assert!(
        store
            .list_documents(DocumentKind::Memory, "u/a", 10)
            .await
            .unwrap()
            .is_empty(),
        "kinds are separate"
    );
    assert!(
        store
            .delete_document(DocumentKind::Note, "u/a", "n2")
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_document(DocumentKind::Note, "u/a", "n2")
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .get_document(DocumentKind::Note, "u/b", "n1")
            .await
            .unwrap()
            .unwrap()
            .body,
        "other agent"
    );
}

/// Vectors and ingestion jobs, with `other` a second store on the same database (another
/// process): its vector index follows what `store` writes.
async fn knowledge_vectors_and_jobs(store: &SqlStore, other: &SqlStore) {
    let kb = store
        .create_knowledge_base(None, &format!("vectors-{}", OperationId::new()))
        .await
        .unwrap();
    let chunk = |line: u64, text: &str| NewChunk {
        headings: Vec::new(),
        line_start: line,
        line_end: line,
        text: text.to_owned(),
    };
    // A job records its files first; writing a file marks its entry done in the same commit.
    let entries = [
        NewJobFile {
            path: "a.md".into(),
            source: Some("/docs/a.md".into()),
            content: None,
        },
        NewJobFile {
            path: "b.md".into(),
            source: None,
            content: Some(b"uploaded".to_vec()),
        },
    ];
    let job = store
        .create_ingest_job(&kb.id, 300, 30, &entries)
        .await
        .unwrap();
    assert_eq!(
        (job.state, job.files, job.files_done, job.chunk_tokens),
        (IngestState::Running, 2, 0, 300)
    );
    store
        .put_knowledge_file(
            &kb.id,
            "a.md",
            "ha",
            &[chunk(1, "north"), chunk(2, "east")],
            None,
            Some((&job.id, 0)),
        )
        .await
        .unwrap();
    let pending = store.pending_job_files(&job.id).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].seq, pending[0].content.as_deref()),
        (1, Some(&b"uploaded"[..]))
    );
    store
        .put_knowledge_file(
            &kb.id,
            "b.md",
            "hb",
            &[chunk(1, "south")],
            None,
            Some((&job.id, 1)),
        )
        .await
        .unwrap();
    assert!(store.pending_job_files(&job.id).await.unwrap().is_empty());
    let outcomes: Vec<Option<FileOutcome>> = store
        .job_files(&job.id)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            Some(FileOutcome::Indexed { chunks: 2 }),
            Some(FileOutcome::Indexed { chunks: 1 })
        ]
    );
    store
        .set_ingest_state(&job.id, IngestState::Done, None)
        .await
        .unwrap();
    assert_eq!(store.ingest_jobs(&kb.id, true).await.unwrap().len(), 0);
    assert_eq!(store.ingest_jobs(&kb.id, false).await.unwrap().len(), 1);

    // Without a model nothing is pending; with one, every chunk is, until it has a vector.
    store.set_embed_model(&kb.id, Some("p/e1")).await.unwrap();
    let pending = store
        .pending_embeddings(&kb.id, "p/e1", None, 10)
        .await
        .unwrap();
    assert_eq!(pending.len(), 3);
    // Walking on from a chunk reads what follows it.
    let rest = store
        .pending_embeddings(&kb.id, "p/e1", Some(("a.md", 0)), 10)
        .await
        .unwrap();
    let keys: Vec<(&str, u64)> = rest.iter().map(|c| (c.path.as_str(), c.ordinal)).collect();
    assert_eq!(keys, [("a.md", 1), ("b.md", 0)]);
    let axis = |i: usize| {
        let mut v = vec![0.0f32; 3];
        v[i] = 2.0;
        v
    };
    let vectors: Vec<(PendingChunk, Vec<f32>)> = pending
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, c)| (c, axis(i)))
        .collect();
    assert_eq!(
        store
            .put_knowledge_vectors(&kb.id, "p/e1", &vectors)
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        store.embedding_counts(&kb.id, "p/e1").await.unwrap(),
        (3, 3)
    );
    assert!(
        store
            .pending_embeddings(&kb.id, "p/e1", None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The nearest chunk by cosine, from this process and another one.
    for s in [store, other] {
        let hits = s
            .search_knowledge_vectors(&kb.id, "p/e1", &[0.1, 0.9, 0.0], 2)
            .await
            .unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(
            (hits[0].path.as_str(), hits[0].text.as_str()),
            ("a.md", "east")
        );
        assert!(
            hits[0].score > 0.9 && hits[0].score > hits[1].score,
            "{hits:?}"
        );
    }
    // A rewritten file drops its vectors, everywhere: the other process's index is stale.
    store
        .put_knowledge_file(&kb.id, "a.md", "ha2", &[chunk(1, "west")], None, None)
        .await
        .unwrap();
    let hits = other
        .search_knowledge_vectors(&kb.id, "p/e1", &[0.1, 0.9, 0.0], 5)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "only b.md's vector is left: {hits:?}");
    assert_eq!(hits[0].path, "b.md");
    // A vector made from content that has since changed is not stored.
    let stale = vec![(
        PendingChunk {
            path: "a.md".into(),
            ordinal: 0,
            content_hash: "ha".into(),
            text: "north".into(),
        },
        axis(0),
    )];
    assert_eq!(
        store
            .put_knowledge_vectors(&kb.id, "p/e1", &stale)
            .await
            .unwrap(),
        0
    );
    // Nor one of a model the base no longer has; changing the model drops every vector.
    store.set_embed_model(&kb.id, Some("p/e2")).await.unwrap();
    assert_eq!(
        store.embedding_counts(&kb.id, "p/e1").await.unwrap(),
        (0, 2)
    );
    assert_eq!(
        store
            .put_knowledge_vectors(&kb.id, "p/e1", &vectors)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .pending_embeddings(&kb.id, "p/e2", None, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        other
            .search_knowledge_vectors(&kb.id, "p/e1", &[0.0, 1.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        store.set_embed_model("kb_missing", None).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.delete_knowledge_base(&kb.id).await.unwrap());
    assert!(store.ingest_job(&job.id).await.unwrap().is_none());
}

/// A finished (`done`) operation of `owner` started from the CLI: what memories are learnt
/// from.
async fn finished_conversation(store: &SqlStore, owner: &str) -> String {
    let mut op = new_op();
    op.owner = Some(owner.into());
    let id = op.state.operation_id;
    store.create_operation(&op).await.unwrap();
    let mut done = op.state.clone();
    done.status = Status::Done;
    done.step_count = 1;
    done.finish = Some(Finish {
        reason: FinishReason::Completed,
        detail: None,
    });
    store
        .commit_step(&StepCommit {
            thread_id: None,
            children: Vec::new(),
            operation_id: id,
            step_index: 1,
            topic_id: op.topic_id.clone(),
            changes: StateChanges::between(&op.state, &done),
            state: done,
            next_context: None,
            instructions: vec![rein_core::instruction::InstructionKind::Finish.into()],
            events: Vec::new(),
            tool_executions: Vec::new(),
            interventions: Vec::new(),
        })
        .await
        .unwrap();
    id.to_string()
}

/// Artifacts: a call keeps a file of one name once (the first bytes win, however often its step
/// runs); the same bytes from two calls are kept once and both read them; an upload of those
/// bytes deleted leaves the artifacts whole; only the owner lists or reads them, by
/// conversation and by operation; deleting the conversation deletes its artifacts.
async fn artifacts(store: &SqlStore) {
    let op = finished_conversation(store, "alice").await;
    let record = store.operation(op.parse().unwrap()).await.unwrap().unwrap();
    let topic = record.topic_id.clone();
    let new = |call: &'static str, name: &'static str, content: &'static [u8]| NewArtifact {
        topic_id: Some(&topic),
        operation_id: op.parse().unwrap(),
        tool_call_id: call,
        name,
        media_type: "image/png",
        content,
    };
    let first = store
        .put_artifact("alice", new("c1", "chart.png", b"png-bytes"))
        .await
        .unwrap();
    assert!(valid_artifact_id(&first.id), "{}", first.id);
    assert_eq!((first.size, first.operation_id.as_str()), (9, op.as_str()));
    let again = store
        .put_artifact("alice", new("c1", "chart.png", b"other"))
        .await
        .unwrap();
    assert_eq!(again, first, "a call's file is kept once");
    let twin = store
        .put_artifact("alice", new("c2", "copy.png", b"png-bytes"))
        .await
        .unwrap();
    assert_eq!(twin.sha256, first.sha256);
    let upload = store
        .put_file(
            "alice",
            NewFile {
                name: "up.png",
                media_type: "image/png",
                content: b"png-bytes",
            },
        )
        .await
        .unwrap();
    assert!(store.delete_file("alice", &upload.id).await.unwrap());
    for a in [&first, &twin] {
        let read = store
            .artifact_content("alice", &a.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.bytes, b"png-bytes");
        assert_eq!(&read.record, a);
    }
    let listed = store
        .artifacts("alice", Some(&topic), None, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(
        store
            .artifacts("alice", None, Some(&op), 1)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .artifacts("alice", Some("elsewhere"), None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .artifacts("bob", None, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .artifact_content("bob", &first.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.artifact("bob", &first.id).await.unwrap().is_none());
    assert_eq!(
        store.artifact("alice", &twin.id).await.unwrap().as_ref(),
        Some(&twin)
    );
    store
        .delete_topic(&topic, OperationRecords::Keep)
        .await
        .unwrap()
        .unwrap();
    assert!(
        store
            .artifacts("alice", None, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .artifact_content("alice", &first.id)
            .await
            .unwrap()
            .is_none()
    );
}

/// The extraction queue: a finished conversation waits until it is applied; a failure puts it
/// back at its retry time with one more attempt counted, or gives it up; a user who turned
/// learning off has nothing queued; proposals merge with what their pool already says.
async fn memory_queue(store: &SqlStore) {
    let owner = "mq-owner";
    let queued = |op: String| async move {
        store
            .pending_extractions(1_000)
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.operation_id == op)
    };
    let first = finished_conversation(store, owner).await;
    let task = queued(first.clone())
        .await
        .expect("a finished conversation is queued");
    assert_eq!((task.owner.as_deref(), task.attempts), (Some(owner), 0));

    // Failed, due again at once: queued with the attempt counted.
    let past = Utc::now() - chrono::Duration::seconds(1);
    store
        .extraction_failed(&task, "model down", Some(past))
        .await
        .unwrap();
    let task = queued(first.clone()).await.expect("due again");
    assert_eq!(task.attempts, 1);
    // Failed, due later: not queued until then.
    let later = Utc::now() + chrono::Duration::hours(1);
    store
        .extraction_failed(&task, "model down", Some(later))
        .await
        .unwrap();
    assert!(queued(first.clone()).await.is_none());
    // Given up: never queued again.
    let second = finished_conversation(store, owner).await;
    let task2 = queued(second.clone()).await.unwrap();
    store
        .extraction_failed(&task2, "bad output", None)
        .await
        .unwrap();
    assert!(queued(second).await.is_none());

    // Applied: stored and off the queue; the same text again is merged, not added.
    let third = finished_conversation(store, owner).await;
    let task3 = queued(third.clone()).await.unwrap();
    let proposal = NewMemory {
        category: MemoryCategory::Preference,
        subject: "editor".into(),
        text: "The user edits with Helix.".into(),
        source_message: None,
        embedding: None,
    };
    let applied = store
        .apply_memories(&task3, None, std::slice::from_ref(&proposal))
        .await
        .unwrap();
    assert_eq!(applied.added, 1);
    assert!(queued(third).await.is_none());
    let fourth = finished_conversation(store, owner).await;
    let task4 = queued(fourth).await.unwrap();
    let again = store
        .apply_memories(&task4, None, std::slice::from_ref(&proposal))
        .await
        .unwrap();
    assert_eq!((again.added, again.merged), (0, 1));
    let listed = store
        .list_memories(Some(owner), MemoryPool::All, false)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");

    // Learning off: nothing of this user is queued; on again, it is.
    store
        .set_memory_extraction(Some(owner), false)
        .await
        .unwrap();
    let fifth = finished_conversation(store, owner).await;
    assert!(queued(fifth.clone()).await.is_none());
    store
        .set_memory_extraction(Some(owner), true)
        .await
        .unwrap();
    assert!(queued(fifth).await.is_some());
}

/// Logins from another device: approved once by code, claimed once by secret, refused when
/// expired or when too many wait.
async fn logins(store: &SqlStore) {
    use rein_store::{LoginClaim, LoginRecord, Logins};
    let now = Utc::now();
    let login = |id: &str, code: &str, expires_in: i64| LoginRecord {
        id: id.to_owned(),
        user_code: code.to_owned(),
        client: "laptop".to_owned(),
        created_at: now,
        expires_at: now + chrono::Duration::seconds(expires_in),
        approved_by: None,
        claimed_at: None,
    };
    assert_eq!(
        store
            .create_login(&login("h1", "AAAA-BBBB", 600), 3)
            .await
            .unwrap(),
        Some(())
    );
    assert_eq!(
        store.claim_login("h1", now).await.unwrap(),
        LoginClaim::Pending
    );
    let seen = store
        .pending_login("AAAA-BBBB", now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((seen.client.as_str(), seen.id.as_str()), ("laptop", "h1"));
    assert!(store.approve_login("AAAA-BBBB", "u1", now).await.unwrap());
    assert!(
        !store.approve_login("AAAA-BBBB", "u2", now).await.unwrap(),
        "approved once"
    );
    assert!(
        store
            .pending_login("AAAA-BBBB", now)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store.claim_login("h1", now).await.unwrap(),
        LoginClaim::Approved {
            user_id: "u1".into(),
            client: "laptop".into()
        }
    );
    assert_eq!(
        store.claim_login("h1", now).await.unwrap(),
        LoginClaim::Gone,
        "a token is received once"
    );
    assert_eq!(
        store.claim_login("nothing", now).await.unwrap(),
        LoginClaim::Gone
    );
    // An expired login can be neither approved nor claimed.
    store
        .create_login(&login("h2", "CCCC-DDDD", 1), 3)
        .await
        .unwrap();
    let later = now + chrono::Duration::seconds(5);
    assert!(
        store
            .pending_login("CCCC-DDDD", later)
            .await
            .unwrap()
            .is_none()
    );
    assert!(!store.approve_login("CCCC-DDDD", "u1", later).await.unwrap());
    assert_eq!(
        store.claim_login("h2", later).await.unwrap(),
        LoginClaim::Gone
    );
    // At most `max_pending` wait: one more is refused until one is approved.
    store
        .create_login(&login("h3", "EEEE-FFFF", 600), 3)
        .await
        .unwrap();
    store
        .create_login(&login("h4", "GGGG-HHHH", 600), 3)
        .await
        .unwrap();
    assert_eq!(
        store
            .create_login(&login("h5", "JJJJ-KKKK", 600), 3)
            .await
            .unwrap(),
        None
    );
    assert!(store.approve_login("EEEE-FFFF", "u1", now).await.unwrap());
    assert_eq!(
        store
            .create_login(&login("h5", "JJJJ-KKKK", 600), 3)
            .await
            .unwrap(),
        Some(())
    );
}

/// Passwords, browser sessions (live until they expire, are ended, or their user is
/// disabled), and API tokens that expire or carry scopes.
async fn sessions(store: &SqlStore) {
    use chrono::SubsecRound;
    use rein_store::{Accounts, SessionRecord, Sessions, TokenScope, TokenSpec};
    let u = store.create_user("session-holder").await.unwrap();
    let other = store.create_user("session-other").await.unwrap();
    assert_eq!(
        store.user_with_password("session-holder").await.unwrap(),
        Some(rein_store::PasswordHolder {
            user: u.clone(),
            password_hash: None
        }),
        "no password until one is set"
    );
    assert!(
        store
            .set_password(&u.id, Some("$argon2id$x"))
            .await
            .unwrap()
    );
    assert!(!store.set_password("usr_nobody", Some("x")).await.unwrap());
    let holder = store
        .user_with_password("session-holder")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(holder.password_hash.as_deref(), Some("$argon2id$x"));
    assert!(store.user_with_password("nobody").await.unwrap().is_none());

    let now = Utc::now().trunc_subsecs(6);
    let session = |id: &str, user: &str, hours: i64| SessionRecord {
        id: id.into(),
        user_id: user.into(),
        client: Some("Chromium".into()),
        created_at: now,
        expires_at: now + chrono::Duration::hours(hours),
        last_used_at: None,
        revoked_at: None,
    };
    store
        .create_session(&session("ses_a", &u.id, 1), "hash-a")
        .await
        .unwrap();
    store
        .create_session(&session("ses_b", &u.id, 1), "hash-b")
        .await
        .unwrap();
    store
        .create_session(&session("ses_c", &other.id, 1), "hash-c")
        .await
        .unwrap();
    let (who, s) = store
        .user_for_session("hash-a", now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((who.id.as_str(), s.id.as_str()), (u.id.as_str(), "ses_a"));
    assert_eq!(s.last_used_at, Some(now), "the first use is noted");
    assert!(
        store
            .user_for_session("hash-a", now + chrono::Duration::hours(2))
            .await
            .unwrap()
            .is_none(),
        "expired"
    );
    assert!(store.user_for_session("nope", now).await.unwrap().is_none());
    assert_eq!(store.list_sessions(&u.id, now).await.unwrap().len(), 2);

    // A disabled user's sessions authenticate nothing; enabled again, they do.
    store.set_disabled(&u.id, true).await.unwrap();
    assert!(
        store
            .user_for_session("hash-b", now)
            .await
            .unwrap()
            .is_none()
    );
    store.set_disabled(&u.id, false).await.unwrap();
    assert!(
        store
            .user_for_session("hash-b", now)
            .await
            .unwrap()
            .is_some()
    );

    assert!(store.end_session("hash-a", now).await.unwrap());
    assert!(!store.end_session("hash-a", now).await.unwrap(), "once");
    assert!(
        store
            .user_for_session("hash-a", now)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.end_sessions(&u.id, now).await.unwrap(), 1);
    assert!(
        store
            .user_for_session("hash-b", now)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.list_sessions(&u.id, now).await.unwrap().is_empty());
    assert!(
        store
            .user_for_session("hash-c", now)
            .await
            .unwrap()
            .is_some(),
        "another user's session is untouched"
    );

    // Tokens: an expired one authenticates nothing; scopes come back as given.
    let spec = TokenSpec {
        label: Some("ci".into()),
        expires_at: Some(Utc::now() - chrono::Duration::seconds(1)),
        scopes: None,
    };
    let expired = store.add_token(&u.id, "expired-hash", &spec).await.unwrap();
    assert!(expired.expires_at.is_some());
    assert!(
        store
            .user_for_token("expired-hash")
            .await
            .unwrap()
            .is_none()
    );
    let spec = TokenSpec {
        label: None,
        expires_at: Some(Utc::now() + chrono::Duration::hours(1)),
        scopes: Some(vec![TokenScope::Read, TokenScope::Admin]),
    };
    let made = store.add_token(&u.id, "scoped-hash", &spec).await.unwrap();
    let holder = store.user_for_token("scoped-hash").await.unwrap().unwrap();
    assert_eq!(holder.user.id, u.id);
    assert_eq!(
        holder.scopes,
        Some(vec![TokenScope::Read, TokenScope::Admin])
    );
    let listed = store.list_tokens(&u.id).await.unwrap();
    let listed = listed.iter().find(|t| t.id == made.id).unwrap();
    assert_eq!(
        (&listed.scopes, listed.expires_at),
        (&made.scopes, made.expires_at)
    );
}

/// Roles and disabled users: a member until made admin; a disabled user's API and device
/// tokens authenticate nothing, and do again once enabled.
async fn roles(store: &SqlStore) {
    use rein_store::{Accounts, Devices, UserRole};
    let u = store.create_user("role-holder").await.unwrap();
    assert_eq!((u.role, u.disabled_at), (UserRole::Member, None));
    store
        .add_token(&u.id, "role-api-hash", &rein_store::TokenSpec::default())
        .await
        .unwrap();
    store
        .add_device_token(&u.id, "role-device-hash", "laptop")
        .await
        .unwrap();
    assert!(store.set_role(&u.id, UserRole::Admin).await.unwrap());
    assert!(!store.set_role("usr_nobody", UserRole::Admin).await.unwrap());
    // Caps over the server's defaults: stored as set, cleared by setting none.
    let caps = rein_store::Caps {
        daily_cost: Some(Usd::from_dollars(1.25)),
        monthly_tokens: Some(50_000),
        ..Default::default()
    };
    assert!(store.set_caps(&u.id, &caps).await.unwrap());
    assert!(!store.set_caps("usr_nobody", &caps).await.unwrap());
    let by_id = store.user_by_id(&u.id).await.unwrap().unwrap();
    assert_eq!((by_id.name.as_str(), by_id.caps), ("role-holder", caps));
    assert!(store.user_by_id("usr_nobody").await.unwrap().is_none());
    assert!(
        store
            .set_caps(&u.id, &rein_store::Caps::default())
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .user_by_name("role-holder")
            .await
            .unwrap()
            .unwrap()
            .caps,
        rein_store::Caps::default()
    );
    let found = store
        .user_for_token("role-api-hash")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.user.role, UserRole::Admin);
    assert!(store.set_disabled(&u.id, true).await.unwrap());
    assert!(
        store
            .user_for_token("role-api-hash")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .device_for_token("role-device-hash")
            .await
            .unwrap()
            .is_none()
    );
    let listed = store.list_users().await.unwrap();
    let me = listed.iter().find(|x| x.id == u.id).unwrap();
    assert!(me.disabled_at.is_some(), "listed with when it was disabled");
    assert!(store.set_disabled(&u.id, false).await.unwrap());
    assert!(
        store
            .user_for_token("role-api-hash")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .device_for_token("role-device-hash")
            .await
            .unwrap()
            .is_some()
    );
}

/// MCP pins: pinned once (a second pin of the same tool is no pin), a change kept and cleared,
/// approval only of the change a person saw, each owner's apart.
async fn mcp_pins(store: &SqlStore) {
    let at = Utc::now();
    let pin = |hash: &str| McpPin {
        server: "notes".into(),
        tool: "lookup".into(),
        hash: hash.into(),
        definition: format!("{{\"description\":\"{hash}\"}}"),
        pinned_at: at,
        change: None,
    };
    assert!(
        store
            .pin_mcp_tool(PinOwner::Process, &pin("h1"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .pin_mcp_tool(PinOwner::Process, &pin("h2"))
            .await
            .unwrap()
    );
    assert!(
        store
            .pin_mcp_tool(PinOwner::User("alice"), &pin("a1"))
            .await
            .unwrap()
    );
    let pins = store.mcp_pins(PinOwner::Process).await.unwrap();
    assert_eq!(pins.len(), 1);
    assert_eq!(pins[0].hash, "h1");
    assert_eq!(pins[0].change, None);
    let change = PinChange {
        hash: "h2".into(),
        definition: "{\"description\":\"h2\"}".into(),
        seen_at: at,
    };
    assert!(
        store
            .set_mcp_change(PinOwner::Process, "notes", "lookup", Some(&change))
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_mcp_change(PinOwner::Process, "notes", "other", Some(&change))
            .await
            .unwrap()
    );
    let held = &store.mcp_pins(PinOwner::Process).await.unwrap()[0];
    assert_eq!(held.change.as_ref().map(|c| c.hash.as_str()), Some("h2"));
    // Not the change seen: nothing approved.
    assert!(
        !store
            .approve_mcp_change(PinOwner::Process, "notes", "lookup", "h3", at)
            .await
            .unwrap()
    );
    assert!(
        store
            .approve_mcp_change(PinOwner::Process, "notes", "lookup", "h2", at)
            .await
            .unwrap()
    );
    let approved = &store.mcp_pins(PinOwner::Process).await.unwrap()[0];
    assert_eq!(approved.hash, "h2");
    assert_eq!(approved.definition, change.definition);
    assert_eq!(approved.change, None);
    // Approved once: nothing left to approve. Alice's pin never moved.
    assert!(
        !store
            .approve_mcp_change(PinOwner::Process, "notes", "lookup", "h2", at)
            .await
            .unwrap()
    );
    let alice = store.mcp_pins(PinOwner::User("alice")).await.unwrap();
    assert_eq!(alice.len(), 1);
    assert_eq!(alice[0].hash, "a1");
    // A change cleared when the server lists the pinned definition again.
    store
        .set_mcp_change(PinOwner::User("alice"), "notes", "lookup", Some(&change))
        .await
        .unwrap();
    store
        .set_mcp_change(PinOwner::User("alice"), "notes", "lookup", None)
        .await
        .unwrap();
    assert_eq!(
        store.mcp_pins(PinOwner::User("alice")).await.unwrap()[0].change,
        None
    );
}

#[tokio::test]
async fn sqlite_conformance() {
    let dir = std::env::temp_dir().join(format!("rein-store-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
        .await
        .unwrap();
    assert_eq!(store.dialect(), rein_store::Dialect::Sqlite);
    suite(&store).await;
    checkpoints(&store).await;
    grants(&store).await;
    step_check(&store).await;
    topic_gate(&store).await;
    memory_queue(&store).await;
    logins(&store).await;
    roles(&store).await;
    sessions(&store).await;
    artifacts(&store).await;
    mcp_pins(&store).await;
    let other = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
        .await
        .unwrap();
    knowledge_vectors_and_jobs(&store, &other).await;
    other.close().await;
    // Reopening runs no migration twice and finds the data.
    store.close().await;
    let again = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Full)
        .await
        .unwrap();
    assert!(
        !again
            .list_operations(&OperationFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn postgres_conformance() {
    let Some(scratch) = rein_testkit::postgres_scratch("postgres_conformance", "rein_test").await
    else {
        return;
    };
    let scoped = scratch.url.clone();
    let store = SqlStore::open(&scoped, Synchronous::Normal).await.unwrap();
    assert_eq!(store.dialect(), rein_store::Dialect::Postgres);
    suite(&store).await;
    checkpoints(&store).await;
    grants(&store).await;
    step_check(&store).await;
    topic_gate(&store).await;
    memory_queue(&store).await;
    logins(&store).await;
    roles(&store).await;
    sessions(&store).await;
    artifacts(&store).await;
    mcp_pins(&store).await;
    assert_eq!(store.vector_search(), VectorSearch::InProcess);
    let other = SqlStore::open(&scoped, Synchronous::Normal).await.unwrap();
    knowledge_vectors_and_jobs(&store, &other).await;
    other.close().await;
    // The same searched by pgvector, in both processes.
    let mut a = SqlStore::open(&scoped, Synchronous::Normal).await.unwrap();
    match a.enable_pgvector().await {
        Ok(_) => {
            let mut b = SqlStore::open(&scoped, Synchronous::Normal).await.unwrap();
            b.enable_pgvector().await.unwrap();
            assert!(matches!(a.vector_search(), VectorSearch::Pgvector(_)));
            knowledge_vectors_and_jobs(&a, &b).await;
            pgvector_fills_in_and_indexes(&scoped, &store, &a).await;
            b.close().await;
        }
        Err(e) => rein_testkit::skip(
            "postgres_conformance (pgvector)",
            &format!(
                "the test database cannot give pgvector 0.8+ ({e}; scripts/test builds it from \
                 Debian's source package)"
            ),
        ),
    }
    a.close().await;
    let mut sqlite = SqlStore::open(
        std::env::temp_dir()
            .join(format!("rein-pgvector-{}.db", OperationId::new()))
            .to_str()
            .unwrap(),
        Synchronous::Normal,
    )
    .await
    .unwrap();
    assert!(matches!(
        sqlite.enable_pgvector().await,
        Err(StoreError::Pgvector(_))
    ));
    sqlite.close().await;
    store.close().await;
    scratch.drop().await;
}

/// Once a database has pgvector's columns every store fills them, also one that opened before
/// and does not search with pgvector (`plain`); vectors written without them (before pgvector
/// was enabled) are filled in when a store enables it; each dimension gets its HNSW index.
async fn pgvector_fills_in_and_indexes(url: &str, plain: &SqlStore, searcher: &SqlStore) {
    use sqlx::Connection;
    let kb = plain
        .create_knowledge_base(None, &format!("backfill-{}", OperationId::new()))
        .await
        .unwrap();
    plain.set_embed_model(&kb.id, Some("p/e")).await.unwrap();
    let chunks = [
        NewChunk {
            headings: Vec::new(),
            line_start: 1,
            line_end: 1,
            text: "up".into(),
        },
        NewChunk {
            headings: Vec::new(),
            line_start: 2,
            line_end: 2,
            text: "down".into(),
        },
    ];
    plain
        .put_knowledge_file(&kb.id, "v.md", "h", &chunks, None, None)
        .await
        .unwrap();
    let pending = plain
        .pending_embeddings(&kb.id, "p/e", None, 10)
        .await
        .unwrap();
    let vectors: Vec<(PendingChunk, Vec<f32>)> = pending
        .into_iter()
        .map(|c| {
            let v = if c.ordinal == 0 {
                vec![0.0, 0.0, 0.0, 1.0, 0.0]
            } else {
                vec![0.0, 0.0, 0.0, -1.0, 0.2]
            };
            (c, v)
        })
        .collect();
    assert_eq!(
        plain
            .put_knowledge_vectors(&kb.id, "p/e", &vectors)
            .await
            .unwrap(),
        2
    );
    // Written by a store that opened before pgvector's columns existed: filled in at search.
    let hits = searcher
        .search_knowledge_vectors(&kb.id, "p/e", &[0.0, 0.0, 0.0, 1.0, 0.1], 5)
        .await
        .unwrap();
    let found: Vec<(&str, u64)> = hits.iter().map(|h| (h.path.as_str(), h.ordinal)).collect();
    assert_eq!(found, [("v.md", 0), ("v.md", 1)]);
    assert!(hits[0].score > 0.99 && hits[1].score < 0.0, "{hits:?}");
    // Each dimension has its HNSW index.
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() \
         AND tablename = 'knowledge_vectors' AND indexname LIKE 'knowledge_vectors_hnsw_%' \
         ORDER BY indexname",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        indexes,
        ["knowledge_vectors_hnsw_3", "knowledge_vectors_hnsw_5"]
    );
    // As a rein from before pgvector's columns would have left them; a store enabling pgvector
    // fills them in at once.
    sqlx::query("UPDATE knowledge_vectors SET embedding = NULL, dims = NULL WHERE kb_id = $1")
        .bind(&kb.id)
        .execute(&mut conn)
        .await
        .unwrap();
    let mut reopened = SqlStore::open(url, Synchronous::Normal).await.unwrap();
    reopened.enable_pgvector().await.unwrap();
    let unfilled: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM knowledge_vectors WHERE kb_id = $1 AND embedding IS NULL",
    )
    .bind(&kb.id)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(unfilled, 0);
    let _ = conn.close().await;
    let again = reopened
        .search_knowledge_vectors(&kb.id, "p/e", &[0.0, 0.0, 0.0, 1.0, 0.1], 5)
        .await
        .unwrap();
    assert_eq!(again, hits);
    // A query of another dimension finds nothing, as in the in-process index.
    assert!(
        reopened
            .search_knowledge_vectors(&kb.id, "p/e", &[1.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty()
    );
    reopened.close().await;
}

#[tokio::test]
async fn unreachable_databases_fail_with_a_clear_error() {
    let e = SqlStore::open("/nonexistent-dir/rein.db", Synchronous::Normal)
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("/nonexistent-dir"), "{e}");
    let e = SqlStore::open("postgres://rein:secret@127.0.0.1:1/db", Synchronous::Normal)
        .await
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.starts_with("cannot open the database postgres://rein:***@127.0.0.1:1/db"),
        "{text}"
    );
    assert!(!text.contains("secret"));
}

/// Users, hashed tokens, per-user agents, owned operations and topics.
async fn accounts(store: &SqlStore) {
    let suffix = OperationId::new().to_string();
    let alice = store.create_user(&format!("alice-{suffix}")).await.unwrap();
    let bob = store.create_user(&format!("bob-{suffix}")).await.unwrap();
    let again = store.create_user(&alice.name).await.unwrap_err();
    assert!(matches!(again, StoreError::Conflict(_)), "{again}");
    assert_eq!(
        store.user_by_name(&alice.name).await.unwrap(),
        Some(alice.clone())
    );

    let hash = format!("hash-{suffix}");
    let token = store
        .add_token(
            &alice.id,
            &hash,
            &rein_store::TokenSpec {
                label: Some("laptop".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        store.user_for_token(&hash).await.unwrap().map(|h| h.user),
        Some(alice.clone())
    );
    assert!(store.user_for_token("nope").await.unwrap().is_none());
    let listed = store.list_tokens(&alice.id).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].last_used_at.is_some(), "use is recorded");
    assert!(
        !store.revoke_token(&bob.id, &token.id).await.unwrap(),
        "not bob's"
    );
    assert!(store.revoke_token(&alice.id, &token.id).await.unwrap());
    assert!(
        store.user_for_token(&hash).await.unwrap().is_none(),
        "revoked"
    );

    // Device tokens connect their device and are no API tokens; devices are per user.
    let device_hash = format!("device-{suffix}");
    store
        .add_device_token(&alice.id, &device_hash, "laptop")
        .await
        .unwrap();
    assert!(store.user_for_token(&device_hash).await.unwrap().is_none());
    assert!(store.device_for_token(&hash).await.unwrap().is_none());
    let (owner, device) = store.device_for_token(&device_hash).await.unwrap().unwrap();
    assert_eq!(
        (owner.id.as_str(), device.as_str()),
        (alice.id.as_str(), "laptop")
    );
    let seen = Utc::now();
    let mut laptop = DeviceRecord {
        owner: alice.id.clone(),
        name: "laptop".into(),
        tools: vec![rein_core::testing::manifest("files", &["read"])],
        workdir: Some("/home/alice".into()),
        platform: Some("linux-x86_64".into()),
        last_seen: seen,
        created_at: seen,
    };
    store.put_device(&laptop).await.unwrap();
    laptop
        .tools
        .push(rein_core::testing::manifest("shell", &["run"]));
    store.put_device(&laptop).await.unwrap();
    let back = store.device(&alice.id, "laptop").await.unwrap().unwrap();
    assert_eq!(back.tools.len(), 2, "a reconnect refreshes what it offers");
    assert_eq!(back.workdir.as_deref(), Some("/home/alice"));
    assert!(store.device(&bob.id, "laptop").await.unwrap().is_none());
    assert!(store.list_devices(&bob.id).await.unwrap().is_empty());
    assert_eq!(store.list_devices(&alice.id).await.unwrap().len(), 1);
    assert!(!store.revoke_device(&bob.id, "laptop").await.unwrap());
    assert!(store.revoke_device(&alice.id, "laptop").await.unwrap());
    assert!(
        store
            .device_for_token(&device_hash)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.list_devices(&alice.id).await.unwrap().is_empty());

    let now = Utc::now();
    let agent = |owner: &str, config: serde_json::Value| AgentRecord {
        owner: owner.into(),
        name: "helper".into(),
        config,
        created_at: now,
        updated_at: now,
        version: 0,
    };
    let v1 = store
        .put_agent(&agent(
            &alice.id,
            serde_json::json!({"model": "openai/gpt-4o"}),
        ))
        .await
        .unwrap();
    store
        .put_agent(&agent(&bob.id, serde_json::json!({"model": "anthropic/x"})))
        .await
        .unwrap();
    let v2 = store
        .put_agent(&agent(
            &alice.id,
            serde_json::json!({"model": "openai/gpt-4o-mini"}),
        ))
        .await
        .unwrap();
    assert_eq!((v1, v2), (1, 2), "every write counts a version");
    let kept = store.agent_versions(&alice.id, "helper").await.unwrap();
    assert_eq!(
        kept.iter()
            .map(|v| (v.version, v.config["model"].clone()))
            .collect::<Vec<_>>(),
        [
            (2, serde_json::json!("openai/gpt-4o-mini")),
            (1, serde_json::json!("openai/gpt-4o"))
        ],
        "every version is kept, newest first"
    );
    assert!(
        store
            .agent_versions(&bob.id, "helper")
            .await
            .unwrap()
            .iter()
            .all(|v| v.config["model"] == "anthropic/x"),
        "another owner's agent of the name has its own"
    );
    let mine = store.list_agents(&alice.id).await.unwrap();
    assert_eq!(mine.len(), 1, "same name per owner is one agent");
    assert_eq!(mine[0].config["model"], "openai/gpt-4o-mini");
    assert_eq!(mine[0].version, 2);
    assert!(store.delete_agent(&alice.id, "helper").await.unwrap());
    assert!(
        store
            .agent_versions(&alice.id, "helper")
            .await
            .unwrap()
            .is_empty(),
        "deleted with the agent"
    );
    assert!(
        store
            .get_agent(&alice.id, "helper")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.get_agent(&bob.id, "helper").await.unwrap().is_some());

    let mut owned = new_op();
    owned.owner = Some(alice.id.clone());
    owned.agent = Some(format!("agent-{suffix}"));
    store.create_operation(&owned).await.unwrap();
    store.create_operation(&new_op()).await.unwrap();
    let alices = store
        .list_operations(&OperationFilter {
            owner: Some(alice.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(alices.len(), 1);
    assert_eq!(alices[0].id, owned.state.operation_id);
    assert_eq!(alices[0].owner.as_deref(), Some(alice.id.as_str()));
    let by_agent = store
        .list_operations(&OperationFilter {
            agent: owned.agent.clone(),
            owner: Some(bob.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(by_agent.is_empty(), "filters combine");
    // A conversation's operations, and among them those that are not sub-agents.
    let mut child = new_op();
    child.topic_id = owned.topic_id.clone();
    child.parent_operation = Some(owned.state.operation_id);
    store.create_operation(&child).await.unwrap();
    let of_topic = |top_level| OperationFilter {
        topic: Some(owned.topic_id.clone()),
        top_level,
        ..Default::default()
    };
    let all = store.list_operations(&of_topic(false)).await.unwrap();
    assert_eq!(
        all.iter().map(|o| o.id).collect::<Vec<_>>(),
        [child.state.operation_id, owned.state.operation_id],
        "newest first"
    );
    let roots = store.list_operations(&of_topic(true)).await.unwrap();
    assert_eq!(
        roots.iter().map(|o| o.id).collect::<Vec<_>>(),
        [owned.state.operation_id]
    );
    assert_eq!(
        store.topic_owner(&owned.topic_id).await.unwrap(),
        Some(Some(alice.id.clone()))
    );
    assert_eq!(store.topic_owner("no-such-topic").await.unwrap(), None);
    let of = |owner: &str| TopicFilter {
        owner: Some(owner.to_owned()),
        limit: 10,
        ..Default::default()
    };
    let topics = store.list_topics(&of(&alice.id)).await.unwrap();
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0].id, owned.topic_id);
    assert_eq!(topics[0].title.as_deref(), Some("hello"));
    assert!(store.list_topics(&of(&bob.id)).await.unwrap().is_empty());
    topics_and_branches(store, &alice.id, &bob.id).await;
    topics_page_by_cursor(store, &alice.id, &bob.id).await;
}

/// Topics listed a page at a time: each page starts strictly after the last topic of the one
/// before (by creation, then id), the pages together are the whole list once, with a search
/// too; a cursor that is not one of the owner's topics ends the list.
async fn topics_page_by_cursor(store: &SqlStore, alice: &str, bob: &str) {
    let owner = format!("pager-{}", OperationId::new());
    let mut ids = Vec::new();
    for i in 0..7 {
        let id = format!("page-{i}-{}", OperationId::new());
        store
            .create_topic(&NewTopic {
                id: id.clone(),
                owner: Some(alice.to_owned()),
                title: Some(format!("{owner} number {i}")),
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(id);
    }
    for search in [None, Some(owner.clone())] {
        let all = store
            .list_topics(&TopicFilter {
                owner: Some(alice.to_owned()),
                search: search.clone(),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut paged = Vec::new();
        let mut before = None;
        loop {
            let page = store
                .list_topics(&TopicFilter {
                    owner: Some(alice.to_owned()),
                    search: search.clone(),
                    limit: 2,
                    before: before.clone(),
                })
                .await
                .unwrap();
            let Some(last) = page.last() else { break };
            before = Some(last.id.clone());
            paged.extend(page.into_iter().map(|t| t.id));
            assert!(paged.len() <= all.len(), "{search:?}: pages repeat");
        }
        let whole: Vec<String> = all.into_iter().map(|t| t.id).collect();
        assert_eq!(paged, whole, "{search:?}");
        if search.is_some() {
            assert_eq!(whole.len(), 7);
        }
    }
    // Another owner's topic, or none, as the cursor: nothing after it.
    let theirs = format!("theirs-{}", OperationId::new());
    store
        .create_topic(&NewTopic {
            id: theirs.clone(),
            owner: Some(bob.to_owned()),
            ..Default::default()
        })
        .await
        .unwrap();
    for cursor in [theirs, "no-such-topic".to_owned()] {
        let page = store
            .list_topics(&TopicFilter {
                owner: Some(alice.to_owned()),
                limit: 10,
                before: Some(cursor.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(page.is_empty(), "{cursor}: {page:?}");
    }
}

/// Topics: created empty (titled by the first prompt), searched by title and by what their
/// messages say (not by the JSON they are stored in), renamed (a model's title never replaces
/// a person's), their active branch switched, deleted with their operations' records kept or
/// removed, and refused while an operation in them still runs.
async fn topics_and_branches(store: &SqlStore, alice: &str, bob: &str) {
    let id = format!("topic-{}", OperationId::new());
    let made = store
        .create_topic(&NewTopic {
            id: id.clone(),
            owner: Some(alice.to_owned()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (made.title.clone(), made.title_source),
        (None, TitleSource::Prompt)
    );
    assert!(matches!(
        store
            .create_topic(&NewTopic {
                id: id.clone(),
                ..Default::default()
            })
            .await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(store.topic(&id).await.unwrap(), Some(made));

    let mut op = new_op();
    op.topic_id = id.clone();
    op.owner = Some(alice.to_owned());
    let user = Message::user("Plan the trip to Rome\nwith details");
    op.state = AgentState::new(op.state.operation_id)
        .with_message(Message::system("be brief"))
        .with_message(user.clone());
    store.create_operation(&op).await.unwrap();
    let topic = store.topic(&id).await.unwrap().unwrap();
    assert_eq!(topic.title.as_deref(), Some("Plan the trip to Rome"));
    let mut done = op.state.clone();
    let answer = Message::assistant("Rome it is, with 100% certainty");
    done.push_message(answer.clone());
    done.status = Status::Running;
    done.step_count = 1;
    let commit = StepCommit {
        operation_id: done.operation_id,
        step_index: 1,
        topic_id: id.clone(),
        changes: StateChanges::between(&op.state, &done),
        state: done.clone(),
        next_context: None,
        instructions: vec![rein_core::instruction::InstructionKind::CallLlm.into()],
        events: Vec::new(),
        tool_executions: Vec::new(),
        interventions: Vec::new(),
        thread_id: None,
        children: Vec::new(),
    };
    store.commit_step(&commit).await.unwrap();
    let conv = store.conversation(&id).await.unwrap().unwrap();
    assert_eq!(conv.messages.len(), 3);
    assert_eq!(conv.active_message, Some(user.id), "the operation's prompt");
    assert!(store.conversation("no-such-topic").await.unwrap().is_none());

    let search = |q: &str, owner: &str| TopicFilter {
        owner: Some(owner.to_owned()),
        search: Some(q.to_owned()),
        limit: 10,
        before: None,
    };
    let found = |q: &'static str| {
        let id = id.clone();
        let filter = search(q, alice);
        async move {
            store
                .list_topics(&filter)
                .await
                .unwrap()
                .iter()
                .any(|t| t.id == id)
        }
    };
    assert!(found("ROME").await, "titles, case-insensitive");
    assert!(found("certainty").await, "what a message says");
    assert!(found("100%").await, "LIKE wildcards are text");
    assert!(!found("100_").await, "an underscore matches only itself");
    assert!(!found("role").await, "not the JSON messages are stored in");
    assert!(!found("nowhere").await);
    assert!(
        store
            .list_topics(&search("rome", bob))
            .await
            .unwrap()
            .is_empty()
    );

    assert!(
        store
            .set_topic_title(&id, "Model title", TitleSource::Model)
            .await
            .unwrap()
    );
    assert!(
        store
            .set_topic_title(&id, "Mine", TitleSource::User)
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_topic_title(&id, "Model again", TitleSource::Model)
            .await
            .unwrap()
    );
    let topic = store.topic(&id).await.unwrap().unwrap();
    assert_eq!(
        (topic.title.as_deref(), topic.title_source),
        (Some("Mine"), TitleSource::User)
    );

    assert!(
        !store
            .set_active_message(&id, Message::user("elsewhere").id)
            .await
            .unwrap()
    );
    assert!(store.set_active_message(&id, answer.id).await.unwrap());
    assert_eq!(
        store
            .conversation(&id)
            .await
            .unwrap()
            .unwrap()
            .active_message,
        Some(answer.id)
    );

    // Still running: refused, nothing deleted.
    let refused = store.delete_topic(&id, OperationRecords::Keep).await;
    assert!(
        matches!(&refused, Err(StoreError::InUse(m)) if m.contains("running")),
        "{refused:?}"
    );
    assert!(store.topic(&id).await.unwrap().is_some());
    let mut finished = done.clone();
    finished.status = Status::Done;
    finished.step_count = 2;
    store
        .commit_step(&StepCommit {
            step_index: 2,
            changes: StateChanges::between(&done, &finished),
            state: finished.clone(),
            ..commit.clone()
        })
        .await
        .unwrap();
    let deleted = store
        .delete_topic(&id, OperationRecords::Keep)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        deleted,
        DeletedTopic {
            messages: 3,
            operations: 1,
            operation_records: OperationRecords::Keep
        }
    );
    assert!(store.topic(&id).await.unwrap().is_none());
    assert!(store.topic_messages(&id).await.unwrap().is_empty());
    assert!(
        store
            .operation(op.state.operation_id)
            .await
            .unwrap()
            .is_some(),
        "the record is kept"
    );
    assert_eq!(
        store
            .delete_topic(&id, OperationRecords::Keep)
            .await
            .unwrap(),
        None
    );

    // Deleted with its records: nothing of the operation is left.
    let mut gone = new_op();
    gone.owner = Some(alice.to_owned());
    store.create_operation(&gone).await.unwrap();
    let mut ended = gone.state.clone();
    ended.status = Status::Error;
    ended.step_count = 1;
    store
        .commit_step(&StepCommit {
            operation_id: ended.operation_id,
            step_index: 1,
            topic_id: gone.topic_id.clone(),
            changes: StateChanges::between(&gone.state, &ended),
            state: ended,
            ..commit
        })
        .await
        .unwrap();
    let deleted = store
        .delete_topic(&gone.topic_id, OperationRecords::Delete)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((deleted.messages, deleted.operations), (1, 1));
    let gid = gone.state.operation_id;
    assert!(store.operation(gid).await.unwrap().is_none());
    assert!(store.load_operation(gid).await.unwrap().is_none());
    assert!(store.steps(gid).await.unwrap().is_empty());
}

/// Running limits hold under concurrency: 50 operations of one owner created at once against a
/// limit of 4 give exactly 4 (with their leases and the Responses requests they answer) and 46
/// refusals that wrote nothing, not even their requests; a claim
/// respects other owners' slots and the total; recovery notes round-trip.
async fn admission(store: &SqlStore) {
    let store = Arc::new(store.clone());
    let owner = format!("admit-{}", OperationId::new());
    let now = Utc::now();
    let admission = |limits: RunLimits| Admission {
        node: "node-a".into(),
        until: now + chrono::Duration::seconds(60),
        now,
        limits,
    };
    let per4 = RunLimits {
        per_owner: Some(4),
        total: None,
    };
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (store, owner, adm) = (Arc::clone(&store), owner.clone(), admission(per4.clone()));
        tasks.push(tokio::spawn(async move {
            let mut op = new_op();
            op.owner = Some(owner);
            op.admission = Some(adm);
            let id = op.state.operation_id;
            op.response = Some(rein_store::ResponseRequest {
                operation_id: id,
                model: "agent/default".into(),
                instructions: Some("Be brief.".into()),
                previous_response_id: None,
                background: false,
                metadata: Default::default(),
                created_at: now,
            });
            (id, store.create_operation(&op).await)
        }));
    }
    let (mut accepted, mut refused) = (Vec::new(), 0);
    for t in tasks {
        match t.await.unwrap() {
            (id, Ok(Created::Ready)) => {
                let kept = store.response(&owner, id).await.unwrap();
                assert_eq!(
                    kept.map(|r| (r.operation_id, r.instructions)),
                    Some((id, Some("Be brief.".into()))),
                    "a Responses request is written with its operation"
                );
                accepted.push(id);
            }
            (id, Err(StoreError::AtCapacity { scope, limit })) => {
                assert_eq!((scope, limit), (CapacityScope::Owner, 4));
                assert!(
                    store.operation(id).await.unwrap().is_none(),
                    "nothing written"
                );
                assert!(
                    store.response(&owner, id).await.unwrap().is_none(),
                    "nor the request it answers"
                );
                refused += 1;
            }
            (_, Err(e)) => panic!("unexpected error: {e}"),
            (_, Ok(queued)) => panic!("each has its own topic, none queues: {queued:?}"),
        }
    }
    assert_eq!((accepted.len(), refused), (4, 46));
    // Claiming one of them again (renewing) is within the limit; another owner is not limited
    // by this owner's slots, but the total is.
    assert_eq!(
        store
            .claim_operation(accepted[0], &admission(per4.clone()))
            .await
            .unwrap(),
        Claim::Claimed
    );
    let mut other = new_op();
    other.owner = Some(format!("other-{owner}"));
    let other_id = other.state.operation_id;
    store.create_operation(&other).await.unwrap();
    let total4 = RunLimits {
        per_owner: Some(4),
        total: Some(4),
    };
    let at_total = store.claim_operation(other_id, &admission(total4)).await;
    assert!(
        matches!(
            at_total,
            Err(StoreError::AtCapacity {
                scope: CapacityScope::All,
                ..
            })
        ),
        "{at_total:?}"
    );
    // Another process's live lease makes it busy; a lapsed one can be taken over.
    let mut elsewhere = admission(RunLimits::default());
    elsewhere.node = "node-b".into();
    assert_eq!(
        store
            .claim_operation(accepted[1], &elsewhere)
            .await
            .unwrap(),
        Claim::Busy
    );
    elsewhere.now = now + chrono::Duration::seconds(61);
    elsewhere.until = elsewhere.now + chrono::Duration::seconds(60);
    assert_eq!(
        store
            .claim_operation(accepted[1], &elsewhere)
            .await
            .unwrap(),
        Claim::Claimed
    );
    // Processes taking over a lapsed lease at the same instant: exactly one gets it (on
    // PostgreSQL the claim reads the row locked; a plain read let two of them see it lapsed).
    let later = now + chrono::Duration::seconds(200);
    let contested = accepted[3];
    let racers: Vec<_> = (0..8)
        .map(|n| {
            let store = Arc::clone(&store);
            let racer = Admission {
                node: format!("racer-{n}"),
                now: later,
                until: later + chrono::Duration::seconds(60),
                limits: RunLimits::default(),
            };
            tokio::spawn(async move { store.claim_operation(contested, &racer).await })
        })
        .collect();
    let mut claimed = 0;
    for r in racers {
        if r.await.unwrap().unwrap() == Claim::Claimed {
            claimed += 1;
        }
    }
    assert_eq!(claimed, 1, "one process takes a lapsed lease over");
    for n in 0..8 {
        store
            .release_operation(contested, &format!("racer-{n}"))
            .await
            .unwrap();
    }
    // Recovery notes.
    let retry = now + chrono::Duration::seconds(30);
    store
        .note_recovery_failure(accepted[2], "missing key", retry)
        .await
        .unwrap();
    store
        .note_recovery_failure(accepted[2], "missing key", retry)
        .await
        .unwrap();
    let note = store
        .operation(accepted[2])
        .await
        .unwrap()
        .unwrap()
        .recovery
        .unwrap();
    assert_eq!((note.reason.as_str(), note.attempts), ("missing key", 2));
    assert_eq!(note.retry_at.unwrap().timestamp(), retry.timestamp());
    store.clear_recovery(accepted[2]).await.unwrap();
    assert!(
        store
            .operation(accepted[2])
            .await
            .unwrap()
            .unwrap()
            .recovery
            .is_none()
    );
    // Leave nothing leased behind for the rest of the suite.
    for id in accepted.iter().chain([&other_id]) {
        for node in ["node-a", "node-b"] {
            store.release_operation(*id, node).await.unwrap();
        }
    }
}

/// The lease statements compare instants, not text: a microsecond either side of the deadline,
/// across a second, a day and a year boundary, at the Unix epoch (negative instants before it)
/// and across year 10,000, where RFC 3339 text ("+10000-…" < "9999-…") orders wrongly.
async fn leases(store: &SqlStore) {
    use chrono::TimeZone;
    let id = new_op().state.operation_id;
    let mut op = new_op();
    op.state.operation_id = id;
    store.create_operation(&op).await.unwrap();
    let us = chrono::Duration::microseconds(1);
    for until in [
        Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 59).unwrap() + us * 999_999,
        Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2026, 6, 30, 9, 59, 59).unwrap() + us * 500_000,
        Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(10000, 1, 1, 0, 0, 0).unwrap(),
    ] {
        let start = until - chrono::Duration::seconds(30);
        assert!(
            store
                .lease_operation(id, "node-a", until, start)
                .await
                .unwrap()
        );
        // The holder renews at any time; another process only once the lease has run out.
        assert!(
            store
                .lease_operation(id, "node-a", until, until - us)
                .await
                .unwrap()
        );
        for (now, takes) in [(until - us, false), (until, false), (until + us, true)] {
            assert_eq!(
                store
                    .lease_operation(id, "node-b", until + chrono::Duration::seconds(30), now)
                    .await
                    .unwrap(),
                takes,
                "node-b at {now} against a lease until {until}"
            );
        }
        store.release_operation(id, "node-b").await.unwrap();
        // A process's recovery leaves out what it leased itself (and only that).
        store
            .lease_operation(id, "node-a", until, start)
            .await
            .unwrap();
        let listed = |node: &str| {
            let filter = OperationFilter {
                not_leased_by: Some(node.into()),
                limit: 10_000,
                ..Default::default()
            };
            async move {
                store
                    .list_operations(&filter)
                    .await
                    .unwrap()
                    .iter()
                    .any(|r| r.id == id)
            }
        };
        assert!(!listed("node-a").await, "leased by node-a");
        assert!(listed("node-b").await);
        store.release_operation(id, "node-a").await.unwrap();
        assert!(listed("node-a").await, "released");
        // A claim (with its running slot) follows the same rule.
        assert!(
            store
                .lease_operation(id, "node-a", until, start)
                .await
                .unwrap()
        );
        let mut claim = rein_store::Admission {
            node: "node-b".into(),
            limits: rein_store::RunLimits::default(),
            now: until - us,
            until: until + chrono::Duration::seconds(30),
        };
        assert_eq!(
            store.claim_operation(id, &claim).await.unwrap(),
            rein_store::Claim::Busy
        );
        claim.now = until + us;
        assert_eq!(
            store.claim_operation(id, &claim).await.unwrap(),
            rein_store::Claim::Claimed
        );
        store.release_operation(id, "node-b").await.unwrap();
    }
}

/// Many operations committing at once (a server runs them concurrently): every commit lands.
async fn concurrent_commits(store: &SqlStore) {
    let store = Arc::new(store.clone());
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let op = new_op();
            let id = op.state.operation_id;
            store.create_operation(&op).await?;
            for step in 1..=5u64 {
                let commit = StepCommit {
                    thread_id: None,
                    children: Vec::new(),
                    operation_id: id,
                    step_index: step,
                    state: op.state.clone(),
                    next_context: None,
                    instructions: vec![rein_core::instruction::InstructionKind::CallLlm.into()],
                    topic_id: op.topic_id.clone(),
                    // A message of the topic that the state does not list.
                    changes: StateChanges {
                        messages: vec![Arc::new(Message::assistant(format!("step {step}")))],
                        kept: op.state.messages.len(),
                        previous: op.state.messages.len(),
                        ..Default::default()
                    },
                    events: vec![event(
                        id,
                        step - 1,
                        EventKind::StepStart {
                            phase: "init".into(),
                        },
                    )],
                    tool_executions: vec![],
                    interventions: vec![],
                };
                store.commit_step(&commit).await?;
            }
            Ok::<_, StoreError>(id)
        }));
    }
    for t in tasks {
        let id = t.await.unwrap().unwrap();
        assert_eq!(store.events(id, None).await.unwrap().len(), 5);
    }
}

/// Tasks, deliveries (one per task, due time and kind; each claimed by one dispatcher; a dead
/// dispatcher's lease released) and runs.
async fn tasks(store: &SqlStore) {
    let now = Utc::now();
    let t0 = now - chrono::Duration::seconds(10);
    let id = format!("task_{}", OperationId::new());
    let task = TaskRow {
        id: id.clone(),
        owner: "u1".into(),
        body: serde_json::json!({"title": "Daily digest"}),
        created_at: t0,
        updated_at: t0,
    };
    store.put_task(&task).await.unwrap();
    let back = store.get_task(&id).await.unwrap().unwrap();
    assert_eq!(back.body["title"], "Daily digest");
    assert!(
        store
            .list_tasks(Some("u1"))
            .await
            .unwrap()
            .iter()
            .any(|t| t.id == id)
    );
    assert!(
        store
            .list_tasks(Some("u2"))
            .await
            .unwrap()
            .iter()
            .all(|t| t.id != id)
    );

    let delivery = |due: chrono::DateTime<Utc>| Delivery {
        task_id: id.clone(),
        due_at: due,
        kind: rein_store::RunTrigger::Schedule,
        generation: "g1".into(),
        status: DeliveryStatus::Pending,
        claimed_by: None,
        lease_until: None,
        reason: None,
        operation_id: None,
        created_at: t0,
    };
    let dues: Vec<_> = (0..30)
        .map(|i| t0 + chrono::Duration::milliseconds(i * 100))
        .collect();
    for d in &dues {
        assert!(store.add_delivery(&delivery(*d)).await.unwrap());
    }
    assert!(
        !store.add_delivery(&delivery(dues[0])).await.unwrap(),
        "a due time is planned once"
    );
    let future = now + chrono::Duration::hours(1);
    assert!(store.add_delivery(&delivery(future)).await.unwrap());

    // Three dispatchers claim at once: every due delivery goes to exactly one of them.
    let store = Arc::new(store.clone());
    let lease = now + chrono::Duration::seconds(30);
    let mut claims = Vec::new();
    for w in ["w1", "w2", "w3"] {
        let store = Arc::clone(&store);
        claims.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store.claim_deliveries(now, w, lease, 4).await.unwrap();
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|d| (w, d)));
            }
        }));
    }
    let mut all = Vec::new();
    for c in claims {
        all.extend(c.await.unwrap());
    }
    let mut claimed: Vec<_> = all.iter().map(|(_, d)| d.due_at).collect();
    claimed.sort();
    let mut want: Vec<_> = dues.iter().map(|d| store_ts(*d)).collect();
    want.sort();
    assert_eq!(
        claimed.iter().map(|d| store_ts(*d)).collect::<Vec<_>>(),
        want,
        "each once, the future one not yet"
    );

    // Only the holder settles; a lease that ran out is claimed again by someone else.
    let (holder, first) = all[0].clone();
    let other = if holder == "w1" { "w2" } else { "w1" };
    assert!(
        !store
            .settle_delivery(&first, other, DeliveryStatus::Dispatched, None, Some("op"))
            .await
            .unwrap()
    );
    assert!(
        store
            .settle_delivery(
                &first,
                holder,
                DeliveryStatus::Skipped,
                Some("task is paused"),
                None
            )
            .await
            .unwrap()
    );
    let later = lease + chrono::Duration::seconds(1);
    let reclaimed = store
        .claim_deliveries(later, "w9", later + chrono::Duration::seconds(30), 100)
        .await
        .unwrap();
    assert_eq!(
        reclaimed.len(),
        dues.len() - 1,
        "every unsettled claim, after its lease"
    );
    assert!(
        reclaimed
            .iter()
            .all(|d| d.claimed_by.as_deref() == Some("w9"))
    );
    let listed = store.deliveries(&id, 100).await.unwrap();
    let skipped = listed
        .iter()
        .find(|d| d.status == DeliveryStatus::Skipped)
        .unwrap();
    assert_eq!(skipped.reason.as_deref(), Some("task is paused"));

    let run = TaskRun {
        operation_id: format!("op_{id}"),
        task_id: id.clone(),
        trigger: rein_store::RunTrigger::Schedule,
        due_at: Some(dues[1]),
        started_at: now,
        finished_at: None,
        outcome: None,
        brief: None,
        cost: rein_core::Usd::ZERO,
        handoff: None,
    };
    store.add_run(&run).await.unwrap();
    store
        .finish_run(
            &run.operation_id,
            now,
            "completed",
            Some("3 new issues"),
            rein_core::Usd::from_dollars(0.0125),
        )
        .await
        .unwrap();
    let runs = store.runs(&id, 10).await.unwrap();
    assert_eq!(runs[0].outcome.as_deref(), Some("completed"));
    assert_eq!(runs[0].brief.as_deref(), Some("3 new issues"));
    assert_eq!(runs[0].cost, rein_core::Usd::from_dollars(0.0125));
    assert!(store.delete_task(&id).await.unwrap());
    assert!(store.get_task(&id).await.unwrap().is_none());
}

/// Timestamps as stored (microseconds).
fn store_ts(t: chrono::DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// A step that delegates creates its children in the same transaction: records with parent,
/// root and depth, their first messages in their own threads (never in the topic's own
/// conversation), and a thread row each; a duplicate commit creates nothing twice.
async fn sub_agents(store: &SqlStore) {
    let parent = new_op();
    let pid = parent.state.operation_id;
    store.create_operation(&parent).await.unwrap();
    let mut parked = parent.state.clone();
    let tool_message = Message::assistant("delegating");
    parked.push_message(tool_message.clone());
    parked.status = Status::WaitingForSubAgents;
    let child = |n: u128| {
        let id = OperationId(uuid::Uuid::from_u128(pid.as_uuid().as_u128() ^ n));
        let state = AgentState::new(id)
            .with_message(Message::system("child role"))
            .with_message(Message::user(format!("task {n}")));
        NewOperation {
            prompt: None,
            state,
            topic_id: parent.topic_id.clone(),
            agent: Some("researcher".into()),
            trigger: Trigger::SubAgent,
            parent_operation: Some(pid),
            next_context: Some(RuntimeContext::new(Phase::Init)),
            owner: None,
            spec: rein_core::spec::OperationSpec {
                delegation: Some(rein_core::spec::Delegation {
                    parent: pid,
                    root: pid,
                    depth: 1,
                    tool_call_id: "d1".into(),
                    parent_budget: Default::default(),
                }),
                ..Default::default()
            },
            admission: None,
            thread: Some(NewThread {
                parent_message_id: Some(tool_message.id),
                title: format!("task {n}"),
            }),
            gate: None,
            response: None,
        }
    };
    let children = vec![child(1), child(2)];
    let commit = StepCommit {
        operation_id: pid,
        step_index: 1,
        topic_id: parent.topic_id.clone(),
        changes: StateChanges::between(&parent.state, &parked),
        state: parked.clone(),
        next_context: None,
        instructions: vec![rein_core::instruction::InstructionKind::ExecSubAgents.into()],
        events: Vec::new(),
        tool_executions: Vec::new(),
        interventions: Vec::new(),
        thread_id: None,
        children: children.clone(),
    };
    assert_eq!(
        store.commit_step(&commit).await.unwrap(),
        CommitOutcome::Committed
    );
    assert_eq!(
        store.commit_step(&commit).await.unwrap(),
        CommitOutcome::Duplicate
    );
    let listed = store
        .list_operations(&OperationFilter {
            parent: Some(pid),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 2);
    for r in &listed {
        assert_eq!(r.trigger, Trigger::SubAgent);
        assert_eq!(r.depth, 1);
        assert_eq!(r.root_operation, Some(pid));
        assert_eq!(r.parent_operation, Some(pid));
    }
    let threads = store.threads(&parent.topic_id).await.unwrap();
    assert_eq!(threads.len(), 2);
    assert!(
        threads
            .iter()
            .all(|t| t.parent_message_id == Some(tool_message.id.to_string())
                && t.parent_operation == pid.to_string())
    );
    let first = children[0].state.operation_id;
    let thread = store.thread_messages(&first.to_string()).await.unwrap();
    assert_eq!(
        thread.iter().map(|m| m.text_content()).collect::<Vec<_>>(),
        ["child role", "task 1"]
    );
    // The child's later steps write to its thread too.
    let loaded = store.load_operation(first).await.unwrap().unwrap();
    assert_eq!(loaded.state, children[0].state);
    let mut next = loaded.state.clone();
    next.push_message(Message::assistant("child answer"));
    store
        .commit_step(&StepCommit {
            operation_id: first,
            step_index: 1,
            topic_id: parent.topic_id.clone(),
            changes: StateChanges::between(&loaded.state, &next),
            state: next,
            next_context: None,
            instructions: vec![rein_core::instruction::InstructionKind::CallLlm.into()],
            events: Vec::new(),
            tool_executions: Vec::new(),
            interventions: Vec::new(),
            thread_id: Some(first.to_string()),
            children: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(
        store
            .thread_messages(&first.to_string())
            .await
            .unwrap()
            .len(),
        3
    );
    let main: Vec<String> = store
        .topic_messages(&parent.topic_id)
        .await
        .unwrap()
        .iter()
        .map(|m| m.text_content())
        .collect();
    assert_eq!(
        main,
        ["hello", "delegating"],
        "threads stay out of the topic"
    );

    // Groups: per owner, versioned, listed by name.
    let now = chrono::Utc::now();
    let group = |name: &str, members: &[&str]| GroupRecord {
        owner: "owner-g".into(),
        name: name.into(),
        config: serde_json::json!({ "members": members }),
        version: 0,
        created_at: now,
        updated_at: now,
    };
    assert_eq!(store.put_group(&group("b", &["x", "y"])).await.unwrap(), 1);
    assert_eq!(store.put_group(&group("a", &["x", "y"])).await.unwrap(), 1);
    assert_eq!(store.put_group(&group("b", &["y", "x"])).await.unwrap(), 2);
    let listed: Vec<String> = store
        .list_groups("owner-g")
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(listed, ["a", "b"]);
    let b = store.get_group("owner-g", "b").await.unwrap().unwrap();
    assert_eq!(b.config["members"], serde_json::json!(["y", "x"]));
    assert_eq!(b.version, 2);
    assert!(
        store
            .get_group("someone-else", "b")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.delete_group("owner-g", "b").await.unwrap());
    assert!(!store.delete_group("owner-g", "b").await.unwrap());
}
