//! Tool manifests and the reversible tool-name codec.
//!
//! Models see one flat function name per tool API. rein names it `identifier__api`, restricted
//! to `[a-zA-Z0-9_-]{1,64}`; a component with other characters, or a name that would be too
//! long, is replaced by `x` + 12 hex digits of a stable hash. Names are resolved back through a
//! [`ToolNameIndex`] built from the manifests, which is why the codec lives here rather than in
//! the context crate: the brain must resolve names to give feedback listing the exact ones.

use crate::intervention::InterventionConfig;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Tool manifests by identifier.
pub type ToolManifestMap = BTreeMap<String, Arc<ToolManifest>>;

/// Maximum function-name length accepted by every major provider.
pub const TOOL_NAME_MAX_LEN: usize = 64;
/// Separator between identifier and api in a model-facing name.
pub const TOOL_NAME_SEPARATOR: &str = "__";

/// Where a tool comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Shipped with rein.
    #[default]
    Builtin,
    /// Served by an MCP server.
    Mcp,
    /// Executed on a connected device.
    Device,
    /// Defined by the embedding application.
    Custom,
}

/// One callable function of a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolApi {
    /// Function name, unique within the tool.
    pub name: String,
    /// What it does (shown to the model).
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
    /// Per-API approval policy; overrides the manifest's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<InterventionConfig>,
    /// What one call costs (a paid search API, say), charged to the operation's budget when
    /// the tool itself reports no cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::usage::Usd>,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// A tool: a named group of APIs with shared metadata and policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolManifest {
    /// Stable identifier (`calculator`, `local-system`, `mcp-github`).
    pub identifier: String,
    /// Origin.
    #[serde(default)]
    pub kind: ToolKind,
    /// Human title.
    #[serde(default)]
    pub title: String,
    /// Human description.
    #[serde(default)]
    pub description: String,
    /// Instructions added to the system prompt while the tool is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// The callable functions.
    #[serde(default)]
    pub apis: Vec<ToolApi>,
    /// Default approval policy for every API of this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<InterventionConfig>,
}

impl ToolManifest {
    /// The API called `name`.
    pub fn api(&self, name: &str) -> Option<&ToolApi> {
        self.apis.iter().find(|a| a.name == name)
    }
}

/// How a tool's side effects may be repeated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// No side effects: re-run freely.
    Pure,
    /// Side effects keyed by an idempotency key: re-run with the same key.
    Idempotent,
    /// Must not run twice: an interrupted run is settled, not repeated.
    #[default]
    AtMostOnce,
}

/// Where a tool execution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    /// Recorded, not started.
    Pending,
    /// Started; if found so after a crash, it may have had effects.
    Running,
    /// Finished successfully.
    Succeeded,
    /// Finished with an error.
    Failed,
    /// Settled without a result after a crash or cancellation.
    Interrupted,
}

/// One tool execution as a host records it: what ran, its effect class and how it ended. A
/// tool port returns it with the call's output, and the step carries it to its commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolExecution {
    /// Operation.
    pub operation_id: crate::OperationId,
    /// The call.
    pub tool_call_id: String,
    /// Index of the step that ran it.
    pub step_index: u64,
    /// `identifier/api`.
    pub tool: String,
    /// Effect class.
    pub effect: Effect,
    /// Status.
    pub status: ExecStatus,
    /// Result text.
    pub result: Option<String>,
    /// The outside job the call started and waits for (a video render's operation name),
    /// recorded as soon as it exists: a run of the call found running with one waits for that
    /// job instead of being settled as interrupted. Once recorded it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// Identifier of the meta-tool that activates tools under progressive disclosure.
pub const ACTIVATE_TOOLS: &str = "tools";
/// Identifier of the meta-tool that activates skills: like [`ACTIVATE_TOOLS`], always offered
/// in full, since it is how the listed skills are reached.
pub const ACTIVATE_SKILLS: &str = "skills";

