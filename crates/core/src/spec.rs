//! The operation spec: everything that decides what one operation may do, written with the
//! operation when it starts and read back by every process that continues it (approvals,
//! rejections, resumes, crash recovery, another node). It never changes afterwards: editing or
//! deleting the agent an operation was started from does not change the operation.

use crate::ids::OperationId;
use crate::intervention::ApprovalMode;
use crate::state::{Budget, ModelRef};
use serde::{Deserialize, Serialize};

/// What the context engine is told beyond the transcript.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextSettings {
    /// Tell the model today's date. Off for cassette recording and replay: a recorded request
    /// must replay byte for byte on any day.
    pub date: bool,
    /// Tell the model the working directory and OS. Off for cassettes (paths differ per
    /// machine).
    pub workspace: bool,
    /// Inject the user's memories relevant to the request. Off for cassettes (the request
    /// must not depend on what the local store remembers).
    pub memories: bool,
    /// Inject the best chunks of the operation's knowledge bases for the user's message.
    pub knowledge: bool,
    /// Tool results longer than this keep their head and tail.
    pub max_tool_result_chars: Option<usize>,
    /// Attached text files are inlined up to this many characters each.
    pub max_file_chars: Option<usize>,
    /// Keep at most this many conversation messages per call.
    pub history_limit: Option<usize>,
    /// Compression keeps the newest messages verbatim up to this many tokens (at most a
    /// quarter of the model's window).
    pub keep_recent_tokens: u64,
    /// Mark the prefix each call repeats for providers that cache only what a request marks
    /// (Anthropic: the tools, the system prompt, the conversation before the step's notes).
    pub prompt_cache: bool,
    /// Ask for cached prefixes to be kept an hour instead of five minutes (Anthropic bills
    /// such writes at twice the input price instead of 1.25 times).
    pub prompt_cache_hour: bool,
    /// Mark tool results, files and knowledge as data the model must not take instructions
    /// from (rein-context's `spotlight`). On for new operations; an operation recorded before
    /// it existed reads as off, so its calls rebuild (replay, fork) byte for byte.
    #[serde(default)]
    pub spotlight: bool,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            date: true,
            workspace: true,
            memories: true,
            knowledge: true,
            max_tool_result_chars: Some(64 * 1024),
            max_file_chars: Some(32 * 1024),
            history_limit: None,
            keep_recent_tokens: 8_000,
            prompt_cache: true,
            prompt_cache_hour: false,
            spotlight: true,
        }
    }
}

/// The agent an operation was started as, and which version of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRef {
    /// Name (unique per owner).
    pub name: String,
    /// The agent's version when the operation started (it counts edits); `None` for agents
    /// that are not stored (the CLI's configuration file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// How deep delegation may go by default: a root operation's sub-agents are at depth 1, theirs
/// at 2, and so on; a sub-agent at this depth cannot delegate.
pub const DEFAULT_MAX_DEPTH: u32 = 3;
/// How many of one operation's sub-agents run at once by default.
pub const DEFAULT_SUB_AGENT_CONCURRENCY: usize = 4;

/// What an operation may delegate, and how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SubAgentSettings {
    /// Depth beyond which nothing is delegated (see [`DEFAULT_MAX_DEPTH`]).
    pub max_depth: u32,
    /// Sub-agents of one operation running at once.
    pub concurrency: usize,
    /// Named agents it may delegate to: `None` every agent of its owner, `Some([])` only
    /// ad-hoc sub-agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
}

impl Default for SubAgentSettings {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            concurrency: DEFAULT_SUB_AGENT_CONCURRENCY,
            agents: None,
        }
    }
}

/// Where a sub-agent sits in its operation tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegation {
    /// The operation that delegated to it.
    pub parent: OperationId,
    /// The tree's root operation.
    pub root: OperationId,
    /// 1 for a root's sub-agent.
    pub depth: u32,
    /// The call that delegated it.
    pub tool_call_id: String,
    /// What the parent could still spend when it delegated, and the parent's policy: the
    /// parent's and all its sub-agents' spending together stays within it.
    pub parent_budget: Budget,
}

