//! The `agentloop` command line: Claude Code's top-level `agentloop [flags] [prompt]` (and the
//! Claude Agent SDK's stream-json protocol), and the subcommands `run`, `demo`, `audit`,
//! `table`, `sessions`, `mcp`, `auth`.
//!
//! clap structs hold only what the user typed; [`run::RunSpec`] resolves them (scenario,
//! settings, environment) and hands a fully built run to the engine.

pub mod auth;
pub mod demo;
pub mod error;
pub mod mcp;
pub mod run;
pub mod session_args;
pub mod sessions;
pub mod table_file;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::engine::trace::TraceFormat;
use crate::launch::ExitStatus;
use crate::launch::spec::{OutputFormat, TraceOptions};

/// A coding-agent loop you can read: every step is an edge of a declared state machine.
///
/// Without a subcommand the command line is Claude Code's: `agentloop -p "prompt"` runs
/// headless; `--input-format stream-json --output-format stream-json` speaks the Claude Agent
/// SDK's protocol on stdin and stdout.
#[derive(Debug, Parser)]
#[command(name = "agentloop", version, about, propagate_version = true, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do; none runs the prompt (Claude Code's command line).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The top-level command line.
    #[command(flatten)]
    pub top: TopArgs,
}

/// `agentloop [flags] [prompt]`, as Claude Code's command line.
#[derive(Debug, Clone, clap::Args)]
pub struct TopArgs {
    /// Print the reply and exit (headless); the prompt is the argument, or stdin when piped.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// The prompt.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// The run flags.
    #[command(flatten)]
    pub flags: run::RunFlags,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an agent on a prompt.
    Run(Box<run::RunArgs>),
    /// Run a built-in scenario with the scripted model (no API key needed).
    Demo(demo::DemoArgs),
    /// Prove from the table that every path ends in a terminal reason; replay a recorded trace.
    Audit(crate::audit::cli::AuditArgs),
    /// Draw the machine as Mermaid, DOT or a markdown table.
    Table(crate::audit::cli::TableArgs),
    /// Work with recorded traces: `trace view` writes an HTML view of runs against the machine.
    Trace(crate::trace_view::TraceArgs),
    /// List the sessions of the working directory, newest first.
    Sessions(sessions::SessionsArgs),
    /// Connect to a Streamable HTTP MCP server: list its tools, or call one.
    Mcp(mcp::McpArgs),
    /// Which credential the model client would use (`auth status`, as Claude Code prints it).
    Auth(auth::AuthArgs),
}

/// `--trace` and `--trace-file`, shared by `run` and `demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct TraceArgs {
    /// Print one line per transition (`pretty`, the default) or JSON Lines (`jsonl`).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "pretty")]
    pub trace: Option<TraceFormatArg>,
    /// Write the trace to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub trace_file: Option<PathBuf>,
}

impl TraceArgs {
    /// Where these flags send the trace.
    pub fn options(&self) -> TraceOptions {
        TraceOptions { format: self.trace.map(TraceFormat::from), file: self.trace_file.clone() }
    }
}

/// Trace formats on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormatArg {
    /// One readable line per transition.
    Pretty,
    /// One JSON object per line (replayable with `agentloop audit --trace`).
    Jsonl,
}

impl From<TraceFormatArg> for TraceFormat {
    fn from(f: TraceFormatArg) -> Self {
        match f {
            TraceFormatArg::Pretty => TraceFormat::Pretty,
            TraceFormatArg::Jsonl => TraceFormat::Jsonl,
        }
    }
}

/// How the run's result is printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormatArg {
    /// The model's text as it streams.
    #[default]
    Text,
    /// One JSON result object at the end.
    Json,
    /// One JSON object per line, in Claude Code's stream-json shapes.
    StreamJson,
}

impl From<OutputFormatArg> for OutputFormat {
    fn from(f: OutputFormatArg) -> Self {
        match f {
            OutputFormatArg::Text => OutputFormat::Text,
            OutputFormatArg::Json => OutputFormat::Json,
            OutputFormatArg::StreamJson => OutputFormat::StreamJson,
        }
    }
}

/// Parse the arguments and run; the returned code is the process exit status.
pub async fn main(cli: Cli) -> ExitCode {
    crate::telemetry::install(|warning| crate::stderr::line(&format!("agentloop: warning: telemetry: {warning}")));
    let code = match cli.command {
        None => top_level(cli.top).await.into(),
        Some(command) => subcommand(command).await,
    };
    // Remote MCP sessions of the run's servers end before the process does.
    crate::mcp::finish().await;
    // The spans and metrics still buffered are exported before the process exits.
    crate::telemetry::shutdown().await;
    code
}

async fn subcommand(command: Command) -> ExitCode {
    match command {
        Command::Run(args) => run::command(*args).await.into(),
        Command::Demo(args) => demo::command(args).await.into(),
        // The audit's codes are its own (0 passed, 1 an error finding, 2 unusable input).
        Command::Audit(args) => crate::audit::cli::run_audit(&args, &mut std::io::stdout().lock()).into(),
        Command::Table(args) => crate::audit::cli::run_table(&args, &mut std::io::stdout().lock()).into(),
        Command::Trace(args) => crate::trace_view::command(&args, &mut std::io::stderr().lock()).into(),
        Command::Sessions(args) => sessions::command(&args).into(),
        Command::Mcp(args) => mcp::command(args).await.into(),
        Command::Auth(args) => auth::command(&args).into(),
    }
}

/// The interactive session (stdin and stdout on a terminal, no `-p`), `prompt` its first.
async fn interactive(prompt: Option<String>, flags: &run::RunFlags) -> ExitStatus {
    let mut spec = match run::resolve_interactive(flags) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    spec.settle_context_window().await;
    crate::interactive::run(spec, flags.session.options(), prompt).await
}

/// `agentloop [flags] [prompt]`: the Claude Agent SDK's protocol with `--input-format
/// stream-json`; otherwise a headless run of the prompt (the argument, or stdin when piped).
async fn top_level(top: TopArgs) -> ExitStatus {
    use std::io::{IsTerminal, Read};
    let mut prompt = top.prompt;
    if top.flags.input_format == run::InputFormat::Text
        && !top.print
        && top.flags.output_format == OutputFormatArg::Text
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
    {
        return interactive(prompt, &top.flags).await;
    }
    if top.flags.input_format == run::InputFormat::Text && prompt.is_none() {
        if std::io::stdin().is_terminal() {
            eprintln!(
                "agentloop: no prompt. Pass one (`agentloop -p \"…\"`), pipe it on stdin, or use a subcommand \
(`agentloop demo`, `agentloop --help`); the interactive session needs stdout on a terminal too"
            );
            return ExitStatus::Usage;
        }
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("agentloop: cannot read the prompt from stdin: {e}");
            return ExitStatus::Usage;
        }
        prompt = Some(text);
    }
    let _ = top.print;
    let mut spec = match run::resolve(prompt, &top.flags) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    spec.settle_context_window().await;
    match top.flags.input_format {
        run::InputFormat::Text => run::execute(spec).await,
        run::InputFormat::StreamJson => crate::sdk::serve(spec, top.flags.sdk_options()).await,
    }
}
