//! `agentloop trace view`: one self-contained HTML file showing recorded runs against the
//! machine — the statechart with the path taken, a timeline of states per run (subagents
//! under their parent), the transition records with filters, the counters over the run, and
//! which edges no loaded run took.
//!
//! - `runs`: the runs a `--trace=jsonl` file holds;
//! - `chart`: the statechart's layout and SVG, computed here, from the table alone;
//! - `page`: the HTML, with the records as compact JSON and the script and stylesheet inlined.

pub mod chart;
pub mod page;
pub mod runs;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::engine::table::{Table, shipped};

/// `agentloop trace`: work with recorded traces.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct TraceArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TraceCommand,
}

/// The `trace` subcommands.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum TraceCommand {
    /// Write one self-contained HTML file (no network, no other file) showing the runs of
    /// these `--trace=jsonl` recordings against the machine.
    View(ViewArgs),
}

/// `agentloop trace view`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ViewArgs {
    /// The recordings (`--trace=jsonl --trace-file FILE`); several show the union as the
    /// chart's heat, each run selectable.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Where to write the page (`-` for standard output; default: the first trace's name
    /// with `.html`).
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    pub output: Option<PathBuf>,
    /// The table the runs ran (default: the embedded transitions/loop.toml).
    #[arg(long, value_name = "FILE")]
    pub table: Option<PathBuf>,
}

/// Run `agentloop trace`; returns the exit status (0 written, 2 unusable input or an
/// unwritable output).
pub fn command(args: &TraceArgs, stderr: &mut dyn Write) -> u8 {
    match &args.command {
        TraceCommand::View(view) => match write_view(view) {
            Ok(Some(path)) => {
                let _ = writeln!(stderr, "agentloop trace view: wrote {}", path.display());
                0
            }
            Ok(None) => 0,
            Err(message) => {
                let _ = writeln!(stderr, "agentloop trace view: {message}");
                2
            }
        },
    }
}

/// The page for `runs` of `table` (named `table_path`), with the coverage they give.
pub fn html(table: &Table, table_path: &str, runs: &[runs::Run]) -> String {
    let shipped = table.sha256 == shipped().sha256;
    let edges = runs.iter().map(|run| run.records.iter().map(|record| record.edge.as_str()));
    let coverage = crate::audit::coverage::tally(table, table_path, edges, shipped);
    page::html(table, table_path, runs, &coverage)
}

/// Write the view `args` asks for; the path written, or `None` for standard output.
fn write_view(args: &ViewArgs) -> Result<Option<PathBuf>, String> {
    let (table_path, text) = crate::audit::cli::read(&args.table).map_err(|e| e.to_string())?;
    let table = Table::load(&table_path, &text).map_err(|e| e.to_string())?;
    let mut all = Vec::new();
    for path in &args.traces {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        all.extend(runs::read(&name, &text).map_err(|e| e.to_string())?);
    }
    let html = html(&table, &table_path, &all);
    let output = args.output.clone().unwrap_or_else(|| default_output(&args.traces[0]));
    if output == Path::new("-") {
        std::io::stdout().lock().write_all(html.as_bytes()).map_err(|e| format!("standard output: {e}"))?;
        return Ok(None);
    }
    std::fs::write(&output, html).map_err(|e| format!("{}: {e}", output.display()))?;
    Ok(Some(output))
}

/// `run.jsonl` → `run.html`, beside it.
fn default_output(trace: &Path) -> PathBuf {
    trace.with_extension("html")
}