crate::named_enum! {
    /// What the shell's commands may touch, enforced by the operating system (the second wall,
    /// behind the command guard).
    #[derive(Default)]
    pub enum SandboxMode as "sandbox" {
        /// Unconfined: the process's own rights.
        Off = "off",
        /// Read anything; write nowhere but a private temporary directory.
        ReadOnly = "read-only",
        /// Read anything; write in the working directory and a private temporary directory.
        #[default]
        WorkspaceWrite = "workspace-write",
    }
}

impl SandboxMode {
    /// How far it lets commands reach: `read-only` < `workspace-write` < `off`.
    fn reach(self) -> u8 {
        match self {
            SandboxMode::ReadOnly => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::Off => 2,
        }
    }

    /// The stricter of the two (a profile can narrow the host's sandbox, never widen it).
    pub fn stricter(self, other: SandboxMode) -> SandboxMode {
        if self.reach() <= other.reach() {
            self
        } else {
            other
        }
    }
}

/// The shell's sandbox: what its commands may write, and whether they may use the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Sandbox {
    /// What commands may write.
    pub mode: SandboxMode,
    /// Whether commands may open network sockets (IPv4, IPv6); in `off` always.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
}

crate::named_enum! {
    /// An agent CLI rein can drive as an operation's brain and executor (see
    /// [`Surface::External`]).
    #[derive(PartialOrd, Ord)]
    pub enum ExternalKind as "external agent" {
        /// Claude Code (`claude -p --output-format stream-json`).
        ClaudeCode = "claude-code",
        /// OpenAI Codex (`codex exec --json`).
        Codex = "codex",
        /// Any program speaking rein's generic JSON-lines format (see `docs/surfaces.md`).
        Jsonl = "jsonl",
    }
}

/// The longest device name (see [`Surface::Device`]).
pub const DEVICE_NAME_MAX: usize = 64;

/// Where an operation's work runs: the one answer every process continuing it reads from its
/// spec (a sub-agent runs where its parent runs). Written `local`, `server`, `device:NAME` or
/// `external:KIND`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Surface {
    /// In the process that started it (the CLI): rein's brain, tools on this machine.
    #[default]
    Local,
    /// In a rein server (or one of its workers): rein's brain, tools in the server's working
    /// directory.
    Server,
    /// rein's brain on the server, the tools on a device that joined with `rein connect`.
    Device(String),
    /// An external agent CLI is the brain and the executor; rein spawns it, bounds it and
    /// records what it reports.
    External(ExternalKind),
    /// An external agent CLI run on a connected device (`external:KIND@NAME`): the device
    /// starts it in its directory and streams what it reports; rein bounds and records it.
    ExternalOnDevice {
        /// The agent.
        kind: ExternalKind,
        /// The device.
        device: String,
    },
    /// A remote agent reached over A2A (`a2a:NAME`, the user's agent registered with its
    /// card): it is the brain and the executor; rein sends it the task, records what it
    /// reports, relays its questions and bounds it.
    A2a(String),
}

impl Surface {
    /// The external agent it runs, if it is one.
    pub fn external_kind(&self) -> Option<ExternalKind> {
        match self {
            Surface::External(k) | Surface::ExternalOnDevice { kind: k, .. } => Some(*k),
            _ => None,
        }
    }

    /// The device it runs on, if any.
    pub fn device(&self) -> Option<&str> {
        match self {
            Surface::Device(d) | Surface::ExternalOnDevice { device: d, .. } => Some(d),
            _ => None,
        }
    }
}

/// A surface that is none of the forms [`Surface`] reads (it holds the text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "surface `{0}`: use local, server, device:NAME (1-64 letters, digits, `-`, `_`, `.`), external:claude-code|codex|jsonl, optionally @NAME (on a device), or a2a:AGENT (a remote agent's)"
)]
pub struct SurfaceParseError(pub String);

