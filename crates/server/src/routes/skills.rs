//! `/v1/skills`: the skills this server's operations can activate (its `$REIN_HOME/skills`,
//! its working directory's `.rein/skills` and configured directories, discovered at start),
//! and those left out with the file and line at fault.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::SkillPath;
use axum::Json;
use axum::extract::State;
use rein_operation::skills::SkillSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A skill with its instructions.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SkillDetail {
    /// The summary.
    #[serde(flatten)]
    pub skill: SkillSummary,
    /// The instructions (the `SKILL.md` body).
    pub body: String,
}

/// A skill left out.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SkillProblemOut {
    /// The file at fault.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// `GET /v1/skills` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SkillList {
    /// Skills, by name.
    pub skills: Vec<SkillSummary>,
    /// Skills left out.
    pub problems: Vec<SkillProblemOut>,
}

/// `GET /v1/skills`.
pub async fn list(State(app): State<AppState>, Caller(_): Caller) -> Json<SkillList> {
    let catalog = &app.runner.host.skills;
    Json(SkillList {
        skills: catalog.skills().iter().map(|s| s.summary()).collect(),
        problems: catalog
            .problems()
            .iter()
            .map(|p| SkillProblemOut {
                // Users see where the fault is relative to the server, not its whole layout.
                file: p.file.display().to_string(),
                line: p.line,
                message: p.message.clone(),
            })
            .collect(),
    })
}

/// `GET /v1/skills/{name}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(_): Caller,
    SkillPath(name): SkillPath,
) -> Result<Json<SkillDetail>, ApiError> {
    let s = app
        .runner
        .host
        .skills
        .get(&name)
        .ok_or_else(|| ApiError::not_found(format!("no skill `{name}`")))?;
    Ok(Json(SkillDetail {
        skill: s.summary(),
        body: s.body.clone(),
    }))
}

/// The skill routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/skills",
            "Skills operations can activate, and those left out",
            list,
        )
        .route(
            Method::Get,
            "/v1/skills/{name}",
            "A skill with its instructions",
            show,
        )
}