/// Whether the model is sent `identifier`'s full schemas. Without progressive disclosure
/// (`always` is `None`) every tool but the meta-tool is; with it, only the tools in `always`,
/// the meta-tool and the tools the model activated are; the rest are only listed by name.
pub fn schemas_offered(
    identifier: &str,
    always: Option<&[String]>,
    activated: &[ActivatedTool],
) -> bool {
    match always {
        None => identifier != ACTIVATE_TOOLS,
        Some(always) => {
            identifier == ACTIVATE_TOOLS
                || identifier == ACTIVATE_SKILLS
                || always.iter().any(|a| a == identifier)
                || activated.iter().any(|a| a.identifier == identifier)
        }
    }
}

/// A tool activated for the rest of an operation (by discovery, mention or device).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivatedTool {
    /// Tool identifier.
    pub identifier: String,
    /// Step at which it was activated.
    pub activated_at_step: u32,
    /// Why: `discovery`, `mention`, `device`.
    pub source: String,
}

/// A skill admitted into an operation's calls: its instructions, as read when it was activated
/// (kept in the state, so a resumed operation admits the same text in any process).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivatedSkill {
    /// The skill's name.
    pub name: String,
    /// The Markdown body of its `SKILL.md`, front matter removed.
    pub body: String,
    /// The folder it was read from; its resource files are readable there (read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Tools the skill asks to use without approval (`identifier` or `identifier/api`); they
    /// never widen the operation's allow-list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// Step at which it was activated (0: from the start).
    pub activated_at_step: u32,
    /// Why: `model` (the `skills` tool), `spec` (the agent or request named it), `user`.
    pub source: String,
}

/// How an active skill's instructions read in a request: its body in a `<skill>` block. The
/// `skills__activate` result carries it, and the context pipeline looks for it there before
/// it puts the block at the head of a request.
pub fn skill_block(name: &str, body: &str) -> String {
    format!("<skill name=\"{name}\">\n{}\n</skill>", body.trim())
}

/// FNV-1a, 64 bit: stable across Rust releases and platforms (unlike `DefaultHasher`), so
/// values derived from it may be stored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

fn fnv1a64(s: &str) -> u64 {
    Fnv::new().bytes(s.as_bytes()).finish()
}

fn hashed(component: &str) -> String {
    format!("x{:012x}", fnv1a64(component) & 0xffff_ffff_ffff)
}

