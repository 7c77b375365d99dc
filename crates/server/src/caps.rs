//! Spending caps: how much users' operations may cost and how many tokens they may use per UTC
//! day and per UTC month, per user (`rein serve --daily-cost-cap USD --daily-token-cap N`, and
//! the monthly ones, as defaults an admin overrides per user: `rein user caps NAME`) and for the
//! whole server (`--server-daily-cost-cap` …). Checked when an operation is admitted, from the
//! operation records' own sums (what `/v1/usage` sums): a spent cap is `429 spend_cap_reached`
//! naming it and when it resets (`Retry-After`); an admitted operation's cost and token limits
//! are lowered to what the caps leave, so crossing one mid-run is a limit crossed, and its
//! budget policy (stop, interrupt, warn) applies. `GET /v1/caps` shows where a user stands.

use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use axum::http::StatusCode;
use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use rein_core::usage::Usd;
use rein_store::{Caps, StoreError, Usage, UsageBy, User, Whose};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The server's caps (none by default).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpendCaps {
    /// Each user's, unless an admin set that user's own ([`Caps::over`]).
    pub per_user: Caps,
    /// Everyone's operations together.
    pub server: Caps,
}

rein_core::named_enum! {
    /// Whose spending a cap bounds.
    pub enum CapScope as "cap scope" {
        /// One user's operations.
        User = "user",
        /// Every user's together.
        Server = "server",
    }
}

rein_core::named_enum! {
    /// The period a cap counts over (UTC).
    pub enum CapPeriod as "cap period" {
        /// From midnight to midnight.
        Day = "day",
        /// The calendar month.
        Month = "month",
    }
}

/// Where one cap stands: for a scope and period, the limits set and what was spent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CapStanding {
    /// Whose spending.
    pub scope: CapScope,
    /// Over what period.
    pub period: CapPeriod,
    /// The cost limit, if one is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_limit: Option<Usd>,
    /// What was spent in the period.
    pub cost_spent: Usd,
    /// The token limit (input and output), if one is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
    /// Tokens used in the period.
    pub tokens_spent: u64,
    /// When the period started.
    pub since: DateTime<Utc>,
    /// When it ends and the count starts again.
    pub resets_at: DateTime<Utc>,
}

impl CapStanding {
    /// Whether a limit of this cap is reached.
    fn reached(&self) -> bool {
        self.cost_limit.is_some_and(|l| self.cost_spent >= l)
            || self.token_limit.is_some_and(|l| self.tokens_spent >= l)
    }

    /// The `429` of a reached cap, naming it.
    fn refusal(&self, now: DateTime<Utc>) -> ApiError {
        let whose = match self.scope {
            CapScope::User => "your",
            CapScope::Server => "the server's",
        };
        let period = match self.period {
            CapPeriod::Day => "daily",
            CapPeriod::Month => "monthly",
        };
        let (what, shown, limit, spent) = match self.cost_limit {
            Some(l) if self.cost_spent >= l => (
                "cost",
                format!("{l} is spent ({}", self.cost_spent),
                serde_json::json!(l),
                serde_json::json!(self.cost_spent),
            ),
            _ => (
                "token",
                format!(
                    "{} is spent ({} tokens",
                    self.token_limit.unwrap_or_default(),
                    self.tokens_spent
                ),
                serde_json::json!(self.token_limit),
                serde_json::json!(self.tokens_spent),
            ),
        };
        let mut err = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ApiErrorCode::SpendCapReached,
            format!(
                "{whose} {period} {what} cap of {shown} since {}); it resets at {}",
                self.since.format("%Y-%m-%d %H:%M UTC"),
                self.resets_at.to_rfc3339()
            ),
        )
        .with_details(serde_json::json!({
            "cap": period,
            "scope": self.scope,
            "measure": what,
            "limit": limit,
            "spent": spent,
            "resets_at": self.resets_at,
        }));
        err.retry_after = Some(
            u64::try_from((self.resets_at - now).num_seconds())
                .unwrap_or(1)
                .max(1),
        );
        err
    }
}