/// Whether `name` can name an agent: 1-64 ASCII letters, digits, `-` or `_`.
pub fn valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// Whether `name` can name a device: 1-64 ASCII letters, digits, `-`, `_` or `.`.
pub fn valid_device_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= DEVICE_NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl std::str::FromStr for Surface {
    type Err = SurfaceParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || SurfaceParseError(s.to_owned());
        match s.split_once(':') {
            None if s == "local" => Ok(Surface::Local),
            None if s == "server" => Ok(Surface::Server),
            Some(("device", name)) if valid_device_name(name) => {
                Ok(Surface::Device(name.to_owned()))
            }
            Some(("a2a", name)) if valid_agent_name(name) => Ok(Surface::A2a(name.to_owned())),
            Some(("external", rest)) => match rest.split_once('@') {
                None => rest
                    .parse::<ExternalKind>()
                    .ok()
                    .map(Surface::External)
                    .ok_or_else(bad),
                Some((kind, device)) if valid_device_name(device) => kind
                    .parse::<ExternalKind>()
                    .ok()
                    .map(|kind| Surface::ExternalOnDevice {
                        kind,
                        device: device.to_owned(),
                    })
                    .ok_or_else(bad),
                Some(_) => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Surface::Local => f.write_str("local"),
            Surface::Server => f.write_str("server"),
            Surface::Device(name) => write!(f, "device:{name}"),
            Surface::External(kind) => write!(f, "external:{}", kind.as_str()),
            Surface::ExternalOnDevice { kind, device } => {
                write!(f, "external:{}@{device}", kind.as_str())
            }
            Surface::A2a(name) => write!(f, "a2a:{name}"),
        }
    }
}

impl Serialize for Surface {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Surface {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Surface {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Surface".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": SURFACE_PATTERN})
    }
}

/// The pattern of a surface as [`Surface`] parses it (for request schemas).
pub const SURFACE_PATTERN: &str = "^(local|server|device:[A-Za-z0-9._-]{1,64}|external:(claude-code|codex|jsonl)(@[A-Za-z0-9._-]{1,64})?|a2a:[A-Za-z0-9_-]{1,64})$";

/// How a group's supervisor picks who speaks next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpeakerPolicy {
    /// The supervisor's model picks the next speaker (and its instruction), or ends the
    /// conversation, as a structured answer.
    #[default]
    Model,
    /// Members speak in turn.
    RoundRobin,
    /// A member the last message names (`@name` or the name alone) speaks next; in turn
    /// otherwise.
    MentionedFirst,
}

/// A group conversation run by a supervisor: the members speak in rounds, each turn a
/// sub-agent of the supervisor's operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSpec {
    /// The group's name.
    pub name: String,
    /// Its agents, in their speaking order.
    pub members: Vec<String>,
    /// How the next speaker is picked.
    pub policy: SpeakerPolicy,
    /// Turns at most (per user message).
    pub max_rounds: u32,
}

crate::named_enum! {
    /// How the tools an operation may call are offered to the model.
    #[derive(Default)]
    pub enum ToolDisclosure as "tools_disclosure" {
        /// Progressive when the offered schemas would cost more than
        /// [`AUTO_DISCLOSURE_TOKENS`], every schema otherwise.
        #[default]
        Auto = "auto",
        /// Every allowed tool's schema, every call.
        All = "all",
        /// Tools listed by name and one line; the model activates what it needs
        /// (`tools.activate_tools`) and their schemas are sent from the next call on.
        Progressive = "progressive",
    }
}

/// Above this many estimated tokens of tool schemas, `auto` disclosure lists tools instead of
/// sending their schemas. The built-in tools cost about 1,500; a few MCP servers more cross it.
pub const AUTO_DISCLOSURE_TOKENS: u64 = 6_000;

impl ToolDisclosure {
    /// Whether schemas costing `schema_tokens` are listed rather than sent.
    pub fn progressive(self, schema_tokens: u64) -> bool {
        match self {
            Self::All => false,
            Self::Progressive => true,
            Self::Auto => schema_tokens > AUTO_DISCLOSURE_TOKENS,
        }
    }
}

/// How many tokens of its knowledge bases' best chunks an operation's model call carries
/// unless its spec says otherwise (about four chunks of the default size).
pub const DEFAULT_KNOWLEDGE_TOKENS: u32 = 1_500;

/// The most [`OperationSpec::knowledge_tokens`] may ask for: past this the chunks would crowd
/// out the conversation in most models' windows.
pub const MAX_KNOWLEDGE_TOKENS: u32 = 32_000;

crate::named_enum! {
    /// Which of the user's learnt memories an agent reads, and where what its conversations
    /// teach goes.
    #[derive(Default)]
    pub enum MemoryScope as "memory" {
        /// The memories the user's agents share.
        #[default]
        User = "user",
        /// Its own: learnt from its conversations, read by it alone.
        Agent = "agent",
    }
}

