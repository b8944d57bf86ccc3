//! The declaration rules of the table format: every problem reported with a code and a line
//! (where a loader would stop at the first). The build script runs them before it generates a
//! name, `Table::load` before it resolves a table, and `audit` before its deeper proofs, so a
//! bad table is refused with the same finding wherever it is read.

use std::collections::{BTreeMap, BTreeSet};

use super::finding::{Code, Finding, Location};
use super::format::{RawReasonKind, RawTable, StateKind};
use super::guard::{FactValue, Guard, GuardError};

/// The table format version this reader reads.
pub const SCHEMA: u32 = 1;

/// Refuse a table written for another format version: its keys may mean something else.
///
/// # Errors
/// [`UnknownSchema`], naming both versions.
pub fn check_schema(schema: u32) -> Result<(), UnknownSchema> {
    if schema == SCHEMA { Ok(()) } else { Err(UnknownSchema(schema)) }
}

/// A table written for a format version this build does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown table schema {0}: this agentloop reads schema {SCHEMA}")]
pub struct UnknownSchema(pub u32);

/// Why a guard does not fit the table's declarations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum GuardProblem {
    /// The text is not a guard.
    #[error(transparent)]
    Parse(#[from] crate::table::guard::GuardError),
    /// A compared value is not among the fact's values.
    #[error("`{value}` is not a value of fact `{fact}`")]
    NotAValue { fact: String, value: String },
    /// A boolean fact compared, or an enumerated one read bare.
    #[error("fact `{fact}` must be used {how}")]
    WrongUse { fact: String, how: &'static str },
    /// A name that is neither a fact nor `COUNTER_left`.
    #[error("guard reads `{0}`, which is neither a fact nor `COUNTER_left`")]
    Unknown(String),
}

/// Why a `sets` value does not fit its fact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetsProblem {
    /// No such fact is declared.
    #[error("`sets` names `{0}`, which is not a declared fact")]
    UnknownFact(String),
    /// A boolean fact given something else than `true` or `false`.
    #[error("`sets` gives boolean fact `{fact}` the value {value}; it takes true or false")]
    NotBoolean {
        /// The fact.
        fact: String,
        /// The value given, as TOML.
        value: String,
    },
    /// A string not among the fact's values.
    #[error("`sets` gives `{fact}` the value \"{value}\", which is not one of its values ({values})")]
    NotAValue {
        /// The fact.
        fact: String,
        /// The value given.
        value: String,
        /// The fact's values, quoted.
        values: String,
    },
    /// An enumerated fact given something else than a string.
    #[error("`sets` gives enumerated fact `{fact}` the value {value}; it takes one of {values}")]
    NotEnumerated {
        /// The fact.
        fact: String,
        /// The value given, as TOML.
        value: String,
        /// The fact's values, quoted.
        values: String,
    },
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The line of the first top-level `key = ...`, if any.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines().position(|l| l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='))).map(|i| i + 1)
}

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
    /// [`super::guard::MAX_GUARD_DEPTH`], an empty trace.
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

/// A reason the reader of the table knows, with the exit status it gives a terminal one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownReason<'a> {
    /// The reason's name.
    pub name: &'a str,
    /// A terminal reason (otherwise a continue reason).
    pub terminal: bool,
    /// For a terminal reason, the exit status.
    pub exit_code: Option<u8>,
}

/// Parse `text` as the table format.
///
/// # Errors
/// [`InputError::Toml`] for text that is not TOML, lacks `schema` or `initial`, or has unknown
/// keys; the parser's message names the line.
pub fn parse(path: &str, text: &str) -> Result<RawTable, InputError> {
    toml::from_str(text)
        .map_err(|e| InputError::Toml { path: path.to_owned(), message: e.to_string().trim_end().to_owned() })
}

