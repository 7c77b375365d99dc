//! Interventions: approvals a step requested, listed, and decided once.

use super::statement::Statement;
use super::*;
use rein_core::ToolCall;
use sqlx::Row;

/// Approvals a step requested; one already stored for the same call is left as it is.
pub(super) fn insert_interventions(
    id: &str,
    interventions: &[Intervention],
) -> Result<Vec<Statement>, StoreError> {
    interventions
        .iter()
        .map(|i| {
            Ok(Statement::new(
                "INSERT INTO interventions (operation_id, tool_call_id, call, owner, status, reason, outcome, decided_by, decided_at, expires_at, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (operation_id, tool_call_id) DO NOTHING",
            )
            .arg(id)
            .arg(i.call.id.to_string())
            .arg(to_json(&i.call, "tool call")?)
            .arg(i.owner.clone())
            .arg(enum_str(&i.status))
            .arg(
                i.reason
                    .as_ref()
                    .map(|r| to_json(r, "approval reason"))
                    .transpose()?,
            )
            .arg(i.outcome.clone())
            .arg(i.decided_by.clone())
            .arg(i.decided_at.map(ts))
            .arg(i.expires_at.map(ts))
            .arg(ts(i.created_at)))
        })
        .collect()
}

pub(super) async fn interventions(
    store: &SqlStore,
    id: OperationId,
) -> Result<Vec<Intervention>, StoreError> {
    let rows = sqlx::query(
        "SELECT call, owner, status, reason, outcome, decided_by, decided_at, expires_at, created_at FROM interventions WHERE operation_id = $1 ORDER BY created_at, tool_call_id",
    )
    .bind(id.to_string())
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let opt_ts = |c: &str| -> Result<Option<DateTime<Utc>>, StoreError> {
                r.try_get::<Option<String>, _>(c)?
                    .map(|t| parse_ts(&t, c))
                    .transpose()
            };
            Ok(Intervention {
                operation_id: id,
                call: from_json::<ToolCall>(&r.try_get::<String, _>("call")?, "tool call")?,
                owner: r.try_get("owner")?,
                status: enum_from(&r.try_get::<String, _>("status")?, "intervention status")?,
                reason: r
                    .try_get::<Option<String>, _>("reason")?
                    .map(|j| from_json(&j, "approval reason"))
                    .transpose()?,
                outcome: r.try_get("outcome")?,
                decided_by: r.try_get("decided_by")?,
                decided_at: opt_ts("decided_at")?,
                expires_at: opt_ts("expires_at")?,
                created_at: parse_ts(&r.try_get::<String, _>("created_at")?, "created_at")?,
            })
        })
        .collect()
}

/// Operations parked on a person whose decision was recorded after their last commit: the
/// process that recorded it stopped before the step it allowed committed. A resume carries the
/// decision out. Instants are stored in one fixed-width form, so text order is time order.
pub(super) async fn decided_while_parked(
    store: &SqlStore,
    not_leased_by: &str,
) -> Result<Vec<OperationRecord>, StoreError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM operations o WHERE o.status = 'waiting_for_human' \
         AND (o.lease_owner IS NULL OR o.lease_owner <> $1) \
         AND EXISTS (SELECT 1 FROM interventions i WHERE i.operation_id = o.id \
         AND i.status <> 'pending' AND i.decided_at >= o.updated_at) ORDER BY o.id",
        super::operations::RECORD_COLUMNS
    )))
    .bind(not_leased_by)
    .fetch_all(&store.pool)
    .await?;
    rows.iter().map(super::operations::record).collect()
}

pub(super) async fn decide_intervention(
    store: &SqlStore,
    id: OperationId,
    tool_call_id: &str,
    status: InterventionStatus,
    decided_by: Option<&str>,
    reason: Option<&str>,
) -> Result<(), StoreError> {
    let mut tx = store.begin_write().await?;
    let current: Option<String> = sqlx::query_scalar(
        "SELECT status FROM interventions WHERE operation_id = $1 AND tool_call_id = $2",
    )
    .bind(id.to_string())
    .bind(tool_call_id)
    .fetch_optional(&mut *tx)
    .await?;
    match current.as_deref() {
        None => return Err(StoreError::InterventionNotFound(tool_call_id.to_owned())),
        Some("pending") => {}
        Some(_) => return Err(StoreError::AlreadyDecided(tool_call_id.to_owned())),
    }
    // The status check in the WHERE clause makes the decision single-use even under races.
    let n = sqlx::query(
        "UPDATE interventions SET status = $1, decided_by = $2, decided_at = $3, outcome = $4 WHERE operation_id = $5 AND tool_call_id = $6 AND status = 'pending'",
    )
    .bind(enum_str(&status))
    .bind(decided_by)
    .bind(ts(Utc::now()))
    .bind(reason)
    .bind(id.to_string())
    .bind(tool_call_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if n == 0 {
        return Err(StoreError::AlreadyDecided(tool_call_id.to_owned()));
    }
    tx.commit().await?;
    Ok(())
}
