//! The store: `<home>/projects/<cwd slug>/<session id>.jsonl`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::paths::{HOME_VAR, home_from, slug};
use super::reader::scan;
use super::{LoadedSession, Result, SessionError, TranscriptWriter, Uuid, io_error};

/// Characters of the first prompt a [`SessionSummary`] keeps.
pub const FIRST_PROMPT_CHARS: usize = 80;

/// The sessions under one root directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    home: PathBuf,
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
    /// [`FIRST_PROMPT_CHARS`] characters (the last one `…` when cut).
    pub first_prompt: Option<String>,
    /// Why the transcript could not be read, if it could not (the other fields then hold
    /// what the file system says).
    pub error: Option<String>,
}

impl SessionStore {
    /// A store rooted at `home` (what `AGENTLOOP_HOME` names).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        SessionStore { home: home.into() }
    }

    /// The store `AGENTLOOP_HOME` names, else `$HOME/.agentloop`.
    pub fn from_env() -> Result<Self> {
        home_from(std::env::var_os(HOME_VAR), std::env::var_os("HOME")).map(Self::new).ok_or(SessionError::NoHome)
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

    /// Start a new session in `cwd` with a fresh id.
    pub fn create(&self, cwd: &Path) -> Result<TranscriptWriter> {
        let id = Uuid::new_v4();
        TranscriptWriter::create(&self.path(cwd, id), id, cwd)
    }

    /// Load session `id` of `cwd` ([`load`](super::load)).
    pub fn load(&self, cwd: &Path, id: Uuid) -> Result<LoadedSession> {
        super::load(&self.path(cwd, id))
    }

    /// The sessions of `cwd`, most recent activity first. Files whose name is not
    /// `<uuid>.jsonl` are not sessions and are left out; a transcript that cannot be read is
    /// listed with its [`SessionSummary::error`]. Each file is read once, but only the type of
    /// most lines is parsed (not their messages).
    pub fn list(&self, cwd: &Path) -> Result<Vec<SessionSummary>> {
        let dir = self.project_dir(cwd);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error(&dir))?;
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
        out.sort_by(|a, b| b.last_activity.cmp(&a.last_activity).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The session `--continue` picks: the most recently active one of `cwd`.
    pub fn most_recent(&self, cwd: &Path) -> Result<Option<SessionSummary>> {
        Ok(self.list(cwd)?.into_iter().next())
    }

    /// Start session `new_id` as a copy of `loaded` (`--fork-session`): its meta line (when it
    /// has one, with `forkedFrom`), then its messages as message lines with fresh uuids
    /// chained from null. The file is created in the project directory of `loaded`'s cwd
    /// (`cwd` when given). Returns the writer, ready for the next message. Repair `loaded`
    /// first ([`LoadedSession::repair`]) when it may end mid-tool-round: the fork copies the
    /// messages as they are.
    pub fn fork(&self, loaded: &LoadedSession, new_id: Uuid, cwd: Option<&Path>) -> Result<TranscriptWriter> {
        let cwd = cwd.map(Path::to_path_buf).or_else(|| loaded.cwd.clone()).unwrap_or_default();
        let mut writer = TranscriptWriter::create(&self.path(&cwd, new_id), new_id, &cwd)?;
        if let Some(meta) = &loaded.meta {
            writer.meta_line(meta, Some(&loaded.session_id.to_string()))?;
        }
        for message in &loaded.messages {
            writer.append(message)?;
        }
        Ok(writer)
    }
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
