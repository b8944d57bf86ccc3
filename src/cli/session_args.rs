//! The session flags of `run`: start a session (optionally with a chosen id), resume one by
//! id or the most recent one of the directory, fork one into a new id, or keep it in memory.

use std::path::Path;

use crate::engine::session::Session;
use crate::session::{SessionMeta, SessionStore, TranscriptWriter, Uuid};

/// `run`'s session flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// Resume the session with this id (of this working directory): the prompt is added to its
    /// conversation, exactly as the model saw it last.
    #[arg(short = 'r', long, value_name = "ID", conflicts_with = "continue_session")]
    pub resume: Option<String>,
    /// Resume the most recent session of this working directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// The id of the new session (a UUID); with --fork-session, the id of the fork.
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// With --resume or --continue: write the conversation to a new session and leave the
    /// old one as it was.
    #[arg(long)]
    pub fork_session: bool,
    /// Write no transcript (the session lives only as long as the process).
    #[arg(long)]
    pub no_session_persistence: bool,
    /// With --resume or --continue: keep the conversation only up to and including the
    /// transcript line with this uuid (typically the last message of the turn to keep). Without
    /// --fork-session the session goes on from there, a branch in its transcript.
    #[arg(long, value_name = "MESSAGE_UUID")]
    pub resume_session_at: Option<String>,
    /// With --resume-session-at: the uuid of the prompt whose turn the cut means to drop; the
    /// resume is refused unless everything it drops belongs to that turn.
    #[arg(long, value_name = "PROMPT_UUID")]
    pub resume_drops_turn: Option<String>,
}

/// Open the session a run's flags ask for, in `cwd` (absolute). A resumed transcript cut by a
/// crash is repaired first (tool calls left without results get interrupted results), and
/// the repair is written to it.
///
/// # Errors
/// A message for the user: a bad or unknown id, a session that already exists, an unreadable
/// transcript.
pub fn open(args: &SessionArgs, cwd: &Path) -> Result<Session, String> {
    if args.fork_session && args.resume.is_none() && !args.continue_session {
        return Err("--fork-session needs --resume ID or --continue".into());
    }
    if args.resume_drops_turn.is_some() && args.resume_session_at.is_none() {
        return Err("--resume-drops-turn requires --resume-session-at".into());
    }
    if args.resume_session_at.is_some() && args.resume.is_none() && !args.continue_session {
        return Err("--resume-session-at needs --resume ID or --continue".into());
    }
    let chosen = args.session_id.as_deref().map(parse_id).transpose()?;
    let store = SessionStore::from_env().map_err(|e| e.to_string());
    let resumed = match (&args.resume, args.continue_session) {
        (Some(id), _) => Some(parse_id(id)?),
        (None, true) => {
            let store = store.as_ref().map_err(Clone::clone)?;
            let latest = store.most_recent(cwd).map_err(|e| e.to_string())?;
            Some(latest.ok_or_else(|| format!("no session to continue in {}", cwd.display()))?.id)
        }
        (None, false) => None,
    };
    let Some(id) = resumed else {
        let id = chosen.unwrap_or_else(Uuid::new_v4);
        if args.no_session_persistence {
            return Ok(Session::in_memory(id, cwd.to_path_buf()));
        }
        let store = match store {
            Ok(store) => store,
            Err(e) => {
                eprintln!("agentloop: warning: the session is not written ({e})");
                return Ok(Session::in_memory(id, cwd.to_path_buf()));
            }
        };
        let path = store.path(cwd, id);
        if path.exists() {
            return Err(format!("session {id} already exists; resume it with --resume {id}"));
        }
        let writer = TranscriptWriter::create(&path, id, cwd).map_err(|e| e.to_string())?;
        return Ok(Session::persisted(writer, cwd.to_path_buf(), Vec::new()));
    };
    if chosen.is_some() && !args.fork_session {
        return Err("--session-id names a new session; with --resume or --continue it needs --fork-session".into());
    }
    let store = store?;
    let Some(path) = store.find(cwd, id) else {
        return Err(format!("no session {id} in {}; `agentloop sessions` lists them", cwd.display()));
    };
    let mut loaded = match &args.resume_session_at {
        Some(at) => crate::session::load_cut(&path, at, args.resume_drops_turn.as_deref()),
        None => crate::session::load(&path),
    }
    .map_err(|e| e.to_string())?;
    let report = loaded.repair();
    let answered: usize = report
        .repairs
        .iter()
        .map(|r| match r {
            crate::session::Repair::AnsweredToolUses { tool_use_ids, .. } => tool_use_ids.len(),
            crate::session::Repair::DroppedPartialLine { .. } => 0,
        })
        .sum();
    if !report.repairs.is_empty() {
        eprintln!(
            "agentloop: session {id} was cut off: {} repair(s), {answered} tool call(s) answered as interrupted",
            report.repairs.len()
        );
    }
    if args.fork_session {
        let new_id = chosen.unwrap_or_else(Uuid::new_v4);
        let mut writer = store.fork(&loaded, new_id, Some(cwd)).map_err(|e| e.to_string())?;
        writer.record_repair(&report, &loaded.messages).map_err(|e| e.to_string())?;
        return Ok(Session::persisted(writer, cwd.to_path_buf(), loaded.messages));
    }
    if args.no_session_persistence {
        let mut session = Session::in_memory(id, cwd.to_path_buf());
        session.messages = loaded.messages.into();
        return Ok(session);
    }
    let mut writer = loaded.writer().map_err(|e| e.to_string())?;
    match &loaded.cut {
        // The history goes on from the cut: a snapshot of it (repaired) for our loader, and
        // the next line chains from the cut, a branch for readers that follow the chain.
        Some(at) => writer.rewind(&loaded.messages, at),
        None => writer.record_repair(&report, &loaded.messages),
    }
    .map_err(|e| e.to_string())?;
    Ok(Session::persisted(writer, cwd.to_path_buf(), loaded.messages))
}

/// The result line Claude Code prints (with `--output-format json` or `stream-json`) when the
/// session cannot be opened, a refused `--resume-drops-turn` among others: an error result
/// of no turns whose `errors` say why, so that the Claude Agent SDK raises it.
pub fn open_failure_result(message: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": true,
        "duration_ms": 0,
        "duration_api_ms": 0,
        "num_turns": 0,
        "stop_reason": null,
        "session_id": Uuid::new_v4().to_string(),
        "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0},
        "permission_denials": [],
        "uuid": Uuid::new_v4().to_string(),
        "errors": [message],
    })
}

/// Write the session's meta line: the model, the table and the permission mode it runs with.
pub fn write_meta(session: &mut Session, model: &str, table_sha256: &str, permission_mode: &str) {
    let meta = SessionMeta {
        model: model.to_owned(),
        table_sha256: table_sha256.to_owned(),
        permission_mode: permission_mode.to_owned(),
    };
    if let Err(e) = session.write_meta(&meta) {
        eprintln!("agentloop: warning: the session transcript is not written: {e}");
        session.transcript = None;
    }
}

fn parse_id(text: &str) -> Result<Uuid, String> {
    Uuid::parse(text).map_err(|e| format!("`{text}` is not a session id: {e}"))
}
