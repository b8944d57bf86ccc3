//! Arguments and entry points of `agentloop audit` and `agentloop table`, for the main CLI to
//! flatten into its subcommands. Both write to the given writer and return the exit status:
//! `audit` 0 clean, 1 findings, 2 unusable input; `table` 0, or 2 when the table is unusable.

use std::io::Write;
use std::path::PathBuf;

use crate::audit::export::{DiagramFormat, render};
use crate::audit::structure::InputError;
use crate::audit::{AuditOptions, audit_table, coverage, report, trace};
use crate::engine::table::{SHIPPED_TABLE, Table, TableError};

/// Name of the embedded table in messages.
pub const SHIPPED_PATH: &str = "transitions/loop.toml";

/// Output formats of `audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AuditFormat {
    /// The proof summary for people.
    #[default]
    Text,
    /// One JSON object for machines.
    Json,
}

/// `agentloop audit`: prove the table terminates, and check a recorded trace against it.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct AuditArgs {
    /// The table to audit (default: the embedded transitions/loop.toml).
    #[arg(long, value_name = "FILE")]
    pub table: Option<PathBuf>,
    /// A `--trace=jsonl` recording to replay against the table.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Instead of proving the table, report which of its edges and reasons these
    /// `--trace=jsonl` recordings took, which never, and the built-in scenario that takes
    /// each one never taken. Exit 0, or 1 when a trace does not replay against the table.
    #[arg(long, value_name = "TRACE", num_args = 1.., conflicts_with_all = ["trace", "engine", "max_turns", "memory_cap"])]
    pub coverage: Vec<PathBuf>,
    /// Explore with this many turns instead of the table's bound.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Also check that this engine can run the table as `run --table` would: every edge id
    /// known, each edge's source, event, target, reason and `sets` unchanged.
    #[arg(long)]
    pub engine: bool,
    /// The memory the exhaustive exploration may hold, in MiB (default 2048). Past it the
    /// worst case is the flow bound and witnesses come from a search edge by edge.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub memory_cap: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    pub format: AuditFormat,
}

/// `agentloop table`: draw the statechart.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct TableArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiagramFormat::Mermaid)]
    pub format: DiagramFormat,
    /// The table to draw (default: the embedded transitions/loop.toml).
    #[arg(long, value_name = "FILE")]
    pub table: Option<PathBuf>,
}

/// The table `path` names, or the embedded one: its name for messages and its text.
pub(crate) fn read(path: &Option<PathBuf>) -> Result<(String, String), InputError> {
    match path {
        None => Ok((SHIPPED_PATH.to_owned(), SHIPPED_TABLE.to_owned())),
        Some(p) => read_file(p).map(|text| (p.display().to_string(), text)),
    }
}

fn read_file(path: &PathBuf) -> Result<String, InputError> {
    std::fs::read_to_string(path)
        .map_err(|e| InputError::Read { path: path.display().to_string(), message: e.to_string() })
}

/// A trace to replay: readable UTF-8 with at least one non-blank line.
fn read_trace(path: &PathBuf) -> Result<String, InputError> {
    let text = read_file(path)?;
    if text.trim().is_empty() {
        return Err(InputError::Unusable {
            path: path.display().to_string(),
            line: 1,
            message: "the trace is empty (no header, no records)".into(),
        });
    }
    Ok(text)
}

fn unusable(format: AuditFormat, error: &InputError, out: &mut dyn Write) -> u8 {
    let _ = match format {
        AuditFormat::Text => writeln!(out, "agentloop audit: unusable input: {error}"),
        AuditFormat::Json => {
            writeln!(out, "{}", serde_json::json!({"schema": 1, "result": "unusable", "error": error.to_string()}))
        }
    };
    2
}

/// Run `audit`; returns the exit status (0 clean, 1 findings, 2 unusable input).
pub fn run_audit(args: &AuditArgs, out: &mut dyn Write) -> u8 {
    let (path, text) = match read(&args.table) {
        Ok(t) => t,
        Err(e) => return unusable(args.format, &e, out),
    };
    if !args.coverage.is_empty() {
        return run_coverage(args, &path, &text, out);
    }
    // The trace is read first: an unusable trace is reported before the table is explored.
    let trace_text = match args.trace.as_ref().map(read_trace).transpose() {
        Ok(t) => t,
        Err(e) => return unusable(args.format, &e, out),
    };
    let mut report = match audit_table(
        &path,
        &text,
        &AuditOptions {
            max_turns: args.max_turns,
            engine: args.engine,
            memory_cap: args.memory_cap.map(|mib| mib << 20),
        },
    ) {
        Ok(r) => r,
        Err(e) => return unusable(args.format, &e, out),
    };
    if let (Some(trace_path), Some(trace_text), Some(table)) = (&args.trace, &trace_text, &report.table) {
        report.trace = Some(trace::replay(table, &trace_path.display().to_string(), trace_text));
    }
    let written = match args.format {
        AuditFormat::Text => out.write_all(report::text(&report).as_bytes()),
        AuditFormat::Json => writeln!(out, "{:#}", report::json(&report)),
    };
    if written.is_err() { 2 } else { report.exit_code() }
}

