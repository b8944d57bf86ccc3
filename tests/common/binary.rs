//! The `agentloop` binary as the tests run it: stdin closed and the API variables removed, so
//! no test can reach a real API whatever the environment holds, and session transcripts go to
//! a scratch store (the user's Claude Code settings are not read either).

use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;

/// A command for the built binary that cannot reach a real API.
pub fn offline_agentloop() -> Command {
    let mut command = Command::cargo_bin("agentloop").unwrap();
    command
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        // Session transcripts go to a scratch store, never the user's ~/.agentloop.
        .env("AGENTLOOP_HOME", std::env::temp_dir().join("agentloop-tests-home"))
        // Nor the user's Claude Code settings, commands and output styles.
        .env("CLAUDE_CONFIG_DIR", std::env::temp_dir().join("agentloop-tests-home/claude"))
        .stdin(Stdio::null());
    command
}
