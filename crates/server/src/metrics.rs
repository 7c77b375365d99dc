//! `GET /metrics`: Prometheus metrics of this server (OpenMetrics text). What its runs did is
//! counted as their events pass its drivers' sinks (steps, model calls with their latency,
//! tokens and cost by model, tool calls by tool and outcome); what the database holds is
//! counted when scraped (operations by status, task fires by status and skip reason, across
//! every process sharing it), with the event streams open here.

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rein_core::AgentEvent;
use rein_core::event::EventKind;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabel {
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FireLabels {
    status: String,
    reason: String,
}

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    steps: Counter,
    model_calls: Family<ModelLabel, Counter>,
    model_seconds: Family<ModelLabel, Histogram>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<ModelLabel, Counter<f64, AtomicU64>>,
    cache_saved: Family<ModelLabel, Counter<f64, AtomicU64>>,
    tool_calls: Family<ToolLabels, Counter>,
    operations: Family<StatusLabel, Gauge>,
    fires: Family<FireLabels, Gauge>,
    streams: Gauge,
    /// Model calls in flight (by assistant message), with their model and start.
    calls: Mutex<HashMap<rein_core::MessageId, (String, Instant)>>,
    /// Tool calls announced and not yet answered, by call id: their `identifier/api`.
    tools: Mutex<HashMap<String, String>>,
    /// One scrape at a time sets the database gauges and encodes them.
    scrape: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let steps = Counter::default();
        let model_calls = Family::<ModelLabel, Counter>::default();
        let model_seconds = Family::<ModelLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.05, 2.0, 12))
        });
        let tokens = Family::<TokenLabels, Counter>::default();
        let cost = Family::<ModelLabel, Counter<f64, AtomicU64>>::default();
        let cache_saved = Family::<ModelLabel, Counter<f64, AtomicU64>>::default();
        let tool_calls = Family::<ToolLabels, Counter>::default();
        let operations = Family::<StatusLabel, Gauge>::default();
        let fires = Family::<FireLabels, Gauge>::default();
        let streams = Gauge::default();
        registry.register("rein_steps", "Steps run here", steps.clone());
        registry.register(
            "rein_model_calls",
            "Model calls run here, by model",
            model_calls.clone(),
        );
        registry.register(
            "rein_model_call_seconds",
            "Model call latency (first request to last byte), by model",
            model_seconds.clone(),
        );
        registry.register(
            "rein_tokens",
            "Tokens of model calls run here, by model and kind (input, output; cache_read and cache_write: the part of the input the provider read from or wrote to its prompt cache)",
            tokens.clone(),
        );
        registry.register(
            "rein_cost_usd",
            "Cost of model calls run here, by model, in USD",
            cost.clone(),
        );
        registry.register(
            "rein_cache_saved_usd",
            "What providers' prompt caches saved on model calls run here, by model, in USD (the calls priced with every cached token at the input price, less their cost)",
            cache_saved.clone(),
        );
        registry.register(
            "rein_tool_calls",
            "Tool calls run here, by tool and outcome",
            tool_calls.clone(),
        );
        registry.register(
            "rein_operations",
            "Operations in the database, by status",
            operations.clone(),
        );
        registry.register(
            "rein_task_fires",
            "Task fires in the database, by status and skip reason",
            fires.clone(),
        );
        registry.register(
            "rein_event_streams",
            "Event streams open on this server",
            streams.clone(),
        );
        Self {
            registry,
            steps,
            model_calls,
            model_seconds,
            tokens,
            cost,
            cache_saved,
            tool_calls,
            operations,
            fires,
            streams,
            calls: Mutex::default(),
            tools: Mutex::default(),
            scrape: Mutex::default(),
        }
    }
}

impl Metrics {
    /// Count what `event` says happened.
    pub fn record(&self, event: &AgentEvent) {
        match &event.kind {
            EventKind::StepComplete { .. } => {
                self.steps.inc();
            }
            EventKind::LlmStart {
                assistant_message_id,
                model,
            } => {
                let model = model.clone().unwrap_or_else(|| "unknown".into());
                self.lock_calls()
                    .insert(*assistant_message_id, (model, Instant::now()));
            }
            EventKind::LlmResult {
                assistant_message_id,
                usage,
                cost,
                cache_saved,
                ..
            } => {
                let Some((model, started)) = self.lock_calls().remove(assistant_message_id) else {
                    return;
                };
                let label = ModelLabel {
                    model: model.clone(),
                };
                self.model_calls.get_or_create(&label).inc();
                self.model_seconds
                    .get_or_create(&label)
                    .observe(started.elapsed().as_secs_f64());
                for (kind, n) in [
                    ("input", usage.input),
                    ("output", usage.output),
                    ("cache_read", usage.cached_read),
                    ("cache_write", usage.cache_write),
                ] {
                    self.tokens
                        .get_or_create(&TokenLabels {
                            model: model.clone(),
                            kind: kind.into(),
                        })
                        .inc_by(n);
                }
                self.cost.get_or_create(&label).inc_by(cost.dollars());
                self.cache_saved
                    .get_or_create(&label)
                    .inc_by(cache_saved.dollars());
            }
            EventKind::ToolPending { tool_calls } => {
                let mut tools = self.lock_tools();
                for c in tool_calls {
                    tools.insert(c.id.to_string(), c.key());
                }
            }
            EventKind::ToolResult {
                tool_call_id,
                status,
                ..
            } => {
                let tool = self
                    .lock_tools()
                    .remove(&**tool_call_id)
                    .unwrap_or_else(|| "unknown".into());
                let outcome = status.to_string();
                self.tool_calls
                    .get_or_create(&ToolLabels { tool, outcome })
                    .inc();
            }
            _ => {}
        }
    }

    fn lock_calls(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<rein_core::MessageId, (String, Instant)>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_tools(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The exposition, with the database's counts and the open streams as of now.
    fn render(
        &self,
        counts: &rein_store::Counts,
        streams: usize,
    ) -> Result<String, std::fmt::Error> {
        let _one = self.scrape.lock().unwrap_or_else(|p| p.into_inner());
        self.operations.clear();
        for (status, n) in &counts.operations {
            self.operations
                .get_or_create(&StatusLabel {
                    status: status.clone(),
                })
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
        self.fires.clear();
        for (status, reason, n) in &counts.fires {
            self.fires
                .get_or_create(&FireLabels {
                    status: status.clone(),
                    reason: reason.clone(),
                })
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
        self.streams.set(i64::try_from(streams).unwrap_or(i64::MAX));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Counts a driver's live events into the server's metrics.
pub struct MetricsSink(pub Arc<Metrics>);

impl rein_core::engine::EventSink for MetricsSink {
    fn publish(&self, event: &AgentEvent) {
        self.0.record(event);
    }
}

/// `GET /metrics` (with a token when the server has them).
pub async fn scrape(
    State(app): State<AppState>,
    Caller(_): Caller,
) -> Result<impl IntoResponse, ApiError> {
    let counts = app.store.counts().await?;
    let text = app
        .runner
        .metrics
        .render(&counts, app.hub.streams())
        .map_err(|e| ApiError::internal(format!("metrics: {e}")))?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    ))
}
