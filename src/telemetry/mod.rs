//! OpenTelemetry export: spans and metrics of every run, over OTLP/HTTP, when the
//! OpenTelemetry variables ask for it (`OTEL_TRACES_EXPORTER=otlp`,
//! `OTEL_METRICS_EXPORTER=otlp`, or Claude Code's `CLAUDE_CODE_ENABLE_TELEMETRY=1`).
//!
//! The spans follow the OpenTelemetry GenAI conventions: a run is an `invoke_agent agentloop`
//! span (the session id as `gen_ai.conversation.id`, the terminal reason as
//! `agentloop.terminal_reason`, each transition of the table as an `agentloop.transition`
//! event), each model attempt a `chat {model}` span under it, each tool call an
//! `execute_tool {name}` span, and a subagent's run an `invoke_agent {type}` span under its
//! `Agent` call. Metrics: `gen_ai.client.token.usage`, `gen_ai.client.operation.duration`,
//! `agentloop.transitions` and `agentloop.cost.usage`. `docs/telemetry.md` lists every
//! attribute.
//!
//! The OpenTelemetry SDK (`opentelemetry_sdk`) keeps the spans, batches them and aggregates
//! the metrics; the exporters ([`export`]) encode OTLP by hand ([`otlp`]) and send it with
//! agentloop's own reqwest client, so no gRPC stack or second TLS stack is built.
//!
//! [`install`] reads the configuration once, at start; [`observe`] wraps a run's sink so its
//! events become spans; [`shutdown`] exports what is left before the process exits, on every
//! way out (the end of a command, an interrupted run, the second signal's quick exit).

pub mod config;
mod encode;
mod export;
pub mod otlp;
mod recorder;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};

use crate::engine::events::EventSink;
pub(crate) use recorder::RunInfo;

use config::{Config, Content};

/// The instrumentation scope of everything agentloop exports.
pub const SCOPE: &str = "agentloop";

/// The most events (transitions, retries) one span keeps, unless `OTEL_SPAN_EVENT_COUNT_LIMIT`
/// says: enough for a run of thousands of turns; the SDK's default of 128 would drop most of a
/// long run's transitions.
const MAX_EVENTS_PER_SPAN: u32 = 1 << 16;

/// Bucket bounds of `gen_ai.client.token.usage`, as the GenAI conventions advise.
const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// Bucket bounds of `gen_ai.client.operation.duration`, in seconds, as the conventions advise.
const DURATION_BOUNDS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// The instruments a run records into.
pub(crate) struct Instruments {
    pub(crate) token_usage: Histogram<u64>,
    pub(crate) duration: Histogram<f64>,
    pub(crate) transitions: Counter<u64>,
    pub(crate) cost: Counter<f64>,
}

/// The process's telemetry: the SDK's providers and what every run needs from them.
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    pub(crate) tracer: SdkTracer,
    pub(crate) instruments: Option<Instruments>,
    /// The caller's trace context (`TRACEPARENT`), or none.
    pub(crate) parent: Context,
    pub(crate) content: Content,
}

static ACTIVE: OnceLock<Telemetry> = OnceLock::new();

