//! `/v1/files`: files a user uploads to send with a message (`attachments` on `POST
//! /v1/operations`, `file` parts of chat completions). An upload is one multipart part named
//! `file` (as OpenAI's SDKs send it, with an optional `purpose`), refused with 413 before
//! anything is stored when it is over the server's limit (`rein serve --max-upload-mib`); its
//! type is sniffed from its content (`rein_operation::attachment::media_type_of`), and its
//! bytes are kept once per owner and content. A file is only ever shown to its owner: another
//! user's id is a 404, and its bytes are served as an attachment to save, never to render.

use crate::AppState;
use crate::api::{Api, Download, Input, Method, OperationDoc};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::{FilePath, Params};
use axum::Json;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use rein_store::{FileRecord, Files as _, NewFile};
use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The most any server takes in one upload, whatever `--max-upload-mib` says: the route's
/// body limit (the configured one is checked as the body is read).
pub const MAX_UPLOAD_CAP: usize = 1024 * 1024 * 1024;

/// Room for the multipart framing around a file at the configured limit.
const FRAMING: u64 = 64 * 1024;

/// A file as the API shows it (OpenAI's file object, with what rein knows besides).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileOut {
    /// Its id (`file-` and 32 hex digits).
    pub id: String,
    /// Always `file`.
    pub object: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was uploaded (Unix seconds).
    pub created_at: i64,
    /// The name it was sent with.
    pub filename: String,
    /// Always `user_data`: rein keeps every upload as its owner's data to send with messages.
    pub purpose: String,
    /// Its media type, sniffed from its content.
    pub media_type: String,
    /// SHA-256 of its bytes (lower-case hex).
    pub sha256: String,
}

impl From<FileRecord> for FileOut {
    fn from(f: FileRecord) -> Self {
        Self {
            id: f.id,
            object: "file".into(),
            bytes: f.size,
            created_at: f.created_at.timestamp(),
            filename: f.name,
            purpose: "user_data".into(),
            media_type: f.media_type,
            sha256: f.sha256,
        }
    }
}

/// `GET /v1/files` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileList {
    /// Always `list`.
    pub object: String,
    /// Your files, newest first.
    pub data: Vec<FileOut>,
    /// Whether there are more than `limit`.
    pub has_more: bool,
}

/// `DELETE /v1/files/{file_id}` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileDeleted {
    /// The file.
    pub id: String,
    /// Always `file`.
    pub object: String,
    /// Always true.
    pub deleted: bool,
}

/// `GET /v1/files` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileQuery {
    /// At most this many (default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
}

/// One uploaded file: its name and bytes.
pub struct Upload {
    name: String,
    bytes: Vec<u8>,
}

const PURPOSES: &[&str] = &[
    "assistants",
    "batch",
    "evals",
    "fine-tune",
    "user_data",
    "vision",
];

impl FromRequest<AppState> for Upload {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.config.upload_limit as u64;
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ApiErrorCode::PayloadTooLarge,
                format!(
                    "a file may be at most {} bytes on this server; nothing was stored",
                    limit
                ),
            )
        };
        // Said up front: refused before a byte of it is read.
        let declared = req
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit + FRAMING) {
            return Err(too_large());
        }
        let mut form = axum::extract::Multipart::from_request(req, state)
            .await
            .map_err(|r| {
                ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    ApiErrorCode::UnsupportedMediaType,
                    format!("send the file as multipart/form-data: {}", r.body_text()),
                )
            })?;
        let read_error = |e: axum::extract::multipart::MultipartError| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                ApiError::bad_request(e.body_text())
            }
        };
        let mut file = None;
        while let Some(mut field) = form.next_field().await.map_err(read_error)? {
            match field.name() {
                Some("file") if file.is_none() => {
                    let name = field
                        .file_name()
                        .map(str::to_owned)
                        .ok_or_else(|| ApiError::bad_request("the `file` part has no filename"))?;
                    if name.is_empty() || name.len() > 255 || name.chars().any(char::is_control) {
                        return Err(ApiError::bad_request(
                            "a filename is 1 to 255 bytes without control characters",
                        ));
                    }
                    let bytes = read_part(&mut field, limit, &read_error, &too_large).await?;
                    file = Some(Upload { name, bytes });
                }
                Some("purpose") => {
                    let purpose = field.text().await.map_err(read_error)?;
                    if !PURPOSES.contains(&purpose.as_str()) {
                        let shown: String = purpose.chars().take(40).collect();
                        return Err(ApiError::bad_request(format!(
                            "purpose {shown:?} is not one of {}",
                            PURPOSES.join(", ")
                        )));
                    }
                }
                other => {
                    let shown: String = other.unwrap_or_default().chars().take(40).collect();
                    return Err(ApiError::bad_request(format!(
                        "unexpected part {shown:?}: send one part named `file` (and optionally `purpose`)"
                    )));
                }
            }
        }
        file.ok_or_else(|| ApiError::bad_request("no `file` part with a filename"))
    }
}

