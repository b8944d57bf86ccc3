//! Test helpers about processes a command started: wait for the pid it wrote, and check that
//! it is gone.

use std::path::Path;
use std::time::Duration;

/// Poll (bounded) until `file` holds a pid.
pub async fn read_pid(file: &Path) -> u32 {
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never got a pid", file.display());
}

/// Whether `pid` has exited: gone, or a zombie nobody reaped (PID 1 here may not reap).
pub fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name: "123 (sleep) Z ...".
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with(['Z', 'X'])),
    }
}

/// Poll (bounded: a SIGKILLed process needs a moment to be torn down) until `pid` is dead.
pub async fn assert_dies(pid: u32) {
    for _ in 0..1000 {
        if is_dead(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} survived");
}
