//! `TaskStop`: kill one of the session's background shells ([`super::background`]) and every
//! process it started, answering as Claude Code answers.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::background::TASK_TYPE;
use super::{Tool, ToolContext, ToolOutput, typed_call};

/// The `TaskStop` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskStop;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    #[serde(default)]
    task_id: Option<String>,
    /// Claude Code's former name of `task_id` (`KillShell`'s), still accepted.
    #[serde(default)]
    shell_id: Option<String>,
}

impl Tool for TaskStop {
    fn name(&self) -> &'static str {
        "TaskStop"
    }

    fn description(&self) -> &'static str {
        "Stops a running background shell (a Bash call with run_in_background: true) by the \
         task ID that call returned: the shell and every process it started are killed. Use \
         it to end a long-running command you no longer need, such as a server or a watcher. \
         Stopping a task that has already ended is an error that names its status."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The ID of the background task to stop"},
                "shell_id": {"type": "string", "description": "Deprecated: use task_id instead"}
            },
            "additionalProperties": false
        })
    }

    /// It changes things: it runs alone, after the reply has ended.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    /// It can only stop a shell this session started, which a call the policy allowed
    /// started: it needs no approval of its own, in plan mode neither (a deny rule naming
    /// `TaskStop` still refuses it).
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("TaskStop", input, move |input: Input| async move { Ok(stop(input, &ctx)) })
    }
}

fn stop(input: Input, ctx: &ToolContext) -> ToolOutput {
    let Some(id) = input.task_id.or(input.shell_id) else {
        return ToolOutput::error("Missing required parameter: task_id");
    };
    let Some(shell) = ctx.background.get(&id) else {
        return ToolOutput::error(ctx.background.unknown_id(&id));
    };
    match shell.stop() {
        Ok(()) => ToolOutput::ok(confirmation(&id, shell.command())),
        Err(status) => ToolOutput::error(format!("Task {id} is not running (status: {})", status.name())),
    }
}

/// Claude Code's answer, keys in its order.
fn confirmation(id: &str, command: &str) -> String {
    let text = |s: &str| Value::String(s.to_owned()).to_string();
    format!(
        r#"{{"message":{},"task_id":{},"task_type":"{TASK_TYPE}","command":{}}}"#,
        text(&format!("Successfully stopped task: {id} ({command})")),
        text(id),
        text(command)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process_group::ProcessGroup;
    use crate::tools::background::{BackgroundShells, Status};
    use crate::tools::bash::shell_command;

    fn context() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path().canonicalize().unwrap());
        ctx.background = std::sync::Arc::new(BackgroundShells::in_dir(dir.path().join("bg")));
        (dir, ctx)
    }

    async fn call(ctx: &ToolContext, input: Value) -> ToolOutput {
        TaskStop.call(input, ctx.clone()).await
    }

    #[tokio::test]
    async fn stops_a_running_task_and_answers_as_claude_code() {
        let (_dir, ctx) = context();
        let command = r#"sleep 100 # "quoted""#;
        let shell = ctx.background.start(shell_command(&ctx, command), ProcessGroup::of, command, None).unwrap();
        let id = shell.id().to_owned();
        let out = call(&ctx, json!({"task_id": id})).await;
        let expected = format!(
            r#"{{"message":"Successfully stopped task: {id} (sleep 100 # \"quoted\")","task_id":"{id}","task_type":"local_bash","command":"sleep 100 # \"quoted\""}}"#
        );
        assert_eq!(out, ToolOutput::ok(expected));
        assert_eq!(shell.status(), Status::Killed);
        let again = call(&ctx, json!({"shell_id": id})).await;
        assert_eq!(again, ToolOutput::error(format!("Task {id} is not running (status: killed)")));
    }

    #[tokio::test]
    async fn a_finished_task_is_not_running() {
        let (_dir, ctx) = context();
        let shell = ctx.background.start(shell_command(&ctx, "true"), ProcessGroup::of, "true", None).unwrap();
        let ended = shell.wait(std::time::Duration::from_secs(60), &ctx.cancel).await;
        assert_eq!(ended, crate::tools::background::Waited::Ended(Status::Completed { exit_code: 0 }));
        let out = call(&ctx, json!({"shell_id": shell.id()})).await;
        assert_eq!(out, ToolOutput::error(format!("Task {} is not running (status: completed)", shell.id())));
    }

    #[tokio::test]
    async fn refuses_a_missing_or_unknown_id() {
        let (_dir, ctx) = context();
        assert_eq!(call(&ctx, json!({})).await, ToolOutput::error("Missing required parameter: task_id"));
        let message = "No task found with ID: b123 (no background task has been started in this session)";
        assert_eq!(call(&ctx, json!({"task_id": "b123"})).await, ToolOutput::error(message));
    }

    #[test]
    fn needs_no_approval_but_runs_alone() {
        use crate::permissions::{Decision, Mode, Policy};
        let input = json!({"task_id": "b1"});
        assert!(!TaskStop.is_concurrency_safe(&input));
        let dir = tempfile::tempdir().unwrap();
        let allowed = Decision::ALLOW;
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::Plan, Mode::BypassPermissions] {
            let policy = Policy::new(mode, dir.path().to_path_buf());
            assert_eq!(policy.decide(&TaskStop, &input), allowed, "{mode:?}");
        }
        let denied = Policy::new(Mode::Default, dir.path().to_path_buf()).with_rules(&[], &["TaskStop".into()], &[]);
        assert_eq!(
            denied.unwrap().decide(&TaskStop, &input),
            Decision::Deny("Permission to use TaskStop was denied by the rule `TaskStop`.".into())
        );
    }
}
