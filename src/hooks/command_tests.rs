//! Tests for [`super::CommandHooks`]: real `bash` processes in temporary directories, plus the
//! pure combination rules.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::*;
use crate::hooks::run::tests::is_dead;
use crate::hooks::settings::Settings;

fn hooks(table: Value) -> CommandHooks {
    CommandHooks::new(Settings::from_value("test", &json!({ "hooks": table })).unwrap().hooks)
}

fn stop_hooks(commands: &[&str]) -> CommandHooks {
    let entries: Vec<Value> = commands.iter().map(|c| json!({"type": "command", "command": c})).collect();
    hooks(json!({"Stop": [{"hooks": entries}]}))
}

fn setup() -> (TempDir, HookEnv) {
    let dir = tempfile::tempdir().unwrap();
    let env = HookEnv::new("s1", dir.path());
    (dir, env)
}

async fn stop(hooks: &CommandHooks, env: &HookEnv) -> (StopDecision, Vec<String>) {
    hooks.stop(env, false).await
}

fn block(feedback: &str) -> StopDecision {
    StopDecision::Block { feedback: feedback.into() }
}

fn prevent(reason: &str) -> StopDecision {
    StopDecision::Prevent { reason: reason.into() }
}

#[tokio::test]
async fn exit_0_passes() {
    let (_dir, env) = setup();
    assert_eq!(stop(&stop_hooks(&["exit 0"]), &env).await, (StopDecision::Pass, vec![]));
    assert_eq!(stop(&stop_hooks(&["echo not json"]), &env).await, (StopDecision::Pass, vec![]));
    assert_eq!(stop(&stop_hooks(&[r#"echo '{"decision":"approve"}'"#]), &env).await, (StopDecision::Pass, vec![]));
}

#[tokio::test]
async fn no_hooks_pass() {
    let (_dir, env) = setup();
    let none = CommandHooks::new(HookTable::default());
    assert_eq!(none.stop(&env, true).await, (StopDecision::Pass, vec![]));
    assert_eq!(none.pre_tool_use(&env, "Bash", "t1", &json!({})).await, (PreToolDecision::default(), vec![]));
    assert_eq!(
        none.post_tool_use(&env, "Bash", "t1", &json!({}), "ok", false).await,
        (PostToolDecision::default(), vec![])
    );
}

#[tokio::test]
async fn exit_2_blocks_with_stderr() {
    let (_dir, env) = setup();
    let h = stop_hooks(&["echo ignored; echo 'Run the tests first.' >&2; exit 2"]);
    assert_eq!(stop(&h, &env).await, (block("Run the tests first."), vec![]));
    let silent = stop_hooks(&["exit 2"]);
    assert_eq!(stop(&silent, &env).await, (block("Blocked by Stop hook `exit 2`"), vec![]));
}

/// Stdout past the cap is cut, so a JSON decision that long cannot be read: it warns; other
/// long output is ignored as before.
#[tokio::test]
async fn json_past_the_output_cap_is_not_read() {
    let (_dir, env) = setup();
    let long_json = r#"printf '{"decision":"block","reason":"'; head -c 40000 /dev/zero | tr '\0' r; printf '"}'"#;
    let warning = format!("Stop hook `{long_json}` printed more than 30000 bytes on stdout: its JSON was not read");
    assert_eq!(stop(&stop_hooks(&[long_json]), &env).await, (StopDecision::Pass, vec![warning]));
    let long_text = "head -c 40000 /dev/zero | tr '\\0' r";
    assert_eq!(stop(&stop_hooks(&[long_text]), &env).await, (StopDecision::Pass, vec![]));
}

#[tokio::test]
async fn json_decision_block() {
    let (_dir, env) = setup();
    let h = stop_hooks(&[r#"echo '{"decision": "block", "reason": "lint fails"}'"#]);
    assert_eq!(stop(&h, &env).await, (block("lint fails"), vec![]));
}

#[tokio::test]
async fn json_continue_false_prevents() {
    let (_dir, env) = setup();
    let h = stop_hooks(&[r#"echo '{"continue": false, "stopReason": "budget spent"}'"#]);
    assert_eq!(stop(&h, &env).await, (prevent("budget spent"), vec![]));
    let h = stop_hooks(&[r#"echo '{"continue": false}'"#]);
    assert_eq!(stop(&h, &env).await, (prevent("Stop hook prevented continuation"), vec![]));
}

#[tokio::test]
async fn prevent_wins_and_blocks_join() {
    let (_dir, env) = setup();
    let h = stop_hooks(&["echo one >&2; exit 2", "echo two >&2; exit 2"]);
    assert_eq!(stop(&h, &env).await, (block("one\ntwo"), vec![]));
    let h = stop_hooks(&["echo one >&2; exit 2", r#"echo '{"continue": false, "stopReason": "halt"}'"#]);
    assert_eq!(stop(&h, &env).await, (prevent("halt"), vec![]));
}

#[tokio::test]
async fn stdin_carries_stop_hook_active() {
    let (_dir, env) = setup();
    let h = stop_hooks(&[r#"read x; case "$x" in *'"stop_hook_active":true'*) echo again >&2; exit 2;; esac"#]);
    assert_eq!(h.stop(&env, true).await, (block("again"), vec![]));
    assert_eq!(h.stop(&env, false).await, (StopDecision::Pass, vec![]));
}

#[tokio::test]
async fn inputs_are_the_documented_json() {
    let (dir, env) = setup();
    let env = HookEnv { transcript_path: Some(dir.path().join("s1.jsonl")), permission_mode: "plan", ..env };
    let cwd = dir.path().to_str().unwrap();
    let transcript = dir.path().join("s1.jsonl");
    let read_input =
        || serde_json::from_str::<Value>(&std::fs::read_to_string(dir.path().join("in")).unwrap()).unwrap();

    stop_hooks(&["cat > in"]).stop(&env, true).await;
    assert_eq!(
        read_input(),
        json!({"session_id": "s1", "transcript_path": transcript, "cwd": cwd, "permission_mode": "plan",
               "hook_event_name": "Stop", "stop_hook_active": true})
    );

    let h = hooks(json!({
        "PreToolUse": [{"hooks": [{"type": "command", "command": "cat > in"}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "cat > in"}]}]
    }));
    let tool_input = json!({"command": "ls"});
    h.pre_tool_use(&env, "Bash", "toolu_1", &tool_input).await;
    assert_eq!(
        read_input(),
        json!({"session_id": "s1", "transcript_path": transcript, "cwd": cwd, "permission_mode": "plan",
               "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"})
    );
    h.post_tool_use(&env, "Bash", "toolu_1", &tool_input, "a\nb\n", true).await;
    assert_eq!(
        read_input(),
        json!({"session_id": "s1", "transcript_path": transcript, "cwd": cwd, "permission_mode": "plan",
               "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1", "tool_response": "a\nb\n",
               "tool_response_is_error": true})
    );
}

#[tokio::test]
async fn runs_in_cwd() {
    let (dir, env) = setup();
    assert_eq!(stop(&stop_hooks(&["pwd > where"]), &env).await, (StopDecision::Pass, vec![]));
    let real = dir.path().canonicalize().unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("where")).unwrap(), format!("{}\n", real.display()));
}

#[tokio::test]
async fn stop_ignores_matchers() {
    let (_dir, env) = setup();
    let h =
        hooks(json!({"Stop": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo x >&2; exit 2"}]}]}));
    assert_eq!(stop(&h, &env).await, (block("x"), vec![]));
}

fn tool_hooks(event: &str) -> CommandHooks {
    hooks(json!({ event: [
        {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "echo edit-or-write >&2; exit 2"}]},
        {"matcher": "^(Gl|Gr).*", "hooks": [{"type": "command", "command": "echo search >&2; exit 2"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": "echo any >&2; exit 2"}]}
    ]}))
}

#[tokio::test]
async fn pre_matchers_select_hooks() {
    let (_dir, env) = setup();
    let h = tool_hooks("PreToolUse");
    let (write, _) = h.pre_tool_use(&env, "Write", "t1", &json!({})).await;
    assert_eq!(write, PreToolDecision { deny: Some("edit-or-write\nany".into()), stop: None, permission: None });
    let (read, _) = h.pre_tool_use(&env, "Read", "t2", &json!({})).await;
    assert_eq!(read, PreToolDecision { deny: Some("any".into()), stop: None, permission: None });
    let (grep, _) = h.pre_tool_use(&env, "Grep", "t3", &json!({})).await;
    assert_eq!(grep, PreToolDecision { deny: Some("search\nany".into()), stop: None, permission: None });
}

#[tokio::test]
async fn post_matchers_select_hooks() {
    let (_dir, env) = setup();
    let h = tool_hooks("PostToolUse");
    let (write, _) = h.post_tool_use(&env, "Write", "t1", &json!({}), "ok", false).await;
    assert_eq!(write, PostToolDecision { feedback: Some("edit-or-write\nany".into()), stop: None });
    let (read, _) = h.post_tool_use(&env, "Read", "t2", &json!({}), "ok", false).await;
    assert_eq!(read, PostToolDecision { feedback: Some("any".into()), stop: None });
}

fn one_pre(command: &str) -> CommandHooks {
    hooks(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}))
}

#[tokio::test]
async fn pre_denies_by_json() {
    let (_dir, env) = setup();
    let deny = |reason: &str| (PreToolDecision { deny: Some(reason.into()), stop: None, permission: None }, vec![]);
    let specific = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no rm -rf"}}'"#;
    assert_eq!(one_pre(specific).pre_tool_use(&env, "Bash", "t", &json!({})).await, deny("no rm -rf"));
    let plain = r#"echo '{"decision": "deny", "reason": "not here"}'"#;
    assert_eq!(one_pre(plain).pre_tool_use(&env, "Bash", "t", &json!({})).await, deny("not here"));
    let blocked = r#"echo '{"decision": "block", "reason": "blocked"}'"#;
    assert_eq!(one_pre(blocked).pre_tool_use(&env, "Bash", "t", &json!({})).await, deny("blocked"));
    let allow = r#"echo '{"hookSpecificOutput": {"permissionDecision": "allow"}, "decision": "approve"}'"#;
    let allowed = PreToolDecision { permission: Some(HookPermission::Allow), ..PreToolDecision::default() };
    assert_eq!(one_pre(allow).pre_tool_use(&env, "Bash", "t", &json!({})).await, (allowed, vec![]));
}

#[tokio::test]
async fn pre_continue_false_denies_and_stops() {
    let (_dir, env) = setup();
    let h = one_pre(r#"echo '{"continue": false, "stopReason": "frozen"}'"#);
    let expected = PreToolDecision { deny: Some("frozen".into()), stop: Some("frozen".into()), permission: None };
    assert_eq!(h.pre_tool_use(&env, "Bash", "t", &json!({})).await, (expected, vec![]));
    let h = one_pre(r#"echo '{"continue": false}'"#);
    let reason = "PreToolUse hook prevented continuation";
    let expected = PreToolDecision { deny: Some(reason.into()), stop: Some(reason.into()), permission: None };
    assert_eq!(h.pre_tool_use(&env, "Bash", "t", &json!({})).await, (expected, vec![]));
}

#[tokio::test]
async fn post_feedback_and_stop() {
    let (_dir, env) = setup();
    let post = |command: &str| hooks(json!({"PostToolUse": [{"hooks": [{"type": "command", "command": command}]}]}));
    let h = post("echo 'formatting failed' >&2; exit 2");
    let expected = PostToolDecision { feedback: Some("formatting failed".into()), stop: None };
    assert_eq!(h.post_tool_use(&env, "Edit", "t", &json!({}), "ok", false).await, (expected, vec![]));
    let h = post(r#"echo '{"decision": "block", "reason": "see lint"}'"#);
    let expected = PostToolDecision { feedback: Some("see lint".into()), stop: None };
    assert_eq!(h.post_tool_use(&env, "Edit", "t", &json!({}), "ok", false).await, (expected, vec![]));
    let h = post(r#"echo '{"continue": false, "stopReason": "enough"}'"#);
    let expected = PostToolDecision { feedback: None, stop: Some("enough".into()) };
    assert_eq!(h.post_tool_use(&env, "Edit", "t", &json!({}), "ok", false).await, (expected, vec![]));
}

#[tokio::test]
async fn failing_hook_warns_and_passes() {
    let (_dir, env) = setup();
    let command = "echo 'bad thing' >&2; echo second >&2; exit 1";
    let expected = format!("Stop hook `{command}` failed with exit code 1: bad thing");
    assert_eq!(stop(&stop_hooks(&[command]), &env).await, (StopDecision::Pass, vec![expected]));
    let quiet = "exit 7";
    let h = stop_hooks(&[quiet, "echo b >&2; exit 2"]);
    assert_eq!(stop(&h, &env).await, (block("b"), vec!["Stop hook `exit 7` failed with exit code 7".to_owned()]));
}

#[tokio::test]
async fn timeout_warns_and_kills_the_group() {
    let (dir, env) = setup();
    let command = "sleep 30 & echo $! > pid; wait";
    let h = hooks(json!({"Stop": [{"hooks": [{"type": "command", "command": command, "timeout": 1}]}]}));
    let started = Instant::now();
    let result = stop(&h, &env).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(result, (StopDecision::Pass, vec![format!("Stop hook `{command}` timed out after 1s and was killed")]));
    let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
    assert!(is_dead(pid.trim()).await, "sleep {pid} survived");
}

#[test]
fn combination_rules() {
    let v = |block: Option<&str>, stop: Option<&str>| Verdict {
        block: block.map(str::to_owned),
        stop: stop.map(str::to_owned),
        warning: None,
        permission: None,
    };
    let verdicts = [v(Some("a"), None), v(None, Some("first")), v(Some("b"), Some("second")), v(None, None)];
    assert_eq!(stop_decision(&verdicts), prevent("first"));
    assert_eq!(stop_decision(&verdicts[..1]), block("a"));
    assert_eq!(stop_decision(&verdicts[3..]), StopDecision::Pass);
    assert_eq!(
        pre_decision(&verdicts),
        PreToolDecision { deny: Some("a\nfirst\nb".into()), stop: Some("first".into()), permission: None }
    );
    assert_eq!(
        post_decision(&verdicts),
        PostToolDecision { feedback: Some("a\nb".into()), stop: Some("first".into()) }
    );
}

#[tokio::test]
async fn permission_decisions_allow_and_ask_are_read() {
    let (_dir, env) = setup();
    let allow = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'"#;
    let ask = r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check it"}}'"#;
    let pre = |commands: &[&str]| {
        let groups: Vec<Value> = commands.iter().map(|c| json!({"type": "command", "command": c})).collect();
        hooks(json!({"PreToolUse": [{"hooks": groups}]}))
    };
    let input = json!({"command": "ls"});
    let (d, _) = pre(&[allow]).pre_tool_use(&env, "Bash", "t1", &input).await;
    assert_eq!(d, PreToolDecision { deny: None, stop: None, permission: Some(HookPermission::Allow) });
    let (d, _) = pre(&[allow, ask]).pre_tool_use(&env, "Bash", "t1", &input).await;
    assert_eq!(d.permission, Some(HookPermission::Ask("check it".into())), "an ask wins over an allow");
}

/// A hook callback (the SDK's) that never answers is given up after its timeout: no decision,
/// a warning naming it; one that fails is a warning too.
#[tokio::test]
async fn a_callback_that_never_answers_times_out() {
    struct Silent;
    impl HookCallbacks for Silent {
        fn call<'a>(
            &'a self,
            id: &'a str,
            _: &'a Value,
            _: Option<&'a str>,
        ) -> BoxFuture<'a, Result<Value, crate::peer::PeerError>> {
            Box::pin(async move {
                if id == "broken" {
                    return Err(crate::peer::PeerError::Answered("callback raised".into()));
                }
                std::future::pending().await
            })
        }
    }
    let (_dir, env) = setup();
    let callback = |id: &str| crate::hooks::settings::HookCommand {
        kind: crate::hooks::settings::HookKind::Callback,
        command: id.into(),
        timeout: Some(1),
    };
    let mut table = HookTable::default();
    table.pre_tool_use.push(HookMatcher { matcher: None, hooks: vec![callback("hook_0"), callback("broken")] });
    let hooks = CommandHooks::with_callbacks(table, std::sync::Arc::new(Silent));
    let (decision, warnings) = hooks.pre_tool_use(&env, "Bash", "t1", &json!({"command": "ls"})).await;
    assert_eq!(decision, PreToolDecision::default());
    assert_eq!(
        warnings,
        vec![
            "PreToolUse callback `hook_0` did not answer within 1s".to_owned(),
            "PreToolUse callback `broken` failed: callback raised".to_owned()
        ]
    );
}
