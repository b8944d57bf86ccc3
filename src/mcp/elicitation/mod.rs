//! Elicitation: an MCP server asking the user for input in the middle of a call
//! (`elicitation/create`), either a form ([`form`]) or a URL to open.
//!
//! Who answers depends on how agentloop runs, as in Claude Code:
//! - in the SDK mode with `--permission-prompt-tool stdio`, the SDK, through an
//!   `elicitation` control request ([`crate::sdk::elicit`]); an SDK without a handler answers
//!   with an error, which cancels;
//! - in the interactive session, the person at the terminal;
//! - `agentloop mcp`, whoever types on its stdin ([`lines`]);
//! - headless (`-p`, or the SDK mode without a permission prompt tool), nobody: the request
//!   is cancelled ([`Cancel`]).
//!
//! The mode installs its [`Asker`] in the process's [`Elicitations`] ([`process`]), which
//! every connection's client consults when a request comes, so servers started before the
//! mode knew how to ask still reach it. Whatever answers, an accepted form gets the schema's
//! defaults for the fields it leaves out (SEP-1034), which Claude Code does not do; a declined
//! or cancelled request carries no content.

pub mod form;
pub mod lines;

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// What the person chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Sent the form (or agreed to open the URL).
    Accept,
    /// Refused, the call goes on without it.
    Decline,
    /// Dismissed the question.
    Cancel,
}

impl Action {
    /// The action named `name`.
    pub fn parse(name: &str) -> Option<Action> {
        match name {
            "accept" => Some(Action::Accept),
            "decline" => Some(Action::Decline),
            "cancel" => Some(Action::Cancel),
            _ => None,
        }
    }
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// What was chosen.
    pub action: Action,
    /// The form's values, when accepted.
    pub content: Option<Map<String, Value>>,
}

impl Answer {
    /// The answer `action` without content.
    pub fn only(action: Action) -> Answer {
        Answer { action, content: None }
    }
}

/// What a server asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A form.
    Form {
        /// The `requestedSchema`.
        schema: Value,
        /// Its property names in the order the server listed them.
        order: Vec<String>,
    },
    /// A URL for the person to open (e.g. a third party's sign-in).
    Url {
        /// The URL.
        url: String,
        /// The request's `elicitationId`.
        id: String,
    },
}

/// One `elicitation/create` request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The server asking: its name in the configuration (its URL for `agentloop mcp`).
    pub server: String,
    /// What it says to the person.
    pub message: String,
    /// What it asks for.
    pub kind: Kind,
}

impl Request {
    /// The request rmcp parsed as `params`, from `server`; `None` for a mode newer than
    /// form and URL (declined).
    pub fn from_params(server: &str, params: ElicitRequestParams) -> Option<Request> {
        let (message, kind) = match params {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                let order = requested_schema.property_order.clone().unwrap_or_default();
                let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
                (message, Kind::Form { schema, order })
            }
            ElicitRequestParams::UrlElicitationParams { message, url, elicitation_id, .. } => {
                (message, Kind::Url { url, id: elicitation_id })
            }
            _ => return None,
        };
        Some(Request { server: server.to_owned(), message, kind })
    }

    /// The form's fields, in the server's order; none for a URL.
    pub fn fields(&self) -> Vec<form::Field> {
        match &self.kind {
            Kind::Form { schema, order } => form::fields_in(schema, order),
            Kind::Url { .. } => Vec::new(),
        }
    }
}

/// Whoever answers a mode's requests.
pub trait Asker: Send + Sync {
    /// The answer to `request`.
    fn ask<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Answer>;
}

/// Nobody to ask (headless): every request is cancelled, as Claude Code does in `-p`.
pub struct Cancel;

impl Asker for Cancel {
    fn ask<'a>(&'a self, _request: &'a Request) -> BoxFuture<'a, Answer> {
        Box::pin(std::future::ready(Answer::only(Action::Cancel)))
    }
}

/// Where a connection's elicitation requests go: the [`Asker`] the mode installed.
pub struct Elicitations {
    asker: RwLock<Arc<dyn Asker>>,
}

impl Elicitations {
    /// Requests answered by `asker`.
    pub fn new(asker: Arc<dyn Asker>) -> Elicitations {
        Elicitations { asker: RwLock::new(asker) }
    }

