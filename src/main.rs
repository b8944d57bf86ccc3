//! The `agentloop` binary: parses the command line and runs it on a tokio runtime.
//! The machine's future is not `Send`, so it runs on the runtime's main task.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = agentloop::cli::Cli::parse();
    // AGENTLOOP_LOG=debug (or trace, info, warn, error) turns on the engine's own logs.
    let level = std::env::var("AGENTLOOP_LOG").ok().and_then(|l| l.parse().ok()).unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(level)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentloop: cannot start the async runtime: {e}");
            return ExitCode::from(agentloop::cli::EXIT_INTERNAL);
        }
    };
    let code = runtime.block_on(agentloop::cli::main(cli));
    // A blocking read of stdin (the SDK mode's reader) may still wait for input nobody will
    // send: do not wait for it on the way out.
    runtime.shutdown_background();
    code
}
