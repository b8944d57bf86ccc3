//! The CLI the SDK and ACP tests drive: the built `agentloop`, or `$AGENTLOOP_SDK_CLI_OVERRIDE`
//! (the Claude Code binary an SDK bundles), so every test can be checked against Claude Code;
//! and which requests of that CLI are its side requests rather than the conversation.

use std::path::PathBuf;

use serde_json::Value;

use super::mock_api::Recorded;

/// The CLI the clients launch: `$AGENTLOOP_SDK_CLI_OVERRIDE`, else the built binary.
pub fn cli_under_test() -> PathBuf {
    std::env::var_os("AGENTLOOP_SDK_CLI_OVERRIDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_agentloop")))
}

/// Whether the tests run against Claude Code (`$AGENTLOOP_SDK_CLI_OVERRIDE` is set).
#[allow(dead_code)] // tests/it/sdk.rs reads the variable where it needs it
pub fn against_claude_code() -> bool {
    std::env::var_os("AGENTLOOP_SDK_CLI_OVERRIDE").is_some()
}

/// A request outside the conversation: anything but `POST /v1/messages`, or one without tools
/// (Claude Code's `HEAD /api/hello`, its session-title request).
pub fn is_side_request(request: &Recorded) -> bool {
    let tools = request.body.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
    !request.request_line.starts_with("POST /v1/messages") || tools == 0
}
