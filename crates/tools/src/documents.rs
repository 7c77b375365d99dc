//! The agent's long-lived documents: `memory` (facts about the user: remember, recall, forget)
//! and `notes` (a notebook: create, read, update, list). Both live in the host's store behind
//! [`Documents`], scoped per user and agent by the tool context. With an [`Embedder`], memories
//! are embedded as they are stored and recalled by meaning as well as by words ([`search`]).

use crate::{Tool, ToolContext};
use chrono::Utc;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::document::{Document, DocumentKind, Embedding, rank_hybrid};
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::ids::MessageId;
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::sync::Arc;

/// A document store's failure: the store's own error, kept as the source.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DocumentsError(pub Box<dyn std::error::Error + Send + Sync>);

/// An embedder's failure: the model runtime's own error, kept as the source.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct EmbedError(pub Box<dyn std::error::Error + Send + Sync>);

/// Where documents are kept (rein-operation adapts its store).
pub trait Documents: Send + Sync {
    /// Insert or replace.
    fn put<'a>(&'a self, doc: &'a Document) -> BoxFuture<'a, Result<(), DocumentsError>>;
    /// One document.
    fn get<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Document>, DocumentsError>>;
    /// Newest first, at most `limit`.
    fn list<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Document>, DocumentsError>>;
    /// Delete; whether it existed.
    fn delete<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, DocumentsError>>;
}

/// Turns text into vectors (rein-operation adapts a model provider's embeddings API).
pub trait Embedder: Send + Sync {
    /// `provider/model`, stored with every vector it makes.
    fn model(&self) -> &str;
    /// One vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;
}

/// The embedding of `text`; `None` without an embedder, or when embedding fails (logged):
/// a memory is still stored and still found by its words.
pub async fn embed_one(embedder: Option<&dyn Embedder>, text: &str) -> Option<Embedding> {
    let embedder = embedder?;
    match embedder.embed(&[text.to_owned()]).await {
        Ok(mut vectors) if vectors.len() == 1 => Some(Embedding {
            model: embedder.model().to_owned(),
            vector: vectors.swap_remove(0),
        }),
        Ok(vectors) => {
            tracing::warn!(
                model = embedder.model(),
                got = vectors.len(),
                "the embedder returned the wrong number of vectors; keywords only"
            );
            None
        }
        Err(e) => {
            tracing::warn!(model = embedder.model(), error = %e, "embedding failed; keywords only");
            None
        }
    }
}

