//! Not agentloop's API: the internals that the fuzz targets (`fuzz/fuzz_targets/`), the
//! benchmarks (`benches/`, `examples/search_bench.rs`) and a few integration tests
//! (`tests/it/`) reach into — the parsers of outside input a fuzz target feeds, the pieces a
//! benchmark times on their own, the texts and stores a test compares with or prepares.
//!
//! Those are separate crates, so what they use must be `pub`; it is kept here, hidden from
//! the documentation, instead of widening the modules it comes from. Nothing here is stable:
//! any commit may change it. An embedder uses the API [`crate`]'s documentation lists.

/// The Anthropic stream's parsers and the request body: `fuzz_targets/{sse,assemble}.rs`,
/// `benches/{sse,request_body}.rs`.
pub mod anthropic {
    pub use crate::model::anthropic::decode::{Intake, decode, push_payload};
    pub use crate::model::anthropic::request::to_json;
    pub use crate::model::anthropic::sse::Parser;
    pub use crate::model::anthropic::stream::sse_reply;
}

/// The shell reader and the read-only proof: `fuzz_targets/bash.rs`, `benches/streaming.rs`.
pub mod shell {
    pub use crate::permissions::readonly::is_read_only;
    pub use crate::shell::analyze;
}

/// The settings layers and frontmatter files: `fuzz_targets/{settings,frontmatter}.rs`.
pub mod settings {
    pub use crate::settings::frontmatter::Document;
    pub use crate::settings::{ConfigDirs, SettingSources, load, repository};
}

/// The stream-json reader of the SDK mode: `fuzz_targets/stream_json.rs`.
pub mod sdk {
    pub use crate::sdk::wire::{Inbound, parse, replay};
}

/// Transcript repair: `fuzz_targets/transcript.rs`.
pub mod session {
    pub use crate::session::repair::{RepairWrite, repair};
}

/// The MCP client: `fuzz_targets/mcp_config.rs`, `benches/mcp_{call,http}.rs`,
/// `tests/it/{mcp,mcp_oauth}.rs`.
pub mod mcp {
    pub use crate::mcp::config::{ProjectConsent, load, parse, project};
    pub use crate::mcp::oauth::store::{Entry, Store};
    pub use crate::mcp::startup::Startup;
    pub use crate::mcp::stdio::connect as connect_stdio;
    pub use crate::mcp::tool::{McpTool, render};
    pub use crate::mcp::{Client, ServerConfig, ServerInfo, ServerStatus, open, tool_timeout};
}

/// The engine's per-call executor: `benches/mcp_call.rs`.
pub mod executor {
    pub use crate::tools::orchestrate::{Approvals, Toolbox};
}

/// What a compaction request says and leaves: `tests/it/{engine_http,interactive}.rs`
/// recognise the requests and the history by them.
pub mod context {
    pub use crate::context::{COLLAPSED_PREFIX, COMPACT_INSTRUCTION, COMPACT_SYSTEM, compacted_history};
}
