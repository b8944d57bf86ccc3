//! The typed view of `transitions/loop.toml`.
//!
//! [`Table::load`] parses the TOML, resolves names and rejects what the engine cannot run
//! (unknown states, events, facts or counters; duplicate ids; bad guards; unknown reasons;
//! `sets` that name an unknown fact or give it a value of the wrong kind).
//! The deeper proofs (reachability, termination, guard exclusivity) belong to `audit`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use toml::Spanned;

use crate::table::check::{self, InputError, KnownReason};
use crate::table::format::{RawReasonKind, RawTable};
use sha2::{Digest, Sha256};

use crate::engine::reason::{ContinueReason, TerminalReason};
use crate::table::guard::{Facts, Guard};

/// The shipped table, embedded at build time.
pub const SHIPPED_TABLE: &str = include_str!("../../transitions/loop.toml");

/// The shipped table, parsed once.
pub fn shipped() -> &'static Table {
    shipped_shared()
}

/// The shipped table, shared: what a run holds when no `--table` was given.
pub fn shipped_shared() -> &'static Arc<Table> {
    static TABLE: OnceLock<Arc<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Arc::new(Table::load("transitions/loop.toml", SHIPPED_TABLE).expect("the shipped table is valid"))
    })
}

pub use crate::table::check::{SCHEMA, check_schema, set_value};
pub use crate::table::format::StateKind;

/// One declared state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDecl {
    /// Name, as in the trace.
    pub name: String,
    /// Leaf, superstate or terminal.
    pub kind: StateKind,
    /// Enclosing superstate.
    pub parent: Option<String>,
    /// What the state does.
    pub doc: String,
    /// Line in the table file.
    pub line: usize,
}

/// One declared event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventDecl {
    /// Name.
    pub name: String,
    /// What it means.
    pub doc: String,
}

/// One declared fact that guards read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactDecl {
    /// Name.
    pub name: String,
    /// For enumerated facts, the values; empty for booleans.
    pub values: Vec<String>,
    /// What it means.
    pub doc: String,
    /// It can hold only when a run starts: every edge into the initial state sets it, and the
    /// start of a run leaves it to the handler.
    pub start_only: bool,
}

/// One declared counter: a bounded budget that edges consume and reset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterDecl {
    /// Name; guards read it as `NAME_left`.
    pub name: String,
    /// The default bound.
    pub bound: u32,
    /// The run option that overrides the bound, if any.
    pub option: Option<String>,
    /// Taken off the bound at the start of a run.
    pub spent_at_start: u32,
    /// What it bounds.
    pub doc: String,
}

/// One continue or terminal reason (`[[reason]]`). A table without a `[[reason]]` section
/// declares every reason the engine knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasonDecl {
    /// Name, as in `continue = "..."` / `terminal = "..."` and the trace.
    pub name: String,
    /// A terminal reason (otherwise a continue reason).
    pub terminal: bool,
    /// For a terminal reason, the exit status of a run that ends with it.
    pub exit_code: Option<u8>,
    /// What it means.
    pub doc: String,
}

impl ReasonDecl {
    /// The reasons the engine knows, as generated from the shipped table.
    pub fn engine() -> Vec<ReasonDecl> {
        let continues = ContinueReason::ALL.iter().map(|r| ReasonDecl {
            name: r.as_str().to_owned(),
            terminal: false,
            exit_code: None,
            doc: String::new(),
        });
        let terminals = TerminalReason::ALL.iter().map(|r| ReasonDecl {
            name: r.as_str().to_owned(),
            terminal: true,
            exit_code: Some(r.exit_code()),
            doc: String::new(),
        });
        continues.chain(terminals).collect()
    }

    /// `reasons` as the format's checks take them.
    pub fn known(reasons: &[ReasonDecl]) -> Vec<KnownReason<'_>> {
        reasons.iter().map(|r| KnownReason { name: &r.name, terminal: r.terminal, exit_code: r.exit_code }).collect()
    }
}

/// What taking an edge means for the run; the reason it names is [`EdgeDecl::reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// A step inside one turn (stream opened, retry, fallback, tools done, ...).
    Internal,
    /// A named continue transition.
    Continue,
    /// The end of the run.
    Terminal,
}

impl EdgeKind {
    /// `internal`, `continue` or `terminal`, as in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Internal => "internal",
            EdgeKind::Continue => "continue",
            EdgeKind::Terminal => "terminal",
        }
    }
}

