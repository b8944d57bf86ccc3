//! The table file as written: the serde shape of `transitions/loop.toml`, read both by the
//! engine's loader ([`crate::engine::table::Table::load`], which stops at the first problem)
//! and by the auditor's raw pass (which reports every problem with a code and a line).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::engine::table::StateKind;

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTable {
    pub(crate) schema: Spanned<u32>,
    pub(crate) initial: String,
    #[serde(default)]
    pub(crate) state: Vec<Spanned<RawState>>,
    #[serde(default)]
    pub(crate) event: Vec<Spanned<RawEvent>>,
    #[serde(default)]
    pub(crate) fact: Vec<Spanned<RawFact>>,
    #[serde(default)]
    pub(crate) counter: Vec<Spanned<RawCounter>>,
    #[serde(default)]
    pub(crate) termination: Option<Spanned<RawTermination>>,
    #[serde(default)]
    pub(crate) reason: Vec<Spanned<RawReason>>,
    #[serde(default)]
    pub(crate) edge: Vec<Spanned<RawEdge>>,
}

/// One `[[state]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawState {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) kind: Option<StateKind>,
    #[serde(default)]
    pub(crate) parent: Option<String>,
    #[serde(default)]
    pub(crate) doc: String,
}

/// One `[[reason]]`: a continue or terminal reason edges may name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReason {
    pub(crate) name: String,
    pub(crate) kind: RawReasonKind,
    #[serde(default)]
    pub(crate) exit_code: Option<u8>,
    #[serde(default)]
    pub(crate) doc: String,
}

/// Whether a reason continues the loop or ends it.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RawReasonKind {
    Continue,
    Terminal,
}

/// One `[[event]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEvent {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) doc: String,
}

/// One `[[fact]]`; `values` is empty for a boolean fact.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFact {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) values: Vec<String>,
    #[serde(default)]
    pub(crate) doc: String,
}

/// One `[[counter]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCounter {
    pub(crate) name: String,
    pub(crate) bound: u32,
    #[serde(default)]
    pub(crate) option: Option<String>,
    #[serde(default)]
    pub(crate) spent_at_start: u32,
    #[serde(default)]
    pub(crate) doc: String,
}

/// The `[termination]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTermination {
    #[serde(default)]
    pub(crate) ranking: Vec<String>,
}

/// One `[[edge]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEdge {
    pub(crate) id: String,
    pub(crate) from: String,
    pub(crate) on: String,
    #[serde(default)]
    pub(crate) guard: Option<String>,
    pub(crate) to: String,
    #[serde(default, rename = "continue")]
    pub(crate) continue_reason: Option<String>,
    #[serde(default)]
    pub(crate) terminal: Option<String>,
    #[serde(default)]
    pub(crate) consumes: Vec<String>,
    #[serde(default)]
    pub(crate) resets: Vec<String>,
    #[serde(default)]
    pub(crate) sets: Option<Spanned<BTreeMap<String, toml::Value>>>,
    #[serde(default)]
    pub(crate) doc: String,
}
