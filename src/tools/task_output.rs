//! `TaskOutput`: the status and the output of one of the session's background shells
//! ([`super::background`]), after waiting for it to end if asked to.
//!
//! Every call answers with the whole output so far (cut in the middle past
//! [`MAX_OUTPUT_CHARS`], as Bash cuts): the answer does not depend on earlier calls, so a call
//! repeated after a retried reply loses nothing. The whole output stays in the task's output
//! file, which the Read tool can read.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::background::{BackgroundShell, Status, TASK_TYPE, Waited};
use super::bash::MAX_OUTPUT_CHARS;
use super::{Tool, ToolContext, ToolOutput, typed_call};

/// How long a blocking call waits when it gives no `timeout`, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest `timeout` a call may give, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The `TaskOutput` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOutput;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    task_id: String,
    #[serde(default = "blocks_by_default")]
    block: bool,
    #[serde(default)]
    timeout: Option<f64>,
}

fn blocks_by_default() -> bool {
    true
}

impl Tool for TaskOutput {
    fn name(&self) -> &'static str {
        "TaskOutput"
    }

    fn description(&self) -> &'static str {
        "Retrieves the status and output of a background shell (a Bash call with \
         run_in_background: true), by the task ID that call returned. With block=true (the \
         default) it waits until the task ends or `timeout` milliseconds pass (30000 by \
         default, at most 600000); with block=false it answers at once. The answer holds \
         retrieval_status (success, timeout or not_ready), the task's status (running, \
         completed, killed or failed), its exit code once completed, and its whole output so \
         far (stdout and stderr interleaved), cut to 30000 characters (the start and the end \
         are kept). The whole output is also in the file the Bash call named: prefer reading \
         it with the Read tool."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "description": "The task ID to get output from"},
                "block": {"type": "boolean", "default": true, "description": "Whether to wait for completion"},
                "timeout": {"type": "number", "minimum": 0, "maximum": MAX_TIMEOUT_MS, "default": DEFAULT_TIMEOUT_MS, "description": "Max wait time in ms"}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    /// It only reads (and waits).
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("TaskOutput", input, move |input: Input| async move { retrieve(input, &ctx).await })
    }
}

async fn retrieve(input: Input, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let timeout = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS as f64);
    if !(0.0..=MAX_TIMEOUT_MS as f64).contains(&timeout) {
        return Err(ToolOutput::error(format!(
            "timeout must be between 0 and {MAX_TIMEOUT_MS} milliseconds (got {timeout})"
        )));
    }
    let shell = ctx
        .background
        .get(&input.task_id)
        .ok_or_else(|| ToolOutput::error(ctx.background.unknown_id(&input.task_id)))?;
    let retrieval = if input.block {
        match shell.wait(Duration::from_secs_f64(timeout / 1000.0), &ctx.cancel).await {
            Waited::Ended(_) => "success",
            Waited::TimedOut => "timeout",
            Waited::Cancelled => {
                return Err(ToolOutput::error(format!("Interrupted while waiting for task {}", shell.id())));
            }
        }
    } else if shell.status().is_running() {
        "not_ready"
    } else {
        "success"
    };
    let status = shell.status();
    let reading = shell.clone();
    let output = tokio::task::spawn_blocking(move || reading.output(MAX_OUTPUT_CHARS))
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot read the output of task {}: {e}", shell.id())))?
        .map_err(|e| ToolOutput::error(format!("Cannot read {}: {e}", shell.output_path().display())))?;
    let cut = output.total() > MAX_OUTPUT_CHARS;
    Ok(ToolOutput::ok(render(retrieval, &shell, &status, &output.render("output"), cut)))
}

