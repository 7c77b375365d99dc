//! Where A2A clients asked to be told of their tasks' updates ([`PushConfig`]): rein's A2A
//! server posts each update of a task (an operation) to every configuration of it. The SQL
//! behind [`A2aPush`] is `sql/a2a_push.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::OperationId;
use serde::{Deserialize, Serialize};

/// One push-notification configuration of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushConfig {
    /// The task's operation.
    pub operation_id: OperationId,
    /// Its id among the task's configurations (the client's, or one rein chose).
    pub id: String,
    /// Where updates are posted.
    pub url: String,
    /// Echoed in `X-A2A-Notification-Token`, so the receiver knows the post is about its task.
    pub token: Option<String>,
    /// The `Authorization` scheme sent with each post (`Bearer`, …).
    pub auth_scheme: Option<String>,
    /// Its credentials.
    pub auth_credentials: Option<String>,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

/// Push-notification configurations. Every method is one statement.
pub trait A2aPush {
    /// Keep `owner`'s configuration, replacing the task's one of the same id.
    fn put_push_config<'a>(
        &'a self,
        owner: &'a str,
        config: &'a PushConfig,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// `owner`'s configurations of `operation`, oldest first.
    fn push_configs<'a>(
        &'a self,
        owner: &'a str,
        operation: OperationId,
    ) -> BoxFuture<'a, Result<Vec<PushConfig>, StoreError>>;

    /// Forget `owner`'s configuration `id` of `operation`; whether there was one.
    fn delete_push_config<'a>(
        &'a self,
        owner: &'a str,
        operation: OperationId,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// The operations with a configuration that have not finished, with their owners: what a
    /// server starting up follows again.
    fn pushed_unfinished(&self) -> BoxFuture<'_, Result<Vec<(String, OperationId)>, StoreError>>;
}
