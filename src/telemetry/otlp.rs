//! The OTLP messages agentloop sends: the parts of `opentelemetry/proto` (trace, metrics,
//! common, resource) that an export of spans and of sums and histograms needs, written by
//! hand so the build needs neither `protoc` nor tonic.
//!
//! Each type encodes both ways OTLP/HTTP takes: protobuf (`prost::Message`, with the field
//! numbers of the `.proto` files) and OTLP/JSON (`serde::Serialize`: lowerCamelCase names,
//! trace and span ids as hex, 64-bit integers as decimal strings, enums as numbers, as the
//! OTLP specification's JSON encoding says). The telemetry tests decode what agentloop
//! sends with the official generated messages (`opentelemetry-proto`), so a wrong field
//! number fails there.

use serde::{Serialize, Serializer};

/// `ExportTraceServiceRequest`: the body of a POST to `/v1/traces`.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportTraceServiceRequest {
    /// The spans, by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// The spans of one resource (the process).
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpans {
    /// The resource.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The spans, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// The spans of one instrumentation scope.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeSpans {
    /// The scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The spans.
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// A resource: the attributes of what produced the telemetry.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its attributes (`service.name`, …).
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// The library that produced a span or a metric.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// One span.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// 16 bytes.
    #[prost(bytes = "vec", tag = "1")]
    #[serde(serialize_with = "hex")]
    pub trace_id: Vec<u8>,
    /// 8 bytes.
    #[prost(bytes = "vec", tag = "2")]
    #[serde(serialize_with = "hex")]
    pub span_id: Vec<u8>,
    /// The W3C `tracestate` of the span's context.
    #[prost(string, tag = "3")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trace_state: String,
    /// 8 bytes, or empty for a root span.
    #[prost(bytes = "vec", tag = "4")]
    #[serde(serialize_with = "hex", skip_serializing_if = "Vec::is_empty")]
    pub parent_span_id: Vec<u8>,
    /// W3C trace flags in the low byte.
    #[prost(fixed32, tag = "16")]
    pub flags: u32,
    /// The span's name.
    #[prost(string, tag = "5")]
    pub name: String,
    /// `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    /// Start, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "7")]
    #[serde(serialize_with = "decimal")]
    pub start_time_unix_nano: u64,
    /// End, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "8")]
    #[serde(serialize_with = "decimal")]
    pub end_time_unix_nano: u64,
    /// Its attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Attributes over the limit, dropped.
    #[prost(uint32, tag = "10")]
    pub dropped_attributes_count: u32,
    /// Its events, in time order.
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
    /// Events over the limit, dropped.
    #[prost(uint32, tag = "12")]
    pub dropped_events_count: u32,
    /// Its status.
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// A timed event of a span.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "1")]
    #[serde(serialize_with = "decimal")]
    pub time_unix_nano: u64,
    /// Its name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Its attributes.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
}

/// A span's status.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// For an error, what went wrong.
    #[prost(string, tag = "2")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `StatusCode`: 0 unset, 1 ok, 2 error.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// One attribute.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyValue {
    /// Its name.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Its value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// An attribute's value.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
pub struct AnyValue {
    /// One of the kinds of value.
    #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5")]
    #[serde(flatten)]
    pub value: Option<Value>,
}

/// The kinds of [`AnyValue`] agentloop sends.
#[derive(Clone, PartialEq, prost::Oneof, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Value {
    /// A string.
    #[prost(string, tag = "1")]
    StringValue(String),
    /// A boolean.
    #[prost(bool, tag = "2")]
    BoolValue(bool),
    /// A 64-bit integer.
    #[prost(int64, tag = "3")]
    IntValue(#[serde(serialize_with = "decimal")] i64),
    /// A double.
    #[prost(double, tag = "4")]
    DoubleValue(f64),
    /// An array.
    #[prost(message, tag = "5")]
    ArrayValue(ArrayValue),
}

/// An array of values.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
pub struct ArrayValue {
    /// The values.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// `ExportMetricsServiceRequest`: the body of a POST to `/v1/metrics`.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportMetricsServiceRequest {
    /// The metrics, by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// The metrics of one resource.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMetrics {
    /// The resource.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The metrics, by scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// The metrics of one scope.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeMetrics {
    /// The scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// One metric and its points.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What it measures.
    #[prost(string, tag = "2")]
    pub description: String,
    /// Its unit (UCUM).
    #[prost(string, tag = "3")]
    pub unit: String,
    /// Its points.
    #[prost(oneof = "MetricData", tags = "5, 7, 9")]
    #[serde(flatten)]
    pub data: Option<MetricData>,
}

/// The kinds of metric agentloop sends.
#[derive(Clone, PartialEq, prost::Oneof, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MetricData {
    /// The last value.
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    /// A sum.
    #[prost(message, tag = "7")]
    Sum(Sum),
    /// A histogram with explicit buckets.
    #[prost(message, tag = "9")]
    Histogram(Histogram),
}

