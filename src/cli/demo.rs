//! `agentloop demo`: built-in scenarios run with the scripted model in a fresh temporary
//! directory, so anyone can watch every continue and terminal reason without an API key.

use crate::cli::run::execute;
use crate::cli::{OutputFormatArg, TraceArgs};
use crate::launch::ExitStatus;
use crate::launch::spec::spec_for_scenario;
use crate::launch::stdio::Stdout;
use crate::scenario::builtin::{self, DEFAULT_DEMO, SCENARIOS};
use tokio_util::sync::CancellationToken;

/// `agentloop demo` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Scenario to run (default: read-greeting).
    pub name: Option<String>,
    /// List the scenarios, one per line: name, then what it shows.
    #[arg(long)]
    pub list: bool,
    /// Run every scenario and print one line each: name, terminal reason, transitions, model calls.
    #[arg(long, conflicts_with_all = ["name", "list"])]
    pub all: bool,
    /// How the result is printed.
    #[arg(long, value_enum, default_value_t = OutputFormatArg::Text)]
    pub output_format: OutputFormatArg,
    /// Run the scenario under this transition table instead of the shipped one. It is audited
    /// first; a table that fails is refused (exit 2).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["list", "all"])]
    pub table: Option<std::path::PathBuf>,
    /// Trace options.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Run `agentloop demo`.
pub async fn command(args: DemoArgs) -> ExitStatus {
    if args.list {
        let stdout = Stdout::new();
        for (name, _) in SCENARIOS {
            let description = builtin::load(name).map_or_else(|e| e.to_string(), |s| s.description);
            if !stdout.line(&format!("{name:<24} {description}")) {
                return stdout.closed_exit_status();
            }
        }
        return ExitStatus::Success;
    }
    if args.all {
        return run_all().await;
    }
    let name = args.name.as_deref().unwrap_or(DEFAULT_DEMO);
    let table = match args.table.as_deref().map(|path| crate::cli::table_file::load(path, None)).transpose() {
        Ok(table) => table,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    let scenario = match builtin::load(name) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    let dir = match tempfile::Builder::new().prefix("agentloop-demo-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("agentloop: cannot create a temporary directory: {e}");
            return ExitStatus::Usage;
        }
    };
    if let Err(e) = scenario.write_files(dir.path()) {
        eprintln!("agentloop: cannot write the scenario's files: {e}");
        return ExitStatus::Usage;
    }
    let mut spec = match spec_for_scenario(
        &scenario,
        dir.path().to_path_buf(),
        CancellationToken::new(),
        args.trace.options(),
        args.output_format.into(),
    ) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    spec.options.table = table;
    // The demo's commands are sandboxed like any run's.
    match crate::sandbox::Sandbox::for_session(spec.settings.sandbox.clone(), &spec.cwd, None) {
        Ok(sandbox) => spec.sandbox = std::sync::Arc::new(sandbox),
        Err(e) => {
            eprintln!("agentloop: {e}");
            return ExitStatus::Usage;
        }
    }
    if args.output_format == OutputFormatArg::Text {
        eprintln!("demo {name}: {}", scenario.description);
        eprintln!("prompt: {}", spec.prompt);
    }
    execute(spec).await
}

/// Run every scenario in its own temporary directory and summarise how each ended.
/// Exit 0 when every run ended (whatever its reason); 1 when one could not run at all;
/// 141 when stdout was closed, 74 when it could not be written (the remaining scenarios are
/// not run either way; [`Stdout::closed_exit_status`]).
async fn run_all() -> ExitStatus {
    let stdout = Stdout::new();
    let mut failed = false;
    for (name, _) in SCENARIOS {
        let outcome = match (builtin::load(name), tempfile::Builder::new().prefix("agentloop-demo-").tempdir()) {
            (Ok(s), Ok(dir)) => {
                let clock = std::sync::Arc::new(crate::engine::clock::SystemClock::new());
                crate::harness::run_scenario(&s, dir.path(), clock).await.map_err(|e| e.to_string())
            }
            (Err(e), _) => Err(e.to_string()),
            (_, Err(e)) => Err(e.to_string()),
        };
        let line = match outcome {
            Ok(run) => format!(
                "{name:<24} {:<20} {:>3} transitions  {:>2} model calls",
                run.outcome.terminal.as_str(),
                run.outcome.trace.len(),
                run.outcome.model_calls
            ),
            Err(e) => {
                failed = true;
                format!("{name:<24} could not run: {e}")
            }
        };
        if !stdout.line(&line) {
            return stdout.closed_exit_status();
        }
    }
    ExitStatus::failure_if(failed)
}
