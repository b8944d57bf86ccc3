//! Generates the engine's vocabulary from `transitions/loop.toml`: the `Edge` enum, the continue
//! and terminal reasons (with their exit codes), the counter, event and fact names, and one
//! choice enum per (state, event) pair that handlers match on exhaustively.
//!
//! The table stays the one place where the loop's decisions live: adding an edge here makes
//! the compiler point at the one handler whose `match` must give it an effect.
//! `Table::load` validates the same file at run time; this script only reads the names.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

const TABLE: &str = "transitions/loop.toml";

fn main() {
    println!("cargo::rerun-if-changed={TABLE}");
    println!("cargo::rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(TABLE).unwrap_or_else(|e| panic!("{TABLE}: {e}"));
    let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{TABLE}: {e}"));
    let code = generate(&table);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("loop_table.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// The `[[NAME]]` array of tables.
fn section<'a>(table: &'a toml::Table, name: &str) -> Vec<&'a toml::Table> {
    match table.get(name) {
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|v| v.as_table().unwrap_or_else(|| panic!("{TABLE}: [[{name}]] must be a table")))
            .collect(),
        None => Vec::new(),
        Some(_) => panic!("{TABLE}: `{name}` must be an array of tables"),
    }
}

fn string<'a>(item: &'a toml::Table, key: &str) -> &'a str {
    item.get(key).and_then(toml::Value::as_str).unwrap_or_else(|| panic!("{TABLE}: `{key}` missing in {item:?}"))
}

fn optional<'a>(item: &'a toml::Table, key: &str) -> Option<&'a str> {
    item.get(key).and_then(toml::Value::as_str)
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
    exit_code: Option<i64>,
}

