//! The store: `<home>/projects/<cwd slug>/<session id>.jsonl`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::line;
use super::paths::{CLAUDE_CONFIG_VAR, HOME_VAR, Roots, roots_from, slug};
use super::reader::scan;
use super::{LoadedSession, Result, SessionError, TranscriptWriter, Uuid, io_error};

/// Characters of the first prompt a [`SessionSummary`] keeps.
pub const FIRST_PROMPT_CHARS: usize = 80;

/// The sessions under one root directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    home: PathBuf,
    /// A directory of older sessions, read but never written ([`Roots::legacy`]).
    legacy: Option<PathBuf>,
}

/// One session as a listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The session id (the file name).
    pub id: Uuid,
    /// The transcript.
    pub path: PathBuf,
    /// The last line's timestamp, else the file's modification time.
    pub last_activity: SystemTime,
    /// Assistant messages in the history a resume would load.
    pub turns: usize,
    /// Prompts whose turn sequence ended (`agentloop-prompt-end` lines).
    pub prompts: usize,
    /// How the last prompt ended.
    pub last_terminal_reason: Option<String>,
    /// The first user text, whitespace runs made single spaces, cut to
    /// `FIRST_PROMPT_CHARS` characters (the last one `…` when cut).
    pub first_prompt: Option<String>,
    /// Why the transcript could not be read, if it could not (the other fields then hold
    /// what the file system says).
    pub error: Option<String>,
}

