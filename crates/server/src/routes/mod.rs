//! The `/v1` endpoints, with extractors that turn malformed input into the API's error shape.

pub mod agents;
pub mod agui;
pub mod archive;
pub mod artifacts;
pub mod audio;
pub mod beats;
pub mod briefs;
pub mod content_parts;
pub mod devices;
pub mod evals;
pub mod events;
pub mod files;
pub mod follow;
pub mod fork;
pub mod front_turn;
pub mod goal_stream;
pub mod goals;
pub mod grants;
pub mod groups;
pub mod knowledge;
pub mod logins;
pub mod memories;
pub mod models;
pub mod oidc;
pub mod openai;
pub mod operations;
pub mod own_mcp;
pub mod own_providers;
pub mod replay;
pub mod response_events;
pub mod responses;
pub mod sessions;
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod topics;
pub mod ui_stream;
pub mod usage;
pub mod users;
pub mod workdir;

use crate::AppState;
use crate::api::{Input, OperationDoc};
use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use rein_core::OperationId;
use rein_operation::profile::check_name;
use rein_store::{OperationRecord, Store, StoredOperation, User};
use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde::de::DeserializeOwned;
use serde_json::json;
use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

/// A JSON object body; another content type is a 415, an oversized body a 413, and malformed
/// JSON, a body that is not an object, a field its document does not have (when the document
/// says `additionalProperties: false`) or a wrong field a 400 naming what was wrong.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned + JsonSchema + 'static, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let json = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase())
            .is_some_and(|m| {
                m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
            });
        if !json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                crate::error_code::ApiErrorCode::UnsupportedMediaType,
                "send the body as Content-Type: application/json",
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        crate::error_code::ApiErrorCode::PayloadTooLarge,
                        "the request body is larger than the server accepts",
                    )
                } else {
                    ApiError::bad_request(rejection.body_text())
                }
            })?;
        // serde reads a struct from a JSON array too (`[null, null]`); the API takes objects.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        let bytes = nul_shown(&bytes).unwrap_or(bytes);
        unknown_field::<T>(&bytes)?;
        axum::Json::<T>::from_bytes(&bytes)
            .map(|axum::Json(v)| Body(v))
            .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
    }
}

/// A body type's top-level field names.
type Fields = Arc<BTreeSet<String>>;

/// The top-level fields `T`'s document allows, or `None` when it allows any; computed once per
/// type.
fn allowed_fields<T: JsonSchema + 'static>() -> Option<Fields> {
    static FIELDS: LazyLock<Mutex<HashMap<TypeId, Option<Fields>>>> = LazyLock::new(Mutex::default);
    let mut fields = FIELDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fields
        .entry(TypeId::of::<T>())
        .or_insert_with(|| {
            let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
            let closed =
                schema.get("additionalProperties") == Some(&serde_json::Value::Bool(false));
            closed.then(|| {
                Arc::new(
                    schema
                        .get("properties")
                        .and_then(|p| p.as_object())
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default(),
                )
            })
        })
        .clone()
}

/// Refuse a body with a top-level field `T`'s document does not have, naming it and the ones
/// it has (as serde's `deny_unknown_fields` would, which a type with a flattened part cannot
/// use). A body that is not a JSON object is left to the parser.
fn unknown_field<T: JsonSchema + 'static>(bytes: &[u8]) -> Result<(), ApiError> {
    let Some(allowed) = allowed_fields::<T>() else {
        return Ok(());
    };
    // Only the keys are read: the values are skipped, not built (the typed parse reads them).
    let Ok(body) = serde_json::from_slice::<BTreeMap<String, serde::de::IgnoredAny>>(bytes) else {
        return Ok(());
    };
    match body.keys().find(|k| !allowed.contains(*k)) {
        None => Ok(()),
        Some(unknown) => {
            let expected: Vec<String> = allowed.iter().map(|f| format!("`{f}`")).collect();
            Err(ApiError::bad_request(format!(
                "Failed to deserialize the JSON body into the target type: unknown field `{unknown}`, expected one of {}",
                expected.join(", ")
            )))
        }
    }
}

