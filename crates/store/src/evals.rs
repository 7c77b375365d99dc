//! Evaluation runs as kept: their JSON, written and read whole by rein-operation's evals (the
//! one place that knows their shape), with what a listing needs beside it. The SQL is
//! `sql/evals.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;

/// One kept evaluation run.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalRunRecord {
    /// Id (`eval_` and a UUID).
    pub id: String,
    /// Whose (`None`: the local CLI's).
    pub owner: Option<String>,
    /// The dataset it ran (its file name).
    pub dataset: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// What a listing shows.
    pub summary: serde_json::Value,
    /// The whole run (empty in listings).
    pub body: serde_json::Value,
}

/// Evaluation runs.
pub trait Evals: Send + Sync {
    /// Keep a run.
    fn put_eval_run<'a>(&'a self, run: &'a EvalRunRecord) -> BoxFuture<'a, Result<(), StoreError>>;
    /// `owner`'s runs, newest first, without their bodies.
    fn eval_runs<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<EvalRunRecord>, StoreError>>;
    /// One of `owner`'s runs.
    fn eval_run<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<EvalRunRecord>, StoreError>>;
}
