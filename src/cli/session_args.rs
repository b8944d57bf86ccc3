//! The session flags of `run`: start a session (optionally with a chosen id), resume one by
//! id or the most recent one of the directory, fork one into a new id, or keep it in memory
//! ([`crate::launch::session`] opens it).

use crate::launch::session::SessionOptions;

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

impl SessionArgs {
    /// The session these flags ask for.
    pub fn options(&self) -> SessionOptions {
        SessionOptions {
            resume: self.resume.clone(),
            continue_session: self.continue_session,
            session_id: self.session_id.clone(),
            fork_session: self.fork_session,
            no_session_persistence: self.no_session_persistence,
            resume_session_at: self.resume_session_at.clone(),
            resume_drops_turn: self.resume_drops_turn.clone(),
            sums_subagent_spend: false,
        }
    }
}