/// The resource every signal carries: `service.name`, `service.version`, the host, and
/// `OTEL_RESOURCE_ATTRIBUTES`.
fn resource(config: &Config) -> Resource {
    let mut attributes: Vec<KeyValue> = config
        .resource_attributes
        .iter()
        .filter(|(k, _)| k != "service.name")
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    attributes.push(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    attributes.push(KeyValue::new("os.type", std::env::consts::OS));
    attributes.push(KeyValue::new("host.arch", std::env::consts::ARCH));
    Resource::builder_empty().with_service_name(config.service_name.clone()).with_attributes(attributes).build()
}

impl Telemetry {
    /// The pipelines `config` asks for. Errors name what could not start.
    pub fn start(config: &Config) -> Result<Telemetry, String> {
        let runtime = Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the telemetry runtime: {e}"))?,
        );
        let resource = resource(config);
        let tracer_provider = match &config.traces {
            Some(endpoint) => {
                let exporter = export::Spans::new(export::Transport::new(endpoint.clone(), runtime.clone())?);
                let mut builder = SdkTracerProvider::builder()
                    .with_span_processor(BatchSpanProcessor::builder(exporter).build())
                    .with_resource(resource.clone());
                // The SDK reads `OTEL_SPAN_EVENT_COUNT_LIMIT` (and `OTEL_TRACES_SAMPLER`) itself.
                if std::env::var_os("OTEL_SPAN_EVENT_COUNT_LIMIT").is_none() {
                    builder = builder.with_max_events_per_span(MAX_EVENTS_PER_SPAN);
                }
                Some(builder.build())
            }
            None => None,
        };
        let meter_provider = match &config.metrics {
            Some(endpoint) => {
                let exporter = export::Metrics::new(export::Transport::new(endpoint.clone(), runtime)?, config.delta);
                let reader = PeriodicReader::builder(exporter).with_interval(config.metric_interval).build();
                Some(SdkMeterProvider::builder().with_reader(reader).with_resource(resource).build())
            }
            None => None,
        };
        let version = env!("CARGO_PKG_VERSION");
        let scope = opentelemetry::InstrumentationScope::builder(SCOPE).with_version(version).build();
        // With no span exporter, a provider with no processor: its spans go nowhere.
        let tracer = tracer_provider
            .clone()
            .unwrap_or_else(|| SdkTracerProvider::builder().build())
            .tracer_with_scope(scope.clone());
        let instruments = meter_provider.as_ref().map(|provider| {
            let meter = provider.meter_with_scope(scope);
            Instruments {
                token_usage: meter
                    .u64_histogram("gen_ai.client.token.usage")
                    .with_description("Number of input and output tokens used")
                    .with_unit("{token}")
                    .with_boundaries(TOKEN_BOUNDS.to_vec())
                    .build(),
                duration: meter
                    .f64_histogram("gen_ai.client.operation.duration")
                    .with_description("GenAI operation duration")
                    .with_unit("s")
                    .with_boundaries(DURATION_BOUNDS.to_vec())
                    .build(),
                transitions: meter
                    .u64_counter("agentloop.transitions")
                    .with_description("Transitions of the loop's table taken, by edge")
                    .with_unit("{transition}")
                    .build(),
                cost: meter
                    .f64_counter("agentloop.cost.usage")
                    .with_description("What the model calls cost, by model")
                    .with_unit("USD")
                    .build(),
            }
        });
        let parent = match &config.traceparent {
            Some(traceparent) => {
                let mut carrier = std::collections::HashMap::new();
                carrier.insert("traceparent".to_owned(), traceparent.clone());
                if let Some(state) = &config.tracestate {
                    carrier.insert("tracestate".to_owned(), state.clone());
                }
                TraceContextPropagator::new().extract(&carrier)
            }
            None => Context::new(),
        };
        Ok(Telemetry { tracer_provider, meter_provider, tracer, instruments, parent, content: config.content })
    }

    /// Export what is buffered and stop; blocks until done or each pipeline's timeout.
    fn stop(&self) {
        if let Some(provider) = &self.tracer_provider {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(10));
        }
        if let Some(provider) = &self.meter_provider {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(10));
        }
    }
}

/// Read the telemetry configuration from agentloop's environment and start what it asks
/// for; `warn` hears what cannot be honoured. Does nothing when nothing is exported, or on a
/// second call.
pub fn install(mut warn: impl FnMut(&str)) {
    let Some(config) = Config::from_env(crate::credentials::var) else { return };
    for warning in &config.warnings {
        warn(warning);
    }
    match Telemetry::start(&config) {
        Ok(telemetry) => {
            let _ = ACTIVE.set(telemetry);
        }
        Err(e) => warn(&format!("telemetry is off: {e}")),
    }
}

/// `sink`, recording the run `info` describes when telemetry is on; `sink` itself otherwise.
pub(crate) fn observe(sink: Box<dyn EventSink>, info: impl FnOnce() -> RunInfo) -> Box<dyn EventSink> {
    match ACTIVE.get() {
        Some(telemetry) => Box::new(recorder::Recording::new(telemetry, info(), sink)),
        None => sink,
    }
}

/// Export everything still buffered and stop, off the async runtime's workers. Spans of
/// runs still open are not included: a run ends its spans when its sink is dropped.
pub async fn shutdown() {
    if let Some(telemetry) = ACTIVE.get() {
        let _ = tokio::task::spawn_blocking(|| telemetry.stop()).await;
    }
}

/// [`shutdown`] for a path that exits the process at once (the second signal): blocks the
/// calling thread.
pub fn shutdown_now() {
    if let Some(telemetry) = ACTIVE.get() {
        telemetry.stop();
    }
}