fn generate(table: &toml::Table) -> String {
    let mut out = String::new();
    let edges = section(table, "edge");
    let reasons = section(table, "reason");
    let (mut continues, mut terminals) = (Vec::new(), Vec::new());
    for r in &reasons {
        let reason = Reason {
            name: string(r, "name"),
            doc: doc(optional(r, "doc").unwrap_or_default()),
            exit_code: r.get("exit_code").and_then(toml::Value::as_integer),
        };
        match string(r, "kind") {
            "continue" => continues.push(reason),
            "terminal" => {
                assert!(reason.exit_code.is_some(), "{TABLE}: terminal reason `{}` needs an exit_code", reason.name);
                terminals.push(reason)
            }
            other => panic!("{TABLE}: reason `{}` has unknown kind `{other}`", reason.name),
        }
    }

    // ---------------------------------------------------------------- Edge
    writeln!(out, "/// One edge of `transitions/loop.toml`; the variant's name is its id in camel case.").unwrap();
    writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]").unwrap();
    writeln!(out, "pub enum Edge {{").unwrap();
    for e in &edges {
        writeln!(out, "    /// `{}`: {}", string(e, "id"), doc(optional(e, "doc").unwrap_or_default())).unwrap();
        writeln!(out, "    {},", camel(string(e, "id"))).unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "impl Edge {{").unwrap();
    writeln!(out, "    /// Every edge, in table order.").unwrap();
    writeln!(out, "    pub const ALL: [Edge; {}] = [", edges.len()).unwrap();
    for e in &edges {
        writeln!(out, "        Edge::{},", camel(string(e, "id"))).unwrap();
    }
    writeln!(out, "    ];\n").unwrap();
    let per_edge = |out: &mut String, name: &str, what: &str, key: &str| {
        writeln!(out, "    /// {what}").unwrap();
        writeln!(out, "    pub fn {name}(self) -> &'static str {{").unwrap();
        writeln!(out, "        match self {{").unwrap();
        for e in &edges {
            writeln!(out, "            Edge::{} => {:?},", camel(string(e, "id")), string(e, key)).unwrap();
        }
        writeln!(out, "        }}\n    }}\n").unwrap();
    };
    per_edge(&mut out, "id", "The edge id in the table and the trace.", "id");
    per_edge(&mut out, "from", "The state the shipped table says the edge leaves.", "from");
    per_edge(&mut out, "event", "The event the shipped table says the edge fires on.", "on");
    per_edge(&mut out, "to", "The state the shipped table says the edge enters.", "to");
    writeln!(out, "    /// The edge with this id.").unwrap();
    writeln!(out, "    pub fn from_id(id: &str) -> Option<Edge> {{").unwrap();
    writeln!(out, "        Edge::ALL.into_iter().find(|e| e.id() == id)").unwrap();
    writeln!(out, "    }}\n}}\n").unwrap();

    // ---------------------------------------------------------------- reasons
    reason_enum(&mut out, "ContinueReason", "Why the loop went round again.", &continues);
    reason_enum(&mut out, "TerminalReason", "Why the run ended.", &terminals);
    writeln!(out, "impl TerminalReason {{").unwrap();
    writeln!(out, "    /// The process exit status of a run that ended this way (the table's `exit_code`).").unwrap();
    writeln!(out, "    pub fn exit_code(self) -> u8 {{").unwrap();
    writeln!(out, "        match self {{").unwrap();
    for r in &terminals {
        let code = r.exit_code.expect("checked above");
        assert!((0..=255).contains(&code), "{TABLE}: exit_code {code} of `{}` is not 0..=255", r.name);
        writeln!(out, "            TerminalReason::{} => {code},", camel(r.name)).unwrap();
    }
    writeln!(out, "        }}\n    }}\n}}\n").unwrap();

    // ---------------------------------------------------------------- names
    names(&mut out, "counter", "Counter names (guards read `NAME_left`).", &section(table, "counter"));
    names(&mut out, "event", "Event names: what a handler reports happened.", &section(table, "event"));
    let facts = section(table, "fact");
    names(&mut out, "fact", "Fact names: what a handler reports for the guards to read.", &facts);

    // ---------------------------------------------------------------- choices
    let mut groups: BTreeMap<(&str, &str), Vec<&toml::Table>> = BTreeMap::new();
    let mut order = Vec::new();
    for e in &edges {
        let key = (string(e, "from"), string(e, "on"));
        if !groups.contains_key(&key) {
            order.push(key);
        }
        groups.entry(key).or_default().push(e);
    }
    let mut by_state: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for key in &order {
        by_state.entry(key.0).or_default().push(*key);
    }
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
                let id = string(e, "id");
                let variant = camel(id.split_once('.').map_or(id, |(_, rest)| rest));
                assert!(
                    !seen.contains(&variant),
                    "{TABLE}: two edges from `{state}` on `{}` end in `{variant}`",
                    key.1
                );
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
                writeln!(out, "                    Edge::{} => Some({ty}::{variant}),", camel(string(e, "id")))
                    .unwrap();
            }
            writeln!(out, "                    _ => None,").unwrap();
            writeln!(out, "                }}\n            }}").unwrap();
            writeln!(out, "            fn edge(self) -> Edge {{").unwrap();
            writeln!(out, "                match self {{").unwrap();
            for (e, variant) in group.iter().zip(&seen) {
                writeln!(out, "                    {ty}::{variant} => Edge::{},", camel(string(e, "id"))).unwrap();
            }
            writeln!(out, "                }}\n            }}\n        }}\n").unwrap();
        }
        writeln!(out, "    }}").unwrap();
    }
    writeln!(out, "}}").unwrap();
    out
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

/// `pub mod NAME { pub const X: &str = "x"; ... pub const ALL: [&str; N] }`, with a module of
/// value constants for each enumerated fact.
fn names(out: &mut String, module: &str, what: &str, items: &[&toml::Table]) {
    writeln!(out, "/// {what}").unwrap();
    writeln!(out, "pub mod {module} {{").unwrap();
    for item in items {
        let name = string(item, "name");
        writeln!(out, "    /// `{name}`: {}", doc(optional(item, "doc").unwrap_or_default())).unwrap();
        writeln!(out, "    pub const {}: &str = {name:?};", name.to_ascii_uppercase()).unwrap();
        if let Some(toml::Value::Array(values)) = item.get("values") {
            writeln!(out, "    /// The values of `{name}`.").unwrap();
            writeln!(out, "    pub mod {name} {{").unwrap();
            for v in values {
                let v = v.as_str().unwrap_or_else(|| panic!("{TABLE}: values of `{name}` must be strings"));
                writeln!(out, "        /// `{name} == {v}`").unwrap();
                writeln!(out, "        pub const {}: &str = {v:?};", v.to_ascii_uppercase()).unwrap();
            }
            writeln!(out, "    }}").unwrap();
        }
    }
    writeln!(out, "    /// Every name, in table order.").unwrap();
    write!(out, "    pub const ALL: [&str; {}] = [", items.len()).unwrap();
    for item in items {
        write!(out, "{}, ", string(item, "name").to_ascii_uppercase()).unwrap();
    }
    writeln!(out, "];\n}}\n").unwrap();
}
