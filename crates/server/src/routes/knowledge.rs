//! `/v1/knowledge`: the caller's knowledge bases. Create one (optionally with an embedding
//! model), upload files to it (multipart; each file at most 10 MiB, a request at most
//! [`UPLOAD_LIMIT`]; a file over the limit refuses the whole upload and nothing is recorded),
//! follow the ingestion job the upload recorded (`/v1/knowledge-jobs/{id}`, run by the
//! server's ingester, [`crate::knowledge`]), search it, delete it. Operations name bases in
//! `knowledge` (or through their agent) and search them with `knowledge.search`.

use crate::AppState;
use crate::api::{Api, Input, Method, NoContent, OperationDoc, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, KnowledgeJobPath, KnowledgePath, Params};
use axum::Json;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use rein_operation::knowledge::ingest::MAX_FILE_BYTES;
use rein_operation::knowledge::retrieve;
use rein_store::{
    IngestJob, Knowledge, KnowledgeBase, KnowledgeFile, KnowledgeJobs, NewJobFile, User,
};
use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The most one upload request may carry.
pub const UPLOAD_LIMIT: usize = 64 * 1024 * 1024;

/// `POST /v1/knowledge` body.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBase {
    /// Its name (1-64 letters, digits, `-`, `_`), unique among yours.
    #[schemars(regex(pattern = rein_operation::profile::AGENT_NAME_PATTERN))]
    pub name: String,
    /// Embed its chunks with this model (`provider/model`) so search finds meaning as well as
    /// words; without one, search is by full text only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(rein_operation::profile::MODEL_PATTERN))]
    pub embed_model: Option<String>,
}

/// `PATCH /v1/knowledge/{name}` body.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetBase {
    /// Its embedding model from now on (`provider/model`: every chunk is embedded again with
    /// it, in the background), or `null` for full-text search only (the vectors are deleted).
    /// Required: an empty body changes nothing by mistake.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(required, extend("nullable" = true))]
    #[schemars(pattern(rein_operation::profile::MODEL_PATTERN))]
    pub embed_model: Option<String>,
}

/// `DELETE /v1/knowledge/{name}/files` query.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileQuery {
    /// The file, as it was added (its path in the base).
    #[schemars(length(min = 1, max = 512))]
    pub path: String,
}

/// A knowledge base as listed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BaseOut {
    /// Its name.
    pub name: String,
    /// Its embedding model (none: full-text search only).
    pub embed_model: Option<String>,
    /// Files recorded (skipped ones included).
    pub files: u64,
    /// Chunks searchable.
    pub chunks: u64,
    /// Created.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// `GET /v1/knowledge` answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BaseList {
    /// By name.
    pub bases: Vec<BaseOut>,
}

/// `GET /v1/knowledge/{name}` answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BaseDetail {
    /// The base.
    #[serde(flatten)]
    pub base: BaseOut,
    /// Chunks with a vector of the embedding model (when it has one).
    pub embedded: Option<u64>,
    /// Its files: chunks, or why each was skipped.
    pub file_list: Vec<KnowledgeFile>,
    /// Ingestion jobs not done yet (running, or failed with why).
    pub jobs: Vec<IngestJob>,
}

/// `POST /v1/knowledge/{name}/search` body.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// What to look for (not only blanks).
    #[schemars(length(min = 1, max = 2000), pattern(r"\S"))]
    pub query: String,
    /// How many chunks (1 to 50, default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub top_k: Option<u32>,
}

/// A chunk found, with where it is.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct HitOut {
    /// `path:line` or `path:first-last`, as answers cite it.
    pub citation: String,
    /// The file.
    pub path: String,
    /// The headings it sits under.
    pub headings: Vec<String>,
    /// First line (1-based).
    pub line_start: u64,
    /// Last line.
    pub line_end: u64,
    /// Its text.
    pub text: String,
    /// Fused score (reciprocal rank; higher is better).
    pub score: f64,
}

