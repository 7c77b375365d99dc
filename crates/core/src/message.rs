//! Conversation messages and tool calls: the provider-neutral transcript an operation works on.

use crate::ids::MessageId;
use crate::usage::TokenUsage;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who authored a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The human (or the task that stands in for one).
    User,
    /// The model.
    Assistant,
    /// The result of one tool call.
    Tool,
}

/// One part of a message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by URL (`https:` or a `data:` URL with base64 bytes).
    Image {
        /// Where the image is.
        url: String,
        /// MIME type when known (`image/png`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// Provider detail hint (`low`, `high`, `auto`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A file the user attached: its text when it is text, otherwise only what it is. Models
    /// read it as text (see [`ContentPart::file_text`]); nothing else is sent.
    File {
        /// File name as the user gave it.
        name: String,
        /// MIME type when known (`text/csv`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// The contents, for a UTF-8 text file; `None` for anything else.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Size in bytes.
        #[serde(default)]
        size: u64,
    },
}

impl ContentPart {
    /// A [`ContentPart::File`] as the text a model reads: the contents inside a `<file>` block,
    /// cut to `limit` characters with a note saying so; for a file that is not text, a note
    /// naming it. `None` for other parts.
    pub fn file_text(&self, limit: Option<usize>) -> Option<String> {
        let ContentPart::File {
            name,
            media_type,
            text,
            size,
        } = self
        else {
            return None;
        };
        let kind = media_type.as_deref().unwrap_or("unknown type");
        let Some(text) = text else {
            return Some(format!(
                "[A file was attached: {name} ({kind}, {size} bytes). It is not text, so its contents are not shown.]"
            ));
        };
        let cut = limit
            .and_then(|l| text.char_indices().nth(l))
            .map(|(at, _)| at);
        let shown = &text[..cut.unwrap_or(text.len())];
        let mut out = format!("<file name=\"{name}\" type=\"{kind}\">\n{shown}");
        if !shown.ends_with('\n') {
            out.push('\n');
        }
        if cut.is_some() {
            let total = text.chars().count();
            let kept = shown.chars().count();
            out.push_str(&format!(
                "[... truncated: the first {kept} of {total} characters are shown]\n"
            ));
        }
        out.push_str("</file>");
        Some(out)
    }
}

/// Model reasoning attached to an assistant message. Providers that sign their reasoning
/// (Anthropic) need the signature sent back unchanged on the next request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Reasoning {
    /// Visible reasoning text (may be a summary).
    #[serde(default)]
    pub text: String,
    /// Opaque signature to round-trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Redacted (encrypted) reasoning blocks to round-trip.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// OpenAI Responses: the reasoning item as it came (its id and encrypted content), sent back
    /// unchanged before the turn's output, so a stateless conversation keeps the reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<EncryptedReasoning>,
}

/// A reasoning item the provider keeps only in encrypted form (OpenAI Responses with
/// `store: false`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct EncryptedReasoning {
    /// The item's id (`rs_…`).
    pub id: String,
    /// Its encrypted content.
    pub content: String,
}

/// A tool call the model asked for. Its strings are shared (`Arc<str>`): a call is copied into
/// the assistant message, events, instructions and phase payloads, and never changes.
///
/// `identifier` names the tool (manifest) and `api` the function inside it. When the model
/// named a tool that could not be resolved against the manifests, `identifier` is empty and
/// `api` holds the name exactly as the model sent it, so the call can still be answered
/// (with a rejection) and replayed to the provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ToolCall {
    /// The provider's tool call id; every tool result refers to it.
    pub id: Arc<str>,
    /// Tool (manifest) identifier; empty when unresolved.
    pub identifier: Arc<str>,
    /// API name within the tool; the raw model-sent name when unresolved.
    pub api: Arc<str>,
    /// Arguments exactly as the model produced them (a JSON string, possibly malformed).
    pub arguments: Arc<str>,
    /// Provider signature to send back unchanged (Gemini thought signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<Arc<str>>,
}