/// A JSON body that holds U+0000 (as `\u0000`) with each one shown as `␀` (U+2400), or
/// `None` when it holds none: PostgreSQL refuses U+0000 in text, and a schema-valid request is
/// accepted, not refused, so the character is made visible the way tool output's is
/// (`rein_core::text`) before anything reads it.
fn nul_shown(bytes: &[u8]) -> Option<axum::body::Bytes> {
    if !bytes.windows(6).any(|w| w == b"\\u0000") {
        return None;
    }
    fn show(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        let clean = |s: String| {
            if s.contains('\0') {
                s.replace('\0', "\u{2400}")
            } else {
                s
            }
        };
        match v {
            Value::String(s) => Value::String(clean(s)),
            Value::Array(a) => Value::Array(a.into_iter().map(show).collect()),
            Value::Object(m) => {
                Value::Object(m.into_iter().map(|(k, v)| (clean(k), show(v))).collect())
            }
            other => other,
        }
    }
    // Not JSON: left for the parser below to refuse with its own message.
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    serde_json::to_vec(&show(value)).ok().map(Into::into)
}

/// Deserialize a struct field only from a JSON object (serde also reads structs from arrays).
pub fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::Deserialize;
    let map = serde_json::Map::deserialize(d)?;
    serde_json::from_value(serde_json::Value::Object(map)).map_err(serde::de::Error::custom)
}

/// [`object`] for each item of a list.
pub fn objects<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::Deserialize;
    Vec::<serde_json::Map<String, serde_json::Value>>::deserialize(d)?
        .into_iter()
        .map(|m| serde_json::from_value(serde_json::Value::Object(m)))
        .collect::<Result<_, _>>()
        .map_err(serde::de::Error::custom)
}

/// [`object`] for an optional field (`null` is none).
pub fn optional_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::Deserialize;
    Option::<serde_json::Map<String, serde_json::Value>>::deserialize(d)?
        .map(|m| serde_json::from_value(serde_json::Value::Object(m)))
        .transpose()
        .map_err(serde::de::Error::custom)
}

/// [`objects`] for an optional list (`null` is none).
pub fn optional_objects<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::Deserialize;
    Option::<Vec<serde_json::Map<String, serde_json::Value>>>::deserialize(d)?
        .map(|list| {
            list.into_iter()
                .map(|m| serde_json::from_value(serde_json::Value::Object(m)))
                .collect::<Result<Vec<T>, _>>()
        })
        .transpose()
        .map_err(serde::de::Error::custom)
}

impl<T: JsonSchema> Input for Body<T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        doc.body = Some(json!({
            "required": true,
            "content": {"application/json": {"schema": crate::api::schema_of::<T>(g)}}
        }));
        doc.error(
            400,
            "The body is not valid for this operation; the message names the field",
        );
        doc.error(413, "The body is larger than the server accepts");
    }
}

/// Query parameters; a malformed one is a 400 naming it.
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // U+0000 (`%00`) is shown as `␀`, as in bodies (see `nul_shown`).
        if let Some(q) = parts.uri.query().filter(|q| q.contains("%00")) {
            let shown = format!("{}?{}", parts.uri.path(), q.replace("%00", "%E2%90%80"));
            if let Ok(uri) = shown.parse() {
                parts.uri = uri;
            }
        }
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|r| ApiError::bad_request(r.body_text()))
    }
}

macro_rules! path_param {
    ($(#[$doc:meta])* $name:ident, check: $check:expr, schema: $schema:expr) => {
        $(#[$doc])*
        pub struct $name(pub String);

        impl<S: Send + Sync> FromRequestParts<S> for $name {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
                // Not percent-encoded UTF-8: a 400 in the API's shape, not axum's text/plain.
                let raw = axum::extract::Path::<String>::from_request_parts(parts, state)
                    .await
                    .map_err(|r| ApiError::bad_request(format!("path: {}", r.body_text())))?
                    .0;
                let check: fn(&str) -> Result<(), ApiError> = $check;
                check(&raw)?;
                Ok($name(raw))
            }
        }

        impl Input for $name {
            fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
                let name = doc.path_param().to_owned();
                doc.parameters.push(json!({
                    "name": name, "in": "path", "required": true, "schema": $schema
                }));
                doc.error(400, "Malformed id");
                doc.error(404, "Not found, or not yours");
            }
        }
    };
}

