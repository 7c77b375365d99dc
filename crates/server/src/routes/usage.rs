//! `/v1/usage`: what the caller's operations spent since a day (the last 30 days by default),
//! grouped by day, agent or model; `by=user` sums everyone's, for admins only (a `404` to
//! members). Totals are the operation records' own sums. `/v1/caps`: where the caller stands
//! under the caps that apply to them (`caps`).

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::Params;
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, NaiveDate, Utc};
use rein_core::usage::Usd;
use rein_store::{Usage, UsageBy, UsageRow, Whose};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/usage` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// The first day counted (`YYYY-MM-DD`, UTC; default: 30 days ago).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<NaiveDate>,
    /// `day` (default), `agent`, `model`, or `user` (admins: everyone's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<UsageBy>,
}

/// `GET /v1/usage` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct UsageReport {
    /// From when.
    pub since: DateTime<Utc>,
    /// The grouping.
    pub by: UsageBy,
    /// One row per group, in key order.
    pub rows: Vec<UsageRow>,
    /// Every row summed (`key` is `total`).
    pub total: UsageRow,
}

/// The start of `day`, UTC; 30 days ago when none is given.
pub fn since(day: Option<NaiveDate>) -> DateTime<Utc> {
    match day {
        None => Utc::now() - chrono::Duration::days(30),
        Some(d) => d.and_time(chrono::NaiveTime::MIN).and_utc(),
    }
}

/// `rows` summed.
pub fn total(rows: &[UsageRow]) -> UsageRow {
    rows.iter().fold(
        UsageRow {
            key: "total".to_owned(),
            operations: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost: Usd::from_nanos(0),
        },
        |mut t, r| {
            t.operations += r.operations;
            t.input_tokens += r.input_tokens;
            t.output_tokens += r.output_tokens;
            t.cost += r.cost;
            t
        },
    )
}

/// `GET /v1/usage`.
pub async fn usage(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<UsageQuery>,
) -> Result<Json<UsageReport>, ApiError> {
    let since = since(q.since);
    let by = q.by.unwrap_or_default();
    let whose = match by {
        UsageBy::User => {
            if !crate::auth::administers(&app, &user) {
                return Err(ApiError::not_found(
                    "no usage by user for you: it is for admins",
                ));
            }
            Whose::Everyone
        }
        UsageBy::Day | UsageBy::Agent | UsageBy::Model => Whose::Owner(Some(&user.id)),
    };
    let rows = app.store.usage(whose, since, by).await?;
    Ok(Json(UsageReport {
        since,
        by,
        total: total(&rows),
        rows,
    }))
}

/// `GET /v1/caps` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct CapsReport {
    /// Your caps, then the server's, each period with a limit (empty: no caps).
    pub caps: Vec<crate::caps::CapStanding>,
}

/// `GET /v1/caps`: where the caller stands under their caps and the server's.
pub async fn caps(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<CapsReport>, ApiError> {
    let caps = app
        .config
        .caps
        .standing(&*app.store, &user, Utc::now())
        .await?;
    Ok(Json(CapsReport { caps }))
}

/// The usage routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/usage",
            "What your operations spent since a day, by day, agent or model (admins: by user)",
            usage,
        )
        .route(
            Method::Get,
            "/v1/caps",
            "Where you stand under your spending caps and the server's",
            caps,
        )
}
