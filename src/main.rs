//! The `agentloop` binary: parses the command line and runs it on a tokio runtime.
//! The machine's future is not `Send`, so it runs on the runtime's main task. Before
//! anything else, the credentials are taken out of the process's environment
//! ([`agentloop::credentials::seal`]).

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;

fn main() -> ExitCode {
    // The sandbox helper runs before anything else starts a thread (it forks), and before
    // the credentials are sealed: its environment is already the command's, kept variables
    // included, and it must reach the command unchanged.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == agentloop::sandbox::helper::SUBCOMMAND) {
        let code = agentloop::sandbox::helper::main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // SAFETY: the first thing the process does: no other thread exists yet (the tokio
    // runtime starts below), so nothing else reads or changes the environment meanwhile.
    unsafe { agentloop::credentials::seal() };
    let cli = agentloop::Cli::parse();
    // AGENTLOOP_LOG=debug (or trace, info, warn, error) turns on the engine's own logs, and
    // those of the MCP SDK (rmcp), which are off by default: agentloop reports a failing MCP
    // server itself, as one warning naming it.
    let chosen: Option<tracing::Level> = std::env::var("AGENTLOOP_LOG").ok().and_then(|l| l.parse().ok());
    let level = chosen.unwrap_or(tracing::Level::WARN);
    let rmcp = chosen.map_or(LevelFilter::OFF, LevelFilter::from_level);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(level)
        .finish()
        .with(Targets::new().with_default(level).with_target("rmcp", rmcp));
    let _ = tracing::subscriber::set_global_default(subscriber);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentloop: cannot start the async runtime: {e}");
            return agentloop::ExitStatus::Internal.into();
        }
    };
    let code = runtime.block_on(agentloop::run_cli(cli));
    // A blocking read of stdin (the SDK mode's reader) may still wait for input nobody will
    // send: do not wait for it on the way out.
    runtime.shutdown_background();
    code
}
