//! The MCP client against real servers: `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem` from npm, installed once into `.ci/cache/npm` by
//! `.ci/install-mcp-servers` (run here when they are missing). Each test runs the built `agentloop -p` with a scripted model whose replies call
//! the server's tools, and reads the tool results off `--output-format stream-json`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::installed;
use crate::stream_json;

use serde_json::{Value, json};
use stream_json::{init, tool_results};

/// server-everything's entry point ([`installed::mcp_server`]).
fn everything_entry() -> PathBuf {
    installed::mcp_server("server-everything")
}

/// server-filesystem's entry point ([`installed::mcp_server`]).
fn filesystem_entry() -> PathBuf {
    installed::mcp_server("server-filesystem")
}

/// `--mcp-config` JSON with server-everything as `everything`, plus `extra` servers.
fn config(extra: Value) -> String {
    let mut servers = json!({
        "everything": {"type": "stdio", "command": "node", "args": [everything_entry(), "stdio"]}
    });
    servers.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    json!({ "mcpServers": servers }).to_string()
}

/// A scenario whose first reply calls `calls` (name, input) and whose second says "done".
fn scenario(dir: &tempfile::TempDir, calls: &[(&str, Value)]) -> PathBuf {
    let uses: Vec<Value> =
        calls.iter().map(|(name, input)| json!({"type": "tool_use", "name": name, "input": input})).collect();
    let scenario = json!({
        "name": "mcp",
        "prompt": "Use the everything server.",
        "responses": [
            {"content": uses},
            {"content": [{"type": "text", "text": "done"}]}
        ]
    });
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

/// Run `agentloop -p` on `calls` with `args` besides; returns the output and its JSON lines.
fn run(calls: &[(&str, Value)], args: &[&str], env: &[(&str, &str)]) -> (Output, Vec<Value>) {
    run_in(&tempfile::tempdir().unwrap(), calls, args, env)
}

/// [`run`] with `dir` as the working directory.
fn run_in(
    dir: &tempfile::TempDir,
    calls: &[(&str, Value)],
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, Vec<Value>) {
    let scenario = scenario(dir, calls);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    cmd.arg("-p")
        .arg("Use the everything server.")
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .args(["--output-format", "stream-json", "--cwd"])
        .arg(dir.path())
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    let out = cmd.output().unwrap();
    let lines = stream_json::lines(&out.stdout);
    (out, lines)
}

#[test]
fn echo_and_get_sum_results_reach_the_model_with_a_server_rule() {
    let config = config(json!({}));
    let calls = [
        ("mcp__everything__echo", json!({"message": "hello mcp"})),
        ("mcp__everything__get-sum", json!({"a": 2, "b": 40})),
    ];
    let (out, lines) = run(&calls, &["--mcp-config", &config, "--allowedTools", "mcp__everything"], &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        tool_results(&lines),
        vec![("Echo: hello mcp".to_owned(), false), ("The sum of 2 and 40 is 42.".to_owned(), false)]
    );
    let init = init(&lines);
    assert_eq!(init["mcp_servers"], json!([{"name": "everything", "status": "connected"}]));
    let tools: Vec<&str> = init["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"Read") && tools.contains(&"mcp__everything__echo"), "{tools:?}");
    assert_eq!(lines.last().unwrap()["result"], "done");
}

#[test]
fn a_tool_rule_allows_that_tool_only_and_no_rule_refuses_as_usual() {
    let config = config(json!({}));
    let calls =
        [("mcp__everything__echo", json!({"message": "hi"})), ("mcp__everything__get-sum", json!({"a": 1, "b": 2}))];
    let (out, lines) = run(&calls, &["--mcp-config", &config, "--allowedTools", "mcp__everything__echo"], &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let tool = "mcp__everything__get-sum";
    let refusal = format!(
        "Permission to use {tool} was not granted: it changes things and no rule allows it, and this run cannot \
ask anyone. Allow it with --allowedTools (e.g. `{tool}` or a narrower rule) or a permission mode."
    );
    assert_eq!(tool_results(&lines), vec![("Echo: hi".to_owned(), false), (refusal, true)]);
}

#[test]
fn bypass_permissions_runs_without_a_rule_and_errors_and_timeouts_are_results() {
    let config = config(json!({}));
    let calls = [
        ("mcp__everything__echo", json!({})),
        ("mcp__everything__trigger-long-running-operation", json!({"duration": 5, "steps": 5})),
    ];
    let (out, lines) = run(
        &calls,
        &["--mcp-config", &config, "--permission-mode", "bypassPermissions"],
        &[("MCP_TOOL_TIMEOUT", "500")],
    );
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        tool_results(&lines),
        vec![
            (
                "MCP error -32602: Input validation error: Invalid arguments for tool echo: Invalid input: \
expected string, received undefined at message"
                    .to_owned(),
                true
            ),
            (
                "MCP server `everything`: tool `trigger-long-running-operation` timed out after 500 ms \
(MCP_TOOL_TIMEOUT)"
                    .to_owned(),
                true
            ),
        ]
    );
}

#[test]
fn a_server_that_cannot_start_is_a_warning_and_the_run_completes() {
    let config = config(json!({"broken": {"command": "/nonexistent/mcp-server", "args": []}}));
    let calls = [("mcp__everything__echo", json!({"message": "still here"}))];
    let (out, lines) = run(&calls, &["--mcp-config", &config, "--allowedTools", "mcp__everything"], &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "agentloop: warning: MCP server `broken` failed: cannot start `/nonexistent/mcp-server`: No such file or directory"
        ),
        "{stderr}"
    );
    assert_eq!(
        init(&lines)["mcp_servers"],
        json!([{"name": "broken", "status": "failed"}, {"name": "everything", "status": "connected"}])
    );
    assert_eq!(tool_results(&lines), vec![("Echo: still here".to_owned(), false)]);
    assert_eq!(lines.last().unwrap()["subtype"], "success");
}

#[test]
fn a_bad_config_is_a_usage_error_naming_the_json_path() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["-p", "x", "--model", "claude-sonnet-4-5", "--mcp-config", r#"{"mcpServers": {"s": {"args": "x"}}}"#])
        .env("ANTHROPIC_API_KEY", "test")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: --mcp-config: at mcpServers.s.args: invalid type: string \"x\", expected a sequence\n"
    );
}

