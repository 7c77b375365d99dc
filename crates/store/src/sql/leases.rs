//! Which process runs an operation: leases taken, renewed and released, and the claim that
//! takes one within the running limits (admission) in one transaction.

use super::*;

/// Operations but `$2` under a live lease at `$1`, of owner `$3`: read from the index on
/// `(owner, lease_until)`, so it counts the live leases alone and not every operation the owner
/// ever ran (the only other index led by `owner` is ordered by creation).
pub(super) const RUNNING_FOR_OWNER: &str = "SELECT COUNT(*) FROM operations WHERE lease_owner IS NOT NULL AND lease_until > $1 AND id <> $2 AND owner = $3";

/// Operations but `$2` under a live lease at `$1`, whoever owns them.
pub(super) const RUNNING: &str = "SELECT COUNT(*) FROM operations WHERE lease_owner IS NOT NULL AND lease_until > $1 AND id <> $2";

/// Refuse (`AtCapacity`) when one more run would cross `limits`: counts operations other than
/// `id` under a live lease, for `owner` and in all. On PostgreSQL the transaction first takes
/// an advisory lock, so concurrent admissions are decided one at a time (SQLite's write lock
/// already serializes them).
pub(super) async fn admit(
    tx: &mut sqlx::AnyConnection,
    dialect: crate::Dialect,
    id: &str,
    owner: Option<&str>,
    limits: &crate::RunLimits,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    if limits.per_owner.is_none() && limits.total.is_none() {
        return Ok(());
    }
    match dialect {
        crate::Dialect::Postgres => {
            sqlx::query("SELECT pg_advisory_xact_lock(727001)")
                .execute(&mut *tx)
                .await?;
        }
        crate::Dialect::Sqlite => {}
    }
    let running = |owner: Option<&str>| {
        let sql = match owner {
            Some(_) => RUNNING_FOR_OWNER,
            None => RUNNING,
        };
        let mut q = sqlx::query_scalar::<_, i64>(sql)
            .bind(micros(now))
            .bind(id.to_owned());
        if let Some(o) = owner {
            q = q.bind(o.to_owned());
        }
        q
    };
    if let (Some(limit), Some(o)) = (limits.per_owner, owner) {
        let n = u64_of(running(Some(o)).fetch_one(&mut *tx).await?);
        if n >= limit {
            return Err(StoreError::AtCapacity {
                scope: crate::CapacityScope::Owner,
                limit,
            });
        }
    }
    if let Some(limit) = limits.total {
        let n = u64_of(running(None).fetch_one(&mut *tx).await?);
        if n >= limit {
            return Err(StoreError::AtCapacity {
                scope: crate::CapacityScope::All,
                limit,
            });
        }
    }
    Ok(())
}

pub(super) async fn lease_operation(
    store: &SqlStore,
    id: OperationId,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE operations SET lease_owner = $1, lease_until = $2 \
         WHERE id = $3 AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < $4)",
    )
    .bind(owner)
    .bind(micros(until))
    .bind(id.to_string())
    .bind(micros(now))
    .execute(&store.pool)
    .await?
    .rows_affected();
    Ok(n > 0)
}

pub(super) async fn claim_operation(
    store: &SqlStore,
    id: OperationId,
    admission: &crate::Admission,
) -> Result<crate::Claim, StoreError> {
    let mut tx = store.begin_write().await?;
    let key = id.to_string();
    // Two processes claiming at once must not both see the old lease as run out: SQLite's
    // write transaction already runs alone; PostgreSQL's reads lock the row until the claim
    // commits (the second reader then sees the first's lease).
    let read = format!(
        "SELECT lease_owner, lease_until, owner FROM operations WHERE id = $1{}",
        store.dialect.lock_rows()
    );
    let row: Option<(Option<String>, Option<i64>, Option<String>)> =
        sqlx::query_as(sqlx::AssertSqlSafe(read))
            .bind(&key)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((holder, until, owner)) = row else {
        return Err(StoreError::OperationNotFound(key));
    };
    let live = until.is_some_and(|u| u > micros(admission.now));
    if live && holder.as_deref().is_some_and(|h| h != admission.node) {
        return Ok(crate::Claim::Busy);
    }
    admit(
        &mut tx,
        store.dialect,
        &key,
        owner.as_deref(),
        &admission.limits,
        admission.now,
    )
    .await?;
    sqlx::query("UPDATE operations SET lease_owner = $1, lease_until = $2 WHERE id = $3")
        .bind(&admission.node)
        .bind(micros(admission.until))
        .bind(&key)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(crate::Claim::Claimed)
}

pub(super) async fn release_operation(
    store: &SqlStore,
    id: OperationId,
    owner: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE operations SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2",
    )
    .bind(id.to_string())
    .bind(owner)
    .execute(&store.pool)
    .await?;
    Ok(())
}

impl SqlStore {
    /// Release `owner`'s lease of `id` because its process is stopping with the operation
    /// still running: on PostgreSQL other processes hear of it in the same transaction
    /// ([`crate::Notice::Released`]) and one takes the operation up at once.
    pub async fn hand_over(&self, id: OperationId, owner: &str) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "UPDATE operations SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2",
        )
        .bind(id.to_string())
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        if let Some(notice) = notices::released(self, &id.to_string()) {
            notice.run(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