path_param!(
    /// `{id}` of an operation: a UUID (hyphenated).
    OperationPath,
    check: |s| operation_id(s).map(|_| ()),
    schema: json!({"type": "string", "format": "uuid", "pattern": UUID_PATTERN})
);

path_param!(
    /// `{id}` of a goal: a UUID (hyphenated).
    GoalPath,
    check: |s| goal_id(s).map(|_| ()),
    schema: json!({"type": "string", "format": "uuid", "pattern": UUID_PATTERN})
);

/// A goal's id from a path: a hyphenated UUID, else a 400 naming it.
pub fn goal_id(id: &str) -> Result<rein_core::ids::GoalId, ApiError> {
    uuid_of(id, "a goal")
}

path_param!(
    /// `{id}` of an evaluation run: `eval_` and 32 lowercase hex digits.
    EvalPath,
    check: |s| {
        let ok = s.strip_prefix("eval_").is_some_and(|h| {
            h.len() == 32 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if ok {
            Ok(())
        } else {
            Err(ApiError::bad_request("an evaluation run id is eval_ and 32 hex digits"))
        }
    },
    schema: json!({"type": "string", "pattern": "^eval_[0-9a-f]{32}$"})
);

path_param!(
    /// `{id}` of a task: `task_` and 32 lowercase hex digits.
    TaskPath,
    check: check_task_id,
    schema: json!({"type": "string", "pattern": "^task_[0-9a-f]{32}$"})
);

path_param!(
    /// `{name}` of an agent: 1 to 64 ASCII letters, digits, `-` or `_`.
    AgentPath,
    check: |s| check_name(s).map_err(ApiError::from),
    schema: json!({"type": "string", "pattern": rein_operation::profile::AGENT_NAME_PATTERN})
);

path_param!(
    /// `{provider}` of a provider you bring: `openai`, `anthropic`, or a name of your own with
    /// a base URL.
    ProviderPath,
    check: |s| rein_operation::own_models::check_provider_id(s)
        .map_err(|e| ApiError::bad_request(e.to_string())),
    schema: json!({"type": "string", "pattern": rein_operation::own_models::PROVIDER_ID_PATTERN})
);

path_param!(
    /// `{file_id}` of a file you uploaded: `file-` and 32 lower-case hex digits.
    FilePath,
    check: |s| {
        if rein_store::valid_file_id(s) {
            Ok(())
        } else {
            let shown: String = s.chars().take(50).collect();
            Err(ApiError::bad_request(format!("{shown:?} is not a file id (file- and 32 hex digits)")))
        }
    },
    schema: json!({"type": "string", "pattern": rein_store::FILE_ID_PATTERN})
);

path_param!(
    /// `{artifact_id}`: `art-` and 32 lower-case hex digits.
    ArtifactPath,
    check: |s| {
        if rein_store::valid_artifact_id(s) {
            Ok(())
        } else {
            let shown: String = s.chars().take(50).collect();
            Err(ApiError::bad_request(format!("{shown:?} is not an artifact id (art- and 32 hex digits)")))
        }
    },
    schema: json!({"type": "string", "pattern": rein_store::ARTIFACT_ID_PATTERN})
);

path_param!(
    /// `{name}` of an MCP server you define: 1 to 32 lower-case letters, digits and `-`,
    /// starting with a letter.
    McpServerPath,
    check: |s| rein_operation::own_mcp::check_name(s)
        .map_err(|e| ApiError::bad_request(e.to_string())),
    schema: json!({"type": "string", "pattern": rein_operation::own_mcp::NAME_PATTERN})
);

path_param!(
    /// `{name}` of a skill: 1 to 64 lowercase letters, digits and single inner hyphens.
    SkillPath,
    check: |s| {
        if rein_operation::skills::valid_name(s) {
            Ok(())
        } else {
            let shown: String = s.chars().take(40).collect();
            Err(ApiError::bad_request(format!(
                "{shown:?} is not a skill name (lowercase letters, digits and single hyphens)"
            )))
        }
    },
    schema: json!({"type": "string", "pattern": rein_operation::skills::NAME_PATTERN, "maxLength": rein_operation::skills::NAME_MAX})
);

path_param!(
    /// `{id}` of a topic: 1 to 128 ASCII letters, digits, `-`, `_`, `.` or `:`.
    TopicPath,
    check: |s| rein_operation::check_topic_id(s).map_err(ApiError::from),
    schema: json!({"type": "string", "pattern": rein_operation::TOPIC_ID_PATTERN})
);

path_param!(
    /// `{id}` of a brief: `brief-` and a UUID.
    BriefPath,
    check: |s| {
        if rein_store::valid_brief_id(s) {
            Ok(())
        } else {
            let shown: String = s.chars().take(50).collect();
            Err(ApiError::bad_request(format!("{shown:?} is not a brief id (brief- and a UUID)")))
        }
    },
    schema: json!({"type": "string", "pattern": rein_store::BRIEF_ID_PATTERN})
);

path_param!(
    /// `{code}` of a login from another device: `ABCD-EFGH`.
    LoginCodePath,
    check: crate::routes::logins::check_code,
    schema: json!({"type": "string", "pattern": crate::routes::logins::CODE_PATTERN})
);

path_param!(
    /// `{id}` of a grant: `grant_` and 32 lowercase hex digits.
    GrantPath,
    check: |s| {
        if rein_store::valid_grant_id(s) {
            Ok(())
        } else {
            let shown: String = s.chars().take(50).collect();
            Err(ApiError::bad_request(format!("{shown:?} is not a grant id (grant_ and 32 hex digits)")))
        }
    },
    schema: json!({"type": "string", "pattern": rein_store::GRANT_ID_PATTERN})
);

/// Task ids are `task_` and 32 lowercase hex digits; anything else is a 400 naming it.
pub(crate) fn check_task_id(id: &str) -> Result<(), ApiError> {
    let ok = id.strip_prefix("task_").is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    if ok {
        Ok(())
    } else {
        let shown: String = id.chars().take(40).collect();
        Err(ApiError::bad_request(format!(
            "{shown:?} is not a task id (task_ and 32 hex digits)"
        )))
    }
}

/// A UUID as ids are written in paths and bodies: hyphenated, either case.
pub(crate) const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// Whether `s` is a UUID in the form of [`UUID_PATTERN`] (the parser alone would also take
/// the braced, URN and 32-digit forms the document does not allow).
pub(crate) fn hyphenated_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Whether `s` says something by the document's `\S` pattern (ECMAScript's white space, which
/// counts U+FEFF and not U+0085, unlike Rust's).
pub(crate) fn says_something(s: &str) -> bool {
    s.chars().any(|c| !ecma_space(c))
}

/// `s` without the white space ECMAScript's `\s` matches at either end.
pub(crate) fn ecma_trim(s: &str) -> &str {
    s.trim_matches(ecma_space)
}

fn ecma_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// An operation id by its format (a UUID); anything else is a 400 naming it.
pub fn operation_id(id: &str) -> Result<OperationId, ApiError> {
    uuid_of(id, "an operation")
}

/// An id that is a hyphenated UUID (`what`, as in "an operation": a 400 naming it otherwise).
fn uuid_of<T: std::str::FromStr>(id: &str, what: &str) -> Result<T, ApiError> {
    let parsed = if hyphenated_uuid(id) {
        id.parse().ok()
    } else {
        None
    };
    parsed.ok_or_else(|| {
        let shown: String = id.chars().take(40).collect();
        ApiError::bad_request(format!("{shown:?} is not {what} id (a UUID)"))
    })
}

impl<T: JsonSchema> Input for Params<T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        // The struct's own schema (not a reference): each property is a query parameter.
        let schema = crate::api::inline_schema_of::<T>(g);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        if let Some(props) = schema["properties"].as_object() {
            for (name, prop) in props {
                let mut prop = prop.clone();
                let description = prop
                    .as_object_mut()
                    .and_then(|p| p.remove("description"))
                    .unwrap_or(serde_json::Value::Null);
                let mut param = json!({
                    "name": name, "in": "query",
                    "required": required.contains(&name.as_str()), "schema": prop
                });
                if !description.is_null() {
                    param["description"] = description;
                }
                doc.parameters.push(param);
            }
        }
        doc.error(400, "A query parameter is not valid; the message names it");
    }
}