/// The bytes of a multipart part, at most `limit` of them (`too_large` past it).
pub(crate) async fn read_part(
    field: &mut axum::extract::multipart::Field<'_>,
    limit: u64,
    read_error: &(dyn Fn(axum::extract::multipart::MultipartError) -> ApiError + Sync),
    too_large: &(dyn Fn() -> ApiError + Sync),
) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(read_error)? {
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

impl Input for Upload {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.body = Some(json!({
            "required": true,
            "content": {"multipart/form-data": {"schema": {
                "type": "object",
                "additionalProperties": false,
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "purpose": {"type": "string", "enum": PURPOSES}
                }
            }}}
        }));
        doc.error(
            400,
            "No `file` part, a filename that is empty or too long, another part",
        );
        doc.error(413, "The file is over the server's upload limit");
        doc.error(415, "The body is not multipart/form-data");
    }
}

fn missing(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ApiErrorCode::NotFound,
        format!("you have no file {id}"),
    )
}

/// `POST /v1/files`: keep a file to send with a message.
pub async fn upload(
    State(app): State<AppState>,
    Caller(user): Caller,
    file: Upload,
) -> Result<Json<FileOut>, ApiError> {
    let media_type = rein_operation::attachment::media_type_of(&file.name, &file.bytes);
    let record = app
        .store
        .put_file(
            &user.id,
            NewFile {
                name: &file.name,
                media_type: &media_type,
                content: &file.bytes,
            },
        )
        .await?;
    tracing::info!(user = %user.name, file = %record.id, bytes = record.size, media_type = %record.media_type, "file uploaded");
    Ok(Json(record.into()))
}

/// `GET /v1/files`: your files.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<FileQuery>,
) -> Result<Json<FileList>, ApiError> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request("limit is 1 to 1000"));
    }
    let mut data: Vec<FileOut> = app
        .store
        .files(&user.id, limit + 1)
        .await?
        .into_iter()
        .map(FileOut::from)
        .collect();
    let has_more = data.len() > limit as usize;
    data.truncate(limit as usize);
    Ok(Json(FileList {
        object: "list".into(),
        data,
        has_more,
    }))
}

/// `GET /v1/files/{file_id}`: one of your files.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    FilePath(id): FilePath,
) -> Result<Json<FileOut>, ApiError> {
    let file = app.store.file(&user.id, &id).await?;
    Ok(Json(file.ok_or_else(|| missing(&id))?.into()))
}

/// `GET /v1/files/{file_id}/content`: one of your files' bytes.
pub async fn content(
    State(app): State<AppState>,
    Caller(user): Caller,
    FilePath(id): FilePath,
) -> Result<Download, ApiError> {
    let file = app
        .store
        .file_content(&user.id, &id)
        .await?
        .ok_or_else(|| missing(&id))?;
    Ok(Download {
        media_type: file.record.media_type,
        name: file.record.name,
        bytes: file.bytes,
    })
}

/// `DELETE /v1/files/{file_id}`: delete one of your files.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    FilePath(id): FilePath,
) -> Result<Json<FileDeleted>, ApiError> {
    if !app.store.delete_file(&user.id, &id).await? {
        return Err(missing(&id));
    }
    Ok(Json(FileDeleted {
        id,
        object: "file".into(),
        deleted: true,
    }))
}

/// The files routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route_with_body_limit(
            Method::Post,
            "/v1/files",
            "Upload a file (multipart, part `file`) to send with a message",
            MAX_UPLOAD_CAP,
            upload,
        )
        .route(
            Method::Get,
            "/v1/files",
            "Your uploaded files, newest first",
            list,
        )
        .route(
            Method::Get,
            "/v1/files/{file_id}",
            "One of your files",
            show,
        )
        .route(
            Method::Get,
            "/v1/files/{file_id}/content",
            "One of your files' bytes, as an attachment",
            content,
        )
        .route(
            Method::Delete,
            "/v1/files/{file_id}",
            "Delete one of your files",
            delete,
        )
}