/// One declared edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeDecl {
    /// Unique id, as in the trace.
    pub id: String,
    /// Source state (a leaf or a superstate).
    pub from: String,
    /// Event that triggers it.
    pub on: String,
    /// Guard text, if any.
    pub guard_text: Option<String>,
    /// Parsed guard.
    pub guard: Option<Guard>,
    /// Target state.
    pub to: String,
    /// Internal, continue or terminal.
    pub kind: EdgeKind,
    /// The continue or terminal reason it names (any declared one: whether this engine knows
    /// it is the engine check's business).
    pub reason: Option<String>,
    /// Counters decremented.
    pub consumes: Vec<String>,
    /// Counters restored to their bound.
    pub resets: Vec<String>,
    /// Facts the edge establishes for the state it enters (`sets = { fact = value }`): they
    /// hold until the next transition, and a handler there must not report them otherwise.
    pub sets: Facts,
    /// What the edge means.
    pub doc: String,
    /// Line in the table file.
    pub line: usize,
}

impl EdgeDecl {
    /// The terminal reason of a terminal edge, if this engine knows it.
    pub fn terminal_reason(&self) -> Option<TerminalReason> {
        (self.kind == EdgeKind::Terminal).then(|| self.reason.as_deref().and_then(TerminalReason::parse)).flatten()
    }

    /// The reason's name as this engine spells it (for the trace); `None` for an internal edge
    /// or a reason this engine does not know.
    pub fn engine_reason(&self) -> Option<&'static str> {
        let name = self.reason.as_deref()?;
        match self.kind {
            EdgeKind::Internal => None,
            EdgeKind::Continue => ContinueReason::parse(name).map(ContinueReason::as_str),
            EdgeKind::Terminal => TerminalReason::parse(name).map(TerminalReason::as_str),
        }
    }
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Format version.
    pub schema: u32,
    /// The state a run starts in.
    pub initial: String,
    /// States in file order.
    pub states: Vec<StateDecl>,
    /// Events in file order.
    pub events: Vec<EventDecl>,
    /// Facts in file order.
    pub facts: Vec<FactDecl>,
    /// Counters in file order.
    pub counters: Vec<CounterDecl>,
    /// The continue and terminal reasons edges may name.
    pub reasons: Vec<ReasonDecl>,
    /// The termination ranking, highest first.
    pub ranking: Vec<String>,
    /// Edges in file order.
    pub edges: Vec<EdgeDecl>,
    /// SHA-256 of the file text, hex.
    pub sha256: String,
}

/// Why a table cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The file is not valid TOML for the format.
    #[error("{path}: {message}")]
    Toml {
        /// File name.
        path: String,
        /// The parser's message (it names the line).
        message: String,
    },
    /// Declarations refer to something undeclared or break a rule of the format.
    #[error("{}", problems.iter().map(|(line, m)| format!("{path}:{line}: {m}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// File name.
        path: String,
        /// Each problem's line and message, in file order.
        problems: Vec<(usize, String)>,
    },
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

impl Table {
    /// Parse a table and check it with the format's declaration rules
    /// ([`crate::table::check::check_raw`], the one implementation the build script and the
    /// auditor share) and the engine's reasons, then resolve it. `path` is only used in messages.
    ///
    /// # Errors
    /// [`TableError`] naming the file, and the line of every problem.
    pub fn load(path: &str, text: &str) -> Result<Table, TableError> {
        let raw: RawTable = toml::from_str(text)
            .map_err(|e| TableError::Toml { path: path.to_owned(), message: e.to_string().trim_end().to_owned() })?;
        let engine = ReasonDecl::engine();
        let known = ReasonDecl::known(&engine);
        let findings = check::check_raw(&raw, path, text, Some(&known)).map_err(|e| match e {
            InputError::Unusable { path, line, message } => {
                TableError::Invalid { path, problems: vec![(line, message)] }
            }
            InputError::Toml { path, message } | InputError::Read { path, message } => {
                TableError::Toml { path, message }
            }
        })?;
        if !findings.is_empty() {
            let problems = findings.into_iter().map(|f| (f.location.line.unwrap_or(1), f.message)).collect();
            return Err(TableError::Invalid { path: path.to_owned(), problems });
        }
        Ok(Table::resolve(raw, text))
    }

