//! The exporters the OpenTelemetry SDK's batch span processor and periodic metric reader
//! call: each encodes what it is handed (protobuf or JSON) and POSTs it with agentloop's own
//! HTTP client (reqwest on rustls, the model clients' stack).
//!
//! The SDK calls them on threads of its own, outside any tokio runtime, and blocks on their
//! futures; so the POST runs on a small current-thread runtime the exporters share, and a
//! call made from inside a runtime (a flush at exit) runs it on a scoped thread instead of
//! blocking that runtime's worker.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use super::config::{Endpoint, Protocol};
use super::{encode, otlp};

/// One signal's POST: the client, the endpoint and the runtime it runs on.
#[derive(Debug)]
pub(crate) struct Transport {
    endpoint: Endpoint,
    client: reqwest::Client,
    runtime: Arc<tokio::runtime::Runtime>,
}

impl Transport {
    /// A transport to `endpoint`, on `runtime`.
    pub(crate) fn new(endpoint: Endpoint, runtime: Arc<tokio::runtime::Runtime>) -> Result<Transport, String> {
        let plain = endpoint.url.starts_with("http://");
        let client = crate::http_client::builder(plain)
            .timeout(endpoint.timeout)
            .build()
            .map_err(|e| format!("cannot start the OTLP client: {e}"))?;
        Ok(Transport { endpoint, client, runtime })
    }

    /// Encode `message` and POST it; an error names the endpoint and what went wrong.
    fn send<M: prost::Message + serde::Serialize>(&self, message: &M) -> OTelSdkResult {
        let body = match self.endpoint.protocol {
            Protocol::Protobuf => message.encode_to_vec(),
            Protocol::Json => serde_json::to_vec(message).map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?,
        };
        let mut request = self
            .client
            .post(&self.endpoint.url)
            .header(reqwest::header::CONTENT_TYPE, self.endpoint.protocol.content_type())
            .body(body);
        for (name, value) in &self.endpoint.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let url = &self.endpoint.url;
        let post = async move {
            let response = request.send().await.map_err(|e| format!("cannot reach {url}: {e}"))?;
            let status = response.status();
            // Drain the body so the connection can be used again.
            let text = response.text().await.unwrap_or_default();
            if status.is_success() {
                Ok(())
            } else {
                Err(format!("{url} answered {status}: {}", text.chars().take(200).collect::<String>()))
            }
        };
        let result = if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|scope| scope.spawn(|| self.runtime.block_on(post)).join())
                .unwrap_or_else(|_| Err("the OTLP export panicked".to_owned()))
        } else {
            self.runtime.block_on(post)
        };
        result.map_err(|e| {
            // Once per process: a collector that is down should not fill the terminal.
            if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                crate::stderr::line(&format!("agentloop: warning: telemetry: {e}"));
            }
            OTelSdkError::InternalFailure(e)
        })
    }
}

/// Whether a failed export was reported already.
static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The span exporter.
#[derive(Debug)]
pub(crate) struct Spans {
    transport: Transport,
    resource: Mutex<otlp::Resource>,
}

impl Spans {
    /// Spans sent by `transport`.
    pub(crate) fn new(transport: Transport) -> Spans {
        Spans { transport, resource: Mutex::new(otlp::Resource::default()) }
    }
}

impl SpanExporter for Spans {
    fn export(&self, batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let resource = self.resource.lock().map(|r| r.clone()).unwrap_or_default();
        let result = self.transport.send(&encode::spans(batch, &resource));
        std::future::ready(result)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        if let Ok(mut mine) = self.resource.lock() {
            *mine = encode::resource(resource);
        }
    }
}

/// The metric exporter.
#[derive(Debug)]
pub(crate) struct Metrics {
    transport: Transport,
    temporality: Temporality,
}

impl Metrics {
    /// Metrics sent by `transport`, `delta` or cumulative.
    pub(crate) fn new(transport: Transport, delta: bool) -> Metrics {
        Metrics { transport, temporality: if delta { Temporality::Delta } else { Temporality::Cumulative } }
    }
}

impl PushMetricExporter for Metrics {
    fn export(&self, metrics: &ResourceMetrics) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let resource = encode::resource(metrics.resource());
        let request = encode::metrics(metrics, &resource);
        let result = if request.resource_metrics.iter().all(|r| r.scope_metrics.iter().all(|s| s.metrics.is_empty())) {
            Ok(())
        } else {
            self.transport.send(&request)
        };
        std::future::ready(result)
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        self.temporality
    }
}