/// Gauge points.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gauge {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// Sum points.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sum {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// 1 delta, 2 cumulative.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// Whether it only grows.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// Histogram points.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Histogram {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// 1 delta, 2 cumulative.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// A point of a sum or a gauge.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberDataPoint {
    /// Its attributes.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// Start of the interval, in nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    #[serde(serialize_with = "decimal")]
    pub start_time_unix_nano: u64,
    /// End of the interval.
    #[prost(fixed64, tag = "3")]
    #[serde(serialize_with = "decimal")]
    pub time_unix_nano: u64,
    /// The value.
    #[prost(oneof = "Number", tags = "4, 6")]
    #[serde(flatten)]
    pub value: Option<Number>,
}

/// A point's value.
#[derive(Clone, PartialEq, prost::Oneof, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Number {
    /// A double.
    #[prost(double, tag = "4")]
    AsDouble(f64),
    /// An integer.
    #[prost(sfixed64, tag = "6")]
    AsInt(#[serde(serialize_with = "decimal")] i64),
}

/// A point of a histogram.
#[derive(Clone, PartialEq, prost::Message, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistogramDataPoint {
    /// Its attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Start of the interval.
    #[prost(fixed64, tag = "2")]
    #[serde(serialize_with = "decimal")]
    pub start_time_unix_nano: u64,
    /// End of the interval.
    #[prost(fixed64, tag = "3")]
    #[serde(serialize_with = "decimal")]
    pub time_unix_nano: u64,
    /// How many values.
    #[prost(fixed64, tag = "4")]
    #[serde(serialize_with = "decimal")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Values per bucket: one more than the bounds.
    #[prost(fixed64, repeated, tag = "6")]
    #[serde(serialize_with = "decimals")]
    pub bucket_counts: Vec<u64>,
    /// The buckets' upper bounds.
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
    /// The smallest value.
    #[prost(double, optional, tag = "11")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest value.
    #[prost(double, optional, tag = "12")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// `SpanKind` values.
pub mod span_kind {
    /// In-process work.
    pub const INTERNAL: i32 = 1;
    /// A call to a remote service.
    pub const CLIENT: i32 = 3;
}

/// `AggregationTemporality` values.
pub mod temporality {
    /// Each point covers the interval since the last export.
    pub const DELTA: i32 = 1;
    /// Each point covers everything since the start.
    pub const CUMULATIVE: i32 = 2;
}

/// The OTLP/JSON form of ids: lower-case hex.
fn hex<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(text, "{b:02x}");
    }
    serializer.serialize_str(&text)
}

/// The OTLP/JSON form of a 64-bit integer: a decimal string.
fn decimal<S: Serializer, N: std::fmt::Display>(n: &N, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(n)
}

/// [`decimal`] of each number.
fn decimals<S: Serializer>(ns: &[u64], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(ns.iter().map(u64::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    fn string(key: &str, value: &str) -> KeyValue {
        KeyValue { key: key.into(), value: Some(AnyValue { value: Some(Value::StringValue(value.into())) }) }
    }

    #[test]
    fn a_span_has_the_json_form_of_the_otlp_specification() {
        let span = Span {
            trace_id: vec![0xab; 16],
            span_id: vec![1, 2, 3, 4, 5, 6, 7, 8],
            name: "chat m".into(),
            kind: span_kind::CLIENT,
            start_time_unix_nano: 1_700_000_000_000_000_001,
            end_time_unix_nano: 1_700_000_000_000_000_002,
            attributes: vec![
                string("a", "b"),
                KeyValue { key: "n".into(), value: Some(AnyValue { value: Some(Value::IntValue(7)) }) },
            ],
            status: Some(Status { message: String::new(), code: 2 }),
            ..Span::default()
        };
        let json = serde_json::to_value(&span).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "traceId": "abababababababababababababababab", "spanId": "0102030405060708", "flags": 0,
                "name": "chat m", "kind": 3, "startTimeUnixNano": "1700000000000000001",
                "endTimeUnixNano": "1700000000000000002",
                "attributes": [{"key": "a", "value": {"stringValue": "b"}}, {"key": "n", "value": {"intValue": "7"}}],
                "droppedAttributesCount": 0, "events": [], "droppedEventsCount": 0, "status": {"code": 2}
            })
        );
    }

    #[test]
    fn a_key_value_has_the_protobuf_bytes_the_proto_file_gives() {
        // field 1 (key, length-delimited) "k"; field 2 (value) holding AnyValue field 2
        // (bool_value, varint) true.
        let kv = KeyValue { key: "k".into(), value: Some(AnyValue { value: Some(Value::BoolValue(true)) }) };
        assert_eq!(kv.encode_to_vec(), [0x0a, 1, b'k', 0x12, 2, 0x10, 1]);
    }
}