impl ToolCall {
    /// A resolved call.
    pub fn new(
        id: impl Into<Arc<str>>,
        identifier: impl Into<Arc<str>>,
        api: impl Into<Arc<str>>,
        arguments: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            id: id.into(),
            identifier: identifier.into(),
            api: api.into(),
            arguments: arguments.into(),
            thought_signature: None,
        }
    }

    /// A call whose name matched no available tool.
    pub fn unresolved(
        id: impl Into<Arc<str>>,
        raw_name: impl Into<Arc<str>>,
        arguments: impl Into<Arc<str>>,
    ) -> Self {
        Self::new(id, "", raw_name, arguments)
    }

    /// Whether the name resolved to a known tool.
    pub fn is_resolved(&self) -> bool {
        !self.identifier.is_empty()
    }

    /// `identifier/api`: the key used by allow-lists, usage accounting and intervention rules.
    pub fn key(&self) -> String {
        if self.is_resolved() {
            format!("{}/{}", self.identifier, self.api)
        } else {
            self.api.to_string()
        }
    }
}

crate::named_enum! {
    /// Outcome of a tool call as recorded on its tool message.
    pub enum ToolStatus as "tool_status" {
        /// Waiting for a human decision.
        Pending = "pending",
        /// Approved by a human, not yet executed.
        Approved = "approved",
        /// Ran and succeeded.
        Succeeded = "succeeded",
        /// Ran (or could not run) and failed; the content says why.
        Failed = "failed",
        /// A human rejected it.
        Rejected = "rejected",
        /// Settled as aborted when the operation was cancelled.
        Aborted = "aborted",
        /// Refused by policy (security blacklist, scope, unknown name) without running.
        Blocked = "blocked",
    }
}

/// What kind of message this is beyond its role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// An ordinary message.
    #[default]
    Normal,
    /// A summary that replaced older messages during context compression.
    CompressionSummary,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Message {
    /// Time-ordered id.
    pub id: MessageId,
    /// Author.
    pub role: Role,
    /// Content parts, in order.
    #[serde(default)]
    pub content: Vec<ContentPart>,
    /// Reasoning (assistant only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Tool calls requested by this assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: the call's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_status: Option<ToolStatus>,
    /// Parent in the conversation tree (a tool message's parent is the assistant that called it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<MessageId>,
    /// Normal or compression summary.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kind: MessageKind,
    /// Model that produced an assistant message (`provider/model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For a compression summary: the messages it replaces in what the model sees. They stay
    /// in the conversation's history; [`model_view`] drops them when a conversation continues.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summarizes: Vec<MessageId>,
    /// The agent that wrote it, when it is not the agent now answering (group chats,
    /// sub-agent tasks): the context engine relabels such messages so the model can tell
    /// voices apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Tokens this message cost to produce (assistant only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// For an external agent's answer: the agent's own session it came from, so the next turn
    /// of the conversation resumes that session instead of starting over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_session: Option<ExternalSession>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// An external agent CLI's session (`claude --resume ID`, `codex exec resume ID`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ExternalSession {
    /// The agent kind's name (`claude-code`, `codex`, `jsonl`).
    pub kind: String,
    /// The session id the CLI reported.
    pub id: String,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Message {
    /// A message of `role` with one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            id: MessageId::new(),
            role,
            content: vec![ContentPart::Text { text: text.into() }],
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_status: None,
            parent_id: None,
            kind: MessageKind::Normal,
            model: None,
            summarizes: Vec::new(),
            author: None,
            usage: None,
            external_session: None,
            created_at: Utc::now(),
        }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// A tool result answering `call`, child of `parent`.
    pub fn tool_result(
        call: &ToolCall,
        parent: Option<MessageId>,
        status: ToolStatus,
        content: impl Into<String>,
    ) -> Self {
        let mut m = Self::text(Role::Tool, content);
        m.tool_call_id = Some(call.id.to_string());
        m.tool_status = Some(status);
        m.parent_id = parent;
        m
    }

    /// The concatenated text parts.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// Replace the content with one text part.
    pub fn set_text(&mut self, text: impl Into<String>) {
        self.content = vec![ContentPart::Text { text: text.into() }];
    }
}

