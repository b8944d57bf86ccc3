//! Tests of the background shells' registry: ids and files, statuses, output, and the end of
//! every process a shell started (stopped, exited, or the session over).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::tools::ToolContext;
use crate::tools::bash::shell_command;
use crate::tools::processes::{assert_dies, read_pid};

/// A registry whose files go to `bg/` in a fresh directory, and a context there.
fn setup() -> (tempfile::TempDir, ToolContext, BackgroundShells) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    let shells = BackgroundShells::in_dir(dir.path().join("bg"));
    (dir, ctx, shells)
}

fn start(shells: &BackgroundShells, ctx: &ToolContext, command: &str) -> Arc<BackgroundShell> {
    shells.start(shell_command(ctx, command), ProcessGroup::of, command, Some("a test".into())).unwrap()
}

async fn ended(shell: &BackgroundShell) -> Status {
    match shell.wait(Duration::from_secs(60), &CancellationToken::new()).await {
        Waited::Ended(status) => status,
        other => panic!("{} did not end: {other:?}", shell.id()),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn text(shell: &BackgroundShell, cap: usize) -> String {
    shell.output(cap).unwrap().render("output")
}

#[tokio::test]
async fn a_shell_writes_both_streams_to_a_private_file_and_reports_its_exit_code() {
    let (dir, ctx, shells) = setup();
    let shell = start(&shells, &ctx, "echo out; echo err >&2; echo more; exit 3");
    let id = shell.id().to_owned();
    assert_eq!(id.len(), 9);
    assert!(id.starts_with('b') && id[1..].bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()), "{id}");
    assert_eq!(shell.output_path(), dir.path().join("bg").join(format!("{id}.output")));
    assert_eq!((shell.command(), shell.description()), ("echo out; echo err >&2; echo more; exit 3", Some("a test")));
    assert!(shell.started() <= SystemTime::now());
    assert_eq!(ended(&shell).await, Status::Completed { exit_code: 3 });
    assert_eq!(text(&shell, 1000), "out\nerr\nmore\n");
    assert_eq!((mode(shells.dir()), mode(shell.output_path())), (0o700, 0o600));
    assert_eq!(shells.ids(), [id.as_str()]);
    assert!(Arc::ptr_eq(&shells.get(&id).unwrap(), &shell));
    assert!(shells.get("b00000000").is_none());
}

#[tokio::test]
async fn ids_are_unique_and_listed_in_start_order() {
    let (_dir, ctx, shells) = setup();
    let started: Vec<String> = (0..20).map(|_| start(&shells, &ctx, "true").id().to_owned()).collect();
    assert_eq!(shells.ids(), started);
    let mut unique = started.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 20);
    assert_eq!(shells.unknown_id("x"), format!("No task found with ID: x (known task IDs: {})", started.join(", ")));
    let empty = setup().2;
    assert_eq!(empty.unknown_id("x"), "No task found with ID: x (no background task has been started in this session)");
}

#[tokio::test]
async fn stop_kills_the_whole_group_once() {
    let (dir, ctx, shells) = setup();
    let shell = start(&shells, &ctx, "sleep 100 & echo $! > pid; echo started; wait");
    let pid = read_pid(&dir.path().join("pid")).await;
    assert_eq!(shell.status(), Status::Running);
    assert_eq!(shell.stop(), Ok(()));
    assert_eq!(shell.status(), Status::Killed);
    assert_dies(pid).await;
    // The shell died of the SIGKILL: it stays killed.
    assert_eq!(ended(&shell).await, Status::Killed);
    assert_eq!(shell.stop(), Err(Status::Killed));
    assert_eq!(text(&shell, 1000), "started\n");
}

#[tokio::test]
async fn what_an_exited_shell_left_running_is_killed() {
    let (dir, ctx, shells) = setup();
    let shell = start(&shells, &ctx, "sleep 100 & echo $! > pid");
    let pid = read_pid(&dir.path().join("pid")).await;
    assert_eq!(ended(&shell).await, Status::Completed { exit_code: 0 });
    assert_dies(pid).await;
    assert_eq!(shell.stop(), Err(Status::Completed { exit_code: 0 }));
}

#[tokio::test]
async fn dropping_the_registry_kills_every_running_shell_and_removes_the_files() {
    let (dir, ctx, shells) = setup();
    let running = start(&shells, &ctx, "echo $$ > pid1; sleep 100 & echo $! > pid2; wait");
    let done = start(&shells, &ctx, "echo done");
    assert_eq!(ended(&done).await, Status::Completed { exit_code: 0 });
    let (shell, child) = (read_pid(&dir.path().join("pid1")).await, read_pid(&dir.path().join("pid2")).await);
    let output_dir = shells.dir().to_path_buf();
    drop(shells);
    assert_eq!(running.status(), Status::Killed);
    assert_eq!(done.status(), Status::Completed { exit_code: 0 });
    assert_dies(shell).await;
    assert_dies(child).await;
    assert!(!output_dir.exists());
}

#[tokio::test]
async fn waiting_ends_at_the_timeout_or_on_cancellation() {
    let (_dir, ctx, shells) = setup();
    let shell = start(&shells, &ctx, "sleep 100");
    let cancel = CancellationToken::new();
    assert_eq!(shell.wait(Duration::from_millis(20), &cancel).await, Waited::TimedOut);
    cancel.cancel();
    assert_eq!(shell.wait(Duration::from_secs(600), &cancel).await, Waited::Cancelled);
    shell.stop().unwrap();
    // An ended shell answers at once, whatever else is true.
    assert_eq!(shell.wait(Duration::ZERO, &cancel).await, Waited::Ended(Status::Killed));
}

#[tokio::test]
async fn output_keeps_the_start_and_the_end_and_waits_for_unfinished_characters() {
    let (dir, ctx, shells) = setup();
    let big = start(&shells, &ctx, "printf '0123456789'");
    assert_eq!(ended(&big).await, Status::Completed { exit_code: 0 });
    assert_eq!(text(&big, 6), "012\n… [4 bytes cut from the middle of output] …\n789");
    // "a" and the first two bytes of "€" (e2 82 ac), then a pause.
    let partial = start(&shells, &ctx, "printf 'a\\xe2\\x82'; touch written; sleep 100");
    for _ in 0..1000 {
        if dir.path().join("written").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(text(&partial, 1000), "a");
    partial.stop().unwrap();
    assert_eq!(text(&partial, 1000), "a\u{FFFD}");
}

#[tokio::test]
async fn a_directory_open_to_others_is_refused() {
    let (dir, ctx, _) = setup();
    let planted = dir.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shells = BackgroundShells::in_dir(planted.clone());
    let err = shells.start(shell_command(&ctx, "touch ran"), ProcessGroup::of, "touch ran", None).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
    assert_eq!(shells.ids(), Vec::<String>::new());
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn a_new_registry_lives_in_the_canonical_temp_directory() {
    let shells = BackgroundShells::new();
    let temp = std::env::temp_dir().canonicalize().unwrap();
    assert_eq!(shells.dir().parent(), Some(temp.as_path()));
    let name = shells.dir().file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("agentloop-background-") && name.len() == "agentloop-background-".len() + 16, "{name}");
    assert!(!shells.dir().exists(), "created at the first start only");
}