/// Parse `text` leniently and report every declaration problem (see [`check_raw`]).
///
/// # Errors
/// [`InputError::Toml`] or [`InputError::Unusable`] naming the line.
pub fn raw_findings(path: &str, text: &str, known: Option<&[KnownReason<'_>]>) -> Result<Vec<Finding>, InputError> {
    check_raw(&parse(path, text)?, path, text, known)
}

/// The declaration rules of the table format, on a parsed file: the one implementation the
/// build script, the engine's loader and the auditor share. `known` is the reasons the reader
/// knows: a declared reason must be one of them (with the same exit status), and a table that
/// declares none may name them all. `None` (the build script, which generates the reasons
/// from the table) takes the declared reasons as they are.
///
/// # Errors
/// [`InputError::Unusable`] for a schema version other than [`SCHEMA`] or a guard nested too
/// deep to analyse.
pub fn check_raw(
    raw: &RawTable,
    path: &str,
    text: &str,
    known: Option<&[KnownReason<'_>]>,
) -> Result<Vec<Finding>, InputError> {
    let unusable = |offset: usize, message: String| InputError::Unusable {
        path: path.to_owned(),
        line: line_of(text, offset),
        message,
    };
    check_schema(*raw.schema.get_ref()).map_err(|e| unusable(raw.schema.span().start, e.to_string()))?;
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

    // The reasons edges may name: those declared, or, in a table that declares none, every
    // reason the caller knows. Whether an engine knows a declared reason is the engine
    // check's business, not the format's.
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
        if terminal && decl.exit_code.is_none() {
            let m = format!("terminal reason `{}` needs an exit_code", decl.name);
            out.push(Finding::new(Code::BadReason, m, at));
            continue;
        }
        if !terminal && decl.exit_code.is_some() {
            let m = format!("continue reason `{}` cannot have an exit_code", decl.name);
            out.push(Finding::new(Code::BadReason, m, at));
            continue;
        }
    }
    if raw.reason.is_empty() {
        reasons.extend(known.unwrap_or_default().iter().map(|r| (r.name, r.terminal)));
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

fn check_guard(text: &str, facts: &BTreeMap<&str, &[String]>, counters: &BTreeSet<&str>) -> Result<(), GuardProblem> {
    let guard = Guard::parse(text)?;
    for (name, values) in guard.atoms() {
        if let Some(declared) = facts.get(name.as_str()) {
            if let Some(v) = values.iter().find(|v| !declared.contains(v)) {
                return Err(GuardProblem::NotAValue { fact: name.clone(), value: v.clone() });
            }
            if declared.is_empty() != values.is_empty() {
                let how = if declared.is_empty() { "boolean, not compared" } else { "enumerated, compared with `==`" };
                return Err(GuardProblem::WrongUse { fact: name, how });
            }
        } else if !name.strip_suffix("_left").is_some_and(|c| counters.contains(c)) {
            return Err(GuardProblem::Unknown(name));
        }
    }
    Ok(())
}

/// The value an edge's `sets` gives fact `name`, checked against its declaration: `declared` is
/// the fact's `values` (empty for a boolean fact), `None` when no such fact is declared.
///
/// # Errors
/// [`SetsProblem`]: an unknown fact, a value of the wrong kind (a boolean fact takes `true` or
/// `false`, an enumerated one a string), or a string not among the values.
pub fn set_value(name: &str, declared: Option<&[String]>, value: &toml::Value) -> Result<FactValue, SetsProblem> {
    let Some(values) = declared else {
        return Err(SetsProblem::UnknownFact(name.to_owned()));
    };
    let quoted = || values.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ");
    let fact = name.to_owned();
    match (values.is_empty(), value) {
        (true, toml::Value::Boolean(b)) => Ok(FactValue::Bool(*b)),
        (true, other) => Err(SetsProblem::NotBoolean { fact, value: other.to_string() }),
        (false, toml::Value::String(v)) if values.contains(v) => Ok(FactValue::Value(v.clone())),
        (false, toml::Value::String(v)) => Err(SetsProblem::NotAValue { fact, value: v.clone(), values: quoted() }),
        (false, other) => Err(SetsProblem::NotEnumerated { fact, value: other.to_string(), values: quoted() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[event]]\nname = \"go\"\n";

    fn codes(text: &str) -> Vec<&'static str> {
        raw_findings("t.toml", text, None).unwrap().iter().map(|f| f.code.as_str()).collect()
    }

    #[test]
    fn reports_every_declaration_problem_with_its_line() {
        let text = format!(
            "{HEAD}[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"go\"\nto = \"B\"\n\n[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"jump\"\nguard = \"mystery\"\nto = \"A\"\ncontinue = \"again\"\n"
        );
        let found = raw_findings("t.toml", &text, None).unwrap();
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
        let err = raw_findings("t.toml", "schema = 1\ninitial = \"A\"\n[[state]]\nname = 3\n", None).unwrap_err();
        assert!(err.to_string().contains("line 4"), "{err}");
    }
}