/// `POST /v1/knowledge/{name}/search` answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SearchOut {
    /// Best first.
    pub hits: Vec<HitOut>,
    /// Set when the search was by full text only, saying why (no embedding model, or the
    /// query could not be embedded).
    pub full_text_only: Option<String>,
}

impl From<rein_store::ChunkHit> for HitOut {
    fn from(h: rein_store::ChunkHit) -> Self {
        Self {
            citation: rein_operation::knowledge::citation(&h),
            path: h.path,
            headings: h.headings,
            line_start: h.line_start,
            line_end: h.line_end,
            text: h.text,
            score: h.score,
        }
    }
}

impl From<retrieve::Retrieved> for SearchOut {
    /// What a search of one base found (its reason when it was full text only).
    fn from(found: retrieve::Retrieved) -> Self {
        Self {
            full_text_only: found.full_text_only.into_iter().next().map(|(_, why)| why),
            hits: found.hits.into_iter().map(|(_, h)| h.into()).collect(),
        }
    }
}

/// `POST /v1/knowledge/{name}/files` query: how the files are cut.
#[derive(Debug, Serialize, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    /// The most a chunk holds, in estimated tokens (default 400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 8000))]
    pub chunk_tokens: Option<u64>,
    /// What consecutive chunks of a section share, in estimated tokens (default 40).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 4000))]
    pub overlap_tokens: Option<u64>,
}

/// `GET /v1/knowledge-chunks` query: a citation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkQuery {
    /// The cited file.
    pub path: String,
    /// The cited line (the first of a range).
    pub line: u64,
}

/// `GET /v1/knowledge-chunks` answer: the chunk a citation points at.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkOut {
    /// The knowledge base it is in.
    pub base: String,
    /// The chunk.
    #[serde(flatten)]
    pub hit: HitOut,
}

/// Files of a multipart upload: parts named `files`, each with a filename (its path in the
/// base); any other part is refused.
pub struct Upload(pub Vec<(String, Vec<u8>)>);

impl FromRequest<AppState> for Upload {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let mut form = axum::extract::Multipart::from_request(req, state)
            .await
            .map_err(|r| {
                ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    crate::error_code::ApiErrorCode::UnsupportedMediaType,
                    format!("send the files as multipart/form-data: {}", r.body_text()),
                )
            })?;
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                crate::error_code::ApiErrorCode::PayloadTooLarge,
                format!(
                    "the upload is larger than {} MiB; nothing was added",
                    UPLOAD_LIMIT / (1024 * 1024)
                ),
            )
        };
        let mut files = Vec::new();
        loop {
            let field = match form.next_field().await {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(too_large()),
                Err(e) => return Err(ApiError::bad_request(e.body_text())),
            };
            if field.name() != Some("files") {
                let shown: String = field.name().unwrap_or_default().chars().take(40).collect();
                return Err(ApiError::bad_request(format!(
                    "unexpected part {shown:?}: send each file as a part named `files`"
                )));
            }
            let Some(name) = field.file_name().map(str::to_owned) else {
                return Err(ApiError::bad_request(
                    "a `files` part without a filename: the filename is its path in the base",
                ));
            };
            let path = check_path(&name)?;
            let bytes = field.bytes().await.map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    too_large()
                } else {
                    ApiError::bad_request(e.body_text())
                }
            })?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    crate::error_code::ApiErrorCode::PayloadTooLarge,
                    format!(
                        "`{path}` is larger than {} MiB; nothing was added",
                        MAX_FILE_BYTES / (1024 * 1024)
                    ),
                ));
            }
            files.push((path, bytes.to_vec()));
        }
        if files.is_empty() {
            return Err(ApiError::bad_request(
                "no files: send each as a multipart part with a filename",
            ));
        }
        Ok(Upload(files))
    }
}