/// The record (no state) of operation `id` if `user` owns it; 404 otherwise.
pub async fn owned_record(
    app: &AppState,
    user: &User,
    id: &str,
) -> Result<OperationRecord, ApiError> {
    let missing = || ApiError::not_found(format!("no operation {id}"));
    let parsed = operation_id(id)?;
    let op = app.store.operation(parsed).await?.ok_or_else(missing)?;
    if op.owner.as_deref() != Some(user.id.as_str()) {
        return Err(missing());
    }
    Ok(op)
}

/// The operation `id` if `user` owns it; 404 otherwise (existence is not revealed).
pub async fn owned_operation(
    app: &AppState,
    user: &User,
    id: &str,
) -> Result<StoredOperation, ApiError> {
    let missing = || ApiError::not_found(format!("no operation {id}"));
    let parsed = operation_id(id)?;
    let op = app
        .store
        .load_operation(parsed)
        .await?
        .ok_or_else(missing)?;
    if op.record.owner.as_deref() != Some(user.id.as_str()) {
        return Err(missing());
    }
    Ok(op)
}

path_param!(
    /// `{name}` of a device: 1 to 64 ASCII letters, digits, `-`, `_` or `.`.
    DevicePath,
    check: |s| {
        if rein_core::spec::valid_device_name(s) {
            Ok(())
        } else {
            let shown: String = s.chars().take(40).collect();
            Err(ApiError::bad_request(format!(
                "{shown:?} is not a device name (1-64 letters, digits, `-`, `_`, `.`)"
            )))
        }
    },
    schema: json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"})
);