/// The documents of `kind` in `scope` most relevant to `query` (the newest
/// [`RECALL_WINDOW`] are considered): by words, and by meaning when an embedder is given.
pub async fn search(
    docs: &dyn Documents,
    embedder: Option<&dyn Embedder>,
    kind: DocumentKind,
    scope: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<Document>, DocumentsError> {
    let all = docs.list(kind, scope, RECALL_WINDOW).await?;
    if all.is_empty() {
        return Ok(all);
    }
    let q = embed_one(embedder, query).await;
    Ok(rank_hybrid(all, query, q.as_ref(), limit))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    /// One fact about the user
    #[schemars(length(min = 1, max = 2000))]
    fact: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// Keywords to look for
    query: String,
    /// At most this many facts (default 10)
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    /// The id returned when it was stored
    #[schemars(length(min = 1))]
    id: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    /// Title
    #[schemars(length(min = 1, max = 200))]
    title: String,
    /// Content
    content: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    /// The note's id
    #[schemars(length(min = 1))]
    id: String,
    /// A new title (unchanged when absent)
    #[schemars(length(min = 1, max = 200))]
    title: Option<String>,
    /// The new content
    content: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// Documents considered by one recall (the newest of the scope).
pub const RECALL_WINDOW: usize = 1_000;

fn api(name: &str, description: &str, parameters: Value) -> ToolApi {
    ToolApi {
        name: name.into(),
        description: description.into(),
        parameters,
        intervention: None,
        cost: None,
    }
}

fn manifest(identifier: &str, title: &str, description: &str, apis: Vec<ToolApi>) -> ToolManifest {
    ToolManifest {
        identifier: identifier.into(),
        kind: ToolKind::Builtin,
        title: title.into(),
        description: description.into(),
        system_role: None,
        apis,
        intervention: None,
    }
}

fn new_id() -> String {
    MessageId::new().to_string()
}

fn store_failed(e: DocumentsError) -> PortError {
    PortError::new(rein_core::failure::Fault::Store, e.to_string())
}

/// `memory`: what the agent knows about the user across conversations.
pub struct Memory {
    docs: Arc<dyn Documents>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl Memory {
    /// Memories kept in `docs`, recalled by keywords.
    pub fn new(docs: Arc<dyn Documents>) -> Self {
        Self {
            docs,
            embedder: None,
        }
    }

    /// Also embed memories with `embedder` and recall them by meaning.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }
}

impl Tool for Memory {
    fn manifest(&self) -> ToolManifest {
        manifest(
            "memory",
            "Memory",
            "Remember facts about the user across conversations.",
            vec![
                api(
                    "remember",
                    "Store one durable fact about the user (a preference, a detail they shared). One fact per call.",
                    crate::parameters_of::<RememberArgs>(),
                ),
                api(
                    "recall",
                    "Find remembered facts by keywords.",
                    crate::parameters_of::<RecallArgs>(),
                ),
                api(
                    "forget",
                    "Delete a remembered fact by id.",
                    crate::parameters_of::<IdArgs>(),
                ),
            ],
        )
    }

    fn effect(&self, api: &str) -> Effect {
        if api == "recall" {
            Effect::Pure
        } else {
            Effect::AtMostOnce
        }
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let scope = cx.scope.as_str();
            let kind = DocumentKind::Memory;
            match api {
                "remember" => {
                    let a = tool_args!("memory/remember", args, RememberArgs);
                    if a.fact.trim().is_empty() {
                        return Ok(ToolOutput::failed("The fact to remember is empty."));
                    }
                    let now = Utc::now();
                    let body = a.fact.trim().to_owned();
                    let embedding = embed_one(self.embedder.as_deref(), &body).await;
                    let doc = Document {
                        kind,
                        scope: scope.to_owned(),
                        id: new_id(),
                        title: String::new(),
                        body,
                        created_at: now,
                        updated_at: now,
                        embedding,
                    };
                    self.docs.put(&doc).await.map_err(store_failed)?;
                    Ok(ToolOutput::ok(format!("Remembered (id {}).", doc.id)))
                }
                "recall" => {
                    let a = tool_args!("memory/recall", args, RecallArgs);
                    let limit = a.limit.unwrap_or(10) as usize;
                    let found = search(
                        self.docs.as_ref(),
                        self.embedder.as_deref(),
                        kind,
                        scope,
                        &a.query,
                        limit,
                    )
                    .await
                    .map_err(store_failed)?;
                    if found.is_empty() {
                        return Ok(ToolOutput::ok("Nothing remembered matches."));
                    }
                    Ok(ToolOutput::ok(
                        found
                            .iter()
                            .map(|d| format!("- {} (id {})", d.body, d.id))
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ))
                }
                "forget" => {
                    let id = tool_args!("memory/forget", args, IdArgs).id;
                    if self
                        .docs
                        .delete(kind, scope, &id)
                        .await
                        .map_err(store_failed)?
                    {
                        Ok(ToolOutput::ok(format!("Forgot {id}.")))
                    } else {
                        Ok(ToolOutput::failed(format!("No memory with id {id}.")))
                    }
                }
                other => Ok(ToolOutput::failed(format!("memory has no API `{other}`"))),
            }
        }
        .boxed()
    }
}

/// `notes`: the agent's notebook.
pub struct Notes {
    docs: Arc<dyn Documents>,
}

impl Notes {
    /// Notes kept in `docs`.
    pub fn new(docs: Arc<dyn Documents>) -> Self {
        Self { docs }
    }
}

impl Tool for Notes {
    fn manifest(&self) -> ToolManifest {
        manifest(
            "notes",
            "Notes",
            "Keep documents across conversations.",
            vec![
                api(
                    "create",
                    "Create a note; returns its id.",
                    crate::parameters_of::<CreateArgs>(),
                ),
                api(
                    "read",
                    "Read a note by id.",
                    crate::parameters_of::<IdArgs>(),
                ),
                api(
                    "update",
                    "Replace a note's content (and optionally its title).",
                    crate::parameters_of::<UpdateArgs>(),
                ),
                api(
                    "list",
                    "List notes (id and title), newest first.",
                    crate::parameters_of::<NoArgs>(),
                ),
            ],
        )
    }

    fn effect(&self, api: &str) -> Effect {
        match api {
            "read" | "list" => Effect::Pure,
            // Replacing content with the same content twice leaves the same note.
            "update" => Effect::Idempotent,
            _ => Effect::AtMostOnce,
        }
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let scope = cx.scope.as_str();
            let kind = DocumentKind::Note;
            match api {
                "create" => {
                    let a = tool_args!("notes/create", args, CreateArgs);
                    let now = Utc::now();
                    let doc = Document {
                        kind,
                        scope: scope.to_owned(),
                        id: new_id(),
                        title: a.title,
                        body: a.content,
                        created_at: now,
                        updated_at: now,
                        embedding: None,
                    };
                    self.docs.put(&doc).await.map_err(store_failed)?;
                    Ok(ToolOutput::ok(format!(
                        "Created note {} ({}).",
                        doc.id, doc.title
                    )))
                }
                "read" => {
                    let id = tool_args!("notes/read", args, IdArgs).id;
                    match self
                        .docs
                        .get(kind, scope, &id)
                        .await
                        .map_err(store_failed)?
                    {
                        Some(d) => Ok(ToolOutput::ok(format!("# {}\n\n{}", d.title, d.body))),
                        None => Ok(ToolOutput::failed(format!("No note with id {id}."))),
                    }
                }
                "update" => {
                    let a = tool_args!("notes/update", args, UpdateArgs);
                    let Some(mut d) = self
                        .docs
                        .get(kind, scope, &a.id)
                        .await
                        .map_err(store_failed)?
                    else {
                        return Ok(ToolOutput::failed(format!("No note with id {}.", a.id)));
                    };
                    if let Some(t) = a.title {
                        d.title = t;
                    }
                    d.body = a.content;
                    d.updated_at = Utc::now();
                    self.docs.put(&d).await.map_err(store_failed)?;
                    Ok(ToolOutput::ok(format!("Updated note {}.", d.id)))
                }
                "list" => {
                    tool_args!("notes/list", args, NoArgs);
                    let all = self
                        .docs
                        .list(kind, scope, 200)
                        .await
                        .map_err(store_failed)?;
                    if all.is_empty() {
                        return Ok(ToolOutput::ok("No notes yet."));
                    }
                    Ok(ToolOutput::ok(
                        all.iter()
                            .map(|d| format!("- {}: {}", d.id, d.title))
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ))
                }
                other => Ok(ToolOutput::failed(format!("notes has no API `{other}`"))),
            }
        }
        .boxed()
    }
}