impl Input for Upload {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.body = Some(json!({
            "required": true,
            "content": {"multipart/form-data": {"schema": {
                "type": "object",
                "additionalProperties": false,
                "required": ["files"],
                "properties": {"files": {"type": "array", "minItems": 1, "items": {"type": "string", "format": "binary"}}}
            }}}
        }));
        doc.error(
            400,
            "No files, or a file name that is not a path (empty, `..`, over 512 bytes)",
        );
        doc.error(
            413,
            "A file is larger than 10 MiB, or the upload than 64 MiB",
        );
        doc.error(415, "The body is not multipart/form-data");
    }
}

/// A file name as a path in the base: `/`-separated, no `..`, at most 512 bytes. A leading
/// `/` is kept (the CLI names a file by its path as given, here or through a server alike);
/// the name labels chunks and citations, it is never opened as a file here.
fn check_path(name: &str) -> Result<String, ApiError> {
    let path = name.replace('\\', "/");
    let (root, rest) = match path.strip_prefix('/') {
        Some(rest) => ("/", rest.trim_start_matches('/')),
        None => ("", path.as_str()),
    };
    let bad = rest.is_empty()
        || path.len() > 512
        || path.chars().any(char::is_control)
        || rest
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        let shown: String = name.chars().take(60).collect();
        return Err(ApiError::bad_request(format!(
            "file name {shown:?}: give a path of `/`-separated names (no `..`, at most 512 bytes)"
        )));
    }
    Ok(format!("{root}{rest}"))
}

async fn owned_base(app: &AppState, user: &User, name: &str) -> Result<KnowledgeBase, ApiError> {
    app.store
        .knowledge_base(Some(&user.id), name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no knowledge base `{name}`")))
}

async fn base_out(app: &AppState, kb: &KnowledgeBase) -> Result<BaseOut, ApiError> {
    let files = app.store.knowledge_files(&kb.id).await?;
    Ok(BaseOut {
        name: kb.name.clone(),
        embed_model: kb.embed_model.clone(),
        files: files.len() as u64,
        chunks: files.iter().map(|f| f.chunks).sum(),
        created_at: kb.created_at,
    })
}

/// Refuse an embedding model this server has no provider for, naming it.
async fn check_model(app: &AppState, user: &User, model: &str) -> Result<(), ApiError> {
    let r = rein_operation::profile::model_ref(model)
        .map_err(|e| ApiError::bad_request(format!("embed_model: {e}")))?;
    app.runner
        .host
        .models_of(Some(&user.id))
        .await?
        .provider(&r)
        .map_err(|e| ApiError::unprocessable(format!("embed_model {model}: {e}")))?;
    Ok(())
}

/// `GET /v1/knowledge`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<BaseList>, ApiError> {
    let mut bases = Vec::new();
    for kb in app.store.list_knowledge_bases(Some(&user.id)).await? {
        bases.push(base_out(&app, &kb).await?);
    }
    Ok(Json(BaseList { bases }))
}

/// `POST /v1/knowledge`.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(body): Body<CreateBase>,
) -> Result<Reply<201, BaseOut>, ApiError> {
    rein_operation::profile::check_name(&body.name).map_err(|_| {
        ApiError::bad_request(format!(
            "name `{}`: use 1-64 letters, digits, `-` or `_`",
            body.name
        ))
    })?;
    if let Some(m) = &body.embed_model {
        check_model(&app, &user, m).await?;
    }
    let kb = app
        .store
        .create_knowledge_base(Some(&user.id), &body.name)
        .await?;
    if let Some(m) = &body.embed_model {
        app.store.set_embed_model(&kb.id, Some(m)).await?;
    }
    let kb = owned_base(&app, &user, &body.name).await?;
    Ok(Reply(base_out(&app, &kb).await?))
}

