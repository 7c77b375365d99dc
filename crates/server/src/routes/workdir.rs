//! `/v1/settings/workdir`: the working directory a user chose for their operations, inside one
//! the server allows (`rein serve --user-workdir-root`; `rein_operation::workdirs` checks it).
//! Without a choice their operations work in the server's own (`--workdir`), if any.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::Body;
use axum::Json;
use axum::extract::State;
use rein_operation::workdirs::WorkdirRefusal;
use rein_store::Accounts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `PUT /v1/settings/workdir` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkdirIn {
    /// An absolute path of a directory on the server inside an allowed root (`null`: none, the
    /// server's own).
    #[schemars(length(min = 1, max = 4096))]
    pub path: Option<String>,
}

/// Where your operations work, and where you may choose.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct WorkdirOut {
    /// The directory you chose (canonical), if any.
    pub chosen: Option<String>,
    /// Where your operations work now: your choice, else the server's own (`null`: no file or
    /// shell access).
    pub effective: Option<String>,
    /// Whether this server lets users choose.
    pub choosable: bool,
}

impl From<WorkdirRefusal> for ApiError {
    fn from(e: WorkdirRefusal) -> Self {
        match e {
            WorkdirRefusal::NotServed => ApiError::conflict(e.to_string()),
            WorkdirRefusal::Missing { .. } | WorkdirRefusal::Outside { .. } => {
                ApiError::unprocessable(e.to_string())
            }
        }
    }
}

async fn out(app: &AppState, user_id: &str) -> Result<WorkdirOut, ApiError> {
    let host = &app.runner.host;
    let chosen = app.store.working_directory(user_id).await?;
    Ok(WorkdirOut {
        effective: chosen.clone().or_else(|| host.working_directory.clone()),
        chosen,
        choosable: !host.user_workdirs.is_empty(),
    })
}

/// `GET /v1/settings/workdir`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<WorkdirOut>, ApiError> {
    Ok(Json(out(&app, &user.id).await?))
}

/// `PUT /v1/settings/workdir`: choose (or with `null` forget) your operations' directory.
pub async fn set(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(req): Body<WorkdirIn>,
) -> Result<Json<WorkdirOut>, ApiError> {
    let dir = match &req.path {
        Some(p) => Some(app.runner.host.user_workdirs.check(p)?),
        None => None,
    };
    app.store
        .set_working_directory(&user.id, dir.as_deref())
        .await?;
    tracing::info!(user = %user.name, dir = dir.as_deref().unwrap_or("(none)"), "working directory chosen");
    Ok(Json(out(&app, &user.id).await?))
}

/// The working directory routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/settings/workdir",
            "Where your operations work, and whether you may choose",
            show,
        )
        .route(
            Method::Put,
            "/v1/settings/workdir",
            "Choose the directory your operations work in, inside one the server allows",
            set,
        )
}