/// `audit --coverage`: the table loaded, not explored, and the traces counted against it.
fn run_coverage(args: &AuditArgs, path: &str, text: &str, out: &mut dyn Write) -> u8 {
    let table = match Table::load(path, text) {
        Ok(table) => table,
        Err(e) => {
            let error = match e {
                TableError::Toml { path, message } => InputError::Toml { path, message },
                TableError::Invalid { ref problems, .. } => InputError::Unusable {
                    path: path.to_owned(),
                    line: problems.first().map_or(1, |(line, _)| *line),
                    message: e.to_string(),
                },
            };
            return unusable(args.format, &error, out);
        }
    };
    let mut traces = Vec::new();
    for trace in &args.coverage {
        match read_trace(trace) {
            Ok(text) => traces.push((trace.display().to_string(), text)),
            Err(e) => return unusable(args.format, &e, out),
        }
    }
    let shipped = table.sha256 == crate::engine::table::shipped().sha256;
    let found = coverage::coverage(&table, path, &traces, shipped);
    let written = match args.format {
        AuditFormat::Text => out.write_all(coverage::text(&found).as_bytes()),
        AuditFormat::Json => writeln!(out, "{:#}", coverage::json(&found)),
    };
    match (written, found.traces_clean()) {
        (Err(_), _) => 2,
        (Ok(()), true) => 0,
        (Ok(()), false) => 1,
    }
}

/// Run `table`; returns the exit status (0, or 2 when the table cannot be loaded).
pub fn run_table(args: &TableArgs, out: &mut dyn Write) -> u8 {
    let loaded = read(&args.table)
        .map_err(|e| e.to_string())
        .and_then(|(path, text)| Table::load(&path, &text).map(|t| (path, t)).map_err(|e| e.to_string()));
    match loaded {
        Ok((path, table)) => match out.write_all(render(&table, &path, args.format).as_bytes()) {
            Ok(()) => 0,
            Err(_) => 2,
        },
        Err(e) => {
            let _ = writeln!(out, "agentloop table: unusable input: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(clap::Subcommand)]
    enum Command {
        Audit(AuditArgs),
        Table(TableArgs),
    }

    #[test]
    fn parses_both_commands() {
        let cli = Cli::try_parse_from(["agentloop", "audit", "--max-turns", "3", "--format", "json"]).unwrap();
        let Command::Audit(a) = cli.command else { panic!("not audit") };
        assert_eq!(
            a,
            AuditArgs {
                table: None,
                trace: None,
                coverage: Vec::new(),
                max_turns: Some(3),
                engine: false,
                memory_cap: None,
                format: AuditFormat::Json
            }
        );
        let cli = Cli::try_parse_from(["agentloop", "table", "--format", "dot"]).unwrap();
        let Command::Table(t) = cli.command else { panic!("not table") };
        assert_eq!(t, TableArgs { format: DiagramFormat::Dot, table: None });
        assert!(Cli::try_parse_from(["agentloop", "audit", "--max-turns", "0"]).is_err());
    }

    #[test]
    fn unusable_input_exits_2_and_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "schema = 1\ninitial = \"A\"\n[[state]]\nname = 3\n").unwrap();
        let mut out = Vec::new();
        let args = AuditArgs {
            table: Some(bad),
            trace: None,
            coverage: Vec::new(),
            max_turns: None,
            engine: false,
            memory_cap: None,
            format: AuditFormat::Text,
        };
        assert_eq!(run_audit(&args, &mut out), 2);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("agentloop audit: unusable input: ") && text.contains("line 4"), "{text}");
        let mut out = Vec::new();
        let args = TableArgs { format: DiagramFormat::Mermaid, table: Some(dir.path().join("missing.toml")) };
        assert_eq!(run_table(&args, &mut out), 2);
    }
}