/// Server types agentloop does not run here keep the rest of the configuration working: a
/// legacy `sse` server and an SDK server outside the SDK mode are each a warning saying why
/// and `failed` in `system/init`; the run goes on.
#[test]
fn sse_and_sdk_servers_are_failed_servers_with_a_warning_not_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    let reply =
        json!({"name": "text", "prompt": "Hi.", "responses": [{"content": [{"type": "text", "text": "Hello."}]}]});
    std::fs::write(&scenario, reply.to_string()).unwrap();
    let config = json!({"mcpServers": {
        "calc": {"type": "sdk", "name": "calc"},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
    }})
    .to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["-p", "Hi.", "--output-format", "stream-json", "--mcp-config", &config, "--model"])
        .arg(format!("scripted:{}", scenario.display()))
        .arg("--cwd")
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut warnings: Vec<String> = String::from_utf8_lossy(&out.stderr).lines().map(str::to_owned).collect();
    warnings.sort();
    assert_eq!(
        warnings,
        [
            "agentloop: warning: MCP server `calc` failed: an SDK server is reachable only from the Claude Agent SDK",
            "agentloop: warning: MCP server `legacy` failed: the legacy HTTP+SSE transport (`type: sse`) is not \
supported: configure the server's Streamable HTTP endpoint with `type: http`",
        ]
    );
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        init(&lines)["mcp_servers"],
        json!([{"name": "calc", "status": "failed"}, {"name": "legacy", "status": "failed"}])
    );
    assert_eq!(lines.last().unwrap()["result"], "Hello.");
}

