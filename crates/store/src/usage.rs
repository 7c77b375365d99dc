//! Usage: what operations spent, summed from their records (tokens in and out, cost) since a
//! time, grouped by day, agent, model or user, with what replayed model calls spent (agent
//! `(replay)`; they count no operation). The operations' totals are the records' own sums, so
//! they equal what `op list` shows operation by operation.
//! The SQL behind [`Usage`] is `sql/usage.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::usage::Usd;
use serde::{Deserialize, Serialize};

rein_core::named_enum! {
    /// How usage is grouped.
    #[derive(Default)]
    pub enum UsageBy as "grouping" {
        /// By the UTC day an operation started (`2026-12-04`).
        #[default]
        Day = "day",
        /// By agent (`(none)` for operations run with no agent).
        Agent = "agent",
        /// By `provider/model`.
        Model = "model",
        /// By user (`(local)` for this machine's CLI).
        User = "user",
    }
}

/// Whose operations are summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose<'a> {
    /// One owner's (`None`: the local CLI's).
    Owner(Option<&'a str>),
    /// Everyone's.
    Everyone,
}

/// One group's sums.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageRow {
    /// The day, agent, model or user.
    pub key: String,
    /// Operations started in it (sub-agents count as their own operations).
    pub operations: u64,
    /// Tokens sent to models.
    pub input_tokens: u64,
    /// Tokens models answered.
    pub output_tokens: u64,
    /// What it cost.
    pub cost: Usd,
}

/// What one replayed model call spent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaySpend {
    /// Whose it is (`None`: the local CLI's).
    pub owner: Option<String>,
    /// The operation whose step was replayed.
    pub operation_id: rein_core::OperationId,
    /// The step.
    pub step: u64,
    /// The model asked.
    pub model: rein_core::state::ModelRef,
    /// Tokens sent.
    pub input_tokens: u64,
    /// Tokens answered.
    pub output_tokens: u64,
    /// What it cost.
    pub cost: Usd,
}

/// Usage sums.
pub trait Usage {
    /// Keep what replayed model calls spent, so usage and spending caps count it.
    fn record_replays<'a>(
        &'a self,
        spent: &'a [ReplaySpend],
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The operations of `whose` started at or after `since` and the model calls they replayed
    /// since, summed per `by`, in key order.
    fn usage<'a>(
        &'a self,
        whose: Whose<'a>,
        since: DateTime<Utc>,
        by: UsageBy,
    ) -> BoxFuture<'a, Result<Vec<UsageRow>, StoreError>>;
}
