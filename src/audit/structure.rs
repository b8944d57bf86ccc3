//! Structure checks: the raw pass that reports every declaration problem with a code (where
//! [`Table::load`] stops at the first), and the checks on a loaded table (reasons declared,
//! targets, terminal edges, dead ends).

use std::collections::{BTreeMap, BTreeSet};

use crate::audit::finding::{Code, Finding, Location};
use crate::engine::guard::{Guard, GuardError};
use crate::engine::raw::{RawReasonKind, RawTable};
use crate::engine::reason::{ContinueReason, TerminalReason};
use crate::engine::table::{EdgeKind, ReasonDecl, StateKind, Table, check_schema, set_value};

/// The table cannot be audited at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// File name.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The file is not TOML of the table format; the message names the line.
    #[error("{path}: {message}")]
    Toml {
        /// File name.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// The file cannot be audited at all: an unknown schema version, a guard nested past
    /// [`crate::engine::guard::MAX_GUARD_DEPTH`], an empty trace.
    #[error("{path}, line {line}: {message}")]
    Unusable {
        /// File name.
        path: String,
        /// The line of the problem.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The line of the first top-level `key = ...`, if any.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines().position(|l| l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='))).map(|i| i + 1)
}

/// Parse `text` leniently and report every declaration problem.
///
/// The deserializer itself still rejects text that is not TOML, lacks `schema` or `initial`,
/// or has unknown keys; those make the input unusable, and so do a `schema` other than
/// [`crate::engine::table::SCHEMA`] and a guard nested too deep to analyse.
///
/// # Errors
/// [`InputError::Toml`] or [`InputError::Unusable`] naming the line.
pub fn raw_findings(path: &str, text: &str) -> Result<Vec<Finding>, InputError> {
    let raw: RawTable = toml::from_str(text)
        .map_err(|e| InputError::Toml { path: path.to_owned(), message: e.to_string().trim_end().to_owned() })?;
    check_raw(&raw, path, text)
}

/// The declaration rules of the table format, on a parsed file: the one implementation
/// [`raw_findings`] and [`crate::engine::table::Table::load`] share.
///
/// # Errors
/// [`InputError::Unusable`] for a schema version other than
/// [`crate::engine::table::SCHEMA`] or a guard nested too deep to analyse.
pub(crate) fn check_raw(raw: &RawTable, path: &str, text: &str) -> Result<Vec<Finding>, InputError> {
    let unusable = |offset: usize, message: String| InputError::Unusable {
        path: path.to_owned(),
        line: line_of(text, offset),
        message,
    };
    check_schema(*raw.schema.get_ref()).map_err(|m| unusable(raw.schema.span().start, m))?;
    for spanned in &raw.edge {
        let e = spanned.get_ref();
        if let Some(guard) = &e.guard
            && let Err(err @ GuardError::TooDeep) = Guard::parse(guard)
        {
            return Err(unusable(spanned.span().start, format!("edge `{}`: {err}", e.id)));
        }
    }
    let mut out = Vec::new();
    let loc = |offset: usize| Location::at(path, Some(line_of(text, offset)));

    let mut states: BTreeMap<&str, (Option<StateKind>, Option<&str>)> = BTreeMap::new();
    for s in &raw.state {
        let st = s.get_ref();
        if states.insert(&st.name, (st.kind, st.parent.as_deref())).is_some() {
            let m = format!("state `{}` is declared twice", st.name);
            out.push(Finding::new(Code::DuplicateName, m, loc(s.span().start).state(&st.name)));
        }
    }
    for s in &raw.state {
        let st = s.get_ref();
        let Some(parent) = &st.parent else { continue };
        match states.get(parent.as_str()) {
            None => {
                let m = format!("state `{}` has unknown parent `{parent}`", st.name);
                out.push(Finding::new(Code::UnknownParent, m, loc(s.span().start).state(&st.name)));
            }
            Some((Some(StateKind::Superstate), _)) => {}
            Some(_) => {
                let m = format!("parent `{parent}` of `{}` is not a superstate", st.name);
                out.push(Finding::new(Code::ParentNotSuperstate, m, loc(s.span().start).state(&st.name)));
            }
        }
        let mut seen = BTreeSet::from([st.name.as_str()]);
        let mut current = Some(parent.as_str());
        while let Some(p) = current {
            if !seen.insert(p) {
                let m = format!("the parent chain of `{}` loops through `{p}`", st.name);
                out.push(Finding::new(Code::ParentCycle, m, loc(s.span().start).state(&st.name)));
                break;
            }
            current = states.get(p).and_then(|(_, pp)| *pp);
        }
    }
    let initial_loc = Location::at(path, key_line(text, "initial"));
    match states.get(raw.initial.as_str()) {
        None => {
            let m = format!("initial state `{}` is not declared", raw.initial);
            out.push(Finding::new(Code::UnknownInitial, m, initial_loc));
        }
        Some((None | Some(StateKind::Leaf), _)) => {}
        Some((Some(StateKind::Superstate | StateKind::Terminal), _)) => {
            let m = format!("initial state `{}` is not a leaf state", raw.initial);
            out.push(Finding::new(Code::InitialNotLeaf, m, initial_loc.state(&raw.initial)));
        }
    }

    let mut facts: BTreeMap<&str, &[String]> = BTreeMap::new();
    let mut counters = BTreeSet::new();
    let mut events = BTreeSet::new();
    let mut duplicate = |what: &str, name: &str, offset: usize| {
        let m = format!("{what} `{name}` is declared twice");
        out.push(Finding::new(Code::DuplicateName, m, loc(offset)));
    };
    for e in &raw.event {
        if !events.insert(e.get_ref().name.as_str()) {
            duplicate("event", &e.get_ref().name, e.span().start);
        }
    }
    for f in &raw.fact {
        if facts.insert(&f.get_ref().name, &f.get_ref().values).is_some() {
            duplicate("fact", &f.get_ref().name, f.span().start);
        }
    }
    for c in &raw.counter {
        if !counters.insert(c.get_ref().name.as_str()) {
            duplicate("counter", &c.get_ref().name, c.span().start);
        }
    }
    if let Some(term) = &raw.termination {
        for name in &term.get_ref().ranking {
            if !counters.contains(name.as_str()) {
                let m = format!("the ranking names unknown counter `{name}`");
                out.push(Finding::new(Code::UnknownCounter, m, loc(term.span().start)));
            }
        }
    }

    // The reasons edges may name: those declared, or every reason the engine knows.
    let engine_reasons = ReasonDecl::engine();
    let mut reasons: BTreeMap<&str, bool> = BTreeMap::new();
    for r in &raw.reason {
        let decl = r.get_ref();
        let at = loc(r.span().start);
        let terminal = decl.kind == RawReasonKind::Terminal;
        if reasons.insert(&decl.name, terminal).is_some() {
            out.push(Finding::new(
                Code::DuplicateName,
                format!("reason `{}` is declared twice", decl.name),
                at.clone(),
            ));
        }
        let known = if terminal {
            TerminalReason::parse(&decl.name).map(|r| Some(r.exit_code()))
        } else {
            ContinueReason::parse(&decl.name).map(|_| None)
        };
        let kind = if terminal { "terminal" } else { "continue" };
        match (known, decl.exit_code) {
            (None, _) => {
                let m = format!("the engine has no {kind} reason `{}`", decl.name);
                out.push(Finding::new(Code::UnknownReason, m, at));
            }
            (Some(Some(_)), None) => {
                let m = format!("terminal reason `{}` needs an exit_code", decl.name);
                out.push(Finding::new(Code::BadReason, m, at));
            }
            (Some(Some(engine)), Some(code)) if engine != code => {
                let m = format!(
                    "terminal reason `{}` has exit_code {code}, but the engine exits {engine} with it",
                    decl.name
                );
                out.push(Finding::new(Code::BadReason, m, at));
            }
            (Some(None), Some(_)) => {
                let m = format!("continue reason `{}` cannot have an exit_code", decl.name);
                out.push(Finding::new(Code::BadReason, m, at));
            }
            (Some(_), _) => {}
        }
    }
    if raw.reason.is_empty() {
        reasons.extend(engine_reasons.iter().map(|r| (r.name.as_str(), r.terminal)));
    }

    let mut ids = BTreeSet::new();
    for spanned in &raw.edge {
        let e = spanned.get_ref();
        let at = loc(spanned.span().start).edge(&e.id);
        if !ids.insert(e.id.as_str()) {
            out.push(Finding::new(Code::DuplicateEdgeId, format!("edge id `{}` is declared twice", e.id), at.clone()));
        }
        for (what, state) in [("from", &e.from), ("to", &e.to)] {
            if !states.contains_key(state.as_str()) {
                let m = format!("edge `{}`: `{what}` names unknown state `{state}`", e.id);
                out.push(Finding::new(Code::UnknownState, m, at.clone()));
            }
        }
        if !events.contains(e.on.as_str()) {
            let m = format!("edge `{}`: unknown event `{}`", e.id, e.on);
            out.push(Finding::new(Code::UnknownEvent, m, at.clone()));
        }
        for c in e.consumes.iter().chain(&e.resets) {
            if !counters.contains(c.as_str()) {
                out.push(Finding::new(
                    Code::UnknownCounter,
                    format!("edge `{}`: unknown counter `{c}`", e.id),
                    at.clone(),
                ));
            }
        }
        if e.continue_reason.is_some() && e.terminal.is_some() {
            let m = format!("edge `{}` is both a continue and a terminal edge", e.id);
            out.push(Finding::new(Code::ContinueAndTerminal, m, at.clone()));
        }
        if let Some(r) = e.continue_reason.as_deref().filter(|r| reasons.get(r) != Some(&false)) {
            let m = format!("edge `{}`: unknown continue reason `{r}`", e.id);
            out.push(Finding::new(Code::UnknownReason, m, at.clone()));
        }
        if let Some(r) = e.terminal.as_deref().filter(|r| reasons.get(r) != Some(&true)) {
            let m = format!("edge `{}`: unknown terminal reason `{r}`", e.id);
            out.push(Finding::new(Code::UnknownReason, m, at.clone()));
        }
        if let Some(text) = &e.guard
            && let Err(problem) = check_guard(text, &facts, &counters)
        {
            out.push(Finding::new(Code::BadGuard, format!("edge `{}`: {problem}", e.id), at.clone()));
        }
        if let Some(sets) = &e.sets {
            for (name, value) in sets.get_ref() {
                if let Err(problem) = set_value(name, facts.get(name.as_str()).copied(), value) {
                    let at = loc(sets.span().start).edge(&e.id);
                    out.push(Finding::new(Code::BadSets, format!("edge `{}`: {problem}", e.id), at));
                }
            }
        }
    }
    Ok(out)
}

fn check_guard(text: &str, facts: &BTreeMap<&str, &[String]>, counters: &BTreeSet<&str>) -> Result<(), String> {
    let guard = Guard::parse(text).map_err(|e| e.to_string())?;
    for (name, values) in guard.atoms() {
        if let Some(declared) = facts.get(name.as_str()) {
            if let Some(v) = values.iter().find(|v| !declared.contains(v)) {
                return Err(format!("`{v}` is not a value of fact `{name}`"));
            }
            if declared.is_empty() != values.is_empty() {
                let how = if declared.is_empty() { "boolean, not compared" } else { "enumerated, compared with `==`" };
                return Err(format!("fact `{name}` must be used {how}"));
            }
        } else if !name.strip_suffix("_left").is_some_and(|c| counters.contains(c)) {
            return Err(format!("guard reads `{name}`, which is neither a fact nor `COUNTER_left`"));
        }
    }
    Ok(())
}

/// Checks on a loaded table: every reason declared, edge targets and terminal edges well
/// formed, and no non-terminal leaf without outgoing edges.
pub fn table_findings(table: &Table, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let edge_loc = |e: &crate::engine::table::EdgeDecl| Location::at(path, Some(e.line)).edge(&e.id);
    for r in &table.reasons {
        if !table.edges.iter().any(|e| e.kind.reason() == Some(r.name.as_str())) {
            let (code, kind) = if r.terminal {
                (Code::MissingTerminalReason, "terminal")
            } else {
                (Code::MissingContinueReason, "continue")
            };
            let m = format!("{kind} reason `{}` has no edge", r.name);
            out.push(Finding::new(code, m, Location::at(path, None)));
        }
    }
    let kind_of = |name: &str| table.state(name).map(|s| s.kind);
    for e in &table.edges {
        let to = kind_of(&e.to);
        if to == Some(StateKind::Superstate) {
            let m = format!("edge `{}` targets superstate `{}`; targets must be leaf or terminal states", e.id, e.to);
            out.push(Finding::new(Code::TargetNotLeaf, m, edge_loc(e)));
        }
        let terminal_edge = matches!(e.kind, EdgeKind::Terminal(_));
        if terminal_edge != (to == Some(StateKind::Terminal)) {
            let m = if terminal_edge {
                format!("terminal edge `{}` leads to `{}`, which is not a terminal state", e.id, e.to)
            } else {
                format!("edge `{}` enters terminal state `{}` without a terminal reason", e.id, e.to)
            };
            out.push(Finding::new(Code::TerminalMismatch, m, edge_loc(e)));
        }
        if kind_of(&e.from) == Some(StateKind::Terminal) {
            let m = format!("edge `{}` leaves terminal state `{}`", e.id, e.from);
            out.push(Finding::new(Code::EdgeFromTerminal, m, edge_loc(e)));
        }
    }
    for s in table.states.iter().filter(|s| s.kind == StateKind::Leaf) {
        let ancestry = table.ancestry(&s.name);
        if !table.edges.iter().any(|e| ancestry.contains(&e.from.as_str())) {
            let m = format!("state `{}` is not terminal but has no outgoing edge", s.name);
            out.push(Finding::new(Code::DeadEnd, m, Location::at(path, Some(s.line)).state(&s.name)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[event]]\nname = \"go\"\n";

    fn codes(text: &str) -> Vec<&'static str> {
        raw_findings("t.toml", text).unwrap().iter().map(|f| f.code.as_str()).collect()
    }

    #[test]
    fn reports_every_declaration_problem_with_its_line() {
        let text = format!(
            "{HEAD}[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"go\"\nto = \"B\"\n\n[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"jump\"\nguard = \"mystery\"\nto = \"A\"\ncontinue = \"again\"\n"
        );
        let found = raw_findings("t.toml", &text).unwrap();
        let lines: Vec<(&str, Option<usize>)> = found.iter().map(|f| (f.code.as_str(), f.location.line)).collect();
        assert_eq!(
            lines,
            vec![
                ("E_UNKNOWN_STATE", Some(7)),
                ("E_DUPLICATE_EDGE_ID", Some(13)),
                ("E_UNKNOWN_EVENT", Some(13)),
                ("E_UNKNOWN_REASON", Some(13)),
                ("E_BAD_GUARD", Some(13)),
            ]
        );
        assert_eq!(found[0].message, "edge `x`: `to` names unknown state `B`");
    }

    #[test]
    fn checks_states_and_initial() {
        let text = "schema = 1\ninitial = \"S\"\n[[state]]\nname = \"S\"\nkind = \"superstate\"\nparent = \"T\"\n[[state]]\nname = \"T\"\nkind = \"superstate\"\nparent = \"S\"\n[[state]]\nname = \"L\"\nparent = \"Q\"\n";
        assert_eq!(codes(text), vec!["E_PARENT_CYCLE", "E_PARENT_CYCLE", "E_UNKNOWN_PARENT", "E_INITIAL_NOT_LEAF"]);
        let err = raw_findings("t.toml", "schema = 1\ninitial = \"A\"\n[[state]]\nname = 3\n").unwrap_err();
        assert!(err.to_string().contains("line 4"), "{err}");
    }
}
