//! What the OpenTelemetry SDK hands an exporter (finished spans, collected metrics) in the
//! OTLP messages of [`super::otlp`].

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::{self, AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::trace::SpanData;

use super::otlp;

/// Nanoseconds since the Unix epoch (0 before it).
fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn any(value: otlp::Value) -> Option<otlp::AnyValue> {
    Some(otlp::AnyValue { value: Some(value) })
}

/// One attribute value.
fn value(value: &opentelemetry::Value) -> otlp::Value {
    use opentelemetry::Value as V;
    use otlp::Value as O;
    let array = |values: Vec<otlp::Value>| {
        O::ArrayValue(otlp::ArrayValue {
            values: values.into_iter().map(|v| otlp::AnyValue { value: Some(v) }).collect(),
        })
    };
    match value {
        V::Bool(b) => O::BoolValue(*b),
        V::I64(i) => O::IntValue(*i),
        V::F64(f) => O::DoubleValue(*f),
        V::String(s) => O::StringValue(s.as_str().to_owned()),
        V::Array(Array::Bool(bs)) => array(bs.iter().map(|b| O::BoolValue(*b)).collect()),
        V::Array(Array::I64(is)) => array(is.iter().map(|i| O::IntValue(*i)).collect()),
        V::Array(Array::F64(fs)) => array(fs.iter().map(|f| O::DoubleValue(*f)).collect()),
        V::Array(Array::String(ss)) => array(ss.iter().map(|s| O::StringValue(s.as_str().to_owned())).collect()),
        // Kinds added to the API after this was written travel as their text.
        other => O::StringValue(other.to_string()),
    }
}

/// Attributes.
pub(crate) fn attributes<'a>(kvs: impl IntoIterator<Item = &'a KeyValue>) -> Vec<otlp::KeyValue> {
    kvs.into_iter().map(|kv| otlp::KeyValue { key: kv.key.as_str().to_owned(), value: any(value(&kv.value)) }).collect()
}

/// The resource's attributes, sorted by name (the SDK keeps them in a hash map).
pub(crate) fn resource(resource: &Resource) -> otlp::Resource {
    let mut attributes: Vec<otlp::KeyValue> =
        resource.iter().map(|(key, v)| otlp::KeyValue { key: key.as_str().to_owned(), value: any(value(v)) }).collect();
    attributes.sort_by(|a, b| a.key.cmp(&b.key));
    otlp::Resource { attributes }
}