path_param!(
    /// `{name}` of a knowledge base: 1 to 64 ASCII letters, digits, `-` or `_`.
    KnowledgePath,
    check: |s| {
        check_name(s).map_err(|_| {
            let shown: String = s.chars().take(40).collect();
            ApiError::bad_request(format!(
                "{shown:?} is not a knowledge base name (1-64 letters, digits, `-`, `_`)"
            ))
        })
    },
    schema: json!({"type": "string", "pattern": rein_operation::profile::AGENT_NAME_PATTERN})
);

path_param!(
    /// `{id}` of an ingestion job: `kj_` and 32 lowercase hex digits.
    KnowledgeJobPath,
    check: |s| {
        let ok = s
            .strip_prefix("kj_")
            .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        if ok {
            Ok(())
        } else {
            Err(ApiError::bad_request("not an ingestion job id (`kj_` and 32 hex digits)"))
        }
    },
    schema: json!({"type": "string", "pattern": "^kj_[0-9a-f]{32}$"})
);

path_param!(
    /// `{id}` of a memory: `mem_` and 32 lowercase hex digits.
    MemoryPath,
    check: |s| {
        let ok = s
            .strip_prefix("mem_")
            .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        if ok {
            Ok(())
        } else {
            Err(ApiError::bad_request("not a memory id (`mem_` and 32 hex digits)"))
        }
    },
    schema: json!({"type": "string", "pattern": "^mem_[0-9a-f]{32}$"})
);
