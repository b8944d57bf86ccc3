//! The frames of the Claude Agent SDK's stream-json protocol, as agentloop reads them from
//! stdin: user messages (each one a prompt), control requests the SDK sends, and the answers
//! to agentloop's own control requests.

use serde_json::{Value, json};

use crate::engine::run::Prompt;
use crate::session::Uuid;

/// One line of stdin.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// `{"type": "user", "message": {"content": …}, "uuid": …, "origin": …}`: a prompt for
    /// the session, with the uuid the SDK gave it (when it is a UUID) and its `origin` (when
    /// its kind is `human`: the only kind Claude Code takes from an SDK host).
    User {
        /// The prompt.
        prompt: Prompt,
        /// The whole frame, as read (`--replay-user-messages` echoes it).
        frame: Value,
    },
    /// `{"type": "control_request", "request_id": …, "request": {"subtype": …}}`.
    Request {
        /// The id to answer with.
        id: String,
        /// The `request` object.
        request: Value,
    },
    /// `{"type": "control_response", "response": {…}}`: the answer to one of ours.
    Response(Value),
    /// A frame agentloop has nothing to do with (`control_cancel_request`, `keep_alive`, …).
    Ignored(String),
    /// A line that is not a frame: the reason, for a warning.
    Bad(String),
}

/// Read one line of stdin.
pub fn parse(line: &str) -> Inbound {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Inbound::Bad(format!("not JSON ({e})")),
    };
    match value.get("type").and_then(Value::as_str) {
        Some("user") => match prompt_text(&value["message"]["content"]) {
            Some(text) => {
                let prompt = Prompt {
                    text,
                    uuid: value.get("uuid").and_then(Value::as_str).and_then(|u| Uuid::parse(u).ok()),
                    origin: value.get("origin").filter(|o| o["kind"] == "human").cloned(),
                };
                Inbound::User { prompt, frame: value }
            }
            None => Inbound::Bad("a user message without text content".into()),
        },
        Some("control_request") => match value.get("request_id").and_then(Value::as_str) {
            Some(id) => Inbound::Request { id: id.to_owned(), request: value["request"].clone() },
            None => Inbound::Bad("a control_request without request_id".into()),
        },
        Some("control_response") => Inbound::Response(value["response"].clone()),
        Some(other) => Inbound::Ignored(other.to_owned()),
        None => Inbound::Bad("a frame without `type`".into()),
    }
}

/// The text of a user message's content: a string, or the text blocks joined.
fn prompt_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The echo of the user message `frame` (as read) that `--replay-user-messages` prints when
/// its prompt starts, as Claude Code prints it: the message, `session_id`,
/// `parent_tool_use_id`, the frame's own `uuid` (a new one when it has none), `timestamp`,
/// `isReplay: true`, and the frame's `origin` when it has one.
pub fn replay(frame: &Value, session_id: &str) -> Value {
    let uuid = match frame.get("uuid") {
        Some(Value::String(uuid)) => uuid.clone(),
        _ => crate::session::Uuid::new_v4().to_string(),
    };
    let mut echo = json!({
        "type": "user",
        "message": frame["message"],
        "session_id": session_id,
        "parent_tool_use_id": frame.get("parent_tool_use_id").cloned().unwrap_or(Value::Null),
        "uuid": uuid,
        "timestamp": crate::session::time::format_rfc3339_millis(std::time::SystemTime::now()),
        "isReplay": true,
    });
    if let Some(origin) = frame.get("origin") {
        echo["origin"] = origin.clone();
    }
    echo
}

/// A success answer to the SDK's request `id`.
pub fn success(id: &str, response: Value) -> Value {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": response}})
}

