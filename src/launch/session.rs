//! The session a run goes on: start one (optionally with a chosen id), resume one by id or the
//! most recent one of the directory, fork one into a new id, or keep it in memory.

use std::path::{Path, PathBuf};

use crate::engine::session::Session;
use crate::protocol::Message;
use crate::session::{Repair, SessionError, SessionLock, SessionMeta, SessionStore, TranscriptWriter, Uuid, UuidError};

/// The session a run asks for (the command line's session flags, `cli::session_args`):
/// a new one, a resumed one, a fork, or one kept in memory.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Resume the session with this id (of this working directory).
    pub resume: Option<String>,
    /// Resume the most recent session of this working directory.
    pub continue_session: bool,
    /// The id of the new session (a UUID); with `fork_session`, the id of the fork.
    pub session_id: Option<String>,
    /// With `resume` or `continue_session`: write the conversation to a new session and
    /// leave the old one as it was.
    pub fork_session: bool,
    /// Write no transcript (the session lives only as long as the process).
    pub no_session_persistence: bool,
    /// With `resume` or `continue_session`: keep the conversation only up to and including
    /// the transcript line with this uuid.
    pub resume_session_at: Option<String>,
    /// With `resume_session_at`: the uuid of the prompt whose turn the cut means to drop.
    pub resume_drops_turn: Option<String>,
    /// A spend cap is set (`--max-budget-usd`): a resumed session's subagent sidechains are
    /// read for what they spent, which then counts against it. Without a cap nothing needs
    /// the sum, and a resume reads none of them.
    pub sums_subagent_spend: bool,
}

/// Why the session a run asks for cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A fork of nothing.
    #[error("--fork-session needs --resume ID or --continue")]
    ForkNeedsResume,
    /// A turn to drop without a cut.
    #[error("--resume-drops-turn requires --resume-session-at")]
    DropsTurnNeedsCut,
    /// A cut of nothing.
    #[error("--resume-session-at needs --resume ID or --continue")]
    CutNeedsResume,
    /// A session id that is not a version 4 UUID.
    #[error("`{text}` is not a session id: {error}")]
    BadId {
        /// The id as given.
        text: String,
        /// Why it is none.
        error: UuidError,
    },
    /// `--continue` in a directory without sessions.
    #[error("no session to continue in {}", .0.display())]
    NothingToContinue(PathBuf),
    /// A new session whose chosen id is taken.
    #[error("session {0} already exists; resume it with --resume {0}")]
    Exists(Uuid),
    /// A chosen id for a resumed session that is not forked.
    #[error("--session-id names a new session; with --resume or --continue it needs --fork-session")]
    IdNeedsFork,
    /// A resumed session that is not in the store.
    #[error("no session {id} in {}; `agentloop sessions` lists them", .cwd.display())]
    Unknown {
        /// The id.
        id: Uuid,
        /// The working directory whose sessions were searched.
        cwd: PathBuf,
    },
    /// A resumed session that another process appends to.
    #[error("{0}; wait for it to end, or add --fork-session to go on in a new session")]
    InUse(SessionError),
    /// The store or the transcript failed.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Open the session `args` ask for, in `cwd` (absolute). A resumed transcript cut by a
