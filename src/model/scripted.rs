//! The scripted model: answers each request with the next reply of a [`Scenario`], streamed
//! exactly as the Anthropic API streams it, so everything after the model is the code that
//! runs against the real API.
//!
//! It serves main requests from `responses` and side requests from `aux`, checks each reply's
//! `expect` against the request, turns `error` into an HTTP or SSE failure, drops or truncates
//! streams on request, and simulates Ctrl+C (`abort`) by cancelling the run's token. The event
//! shapes live in `events`; the `expect` checks in `expect`.

mod events;
mod expect;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::model::{EventStream, Model, ModelError, ModelRequest, Purpose, ReplyStream, reply};
use crate::scenario::{AbortPhase, AbortSpec, Scenario, ScriptedResponse};

use events::Plan;

/// A [`Model`] that plays a scenario's replies in order.
#[derive(Debug)]
pub struct ScriptedModel {
    /// Replies to main requests.
    responses: Vec<ScriptedResponse>,
    /// Replies to side requests.
    aux: Vec<ScriptedResponse>,
    /// The subagents' scripts: `(prompt, replies)`.
    subagents: Vec<(String, Vec<ScriptedResponse>)>,
    /// The simulated Ctrl+C, if any.
    abort: Option<AbortSpec>,
    /// The run's token, cancelled by `abort`.
    cancel: CancellationToken,
    /// Whether the log keeps every request (for tests); otherwise each is checked and dropped.
    keep_requests: bool,
    /// What was received and served. A std mutex: it is never held across an await (every
    /// request is handled synchronously before its stream is returned).
    log: Mutex<Log>,
}

#[derive(Debug, Default)]
struct Log {
    /// Every request received, in order. Cheap to keep: a request shares its messages with
    /// the engine's history (pointers, not copies).
    requests: Vec<(Purpose, ModelRequest)>,
    /// Main requests received.
    main_received: usize,
    /// Aux requests received.
    aux_received: usize,
    /// Main replies served.
    main_served: usize,
    /// Aux replies served.
    aux_served: usize,
    /// Index of the most recent main reply served.
    last_main: Option<usize>,
    /// Replies served from each subagent's script.
    subagents_served: Vec<usize>,
}

/// Which list of replies a request is answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Main,
    Aux,
    /// The script of `subagents[k]`.
    Subagent(usize),
}

impl ScriptedModel {
    /// A model playing `scenario`; `cancel` is the run's token, which `abort` cancels.
    pub fn new(scenario: &Scenario, cancel: CancellationToken) -> Self {
        ScriptedModel {
            responses: scenario.responses.clone(),
            aux: scenario.aux.clone(),
            subagents: scenario.subagents.iter().map(|s| (s.prompt.clone(), s.responses.clone())).collect(),
            abort: scenario.abort,
            cancel,
            keep_requests: true,
            log: Mutex::new(Log { subagents_served: vec![0; scenario.subagents.len()], ..Log::default() }),
        }
    }

    /// The same model, but one that keeps no request: each is checked against its reply's
    /// `expect` and dropped, so a long run holds nothing per request (the CLI's runs).
    /// [`ScriptedModel::requests`] then returns nothing.
    pub fn forgetting_requests(mut self) -> Self {
        self.keep_requests = false;
        self
    }

    /// Every request received so far, in order, with its purpose (none if the model was made
    /// with [`ScriptedModel::forgetting_requests`]).
    pub fn requests(&self) -> Vec<(Purpose, ModelRequest)> {
        self.lock().requests.clone()
    }

    /// How many replies were served so far: `(main, aux)`.
    pub fn served(&self) -> (usize, usize) {
        let log = self.lock();
        (log.main_served, log.aux_served)
    }

    /// The engine calls this when a tool phase begins. With `abort` in phase `tools`, it
    /// cancels the run's token if the most recent main reply served is the abort's reply.
    pub fn tool_phase_started(&self) {
        let last_main = self.lock().last_main;
        if let Some(AbortSpec { response, phase: AbortPhase::Tools }) = self.abort
            && last_main == Some(response)
        {
            self.cancel.cancel();
        }
    }

