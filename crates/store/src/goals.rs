//! Goals as stored ([`GoalRecord`]): the graph (rein-core's [`Goal`]), how it runs, what its
//! own model calls spent, and its events in order. A goal changes only by a commit that
//! writes the new graph and the one event that made it, if no other commit came between
//! ([`Goals::commit_goal`]). The SQL behind [`Goals`] is `sql/goals.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::goal::{Goal, GoalEvent, GoalSettings};
use rein_core::ids::GoalId;
use rein_core::usage::Usd;

/// A goal with its owner and settings.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalRecord {
    /// Whose.
    pub owner: String,
    /// The graph.
    pub goal: Goal,
    /// How it runs.
    pub settings: GoalSettings,
    /// Commits so far (the first, its creation, is 0).
    pub seq: u64,
    /// What its own model calls (planning, verification, acceptance) cost.
    pub spent: Usd,
    /// Their tokens.
    pub spent_tokens: u64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// One committed event of a goal.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalLogEntry {
    /// Its place (1 for the first commit after creation).
    pub seq: u64,
    /// What happened.
    pub event: GoalEvent,
    /// When.
    pub at: DateTime<Utc>,
}

/// What a commit adds to a goal's own spending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GoalSpend {
    /// Cost.
    pub cost: Usd,
    /// Tokens.
    pub tokens: u64,
}

/// Goals. Every method is one transaction.
pub trait Goals {
    /// Keep a new goal (seq 0).
    fn create_goal<'a>(&'a self, record: &'a GoalRecord) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Goal `id` (`owner`'s only, when given).
    fn goal<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: GoalId,
    ) -> BoxFuture<'a, Result<Option<GoalRecord>, StoreError>>;

    /// `owner`'s goals, newest first, at most `limit`.
    fn list_goals<'a>(
        &'a self,
        owner: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<GoalRecord>, StoreError>>;

    /// The ids and owners of the goals that are not over (what a runner advances).
    fn open_goals(&self) -> BoxFuture<'_, Result<Vec<(String, GoalId)>, StoreError>>;

    /// Write `goal` as goal `id`'s graph with `event` (the one that made it) and `spend` (and
    /// `settings`, when the event changed them), if its seq is still `seq`: `Ok(true)`, the
    /// goal is then at `seq + 1`; `Ok(false)`: another commit came first and nothing was
    /// written.
    fn commit_goal<'a>(
        &'a self,
        seq: u64,
        goal: &'a Goal,
        event: &'a GoalEvent,
        spend: GoalSpend,
        settings: Option<&'a GoalSettings>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Claim goal `id` for `holder` until `until`, if nobody else holds an unexpired claim
    /// (the holder's own claim is extended); whether `holder` holds it now.
    fn claim_goal<'a>(
        &'a self,
        id: GoalId,
        holder: &'a str,
        until: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Let go of `holder`'s claim on goal `id` (another process may take it at once).
    fn release_goal<'a>(
        &'a self,
        id: GoalId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Goal `id`'s events after `after` (0: all), in order.
    fn goal_events<'a>(
        &'a self,
        id: GoalId,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<GoalLogEntry>, StoreError>>;
}
