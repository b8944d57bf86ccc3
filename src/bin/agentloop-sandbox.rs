//! `agentloop-sandbox`: the sandbox helper as a program of its own
//! ([`agentloop::sandbox::helper`]), what agentloop starts every command through when it is
//! installed beside it. It does what `agentloop __sandbox-exec` does, but a small program
//! starts in a fraction of the time a 30 MB one does, and it starts once per command.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let code = agentloop::sandbox::helper::main(&args);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
