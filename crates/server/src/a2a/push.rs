//! Push notifications: a client names a URL per task (`CreateTaskPushNotificationConfig`, or
//! inside `SendMessage`'s configuration) and rein posts each update of the task there, the
//! same `StreamResponse` a stream carries, with `X-A2A-Notification-Token` and the
//! configuration's `Authorization`. The URL passes the brief hooks' guard (no loopback or
//! private address unless the server allows it, `--allow-private-hooks`), when it is set and
//! before each post. Each task with a configuration is followed by one process (the one it was
//! set on; after a restart, every server that starts follows its unfinished ones again, so an
//! update may then arrive twice: its status timestamp tells repeats). A post is tried three
//! times (1 s, 2 s apart); configurations set after an update do not get it.

use super::rpc::A2aError;
use super::wire::{Authentication, NOTIFICATION_TOKEN, PushConfigWire, StreamResponse, TaskState};
use crate::AppState;
use rein_core::OperationId;
use rein_store::{A2aPush as _, PushConfig, Store as _};
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

/// The tasks this process follows for their push notifications.
#[derive(Debug, Default)]
pub struct Followed(Mutex<HashSet<OperationId>>);

impl Followed {
    /// Take `id` on; `false` when it is followed already.
    fn take(&self, id: OperationId) -> bool {
        self.0.lock().map(|mut s| s.insert(id)).unwrap_or(false)
    }

    fn done(&self, id: OperationId) {
        if let Ok(mut s) = self.0.lock() {
            s.remove(&id);
        }
    }
}

/// At most this many configurations per task.
const MAX_CONFIGS: usize = 10;

/// A configuration a client asked for, checked (its URL, id and authentication), not yet
/// kept: a message that starts a task checks it before anything runs.
pub struct Checked {
    id: String,
    url: String,
    token: Option<String>,
    auth_scheme: Option<String>,
    auth_credentials: Option<String>,
}

/// Check `wanted`: a URL the server may post to, an id of at most 128 characters, a named
/// authentication scheme.
pub async fn check(app: &AppState, wanted: PushConfigWire) -> Result<Checked, A2aError> {
    crate::brief_hooks::check_url(&wanted.url, app.config.private_hooks)
        .await
        .map_err(|e| A2aError::InvalidParams(format!("url: {e}")))?;
    let id = match wanted.id.filter(|i| !i.trim().is_empty()) {
        Some(i) if i.len() <= 128 => i,
        Some(_) => return Err(A2aError::InvalidParams("id: at most 128 characters".into())),
        None => uuid_like(),
    };
    let (auth_scheme, auth_credentials) = match wanted.authentication {
        Some(Authentication {
            scheme,
            credentials,
        }) if !scheme.trim().is_empty() => (Some(scheme), credentials),
        Some(_) => {
            return Err(A2aError::InvalidParams(
                "authentication.scheme: name the scheme (Bearer, Basic, …)".into(),
            ));
        }
        None => (None, None),
    };
    Ok(Checked {
        id,
        url: wanted.url,
        token: wanted.token.filter(|t| !t.is_empty()),
        auth_scheme,
        auth_credentials,
    })
}

/// Keep `checked` for the caller's task `id` and follow the task; answers the configuration
/// as kept.
pub async fn keep(
    app: &AppState,
    owner: &str,
    id: OperationId,
    checked: Checked,
) -> Result<PushConfigWire, A2aError> {
    let existing = app.store.push_configs(owner, id).await?;
    if existing.len() >= MAX_CONFIGS && !existing.iter().any(|c| c.id == checked.id) {
        return Err(A2aError::InvalidParams(format!(
            "task {id} has {MAX_CONFIGS} push configurations already: delete one first"
        )));
    }
    let config = PushConfig {
        operation_id: id,
        id: checked.id,
        url: checked.url,
        token: checked.token,
        auth_scheme: checked.auth_scheme,
        auth_credentials: checked.auth_credentials,
        created_at: chrono::Utc::now(),
    };
    app.store.put_push_config(owner, &config).await?;
    follow(app.clone(), owner.to_owned(), id).await;
    Ok(wire(&config))
}

