//! `agentloop-restate`: agentloop as a durable worker on [Restate](https://restate.dev).
//!
//! A session is the virtual object `Session`, keyed by its id; a prompt is one exclusive
//! invocation of its `prompt` handler, which runs the loop from Prepare to a terminal edge.
//! Each model attempt, tool call and hook run is a journaled step (`ctx.run`), a backoff is a
//! durable sleep and the message ids are derived from the session and the prompt, so a worker
//! killed at any step continues on another: finished steps are replayed from the journal, not
//! run again, and a mutating tool call that started and did not finish is answered as
//! interrupted instead of being run twice ([`bridge`]).

mod bridge;
mod ids;
mod object;

use std::net::SocketAddr;

use clap::Parser;
use restate_sdk::prelude::*;

/// The worker's command line.
#[derive(Debug, Parser)]
#[command(name = "agentloop-restate", version, about = "agentloop as a durable worker on Restate")]
struct Args {
    /// The address the worker serves Restate's requests on (register it with the server's
    /// admin API: `POST /deployments {"uri": "http://ADDRESS"}`).
    #[arg(long, default_value = "127.0.0.1:9080")]
    listen: SocketAddr,
}

fn main() -> std::process::ExitCode {
    // Bash commands start through the sandbox helper: `agentloop-sandbox` beside this
    // program when it is installed there, else this program under the helper's subcommand.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == agentloop::sandbox::helper::SUBCOMMAND) {
        let code = agentloop::sandbox::helper::main(&argv[2..]);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // SAFETY: no other thread exists yet (the runtime starts in `serve`): the model
    // credentials move out of the environment, so no tool or hook command inherits them.
    unsafe { agentloop::credentials::seal() };
    serve();
    std::process::ExitCode::SUCCESS
}

#[tokio::main]
async fn serve() {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_target(false).init();
    let args = Args::parse();
    eprintln!("agentloop-restate: serving on {}", args.listen);
    HttpServer::new(Endpoint::builder().bind(object::Session).build()).listen_and_serve(args.listen).await;
}