/// The answer: one tag per line, the output last.
fn render(retrieval: &str, shell: &BackgroundShell, status: &Status, output: &str, cut: bool) -> String {
    let mut lines = vec![
        format!("<retrieval_status>{retrieval}</retrieval_status>"),
        format!("<task_id>{}</task_id>", shell.id()),
        format!("<task_type>{TASK_TYPE}</task_type>"),
        format!("<status>{}</status>", status.name()),
    ];
    match status {
        Status::Completed { exit_code } => lines.push(format!("<exit_code>{exit_code}</exit_code>")),
        Status::Failed { reason } => lines.push(format!("<error>{reason}</error>")),
        Status::Running | Status::Killed => {}
    }
    let text = output.trim_end_matches('\n');
    lines.push(format!("<output>\n{}\n</output>", if text.is_empty() { "(no output)" } else { text }));
    if cut {
        lines.push(format!("The output was cut; all of it is in {}", shell.output_path().display()));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::process_group::ProcessGroup;
    use crate::tools::bash::shell_command;

    fn context() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = ToolContext::new(dir.path().canonicalize().unwrap());
        ctx.background = std::sync::Arc::new(super::super::background::BackgroundShells::in_dir(dir.path().join("bg")));
        (dir, ctx)
    }

    fn start(ctx: &ToolContext, command: &str) -> std::sync::Arc<BackgroundShell> {
        ctx.background.start(shell_command(ctx, command), ProcessGroup::of, command, None).unwrap()
    }

    async fn call(ctx: &ToolContext, input: Value) -> ToolOutput {
        TaskOutput.call(input, ctx.clone()).await
    }

    fn answer(id: &str, retrieval: &str, status: &str, output: &str) -> String {
        format!(
            "<retrieval_status>{retrieval}</retrieval_status>\n<task_id>{id}</task_id>\n<task_type>local_bash</task_type>\n{status}\n<output>\n{output}\n</output>"
        )
    }

    #[tokio::test]
    async fn blocks_until_the_task_ends_and_gives_its_exit_code_and_output() {
        let (_dir, ctx) = context();
        let shell = start(&ctx, "sleep 0.2; echo out; echo err >&2; exit 3");
        let out = call(&ctx, json!({"task_id": shell.id()})).await;
        let status = "<status>completed</status>\n<exit_code>3</exit_code>";
        assert_eq!(out, ToolOutput::ok(answer(shell.id(), "success", status, "out\nerr")));
        // The same again: the answer does not depend on earlier reads.
        assert_eq!(call(&ctx, json!({"task_id": shell.id(), "block": false})).await, out);
    }

    #[tokio::test]
    async fn without_blocking_or_past_the_timeout_a_running_task_is_reported_running() {
        let (_dir, ctx) = context();
        let shell = start(&ctx, "sleep 100");
        let now = call(&ctx, json!({"task_id": shell.id(), "block": false})).await;
        assert_eq!(now, ToolOutput::ok(answer(shell.id(), "not_ready", "<status>running</status>", "(no output)")));
        let waited = call(&ctx, json!({"task_id": shell.id(), "timeout": 50})).await;
        assert_eq!(waited, ToolOutput::ok(answer(shell.id(), "timeout", "<status>running</status>", "(no output)")));
        shell.stop().unwrap();
        let killed = call(&ctx, json!({"task_id": shell.id(), "timeout": 0})).await;
        assert_eq!(killed, ToolOutput::ok(answer(shell.id(), "success", "<status>killed</status>", "(no output)")));
    }

    #[tokio::test]
    async fn a_task_killed_by_a_signal_failed() {
        let (_dir, ctx) = context();
        let shell = start(&ctx, "echo bye; kill -9 $$");
        let out = call(&ctx, json!({"task_id": shell.id()})).await;
        let status = "<status>failed</status>\n<error>killed by signal 9</error>";
        assert_eq!(out, ToolOutput::ok(answer(shell.id(), "success", status, "bye")));
    }

    #[tokio::test]
    async fn huge_output_keeps_its_start_and_end_and_names_the_file() {
        let (_dir, ctx) = context();
        let shell = start(&ctx, "yes | head -c 1000000");
        let out = call(&ctx, json!({"task_id": shell.id()})).await;
        let half = "y\n".repeat(MAX_OUTPUT_CHARS / 4);
        let output = format!("{half}\n… [970000 bytes cut from the middle of output] …\n{}", half.trim_end());
        let status = "<status>completed</status>\n<exit_code>0</exit_code>";
        let expected = format!(
            "{}\nThe output was cut; all of it is in {}",
            answer(shell.id(), "success", status, &output),
            shell.output_path().display()
        );
        assert_eq!(out, ToolOutput::ok(expected));
    }

    #[tokio::test]
    async fn waiting_stops_when_the_call_is_cancelled() {
        let (_dir, ctx) = context();
        let shell = start(&ctx, "sleep 100");
        let waiting = tokio::spawn(TaskOutput.call(json!({"task_id": shell.id(), "timeout": 600000}), ctx.clone()));
        ctx.cancel.cancel();
        let expected = ToolOutput::error(format!("Interrupted while waiting for task {}", shell.id()));
        assert_eq!(waiting.await.unwrap(), expected);
        assert_eq!(shell.status(), Status::Running);
    }

    #[tokio::test]
    async fn refuses_unknown_ids_and_bad_input() {
        let (_dir, ctx) = context();
        let none = call(&ctx, json!({"task_id": "b00000000"})).await;
        let message = "No task found with ID: b00000000 (no background task has been started in this session)";
        assert_eq!(none, ToolOutput::error(message));
        let shell = start(&ctx, "true");
        let unknown = call(&ctx, json!({"task_id": "nope"})).await;
        assert_eq!(unknown, ToolOutput::error(format!("No task found with ID: nope (known task IDs: {})", shell.id())));
        let long = call(&ctx, json!({"task_id": shell.id(), "timeout": 600001})).await;
        assert_eq!(long, ToolOutput::error("timeout must be between 0 and 600000 milliseconds (got 600001)"));
        let missing = call(&ctx, json!({})).await;
        let issue = "missing field `task_id`";
        assert_eq!(
            missing,
            ToolOutput::error(format!(
                "<tool_use_error>InputValidationError: TaskOutput failed due to the following issue: {issue}</tool_use_error>"
            ))
        );
        assert!(Path::new(shell.output_path()).exists());
    }

    #[test]
    fn reads_only() {
        use crate::permissions::{Decision, Mode, Policy};
        let input = json!({"task_id": "b1"});
        assert!(TaskOutput.is_concurrency_safe(&input));
        let dir = tempfile::tempdir().unwrap();
        for mode in [Mode::Default, Mode::Plan] {
            let policy = Policy::new(mode, dir.path().to_path_buf());
            assert_eq!(policy.decide(&TaskOutput, &input), Decision::ALLOW);
        }
    }
}