#[test]
fn an_interrupt_cancels_a_running_call_and_the_server_dies_with_the_run() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // The server records its pid (exec keeps it) so the test can see it is gone afterwards.
    let script = format!("echo $$ > '{}'; exec node '{}' stdio", pid_file.display(), everything_entry().display());
    let config = json!({"mcpServers": {"everything": {"command": "sh", "args": ["-c", script]}}}).to_string();
    let calls = [("mcp__everything__trigger-long-running-operation", json!({"duration": 30, "steps": 3}))];
    let scenario = scenario(&dir, &calls);
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .arg("-p")
        .arg("Use the everything server.")
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .args(["--output-format", "stream-json", "--permission-mode", "bypassPermissions", "--mcp-config", &config])
        .arg("--cwd")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut interrupted_at = None;
    for line in stdout.lines() {
        let line: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if line["subtype"] == "tool_started" && interrupted_at.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(300));
            // SAFETY: kill(2) with the pid of our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            interrupted_at = Some(std::time::Instant::now());
        }
        lines.push(line);
    }
    let status = child.wait().unwrap();
    let took = interrupted_at.expect("the call started").elapsed();
    assert_eq!(status.code(), Some(130));
    assert!(took < std::time::Duration::from_secs(5), "the run ended {took:?} after the interrupt");
    assert_eq!(tool_results(&lines), vec![("MCP tool call was cancelled".to_owned(), true)]);
    assert_eq!(lines.last().unwrap()["terminal_reason"], "aborted_tools");
    assert_gone(&pid_file);
}

/// The process whose pid is in `pid_file` is gone (given a moment to be reaped).
fn assert_gone(pid_file: &std::path::Path) {
    let pid: libc::pid_t = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    // SAFETY: kill(2) with signal 0 only checks whether the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(std::time::Instant::now() < deadline, "the server {pid} outlived the run");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A process a stdio server started in a session of its own (`setsid`, so out of the
/// server's process group) ends with the server when the run ends.
#[test]
fn a_process_the_server_started_with_setsid_ends_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("escaped.pid");
    let script = format!(
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > '{}'; exec node '{}' stdio",
        pid_file.display(),
        everything_entry().display()
    );
    let config = json!({"mcpServers": {"everything": {"command": "sh", "args": ["-c", script]}}}).to_string();
    let (out, lines) = run_in(
        &dir,
        &[("mcp__everything__echo", json!({"message": "hi"}))],
        &["--mcp-config", &config, "--allowedTools", "mcp__everything"],
        &[],
    );
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tool_results(&lines), vec![("Echo: hi".to_owned(), false)]);
    let pid: libc::pid_t = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // SAFETY: kill(2) with signal 0 only checks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    if alive {
        // SAFETY: kill(2) of the test's own leftover sleep.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!alive, "the setsid'd process {pid} outlived the run");
}

/// A server that never answers `initialize` holds the run up only for `MCP_TIMEOUT`: it is a
/// warning, the run completes without its tools, and its process is killed.
#[test]
fn a_server_that_never_answers_is_given_up_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("hang.pid");
    let script = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let config = json!({"mcpServers": {"hang": {"command": "sh", "args": ["-c", script]}}}).to_string();
    let (out, lines) = run_in(
        &dir,
        &[("mcp__hang__anything", json!({}))],
        &["--mcp-config", &config, "--allowedTools", "mcp__hang"],
        &[("MCP_TIMEOUT", "2000")],
    );
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: warning: MCP server `hang` failed: no answer within 2000 ms (MCP_TIMEOUT)\n"
    );
    assert_eq!(init(&lines)["mcp_servers"], json!([{"name": "hang", "status": "failed"}]));
    assert_eq!(tool_results(&lines).len(), 1);
    assert!(tool_results(&lines)[0].1);
    assert_gone(&pid_file);
}

