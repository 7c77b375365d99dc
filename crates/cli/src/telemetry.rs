//! What the process reports about itself: logs on stderr (always for the server, for other
//! commands when `REIN_LOG` asks), and, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, the library crates' spans (operation, step,
//! model call, tool call, with OpenTelemetry's GenAI attributes) exported over OTLP/HTTP as
//! JSON, configured by the standard `OTEL_*` variables. Off otherwise.

use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::io::IsTerminal;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Hold it for the process's life; [`Telemetry::shutdown`] sends the spans not exported yet.
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Export what is left (spans are batched).
    pub fn shutdown(self) {
        if let Some(p) = self.traces
            && let Err(e) = p.shutdown()
        {
            eprintln!("warning: traces not all exported: {e}");
        }
    }
}

fn set(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| !v.trim().is_empty())
}

/// Install the process's log and trace subscribers: logs filtered by `logs` (none when
/// `None`), traces when an OTLP endpoint is configured.
pub fn init(logs: Option<String>) -> Telemetry {
    let fmt = logs.map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(tracing_subscriber::EnvFilter::new(filter))
    });
    let traces = (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .then(|| {
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpJson)
                .build()
        })
        .and_then(|built| match built {
            Ok(exporter) => Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(
                        opentelemetry_sdk::Resource::builder()
                            .with_service_name("rein")
                            .build(),
                    )
                    .build(),
            ),
            Err(e) => {
                eprintln!("warning: OpenTelemetry export is off: {e}");
                None
            }
        });
    let otel = traces.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("rein"))
            // rein's own spans; the HTTP and database crates' stay out of the traces.
            .with_filter(tracing_subscriber::filter::filter_fn(|m| {
                m.target().starts_with("rein")
            }))
    });
    tracing_subscriber::registry().with(fmt).with(otel).init();
    Telemetry { traces }
}
