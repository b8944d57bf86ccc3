//! Running one hook command as a process: `bash -c` (or `sh -c`) in its own process group,
//! input on stdin, output captured, killed with its whole group on timeout or when the caller
//! drops the future. What the exit code and output mean is [`super::command`]'s job.

use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::sandbox::{Launch, Sandbox};
use crate::tools::bash::capture::{Capture, pump};
use crate::tools::shell_env::ShellEnv;

/// How a hook process ended.
#[derive(Debug)]
pub(crate) enum Ending {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It ran past its time limit; its process group was killed.
    TimedOut,
    /// It could not be started or waited for.
    Failed(io::Error),
}

/// Bytes kept of each of a hook's stdout and stderr (the start and the end), as for the Bash tool.
pub const MAX_HOOK_OUTPUT: usize = crate::tools::bash::MAX_OUTPUT_CHARS;

/// A finished hook process.
#[derive(Debug)]
pub(crate) struct Ran {
    /// How it ended.
    pub ending: Ending,
    /// What it wrote to stdout, lossily decoded; past [`MAX_HOOK_OUTPUT`] bytes, the start and
    /// the end around a note saying how much was cut.
    pub stdout: String,
    /// What it wrote to stderr, cut the same way.
    pub stderr: String,
    /// Whether stdout was cut (so it is not the JSON the hook printed).
    pub stdout_cut: bool,
}

impl Ran {
    fn without_output(ending: Ending) -> Ran {
        Ran { ending, stdout: String::new(), stderr: String::new(), stdout_cut: false }
    }
}

/// Run `command` with `bash -c` in `cwd`, `input` on stdin, with the environment `env` plus
/// `CLAUDE_PROJECT_DIR` = `cwd`.
///
/// After `limit`, the process group is killed and the result is [`Ending::TimedOut`]. Output is
/// read until both pipes close, so a background process that keeps stdout open counts as
/// running: redirect its output if it should outlive the hook.
pub(crate) async fn run(
    command: &str,
    cwd: &Path,
    env: &ShellEnv,
    sandbox: &Sandbox,
    input: &[u8],
    limit: Duration,
) -> Ran {
    let mut child = match spawn(command, cwd, env, sandbox) {
        Ok(child) => child,
        Err(e) => return Ran::without_output(Ending::Failed(e)),
    };
    // Declared after `child` so it drops first: the group dies before the leader is reaped,
    // which keeps the group id from being reused while we still might signal it.
    let group = sandbox.group(child.id());
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let work = async {
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A hook that never reads its input closes the pipe early; that is not an error.
                let _ = stdin.write_all(input).await;
            }
        };
        let (_, out, err, status) = tokio::join!(write, read_capped(stdout), read_capped(stderr), child.wait());
        (out, err, status)
    };
    match tokio::time::timeout(limit, work).await {
        Ok((stdout, stderr, status)) => {
            group.disarm();
            let ending = match status {
                Ok(status) => ending_of(status),
                Err(e) => Ending::Failed(e),
            };
            Ran {
                ending,
                stdout_cut: stdout.total() > MAX_HOOK_OUTPUT,
                stdout: stdout.render("stdout"),
                stderr: stderr.render("stderr"),
            }
        }
        Err(_elapsed) => {
            group.kill();
            let _ = child.wait().await;
            Ran::without_output(Ending::TimedOut)
        }
    }
}

fn spawn(command: &str, cwd: &Path, env: &ShellEnv, sandbox: &Sandbox) -> io::Result<Child> {
    // Through the helper a missing bash is no spawn error: look for it first.
    let no_bash = sandbox.has_helper() && crate::sandbox::find_program("bash", env.var("PATH")).is_none();
    let program = if no_bash { "sh" } else { "bash" };
    match shell(program, command, cwd, env, sandbox).spawn() {
        Err(e) if e.kind() == io::ErrorKind::NotFound && cwd.is_dir() => {
            shell("sh", command, cwd, env, sandbox).spawn()
        }
        other => other,
    }
}

/// The hook's shell, confined as a hook ([`Launch::Hook`]).
fn shell(program: &str, command: &str, cwd: &Path, env: &ShellEnv, sandbox: &Sandbox) -> Command {
    let launch = sandbox.effective(Launch::Hook, command);
    let policy = sandbox.policy(&launch, Vec::new());
    let args = [std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(command)];
    let mut cmd = sandbox.command(policy.as_ref(), env, program, &args);
    cmd.current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Read `pipe` to its end keeping at most [`MAX_HOOK_OUTPUT`] bytes. A read error ends the
/// output early; what was read so far is still worth showing.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> Capture {
    let mut capture = Capture::new(MAX_HOOK_OUTPUT);
    if let Some(pipe) = pipe {
        pump(pipe, &mut capture).await;
    }
    capture
}

