//! Elicitation asked line by line: the question and each field's prompt written out, the
//! answers read one line each. `agentloop mcp` asks this way on its stdin (a terminal, or a
//! pipe of prepared answers); the end of the input cancels.
//!
//! First the choice — `a` (or nothing) accepts, `d` declines, `c` cancels — then, for an
//! accepted form, one line per field: nothing typed takes the field's default (or leaves an
//! optional field out), a value that does not fit is explained and asked again. An accepted
//! URL is opened in the browser ([`crate::mcp::browser`]).

use futures::future::BoxFuture;
use serde_json::Map;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::Mutex;

use super::{Action, Answer, Asker, Kind, Request};

/// Asks on `input`, writing the questions with `output`.
pub struct Lines<R> {
    input: Mutex<R>,
    output: Box<dyn Fn(&str) + Send + Sync>,
}

impl<R> Lines<R> {
    /// An asker reading answers from `input` and writing questions with `output` (each call
    /// one piece of text, without a newline added).
    pub fn new(input: R, output: impl Fn(&str) + Send + Sync + 'static) -> Lines<R> {
        Lines { input: Mutex::new(input), output: Box::new(output) }
    }
}

/// The next line of `input` without its line ending, `None` at its end.
async fn line<R: AsyncBufRead + Unpin>(input: &mut R) -> Option<String> {
    let mut text = String::new();
    match input.read_line(&mut text).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(text.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

impl<R: AsyncBufRead + Unpin + Send> Asker for Lines<R> {
    fn ask<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let mut input = self.input.lock().await;
            let say = &self.output;
            say(&format!("MCP server `{}` asks: {}\n", request.server, request.message));
            if let Kind::Url { url, .. } = &request.kind {
                say(&format!("  {url}\n"));
            }
            let what = match request.kind {
                Kind::Form { .. } => "accept and fill in the form",
                Kind::Url { .. } => "accept and open the URL",
            };
            let action = loop {
                say(&format!("{what} (a), decline (d) or cancel (c)? [a] "));
                let Some(choice) = line(&mut *input).await else { return Answer::only(Action::Cancel) };
                match choice.trim() {
                    "" | "a" | "accept" => break Action::Accept,
                    "d" | "decline" => break Action::Decline,
                    "c" | "cancel" => break Action::Cancel,
                    _ => {}
                }
            };
            if action != Action::Accept {
                return Answer::only(action);
            }
            if let Kind::Url { url, .. } = &request.kind {
                if let Err(e) = crate::mcp::browser::open(url) {
                    say(&format!("  cannot open a browser ({e}): open the URL yourself\n"));
                }
                return Answer::only(Action::Accept);
            }
            let mut content = Map::new();
            for field in request.fields() {
                loop {
                    say(&format!("  {}: ", field.prompt()));
                    let Some(text) = line(&mut *input).await else { return Answer::only(Action::Cancel) };
                    match field.parse(&text) {
                        Ok(Some(value)) => {
                            content.insert(field.name.clone(), value);
                            break;
                        }
                        Ok(None) => break,
                        Err(why) => say(&format!("    {why}\n")),
                    }
                }
            }
            Answer { action: Action::Accept, content: Some(content) }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex as StdMutex};

    use serde_json::{Value, json};

    use super::*;

    fn request() -> Request {
        Request {
            server: "web".into(),
            message: "Your details".into(),
            kind: Kind::Form {
                schema: json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "Ada"},
                    "age": {"type": "integer", "minimum": 0},
                    "ok": {"type": "boolean"}
                }, "required": ["ok"]}),
                order: vec!["name".into(), "age".into(), "ok".into()],
            },
        }
    }

    async fn ask(typed: &str) -> (Answer, String) {
        let written = Arc::new(StdMutex::new(String::new()));
        let sink = written.clone();
        let asker = Lines::new(typed.as_bytes(), move |text| sink.lock().unwrap().push_str(text));
        let answer = asker.ask(&request()).await;
        let text = written.lock().unwrap().clone();
        (answer, text)
    }

    #[tokio::test]
    async fn each_field_is_asked_and_a_bad_value_asked_again() {
        let (answer, written) = ask("\n\n-3\n\nmaybe\ny\n").await;
        assert_eq!(answer.action, Action::Accept);
        assert_eq!(answer.content.map(Value::Object), Some(json!({"name": "Ada", "ok": true})));
        assert_eq!(
            written,
            "MCP server `web` asks: Your details\n\
             accept and fill in the form (a), decline (d) or cancel (c)? [a] \
             \x20 name (text) [Ada]: \
             \x20 age (a whole number) [none]: \
             \x20   expected a number of at least 0\n\
             \x20 age (a whole number) [none]: \
             \x20 ok (y or n): \
             \x20   answer y or n\n\
             \x20 ok (y or n): "
        );
    }

    #[tokio::test]
    async fn declining_asks_nothing_more_and_the_end_of_input_cancels() {
        assert_eq!(ask("d\n").await.0, Answer::only(Action::Decline));
        assert_eq!(ask("x\nc\n").await.0, Answer::only(Action::Cancel));
        assert_eq!(ask("").await.0, Answer::only(Action::Cancel));
        assert_eq!(ask("a\nBob\n").await.0, Answer::only(Action::Cancel));
    }
}