/// `GET /v1/knowledge/{name}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgePath(name): KnowledgePath,
) -> Result<Json<BaseDetail>, ApiError> {
    let kb = owned_base(&app, &user, &name).await?;
    let embedded = match &kb.embed_model {
        Some(m) => Some(app.store.embedding_counts(&kb.id, m).await?.0),
        None => None,
    };
    Ok(Json(BaseDetail {
        base: base_out(&app, &kb).await?,
        embedded,
        file_list: app.store.knowledge_files(&kb.id).await?,
        jobs: app.store.ingest_jobs(&kb.id, true).await?,
    }))
}

/// `DELETE /v1/knowledge/{name}`.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgePath(name): KnowledgePath,
) -> Result<NoContent, ApiError> {
    let kb = owned_base(&app, &user, &name).await?;
    app.store.delete_knowledge_base(&kb.id).await?;
    Ok(NoContent)
}

/// `PATCH /v1/knowledge/{name}`: change its embedding model; a new one embeds every chunk
/// again, as an ingestion job of no files the server runs in the background.
pub async fn set(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgePath(name): KnowledgePath,
    Body(body): Body<SetBase>,
) -> Result<Json<BaseOut>, ApiError> {
    let kb = owned_base(&app, &user, &name).await?;
    if let Some(m) = &body.embed_model {
        check_model(&app, &user, m).await?;
    }
    app.store
        .set_embed_model(&kb.id, body.embed_model.as_deref())
        .await?;
    if body.embed_model.is_some() {
        app.store.create_ingest_job(&kb.id, 400, 40, &[]).await?;
        app.ingest.notify_one();
    }
    let kb = owned_base(&app, &user, &name).await?;
    Ok(Json(base_out(&app, &kb).await?))
}

/// `DELETE /v1/knowledge/{name}/files?path=…`: 204, or 404 when the base has no such file.
pub async fn remove_file(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgePath(name): KnowledgePath,
    Params(q): Params<FileQuery>,
) -> Result<NoContent, ApiError> {
    let kb = owned_base(&app, &user, &name).await?;
    if app.store.remove_knowledge_file(&kb.id, &q.path).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found(format!(
            "knowledge base {name} has no file `{}`",
            q.path
        )))
    }
}

/// `POST /v1/knowledge/{name}/files`.
pub async fn upload(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgePath(name): KnowledgePath,
    Params(cut): Params<UploadQuery>,
    Upload(files): Upload,
) -> Result<Reply<202, IngestJob>, ApiError> {
    let chunk_tokens = cut.chunk_tokens.unwrap_or(400);
    let overlap_tokens = cut.overlap_tokens.unwrap_or(40);
    if !(1..=8000).contains(&chunk_tokens) || overlap_tokens > 4000 {
        return Err(ApiError::bad_request(
            "chunk_tokens: 1 to 8000; overlap_tokens: at most 4000",
        ));
    }
    // An overlap as large as the chunk would repeat whole chunks: it is cut to less.
    let overlap_tokens = overlap_tokens.min(chunk_tokens / 2);
    let kb = owned_base(&app, &user, &name).await?;
    let entries: Vec<NewJobFile> = files
        .into_iter()
        .map(|(path, bytes)| NewJobFile {
            path,
            source: None,
            content: Some(bytes),
        })
        .collect();
    let job = app
        .store
        .create_ingest_job(&kb.id, chunk_tokens, overlap_tokens, &entries)
        .await?;
    app.ingest.notify_one();
    Ok(Reply(job))
}

/// An ingestion job with what happened to each of its files so far.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct JobOut {
    /// The job.
    #[serde(flatten)]
    pub job: IngestJob,
    /// Its files in order, each with its outcome once done (`null`: still to do).
    pub file_outcomes: Vec<JobFileOut>,
}

/// One file of an ingestion job.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct JobFileOut {
    /// Its name in the knowledge base.
    pub path: String,
    /// What happened to it (`null`: not done yet).
    pub outcome: Option<rein_store::FileOutcome>,
}