/// An error answer to the SDK's request `id`.
pub fn error(id: &str, message: &str) -> Value {
    json!({"type": "control_response", "response": {"subtype": "error", "request_id": id, "error": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames the SDK wrote in the recorded session parse as what they are.
    #[test]
    fn the_recorded_sdk_frames_parse() {
        let path =
            concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/claude-code-protocol/sdk-to-cli.stdin.jsonl");
        let text = std::fs::read_to_string(path).expect("the shared fixtures are checked out beside the repository");
        let frames: Vec<Inbound> = text.lines().map(parse).collect();
        assert_eq!(frames.len(), 4);
        match &frames[0] {
            Inbound::Request { id, request } => {
                assert_eq!(id, "req_1_6bee0082");
                assert_eq!(request["subtype"], "initialize");
                assert_eq!(request["hooks"]["PreToolUse"][0]["hookCallbackIds"][0], "hook_0");
            }
            other => panic!("{other:?}"),
        }
        let Inbound::User { prompt, frame } = &frames[1] else { panic!("{:?}", frames[1]) };
        assert_eq!(prompt, &Prompt::text("Read greeting.txt and tell me what it says"));
        assert_eq!(frame["message"]["role"], "user");
        let Inbound::Response(answer) = &frames[3] else { panic!("{:?}", frames[3]) };
        assert_eq!(answer["request_id"], "f3e25be8-c2e2-415c-9a8e-1a1bdc67c745");
        assert_eq!(answer["response"]["behavior"], "allow");
    }

    #[test]
    fn a_replay_keeps_the_frames_uuid_and_origin() {
        let frame = json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            "session_id": "", "parent_tool_use_id": null, "origin": {"kind": "human"},
            "uuid": "711a8dd5-dbae-451a-9faf-344f976d601e"});
        let mut echo = replay(&frame, "4666664c-e714-4fb7-ba6d-030551f7d8e3");
        let timestamp = echo.as_object_mut().unwrap().remove("timestamp").unwrap();
        assert!(crate::session::time::parse_rfc3339(timestamp.as_str().unwrap()).is_some(), "{timestamp}");
        assert_eq!(
            echo,
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                   "session_id": "4666664c-e714-4fb7-ba6d-030551f7d8e3", "parent_tool_use_id": null,
                   "uuid": "711a8dd5-dbae-451a-9faf-344f976d601e", "isReplay": true, "origin": {"kind": "human"}})
        );
        let bare = replay(&json!({"type": "user", "message": {"role": "user", "content": "hi"}}), "s");
        assert!(crate::session::Uuid::parse(bare["uuid"].as_str().unwrap()).is_ok());
        assert!(bare.get("origin").is_none());
    }

    #[test]
    fn bad_lines_say_why() {
        assert_eq!(parse("{"), Inbound::Bad("not JSON (EOF while parsing an object at line 1 column 1)".into()));
        assert_eq!(
            parse(r#"{"type":"user","message":{"content":[{"type":"image"}]}}"#),
            Inbound::Bad("a user message without text content".into())
        );
        assert_eq!(parse(r#"{"type":"keep_alive"}"#), Inbound::Ignored("keep_alive".into()));
        let two = r#"{"type":"user","message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#;
        assert_eq!(
            parse(two),
            Inbound::User { prompt: Prompt::text("a\nb"), frame: serde_json::from_str(two).unwrap() }
        );
    }

    #[test]
    fn a_user_message_keeps_its_uuid_and_a_human_origin() {
        let line = r#"{"type":"user","message":{"role":"user","content":"hi"},"uuid":"4bdf8843-6342-492b-befa-479c5e1777ac","origin":{"kind":"human"}}"#;
        let Inbound::User { prompt, .. } = parse(line) else { panic!("{:?}", parse(line)) };
        assert_eq!(prompt.text, "hi");
        assert_eq!(prompt.uuid, Some(Uuid::parse("4bdf8843-6342-492b-befa-479c5e1777ac").unwrap()));
        assert_eq!(prompt.origin, Some(json!({"kind": "human"})));
        let other = r#"{"type":"user","message":{"content":"hi"},"uuid":"not-a-uuid","origin":{"kind":"peer"}}"#;
        let Inbound::User { prompt, .. } = parse(other) else { panic!("{:?}", parse(other)) };
        assert_eq!(prompt, Prompt::text("hi"));
    }
}
