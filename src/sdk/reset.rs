//! `/clear` in stream-json input: the conversation starts again in a new session (a new id,
//! an empty history, a transcript of its own beside the old one), as Claude Code does. The SDK
//! sees a `conversation_reset` line stamped with the old session's id, `system/init` of the
//! new one, and a result of no turns (`local_command: "clear"`).

use serde_json::{Value, json};

use crate::engine::session::Session;
use crate::launch::session::{self, SessionOptions};
use crate::session::time::format_rfc3339_millis;
use crate::session::{SessionMeta, Uuid};
use crate::stderr;

/// The prompt text that clears the conversation.
pub const CLEAR: &str = "/clear";

/// Whether a prompt is the `/clear` command (surrounding whitespace aside).
pub fn is_clear(text: &str) -> bool {
    text.trim() == CLEAR
}

/// The session that replaces `old`: a fresh id in the same working directory, written to a
/// new transcript with `meta` when `old` was written to one (in memory only otherwise), as
/// the interactive session's `/clear` opens one; its nested memory starts again from the
/// memory loaded at the start.
pub fn fresh_session(old: &Session, meta: &SessionMeta) -> Session {
    let args = SessionOptions { no_session_persistence: old.transcript.is_none(), ..SessionOptions::default() };
    let mut session = session::open(&args, &old.cwd).unwrap_or_else(|e| {
        stderr::line(&format!("agentloop: warning: the session after /clear is not written ({e})"));
        Session::in_memory(Uuid::new_v4(), old.cwd.clone())
    });
    session::write_meta(&mut session, &meta.model, &meta.table_sha256, &meta.permission_mode);
    session.nested_memory = std::sync::Arc::new(old.nested_memory.restarted());
    session
}

/// The `conversation_reset` line: the old session's id, the new conversation's id (which,
/// as in Claude Code, is not the next session id: that one comes with the next line), and
/// the `/clear` message's uuid.
pub fn reset_frame(old_session: &str, user_message_uuid: Uuid) -> Value {
    let conversation = Uuid::new_v4().to_string();
    json!({
        "type": "conversation_reset",
        "new_conversation_id": conversation,
        "uuid": conversation,
        "trigger": "clear",
        "user_message_uuid": user_message_uuid.to_string(),
        "timestamp": format_rfc3339_millis(std::time::SystemTime::now()),
        "session_id": old_session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_command_clears() {
        assert!(is_clear("/clear"));
        assert!(is_clear("  /clear\n"));
        assert!(!is_clear("/clear the table"));
        assert!(!is_clear("clear"));
    }

    #[test]
    fn the_reset_frame_names_the_old_session() {
        let user = Uuid::new_v4();
        let frame = reset_frame("4bdf8843-6342-492b-befa-479c5e1777ac", user);
        assert_eq!(frame["type"], "conversation_reset");
        assert_eq!(frame["session_id"], "4bdf8843-6342-492b-befa-479c5e1777ac");
        assert_eq!(frame["uuid"], frame["new_conversation_id"]);
        assert_eq!(frame["trigger"], "clear");
        assert_eq!(frame["user_message_uuid"], user.to_string());
        assert!(Uuid::parse(frame["uuid"].as_str().unwrap()).is_ok());
    }

    #[test]
    fn a_session_in_memory_is_replaced_by_one_in_memory() {
        let old = Session::in_memory(Uuid::new_v4(), "/p".into());
        let meta = SessionMeta { model: "m".into(), table_sha256: "t".into(), permission_mode: "default".into() };
        let new = fresh_session(&old, &meta);
        assert_ne!(new.id, old.id);
        assert!(new.transcript.is_none());
        assert!(new.messages.is_empty());
        assert_eq!(new.cwd, old.cwd);
    }
}