/// A configuration as the protocol spells it (its credentials left out).
pub fn wire(c: &PushConfig) -> PushConfigWire {
    PushConfigWire {
        id: Some(c.id.clone()),
        task_id: Some(c.operation_id.to_string()),
        url: c.url.clone(),
        token: c.token.clone(),
        authentication: c.auth_scheme.clone().map(|scheme| Authentication {
            scheme,
            credentials: None,
        }),
    }
}

/// A fresh configuration id.
fn uuid_like() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Follow `owner`'s task `id` in the background (unless this process does already), posting
/// each update to its configurations until it ends.
pub async fn follow(app: AppState, owner: String, id: OperationId) {
    if !app.a2a_followed.take(id) {
        return;
    }
    let last = match app.store.operation(id).await {
        Ok(Some(record)) => match super::task::look_with(&app, &record, false).await {
            Ok(seen) => seen.state,
            Err(_) => TaskState::Working,
        },
        _ => {
            app.a2a_followed.done(id);
            return;
        }
    };
    tokio::spawn(async move {
        deliver(&app, &owner, id, last).await;
        app.a2a_followed.done(id);
    });
}

/// Follow again every unfinished task with a configuration (a server starting up).
pub async fn resume(app: AppState) {
    match app.store.pushed_unfinished().await {
        Ok(tasks) => {
            for (owner, id) in tasks {
                follow(app.clone(), owner, id).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "A2A push notifications were not resumed"),
    }
}

async fn deliver(app: &AppState, owner: &str, id: OperationId, mut last: TaskState) {
    let http = match crate::brief_hooks::hook_client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "A2A push notifications disabled: no HTTP client");
            return;
        }
    };
    // A task may wait on its client and go on many times: each wait ends one round of updates.
    loop {
        let mut updates = super::watch::updates(app.clone(), id, last, None);
        while let Some(update) = updates.recv().await {
            if let StreamResponse::StatusUpdate(s) = &update {
                last = s.status.state;
            }
            post_all(app, &http, owner, id, &update).await;
        }
        if last.is_terminal() || app.shutdown.is_cancelled() {
            return;
        }
        match app.store.push_configs(owner, id).await {
            Ok(c) if !c.is_empty() => {}
            _ => return,
        }
        // Waiting on the client: look again once something changes.
        tokio::select! {
            () = app.shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

async fn post_all(
    app: &AppState,
    http: &reqwest::Client,
    owner: &str,
    id: OperationId,
    update: &StreamResponse,
) {
    let configs = match app.store.push_configs(owner, id).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(operation = %id, error = %e, "A2A push configurations not read");
            return;
        }
    };
    let Ok(body) = serde_json::to_vec(update) else {
        return;
    };
    for c in configs {
        if let Err(e) = post(http, &c, &body, app.config.private_hooks).await {
            tracing::warn!(operation = %id, config = %c.id, error = %e, "an A2A push notification was not delivered");
        }
    }
}

async fn post(
    http: &reqwest::Client,
    c: &PushConfig,
    body: &[u8],
    allow_private: bool,
) -> Result<(), String> {
    let mut error = String::new();
    for attempt in 0..3u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(u64::from(attempt))).await;
        }
        crate::brief_hooks::check_url(&c.url, allow_private)
            .await
            .map_err(|e| e.to_string())?;
        let mut request = http
            .post(&c.url)
            .header("content-type", "application/json")
            .body(body.to_vec());
        if let Some(token) = &c.token {
            request = request.header(NOTIFICATION_TOKEN, token);
        }
        if let (Some(scheme), Some(credentials)) = (&c.auth_scheme, &c.auth_credentials) {
            request = request.header("authorization", format!("{scheme} {credentials}"));
        }
        match request.send().await {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => error = format!("HTTP {}", r.status().as_u16()),
            Err(e) => error = e.to_string(),
        }
    }
    Err(error)
}
