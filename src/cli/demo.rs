//! `agentloop demo`: built-in scenarios run with the scripted model in a fresh temporary
//! directory, so anyone can watch every continue and terminal reason without an API key.

use crate::cli::interrupt::Stdout;
use crate::cli::run::{execute, spec_for_scenario};
use crate::cli::{EXIT_USAGE, OutputFormat, TraceArgs};
use crate::scenario::Scenario;
use tokio_util::sync::CancellationToken;

include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

/// Parse a built-in scenario by name.
///
/// # Errors
/// A message naming the unknown scenario, or the parse error of a broken one.
pub fn scenario(name: &str) -> Result<Scenario, String> {
    let (_, text) = SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| format!("no demo named `{name}`; `agentloop demo --list` shows them"))?;
    Scenario::parse(&format!("examples/scenarios/{name}.json"), text).map_err(|e| e.to_string())
}

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
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Run the scenario under this transition table instead of the shipped one. It is audited
    /// first; a table that fails is refused (exit 2).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["list", "all"])]
    pub table: Option<std::path::PathBuf>,
    /// Trace options.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Run `agentloop demo`.
pub async fn command(args: DemoArgs) -> u8 {
    if args.list {
        let stdout = Stdout::new();
        for (name, _) in SCENARIOS {
            let description = scenario(name).map(|s| s.description).unwrap_or_else(|e| e);
            if !stdout.line(&format!("{name:<24} {description}")) {
                return stdout.closed_exit_code();
            }
        }
        return 0;
    }
    if args.all {
        return run_all().await;
    }
    let name = args.name.as_deref().unwrap_or(DEFAULT_DEMO);
    let table = match args.table.as_deref().map(|path| crate::cli::table_file::load(path, None)).transpose() {
        Ok(table) => table,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return EXIT_USAGE;
        }
    };
    let scenario = match scenario(name) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return EXIT_USAGE;
        }
    };
    let dir = match tempfile::Builder::new().prefix("agentloop-demo-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("agentloop: cannot create a temporary directory: {e}");
            return EXIT_USAGE;
        }
    };
    if let Err(e) = scenario.write_files(dir.path()) {
        eprintln!("agentloop: cannot write the scenario's files: {e}");
        return EXIT_USAGE;
    }
    let mut spec = match spec_for_scenario(
        &scenario,
        dir.path().to_path_buf(),
        CancellationToken::new(),
        args.trace,
        args.output_format,
    ) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return EXIT_USAGE;
        }
    };
    spec.options.table = table;
    // The demo's commands are sandboxed like any run's.
    match crate::sandbox::Sandbox::for_session(spec.settings.sandbox.clone(), &spec.cwd, None) {
        Ok(sandbox) => spec.sandbox = std::sync::Arc::new(sandbox),
        Err(e) => {
            eprintln!("agentloop: {e}");
            return EXIT_USAGE;
        }
    }
    if args.output_format == OutputFormat::Text {
        eprintln!("demo {name}: {}", scenario.description);
        eprintln!("prompt: {}", spec.prompt);
    }
    execute(spec).await
}

/// Run every scenario in its own temporary directory and summarise how each ended.
/// Exit 0 when every run ended (whatever its reason); 1 when one could not run at all;
/// [`crate::cli::interrupt::EXIT_CLOSED_STDOUT`] when stdout was closed,
/// [`crate::cli::interrupt::EXIT_OUTPUT_FAILED`] when it could not be written (the remaining
/// scenarios are not run either way).
async fn run_all() -> u8 {
    let stdout = Stdout::new();
    let mut failed = false;
    for (name, _) in SCENARIOS {
        let outcome = match (scenario(name), tempfile::Builder::new().prefix("agentloop-demo-").tempdir()) {
            (Ok(s), Ok(dir)) => {
                let clock = std::sync::Arc::new(crate::engine::clock::SystemClock::new());
                crate::harness::run_scenario(&s, dir.path(), clock).await.map_err(|e| e.to_string())
            }
            (Err(e), _) => Err(e),
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
            return stdout.closed_exit_code();
        }
    }
    u8::from(failed)
}
