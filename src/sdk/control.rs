//! Control requests agentloop sends to the Claude Agent SDK (`hook_callback`, `can_use_tool`,
//! `mcp_message`) and the routing of their answers.
//!
//! Each request gets a fresh id and a waiting slot; the reader of stdin hands every
//! `control_response` to [`Controller::answer`], which fills the slot of its `request_id`.
//! A request whose answer never comes (stdin closed) fails instead of hanging.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::hooks::command::HookCallbacks;
use crate::launch::stdio::Stdout;
use crate::peer::PeerError;

/// Sends control requests on stdout and matches the answers read from stdin.
pub struct Controller {
    stdout: Stdout,
    next: AtomicU64,
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<Value, PeerError>>>>,
    closed: Mutex<bool>,
}

impl Controller {
    /// A controller writing to `stdout`.
    pub fn new(stdout: Stdout) -> Controller {
        Controller { stdout, next: AtomicU64::new(1), waiting: Mutex::new(HashMap::new()), closed: Mutex::new(false) }
    }

    /// Send `request` (an object with its `subtype`) and wait for its answer: the `response`
    /// object of a success, or the error text.
    ///
    /// # Errors
    /// The SDK's error, or that stdin closed before the answer came.
    pub async fn request(&self, request: Value) -> Result<Value, PeerError> {
        self.send(request)?.await
    }

    /// Write `request` now and return the wait for its answer, so that requests sent one
    /// after the other reach the SDK in that order while their answers are awaited
    /// concurrently.
    ///
    /// # Errors
    /// Stdin is closed: nobody can answer. The returned wait fails with the SDK's error, or
    /// when stdin closes before the answer came.
    pub fn send(&self, request: Value) -> Result<BoxFuture<'static, Result<Value, PeerError>>, PeerError> {
        let id = format!("agentloop_req_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            // Held while the slot is added, so that `close` cannot clear the slots in between.
            let closed = self.closed.lock().expect("never poisoned");
            if *closed {
                return Err(PeerError::Closed);
            }
            self.waiting.lock().expect("never poisoned").insert(id.clone(), tx);
        }
        let line = json!({"type": "control_request", "request_id": id, "request": request});
        self.stdout.line(&line.to_string());
        Ok(Box::pin(async move { rx.await.unwrap_or(Err(PeerError::ClosedBeforeAnswer)) }))
    }

    /// Route a `control_response` frame's `response` object to the request waiting for it.
    /// Returns false when no request waits for that id.
    pub fn answer(&self, response: &Value) -> bool {
        let Some(id) = response.get("request_id").and_then(Value::as_str) else { return false };
        let Some(slot) = self.waiting.lock().expect("never poisoned").remove(id) else { return false };
        let result = match response.get("subtype").and_then(Value::as_str) {
            Some("success") => Ok(response.get("response").cloned().unwrap_or(Value::Object(Default::default()))),
            _ => Err(PeerError::Answered(
                response.get("error").and_then(Value::as_str).unwrap_or("the SDK answered with an error").to_owned(),
            )),
        };
        let _ = slot.send(result);
        true
    }

    /// Stdin closed: fail every waiting request, and every later one.
    pub fn close(&self) {
        *self.closed.lock().expect("never poisoned") = true;
        self.waiting.lock().expect("never poisoned").clear();
    }
}

impl crate::mcp::sdk::Channel for Controller {
    fn send(&self, server: &str, message: Value) -> Result<BoxFuture<'static, Result<Value, PeerError>>, PeerError> {
        Controller::send(self, json!({"subtype": "mcp_message", "server_name": server, "message": message}))
    }
}

impl HookCallbacks for Controller {
    fn call<'a>(
        &'a self,
        id: &'a str,
        input: &'a Value,
        tool_use_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Value, PeerError>> {
        Box::pin(async move {
            let request =
                json!({"subtype": "hook_callback", "callback_id": id, "input": input, "tool_use_id": tool_use_id});
            self.request(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_the_request_with_their_id() {
        let controller = std::sync::Arc::new(Controller::new(Stdout::new()));
        let asking = {
            let c = controller.clone();
            tokio::spawn(async move { c.request(json!({"subtype": "can_use_tool"})).await })
        };
        // The request is registered before its line is written; wait for it.
        while controller.waiting.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let id = controller.waiting.lock().unwrap().keys().next().unwrap().clone();
        assert!(!controller.answer(&json!({"subtype": "success", "request_id": "other"})));
        assert!(controller.answer(&json!({"subtype": "success", "request_id": id, "response": {"behavior": "allow"}})));
        assert_eq!(asking.await.unwrap(), Ok(json!({"behavior": "allow"})));

        let failing = {
            let c = controller.clone();
            tokio::spawn(async move { c.request(json!({"subtype": "hook_callback"})).await })
        };
        while controller.waiting.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        controller.close();
        assert_eq!(failing.await.unwrap(), Err(PeerError::ClosedBeforeAnswer));
        assert_eq!(controller.request(json!({})).await, Err(PeerError::Closed));
        assert_eq!(PeerError::ClosedBeforeAnswer.to_string(), "the SDK's input closed before it answered");
        assert_eq!(PeerError::Closed.to_string(), "the SDK's input is closed: nobody can answer");
    }
}
