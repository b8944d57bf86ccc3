//! Generates the engine's vocabulary from `transitions/loop.toml`: the `Edge` enum, the continue
//! and terminal reasons (with their exit codes), the counter, event and fact names, and one
//! choice enum per (state, event) pair that handlers match on exhaustively.
//!
//! The table stays the one place where the loop's decisions live: adding an edge here makes
//! the compiler point at the one handler whose `match` must give it an effect. The table is
//! read with the crate's own table module (`src/table/`, compiled here too): a table that
//! breaks a rule of the format fails the build with the findings `agentloop audit` prints,
//! before any name is generated from it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

#[path = "src/table/mod.rs"]
#[allow(dead_code, reason = "the build script uses the table module's checks, not all of it")]
mod table;

use table::format::{RawEdge, RawReasonKind, RawTable, StateKind};

const TABLE: &str = "transitions/loop.toml";
/// Where the built-in scenarios are.
const SCENARIOS: &str = "examples/scenarios";
/// The scenario `agentloop demo` runs when no name is given.
const DEFAULT_DEMO: &str = "read-greeting";

fn main() {
    println!("cargo::rerun-if-changed={TABLE}");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/table");
    let text = std::fs::read_to_string(TABLE).unwrap_or_else(|e| fail(&format!("{TABLE}: {e}")));
    let raw = checked(&text).unwrap_or_else(|problems| fail(&problems));
    let code = generate(&raw);
    let dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let out = dir.join("loop_table.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    println!("cargo::rerun-if-changed={SCENARIOS}");
    let out = dir.join("scenarios.rs");
    std::fs::write(&out, scenarios()).unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
}

/// `SCENARIOS`: every `*.json` in `examples/scenarios/`, embedded, the default demo first and
/// the rest by name. A scenario is added by adding its file.
fn scenarios() -> String {
    let entries = std::fs::read_dir(SCENARIOS).unwrap_or_else(|e| fail(&format!("{SCENARIOS}: {e}")));
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap_or_else(|e| fail(&format!("{SCENARIOS}: {e}"))).file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
        .collect();
    names.sort_by_key(|n| (n != DEFAULT_DEMO, n.clone()));
    if names.first().map(String::as_str) != Some(DEFAULT_DEMO) {
        fail(&format!("{SCENARIOS}: the default demo `{DEFAULT_DEMO}.json` is missing"));
    }
    let mut out = String::new();
    writeln!(out, "/// The scenario `agentloop demo` runs when no name is given.").unwrap();
    writeln!(out, "pub const DEFAULT_DEMO: &str = {DEFAULT_DEMO:?};\n").unwrap();
    writeln!(out, "/// Every built-in scenario: (name, JSON text), from `examples/scenarios/` (the default").unwrap();
    writeln!(out, "/// demo first, then by name).").unwrap();
    writeln!(out, "pub const SCENARIOS: &[(&str, &str)] = &[").unwrap();
    for name in &names {
        writeln!(
            out,
            "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{SCENARIOS}/{name}.json\"))),"
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
    out
}

/// The table, parsed and checked by the format's rules; `Err` with every finding, one per
/// line as `audit` prints them.
fn checked(text: &str) -> Result<RawTable, String> {
    let raw = table::check::parse(TABLE, text).map_err(|e| e.to_string())?;
    let findings = table::check::check_raw(&raw, TABLE, text, None).map_err(|e| e.to_string())?;
    if findings.is_empty() {
        return Ok(raw);
    }
    let lines: Vec<String> = findings
        .iter()
        .map(|f| format!("{TABLE}:{}: {} {}", f.location.line.unwrap_or(1), f.code.as_str(), f.message))
        .collect();
    Err(lines.join("\n"))
}

/// Stop the build with `message` on stderr (cargo shows it with the build script's failure).
fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1);
}

/// `max_output_tokens_escalate` or `ExecuteTools` → `MaxOutputTokensEscalate` / `ExecuteTools`.
fn camel(name: &str) -> String {
    name.split(['_', '.'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut chars = p.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// `ExecuteTools` → `execute_tools`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A doc comment line, with the table's text kept on one line.
fn doc(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct Reason<'a> {
    name: &'a str,
    doc: String,
    exit_code: Option<u8>,
}

fn generate(table: &RawTable) -> String {
    let mut out = String::new();
    let edges: Vec<&RawEdge> = table.edge.iter().map(|e| e.get_ref()).collect();
    let (mut continues, mut terminals) = (Vec::new(), Vec::new());
    for r in table.reason.iter().map(|r| r.get_ref()) {
        let reason = Reason { name: &r.name, doc: doc(&r.doc), exit_code: r.exit_code };
        match r.kind {
            RawReasonKind::Continue => continues.push(reason),
            RawReasonKind::Terminal => terminals.push(reason),
        }
    }

    // ---------------------------------------------------------------- Edge
    writeln!(out, "/// One edge of `transitions/loop.toml`; the variant's name is its id in camel case.").unwrap();
    writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]").unwrap();
    writeln!(out, "pub enum Edge {{").unwrap();
    for e in &edges {
        writeln!(out, "    /// `{}`: {}", e.id, doc(&e.doc)).unwrap();
        writeln!(out, "    {},", camel(&e.id)).unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "impl Edge {{").unwrap();
    writeln!(out, "    /// Every edge, in table order.").unwrap();
    writeln!(out, "    pub const ALL: [Edge; {}] = [", edges.len()).unwrap();
    for e in &edges {
        writeln!(out, "        Edge::{},", camel(&e.id)).unwrap();
    }
    writeln!(out, "    ];\n").unwrap();
    let per_edge = |out: &mut String, name: &str, what: &str, field: fn(&RawEdge) -> &str| {
        writeln!(out, "    /// {what}").unwrap();
        writeln!(out, "    pub fn {name}(self) -> &'static str {{").unwrap();
        writeln!(out, "        match self {{").unwrap();
        for e in &edges {
            writeln!(out, "            Edge::{} => {:?},", camel(&e.id), field(e)).unwrap();
        }
        writeln!(out, "        }}\n    }}\n").unwrap();
    };
    per_edge(&mut out, "id", "The edge id in the table and the trace.", |e| &e.id);
    per_edge(&mut out, "from", "The state the shipped table says the edge leaves.", |e| &e.from);
    per_edge(&mut out, "event", "The event the shipped table says the edge fires on.", |e| &e.on);
    per_edge(&mut out, "to", "The state the shipped table says the edge enters.", |e| &e.to);
    writeln!(out, "    /// The note a front end shows while the edge's target works (the table's `status`):").unwrap();
    writeln!(out, "    /// `Some(\"\")` clears the note shown, `None` keeps it.").unwrap();
    writeln!(out, "    pub fn status(self) -> Option<&'static str> {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for e in &edges {
        writeln!(out, "            Edge::{} => {:?},", camel(&e.id), e.status.as_deref()).unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(out, "    /// Whether taking the edge drops the reply attempt streamed so far, so a front end").unwrap();
    writeln!(out, "    /// erases its text (the table's `abandons_reply`).").unwrap();
    writeln!(out, "    pub fn abandons_attempt(self) -> bool {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for e in &edges {
        writeln!(out, "            Edge::{} => {},", camel(&e.id), e.abandons_reply).unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(out, "    /// The edge with this id.").unwrap();
    writeln!(out, "    pub fn from_id(id: &str) -> Option<Edge> {{").unwrap();
    writeln!(out, "        Edge::ALL.into_iter().find(|e| e.id() == id)").unwrap();
    writeln!(out, "    }}\n}}\n").unwrap();

    // ---------------------------------------------------------------- states
    states(&mut out, table);

    // ---------------------------------------------------------------- reasons
    reason_enum(&mut out, "ContinueReason", "Why the loop went round again.", &continues);
    reason_enum(&mut out, "TerminalReason", "Why the run ended.", &terminals);
    writeln!(out, "impl TerminalReason {{").unwrap();
    writeln!(out, "    /// The process exit status of a run that ended this way (the table's `exit_code`).").unwrap();
    writeln!(out, "    pub fn exit_code(self) -> u8 {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for r in &terminals {
        let code = r.exit_code.expect("the format's check requires a terminal reason's exit_code");
        writeln!(out, "            TerminalReason::{} => {code},", camel(r.name)).unwrap();
    }
    writeln!(out, "        }}\n    }}\n}}\n").unwrap();

    // ---------------------------------------------------------------- names
    let counters: Vec<Named<'_>> =
        table.counter.iter().map(|c| c.get_ref()).map(|c| (&*c.name, &*c.doc, &[][..])).collect();
    names(&mut out, "counter", "Counter names (guards read `NAME_left`).", &counters);
    let events: Vec<Named<'_>> =
        table.event.iter().map(|e| e.get_ref()).map(|e| (&*e.name, &*e.doc, &[][..])).collect();
    names(&mut out, "event", "Event names: what a handler reports happened.", &events);
    let facts: Vec<Named<'_>> =
        table.fact.iter().map(|f| f.get_ref()).map(|f| (&*f.name, &*f.doc, f.values.as_slice())).collect();
    names(&mut out, "fact", "Fact names: what a handler reports for the guards to read.", &facts);

    // ---------------------------------------------------------------- choices
    let mut groups: BTreeMap<(&str, &str), Vec<&RawEdge>> = BTreeMap::new();
    let mut order = Vec::new();
    for e in &edges {
        let key = (e.from.as_str(), e.on.as_str());
        if !groups.contains_key(&key) {
            order.push(key);
        }
        groups.entry(key).or_default().push(e);
    }
    let mut by_state: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for key in &order {
        by_state.entry(key.0).or_default().push(*key);
    }
    let supplied = supplied_facts(table, &order, &groups);
    writeln!(out, "/// One enum per (state, event) pair of the table: the edges a handler in that state may").unwrap();
    writeln!(out, "/// be given on that event. A handler matches on it exhaustively, so an edge added to the").unwrap();
    writeln!(out, "/// table is a compile error until its effect is written.").unwrap();
    writeln!(out, "pub mod choice {{").unwrap();
    writeln!(out, "    use super::Edge;").unwrap();
    for (state, keys) in &by_state {
        writeln!(out, "    /// The edges leaving `{state}`.").unwrap();
        writeln!(out, "    pub mod {} {{", snake(state)).unwrap();
        writeln!(out, "        use super::Edge;").unwrap();
        for key in keys {
            let ty = camel(key.1);
            let group = &groups[key];
            writeln!(out, "        /// The edges leaving `{state}` on `{}`.", key.1).unwrap();
            writeln!(out, "        #[derive(Debug, Clone, Copy, PartialEq, Eq)]").unwrap();
            writeln!(out, "        pub enum {ty} {{").unwrap();
            let mut seen = Vec::new();
            for e in group {
                let id = e.id.as_str();
                let variant = camel(id.split_once('.').map_or(id, |(_, rest)| rest));
                if seen.contains(&variant) {
                    fail(&format!("{TABLE}: two edges from `{state}` on `{}` end in `{variant}`", key.1));
                }
                writeln!(out, "            /// `{id}`").unwrap();
                writeln!(out, "            {variant},").unwrap();
                seen.push(variant);
            }
            writeln!(out, "        }}\n").unwrap();
            writeln!(out, "        impl crate::engine::select::Choice for {ty} {{").unwrap();
            writeln!(out, "            const EVENT: &'static str = {:?};", key.1).unwrap();
            writeln!(out, "            fn from_edge(edge: Edge) -> Option<Self> {{").unwrap();
            writeln!(out, "                match edge {{").unwrap();
            for (e, variant) in group.iter().zip(&seen) {
                writeln!(out, "                    Edge::{} => Some({ty}::{variant}),", camel(&e.id)).unwrap();
            }
            writeln!(out, "                    _ => None,").unwrap();
            writeln!(out, "                }}\n            }}").unwrap();
            writeln!(out, "            fn edge(self) -> Edge {{").unwrap();
            writeln!(out, "                match self {{").unwrap();
            for (e, variant) in group.iter().zip(&seen) {
                writeln!(out, "                    {ty}::{variant} => Edge::{},", camel(&e.id)).unwrap();
            }
            writeln!(out, "                }}\n            }}\n        }}\n").unwrap();
            facts_trait(&mut out, table, state, key.1, &ty, &supplied[key]);
        }
        writeln!(out, "    }}").unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    supplied_table(&mut out, &order, &supplied);
    out
}

/// For each (state, event) pair, the facts its handler must supply: every fact a guard of the
/// pair's edges reads, except `COUNTER_left` atoms (the machine reads its counters) and the
/// facts every edge into the state `sets` (the entering edge decides them; the initial state is
/// entered by no edge, so it sets nothing).
fn supplied_facts<'a>(
    table: &'a RawTable,
    order: &[(&'a str, &'a str)],
    groups: &BTreeMap<(&'a str, &'a str), Vec<&'a RawEdge>>,
) -> BTreeMap<(&'a str, &'a str), Vec<&'a str>> {
    let declared: Vec<&str> = table.fact.iter().map(|f| f.get_ref().name.as_str()).collect();
    let states: Vec<&table::format::RawState> = table.state.iter().map(|s| s.get_ref()).collect();
    let under = |leaf: &str, state: &str| {
        let mut current = Some(leaf);
        while let Some(s) = current {
            if s == state {
                return true;
            }
            current = states.iter().find(|x| x.name == s).and_then(|x| x.parent.as_deref());
        }
        false
    };
    let mut out = BTreeMap::new();
    for key in order {
        let (state, _) = *key;
        let mut entering: Vec<Vec<&str>> = table
            .edge
            .iter()
            .map(|e| e.get_ref())
            .filter(|e| under(&e.to, state))
            .map(|e| e.sets.as_ref().map(|s| s.get_ref().keys().map(String::as_str).collect()).unwrap_or_default())
            .collect();
        if under(&table.initial, state) {
            entering.push(Vec::new());
        }
        let always_set = |fact: &str| !entering.is_empty() && entering.iter().all(|sets| sets.contains(&fact));
        let mut read: Vec<&str> = Vec::new();
        for edge in &groups[key] {
            let Some(text) = &edge.guard else { continue };
            let guard = table::guard::Guard::parse(text).unwrap_or_else(|e| fail(&format!("{TABLE}: {e}")));
            for atom in guard.atoms().into_keys() {
                let Some(fact) = declared.iter().find(|f| **f == atom) else { continue };
                if !always_set(fact) && !read.contains(fact) {
                    read.push(fact);
                }
            }
        }
        read.sort_unstable_by_key(|f| declared.iter().position(|d| d == f));
        out.insert(*key, read);
    }
    out
}

/// The trait a handler implements to supply the facts of one (state, event) pair, and its
/// blanket `Supply` impl; a pair with nothing to supply takes `NoFacts`.
fn facts_trait(out: &mut String, table: &RawTable, state: &str, event: &str, ty: &str, facts: &[&str]) {
    let supply = "crate::engine::select::Supply";
    let args = "m: &mut crate::engine::machine::Machine, ctx: &mut crate::engine::machine::Ctx";
    if facts.is_empty() {
        writeln!(out, "        impl {supply}<{ty}> for crate::engine::select::NoFacts {{").unwrap();
        writeln!(
            out,
            "            async fn supply(&mut self, {args}, fact: &str) -> crate::engine::select::Supplied {{"
        )
        .unwrap();
        writeln!(out, "                let _ = (m, ctx, fact);").unwrap();
        writeln!(out, "                crate::engine::select::Supplied::Unknown").unwrap();
        writeln!(out, "            }}\n        }}\n").unwrap();
        return;
    }
    let decl = |name: &str| table.fact.iter().map(|f| f.get_ref()).find(|f| f.name == name).expect("a declared fact");
    writeln!(out, "        /// The facts the guards out of `{state}` on `{event}` read that the handler observes.")
        .unwrap();
    writeln!(out, "        /// Each is asked for only when a guard reads it, in the order the guards read them;")
        .unwrap();
    writeln!(out, "        /// `None` means the state cannot settle (an interrupt came while it was found out),")
        .unwrap();
    writeln!(out, "        /// and the handler returns without an edge.").unwrap();
    writeln!(out, "        pub trait {ty}Facts {{").unwrap();
    for name in facts {
        let f = decl(name);
        let output =
            if f.values.is_empty() { "bool".to_owned() } else { format!("super::super::fact::{}", camel(name)) };
        writeln!(out, "            /// `{name}`: {}", doc(&f.doc)).unwrap();
        writeln!(out, "            fn {name}(&mut self, {args})").unwrap();
        writeln!(out, "                -> impl std::future::Future<Output = Option<{output}>>;").unwrap();
    }
    writeln!(out, "        }}\n").unwrap();
    writeln!(out, "        impl<P: {ty}Facts> {supply}<{ty}> for P {{").unwrap();
    writeln!(out, "            async fn supply(&mut self, {args}, fact: &str) -> crate::engine::select::Supplied {{")
        .unwrap();
    writeln!(out, "                use crate::engine::select::Supplied;").unwrap();
    writeln!(out, "                use crate::table::guard::FactValue;").unwrap();
    writeln!(out, "                match fact {{").unwrap();
    for name in facts {
        let f = decl(name);
        let wrap = if f.values.is_empty() { "FactValue::Bool(v)" } else { "FactValue::Value(v.as_str().to_owned())" };
        writeln!(
            out,
            "                    super::super::fact::{} => match self.{name}(m, ctx).await {{",
            name.to_ascii_uppercase()
        )
        .unwrap();
        writeln!(out, "                        Some(v) => Supplied::Value({wrap}),").unwrap();
        writeln!(out, "                        None => Supplied::Unsettled,").unwrap();
        writeln!(out, "                    }},").unwrap();
    }
    writeln!(out, "                    _ => Supplied::Unknown,").unwrap();
    writeln!(out, "                }}\n            }}\n        }}\n").unwrap();
}

/// `SUPPLIED`: for every (state, event) pair, the facts its handler can supply, for the engine
/// check of an edited table.
fn supplied_table(out: &mut String, order: &[(&str, &str)], supplied: &BTreeMap<(&str, &str), Vec<&str>>) {
    writeln!(out, "/// For every (state, event) pair of the table, the facts its handler supplies (the rest of")
        .unwrap();
    writeln!(out, "/// what its guards may read is counters and the facts the entering edges set).").unwrap();
    writeln!(out, "pub const SUPPLIED: [(&str, &str, &[&str]); {}] = [", order.len()).unwrap();
    for key in order {
        writeln!(out, "    ({:?}, {:?}, &{:?}),", key.0, key.1, supplied[key]).unwrap();
    }
    writeln!(out, "];").unwrap();
}

/// `StateName`: every state of the table, with its parent, whether it is a leaf, the initial
/// state, and the leaves an `abort` can arrive in (those with an `abort` edge of their own or
/// of a superstate above them).
fn states(out: &mut String, table: &RawTable) {
    let states: Vec<&table::format::RawState> = table.state.iter().map(|s| s.get_ref()).collect();
    let parent = |name: &str| states.iter().find(|s| s.name == name).and_then(|s| s.parent.as_deref());
    let aborted_from: Vec<&str> =
        table.edge.iter().map(|e| e.get_ref()).filter(|e| e.on == "abort").map(|e| e.from.as_str()).collect();
    let abortable = |name: &str| {
        let mut current = Some(name);
        while let Some(state) = current {
            if aborted_from.contains(&state) {
                return true;
            }
            current = parent(state);
        }
        false
    };
    writeln!(out, "/// One state of `transitions/loop.toml` (leaves, superstates and the terminal state).").unwrap();
    writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]").unwrap();
    writeln!(out, "pub enum StateName {{").unwrap();
    for s in &states {
        writeln!(out, "    /// `{}`: {}", s.name, doc(&s.doc)).unwrap();
        writeln!(out, "    {},", s.name).unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "impl StateName {{").unwrap();
    writeln!(out, "    /// Every state, in table order.").unwrap();
    writeln!(out, "    pub const ALL: [StateName; {}] = [", states.len()).unwrap();
    for s in &states {
        writeln!(out, "        StateName::{},", s.name).unwrap();
    }
    writeln!(out, "    ];\n").unwrap();
    writeln!(out, "    /// The state a run starts in (the table's `initial`).").unwrap();
    writeln!(out, "    pub const INITIAL: StateName = StateName::{};\n", table.initial).unwrap();
    writeln!(out, "    /// The state's name in the table and the trace.").unwrap();
    writeln!(out, "    pub const fn as_str(self) -> &'static str {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for s in &states {
        writeln!(out, "            StateName::{0} => {0:?},", s.name).unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(out, "    /// The state with this name.").unwrap();
    writeln!(out, "    pub fn parse(name: &str) -> Option<StateName> {{").unwrap();
    writeln!(out, "        StateName::ALL.into_iter().find(|s| s.as_str() == name)").unwrap();
    writeln!(out, "    }}\n").unwrap();
    writeln!(out, "    /// The enclosing superstate.").unwrap();
    writeln!(out, "    pub fn parent(self) -> Option<StateName> {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for s in &states {
        match &s.parent {
            Some(p) => writeln!(out, "            StateName::{} => Some(StateName::{p}),", s.name).unwrap(),
            None => writeln!(out, "            StateName::{} => None,", s.name).unwrap(),
        }
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(out, "    /// Whether a run can be in this state (a leaf or the terminal state, not a superstate).")
        .unwrap();
    writeln!(out, "    pub fn is_leaf(self) -> bool {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for s in &states {
        let leaf = !matches!(s.kind, Some(StateKind::Superstate));
        writeln!(out, "            StateName::{} => {leaf},", s.name).unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(out, "    /// Whether an `abort` event has an edge out of this state (its own or a superstate's).")
        .unwrap();
    writeln!(out, "    pub fn is_abortable(self) -> bool {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for s in &states {
        writeln!(out, "            StateName::{} => {},", s.name, abortable(&s.name)).unwrap();
    }
    writeln!(out, "        }}\n    }}\n}}\n").unwrap();
    writeln!(out, "impl std::fmt::Display for StateName {{").unwrap();
    writeln!(out, "    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{").unwrap();
    writeln!(out, "        f.write_str(self.as_str())").unwrap();
    writeln!(out, "    }}\n}}\n").unwrap();
}

fn reason_enum(out: &mut String, name: &str, what: &str, reasons: &[Reason<'_>]) {
    writeln!(out, "/// {what}").unwrap();
    writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]").unwrap();
    writeln!(out, "#[serde(rename_all = \"snake_case\")]").unwrap();
    writeln!(out, "pub enum {name} {{").unwrap();
    for r in reasons {
        writeln!(out, "    /// `{}`: {}", r.name, r.doc).unwrap();
        writeln!(out, "    {},", camel(r.name)).unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "impl {name} {{").unwrap();
    writeln!(out, "    /// Every reason, in table order.").unwrap();
    writeln!(out, "    pub const ALL: [{name}; {}] = [", reasons.len()).unwrap();
    for r in reasons {
        writeln!(out, "        {name}::{},", camel(r.name)).unwrap();
    }
    writeln!(out, "    ];\n").unwrap();
    writeln!(out, "    /// The reason's name in the table and the trace.").unwrap();
    writeln!(out, "    pub fn as_str(self) -> &'static str {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for r in reasons {
        writeln!(out, "            {name}::{} => {:?},", camel(r.name), r.name).unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(out, "    /// Parse a table or trace name.").unwrap();
    writeln!(out, "    pub fn parse(name: &str) -> Option<Self> {{").unwrap();
    writeln!(out, "        Self::ALL.into_iter().find(|r| r.as_str() == name)").unwrap();
    writeln!(out, "    }}\n}}\n").unwrap();
    writeln!(out, "impl std::fmt::Display for {name} {{").unwrap();
    writeln!(out, "    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{").unwrap();
    writeln!(out, "        f.write_str(self.as_str())").unwrap();
    writeln!(out, "    }}\n}}\n").unwrap();
}

/// A declared name, its doc and (for an enumerated fact) its values.
type Named<'a> = (&'a str, &'a str, &'a [String]);

/// `pub mod NAME { pub const X: &str = "x"; ... pub const ALL: [&str; N] }`, with a module of
/// value constants for each enumerated fact.
fn names(out: &mut String, module: &str, what: &str, items: &[Named<'_>]) {
    writeln!(out, "/// {what}").unwrap();
    writeln!(out, "pub mod {module} {{").unwrap();
    for (name, text, values) in items {
        writeln!(out, "    /// `{name}`: {}", doc(text)).unwrap();
        writeln!(out, "    pub const {}: &str = {name:?};", name.to_ascii_uppercase()).unwrap();
        if !values.is_empty() {
            writeln!(out, "    /// The values of `{name}`.").unwrap();
            writeln!(out, "    pub mod {name} {{").unwrap();
            for v in values.iter() {
                writeln!(out, "        /// `{name} == {v}`").unwrap();
                writeln!(out, "        pub const {}: &str = {v:?};", v.to_ascii_uppercase()).unwrap();
            }
            writeln!(out, "    }}").unwrap();
            value_enum(out, name, text, values);
        }
    }
    writeln!(out, "    /// Every name, in table order.").unwrap();
    write!(out, "    pub const ALL: [&str; {}] = [", items.len()).unwrap();
    for (name, _, _) in items {
        write!(out, "{}, ", name.to_ascii_uppercase()).unwrap();
    }
    writeln!(out, "];\n}}\n").unwrap();
}

/// The value type of an enumerated fact: one variant per declared value, and its name.
fn value_enum(out: &mut String, name: &str, text: &str, values: &[String]) {
    let ty = camel(name);
    writeln!(out, "    /// A value of `{name}`: {}", doc(text)).unwrap();
    writeln!(out, "    #[derive(Debug, Clone, Copy, PartialEq, Eq)]").unwrap();
    writeln!(out, "    pub enum {ty} {{").unwrap();
    for v in values {
        writeln!(out, "        /// `{name} == {v}`").unwrap();
        writeln!(out, "        {},", camel(v)).unwrap();
    }
    writeln!(out, "    }}\n").unwrap();
    writeln!(out, "    impl {ty} {{").unwrap();
    writeln!(out, "        /// The value as the table and the trace spell it.").unwrap();
    writeln!(out, "        pub const fn as_str(self) -> &'static str {{").unwrap();
    writeln!(out, "            match self {{").unwrap();
    for v in values {
        writeln!(out, "                {ty}::{} => {name}::{},", camel(v), v.to_ascii_uppercase()).unwrap();
    }
    writeln!(out, "            }}\n        }}\n    }}\n").unwrap();
}