/// `GET /v1/knowledge-jobs/{id}`.
pub async fn job(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgeJobPath(id): KnowledgeJobPath,
) -> Result<Json<JobOut>, ApiError> {
    let missing = || ApiError::not_found(format!("no ingestion job {id}"));
    let job = app.store.ingest_job(&id).await?.ok_or_else(missing)?;
    let kb = app
        .store
        .knowledge_base_by_id(&job.kb_id)
        .await?
        .ok_or_else(missing)?;
    if kb.owner.as_deref() != Some(user.id.as_str()) {
        return Err(missing());
    }
    let file_outcomes = app
        .store
        .job_files(&id)
        .await?
        .into_iter()
        .map(|f| JobFileOut {
            path: f.path,
            outcome: f.outcome,
        })
        .collect();
    Ok(Json(JobOut { job, file_outcomes }))
}

/// `GET /v1/knowledge-chunks?path=…&line=…`: what a citation in an answer points at, from the
/// caller's bases (the first that has it).
pub async fn chunk(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<ChunkQuery>,
) -> Result<Json<ChunkOut>, ApiError> {
    for kb in app.store.list_knowledge_bases(Some(&user.id)).await? {
        if let Some(h) = app.store.chunk_at(&kb.id, &q.path, q.line).await? {
            return Ok(Json(ChunkOut {
                base: kb.name,
                hit: h.into(),
            }));
        }
    }
    Err(ApiError::not_found(format!(
        "no knowledge base of yours has {}:{}",
        q.path, q.line
    )))
}

/// `POST /v1/knowledge/{name}/search`.
pub async fn search(
    State(app): State<AppState>,
    Caller(user): Caller,
    KnowledgePath(name): KnowledgePath,
    Body(body): Body<SearchBody>,
) -> Result<Json<SearchOut>, ApiError> {
    retrieve::checked_query(&body.query).map_err(|e| ApiError::bad_request(e.to_string()))?;
    owned_base(&app, &user, &name).await?;
    let top = body.top_k.unwrap_or(5);
    if !(1..=50).contains(&top) {
        return Err(ApiError::bad_request("top_k: 1 to 50"));
    }
    let models = app.runner.host.models_of(Some(&user.id)).await?;
    let found = retrieve::search(
        &*app.store,
        Some(&*models),
        Some(&user.id),
        std::slice::from_ref(&name),
        &body.query,
        top,
    )
    .await?;
    Ok(Json(found.into()))
}

/// The knowledge routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(Method::Get, "/v1/knowledge", "Your knowledge bases", list)
        .route(
            Method::Post,
            "/v1/knowledge",
            "Create a knowledge base (optionally with an embedding model)",
            create,
        )
        .route(
            Method::Get,
            "/v1/knowledge/{name}",
            "A knowledge base: its files (chunks or why skipped) and unfinished ingestion jobs",
            show,
        )
        .route(
            Method::Patch,
            "/v1/knowledge/{name}",
            "Change a knowledge base's embedding model (its chunks are embedded again)",
            set,
        )
        .route(
            Method::Delete,
            "/v1/knowledge/{name}",
            "Delete a knowledge base with everything in it",
            delete,
        )
        .route(
            Method::Delete,
            "/v1/knowledge/{name}/files",
            "Remove a file (its chunks) from a knowledge base",
            remove_file,
        )
        .route_with_body_limit(
            Method::Post,
            "/v1/knowledge/{name}/files",
            "Upload files (multipart): recorded as an ingestion job the server runs in the background",
            UPLOAD_LIMIT,
            upload,
        )
        .route(
            Method::Post,
            "/v1/knowledge/{name}/search",
            "Search a knowledge base by full text and meaning, with citations",
            search,
        )
        .route(
            Method::Get,
            "/v1/knowledge-chunks",
            "The chunk a citation `[path:line]` points at, from your knowledge bases",
            chunk,
        )
        .route(
            Method::Get,
            "/v1/knowledge-jobs/{id}",
            "An ingestion job: how many files are done, and whether it ended",
            job,
        )
}
