//! Tests of the Bash tool: output and status, caps, timeouts, cancellation and cleanup of
//! every process the command started.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::tools::processes::{assert_dies, read_pid};
use crate::tools::shell_env::{KeepPattern, ShellEnv};

fn context() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    (dir, ctx)
}

async fn call(ctx: &ToolContext, input: Value) -> ToolOutput {
    Bash.call(input, ctx.clone()).await
}

#[tokio::test]
async fn runs_in_the_working_directory_with_stdin_closed() {
    let (_dir, ctx) = context();
    let out = call(&ctx, json!({"command": "echo hello; pwd", "description": "Say hello"})).await;
    assert_eq!(out, ToolOutput::ok(format!("hello\n{}", ctx.cwd.display())));
    assert_eq!(call(&ctx, json!({"command": "cat"})).await, ToolOutput::ok("(no output)"));
}

#[tokio::test]
async fn reports_stderr_and_a_nonzero_exit() {
    let (_dir, ctx) = context();
    let out = call(&ctx, json!({"command": "echo out; echo err >&2; exit 3"})).await;
    assert_eq!(out, ToolOutput::error("out\nerr\nExit code 3"));
    let killed = call(&ctx, json!({"command": "kill -9 $$"})).await;
    assert_eq!(killed, ToolOutput::error("Killed by signal 9"));
}

#[tokio::test]
async fn keeps_the_head_and_tail_of_huge_output() {
    let (_dir, ctx) = context();
    let out = call(&ctx, json!({"command": "yes | head -c 1000000"})).await;
    let half = "y\n".repeat(MAX_OUTPUT_CHARS / 4);
    let expected = format!("{half}\n… [970000 bytes cut from the middle of stdout] …\n{}", half.trim_end());
    assert_eq!(out, ToolOutput::ok(expected));
}

#[tokio::test]
async fn times_out_and_keeps_what_was_printed() {
    let (_dir, ctx) = context();
    let out = call(&ctx, json!({"command": "sleep 5", "timeout": 300})).await;
    assert_eq!(out, ToolOutput::error("Command timed out after 300 ms"));
    let out = call(&ctx, json!({"command": "echo started; sleep 5", "timeout": 300})).await;
    assert_eq!(out, ToolOutput::error("started\nCommand timed out after 300 ms"));
}