#[test]
fn the_server_gets_its_expanded_env_and_not_the_model_credentials() {
    let config = json!({"mcpServers": {"everything": {
        "command": "node",
        "args": [everything_entry(), "stdio"],
        "env": {"FROM_CONFIG": "${AGENTLOOP_MCP_TEST_UNSET:-the default}", "FROM_VAR": "${AGENTLOOP_MCP_TEST_SET}"}
    }}})
    .to_string();
    let calls = [("mcp__everything__get-env", json!({}))];
    let env = [("ANTHROPIC_API_KEY", "sk-test-key-123"), ("AGENTLOOP_MCP_TEST_SET", "expanded")];
    let (out, lines) = run(&calls, &["--mcp-config", &config, "--allowedTools", "mcp__everything__get-env"], &env);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let results = tool_results(&lines);
    let (text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert!(text.contains(r#""FROM_CONFIG": "the default""#), "{text}");
    assert!(text.contains(r#""FROM_VAR": "expanded""#), "{text}");
    assert!(!text.contains("sk-test-key-123") && !text.contains("ANTHROPIC_API_KEY"), "{text}");
}

/// A project's `.mcp.json` server gets only what Bash gets: `${VAR}` of a model credential or
/// of a secret-looking variable `shellEnvironment.keep` does not name expands to nothing (a
/// warning names the server and the variable), and it inherits no such variable either. The
/// same server in the user's own `--mcp-config` expands them all (and inherits all but the
/// model credentials).
#[test]
fn a_project_server_cannot_expand_the_secrets_a_user_server_can() {
    let dir = tempfile::tempdir().unwrap();
    let server = json!({
        "command": "node",
        "args": [everything_entry(), "stdio"],
        "env": {"FROM_KEY": "${ANTHROPIC_API_KEY}", "FROM_TOKEN": "${GITHUB_TOKEN:-a default}", "FROM_KEPT": "${NPM_TOKEN}"}
    });
    let servers = json!({"mcpServers": {"everything": server}}).to_string();
    std::fs::write(dir.path().join(".mcp.json"), &servers).unwrap();
    let calls = [("mcp__everything__get-env", json!({}))];
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-test-SECRET-1234"),
        ("GITHUB_TOKEN", "gh-SECRET"),
        ("NPM_TOKEN", "npm-kept"),
        ("AGENTLOOP_MCP_TEST_PLAIN", "plain"),
    ];
    // The server's environment, as get-env prints it.
    let server_env = |out: &Output, lines: &[Value]| -> serde_json::Map<String, Value> {
        assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        let results = tool_results(lines);
        assert!(!results[0].1, "{}", results[0].0);
        serde_json::from_str(&results[0].0).unwrap()
    };
    let pick = |env: &serde_json::Map<String, Value>| -> Vec<(String, Option<String>)> {
        [
            "FROM_KEY",
            "FROM_TOKEN",
            "FROM_KEPT",
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "NPM_TOKEN",
            "AGENTLOOP_MCP_TEST_PLAIN",
        ]
        .iter()
        .map(|name| (name.to_string(), env.get(*name).and_then(Value::as_str).map(str::to_owned)))
        .collect()
    };
    let expect = |pairs: &[(&str, Option<&str>)]| -> Vec<(String, Option<String>)> {
        pairs.iter().map(|(n, v)| (n.to_string(), v.map(str::to_owned))).collect()
    };

    let settings = r#"{"enabledMcpjsonServers": ["everything"], "shellEnvironment": {"keep": ["NPM_*"]}}"#;
    let allow = ["--allowedTools", "mcp__everything__get-env", "--settings", settings];
    let (out, lines) = run_in(&dir, &calls, &allow, &env);
    assert_eq!(
        pick(&server_env(&out, &lines)),
        expect(&[
            ("FROM_KEY", Some("")),
            ("FROM_TOKEN", Some("")),
            ("FROM_KEPT", Some("npm-kept")),
            ("ANTHROPIC_API_KEY", None),
            ("GITHUB_TOKEN", None),
            ("NPM_TOKEN", Some("npm-kept")),
            ("AGENTLOOP_MCP_TEST_PLAIN", Some("plain")),
        ])
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: warning: MCP server `everything` of .mcp.json: ${ANTHROPIC_API_KEY} expands to nothing: a \
project's servers get only the variables Bash gets (never a model credential; --mcp-config passes it to a server of \
your own)\n\
agentloop: warning: MCP server `everything` of .mcp.json: ${GITHUB_TOKEN} expands to nothing: a project's servers \
get only the variables Bash gets (the settings' shellEnvironment.keep passes it)\n"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));

    // The same server as the user's own: everything expands, nothing is withheld.
    let (out, lines) =
        run_in(&dir, &calls, &[allow[0], allow[1], "--strict-mcp-config", "--mcp-config", &servers], &env);
    assert_eq!(
        pick(&server_env(&out, &lines)),
        expect(&[
            ("FROM_KEY", Some("sk-ant-test-SECRET-1234")),
            ("FROM_TOKEN", Some("gh-SECRET")),
            ("FROM_KEPT", Some("npm-kept")),
            ("ANTHROPIC_API_KEY", None),
            ("GITHUB_TOKEN", Some("gh-SECRET")),
            ("NPM_TOKEN", Some("npm-kept")),
            ("AGENTLOOP_MCP_TEST_PLAIN", Some("plain")),
        ])
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn project_servers_start_only_with_the_settings_consent() {
    let dir = tempfile::tempdir().unwrap();
    // The repository tries to consent for itself: in the file beside the server and in Claude
    // Code's project settings. Neither counts: consent comes only from the user's --settings.
    let mut project = serde_json::from_str::<Value>(&config(json!({}))).unwrap();
    project["enableAllProjectMcpServers"] = json!(true);
    std::fs::write(dir.path().join(".mcp.json"), project.to_string()).unwrap();
    std::fs::create_dir(dir.path().join(".claude")).unwrap();
    let self_consent = json!({"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["everything"]});
    for name in ["settings.json", "settings.local.json"] {
        std::fs::write(dir.path().join(".claude").join(name), self_consent.to_string()).unwrap();
    }
    let calls = [("mcp__everything__echo", json!({"message": "from the project"}))];
    let allow = ["--allowedTools", "mcp__everything"];

    // No consent: not started, a warning says how to allow it, and the call is an unknown tool.
    let (out, lines) = run_in(&dir, &calls, &allow, &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "agentloop: warning: MCP server `everything` of .mcp.json is not started: the settings' \
enabledMcpjsonServers or enableAllProjectMcpServers would allow it"
        ),
        "{stderr}"
    );
    assert_eq!(init(&lines)["mcp_servers"], json!([]));
    assert!(tool_results(&lines)[0].1, "{:?}", tool_results(&lines));

    // Consent by name.
    let settings = r#"{"enabledMcpjsonServers": ["everything"]}"#;
    let (out, lines) = run_in(&dir, &calls, &[allow[0], allow[1], "--settings", settings], &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(init(&lines)["mcp_servers"], json!([{"name": "everything", "status": "connected"}]));
    assert_eq!(tool_results(&lines), vec![("Echo: from the project".to_owned(), false)]);

    // --strict-mcp-config: the project file is not read, whatever the settings say.
    let settings = r#"{"enableAllProjectMcpServers": true}"#;
    let (out, lines) = run_in(&dir, &calls, &[allow[0], allow[1], "--settings", settings, "--strict-mcp-config"], &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(".mcp.json"));
    assert_eq!(init(&lines)["mcp_servers"], json!([]));
}

/// agentloop in the SDK mode (stream-json in and out) in `dir`, with the scripted `calls`, the
/// MCP `config` and an allow rule for server-everything; stdin, stdout and stderr piped.
fn sdk_mode(dir: &tempfile::TempDir, calls: &[(&str, Value)], config: &str) -> std::process::Child {
    let scenario = scenario(dir, calls);
    Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .args(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"])
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .args(["--mcp-config", config, "--allowedTools", "mcp__everything", "--cwd"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn sdk_mode_offers_the_servers_tools_and_reports_them_in_system_init() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(json!({}));
    let calls = [("mcp__everything__echo", json!({"message": "via the SDK"}))];
    let mut child = sdk_mode(&dir, &calls, &config);
    let message = json!({"type": "user", "message": {"role": "user", "content": "Use the everything server."}});
    writeln!(child.stdin.as_mut().unwrap(), "{message}").unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(init(&lines)["mcp_servers"], json!([{"name": "everything", "status": "connected"}]));
    assert_eq!(tool_results(&lines), vec![("Echo: via the SDK".to_owned(), false)]);
}

/// server-filesystem serving `root`: a file's exact content and a directory's listing reach
/// the model, and a path outside its allowed directories is refused by the server itself, as
/// an error result the model reads.
#[test]
fn server_filesystem_reads_lists_and_refuses_paths_outside_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("served");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = std::fs::canonicalize(outside.path()).unwrap().join("secret.txt");
    std::fs::write(&secret, "not for the model").unwrap();
    let config = json!({"mcpServers": {"fs": {"command": "node", "args": [filesystem_entry(), &root]}}}).to_string();
    let calls = [
        ("mcp__fs__read_text_file", json!({"path": root.join("notes.txt")})),
        ("mcp__fs__list_directory", json!({"path": &root})),
        ("mcp__fs__read_text_file", json!({"path": &secret})),
    ];
    let (out, lines) = run_in(&dir, &calls, &["--mcp-config", &config, "--allowedTools", "mcp__fs"], &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(init(&lines)["mcp_servers"], json!([{"name": "fs", "status": "connected"}]));
    let results = tool_results(&lines);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], ("first line\nsecond line\n".to_owned(), false));
    // The listing comes in the directory's own order.
    let mut listing: Vec<&str> = results[1].0.lines().collect();
    listing.sort_unstable();
    assert_eq!((listing, results[1].1), (vec!["[DIR] sub", "[FILE] notes.txt"], false));
    let refusal =
        format!("Access denied - path outside allowed directories: {} not in {}", secret.display(), root.display());
    assert_eq!(results[2], (refusal, true));
    assert_eq!(lines.last().unwrap()["result"], "done");
}

/// `sandbox.mcpServers: true` runs a stdio server under the writing policy: server-filesystem
/// serving a directory outside the working directory can read there but not write; without
/// the setting it writes.
#[test]
fn a_sandboxed_stdio_server_cannot_write_outside_the_working_directory() {
    if landlock_absent() {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(outside.path()).unwrap();
    std::fs::write(root.join("seen.txt"), "readable").unwrap();
    let config = json!({"mcpServers": {"fs": {"command": "node", "args": [filesystem_entry(), &root]}}}).to_string();
    let target = root.join("written.txt");
    let calls = [
        ("mcp__fs__read_text_file", json!({"path": root.join("seen.txt")})),
        ("mcp__fs__write_file", json!({"path": &target, "content": "from the server"})),
    ];
    let args = |settings: &'static str| {
        ["--mcp-config", &config, "--allowedTools", "mcp__fs", "--settings", settings].map(str::to_owned)
    };
    let sandboxed = args(r#"{"sandbox": {"mcpServers": true}}"#);
    let (out, lines) = run_in(&dir, &calls, &sandboxed.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let results = tool_results(&lines);
    assert_eq!(results[0], ("readable".to_owned(), false));
    assert!(results[1].1, "the write is an error: {results:?}");
    assert!(!target.exists(), "the sandboxed server wrote outside");
    let open = args(r#"{"sandbox": {"mcpServers": false}}"#);
    let (_, lines) = run_in(&dir, &calls, &open.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    assert!(!tool_results(&lines)[1].1);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "from the server");
}

/// Whether the kernel lacks Landlock (the sandbox then confines nothing).
fn landlock_absent() -> bool {
    // SAFETY: the VERSION query of landlock_create_ruleset reads and writes no memory.
    unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) < 1 }
}

/// The trace shows an MCP call like any tool call, with the server and the tool's own name
/// besides its duration; stream-json's tool lines carry them as `mcp`.
#[test]
fn the_trace_and_the_tool_lines_name_the_server_and_the_remote_tool() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    let config = config(json!({}));
    let calls = [("mcp__everything__echo", json!({"message": "traced"}))];
    let trace_arg = trace.to_str().unwrap();
    let args =
        ["--mcp-config", &config, "--allowedTools", "mcp__everything", "--trace=pretty", "--trace-file", trace_arg];
    let (out, lines) = run_in(&dir, &calls, &args, &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    // The tool lines of the pretty trace, without their time and the call's duration.
    let text = std::fs::read_to_string(&trace).unwrap();
    let duration = regex::Regex::new(r"after \d+\.\dms").unwrap();
    let tool_lines: Vec<String> = text
        .lines()
        .filter_map(|l| {
            l.split_once(['⇢', '⇠']).map(|(_, rest)| duration.replace(rest.trim(), "after …ms").into_owned())
        })
        .collect();
    assert_eq!(
        tool_lines,
        vec![
            "mcp__everything__echo toolu_scripted_0_0 started early [MCP server everything, tool echo]",
            "mcp__everything__echo toolu_scripted_0_0 ok after …ms [MCP server everything, tool echo]",
        ]
    );
    let system = |subtype: &str| {
        let line = lines.iter().find(|l| l["type"] == "system" && l["subtype"] == subtype).unwrap();
        (line["name"].clone(), line["mcp"].clone())
    };
    let expected = (json!("mcp__everything__echo"), json!({"server": "everything", "tool": "echo"}));
    assert_eq!(system("tool_started"), expected);
    assert_eq!(system("tool_finished"), expected);
    assert_eq!(tool_results(&lines), vec![("Echo: traced".to_owned(), false)]);
}

/// A PreToolUse hook matching `^mcp__.*` denies the calls of every server's tools, which are
/// never made (server-filesystem writes no file), and leaves the built-in tools alone.
#[test]
fn a_pre_tool_use_hook_matching_mcp_tools_blocks_them_before_the_server_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("kept.txt"), "built-in tools still run\n").unwrap();
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [everything_entry(), "stdio"]},
        "fs": {"command": "node", "args": [filesystem_entry(), &root]},
    }})
    .to_string();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "^mcp__.*", "hooks": [
        {"type": "command", "command": "echo 'no MCP calls here' >&2; exit 2"}
    ]}]}})
    .to_string();
    let calls = [
        ("mcp__fs__write_file", json!({"path": root.join("written.txt"), "content": "x"})),
        ("mcp__everything__echo", json!({"message": "hi"})),
        ("Read", json!({"file_path": root.join("kept.txt")})),
    ];
    let args = ["--mcp-config", &config, "--settings", &settings, "--permission-mode", "bypassPermissions"];
    let (out, lines) = run_in(&dir, &calls, &args, &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let denied = ("PreToolUse hook denied this call: no MCP calls here".to_owned(), true);
    let results = tool_results(&lines);
    assert_eq!(results[..2], [denied.clone(), denied]);
    assert_eq!(results[2], ("     1\tbuilt-in tools still run\n".to_owned(), false));
    assert!(!root.join("written.txt").exists(), "the server was called");
}

/// Hooks matching one MCP tool by its full name run for that tool only: the PreToolUse hook
/// sees the call's input and the PostToolUse hook its result, as for a built-in tool.
#[test]
fn hooks_matching_one_mcp_tool_see_its_input_and_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.jsonl");
    let record = format!("cat >> '{}'; echo >> '{}'", log.display(), log.display());
    let group = json!([{"matcher": "mcp__everything__echo", "hooks": [{"type": "command", "command": record}]}]);
    let settings = json!({"hooks": {"PreToolUse": group, "PostToolUse": group}}).to_string();
    let config = config(json!({}));
    let calls = [
        ("mcp__everything__echo", json!({"message": "hooked"})),
        ("mcp__everything__get-sum", json!({"a": 1, "b": 2})),
    ];
    let args = ["--mcp-config", &config, "--settings", &settings, "--allowedTools", "mcp__everything"];
    let (out, lines) = run_in(&dir, &calls, &args, &[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        tool_results(&lines),
        vec![("Echo: hooked".to_owned(), false), ("The sum of 1 and 2 is 3.".to_owned(), false)]
    );
    let seen: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let fields = |v: &Value| {
        json!({"event": v["hook_event_name"], "tool": v["tool_name"], "input": v["tool_input"],
            "response": v.get("tool_response")})
    };
    assert_eq!(
        seen.iter().map(fields).collect::<Vec<_>>(),
        vec![
            json!({"event": "PreToolUse", "tool": "mcp__everything__echo", "input": {"message": "hooked"},
                "response": null}),
            json!({"event": "PostToolUse", "tool": "mcp__everything__echo", "input": {"message": "hooked"},
                "response": "Echo: hooked"}),
        ]
    );
}

/// The SDK's `mcp_status` control request: a connected server with its tools by their own
/// names and their read-only annotation.
#[test]
fn sdk_mcp_status_lists_a_connected_servers_tools() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let config = config(json!({}));
    let mut child = sdk_mode(&dir, &[("mcp__everything__echo", json!({"message": "status"}))], &config);
    let mut stdin = child.stdin.take().unwrap();
    let message = json!({"type": "user", "message": {"role": "user", "content": "Use the everything server."}});
    writeln!(stdin, "{message}").unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    while next()["type"] != "result" {}
    writeln!(stdin, "{}", json!({"type": "control_request", "request_id": "s1", "request": {"subtype": "mcp_status"}}))
        .unwrap();
    let answer = next();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let servers = &answer["response"]["response"]["mcpServers"];
    assert_eq!(servers.as_array().unwrap().len(), 1, "{answer}");
    let server = &servers[0];
    assert_eq!(
        (&server["name"], &server["status"], &server["config"]["type"], server.get("error")),
        (&json!("everything"), &json!("connected"), &json!("stdio"), None)
    );
    let tools: Vec<(&str, &Value)> =
        server["tools"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap(), &t["annotations"])).collect();
    let read_only = json!({"readOnly": true});
    let writes = json!({"readOnly": false});
    // The two elicitation tools are there because agentloop offers the capability.
    assert_eq!(tools.len(), 15, "{tools:?}");
    assert_eq!(tools[0], ("echo", &read_only));
    assert!(tools.contains(&("trigger-elicitation-request", &writes)), "{tools:?}");
    assert!(tools.contains(&("trigger-url-elicitation", &writes)), "{tools:?}");
    assert!(tools.contains(&("get-sum", &read_only)), "{tools:?}");
    assert!(tools.contains(&("toggle-simulated-logging", &writes)), "{tools:?}");
    assert_eq!(server["tools"][0]["description"], "Echoes back the input string");
}