fn ending_of(status: std::process::ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Code(code),
        (None, Some(signal)) => Ending::Signal(signal),
        // Stopped or continued: `wait` does not report those, so this is unreachable in practice.
        (None, None) => Ending::Failed(io::Error::other(format!("unexpected wait status {status}"))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::time::Instant;

    /// [`run`] with the default shell environment.
    async fn run_default(command: &str, cwd: &Path, input: &[u8], limit: Duration) -> Ran {
        run(command, cwd, &ShellEnv::inherited_default(), &Sandbox::none(), input, limit).await
    }

    /// Whether `pid` is gone or a zombie (killed, waiting for a parent that may never reap it).
    pub(crate) async fn is_dead(pid: &str) -> bool {
        for _ in 0..50 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                // The state follows the parenthesised command name.
                Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])) => {
                    return true;
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        false
    }

    #[tokio::test]
    async fn captures_stdin_stdout_stderr_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run_default(
            "read x; echo \"got $x\"; echo oops >&2; exit 3",
            dir.path(),
            b"hello\n",
            Duration::from_secs(10),
        )
        .await;
        assert!(matches!(ran.ending, Ending::Code(3)), "{:?}", ran.ending);
        assert_eq!(ran.stdout, "got hello\n");
        assert_eq!(ran.stderr, "oops\n");
    }

    #[tokio::test]
    async fn runs_in_cwd_with_project_dir() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run_default("pwd; echo \"$CLAUDE_PROJECT_DIR\"", dir.path(), b"", Duration::from_secs(10)).await;
        let real = dir.path().canonicalize().unwrap();
        assert!(matches!(ran.ending, Ending::Code(0)), "{:?}", ran.ending);
        assert_eq!(ran.stdout, format!("{}\n{}\n", real.display(), dir.path().display()));
    }

    #[tokio::test]
    async fn runs_with_the_shell_environment_and_project_dir() {
        let dir = tempfile::tempdir().unwrap();
        let vars = [("ANTHROPIC_API_KEY", "sk-secret"), ("DEPLOY_TOKEN", "t0k"), ("LANG", "C")];
        let env = ShellEnv::from_vars(vars.map(|(n, v)| (OsString::from(n), OsString::from(v))), &[]);
        let ran = run(
            "echo \"${ANTHROPIC_API_KEY-unset} ${DEPLOY_TOKEN-unset} $LANG\"; env | cut -d= -f1 | sort | tr '\\n' ' '",
            dir.path(),
            &env,
            &Sandbox::none(),
            b"",
            Duration::from_secs(10),
        )
        .await;
        assert!(matches!(ran.ending, Ending::Code(0)), "{:?}", ran.ending);
        assert_eq!(ran.stdout, "unset unset C\nCLAUDE_PROJECT_DIR LANG PWD SHLVL _ ");
    }

    #[tokio::test]
    async fn hook_that_ignores_a_large_input_still_finishes() {
        let dir = tempfile::tempdir().unwrap();
        let input = vec![b'x'; 1 << 20];
        let ran = run_default("exit 0", dir.path(), &input, Duration::from_secs(10)).await;
        assert!(matches!(ran.ending, Ending::Code(0)), "{:?}", ran.ending);
    }

    #[tokio::test]
    async fn signal_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run_default("kill -TERM $$", dir.path(), b"", Duration::from_secs(10)).await;
        assert!(matches!(ran.ending, Ending::Signal(15)), "{:?}", ran.ending);
    }

    #[tokio::test]
    async fn missing_cwd_fails_to_start() {
        let ran = run_default("true", Path::new("/nonexistent/agentloop-hooks"), b"", Duration::from_secs(10)).await;
        match ran.ending {
            Ending::Failed(e) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let ran = run_default("sleep 30 & echo $! > pid; wait", dir.path(), b"", Duration::from_millis(500)).await;
        assert!(matches!(ran.ending, Ending::TimedOut), "{:?}", ran.ending);
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        assert!(is_dead(pid.trim()).await, "sleep {pid} survived");
    }

    #[tokio::test]
    async fn dropping_the_future_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let hook = run_default("sleep 30 & echo $! > pid; wait", dir.path(), b"", Duration::from_secs(60));
        let waited = tokio::time::timeout(Duration::from_millis(500), hook).await;
        assert!(waited.is_err());
        let pid = std::fs::read_to_string(pid_file).unwrap();
        assert!(is_dead(pid.trim()).await, "sleep {pid} survived");
    }

    #[tokio::test]
    async fn output_is_cut_to_its_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run_default(
            "yes | head -c 3000000; head -c 5000000 /dev/zero | tr '\\0' x >&2",
            dir.path(),
            b"",
            Duration::from_secs(60),
        )
        .await;
        assert!(matches!(ran.ending, Ending::Code(0)), "{:?}", ran.ending);
        let half = "y\n".repeat(MAX_HOOK_OUTPUT / 4);
        assert_eq!(ran.stdout, format!("{half}\n… [2970000 bytes cut from the middle of stdout] …\n{half}"));
        assert!(ran.stdout_cut);
        let half = "x".repeat(MAX_HOOK_OUTPUT / 2);
        assert_eq!(ran.stderr, format!("{half}\n… [4970000 bytes cut from the middle of stderr] …\n{half}"));
    }
}