/// A conversation's history (oldest first) as the model should see it: messages a compression
/// summary replaced are dropped, and each summary stands where the earliest message it replaced
/// stood. Summaries of summaries work the same way (the older summary is among the replaced).
pub fn model_view(history: Vec<Message>) -> Vec<Message> {
    use std::collections::{HashMap, HashSet};
    let replaced: HashSet<MessageId> = history
        .iter()
        .flat_map(|m| m.summarizes.iter().copied())
        .collect();
    if replaced.is_empty() {
        return history;
    }
    let position: HashMap<MessageId, usize> =
        history.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
    // Live summaries keyed by the history position they stand at.
    let mut anchored: HashMap<usize, Message> = HashMap::new();
    let mut orphans = Vec::new();
    let mut rest = Vec::with_capacity(history.len());
    for m in history {
        if m.summarizes.is_empty() || replaced.contains(&m.id) {
            rest.push(Some(m));
            continue;
        }
        let anchor = m.summarizes.iter().filter_map(|id| position.get(id)).min();
        match anchor {
            Some(&at) => {
                anchored.insert(at, m);
            }
            // Everything it replaced is gone from the history; its content survives in it.
            None => orphans.push(m),
        }
        rest.push(None);
    }
    let mut out = Vec::with_capacity(rest.len());
    for (i, m) in rest.into_iter().enumerate() {
        if let Some(summary) = anchored.remove(&i) {
            out.push(summary);
        }
        if let Some(m) = m
            && !replaced.contains(&m.id)
        {
            out.push(m);
        }
    }
    out.extend(orphans);
    out
}

#[cfg(test)]
mod model_view_tests {
    use super::*;

    fn texts(v: &[Message]) -> Vec<String> {
        v.iter().map(Message::text_content).collect()
    }

    #[test]
    fn summaries_replace_what_they_summarize_even_when_nested() {
        let (u1, a1, u2, a2) = (
            Message::user("u1"),
            Message::assistant("a1"),
            Message::user("u2"),
            Message::assistant("a2"),
        );
        let mut s1 = Message::user("S1");
        s1.kind = MessageKind::CompressionSummary;
        s1.summarizes = vec![u1.id, a1.id];
        let a3 = Message::assistant("a3");
        let history = vec![u1, a1, u2.clone(), a2.clone(), s1.clone(), a3.clone()];
        assert_eq!(
            texts(&model_view(history.clone())),
            ["S1", "u2", "a2", "a3"]
        );

        let mut s2 = Message::user("S2");
        s2.kind = MessageKind::CompressionSummary;
        s2.summarizes = vec![s1.id, u2.id];
        let mut nested = history;
        nested.push(s2);
        assert_eq!(texts(&model_view(nested)), ["S2", "a2", "a3"]);

        let plain = vec![Message::user("x"), Message::assistant("y")];
        assert_eq!(texts(&model_view(plain)), ["x", "y"]);
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    fn file(text: Option<&str>) -> ContentPart {
        ContentPart::File {
            name: "notes.md".into(),
            media_type: Some("text/markdown".into()),
            text: text.map(str::to_owned),
            size: 42,
        }
    }

    #[test]
    fn a_text_file_is_inlined_and_cut_at_the_limit_on_a_char_boundary() {
        assert_eq!(
            file(Some("héllo\nworld")).file_text(None).unwrap(),
            "<file name=\"notes.md\" type=\"text/markdown\">\nhéllo\nworld\n</file>"
        );
        let cut = file(Some("héllo\nworld")).file_text(Some(3)).unwrap();
        assert_eq!(
            cut,
            "<file name=\"notes.md\" type=\"text/markdown\">\nhél\n[... truncated: the first 3 of 11 characters are shown]\n</file>"
        );
        // At or under the limit nothing is cut.
        assert!(
            !file(Some("abc"))
                .file_text(Some(3))
                .unwrap()
                .contains("truncated")
        );
    }

    #[test]
    fn a_binary_file_is_named_not_shown_and_other_parts_are_not_files() {
        let note = file(None).file_text(Some(10)).unwrap();
        assert!(
            note.contains("notes.md (text/markdown, 42 bytes)"),
            "{note}"
        );
        assert!(
            ContentPart::Text { text: "x".into() }
                .file_text(None)
                .is_none()
        );
        let json = serde_json::to_value(file(Some("a"))).unwrap();
        assert_eq!(json["type"], "file");
        let back: ContentPart = serde_json::from_value(json).unwrap();
        assert_eq!(back, file(Some("a")));
    }
}