impl MemoryScope {
    /// Whether this is the default (left out of a serialized spec).
    pub fn is_user(&self) -> bool {
        *self == Self::User
    }
}

crate::named_enum! {
    /// What happens to a new operation of a conversation in which another one is running or
    /// parked: one conversation runs one operation at a time, so every exchange stays on its
    /// active path, in order.
    #[derive(Default)]
    pub enum WhenBusy as "when_busy" {
        /// Wait: it is queued and starts when the one before it ends (cancellable meanwhile).
        #[default]
        Enqueue = "enqueue",
        /// Refuse it, naming the operation in the way.
        Reject = "reject",
        /// Interrupt the one in the way at its next boundary (keeping its partial answer; its
        /// calls waiting for approval are rejected: the person moved on), then start.
        Interrupt = "interrupt",
    }
}

impl WhenBusy {
    /// Whether this is the default (left out of a serialized spec).
    pub fn is_default(&self) -> bool {
        *self == Self::Enqueue
    }
}

/// What one operation may do.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OperationSpec {
    /// The model it talks to. `None` only before it starts, meaning the host's default; the
    /// stored spec always names it.
    pub model: Option<ModelRef>,
    /// Instructions given to the model first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// Tools it may call (`identifier` or `identifier/api`): `None` every tool, `Some([])` none.
    pub allowed_tools: Option<Vec<String>>,
    /// How calls are approved.
    pub approval: ApprovalMode,
    /// Tools that run without asking in `manual` and `allow-list` mode (`identifier` or
    /// `identifier/api`), once the blacklist, the guard and the tool's own `always` have
    /// decided; in `allow-list` mode every other tool asks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// A person's rules per tool, replacing the tool's own policy (see
    /// [`crate::intervention::UserInterventionConfig::tool_rules`]).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tool_rules: std::collections::BTreeMap<String, crate::intervention::InterventionConfig>,
    /// Nobody watches this run (a task's): the agent's questions are not asked (the tool says
    /// nobody is available); approvals still follow `approval`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unattended: bool,
    /// With `unattended`: a question the agent asks becomes an urgent decision brief for the
    /// person it works for (their answer reaches a later run of the task) instead of only
    /// being declined; the tool says so and the model continues either way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub question_briefs: bool,
    /// Step limit (then a final answer is forced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Token and cost limits, per operation and per call, and what crossing one does.
    pub budget: Budget,
    /// Prices of the models it calls, by `provider/model` (USD per million tokens), over the
    /// catalog's: the configuration file's, the agent's and the request's.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub prices: std::collections::BTreeMap<String, crate::usage::Prices>,
    /// Seconds a requested approval stays valid; after that the operation ends (`timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_timeout_secs: Option<u64>,
    /// What happens when another operation of its conversation is running or parked as it
    /// starts.
    #[serde(skip_serializing_if = "WhenBusy::is_default")]
    pub when_busy: WhenBusy,
    /// Whether tools are offered with full schemas or listed for activation.
    pub tools_disclosure: ToolDisclosure,
    /// Skills admitted from the first call on (by name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// The model that writes compression summaries (the operation's model when `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression_model: Option<ModelRef>,
    /// What the context engine is told beyond the transcript.
    pub context: ContextSettings,
    /// Tools the host added beyond the built-ins (MCP servers, by the identifier their tools
    /// are offered under): a process continuing the operation must have each of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
    /// Directory the file and shell tools are confined to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// What the shell's commands may touch (workspace-write without network by default).
    #[serde(default)]
    pub sandbox: Sandbox,
    /// Where its work runs (chosen once, by `rein_operation::surface::route`).
    #[serde(default, skip_serializing_if = "is_local")]
    pub surface: Surface,
    /// Knowledge bases it may search (`knowledge.search`), and whose best chunks for the
    /// user's message go into each model call, by name (its owner's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<String>,
    /// The hosts `web.fetch` may reach (`example.com`, `*.example.com`: the domain's
    /// subdomains; `None`: any public host). While a list is set, the shell and the interpreters
    /// run without network: a host list cannot be held against any program's own sockets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<String>>,
    /// The most tokens of those chunks one model call carries (`None`:
    /// [`DEFAULT_KNOWLEDGE_TOKENS`]); 0 puts none in, leaving the bases to `knowledge.search`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knowledge_tokens: Option<u32>,
    /// Which learnt memories it reads and where what it learns goes.
    #[serde(skip_serializing_if = "MemoryScope::is_user")]
    pub memory_scope: MemoryScope,
    /// Wall-clock seconds one run of an external agent may take before its processes are
    /// stopped (`timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit_secs: Option<u64>,
    /// The user it belongs to (a server's user id; `None` for the local CLI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The agent it runs as, and its version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRef>,
    /// What it may delegate.
    pub sub_agents: SubAgentSettings,
    /// Set for a sub-agent: its parent, root and depth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegation: Option<Delegation>,
    /// Set for a group conversation's supervisor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupSpec>,
    /// Set for a fork: the operation and step whose state it started from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
}

