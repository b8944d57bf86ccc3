//! Every integration test of agentloop in one binary (as ripgrep and codex-rs do): one link
//! instead of one per file, so an edit rebuilds one test executable. Each file under
//! `tests/it/` is a module; the helpers they share are in `tests/common/` (the benchmarks
//! include some of them too). `tests/no_ca_certs.rs` stays a binary of its own: it empties the
//! certificate store through the process environment.
//!
//! Run one file's tests with `cargo test --test it MODULE::` (e.g. `cargo test --test it
//! interactive::`).

#[path = "../common/binary.rs"]
mod binary;
#[path = "../common/cli_under_test.rs"]
mod cli_under_test;
#[path = "../common/conversation.rs"]
mod conversation;
#[path = "../common/installed.rs"]
mod installed;
#[path = "../common/mock_api.rs"]
mod mock_api;
#[path = "../common/pty.rs"]
mod pty;
#[path = "../common/stream_json.rs"]
mod stream_json;

mod acp;
mod anthropic_http;
mod approvals;
mod audit;
mod background;
mod budget_and_schema;
mod chat;
mod cli;
mod cli_http;
mod cli_output;
mod coverage;
mod effects;
mod engine_http;
mod harbor;
mod interactive;
mod llama;
mod mcp;
mod mcp_conformance;
mod mcp_elicitation;
mod mcp_http;
mod mcp_limits;
mod mcp_oauth;
mod otel;
mod permissions;
mod properties;
mod sandbox;
mod sdk;
mod sdk_protocol;
mod secrets;
mod sessions;
mod settings;
mod subagents;
mod table_flag;
mod tools;
mod trace_view;
mod transcripts;
mod transitions;
mod ts_sdk;
mod web;