fn kind(kind: &SpanKind) -> i32 {
    match kind {
        SpanKind::Internal => otlp::span_kind::INTERNAL,
        SpanKind::Server => 2,
        SpanKind::Client => otlp::span_kind::CLIENT,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn status(status: &Status) -> otlp::Status {
    match status {
        Status::Unset => otlp::Status { message: String::new(), code: 0 },
        Status::Ok => otlp::Status { message: String::new(), code: 1 },
        Status::Error { description } => otlp::Status { message: description.to_string(), code: 2 },
    }
}

fn span(span: SpanData) -> otlp::Span {
    let context = &span.span_context;
    let parent = span.parent_span_id;
    otlp::Span {
        trace_id: context.trace_id().to_bytes().to_vec(),
        span_id: context.span_id().to_bytes().to_vec(),
        trace_state: context.trace_state().header(),
        parent_span_id: if parent == opentelemetry::trace::SpanId::INVALID {
            Vec::new()
        } else {
            parent.to_bytes().to_vec()
        },
        flags: u32::from(context.trace_flags().to_u8()),
        name: span.name.into_owned(),
        kind: kind(&span.span_kind),
        start_time_unix_nano: nanos(span.start_time),
        end_time_unix_nano: nanos(span.end_time),
        attributes: attributes(&span.attributes),
        dropped_attributes_count: span.dropped_attributes_count,
        dropped_events_count: span.events.dropped_count,
        events: span
            .events
            .events
            .iter()
            .map(|e| otlp::Event {
                time_unix_nano: nanos(e.timestamp),
                name: e.name.to_string(),
                attributes: attributes(&e.attributes),
            })
            .collect(),
        status: Some(status(&span.status)),
    }
}

/// A batch of finished spans as one export request: one resource, a scope per
/// instrumentation scope (in the order first seen).
pub(crate) fn spans(batch: Vec<SpanData>, resource: &otlp::Resource) -> otlp::ExportTraceServiceRequest {
    let mut scopes: Vec<otlp::ScopeSpans> = Vec::new();
    for data in batch {
        let scope = &data.instrumentation_scope;
        let (name, version) = (scope.name(), scope.version().unwrap_or_default());
        let at = match scopes
            .iter()
            .position(|s| s.scope.as_ref().is_some_and(|s| s.name == name && s.version == version))
        {
            Some(at) => at,
            None => {
                let scope = otlp::InstrumentationScope { name: name.to_owned(), version: version.to_owned() };
                scopes.push(otlp::ScopeSpans { scope: Some(scope), spans: Vec::new() });
                scopes.len() - 1
            }
        };
        scopes[at].spans.push(span(data));
    }
    otlp::ExportTraceServiceRequest {
        resource_spans: vec![otlp::ResourceSpans { resource: Some(resource.clone()), scope_spans: scopes }],
    }
}

/// The numbers a metric's points can hold.
trait Number: Copy {
    fn number(self) -> otlp::Number;
    fn double(self) -> f64;
}

impl Number for u64 {
    fn number(self) -> otlp::Number {
        otlp::Number::AsInt(i64::try_from(self).unwrap_or(i64::MAX))
    }
    fn double(self) -> f64 {
        self as f64
    }
}

impl Number for i64 {
    fn number(self) -> otlp::Number {
        otlp::Number::AsInt(self)
    }
    fn double(self) -> f64 {
        self as f64
    }
}

impl Number for f64 {
    fn number(self) -> otlp::Number {
        otlp::Number::AsDouble(self)
    }
    fn double(self) -> f64 {
        self
    }
}

fn temporality(t: Temporality) -> i32 {
    match t {
        Temporality::Delta => otlp::temporality::DELTA,
        // Cumulative, and kinds added later, which the SDK does not hand a push exporter.
        _ => otlp::temporality::CUMULATIVE,
    }
}

/// One metric's points; `None` for an exponential histogram, which agentloop never asks for.
fn metric_data<T: Number>(data: &MetricData<T>) -> Option<otlp::MetricData> {
    let point = |attrs: Vec<otlp::KeyValue>, start: u64, time: u64, v: T| otlp::NumberDataPoint {
        attributes: attrs,
        start_time_unix_nano: start,
        time_unix_nano: time,
        value: Some(v.number()),
    };
    Some(match data {
        MetricData::Gauge(g) => {
            let start = g.start_time().map_or(0, nanos);
            otlp::MetricData::Gauge(otlp::Gauge {
                data_points: g
                    .data_points()
                    .map(|p| point(attributes(p.attributes()), start, nanos(g.time()), p.value()))
                    .collect(),
            })
        }
        MetricData::Sum(s) => otlp::MetricData::Sum(otlp::Sum {
            data_points: s
                .data_points()
                .map(|p| point(attributes(p.attributes()), nanos(s.start_time()), nanos(s.time()), p.value()))
                .collect(),
            aggregation_temporality: temporality(s.temporality()),
            is_monotonic: s.is_monotonic(),
        }),
        MetricData::Histogram(h) => otlp::MetricData::Histogram(histogram(h)),
        MetricData::ExponentialHistogram(_) => return None,
    })
}

fn histogram<T: Number>(h: &data::Histogram<T>) -> otlp::Histogram {
    otlp::Histogram {
        data_points: h
            .data_points()
            .map(|p| otlp::HistogramDataPoint {
                attributes: attributes(p.attributes()),
                start_time_unix_nano: nanos(h.start_time()),
                time_unix_nano: nanos(h.time()),
                count: p.count(),
                sum: Some(p.sum().double()),
                bucket_counts: p.bucket_counts().collect(),
                explicit_bounds: p.bounds().collect(),
                min: p.min().map(Number::double),
                max: p.max().map(Number::double),
            })
            .collect(),
        aggregation_temporality: temporality(h.temporality()),
    }
}

/// Collected metrics as one export request.
pub(crate) fn metrics(collected: &ResourceMetrics, resource: &otlp::Resource) -> otlp::ExportMetricsServiceRequest {
    let scope_metrics = collected
        .scope_metrics()
        .map(|scope| otlp::ScopeMetrics {
            scope: Some(otlp::InstrumentationScope {
                name: scope.scope().name().to_owned(),
                version: scope.scope().version().unwrap_or_default().to_owned(),
            }),
            metrics: scope
                .metrics()
                .filter_map(|m| {
                    let data = match m.data() {
                        AggregatedMetrics::F64(d) => metric_data(d),
                        AggregatedMetrics::U64(d) => metric_data(d),
                        AggregatedMetrics::I64(d) => metric_data(d),
                    }?;
                    Some(otlp::Metric {
                        name: m.name().to_owned(),
                        description: m.description().to_owned(),
                        unit: m.unit().to_owned(),
                        data: Some(data),
                    })
                })
                .collect(),
        })
        .collect();
    otlp::ExportMetricsServiceRequest {
        resource_metrics: vec![otlp::ResourceMetrics { resource: Some(resource.clone()), scope_metrics }],
    }
}
