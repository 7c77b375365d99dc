//! Operations on a device (`device:NAME`): the device's tools are offered in place of this
//! host's file and shell tools, their calls are deferred (the operation waits in
//! `waiting_for_async_tool`), the device's answer completes them and the operation runs on;
//! a sub-agent of a device operation runs on the same device; a cancelled wait settles the
//! call and a late answer changes nothing. (The gateway and `rein connect` end to end:
//! `rein-cli`'s serve tests.)

use crate::common;

use futures::future::BoxFuture;
use rein_core::engine::ports::ToolOutput;
use rein_core::intervention::ApprovalMode;
use rein_core::message::ToolStatus;
use rein_core::spec::Surface;
use rein_core::state::{FinishReason, Status};
use rein_core::tool::{ToolKind, ToolManifest};
use rein_core::{OperationId, Role};
use rein_model::testing::{Canned, Server, serve};
use rein_operation::devices::DeviceDirectory;
use rein_operation::{
    AgentProfile, Driver, DriverError, OperationSpec, RunEnd, StartOptions, StoredAgents, Tool,
};
use rein_store::{Accounts, AgentRecord, SqlStore, Store, StoreError};
use std::sync::Arc;

/// One device, `laptop`, offering the built-in file and shell tools.
struct Laptop;

impl DeviceDirectory for Laptop {
    fn tools<'a>(
        &'a self,
        _: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<ToolManifest>>, StoreError>> {
        let tools = (name == "laptop").then(|| {
            vec![
                rein_tools::files::Files.manifest(),
                rein_tools::shell::Shell::new(Default::default()).manifest(),
            ]
        });
        Box::pin(async move { Ok(tools) })
    }
}

const BOSS: &str = "ROLE-BOSS: you coordinate.";
const HELPER: &str = "ROLE-HELPER: you write notes.";

async fn setup(server: &Server) -> (Arc<SqlStore>, Driver) {
    let (_, store) = common::temp_store("rein-devices").await;
    let local = store.create_user("local").await.unwrap().id;
    let profile = AgentProfile {
        system_role: Some(HELPER.into()),
        approval: Some(rein_core::intervention::ApprovalMode::AutoRun),
        ..Default::default()
    };
    store
        .put_agent(&AgentRecord {
            owner: local.clone(),
            name: "helper".into(),
            config: serde_json::to_value(&profile).unwrap(),
            version: 0,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        })
        .await
        .unwrap();
    let d = common::driver(server, &store)
        .with_devices(Arc::new(Laptop))
        .with_agents(Arc::new(StoredAgents {
            accounts: store.clone(),
            local_user: Some(local),
            fixed: Default::default(),
        }));
    (store, d)
}