/// The servers start in the background as soon as the run knows them: `Startup::begin`
/// returns while the server cannot answer yet, the server process is started without anyone
/// waiting, and `finish` (where the run needs the tools) waits for it.
#[tokio::test]
async fn servers_start_in_the_background_and_are_waited_for_where_the_tools_are_needed() {
    use agentloop::internals::mcp::Startup;
    let dir = tempfile::tempdir().unwrap();
    let (started, gate) = (dir.path().join("started"), dir.path().join("gate"));
    // The server says it started, then waits for the gate before it speaks MCP.
    let script = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.01; done; exec node '{}' stdio",
        started.display(),
        gate.display(),
        everything_entry().display()
    );
    let servers = agentloop::internals::mcp::parse(
        "test",
        &json!({"mcpServers": {"gated": {"command": "sh", "args": ["-c", script]}}}),
        &|_| None,
    )
    .unwrap();
    let startup = Startup::begin(servers, dir.path().to_path_buf(), agentloop::sandbox::Sandbox::none());
    assert!(!startup.is_finished(), "the server cannot have answered: its gate is closed");
    // Nothing waits on `startup`, yet its server process comes up (the deadline only keeps a
    // broken start from hanging the test).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !started.exists() {
        assert!(std::time::Instant::now() < deadline, "the server was not started in the background");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    std::fs::write(&gate, "").unwrap();
    let mut tools = agentloop::tools::Registry::new();
    let statuses = startup.finish(&mut tools).await;
    let info = agentloop::internals::mcp::ServerInfo { name: "mcp-servers/everything".into(), version: "2.0.0".into() };
    assert_eq!(
        statuses,
        vec![agentloop::internals::mcp::ServerStatus::connected("gated").with_server_info(Some(info))]
    );
    assert!(tools.get("mcp__gated__echo").is_some(), "{tools:?}");
}

#[test]
fn an_image_result_reaches_the_model_as_an_image_block_after_its_text() {
    // get-tiny-image answers text, a PNG, text; the image is the MCP logo the server ships.
    let source = std::fs::read_to_string(everything_entry().parent().unwrap().join("tools/get-tiny-image.js")).unwrap();
    let png = source.split("MCP_TINY_IMAGE = \"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
    let (out, lines) = run(
        &[("mcp__everything__get-tiny-image", json!({}))],
        &["--mcp-config", &config(json!({})), "--allowedTools", "mcp__everything"],
        &[],
    );
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let result = lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("a tool result");
    let text = format!(
        "Here's the image you requested:\n[image: image/png, about {} bytes, attached]\nThe image above is the MCP logo.",
        png.len() / 4 * 3
    );
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": text},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
        ])
    );
    assert_eq!(result.get("is_error"), None);
}
