//! The kernel boundary, through the binary: each test runs a Bash call (or a hook) that
//! tries to leave its sandbox and checks it was refused, then runs the same call with the
//! sandbox off (`sandbox.enabled: false`) and checks it succeeds, so every test can fail.
//! Read-only policies are also driven directly through the helper
//! (`agentloop __sandbox-exec --policy …`), since reaching them needs the analysis to be
//! wrong. The kernel here has Landlock; where it does not, each test says so and returns.

use crate::binary;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

/// Whether the kernel has Landlock; prints why a test is skipped when not.
fn landlock() -> bool {
    // SAFETY: the VERSION query of landlock_create_ruleset reads and writes no memory.
    let abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    if abi < 1 {
        eprintln!("skipped: this kernel has no Landlock (landlock_create_ruleset answered {abi})");
    }
    abi >= 1
}

/// Run one Bash `command` in `dir` with the scripted model, rules `allow`, and the
/// settings' `sandbox` block; the tool result's text.
fn bash(dir: &Path, command: &str, allow: &[&str], sandbox: Value) -> String {
    let out = run(dir, command, allow, sandbox, &[]);
    tool_result(&out)
}

fn run(dir: &Path, command: &str, allow: &[&str], sandbox: Value, extra: &[&str]) -> Output {
    let settings = json!({"permissions": {"allow": allow}, "sandbox": sandbox});
    let out = scripted(dir, settings, &[bash_call(command)], extra);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A reply calling Bash with `command`.
fn bash_call(command: &str) -> Value {
    json!({"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command}}]})
}

/// Run the scripted model in `dir` with `settings`: `replies`, then one that says "done"
/// (stream-json out, `extra` flags besides); the scenario file lives beside `dir`.
fn scripted(dir: &Path, settings: Value, replies: &[Value], extra: &[&str]) -> Output {
    scripted_env(dir, settings, replies, extra, &[])
}

/// [`scripted`] with `env` added to agentloop's environment.
fn scripted_env(dir: &Path, settings: Value, replies: &[Value], extra: &[&str], env: &[(&str, &str)]) -> Output {
    let scenario = dir.join("..").join(format!("scenario-{}.json", std::process::id()));
    let mut responses = replies.to_vec();
    responses.push(json!({"content": [{"type": "text", "text": "done"}]}));
    let doc = json!({"prompt": "try it", "settings": settings, "responses": responses});
    std::fs::write(&scenario, doc.to_string()).unwrap();
    let out = binary::offline_agentloop()
        .args(["run", "--model", &format!("scripted:{}", scenario.display()), "--cwd", dir.to_str().unwrap()])
        .args(["--output-format", "stream-json"])
        .args(extra)
        .env("AGENTLOOP_TEST_MARKER", "marker-7f3a")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    std::fs::remove_file(&scenario).ok();
    out
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn tool_result(out: &Output) -> String {
    let results: Vec<String> = lines(out)
        .iter()
        .filter(|v| v["type"] == "user")
        .flat_map(|v| v["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    results[0].clone()
}

fn on() -> Value {
    json!({})
}

fn off() -> Value {
    json!({"enabled": false})
}

/// A project directory inside a scratch directory (so `..` is ours too).
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("proj");
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(root.join("secrets/key"), "sk-kernel-secret\n").unwrap();
    (scratch, root)
}

#[test]
fn an_allowed_command_writes_the_working_directory_but_nothing_outside() {
    if !landlock() {
        return;
    }
    let (scratch, root) = project();
    let outside = scratch.path().join("outside.txt");
    let command = format!("echo in > inside.txt && echo out > {}; cat inside.txt", outside.display());
    let result = bash(&root, &command, &["Bash"], on());
    assert!(result.starts_with("in\n"), "{result}");
    assert!(result.contains("Permission denied"), "{result}");
    assert!(!outside.exists());
    assert_eq!(std::fs::read_to_string(root.join("inside.txt")).unwrap(), "in\n");
    bash(&root, &command, &["Bash"], off());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "out\n");
}

#[test]
fn protected_paths_stay_read_only_inside_the_working_directory() {
    if !landlock() {
        return;
    }
    let (_scratch, root) = project();
    let command = "echo evil > .git/hooks/pre-commit; echo '{\"hooks\":1}' > .claude/settings.json; \
                   echo '[core] fsmonitor=evil' >> .git/config; mv .claude .claude-old; echo ok > ok.txt";
    let result = bash(&root, command, &["Bash"], on());
    assert!(!root.join(".git/hooks/pre-commit").exists(), "{result}");
    assert_eq!(std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(), "{}");
    assert_eq!(std::fs::read_to_string(root.join(".git/config")).unwrap(), "[core]\n");
    assert!(!root.join(".claude-old").exists());
    assert_eq!(std::fs::read_to_string(root.join("ok.txt")).unwrap(), "ok\n", "{result}");
    bash(&root, command, &["Bash"], off());
    assert_eq!(std::fs::read_to_string(root.join(".git/hooks/pre-commit")).unwrap(), "evil\n");
}

#[test]
fn a_read_deny_rule_holds_against_a_program_the_analysis_cannot_see_into() {
    if !landlock() {
        return;
    }
    let (_scratch, root) = project();
    // `make` reads the Makefile the analysis never sees; the rule is `Read(./secrets/**)`.
    std::fs::write(root.join("Makefile"), "all:\n\t@cat secrets/key; cat README 2>/dev/null || echo open\n").unwrap();
    let scenario_rules = |sandbox: Value| {
        let settings = json!({"permissions": {"allow": ["Bash"], "deny": ["Read(./secrets/**)"]}, "sandbox": sandbox});
        tool_result(&scripted(&root, settings, &[bash_call("make")], &[]))
    };
    let confined = scenario_rules(on());
    assert!(!confined.contains("sk-kernel-secret"), "{confined}");
    assert!(confined.contains("secrets/key: Permission denied"), "{confined}");
    assert!(confined.contains("open"), "{confined}");
    assert!(scenario_rules(off()).contains("sk-kernel-secret"));
}

#[test]
fn the_network_is_closed_to_commands_unless_the_settings_open_it() {
    if !landlock() {
        return;
    }
    let (_scratch, root) = project();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let result = bash(&root, &command, &["Bash"], on());
    assert!(!result.contains("connected"), "{result}");
    assert!(result.contains("Operation not permitted"), "{result}");
    assert!(bash(&root, &command, &["Bash"], off()).contains("connected"));
    assert!(bash(&root, &command, &["Bash"], json!({"network": {"allowAll": true}})).contains("connected"));
}

#[test]
fn a_command_cannot_signal_a_process_outside_its_sandbox() {
    if !landlock() {
        return;
    }
    let (_scratch, root) = project();
    let mut victim = std::process::Command::new("sleep").arg("100").spawn().unwrap();
    let command = format!("kill -9 {}; echo tried", victim.id());
    let result = bash(&root, &command, &["Bash"], on());
    assert!(result.contains("Operation not permitted"), "{result}");
    assert_eq!(victim.try_wait().unwrap(), None, "the victim was killed");
    bash(&root, &command, &["Bash"], off());
    assert!(victim.wait().unwrap().code().is_none(), "killed by a signal without the sandbox");
}

#[test]
fn agentloops_own_environment_is_closed_to_commands() {
    if !landlock() {
        return;
    }
    let (_scratch, root) = project();
    // The shell's parent is the helper; agentloop is the helper's parent.
    let command = "gp=$(awk '/^PPid/{print $2}' /proc/$PPID/status); tr '\\0' '\\n' < /proc/$gp/environ | grep MARKER; \
                   tr '\\0' '\\n' < /proc/$PPID/environ | grep -c MARKER";
    let result = bash(&root, command, &["Bash"], on());
    assert!(!result.contains("marker-7f3a"), "{result}");
    assert!(result.contains("Permission denied"), "{result}");
    assert!(bash(&root, command, &["Bash"], off()).contains("AGENTLOOP_TEST_MARKER=marker-7f3a"));
}

#[test]
fn processes_a_call_leaves_behind_are_gone_when_it_returns() {
    let (_scratch, root) = project();
    let command = "sleep 300 & echo $! > p1; nohup sleep 301 >/dev/null 2>&1 & echo $! > p2; \
                   setsid -f sh -c 'echo $$ > p3; exec sleep 302'; (sleep 303 & echo $! > p4); sleep 0.2; echo started";
    for sandbox in [on(), off()] {
        let result = bash(&root, command, &["Bash"], sandbox);
        assert!(result.contains("started"), "{result}");
        assert!(result.contains("agentloop: stopped 4 processes the command left running"), "{result}");
        for file in ["p1", "p2", "p3", "p4"] {
            let pid = std::fs::read_to_string(root.join(file)).unwrap();
            assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists(), "{file}: {pid} is alive");
        }
    }
}

#[test]
fn system_init_and_the_trace_header_say_whether_commands_are_confined() {
    let (scratch, root) = project();
    let init = |sandbox: Value, extra: &[&str]| {
        let out = run(&root, "true", &["Bash"], sandbox, extra);
        lines(&out).into_iter().find(|l| l["subtype"] == "init").unwrap()["sandbox"].clone()
    };
    let expected = if landlock() { "enabled" } else { "unavailable" };
    assert_eq!(init(on(), &[]), expected);
    assert_eq!(init(off(), &[]), "disabled");
    if landlock() {
        assert_eq!(init(on(), &["--permission-mode", "bypassPermissions"]), "bypassed");
    }
    let trace = scratch.path().join("trace.jsonl");
    run(&root, "true", &["Bash"], on(), &["--trace=jsonl", "--trace-file", trace.to_str().unwrap()]);
    let header: Value = serde_json::from_str(std::fs::read_to_string(&trace).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(header["sandbox"], expected);
}

#[test]
fn bypass_permissions_runs_unconfined() {
    if !landlock() {
        return;
    }
    let (scratch, root) = project();
    let outside = scratch.path().join("bypass.txt");
    let command = format!("echo b > {}", outside.display());
    run(&root, &command, &[], on(), &["--permission-mode", "bypassPermissions"]);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "b\n");
}

/// The helper with a read-only policy: what a command the analysis wrongly proved
/// read-only could do.
fn read_only_helper(root: &Path, deny: &[&Path], script: &str) -> Output {
    let mut within: Vec<String> =
        ["/usr", "/bin", "/lib", "/lib64", "/etc/passwd", "/proc", "/dev"].iter().map(|s| s.to_string()).collect();
    within.push(root.display().to_string());
    let policy = json!({
        "read": {"within": within},
        "write": ["/dev/null"],
        "deny_read": deny,
        "read_only": [],
        "network": {"closed": {"unix_sockets": false, "local_binding": false}}
    });
    binary::offline_agentloop()
        .args(["__sandbox-exec", "--policy", &policy.to_string(), "--", "bash", "-c", script])
        .current_dir(root)
        .output()
        .unwrap()
}

#[test]
fn the_read_only_policy_writes_nothing_and_reads_only_inside() {
    if !landlock() {
        return;
    }
    let (scratch, root) = project();
    std::fs::write(scratch.path().join("sibling.txt"), "sibling-secret").unwrap();
    std::fs::write(root.join(".env"), "env-secret").unwrap();
    std::os::unix::fs::symlink(scratch.path().join("sibling.txt"), root.join("link")).unwrap();
    let script = "touch made; echo x > /dev/null && echo null-ok; cat ../sibling.txt link .env secrets/key; \
                  cat /etc/hostname; ls; exit 0";
    let out = read_only_helper(&root, &[&root.join(".env"), &root.join("secrets")], script);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!root.join("made").exists(), "{stderr}");
    assert!(stdout.starts_with("null-ok\n"), "{stdout}");
    for secret in ["sibling-secret", "env-secret", "sk-kernel-secret"] {
        assert!(!stdout.contains(secret), "{secret}: {stdout}");
    }
    for refused in ["touch: cannot touch 'made'", "../sibling.txt: Permission denied", "link: Permission denied"] {
        assert!(stderr.contains(refused), "{refused}: {stderr}");
    }
    assert!(stderr.contains(".env: Permission denied") && stderr.contains("/etc/hostname: Permission denied"));
    assert!(stdout.contains("Makefile") || stdout.contains("secrets"), "listing works: {stdout}");
}

#[test]
fn the_helper_refuses_a_bad_policy_without_running_anything() {
    let dir = tempfile::tempdir().unwrap();
    let out = binary::offline_agentloop()
        .args(["__sandbox-exec", "--policy", "{\"read\":1}", "--", "touch", "ran"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("agentloop __sandbox-exec: bad --policy: "));
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn hooks_get_the_same_file_system_bounds() {
    if !landlock() {
        return;
    }
    let (scratch, root) = project();
    let outside = scratch.path().join("hook-outside.txt");
    let hook =
        format!("echo hook > hook-inside.txt; echo hook > {}; echo x >> .git/hooks/post-commit", outside.display());
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]});
    for (sandbox, confined) in [(on(), true), (off(), false)] {
        let settings = json!({"permissions": {"allow": ["Bash"]}, "sandbox": sandbox, "hooks": hooks});
        let out = scripted(&root, settings, &[bash_call("true")], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read_to_string(root.join("hook-inside.txt")).unwrap(), "hook\n");
        assert_eq!(outside.exists(), !confined);
        assert_eq!(root.join(".git/hooks/post-commit").exists(), !confined);
    }
}

#[test]
fn background_shells_are_sandboxed_too() {
    if !landlock() {
        return;
    }
    let (scratch, root) = project();
    let outside = scratch.path().join("bg-outside.txt");
    let command = format!("echo out > {}; echo in > bg-inside.txt", outside.display());
    let background = json!({"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command, "run_in_background": true}}]});
    let wait = bash_call("for i in $(seq 50); do [ -e bg-inside.txt ] && break; sleep 0.1; done");
    for (sandbox, confined) in [(on(), true), (off(), false)] {
        std::fs::remove_file(root.join("bg-inside.txt")).ok();
        let settings = json!({"permissions": {"allow": ["Bash"]}, "sandbox": sandbox});
        let out = scripted(&root, settings, &[background.clone(), wait.clone()], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read_to_string(root.join("bg-inside.txt")).unwrap(), "in\n");
        assert_eq!(outside.exists(), !confined);
    }
}

#[test]
fn commands_start_through_the_helper_program_installed_beside_agentloop() {
    let (_scratch, root) = project();
    let helper = std::path::Path::new(env!("CARGO_BIN_EXE_agentloop")).with_file_name("agentloop-sandbox");
    assert!(helper.is_file(), "cargo builds agentloop-sandbox beside agentloop");
    let result = bash(&root, "tr '\\0' ' ' < /proc/$PPID/cmdline", &["Bash"], on());
    assert!(result.starts_with(&format!("{} --policy {{", helper.display())), "{result}");
}

#[test]
fn without_landlock_nothing_is_auto_approved_and_fail_if_unavailable_exits_2() {
    let (_scratch, root) = project();
    let run = |sandbox: Value| {
        let env = [("AGENTLOOP_SANDBOX", "unavailable")];
        scripted_env(&root, json!({"sandbox": sandbox}), &[bash_call("ls")], &[], &env)
    };
    let out = run(on());
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("agentloop: warning: the sandbox is unavailable (this kernel has no Landlock)").count(),
        1,
        "{stderr}"
    );
    assert_eq!(lines(&out).iter().find(|l| l["subtype"] == "init").unwrap()["sandbox"], "unavailable");
    assert_eq!(
        tool_result(&out),
        "Permission to use Bash was not granted: the sandbox is unavailable, so a command is not run unconfined \
         without asking, and this run cannot ask anyone. Allow it with --allowedTools (e.g. `Bash` or a narrower \
         rule) or a permission mode."
    );
    let out = run(json!({"failIfUnavailable": true}));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentloop: the sandbox is unavailable (the kernel has no Landlock) and the settings' \
         sandbox.failIfUnavailable is true\n"
    );
}

#[test]
fn dangerously_disable_sandbox_needs_a_rule_and_then_runs_unconfined() {
    if !landlock() {
        return;
    }
    let (scratch, root) = project();
    let call = |command: &str| json!({"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command, "dangerouslyDisableSandbox": true}}]});
    let asked = tool_result(&scripted(&root, json!({}), &[call("ls")], &[]));
    assert!(asked.starts_with("Permission to use Bash was not granted: the call disables the sandbox"), "{asked}");
    let outside = scratch.path().join("unsandboxed.txt");
    let write = format!("echo u > {}", outside.display());
    scripted(&root, json!({"permissions": {"allow": ["Bash"]}}), &[call(&write)], &[]);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "u\n");
    std::fs::remove_file(&outside).unwrap();
    let settings = json!({"permissions": {"allow": ["Bash"]}, "sandbox": {"allowUnsandboxedCommands": false}});
    scripted(&root, settings, &[call(&write)], &[]);
    assert!(!outside.exists(), "allowUnsandboxedCommands: false keeps the sandbox");
}

#[test]
fn a_command_that_never_ends_is_stopped_at_its_timeout_with_what_it_started() {
    let (_scratch, root) = project();
    let command = "setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 301'; sleep 300 & echo $! > child.pid; sleep 302";
    let call =
        json!({"content": [{"type": "tool_use", "name": "Bash", "input": {"command": command, "timeout": 1500}}]});
    for sandbox in [on(), off()] {
        let result = tool_result(&scripted(
            &root,
            json!({"permissions": {"allow": ["Bash"]}, "sandbox": sandbox}),
            std::slice::from_ref(&call),
            &[],
        ));
        assert!(result.ends_with("Command timed out after 1500 ms"), "{result}");
        for file in ["escaped.pid", "child.pid"] {
            let pid = std::fs::read_to_string(root.join(file)).unwrap();
            assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists(), "{file}: {pid} outlived the timeout");
        }
    }
}

#[test]
fn a_hook_that_never_ends_is_stopped_at_its_timeout_with_what_it_started() {
    let (_scratch, root) = project();
    let hook = "setsid -f sh -c 'echo $$ > hook-escaped.pid; exec sleep 301'; sleep 302";
    let hooks =
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook, "timeout": 1}]}]});
    let settings = json!({"permissions": {"allow": ["Bash"]}, "hooks": hooks});
    let out = scripted(&root, settings, &[bash_call("echo ran")], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tool_result(&out), "ran");
    let pid = std::fs::read_to_string(root.join("hook-escaped.pid")).unwrap();
    assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists(), "{pid} outlived the hook");
}
