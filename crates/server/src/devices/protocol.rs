//! The device gateway's messages: JSON text frames over the WebSocket a device holds to
//! `/v1/devices/connect`. The device opens with `hello`; the server sends `call`s; the device
//! `ack`s each call as it takes it and sends its `result`; the server answers `settled` once the
//! result is recorded (until then the device keeps it and sends it again after a reconnect).

use rein_core::OperationId;
use rein_core::spec::Sandbox;
use rein_core::tool::ToolManifest;
use serde::{Deserialize, Serialize};

/// What a device sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DeviceMessage {
    /// The first message: who it is and what it offers.
    Hello {
        /// Its name (the one its token is bound to).
        name: String,
        /// The tools it runs (their manifests).
        tools: Vec<ToolManifest>,
        /// The directory they work in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workdir: Option<String>,
        /// Its operating system and architecture.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        platform: Option<String>,
    },
    /// It took call `call_id` (recorded in its ledger before it runs).
    Ack {
        /// The call.
        call_id: String,
    },
    /// A line an agent it runs (`run_agent`) printed.
    AgentLine {
        /// The operation.
        operation_id: OperationId,
        /// The line, as printed.
        line: String,
    },
    /// An agent it runs ended (or never started: `refused` says why).
    AgentEnded {
        /// The operation.
        operation_id: OperationId,
        /// Its exit code (`None`: killed by a signal, or it never started).
        #[serde(default)]
        code: Option<i32>,
        /// The end of its standard error.
        #[serde(default)]
        stderr: String,
        /// Why the device did not start it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// The outcome of a call.
    Result {
        /// The operation that made it.
        operation_id: OperationId,
        /// The call.
        call_id: String,
        /// Whether it succeeded.
        success: bool,
        /// What it returned (the model reads it).
        content: String,
    },
}

/// What the server sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// The device is connected as `name`.
    Welcome {
        /// Its name.
        name: String,
    },
    /// Run a call.
    Call(DeviceCall),
    /// Start an external agent for an operation (`external:KIND@NAME`).
    RunAgent(AgentStart),
    /// Stop the agent of an operation (a limit, a cancel).
    StopAgent {
        /// The operation.
        operation_id: OperationId,
    },
    /// The result of `call_id` is recorded: the device may forget it.
    Settled {
        /// The call.
        call_id: String,
    },
    /// The connection is refused or closed, and why (then the socket closes).
    Refused {
        /// Why.
        reason: String,
    },
}

/// One call for a device to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceCall {
    /// The operation that made it.
    pub operation_id: OperationId,
    /// The call's id (unique in the operation; the device runs it at most once).
    pub call_id: String,
    /// The tool (`files`, `shell`, an MCP server's identifier).
    pub tool: String,
    /// The API of the tool.
    pub api: String,
    /// The arguments, as the model wrote them (a JSON object).
    pub arguments: String,
    /// Whether a person approved this call (a command the guard flags runs on the device
    /// only then).
    pub approved: bool,
    /// The operation's sandbox for shell commands (the device's own may be stricter).
    pub sandbox: Sandbox,
}

/// An external agent for a device to start in its directory and stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStart {
    /// The operation it works for.
    pub operation_id: OperationId,
    /// The kind (`claude-code`, `codex`, `jsonl`): the device runs it only if it enables it.
    pub kind: String,
    /// The kind's arguments (after the device's own configured ones).
    pub args: Vec<String>,
    /// Its standard input (the prompt).
    pub input: String,
    /// The session a generic agent resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}
