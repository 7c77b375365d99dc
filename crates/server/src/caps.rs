//! Spending caps: how much each user's operations may cost per UTC day and per UTC month
//! (`rein serve --daily-cost-cap USD --monthly-cost-cap USD`). Checked when an operation is
//! admitted, from the operation records' own costs (what `/v1/usage` sums): a user whose cap is
//! spent gets `429 spend_cap_reached` naming the cap and when it resets (`Retry-After`); an
//! admitted operation's cost limit is lowered to what is left under the caps, so crossing one
//! mid-run is a cost limit crossed, and its budget policy (stop, interrupt, warn) applies.

use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use axum::http::StatusCode;
use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use rein_core::usage::Usd;
use rein_store::{Usage, UsageBy, Whose};

/// Per-user caps (none by default).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpendCaps {
    /// What one user's operations may cost per UTC day.
    pub daily: Option<Usd>,
    /// What one user's operations may cost per UTC calendar month.
    pub monthly: Option<Usd>,
}

/// The start of `now`'s UTC day and of the next one.
fn day(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = now.date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
    (start, start + Duration::days(1))
}

/// The start of `now`'s UTC month and of the next one.
fn month(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(now);
    let (y, m) = if now.month() == 12 {
        (now.year() + 1, 1)
    } else {
        (now.year(), now.month() + 1)
    };
    let next = Utc
        .with_ymd_and_hms(y, m, 1, 0, 0, 0)
        .single()
        .unwrap_or(start + Duration::days(31));
    (start, next)
}

impl SpendCaps {
    /// Admit an operation of `owner` now: what its cost limit may be at most (`None` without
    /// caps), or `429 spend_cap_reached` when a cap is spent.
    pub async fn admit(
        &self,
        store: &(dyn Usage + Sync),
        owner: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Usd>, ApiError> {
        let mut left: Option<Usd> = None;
        for (cap, (start, reset), what) in [
            (self.daily, day(now), "daily"),
            (self.monthly, month(now), "monthly"),
        ] {
            let Some(cap) = cap else { continue };
            let rows = store
                .usage(Whose::Owner(Some(owner)), start, UsageBy::Day)
                .await?;
            let spent = rows.iter().fold(Usd::from_nanos(0), |t, r| t + r.cost);
            if spent.nanos() >= cap.nanos() {
                let mut err = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ApiErrorCode::SpendCapReached,
                    format!(
                        "your {what} cost cap of ${cap} is spent (${spent} since {}); it resets at {}",
                        start.format("%Y-%m-%d %H:%M UTC"),
                        reset.to_rfc3339()
                    ),
                )
                .with_details(serde_json::json!({
                    "cap": what, "limit": cap, "spent": spent, "resets_at": reset,
                }));
                err.retry_after = Some(
                    u64::try_from((reset - now).num_seconds())
                        .unwrap_or(1)
                        .max(1),
                );
                return Err(err);
            }
            let rest = cap.saturating_sub(spent);
            left = Some(left.map_or(rest, |l| if rest.nanos() < l.nanos() { rest } else { l }));
        }
        Ok(left)
    }

    /// `limit` lowered to what the caps leave (`left` from [`SpendCaps::admit`]).
    pub fn lowered(limit: Option<Usd>, left: Option<Usd>) -> Option<Usd> {
        match (limit, left) {
            (Some(l), Some(c)) => Some(if c.nanos() < l.nanos() { c } else { l }),
            (l, None) => l,
            (None, c) => c,
        }
    }
}

/// Admit an operation of `owner` with `spec` under the server's caps: its cost limit lowered
/// to what they leave, or `429 spend_cap_reached`. Every route that starts a user's operation
/// calls this before starting it.
pub async fn admit(
    app: &crate::App,
    owner: &str,
    spec: &mut rein_core::spec::OperationSpec,
) -> Result<(), ApiError> {
    let left = app
        .config
        .caps
        .admit(&*app.store, owner, Utc::now())
        .await?;
    spec.budget.max_cost = SpendCaps::lowered(spec.budget.max_cost, left);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_ends_where_the_next_begins_also_in_december() {
        let t = Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 59).unwrap();
        let (start, next) = month(t);
        assert_eq!(start, Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap());
        assert_eq!(next, Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap());
        let (d, n) = day(t);
        assert_eq!((d.day(), n.day(), n.month()), (31, 1, 1));
    }

    #[test]
    fn the_lower_limit_wins() {
        let (a, b) = (Usd::from_dollars(1.0), Usd::from_dollars(0.25));
        assert_eq!(SpendCaps::lowered(Some(a), Some(b)), Some(b));
        assert_eq!(SpendCaps::lowered(Some(b), Some(a)), Some(b));
        assert_eq!(SpendCaps::lowered(None, Some(a)), Some(a));
        assert_eq!(SpendCaps::lowered(Some(a), None), Some(a));
        assert_eq!(SpendCaps::lowered(None, None), None);
    }
}