#[tokio::test]
async fn abort_kills_the_whole_process_group() {
    let (dir, ctx) = context();
    let command = "sleep 100 & echo $! > pid; sh -c 'echo $$ > pid2; exec sleep 100'";
    let running = tokio::spawn(Bash.call(json!({"command": command}), ctx.clone()));
    let background = read_pid(&dir.path().join("pid")).await;
    let foreground = read_pid(&dir.path().join("pid2")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    ctx.cancel.cancel();
    assert_eq!(running.await.unwrap(), ToolOutput::error(CANCELLED));
    assert_dies(background).await;
    assert_dies(foreground).await;
}

#[tokio::test]
async fn background_processes_holding_the_output_are_killed_when_the_shell_exits() {
    let (dir, ctx) = context();
    let out = call(&ctx, json!({"command": "echo hi; sleep 100 & echo $! > pid"})).await;
    assert_eq!(out, ToolOutput::ok(format!("hi\n{KILLED_LEFTOVERS}")));
    assert_dies(read_pid(&dir.path().join("pid")).await).await;
}

#[tokio::test]
async fn a_cancelled_run_never_starts() {
    let (dir, ctx) = context();
    ctx.cancel.cancel();
    let out = call(&ctx, json!({"command": "touch started"})).await;
    assert_eq!(out, ToolOutput::error(CANCELLED));
    assert!(!dir.path().join("started").exists());
}

#[tokio::test]
async fn refuses_bad_input() {
    let (_dir, ctx) = context();
    let error = |issue: &str| {
        ToolOutput::error(format!(
            "<tool_use_error>InputValidationError: Bash failed due to the following issue: {issue}</tool_use_error>"
        ))
    };
    assert_eq!(call(&ctx, json!({})).await, error("missing field `command`"));
    assert_eq!(call(&ctx, json!({"command": 1})).await, error("invalid type: integer `1`, expected a string"));
    assert_eq!(
        call(&ctx, json!({"command": "ls", "timeout": "soon"})).await,
        error("invalid type: string \"soon\", expected u64")
    );
    let too_long = call(&ctx, json!({"command": "ls", "timeout": 600_001})).await;
    assert_eq!(too_long, ToolOutput::error("timeout must be between 1 and 600000 milliseconds (got 600001)"));
    let zero = call(&ctx, json!({"command": "ls", "timeout": 0})).await;
    assert_eq!(zero, ToolOutput::error("timeout must be between 1 and 600000 milliseconds (got 0)"));
    assert_eq!(call(&ctx, json!({"command": "  "})).await, ToolOutput::error("command is empty"));
}

#[tokio::test]
async fn in_the_background_it_answers_at_once_and_the_timeout_does_not_apply() {
    let (_dir, ctx) = context();
    let input =
        json!({"command": "sleep 0.2; echo done >&2", "timeout": 1, "run_in_background": true, "description": "Wait"});
    let out = call(&ctx, input).await;
    let shell = ctx.background.list().pop().expect("one background shell");
    let expected = format!(
        "Command running in background with ID: {}. Output is being written to: {}",
        shell.id(),
        shell.output_path().display()
    );
    assert_eq!(out, ToolOutput::ok(expected));
    assert_eq!((shell.command(), shell.description()), ("sleep 0.2; echo done >&2", Some("Wait")));
    let ended = shell.wait(Duration::from_secs(60), &CancellationToken::new()).await;
    assert_eq!(
        ended,
        crate::tools::background::Waited::Ended(crate::tools::background::Status::Completed { exit_code: 0 })
    );
    assert_eq!(shell.output(100).unwrap().render("output"), "done\n");
    // `false` is the foreground.
    let foreground = call(&ctx, json!({"command": "echo here", "run_in_background": false})).await;
    assert_eq!(foreground, ToolOutput::ok("here"));
    assert_eq!(ctx.background.ids(), [shell.id()]);
}

#[test]
fn only_read_only_commands_in_the_foreground_are_concurrency_safe() {
    assert!(!Bash.is_concurrency_safe(&json!({"command": "ls", "run_in_background": true})));
    assert!(Bash.is_concurrency_safe(&json!({"command": "ls", "run_in_background": false})));
    assert!(Bash.is_concurrency_safe(&json!({"command": "git status && ls -la"})));
    assert!(!Bash.is_concurrency_safe(&json!({"command": "rm -rf target"})));
    assert!(!Bash.is_concurrency_safe(&json!({"command": 5})));
    assert!(!Bash.is_concurrency_safe(&json!({})));
}

#[tokio::test]
async fn runs_without_the_model_credentials_or_secrets() {
    let (_dir, ctx) = context();
    let vars = [
        ("PATH", "/usr/bin:/bin"),
        ("ANTHROPIC_API_KEY", "sk-test-secret"),
        ("ANTHROPIC_AUTH_TOKEN", "bearer-secret"),
        ("MY_SERVICE_TOKEN", "t0k"),
        ("GITHUB_TOKEN", "gh-kept"),
        ("LANG", "C"),
    ];
    let vars = vars.map(|(n, v)| (std::ffi::OsString::from(n), std::ffi::OsString::from(v)));
    let keep = [KeepPattern::new("GITHUB_*").unwrap()];
    let ctx = ToolContext { shell_env: Arc::new(ShellEnv::from_vars(vars, &keep)), ..ctx };
    // `_` is the path bash found `env` at; the rest is exact.
    let out = call(&ctx, json!({"command": "env | grep -v '^_=' | sort"})).await;
    let expected = format!("GITHUB_TOKEN=gh-kept\nLANG=C\nPATH=/usr/bin:/bin\nPWD={}\nSHLVL=1", ctx.cwd.display());
    assert_eq!(out, ToolOutput::ok(expected));
}

/// A context in `repo`, a fresh git repository inside a temporary directory, whose shells see
/// no git configuration but the repository's and none of the inherited `GIT_*` variables.
async fn git_context() -> (tempfile::TempDir, ToolContext) {
    let (dir, ctx) = context();
    let vars = std::env::vars_os()
        .filter(|(name, _)| !name.to_string_lossy().starts_with("GIT_"))
        .chain([("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")].map(|(n, v)| (n.into(), v.into())));
    let ctx = ToolContext { shell_env: Arc::new(ShellEnv::from_vars(vars, &[])), cwd: ctx.cwd.join("repo"), ..ctx };
    std::fs::create_dir(&ctx.cwd).unwrap();
    assert_eq!(call(&ctx, json!({"command": "git init -q"})).await, ToolOutput::ok("(no output)"));
    (dir, ctx)
}

/// Add `text` to the repository's `.git/config`.
fn configure(ctx: &ToolContext, text: &str) {
    let path = ctx.cwd.join(".git/config");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(path, config + text).unwrap();
}

#[tokio::test]
async fn guarded_git_does_not_run_a_planted_fsmonitor() {
    let (dir, ctx) = git_context().await;
    let marker = dir.path().canonicalize().unwrap().join("PWNED-fsmonitor");
    // `#` drops the version and token git passes the hook (`touch` would create them).
    configure(&ctx, &format!("[core]\n\tfsmonitor = \"touch {} #\"\n", marker.display()));
    std::fs::write(ctx.cwd.join("notes.txt"), "x\n").unwrap();
    let guarded = ToolContext { guard_git: true, ..ctx.clone() };
    let status = json!({"command": "git status --porcelain"});
    assert_eq!(call(&guarded, status.clone()).await, ToolOutput::ok("?? notes.txt"));
    assert!(!marker.exists());
    // Unguarded, the same call runs it: the test can fail.
    assert_eq!(call(&ctx, status).await, ToolOutput::ok("?? notes.txt\nwarning: Empty last update token."));
    assert!(marker.exists());
}

#[tokio::test]
async fn guarded_git_still_runs_textconv_which_only_the_risk_check_sees() {
    let (dir, ctx) = git_context().await;
    let marker = dir.path().canonicalize().unwrap().join("PWNED-textconv");
    std::fs::write(ctx.cwd.join("report.pdf"), "one\n").unwrap();
    std::fs::write(ctx.cwd.join(".gitattributes"), "*.pdf diff=pdf\n").unwrap();
    let commit = json!({"command": "git add -A && git -c user.name=t -c user.email=t@t commit -qm c"});
    assert_eq!(call(&ctx, commit).await, ToolOutput::ok("(no output)"));
    configure(&ctx, &format!("[diff \"pdf\"]\n\ttextconv = touch {} && cat\n", marker.display()));
    std::fs::write(ctx.cwd.join("report.pdf"), "two\n").unwrap();
    // A driver is named by the repository: no fixed environment can switch it off.
    let guarded = ToolContext { guard_git: true, ..ctx.clone() };
    let diff = call(&guarded, json!({"command": "git diff"})).await;
    let expected = "diff --git a/report.pdf b/report.pdf\nindex 5626abf..f719efd 100644\n--- a/report.pdf\n+++ b/report.pdf\n@@ -1 +1 @@\n-one\n+two";
    assert_eq!(diff, ToolOutput::ok(expected));
    assert!(marker.exists());
    assert_eq!(
        crate::permissions::git::repo_config_risk(&ctx.cwd).map(|risk| risk.to_string()),
        Some(".git/config sets diff.pdf.textconv".to_owned())
    );
}

#[tokio::test]
async fn the_git_guard_wins_over_the_shell_environment() {
    let (_dir, ctx) = context();
    let vars = [("PATH", "/usr/bin:/bin"), ("GIT_PAGER", "less"), ("GIT_DIR", "/elsewhere"), ("GIT_CONFIG_COUNT", "0")];
    let vars = vars.map(|(n, v)| (std::ffi::OsString::from(n), std::ffi::OsString::from(v)));
    let ctx = ToolContext { shell_env: Arc::new(ShellEnv::from_vars(vars, &[])), ..ctx };
    let show = json!({"command": "echo \"$GIT_PAGER ${GIT_DIR-unset} $GIT_CONFIG_COUNT $GIT_CONFIG_KEY_0\""});
    assert_eq!(call(&ctx, show.clone()).await, ToolOutput::ok("less /elsewhere 0 "));
    let guarded = ToolContext { guard_git: true, ..ctx };
    assert_eq!(call(&guarded, show).await, ToolOutput::ok("cat unset 9 core.fsmonitor"));
}