/// Where a fork came from: it started from the state `operation` had right after `step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The operation forked.
    pub operation: OperationId,
    /// The committed step whose state it started from.
    pub step: u64,
}

fn is_local(s: &Surface) -> bool {
    *s == Surface::Local
}

impl OperationSpec {
    /// 0 for a root operation, the sub-agent's depth otherwise.
    pub fn depth(&self) -> u32 {
        self.delegation.as_ref().map_or(0, |d| d.depth)
    }

    /// Whether it may delegate at all (its sub-agents would still be within the depth limit).
    pub fn may_delegate(&self) -> bool {
        self.depth() < self.sub_agents.max_depth
    }

    /// Whether `identifier/api` is within the allow-list.
    pub fn allows(&self, identifier: &str, api: &str) -> bool {
        self.allowed_tools
            .as_ref()
            .is_none_or(|l| crate::intervention::key_listed(l, identifier, api))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omitted_and_empty_allow_lists_stay_distinct_through_json() {
        let all = OperationSpec::default();
        let none = OperationSpec {
            allowed_tools: Some(Vec::new()),
            ..Default::default()
        };
        for spec in [&all, &none] {
            let back: OperationSpec =
                serde_json::from_str(&serde_json::to_string(spec).unwrap_or_default())
                    .unwrap_or_default();
            assert_eq!(&back, spec);
        }
        assert!(all.allows("shell", "run"));
        assert!(!none.allows("calculator", "evaluate"));
        let some = OperationSpec {
            allowed_tools: Some(vec!["calculator".into(), "files/read".into()]),
            ..Default::default()
        };
        assert!(some.allows("calculator", "evaluate"));
        assert!(some.allows("files", "read"));
        assert!(!some.allows("files", "write"));
    }

    #[test]
    fn surfaces_read_back_as_written_and_bad_ones_are_named() {
        let re = regex::Regex::new(SURFACE_PATTERN).ok();
        let pattern = |t: &str| re.as_ref().is_some_and(|r| r.is_match(t));
        for text in [
            "local",
            "server",
            "device:laptop-1",
            "device:a.b_c",
            "external:claude-code",
            "external:codex",
            "external:jsonl",
            "external:codex@laptop-1",
            "a2a:helper_2-b",
        ] {
            let s: Surface = text.parse().unwrap_or_default();
            assert_eq!(s.to_string(), text);
            let json = serde_json::to_string(&s).unwrap_or_default();
            assert_eq!(serde_json::from_str::<Surface>(&json).ok(), Some(s));
            assert!(pattern(text), "{text}");
        }
        let long = format!("device:{}", "d".repeat(65));
        for text in [
            "",
            "cloud",
            "device:",
            "device:a b",
            "external:gemini",
            "external",
            "external:codex@",
            "external:codex@a b",
            "a2a:",
            "a2a:a.b",
            "a2a:a b",
            long.as_str(),
        ] {
            let err = text.parse::<Surface>().unwrap_err().to_string();
            assert!(err.contains(&format!("`{text}`")), "{err}");
            assert!(!pattern(text), "{text}");
        }
        // A spec without a surface is local, and a local one is not written.
        let spec: OperationSpec = serde_json::from_str("{}").unwrap_or_default();
        assert_eq!(spec.surface, Surface::Local);
        let json = serde_json::to_value(&spec).unwrap_or_default();
        assert!(json.get("surface").is_none());
    }
}