/// crash is repaired first (tool calls left without results get interrupted results), and
/// the repair is written to it.
///
/// A session written to a transcript holds the transcript's lock ([`SessionLock`]) for as
/// long as it lives: a resume of a session another process appends to is refused, unless it
/// forks. A transcript that cannot be written (a read-only or full file system, a store path
/// under a file) leaves the session in memory, with one warning.
///
/// # Errors
/// [`OpenError`], a message for the user: a bad or unknown id, a session that already exists
/// or is in use, an unreadable transcript.
pub fn open(args: &SessionOptions, cwd: &Path) -> Result<Session, OpenError> {
    if args.fork_session && args.resume.is_none() && !args.continue_session {
        return Err(OpenError::ForkNeedsResume);
    }
    if args.resume_drops_turn.is_some() && args.resume_session_at.is_none() {
        return Err(OpenError::DropsTurnNeedsCut);
    }
    if args.resume_session_at.is_some() && args.resume.is_none() && !args.continue_session {
        return Err(OpenError::CutNeedsResume);
    }
    let chosen = args.session_id.as_deref().map(parse_id).transpose()?;
    let store = SessionStore::from_env();
    let (resumed, store) = match (&args.resume, args.continue_session) {
        (Some(id), _) => (Some(parse_id(id)?), store),
        (None, true) => {
            let store = store?;
            let latest = store.most_recent(cwd)?.ok_or_else(|| OpenError::NothingToContinue(cwd.to_path_buf()))?;
            (Some(latest.id), Ok(store))
        }
        (None, false) => (None, store),
    };
    let Some(id) = resumed else {
        let id = chosen.unwrap_or_else(Uuid::new_v4);
        if args.no_session_persistence {
            return Ok(Session::in_memory(id, cwd.to_path_buf()));
        }
        let store = match store {
            Ok(store) => store,
            Err(e) => return Ok(unwritten(id, cwd, Vec::new(), e)),
        };
        let path = store.path(cwd, id);
        if path.exists() {
            return Err(OpenError::Exists(id));
        }
        return match TranscriptWriter::create(&path, id, cwd) {
            Ok(writer) => Ok(Session::persisted(writer, cwd.to_path_buf(), Vec::new())),
            Err(e @ SessionError::InUse { .. }) => Err(e.into()),
            Err(e) => Ok(unwritten(id, cwd, Vec::new(), e)),
        };
    };
    if chosen.is_some() && !args.fork_session {
        return Err(OpenError::IdNeedsFork);
    }
    let store = store?;
    let Some(path) = store.find(cwd, id) else {
        return Err(OpenError::Unknown { id, cwd: cwd.to_path_buf() });
    };
    // The lock is taken before the load, so that nothing is appended between the two. A fork
    // writes a new transcript and leaves this one to whoever holds it.
    let lock = if args.fork_session || args.no_session_persistence {
        None
    } else {
        match SessionLock::acquire(&path) {
            Ok(lock) => Some(Ok(lock)),
            Err(e @ SessionError::InUse { .. }) => return Err(OpenError::InUse(e)),
            Err(e) => Some(Err(e)),
        }
    };
    let mut loaded = match &args.resume_session_at {
        Some(at) => crate::session::load_cut(&path, at, args.resume_drops_turn.as_deref()),
        None => crate::session::load(&path),
    }?;
    // A tool phase a kill cut off is finished by the resumed run: its calls that can run
    // are left unanswered here and run first (`prepare.resume_tools`).
    let (report, pending) = loaded.repair_resuming();
    warn_repairs(id, &loaded.path, &report.repairs);
    let recovered = crate::session::RecoveredCalls::of(&report.repairs);
    // `--max-budget-usd` holds across processes: what the session spent before counts.
    let sidechains = if args.sums_subagent_spend { crate::agents::host::sidechains_spent_usd(&path, id) } else { 0.0 };
    let spent = loaded.spent_usd + sidechains;
    let with_recovered = |mut session: Session| {
        session.recovered = recovered.clone();
        session.pending_tools = pending.clone();
        session.spent_earlier_usd = spent;
        session
    };
    if args.fork_session {
        let new_id = chosen.unwrap_or_else(Uuid::new_v4);
        let forked = store
            .fork(&loaded, new_id, Some(cwd))
            .and_then(|mut writer| writer.record_repair(&report, &loaded.messages).map(|()| writer));
        return Ok(with_recovered(match forked {
            Ok(writer) => Session::persisted(writer, cwd.to_path_buf(), loaded.messages),
            Err(e) => unwritten(new_id, cwd, loaded.messages, e),
        }));
    }
    let lock = match lock {
        None => {
            let mut session = Session::in_memory(id, cwd.to_path_buf());
            session.messages = loaded.messages.into();
            return Ok(with_recovered(session));
        }
        Some(Ok(lock)) => lock,
        Some(Err(e)) => return Ok(with_recovered(unwritten(id, cwd, loaded.messages, e))),
    };
    let resumed = loaded.writer_locked(lock).and_then(|mut writer| {
        match &loaded.cut {
            // The history goes on from the cut: a snapshot of it (repaired) for our loader, and
            // the next line chains from the cut, a branch for readers that follow the chain.
            Some(at) => writer.rewind(&loaded.messages, at),
            None => writer.record_repair(&report, &loaded.messages),
        }
        .map(|()| writer)
    });
    for line in crate::agents::host::repair_sidechains(&path, id) {
        eprintln!("agentloop: warning: {line}");
    }
    Ok(with_recovered(match resumed {
        Ok(writer) => Session::persisted(writer, cwd.to_path_buf(), loaded.messages),
        Err(e) => unwritten(id, cwd, loaded.messages, e),
    }))
}

/// Session `id` kept in memory with `history`, because its transcript cannot be written
/// (`why`): the run goes on, with one warning.
fn unwritten(id: Uuid, cwd: &Path, history: Vec<Message>, why: impl std::fmt::Display) -> Session {
    eprintln!("agentloop: warning: the session is not written ({why})");
    let mut session = Session::in_memory(id, cwd.to_path_buf());
    session.messages = history.into();
    session
}

/// Say on stderr what loading and repairing session `id` (at `path`) changed: one line for
/// what a kill cut off, one warning per dropped `tool_result` naming its line.
fn warn_repairs(id: Uuid, path: &Path, repairs: &[Repair]) {
    let (mut cut, mut answered) = (0, 0);
    for repair in repairs {
        match repair {
            Repair::AnsweredToolUses { tool_use_ids, .. } => {
                cut += 1;
                answered += tool_use_ids.len();
            }
            // Said once for them all, below.
            Repair::RecoveredToolUses { .. } => {}
            Repair::DroppedPartialLine { .. } => cut += 1,
            Repair::DroppedToolResult { line, tool_use_id, why } => eprintln!(
                "agentloop: warning: {}:{line}: dropped the tool_result for {tool_use_id}: {}",
                path.display(),
                why.describe()
            ),
        }
    }
    if let Some(recovered) = crate::session::RecoveredCalls::of(repairs) {
        eprintln!(
            "agentloop: session {id} was cut off while its tools ran; from the tool journal: {}",
            recovered.describe()
        );
    }
    if cut > 0 {
        eprintln!(
            "agentloop: session {id} was cut off: {cut} repair(s), {answered} tool call(s) answered as interrupted \
(their outcome is unknown)"
        );
    }
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

fn parse_id(text: &str) -> Result<Uuid, OpenError> {
    Uuid::parse(text).map_err(|error| OpenError::BadId { text: text.to_owned(), error })
}
