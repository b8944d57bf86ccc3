//! The table file as written: the serde shape of `transitions/loop.toml`, which
//! [`super::check`] checks for the build script, the engine's loader and the auditor alike.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// What kind of node a state is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    /// A leaf the machine can be in.
    Leaf,
    /// A grouping state; edges from it apply to every state below it.
    Superstate,
    /// The final state.
    Terminal,
}

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTable {
    /// The format version (`schema = 1`).
    pub schema: Spanned<u32>,
    /// The state a run starts in.
    pub initial: String,
    /// `[[state]]`, in file order.
    #[serde(default)]
    pub state: Vec<Spanned<RawState>>,
    /// `[[event]]`, in file order.
    #[serde(default)]
    pub event: Vec<Spanned<RawEvent>>,
    /// `[[fact]]`, in file order.
    #[serde(default)]
    pub fact: Vec<Spanned<RawFact>>,
    /// `[[counter]]`, in file order.
    #[serde(default)]
    pub counter: Vec<Spanned<RawCounter>>,
    /// `[termination]`, if given.
    #[serde(default)]
    pub termination: Option<Spanned<RawTermination>>,
    /// `[[reason]]`, in file order.
    #[serde(default)]
    pub reason: Vec<Spanned<RawReason>>,
    /// `[[edge]]`, in file order.
    #[serde(default)]
    pub edge: Vec<Spanned<RawEdge>>,
}

/// One `[[state]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// The state's name, as in the trace.
    pub name: String,
    /// Leaf (the default), superstate or terminal.
    #[serde(default)]
    pub kind: Option<StateKind>,
    /// The enclosing superstate.
    #[serde(default)]
    pub parent: Option<String>,
    /// What the state does.
    #[serde(default)]
    pub doc: String,
}

/// One `[[reason]]`: a continue or terminal reason edges may name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReason {
    /// The reason's name, as edges and the trace give it.
    pub name: String,
    /// Continue or terminal.
    pub kind: RawReasonKind,
    /// For a terminal reason, the exit status of a run that ends with it.
    #[serde(default)]
    pub exit_code: Option<u8>,
    /// What it means.
    #[serde(default)]
    pub doc: String,
}

/// Whether a reason continues the loop or ends it.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawReasonKind {
    /// The loop goes round again.
    Continue,
    /// The run ends.
    Terminal,
}

/// One `[[event]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvent {
    /// The event's name, as edges give it in `on`.
    pub name: String,
    /// What it means.
    #[serde(default)]
    pub doc: String,
}

/// One `[[fact]]`; `values` is empty for a boolean fact.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFact {
    /// The fact's name, as guards read it.
    pub name: String,
    /// The values of an enumerated fact; empty for a boolean one.
    #[serde(default)]
    pub values: Vec<String>,
    /// What it means.
    #[serde(default)]
    pub doc: String,
    /// The fact can hold only when a run starts: every edge into the initial state sets it,
    /// and the start leaves it to the handler (a resumed session's cut tool phase).
    #[serde(default)]
    pub start_only: bool,
}

/// One `[[counter]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCounter {
    /// The counter's name; guards read it as `NAME_left`.
    pub name: String,
    /// The default bound.
    pub bound: u32,
    /// The run option that overrides the bound, if any.
    #[serde(default)]
    pub option: Option<String>,
    /// Taken off the bound at the start of a run.
    #[serde(default)]
    pub spent_at_start: u32,
    /// What it bounds.
    #[serde(default)]
    pub doc: String,
}

/// The `[termination]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawTermination {
    /// The counters of the termination ranking, highest first.
    #[serde(default)]
    pub ranking: Vec<String>,
}

/// One `[[edge]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEdge {
    /// The edge's unique id, as in the trace.
    pub id: String,
    /// The state it leaves (a leaf or a superstate).
    pub from: String,
    /// The event it fires on.
    pub on: String,
    /// The guard expression, if any.
    #[serde(default)]
    pub guard: Option<String>,
    /// The state it enters.
    pub to: String,
    /// `continue = "..."`: the continue reason it names.
    #[serde(default, rename = "continue")]
    pub continue_reason: Option<String>,
    /// `terminal = "..."`: the terminal reason it names.
    #[serde(default)]
    pub terminal: Option<String>,
    /// Counters it decrements.
    #[serde(default)]
    pub consumes: Vec<String>,
    /// Counters it restores to their bound.
    #[serde(default)]
    pub resets: Vec<String>,
    /// Facts it establishes for the state it enters.
    #[serde(default)]
    pub sets: Option<Spanned<BTreeMap<String, toml::Value>>>,
    /// The note a front end shows while the edge's target works: `""` clears the one shown,
    /// none keeps it.
    #[serde(default)]
    pub status: Option<String>,
    /// Taking the edge drops the reply attempt streamed so far, so a front end erases its text.
    #[serde(default)]
    pub abandons_reply: bool,
    /// What it means.
    #[serde(default)]
    pub doc: String,
}
