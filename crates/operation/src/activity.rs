//! What a running operation is doing, kept on its record while it runs: the step, and whether
//! it waits for the model, runs tools (which), or backs off before a retry (until when). Events
//! of the step in progress update it; one writer task per run stores the latest value, off the
//! step's path: the first at once (the record reads `running`), then at most one write per
//! [`SETTLE`], so a fast loop whose steps take milliseconds adds no write transactions to
//! its commits, while anything a person could see (a long model call, a backoff) is on the
//! record within that time. The store ignores a write once the operation stopped running, so a
//! late one cannot outlive the run.

use chrono::Utc;
use rein_core::engine::EventSink;
use rein_core::event::EventKind;
use rein_core::{AgentEvent, OperationId};
use rein_store::{Activity, Doing, Store};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// How long an activity must wait before it is written after the previous write: shorter
/// phases are gone before anyone could read them.
pub(crate) const SETTLE: Duration = Duration::from_millis(200);

/// Publishes each event to the host's sink and turns the ones that change what the step is
/// doing into the run's activity.
pub(crate) struct ActivitySink {
    host: Option<Arc<dyn EventSink>>,
    latest: watch::Sender<Option<Activity>>,
    /// The model of the latest model call: a retry resumes it without a new event, and the
    /// writer, which may skip the short-lived activities in between, says so with its name.
    model: Arc<Mutex<Option<String>>>,
}

/// The activity an event means, if it changes it.
fn doing(kind: &EventKind) -> Option<Doing> {
    Some(match kind {
        EventKind::StepStart { .. } | EventKind::LlmResult { .. } => Doing::Deciding,
        EventKind::LlmStart { model, .. } => Doing::ModelCall {
            model: model.clone(),
        },
        EventKind::ToolPending { tool_calls } => Doing::Tools {
            names: tool_calls.iter().map(|c| c.key()).collect(),
        },
        EventKind::StreamRetry {
            attempt,
            max_attempts,
            delay_ms,
            error_kind,
        } => Doing::BackingOff {
            attempt: *attempt,
            max_attempts: *max_attempts,
            retry_at: Utc::now()
                + chrono::Duration::milliseconds(i64::try_from(*delay_ms).unwrap_or(i64::MAX / 2)),
            error_kind: error_kind.clone(),
        },
        _ => return None,
    })
}

impl EventSink for ActivitySink {
    fn publish(&self, event: &AgentEvent) {
        if let Some(h) = &self.host {
            h.publish(event);
        }
        if let Some(d) = doing(&event.kind) {
            if let Doing::ModelCall { model } = &d {
                *self.model.lock().unwrap_or_else(|p| p.into_inner()) = model.clone();
            }
            self.latest.send_replace(Some(Activity {
                step: event.step,
                since: Utc::now(),
                doing: d,
            }));
        }
    }
}

/// Stops the run's writer when dropped.
pub(crate) struct ActivityWriter(tokio::task::JoinHandle<()>);

impl Drop for ActivityWriter {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A sink for the run of `id` that also keeps its activity in `store`, and the writer task
/// doing that; the operation reads `running` from now on.
pub(crate) fn track(
    store: Arc<dyn Store>,
    id: OperationId,
    host: Option<Arc<dyn EventSink>>,
    step: u32,
) -> (Arc<ActivitySink>, ActivityWriter) {
    let first = Activity {
        step,
        since: Utc::now(),
        doing: Doing::Deciding,
    };
    let (latest, mut rx) = watch::channel(Some(first));
    let model = Arc::new(Mutex::new(None::<String>));
    let last_model = Arc::clone(&model);
    let writer = tokio::spawn(async move {
        let write = |a: Activity| {
            let store = Arc::clone(&store);
            async move {
                if let Err(e) = store.set_activity(id, &a).await {
                    tracing::debug!(operation = %id, error = %e, "activity not recorded");
                }
            }
        };
        loop {
            let current = rx.borrow_and_update().clone();
            let mut retry = None;
            if let Some(a) = current {
                if let Doing::BackingOff { retry_at, .. } = &a.doing {
                    retry = Some((*retry_at, a.step));
                }
                write(a).await;
            }
            // A retry resumes the same model call without a new event: say so when it starts.
            if let Some((at, step)) = retry {
                let wait = (at - Utc::now()).to_std().unwrap_or_default();
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { return } else { continue },
                    () = tokio::time::sleep(wait) => {
                        let model = last_model.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        write(Activity {
                            step,
                            since: Utc::now(),
                            doing: Doing::ModelCall { model },
                        })
                        .await;
                    }
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
            // Let a burst of changes settle; the latest value is written after it.
            tokio::time::sleep(SETTLE).await;
        }
    });
    (
        Arc::new(ActivitySink {
            host,
            latest,
            model,
        }),
        ActivityWriter(writer),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use rein_core::{AgentState, Message, MessageId};
    use rein_store::{NewOperation, SqlStore, Synchronous, Trigger};

    fn event(id: OperationId, seq: u64, kind: EventKind) -> AgentEvent {
        AgentEvent {
            operation_id: id,
            step: 1,
            seq,
            kind,
        }
    }

    /// A model call that fails at once and backs off: the writer, settling, never writes the
    /// short-lived `model_call`, yet the call that resumes after the backoff is named.
    #[tokio::test]
    async fn a_retried_model_call_is_named_even_when_its_first_start_was_never_written() {
        let dir = std::env::temp_dir().join(format!("rein-activity-{}", OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Arc::new(
            SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
                .await
                .unwrap(),
        );
        let state = AgentState::new(OperationId::new()).with_message(Message::user("go"));
        let id = state.operation_id;
        store
            .create_operation(&NewOperation {
                prompt: None,
                topic_id: format!("topic_{id}"),
                state,
                agent: None,
                trigger: Trigger::Api,
                parent_operation: None,
                next_context: None,
                owner: None,
                spec: Default::default(),
                admission: None,
                thread: None,
                gate: None,
                response: None,
            })
            .await
            .unwrap();
        let store_dyn: Arc<dyn Store> = store.clone();
        let (sink, _writer) = track(store_dyn, id, None, 1);
        // All within one settle window.
        sink.publish(&event(
            id,
            0,
            EventKind::StepStart {
                phase: "user_input".into(),
            },
        ));
        sink.publish(&event(
            id,
            1,
            EventKind::LlmStart {
                assistant_message_id: MessageId::new(),
                model: Some("openai/gpt-4o-mini".into()),
            },
        ));
        sink.publish(&event(
            id,
            2,
            EventKind::StreamRetry {
                attempt: 2,
                max_attempts: 3,
                delay_ms: 300,
                error_kind: Some("rate_limit".into()),
            },
        ));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let doing = loop {
            let record = store.operation(id).await.unwrap().unwrap();
            if let Some(Activity {
                doing: d @ Doing::ModelCall { .. },
                ..
            }) = record.activity
            {
                break d;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the resumed model call was never recorded: {:?}",
                record.activity
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            doing,
            Doing::ModelCall {
                model: Some("openai/gpt-4o-mini".into())
            }
        );
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