    /// The engine calls this when the Stop hooks of an end of turn begin. With `abort` in
    /// phase `stop_hooks`, it cancels the run's token if the most recent main reply served is
    /// the abort's reply.
    pub fn stop_hooks_started(&self) {
        let last_main = self.lock().last_main;
        if let Some(AbortSpec { response, phase: AbortPhase::StopHooks }) = self.abort
            && last_main == Some(response)
        {
            self.cancel.cancel();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        // The log stays consistent even if a holder panicked: every update is a single push or add.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many replies each subagent's script served so far, in script order.
    pub fn subagents_served(&self) -> Vec<usize> {
        self.lock().subagents_served.clone()
    }

    /// The list `request` is answered from: a subagent's when its first message is that
    /// script's prompt.
    fn route(&self, request: &ModelRequest) -> Route {
        if request.purpose == Purpose::Aux {
            return Route::Aux;
        }
        let first = request.messages.first().map(|m| m.text()).unwrap_or_default();
        match self.subagents.iter().position(|(prompt, _)| *prompt == first) {
            Some(k) => Route::Subagent(k),
            None => Route::Main,
        }
    }

    /// Log `request` and take the next reply of its list: `(route, index, reply)`.
    fn take(&self, request: &ModelRequest) -> Result<(Route, usize, &ScriptedResponse), ModelError> {
        let purpose = request.purpose;
        let route = self.route(request);
        let mut log = self.lock();
        if self.keep_requests {
            log.requests.push((purpose, request.clone()));
        }
        let received = match purpose {
            Purpose::Main => &mut log.main_received,
            Purpose::Aux => &mut log.aux_received,
        };
        *received += 1;
        let ordinal = *received;
        let (list, served, what) = match route {
            Route::Main => (&self.responses, &mut log.main_served, "responses".to_owned()),
            Route::Aux => (&self.aux, &mut log.aux_served, "aux responses".to_owned()),
            Route::Subagent(k) => {
                (&self.subagents[k].1, &mut log.subagents_served[k], format!("responses of subagents[{k}]"))
            }
        };
        let index = *served;
        let Some(response) = list.get(index) else {
            return Err(ModelError::Script(format!(
                "{} request {ordinal} is past the end of the script ({} {what})",
                label_of(purpose),
                list.len()
            )));
        };
        *served += 1;
        if route == Route::Main {
            log.last_main = Some(index);
        }
        Ok((route, index, response))
    }

    /// Move past the reply `request` would be answered with, as if it had been served.
    fn skip(&self, request: &ModelRequest) {
        let route = self.route(request);
        let mut log = self.lock();
        match route {
            Route::Main => {
                log.main_received += 1;
                log.last_main = Some(log.main_served);
                log.main_served += 1;
            }
            Route::Aux => {
                log.aux_received += 1;
                log.aux_served += 1;
            }
            Route::Subagent(k) => log.subagents_served[k] += 1,
        }
    }

    /// Everything of [`Model::stream`] but the future: the reply's owned events.
    fn answer(&self, request: ModelRequest) -> Result<EventStream, ModelError> {
        let (route, index, response) = self.take(&request)?;
        let (label, ids) = match route {
            Route::Main => (format!("responses[{index}]"), index.to_string()),
            Route::Aux => (format!("aux[{index}]"), format!("aux_{index}")),
            Route::Subagent(k) => (format!("subagents[{k}].responses[{index}]"), format!("s{k}_{index}")),
        };
        if let Some(expect) = &response.expect {
            expect::check(&label, expect, &request)?;
        }
        let blocks =
            response.blocks().map_err(|(b, why)| ModelError::Script(format!("{label}.content[{b}]: {why}")))?;
        if let Some(error) = response.error.as_ref().filter(|e| e.after_blocks.is_none()) {
            let Some(status) = error.status else {
                return Err(ModelError::Script(format!("{label}.error needs `status` or `after_blocks`")));
            };
            return Err(ModelError::Http {
                status,
                kind: error.kind.clone(),
                message: error.message.clone(),
                request_id: Some(format!("req_scripted_{ids}")),
                retry_after: error.retry_after_s.map(Duration::from_secs),
            });
        }
        let plan = Plan {
            message_id: format!("msg_scripted_{ids}"),
            tool_id_prefix: format!("toolu_scripted_{ids}"),
            model: request.model.clone(),
            input_tokens: match response.usage.and_then(|u| u.input_tokens) {
                Some(n) => n,
                None => estimate_input_tokens(&request),
            },
            cache: response.usage.map_or((None, None), |u| (u.cache_creation_input_tokens, u.cache_read_input_tokens)),
            abort_after_first_block: route == Route::Main
                && self.abort == Some(AbortSpec { response: index, phase: AbortPhase::Stream }),
            max_tokens: request.max_tokens,
        };
        let items = events::build(response, &blocks, &plan);
        Ok(events::into_stream(items, Duration::from_millis(response.chunk_delay_ms), self.cancel.clone()))
    }
}

impl Model for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>> {
        Box::pin(std::future::ready(self.answer(request).map(reply::from_events)))
    }

    fn replayed(&self, request: &ModelRequest) {
        self.skip(request);
    }
}

fn label_of(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::Main => "main",
        Purpose::Aux => "aux",
    }
}

/// Prompt tokens of `request`, estimated as its characters (system and messages) over four.
fn estimate_input_tokens(request: &ModelRequest) -> u64 {
    let system = request.system.len() + request.system_context.as_ref().map_or(0, |c| c.len() + 2);
    ((system + request.messages.chars()) / 4) as u64
}

#[cfg(test)]
mod tests;