fn is_safe(component: &str) -> bool {
    !component.is_empty()
        && component
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `identifier` can open a function name as it is: Gemini requires a name to start
/// with a letter or an underscore.
fn opens_a_name(identifier: &str) -> bool {
    is_safe(identifier)
        && identifier
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
}

/// The model-facing function name for `identifier` + `api`: letters, digits, `_` and `-`,
/// starting with a letter or `_`, at most [`TOOL_NAME_MAX_LEN`] bytes (what OpenAI,
/// Anthropic and Gemini all take); a component that cannot be used as it is becomes a hash.
pub fn mangle(identifier: &str, api: &str) -> String {
    let id = if opens_a_name(identifier) {
        identifier.to_owned()
    } else {
        hashed(identifier)
    };
    let mut ap = if is_safe(api) {
        api.to_owned()
    } else {
        hashed(api)
    };
    let fits =
        |i: &str, a: &str| i.len() + TOOL_NAME_SEPARATOR.len() + a.len() <= TOOL_NAME_MAX_LEN;
    if !fits(&id, &ap) {
        ap = hashed(api);
    }
    let id = if fits(&id, &ap) {
        id
    } else {
        hashed(identifier)
    };
    format!("{id}{TOOL_NAME_SEPARATOR}{ap}")
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Resolves model-sent tool names back to `(identifier, api)`.
#[derive(Clone, Debug, Default)]
pub struct ToolNameIndex {
    by_name: HashMap<String, (String, String)>,
    by_api: HashMap<String, Vec<(String, String)>>,
    by_squashed: HashMap<String, Vec<String>>,
    names: Vec<String>,
}

/// Resolve `raw` against `map`: an exact `identifier__api` of a known tool is found directly;
/// anything else (hashed components, bare or garbled names) goes through a full index.
pub fn resolve_name(
    map: &BTreeMap<String, Arc<ToolManifest>>,
    raw: &str,
) -> Option<(String, String)> {
    let mut rest = raw;
    let mut offset = 0;
    while let Some(pos) = rest.find(TOOL_NAME_SEPARATOR) {
        let (id, api) = (
            &raw[..offset + pos],
            &raw[offset + pos + TOOL_NAME_SEPARATOR.len()..],
        );
        // `raw` is `id__api` by construction, so it is the mangled name exactly when no
        // component needed hashing and it fits.
        if let Some(m) = map.get(id)
            && m.api(api).is_some()
            && opens_a_name(id)
            && is_safe(api)
            && raw.len() <= TOOL_NAME_MAX_LEN
        {
            return Some((id.to_owned(), api.to_owned()));
        }
        offset += pos + TOOL_NAME_SEPARATOR.len();
        rest = &raw[offset..];
    }
    ToolNameIndex::from_map(map).resolve(raw)
}

impl ToolNameIndex {
    /// Index every API of `manifests`.
    pub fn new<'a>(manifests: impl IntoIterator<Item = &'a ToolManifest>) -> Self {
        let mut idx = Self::default();
        for m in manifests {
            for api in &m.apis {
                let name = mangle(&m.identifier, &api.name);
                let target = (m.identifier.clone(), api.name.clone());
                idx.by_api
                    .entry(api.name.clone())
                    .or_default()
                    .push(target.clone());
                idx.by_squashed
                    .entry(squash(&name))
                    .or_default()
                    .push(name.clone());
                idx.names.push(name.clone());
                idx.by_name.insert(name, target);
            }
        }
        idx.names.sort();
        idx
    }

    /// Index the manifests of a state's manifest map.
    pub fn from_map(map: &BTreeMap<String, Arc<ToolManifest>>) -> Self {
        Self::new(map.values().map(|m| m.as_ref()))
    }

    /// Every model-facing name, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Resolve a name: exact mangled name first, then a bare API name that is unique across
    /// tools, then a unique match ignoring case and punctuation (models sometimes mangle the
    /// separator). `None` when nothing, or more than one tool, matches.
    pub fn resolve(&self, raw: &str) -> Option<(String, String)> {
        if let Some(t) = self.by_name.get(raw) {
            return Some(t.clone());
        }
        if let Some(targets) = self.by_api.get(raw)
            && targets.len() == 1
        {
            return targets.first().cloned();
        }
        match self.by_squashed.get(&squash(raw)).map(Vec::as_slice) {
            Some([only]) => self.by_name.get(only).cloned(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::manifest;

    #[test]
    fn names_are_provider_safe_and_reversible() {
        let long = "a".repeat(80);
        let ms = [
            manifest("calculator", &["add"]),
            manifest("mcp.github/server", &["create issue"]),
            manifest(&long, &[&long]),
            manifest("3d-printer", &["print"]),
            manifest("-dash", &["x"]),
        ];
        let idx = ToolNameIndex::new(&ms);
        for m in &ms {
            for api in &m.apis {
                let name = mangle(&m.identifier, &api.name);
                assert!(name.len() <= TOOL_NAME_MAX_LEN, "{name}");
                assert!(opens_a_name(&name), "{name}");
                assert_eq!(
                    idx.resolve(&name),
                    Some((m.identifier.clone(), api.name.clone()))
                );
            }
        }
        assert_eq!(mangle("calculator", "add"), "calculator__add");
    }

    #[test]
    fn bare_and_squashed_names_resolve_only_when_unique() {
        let ms = [
            manifest("calculator", &["add", "sub"]),
            manifest("math", &["add"]),
        ];
        let idx = ToolNameIndex::new(&ms);
        assert_eq!(
            idx.resolve("sub"),
            Some(("calculator".into(), "sub".into()))
        );
        assert_eq!(idx.resolve("add"), None, "ambiguous bare name");
        assert_eq!(
            idx.resolve("Calculator~~Sub"),
            Some(("calculator".into(), "sub".into()))
        );
        assert_eq!(idx.resolve("nope"), None);
    }
}