fn on_laptop(role: &str) -> StartOptions {
    StartOptions {
        spec: OperationSpec {
            surface: Surface::Device("laptop".into()),
            system_role: Some(role.into()),
            approval: ApprovalMode::AutoRun,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn write_note(id: &str) -> Canned {
    let args = serde_json::json!({"path": "n.txt", "content": "x"}).to_string();
    Canned::openai_tools(&[(id, "files__write", &args)])
}

#[tokio::test]
async fn a_sub_agent_of_a_device_operation_runs_on_the_device_and_its_answer_continues_the_tree() {
    let server = serve(Vec::new(), 3).await;
    let delegate =
        serde_json::json!({"title": "note", "task": "Write the note.", "agent": "helper"})
            .to_string();
    server.route(
        "ROLE-BOSS",
        vec![
            Canned::openai_tools(&[("d1", "agents__delegate", &delegate)]),
            Canned::openai_text("The helper wrote it."),
        ],
    );
    server.route(
        "ROLE-HELPER",
        vec![write_note("w1"), Canned::openai_text("Wrote n.txt.")],
    );
    let (store, d) = setup(&server).await;
    let root = d
        .start("Get a note written.", &on_laptop(BOSS))
        .await
        .unwrap();
    let end = d.run(root).await.unwrap();
    assert!(matches!(end, RunEnd::WaitingForSubAgents { .. }), "{end:?}");
    let parent = store.load_operation(root).await.unwrap().unwrap();
    let child_id: OperationId = parent.state.sub_agents[0].operation_id;
    let child = store.load_operation(child_id).await.unwrap().unwrap();
    // Its own agent says nothing about where it runs: it runs where its parent does.
    assert_eq!(child.spec.surface, Surface::Device("laptop".into()));
    assert_eq!(child.state.status, Status::WaitingForAsyncTool);
    assert_eq!(child.state.async_calls, ["w1"]);
    assert_eq!(child.state.tool_manifests["files"].kind, ToolKind::Device);
    let pending = child
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(pending.tool_status, Some(ToolStatus::Pending));

    // The device answers: the sub-agent runs on, ends, and its parent takes its answer.
    let end = d
        .complete_async_tool(child_id, "w1", ToolOutput::ok("wrote n.txt"))
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let child = store.load_operation(child_id).await.unwrap().unwrap();
    let result = child
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(result.tool_status, Some(ToolStatus::Succeeded));
    assert_eq!(result.text_content(), "wrote n.txt");
    assert!(child.state.async_calls.is_empty());
    let root = store.load_operation(root).await.unwrap().unwrap();
    assert_eq!(root.state.status, Status::Done);
    assert_eq!(
        root.state.final_answer().as_deref(),
        Some("The helper wrote it.")
    );
    // The helper's model saw the device's answer.
    let helper = server
        .requests()
        .into_iter()
        .filter(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with("ROLE-HELPER"))
        })
        .nth(1)
        .unwrap();
    assert_eq!(helper.tool_result("w1"), "wrote n.txt");
}

#[tokio::test]
async fn an_unknown_device_is_refused_and_a_late_answer_after_a_cancel_changes_nothing() {
    let server = serve(vec![write_note("w1")], 3).await;
    let (store, d) = setup(&server).await;
    let mut elsewhere = on_laptop(HELPER);
    elsewhere.spec.surface = Surface::Device("desktop".into());
    let err = d.start("hi", &elsewhere).await.unwrap_err();
    assert!(
        matches!(&err, DriverError::UnknownDevice(n) if n == "desktop"),
        "{err:?}"
    );

    let id = d.start("Write a note.", &on_laptop(HELPER)).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(&end, RunEnd::WaitingForAsyncTool { calls } if calls == &["w1".to_owned()]),
        "{end:?}"
    );
    // Waiting on a device is not waiting for a person: nothing to approve.
    assert!(store.interventions(id).await.unwrap().is_empty());
    let end = d.cancel(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::UserRequested,
                ..
            }
        ),
        "{end:?}"
    );
    let op = store.load_operation(id).await.unwrap().unwrap();
    let settled = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(settled.tool_status, Some(ToolStatus::Aborted));
    assert!(op.state.async_calls.is_empty());
    let before = op.record.commit_seq;
    let end = d
        .complete_async_tool(id, "w1", ToolOutput::ok("too late"))
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let after = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(after.record.commit_seq, before, "nothing was written");
}

#[tokio::test]
async fn approval_is_decided_on_the_server_before_a_call_goes_to_the_device() {
    let ls = serde_json::json!({"command": "ls"}).to_string();
    let server = serve(vec![Canned::openai_tools(&[("w1", "shell__run", &ls)])], 3).await;
    let (store, d) = setup(&server).await;
    let mut manual = on_laptop(HELPER);
    manual.spec.approval = ApprovalMode::Manual;
    let id = d.start("List the files.", &manual).await.unwrap();
    let end = d.run(id).await.unwrap();
    // Parked for a person: nothing is awaited from the device yet.
    assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert!(op.state.async_calls.is_empty());
    // Approved, it is deferred to the device.
    let end = d
        .decide(id, None, rein_operation::Decision::Approve, None)
        .await
        .unwrap();
    assert!(
        matches!(&end, RunEnd::WaitingForAsyncTool { calls } if calls == &["w1".to_owned()]),
        "{end:?}"
    );
}

/// A device's answer holding a NUL, an escape and a lone carriage return becomes message text
/// as every tool's result does: stored, sent to the model and shown with the control
/// characters visible (PostgreSQL refuses U+0000), the call reported as succeeded.
#[tokio::test]
async fn a_device_answer_with_control_characters_is_stored_and_sent_normalised() {
    let server = serve(
        vec![write_note("w1"), Canned::openai_text("It printed a␀b.")],
        3,
    )
    .await;
    let (store, d) = setup(&server).await;
    let id = d.start("Print it.", &on_laptop(HELPER)).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::WaitingForAsyncTool { .. }), "{end:?}");
    let end = d
        .complete_async_tool(id, "w1", ToolOutput::ok("a\0b\x1b[1m\rc"))
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let shown = "a\u{2400}b\u{241b}[1m\nc";
    let op = store.load_operation(id).await.unwrap().unwrap();
    let result = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(result.tool_status, Some(ToolStatus::Succeeded));
    assert_eq!(result.text_content(), shown);
    assert_eq!(server.requests().last().unwrap().tool_result("w1"), shown);
    let events = store.events(id, None).await.unwrap();
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        rein_core::event::EventKind::ToolResult { content, .. } if content == shown
    )));
}
