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