    /// From now on, `asker` answers.
    pub fn answer_with(&self, asker: Arc<dyn Asker>) {
        *self.asker.write().unwrap_or_else(PoisonError::into_inner) = asker;
    }

    /// Ask, and complete the answer ([`complete`]).
    pub async fn answer(&self, request: &Request) -> Answer {
        let asker = self.asker.read().unwrap_or_else(PoisonError::into_inner).clone();
        let answer = asker.ask(request).await;
        complete(request, answer)
    }
}

/// The process's elicitations, cancelled until a mode installs its asker.
pub fn process() -> Arc<Elicitations> {
    static PROCESS: OnceLock<Arc<Elicitations>> = OnceLock::new();
    PROCESS.get_or_init(|| Arc::new(Elicitations::new(Arc::new(Cancel)))).clone()
}

/// An answer as it goes to the server: an accepted form with the defaults of the fields it
/// leaves out ([`form::apply_defaults`]); an accepted URL, a decline or a cancel without
/// content.
pub fn complete(request: &Request, answer: Answer) -> Answer {
    match (&request.kind, answer.action) {
        (Kind::Form { schema, .. }, Action::Accept) => {
            let mut content = answer.content.unwrap_or_default();
            form::apply_defaults(schema, &mut content);
            Answer { action: Action::Accept, content: Some(content) }
        }
        (Kind::Url { .. }, _) | (Kind::Form { .. }, Action::Decline | Action::Cancel) => Answer::only(answer.action),
    }
}

/// `answer` as rmcp's result.
pub fn result_of(answer: Answer) -> ElicitResult {
    let action = match answer.action {
        Action::Accept => ElicitationAction::Accept,
        Action::Decline => ElicitationAction::Decline,
        Action::Cancel => ElicitationAction::Cancel,
    };
    let result = ElicitResult::new(action);
    match answer.content {
        Some(content) => result.with_content(Value::Object(content)),
        None => result,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form_request() -> Request {
        // From text, as it comes from the server: the properties' order is kept.
        let params: ElicitRequestParams = serde_json::from_str(
            r#"{"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "Ada"}, "age": {"type": "integer"}}}}"#,
        )
        .unwrap();
        Request::from_params("srv", params).unwrap()
    }

    #[test]
    fn a_request_is_read_with_its_schema_and_the_servers_order() {
        let request = form_request();
        assert_eq!(request.server, "srv");
        assert_eq!(request.message, "Who are you?");
        let Kind::Form { schema, order } = &request.kind else { panic!("{request:?}") };
        assert_eq!(order, &["name", "age"]);
        assert_eq!(schema["properties"]["name"], json!({"type": "string", "default": "Ada"}));
        let names: Vec<String> = request.fields().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["name", "age"]);
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com/a", "elicitationId": "e1"
        }))
        .unwrap();
        assert_eq!(
            Request::from_params("srv", url).unwrap().kind,
            Kind::Url { url: "https://example.com/a".into(), id: "e1".into() }
        );
    }

    #[test]
    fn an_accepted_form_gets_its_defaults_and_a_refusal_no_content() {
        let request = form_request();
        let accepted = complete(&request, Answer { action: Action::Accept, content: None });
        assert_eq!(accepted.content, Some(json!({"name": "Ada"}).as_object().unwrap().clone()));
        let declined = complete(&request, Answer { action: Action::Decline, content: Some(Map::new()) });
        assert_eq!(declined, Answer::only(Action::Decline));
        let result = serde_json::to_value(result_of(accepted)).unwrap();
        assert_eq!(result, json!({"action": "accept", "content": {"name": "Ada"}}));
    }

    #[tokio::test]
    async fn nobody_to_ask_cancels_until_a_mode_installs_its_asker() {
        struct Yes;
        impl Asker for Yes {
            fn ask<'a>(&'a self, _request: &'a Request) -> BoxFuture<'a, Answer> {
                Box::pin(std::future::ready(Answer { action: Action::Accept, content: Some(Map::new()) }))
            }
        }
        let elicitations = Elicitations::new(Arc::new(Cancel));
        assert_eq!(elicitations.answer(&form_request()).await, Answer::only(Action::Cancel));
        elicitations.answer_with(Arc::new(Yes));
        assert_eq!(elicitations.answer(&form_request()).await.action, Action::Accept);
    }
}