/// What the caps leave an operation admitted now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Left {
    /// Cost (none: no cost cap).
    pub cost: Option<Usd>,
    /// Tokens (none: no token cap).
    pub tokens: Option<u64>,
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

/// The lower of two optional limits (none: no limit).
fn lower<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

impl SpendCaps {
    /// Where `user` stands under every cap that applies to them now (theirs, then the
    /// server's; a period without a limit is left out).
    pub async fn standing(
        &self,
        store: &(dyn Usage + Sync),
        user: &User,
        now: DateTime<Utc>,
    ) -> Result<Vec<CapStanding>, StoreError> {
        let mut out = Vec::new();
        let mine = user.caps.over(self.per_user);
        for (scope, caps, whose) in [
            (CapScope::User, mine, Whose::Owner(Some(&user.id))),
            (CapScope::Server, self.server, Whose::Everyone),
        ] {
            for (period, (since, resets_at), cost_limit, token_limit) in [
                (CapPeriod::Day, day(now), caps.daily_cost, caps.daily_tokens),
                (
                    CapPeriod::Month,
                    month(now),
                    caps.monthly_cost,
                    caps.monthly_tokens,
                ),
            ] {
                if cost_limit.is_none() && token_limit.is_none() {
                    continue;
                }
                let rows = store.usage(whose, since, UsageBy::Day).await?;
                out.push(CapStanding {
                    scope,
                    period,
                    cost_limit,
                    cost_spent: rows.iter().fold(Usd::from_nanos(0), |t, r| t + r.cost),
                    token_limit,
                    tokens_spent: rows.iter().map(|r| r.input_tokens + r.output_tokens).sum(),
                    since,
                    resets_at,
                });
            }
        }
        Ok(out)
    }

    /// Admit an operation of `user` now: what its cost and token limits may be at most, or
    /// `429 spend_cap_reached` naming the first cap that is spent.
    pub async fn admit(
        &self,
        store: &(dyn Usage + Sync),
        user: &User,
        now: DateTime<Utc>,
    ) -> Result<Left, ApiError> {
        let mut left = Left::default();
        for s in self.standing(store, user, now).await? {
            if s.reached() {
                return Err(s.refusal(now));
            }
            left.cost = lower(
                left.cost,
                s.cost_limit.map(|l| l.saturating_sub(s.cost_spent)),
            );
            left.tokens = lower(
                left.tokens,
                s.token_limit.map(|l| l.saturating_sub(s.tokens_spent)),
            );
        }
        Ok(left)
    }

    /// `budget`'s limits lowered to what the caps leave (`left` from [`SpendCaps::admit`]).
    pub fn lower_budget(budget: &mut rein_core::state::Budget, left: Left) {
        budget.max_cost = lower(budget.max_cost, left.cost);
        budget.max_tokens = lower(budget.max_tokens, left.tokens);
    }
}

/// Admit an operation of `user` with `spec` under the server's caps: its cost and token limits
/// lowered to what they leave, or `429 spend_cap_reached`. Every route that starts a user's
/// operation calls this before starting it.
pub async fn admit(
    app: &crate::App,
    user: &User,
    spec: &mut rein_core::spec::OperationSpec,
) -> Result<(), ApiError> {
    let left = app.config.caps.admit(&*app.store, user, Utc::now()).await?;
    SpendCaps::lower_budget(&mut spec.budget, left);
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
        assert_eq!(lower(Some(a), Some(b)), Some(b));
        assert_eq!(lower(Some(b), Some(a)), Some(b));
        assert_eq!(lower(None, Some(a)), Some(a));
        assert_eq!(lower(Some(a), None), Some(a));
        assert_eq!(lower::<u64>(None, None), None);
        let mut budget = rein_core::state::Budget {
            max_tokens: Some(500),
            ..Default::default()
        };
        let left = Left {
            cost: Some(b),
            tokens: Some(1_000),
        };
        SpendCaps::lower_budget(&mut budget, left);
        assert_eq!((budget.max_cost, budget.max_tokens), (Some(b), Some(500)));
    }
}
