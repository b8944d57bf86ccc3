//! Which telemetry to export, and where: read from the OpenTelemetry SDK's environment
//! variables (and Claude Code's switch), as every OpenTelemetry SDK reads them.

use std::time::Duration;

/// How an OTLP/HTTP body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf` (the default), `application/x-protobuf`.
    Protobuf,
    /// `http/json`, `application/json`.
    Json,
}

impl Protocol {
    /// The `content-type` of its bodies.
    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        }
    }
}

/// Where one signal (traces or metrics) is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The full URL of the POST (`…/v1/traces`, `…/v1/metrics`).
    pub url: String,
    /// The body's encoding.
    pub protocol: Protocol,
    /// Extra headers (`OTEL_EXPORTER_OTLP_HEADERS`), e.g. an `authorization`.
    pub headers: Vec<(String, String)>,
    /// How long one export may take.
    pub timeout: Duration,
}

/// What the prompts, replies and tool calls may put in the exported spans: nothing unless a
/// variable opts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Content {
    /// The user's prompt on the run's span (`gen_ai.input.messages`):
    /// `OTEL_LOG_USER_PROMPTS=1` (Claude Code's) or the GenAI variable.
    pub prompts: bool,
    /// Tool arguments and results on the tool spans (`gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`): `OTEL_LOG_TOOL_DETAILS=1` (Claude Code's) or the GenAI
    /// variable `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, which opts in both.
    pub tools: bool,
}

/// The telemetry agentloop exports.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Spans, when exported.
    pub traces: Option<Endpoint>,
    /// Metrics, when exported.
    pub metrics: Option<Endpoint>,
    /// How often metrics are exported (`OTEL_METRIC_EXPORT_INTERVAL`, ms; 60 s), besides at
    /// the end.
    pub metric_interval: Duration,
    /// Delta rather than cumulative sums and histograms
    /// (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta`).
    pub delta: bool,
    /// `service.name`: `OTEL_SERVICE_NAME`, else `service.name` in
    /// `OTEL_RESOURCE_ATTRIBUTES`, else `agentloop`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, in order.
    pub resource_attributes: Vec<(String, String)>,
    /// The caller's trace context (`TRACEPARENT`, `TRACESTATE`): the parent of every run's span.
    pub traceparent: Option<String>,
    /// The caller's `TRACESTATE`.
    pub tracestate: Option<String>,
    /// What content may be exported.
    pub content: Content,
    /// What was set but cannot be honoured (a `grpc` protocol, an unknown exporter), for a
    /// warning each.
    pub warnings: Vec<String>,
}

fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// `%XX` escapes decoded (the W3C Baggage form `OTEL_*_HEADERS` and
/// `OTEL_RESOURCE_ATTRIBUTES` use); a bad escape is kept as written.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) =
                (bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b)))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `k1=v1,k2=v2` pairs, trimmed and decoded; an entry without `=` is skipped.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|entry| entry.split_once('='))
        .map(|(k, v)| (percent_decoded(k.trim()), percent_decoded(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

impl Config {
    /// The configuration `var` (a variable's value by name) describes; `None` when nothing
    /// is exported.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Config> {
        if truthy(var("OTEL_SDK_DISABLED")) {
            return None;
        }
        let claude_code = truthy(var("CLAUDE_CODE_ENABLE_TELEMETRY"));
        let mut warnings = Vec::new();
        let traces = endpoint(&var, "TRACES", claude_code, &mut warnings);
        let metrics = endpoint(&var, "METRICS", claude_code, &mut warnings);
        if traces.is_none() && metrics.is_none() {
            return None;
        }
        let resource_attributes = var("OTEL_RESOURCE_ATTRIBUTES").map(|a| pairs(&a)).unwrap_or_default();
        let service_name = var("OTEL_SERVICE_NAME")
            .filter(|s| !s.trim().is_empty())
            .or_else(|| resource_attributes.iter().find(|(k, _)| k == "service.name").map(|(_, v)| v.clone()))
            .unwrap_or_else(|| "agentloop".to_owned());
        let both = truthy(var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"));
        Some(Config {
            traces,
            metrics,
            metric_interval: var("OTEL_METRIC_EXPORT_INTERVAL")
                .and_then(|ms| ms.trim().parse().ok())
                .map_or(Duration::from_secs(60), Duration::from_millis),
            delta: var("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("delta")),
            service_name,
            resource_attributes,
            traceparent: var("TRACEPARENT").filter(|t| !t.trim().is_empty()),
            tracestate: var("TRACESTATE").filter(|t| !t.trim().is_empty()),
            content: Content {
                prompts: both || truthy(var("OTEL_LOG_USER_PROMPTS")),
                tools: both || truthy(var("OTEL_LOG_TOOL_DETAILS")),
            },
            warnings,
        })
    }
}

/// The endpoint of `signal` (`TRACES` or `METRICS`), when its exporter is `otlp`:
/// `OTEL_{signal}_EXPORTER=otlp`, or unset with `CLAUDE_CODE_ENABLE_TELEMETRY=1`.
fn endpoint(
    var: &impl Fn(&str) -> Option<String>,
    signal: &str,
    claude_code: bool,
    warnings: &mut Vec<String>,
) -> Option<Endpoint> {
    let exporter_var = format!("OTEL_{signal}_EXPORTER");
    let exporters = var(&exporter_var).unwrap_or_default();
    let listed: Vec<&str> = exporters.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    let on = if listed.is_empty() { claude_code } else { listed.contains(&"otlp") };
    for other in listed.iter().filter(|e| !matches!(**e, "otlp" | "none")) {
        warnings.push(format!("{exporter_var}={other} is not supported (only otlp); nothing is exported that way"));
    }
    if !on {
        return None;
    }
    let specific = |name: &str| var(&format!("OTEL_EXPORTER_OTLP_{signal}_{name}")).filter(|v| !v.trim().is_empty());
    let general = |name: &str| var(&format!("OTEL_EXPORTER_OTLP_{name}")).filter(|v| !v.trim().is_empty());
    let protocol = match specific("PROTOCOL").or_else(|| general("PROTOCOL")).as_deref().map(str::trim) {
        None | Some("http/protobuf") => Protocol::Protobuf,
        Some("http/json") => Protocol::Json,
        Some(other) => {
            warnings.push(format!(
                "OTLP protocol {other} is not supported (http/protobuf or http/json); {} are not exported",
                signal.to_ascii_lowercase()
            ));
            return None;
        }
    };
    let path = format!("v1/{}", signal.to_ascii_lowercase());
    let url = match specific("ENDPOINT") {
        Some(url) => url.trim().to_owned(),
        None => {
            let base = general("ENDPOINT").unwrap_or_else(|| "http://localhost:4318".to_owned());
            format!("{}/{path}", base.trim().trim_end_matches('/'))
        }
    };
    let mut headers = general("HEADERS").map(|h| pairs(&h)).unwrap_or_default();
    for (key, value) in specific("HEADERS").map(|h| pairs(&h)).unwrap_or_default() {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
        headers.push((key, value));
    }
    let timeout = specific("TIMEOUT")
        .or_else(|| general("TIMEOUT"))
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
    Some(Endpoint { url, protocol, headers, timeout })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Option<Config> {
        Config::from_env(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn nothing_is_exported_unless_an_exporter_is_asked_for() {
        assert_eq!(config(&[]), None);
        assert_eq!(config(&[("OTEL_TRACES_EXPORTER", "none")]), None);
        assert_eq!(config(&[("OTEL_TRACES_EXPORTER", "otlp"), ("OTEL_SDK_DISABLED", "true")]), None);
    }

    #[test]
    fn the_otlp_variables_choose_the_url_protocol_and_headers() {
        let c = config(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/base/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, x-a = 1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=2"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_RESOURCE_ATTRIBUTES", "team=infra,service.name=from-attrs"),
        ])
        .unwrap();
        let traces = c.traces.unwrap();
        assert_eq!(traces.url, "http://127.0.0.1:9/base/v1/traces");
        assert_eq!(traces.protocol, Protocol::Json);
        assert_eq!(
            traces.headers,
            [("Authorization".to_owned(), "Bearer abc".to_owned()), ("x-a".to_owned(), "2".to_owned())]
        );
        assert_eq!(traces.timeout, Duration::from_millis(2500));
        assert_eq!(c.metrics, None);
        assert_eq!(c.service_name, "from-attrs");
        assert_eq!(c.content, Content::default());
    }

    #[test]
    fn claude_codes_switch_turns_on_both_signals_and_a_signal_url_is_taken_whole() {
        let c = config(&[
            ("CLAUDE_CODE_ENABLE_TELEMETRY", "1"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://h:1/m"),
            ("OTEL_SERVICE_NAME", "ci"),
            ("OTEL_LOG_USER_PROMPTS", "1"),
        ])
        .unwrap();
        assert_eq!(c.traces.unwrap().url, "http://localhost:4318/v1/traces");
        assert_eq!(c.metrics.unwrap().url, "http://h:1/m");
        assert_eq!(c.service_name, "ci");
        assert_eq!(c.content, Content { prompts: true, tools: false });
    }

    #[test]
    fn grpc_and_unknown_exporters_are_warned_about() {
        let c = config(&[
            ("OTEL_TRACES_EXPORTER", "otlp,console"),
            ("OTEL_METRICS_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"),
        ])
        .unwrap();
        assert!(c.traces.is_some());
        assert_eq!(c.metrics, None);
        assert_eq!(
            c.warnings,
            [
                "OTEL_TRACES_EXPORTER=console is not supported (only otlp); nothing is exported that way",
                "OTLP protocol grpc is not supported (http/protobuf or http/json); metrics are not exported"
            ]
        );
    }
}
