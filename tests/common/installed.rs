//! What a test needs from a package registry (the Claude Agent SDK from PyPI, MCP servers from
//! npm), installed once by the repository's own `.ci/install-*` script when it is missing.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Run `.ci/<script>` (a no-op when its pinned versions are installed; it locks against other
/// callers) and return `artifact`, the file the tests use. `what` and `registry` name the
/// package and where it comes from, for the messages.
///
/// # Errors
/// Why the script could not run or failed.
pub fn ensure(repo: &Path, script: &str, artifact: PathBuf, what: &str, registry: &str) -> Result<PathBuf, String> {
    if !artifact.exists() {
        // Straight to stderr, past the test harness's capture: this can take a minute.
        let _ = writeln!(
            std::io::stderr(),
            "{} is missing: running .ci/{script} to install {what} from {registry}",
            artifact.display()
        );
    }
    let status = Command::new("bash")
        .arg(repo.join(".ci").join(script))
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run .ci/{script}: {e}"))?;
    if !status.success() {
        return Err(format!(".ci/{script} failed ({status}): these tests need {registry} access once"));
    }
    Ok(artifact)
}

/// The entry point (`dist/index.js`) of `@modelcontextprotocol/<package>`, one of the MCP
/// servers `.ci/install-mcp-servers` installs into `.ci/cache/npm` (run once per test binary,
/// when they are missing).
#[allow(dead_code, reason = "only the test crates that start MCP servers call it")]
pub fn mcp_server(package: &str) -> PathBuf {
    static READY: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let npm = repo.join(".ci/cache/npm/node_modules/@modelcontextprotocol");
    let everything = npm.join("server-everything/dist/index.js");
    let ready =
        READY.get_or_init(|| ensure(repo, "install-mcp-servers", everything, "the MCP servers", "npm").map(drop));
    ready.clone().unwrap_or_else(|e| panic!("{e}"));
    let entry = npm.join(package).join("dist/index.js");
    assert!(entry.exists(), "{} is missing after .ci/install-mcp-servers", entry.display());
    entry
}