impl SessionStore {
    /// A store rooted at `home` (what `AGENTLOOP_HOME` names).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        SessionStore { home: home.into(), legacy: None }
    }

    /// A store rooted at `roots.primary` that also reads the sessions of `roots.legacy`.
    pub fn with_roots(roots: Roots) -> Self {
        SessionStore { home: roots.primary, legacy: roots.legacy }
    }

    /// The store of the environment (`roots_from`): `AGENTLOOP_HOME` when set, else
    /// `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`; the last two also read `$HOME/.agentloop`.
    pub fn from_env() -> Result<Self> {
        let var = std::env::var_os;
        roots_from(var(HOME_VAR), var(CLAUDE_CONFIG_VAR), var("HOME")).map(Self::with_roots).ok_or(SessionError::NoHome)
    }

    /// The root directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The directory of the sessions started in `cwd` (an absolute path).
    pub fn project_dir(&self, cwd: &Path) -> PathBuf {
        self.home.join("projects").join(slug(cwd))
    }

    /// The transcript of session `id` started in `cwd`.
    pub fn path(&self, cwd: &Path, id: Uuid) -> PathBuf {
        self.project_dir(cwd).join(format!("{id}.jsonl"))
    }

    /// The transcript of session `id` of `cwd` where it is: in this store's directory, else
    /// in the legacy one; `None` when neither has it.
    pub fn find(&self, cwd: &Path, id: Uuid) -> Option<PathBuf> {
        let name = format!("{id}.jsonl");
        std::iter::once(&self.home)
            .chain(self.legacy.as_ref())
            .map(|root| root.join("projects").join(slug(cwd)).join(&name))
            .find(|path| path.exists())
    }

    /// Start a new session in `cwd` with a fresh id.
    pub fn create(&self, cwd: &Path) -> Result<TranscriptWriter> {
        let id = Uuid::new_v4();
        TranscriptWriter::create(&self.path(cwd, id), id, cwd)
    }

    /// Load session `id` of `cwd` ([`load`](super::load)), where [`SessionStore::find`] finds it.
    pub fn load(&self, cwd: &Path, id: Uuid) -> Result<LoadedSession> {
        super::load(&self.find(cwd, id).unwrap_or_else(|| self.path(cwd, id)))
    }

    /// The sessions of `cwd`, most recent activity first. Files whose name is not
    /// `<uuid>.jsonl` are not sessions and are left out; a transcript that cannot be read is
    /// listed with its [`SessionSummary::error`]. Each file is read once, but only the type of
    /// most lines is parsed (not their messages). The sessions of the legacy directory are
    /// listed too, unless this store's own has one of the same id.
    pub fn list(&self, cwd: &Path) -> Result<Vec<SessionSummary>> {
        let mut out = list_dir(&self.project_dir(cwd))?;
        if let Some(legacy) = &self.legacy {
            for old in list_dir(&legacy.join("projects").join(slug(cwd)))? {
                if !out.iter().any(|s| s.id == old.id) {
                    out.push(old);
                }
            }
        }
        out.sort_by(|a, b| b.last_activity.cmp(&a.last_activity).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The session `--continue` picks: the most recently active one of `cwd`.
    pub fn most_recent(&self, cwd: &Path) -> Result<Option<SessionSummary>> {
        Ok(self.list(cwd)?.into_iter().next())
    }

    /// Start session `new_id` as a copy of `loaded` (`--fork-session`), as Claude Code forks
    /// one: `loaded`'s meta line (when it has one, with `forkedFrom`), then its lines as they
    /// are — uuids, message ids and usage kept, `sessionId` changed — up to the line the
    /// history was cut after ([`LoadedSession::cut`]), if it was. The lines of the uuid chain
    /// and agentloop's own are copied (a line cut by a kill, sidechains and Claude Code's
    /// bookkeeping lines are not). The file is created in the project directory of `loaded`'s
    /// cwd (`cwd` when given). Returns the writer, ready for the next message; record a repair
    /// of `loaded` on it ([`TranscriptWriter::record_repair`]) so the fork loads as the
    /// repaired history.
    pub fn fork(&self, loaded: &LoadedSession, new_id: Uuid, cwd: Option<&Path>) -> Result<TranscriptWriter> {
        let cwd = cwd.map(Path::to_path_buf).or_else(|| loaded.cwd.clone()).unwrap_or_default();
        let text = std::fs::read(&loaded.path).map_err(io_error(&loaded.path))?;
        let mut writer = TranscriptWriter::create(&self.path(&cwd, new_id), new_id, &cwd)?;
        if let Some(meta) = &loaded.meta {
            writer.meta_line(meta, Some(&loaded.session_id.to_string()))?;
        }
        let new_session = Value::String(new_id.to_string());
        for raw in text.split(|&b| b == b'\n') {
            let Ok(Value::Object(mut entry)) = serde_json::from_slice::<Value>(raw) else { continue };
            let kind = entry.get("type").and_then(Value::as_str).unwrap_or_default();
            let ours = matches!(kind, line::HISTORY | line::PROMPT_END);
            let chained =
                entry.get("uuid").is_some_and(Value::is_string) && entry.get("isSidechain") != Some(&Value::Bool(true));
            if !(ours || chained) {
                continue;
            }
            let uuid = entry.get("uuid").and_then(Value::as_str).map(str::to_owned);
            if entry.contains_key("sessionId") {
                entry.insert("sessionId".into(), new_session.clone());
            }
            writer.copy_line(&entry)?;
            if uuid.is_some() && uuid == loaded.cut {
                break;
            }
        }
        Ok(writer)
    }
}

/// The sessions in one project directory (in no order).
fn list_dir(dir: &Path) -> Result<Vec<SessionSummary>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error(dir))?;
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Some(id) = path.file_stem().and_then(|s| s.to_str()).and_then(|s| Uuid::parse(s).ok()) else {
            continue;
        };
        let mtime = entry.metadata().and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
        out.push(match scan(&path, false) {
            Ok(s) => SessionSummary {
                id,
                path,
                last_activity: s.last_activity.unwrap_or(mtime),
                turns: s.turns,
                prompts: s.prompts,
                last_terminal_reason: s.last_terminal_reason,
                first_prompt: s.first_prompt.as_deref().map(shorten),
                error: None,
            },
            Err(e) => SessionSummary {
                id,
                path,
                last_activity: mtime,
                turns: 0,
                prompts: 0,
                last_terminal_reason: None,
                first_prompt: None,
                error: Some(e.to_string()),
            },
        });
    }
    Ok(out)
}

/// A first prompt as a listing shows it.
pub(crate) fn shorten(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= FIRST_PROMPT_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(FIRST_PROMPT_CHARS - 1).collect();
    cut.push('…');
    cut
}
