//! `agentloop sessions`: the sessions of the working directory, newest first.

use std::path::PathBuf;

use serde_json::json;

use crate::launch::stdio::Stdout;
use crate::launch::{ExitStatus, Stop};
use crate::session::{SessionStore, SessionSummary, time::format_rfc3339_millis};

/// `agentloop sessions` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionsArgs {
    /// The working directory whose sessions to list (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// `text` (one line per session) or `json` (an array).
    #[arg(long, value_enum, default_value_t = SessionsFormat::Text)]
    pub format: SessionsFormat,
}

/// How `sessions` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SessionsFormat {
    /// One line per session: id, last activity, turns, last terminal reason, first prompt.
    Text,
    /// A JSON array of objects.
    Json,
}

/// Run `agentloop sessions`; returns the exit status.
pub fn command(args: &SessionsArgs) -> ExitStatus {
    let listed = (|| {
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
        };
        let cwd = std::fs::canonicalize(&cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
        let store = SessionStore::from_env().map_err(|e| e.to_string())?;
        store.list(&cwd).map_err(|e| e.to_string())
    })();
    let sessions = match listed {
        Ok(sessions) => sessions,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    let stdout = Stdout::new();
    let written = match args.format {
        SessionsFormat::Json => {
            stdout.line(&serde_json::Value::Array(sessions.iter().map(to_json).collect()).to_string())
        }
        SessionsFormat::Text => sessions.iter().all(|s| stdout.line(&line(s))),
    };
    if written { ExitStatus::Success } else { Stop::ClosedStdout.exit_status() }
}

fn to_json(s: &SessionSummary) -> serde_json::Value {
    json!({
        "session_id": s.id.to_string(),
        "last_activity": format_rfc3339_millis(s.last_activity),
        "turns": s.turns,
        "prompts": s.prompts,
        "last_terminal_reason": s.last_terminal_reason,
        "first_prompt": s.first_prompt,
        "path": s.path,
        "error": s.error,
    })
}

fn line(s: &SessionSummary) -> String {
    let reason = s.last_terminal_reason.as_deref().unwrap_or("-");
    let prompt = s.first_prompt.as_deref().unwrap_or("");
    match &s.error {
        Some(error) => format!("{}  unreadable: {error}", s.id),
        None => {
            format!("{}  {}  {:>3} turns  {reason:<20} {prompt}", s.id, format_rfc3339_millis(s.last_activity), s.turns)
        }
    }
}