    /// Build the typed table from a raw one the structural pass accepted: every name it
    /// refers to is declared, every guard parses, every `sets` value fits its fact.
    fn resolve(raw: RawTable, text: &str) -> Table {
        let states: Vec<StateDecl> = raw
            .state
            .into_iter()
            .map(|s| {
                let line = line_of(text, s.span().start);
                let s = s.into_inner();
                StateDecl { name: s.name, kind: s.kind.unwrap_or(StateKind::Leaf), parent: s.parent, doc: s.doc, line }
            })
            .collect();
        let events: Vec<EventDecl> =
            raw.event.into_iter().map(Spanned::into_inner).map(|e| EventDecl { name: e.name, doc: e.doc }).collect();
        let facts: Vec<FactDecl> = raw
            .fact
            .into_iter()
            .map(Spanned::into_inner)
            .map(|f| FactDecl { name: f.name, values: f.values, doc: f.doc, start_only: f.start_only })
            .collect();
        let counters: Vec<CounterDecl> = raw
            .counter
            .into_iter()
            .map(Spanned::into_inner)
            .map(|c| CounterDecl {
                name: c.name,
                bound: c.bound,
                option: c.option,
                spent_at_start: c.spent_at_start,
                doc: c.doc,
            })
            .collect();
        let reasons = if raw.reason.is_empty() {
            ReasonDecl::engine()
        } else {
            raw.reason
                .into_iter()
                .map(Spanned::into_inner)
                .map(|r| ReasonDecl {
                    name: r.name,
                    terminal: r.kind == RawReasonKind::Terminal,
                    exit_code: r.exit_code,
                    doc: r.doc,
                })
                .collect()
        };
        let ranking = raw.termination.map(Spanned::into_inner).unwrap_or_default().ranking;
        let edges = raw
            .edge
            .into_iter()
            .map(|spanned| {
                let line = line_of(text, spanned.span().start);
                let e = spanned.into_inner();
                let (kind, reason) = match (&e.continue_reason, &e.terminal) {
                    (Some(r), _) => (EdgeKind::Continue, Some(r.clone())),
                    (None, Some(r)) => (EdgeKind::Terminal, Some(r.clone())),
                    (None, None) => (EdgeKind::Internal, None),
                };
                let guard = e.guard.as_deref().and_then(|g| Guard::parse(g).ok());
                let sets = e
                    .sets
                    .as_ref()
                    .map(|spanned| {
                        spanned
                            .get_ref()
                            .iter()
                            .filter_map(|(name, v)| {
                                let declared = facts.iter().find(|f| &f.name == name).map(|f| f.values.as_slice());
                                set_value(name, declared, v).ok().map(|value| (name.clone(), value))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                EdgeDecl {
                    id: e.id,
                    from: e.from,
                    on: e.on,
                    guard_text: e.guard,
                    guard,
                    to: e.to,
                    kind,
                    reason,
                    consumes: e.consumes,
                    resets: e.resets,
                    sets,
                    doc: e.doc,
                    line,
                }
            })
            .collect();
        Table {
            schema: raw.schema.into_inner(),
            initial: raw.initial,
            states,
            events,
            facts,
            counters,
            reasons,
            ranking,
            edges,
            sha256: sha256_hex(text),
        }
    }

    /// The edge with this id.
    pub fn edge(&self, id: &str) -> Option<&EdgeDecl> {
        self.edges.iter().find(|e| e.id == id)
    }

    /// The state with this name.
    pub fn state(&self, name: &str) -> Option<&StateDecl> {
        self.states.iter().find(|s| s.name == name)
    }

    /// The counter with this name.
    pub fn counter(&self, name: &str) -> Option<&CounterDecl> {
        self.counters.iter().find(|c| c.name == name)
    }

    /// The fact with this name.
    pub fn fact(&self, name: &str) -> Option<&FactDecl> {
        self.facts.iter().find(|f| f.name == name)
    }

    /// `state` followed by its superstates, innermost first.
    pub fn ancestry<'a>(&'a self, state: &'a str) -> Vec<&'a str> {
        let mut chain = vec![state];
        let mut current = state;
        while let Some(parent) = self.state(current).and_then(|s| s.parent.as_deref()) {
            chain.push(parent);
            current = parent;
        }
        chain
    }

    /// Edges that leave `state` (directly or from one of its superstates) on `event`,
    /// innermost state first, file order within a state.
    pub fn edges_from<'a>(&'a self, state: &'a str, event: &'a str) -> Vec<&'a EdgeDecl> {
        self.ancestry(state)
            .into_iter()
            .flat_map(|s| self.edges.iter().filter(move |e| e.from == s && e.on == event))
            .collect()
    }
}

/// Lowercase hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Counter values by name, as in the trace.
pub type Counters = BTreeMap<String, u32>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::guard::FactValue;
    use std::collections::BTreeSet;

    #[test]
    fn shipped_table_loads_with_every_reason() {
        let t = shipped();
        let continues: BTreeSet<&str> =
            t.edges.iter().filter(|e| e.kind == EdgeKind::Continue).filter_map(|e| e.reason.as_deref()).collect();
        let terminals: BTreeSet<&str> =
            t.edges.iter().filter(|e| e.kind == EdgeKind::Terminal).filter_map(|e| e.reason.as_deref()).collect();
        assert_eq!(continues, ContinueReason::ALL.iter().map(|r| r.as_str()).collect());
        assert_eq!(terminals, TerminalReason::ALL.iter().map(|r| r.as_str()).collect());
        assert_eq!(t.ancestry("Request"), vec!["Request", "Sampling", "Loop"]);
        let abort: Vec<&str> = t.edges_from("Consume", "abort").iter().map(|e| e.id.as_str()).collect();
        assert_eq!(abort, vec!["sampling.abort"]);
    }

    #[test]
    fn errors_name_the_line() {
        let text = "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[event]]\nname = \"go\"\n\n[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"go\"\nto = \"B\"\n";
        let err = Table::load("t.toml", text).unwrap_err();
        assert_eq!(err.to_string(), "t.toml:8: edge `x`: `to` names unknown state `B`");
        let err = Table::load("t.toml", "schema = 1\ninitial = \"A\"\n[[state]]\nname = 3\n").unwrap_err();
        assert!(err.to_string().contains("line 4"), "{err}");
    }

    #[test]
    fn edges_declare_the_facts_they_set() {
        let t = shipped();
        let sets = |id: &str| t.edge(id).unwrap().sets.clone();
        let one = |k: &str, v: FactValue| Facts::from([(k.to_owned(), v)]);
        assert_eq!(sets("request.prompt_too_long"), one("cause", FactValue::Value("prompt_too_long".into())));
        assert_eq!(sets("consume.prompt_too_long"), one("cause", FactValue::Value("prompt_too_long".into())));
        assert_eq!(sets("consume.truncated"), one("cause", FactValue::Value("truncated".into())));
        assert_eq!(sets("consume.context_full"), one("cause", FactValue::Value("prompt_too_long".into())));
        assert_eq!(sets("tools.done"), one("tools_ran", FactValue::Bool(true)));
        assert_eq!(sets("consume.end_turn"), one("tools_ran", FactValue::Bool(false)));
        assert_eq!(sets("checkpoint.next_turn"), one("tools_pending", FactValue::Bool(false)));
        // Besides those, every edge into Prepare sets the start-only `tools_pending` false.
        let no_resume = one("tools_pending", FactValue::Bool(false));
        let setting: Vec<&str> = t
            .edges
            .iter()
            .filter(|e| !e.sets.is_empty())
            .filter(|e| e.to != "Prepare" || e.sets != no_resume)
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(
            setting,
            vec![
                "request.prompt_too_long",
                "consume.end_turn",
                "consume.truncated",
                "consume.context_full",
                "consume.prompt_too_long",
                "tools.done"
            ]
        );
        let into_prepare: Vec<_> = t.edges.iter().filter(|e| e.to == "Prepare").collect();
        assert_eq!(into_prepare.len(), 11);
        for e in into_prepare {
            assert_eq!(e.sets, no_resume, "{}", e.id);
        }
    }

    #[test]
    fn bad_sets_name_the_line() {
        let head = "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[event]]\nname = \"go\"\n[[fact]]\nname = \"flag\"\n[[fact]]\nname = \"kind\"\nvalues = [\"x\", \"y\"]\n[[edge]]\nid = \"e\"\nfrom = \"A\"\non = \"go\"\nto = \"A\"\n";
        let err = |sets: &str| Table::load("t.toml", &format!("{head}sets = {sets}\n")).unwrap_err().to_string();
        assert_eq!(
            err("{ mystery = true }"),
            "t.toml:17: edge `e`: `sets` names `mystery`, which is not a declared fact"
        );
        assert_eq!(
            err("{ flag = \"yes\" }"),
            "t.toml:17: edge `e`: `sets` gives boolean fact `flag` the value \"yes\"; it takes true or false"
        );
        assert_eq!(
            err("{ kind = true }"),
            "t.toml:17: edge `e`: `sets` gives enumerated fact `kind` the value true; it takes one of \"x\", \"y\""
        );
        assert_eq!(
            err("{ kind = \"z\" }"),
            "t.toml:17: edge `e`: `sets` gives `kind` the value \"z\", which is not one of its values (\"x\", \"y\")"
        );
        let ok = Table::load("t.toml", &format!("{head}sets = {{ flag = false, kind = \"y\" }}\n")).unwrap();
        assert_eq!(
            ok.edges[0].sets,
            Facts::from([
                ("flag".to_owned(), FactValue::Bool(false)),
                ("kind".to_owned(), FactValue::Value("y".into()))
            ])
        );
    }

    #[test]
    fn guards_must_name_declared_facts() {
        let text = "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[event]]\nname = \"go\"\n[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"go\"\nguard = \"mystery\"\nto = \"A\"\n";
        let err = Table::load("t.toml", text).unwrap_err();
        assert!(err.to_string().contains("mystery"), "{err}");
    }
}
