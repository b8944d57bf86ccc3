//! The model credentials stay with agentloop, tested through the binary: a Bash command can
//! read them neither from its own environment nor from the `/proc` files of agentloop or of
//! any other ancestor (`environ`, `cmdline`), a process of agentloop's own user cannot open
//! agentloop's `environ` or `mem` at all, and a model server's redirect to another origin
//! ends the run instead of taking the key there.

use crate::mock_api;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use mock_api::{MockApi, Reply, Sse};
use serde_json::{Value, json};

/// The API key the run is given: it must reach the model server and nothing else.
const KEY: &str = "sk-ant-test-SECRET-1234";
/// The other credential and a secret-looking variable, which must not show either.
const OTHER_SECRETS: [(&str, &str); 2] =
    [("ANTHROPIC_AUTH_TOKEN", "bearer-SECRET-5678"), ("MY_SERVICE_TOKEN", "service-SECRET-9012")];
/// A plain variable: seeing it proves an `environ` was really read.
const MARKER: (&str, &str) = ("AGENTLOOP_TEST_MARKER", "in-the-environ");

/// A Bash command that walks from its shell's parent up to pid 1 (`PPid:` of each
/// `/proc/PID/status`), copying each ancestor's `environ` and `cmdline` into `ancestors/` and
/// listing the pids, nearest first, in `ancestors/chain`. Today the shell's parent is
/// agentloop; a sandbox helper between them changes nothing here.
const WALK: &str = r#"mkdir -p ancestors
pid=$PPID
while [ "$pid" -gt 0 ]; do
  echo "$pid" >> ancestors/chain
  cat /proc/$pid/environ > ancestors/$pid.environ 2> ancestors/$pid.error
  cat /proc/$pid/cmdline > ancestors/$pid.cmdline
  pid=$(awk '/^PPid:/ {print $2}' /proc/$pid/status)
done
echo walked"#;

fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `agentloop` with no Anthropic variable but those the test sets, its transcripts in `home`.
fn agentloop(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"] {
        command.env_remove(name);
    }
    command.env("AGENTLOOP_HOME", home).stdin(Stdio::null());
    command
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The `tool_result` texts in stream-json output.
fn tool_results(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v["type"] == "user")
        .flat_map(|v| v["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The key reaches the model server as `x-api-key`, and no ancestor of the Bash command
/// holds it (or the other secrets) in its `environ` or `cmdline`: agentloop's environment
/// block no longer has them. As root the walk reads agentloop's `environ` (the marker shows
/// it did); as another user agentloop's is not readable at all.
#[test]
fn no_ancestor_of_a_bash_command_holds_the_key_in_its_environ_or_cmdline() {
    let api = MockApi::start(vec![
        Reply::Sse(
            Sse::new("claude-sonnet-4-5", 100)
                .tool_use("toolu_walk", "Bash", &json!({"command": WALK}))
                .stop("tool_use"),
        ),
        Reply::Sse(Sse::new("claude-sonnet-4-5", 200).text("done").stop("end_turn")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = agentloop(&dir.path().join("home"))
        .args(["-p", "Walk up the process tree.", "--model", "claude-sonnet-4-5", "--allowedTools", "Bash"])
        // Unsandboxed, as an MCP server or a bypassPermissions command runs: the sandbox
        // would refuse to open agentloop's environ at all (tests/it/sandbox.rs).
        .args(["--settings", r#"{"sandbox": {"enabled": false}}"#])
        .args(["--output-format", "stream-json", "--cwd"])
        .arg(dir.path())
        .env("ANTHROPIC_BASE_URL", api.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .envs(OTHER_SECRETS)
        .env(MARKER.0, MARKER.1)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tool_results(&out.stdout), ["walked"]);
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("x-api-key"), Some(KEY), "the key still reaches the model server");

    let ancestors = dir.path().join("ancestors");
    let chain = std::fs::read_to_string(ancestors.join("chain")).unwrap();
    let chain: Vec<&str> = chain.lines().collect();
    assert!(chain.len() >= 2, "agentloop and the test at least: {chain:?}");
    let read = |pid: &str, what: &str| std::fs::read(ancestors.join(format!("{pid}.{what}"))).unwrap();
    let agentloop_pid = chain
        .iter()
        .find(|pid| {
            let cmdline = read(pid, "cmdline");
            // agentloop itself, not its sandbox helper (`agentloop-sandbox`, or agentloop
            // re-executed as `__sandbox-exec`), which runs with the command's environment.
            let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            program == env!("CARGO_BIN_EXE_agentloop").as_bytes() && !contains(&cmdline, "__sandbox-exec")
        })
        .unwrap_or_else(|| panic!("agentloop is not among the ancestors {chain:?}"));
    let environ = read(agentloop_pid, "environ");
    if is_root() {
        assert!(contains(&environ, &format!("{}={}", MARKER.0, MARKER.1)), "{}", String::from_utf8_lossy(&environ));
    } else {
        let error = String::from_utf8_lossy(&read(agentloop_pid, "error")).into_owned();
        assert!(error.contains("Permission denied"), "{error}");
    }
    for pid in &chain {
        for what in ["environ", "cmdline"] {
            let bytes = read(pid, what);
            for secret in std::iter::once(KEY).chain(OTHER_SECRETS.map(|(_, value)| value)) {
                assert!(!contains(&bytes, secret), "{secret} is in /proc/{pid}/{what} (agentloop is {agentloop_pid})");
            }
        }
    }
    for secret in std::iter::once(KEY).chain(OTHER_SECRETS.map(|(_, value)| value)) {
        assert!(!contains(&out.stdout, secret), "{secret} reached the output");
        assert!(!requests[1].body.to_string().contains(secret), "{secret} reached the model in a tool result");
    }
}

/// A process of agentloop's own user (its Bash commands are one) cannot open agentloop's
/// `environ` or `mem`: agentloop is not dumpable. As root, the test runs agentloop as the
/// user `nobody` (65534), so that the reader is not root (root may read any process).
#[test]
fn a_process_of_the_same_user_cannot_open_agentloops_environ_or_mem() {
    let dir = tempfile::tempdir().unwrap();
    // Writable by the user agentloop runs as.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let probe = "cat /proc/$PPID/environ > /dev/null 2>&1 && echo environ=read || echo environ=denied; \
                 (: < /proc/$PPID/mem) 2> /dev/null && echo mem=open || echo mem=denied";
    let scenario = json!({
        "prompt": "Read your parent's memory.",
        "settings": {"permissions": {"allow": ["Bash"]}},
        "responses": [
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": probe}}]},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    });
    let scenario_file = dir.path().join("scenario.json");
    std::fs::write(&scenario_file, scenario.to_string()).unwrap();
    let mut command = agentloop(&dir.path().join("home"));
    command
        .args(["run", "--output-format", "stream-json", "--model"])
        .arg(format!("scripted:{}", scenario_file.display()))
        .arg("--cwd")
        .arg(dir.path())
        .env("HOME", dir.path())
        .env("ANTHROPIC_API_KEY", KEY);
    if is_root() {
        command.uid(65534).gid(65534);
    }
    let out: Output = command.output().unwrap_or_else(|e| panic!("cannot run agentloop as nobody: {e}"));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tool_results(&out.stdout), ["environ=denied\nmem=denied"]);
}

/// A 307 from the model server to another origin (another host, another port) ends the run
/// as `model_error` (exit 1) with the refusal, at once (no retry: the mock would note a
/// request past its script), and the other origin's listener is never connected to.
#[test]
fn a_redirect_to_another_origin_ends_the_run_and_the_key_stays() {
    for ip in ["127.0.0.2", "127.0.0.1"] {
        let elsewhere = std::net::TcpListener::bind((ip, 0)).unwrap();
        let to = format!("http://{}", elsewhere.local_addr().unwrap());
        let api = MockApi::start(vec![
            Reply::error(307, "redirect", "moved").header("location", &format!("{to}/v1/messages")),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let out = agentloop(&dir.path().join("home"))
            .args(["-p", "Hello.", "--model", "claude-sonnet-4-5", "--cwd"])
            .arg(dir.path())
            .env("ANTHROPIC_BASE_URL", api.base_url())
            .env("ANTHROPIC_API_KEY", KEY)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "agentloop: ended with model_error: the model server at {} redirected to {to}; agentloop does not \
follow redirects to another origin, so the credentials stay with the configured server\n",
                api.base_url()
            )
        );
        assert_eq!(api.requests().len(), 1);
        // Nothing connected: no connection waits in the listener's backlog.
        elsewhere.set_nonblocking(true).unwrap();
        let accepted = elsewhere.accept();
        assert!(
            matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{to} was connected to: {accepted:?}"
        );
    }
}
