//! The statechart drawn from the table: Mermaid (a flowchart with superstates as subgraphs),
//! Graphviz DOT (superstates as clusters) and Markdown (the Mermaid diagram plus a table of
//! every state and edge, with the facts each edge sets). Continue edges are dotted and blue, terminal edges thick and red.
//! `docs/transitions.md` is the Markdown export of the shipped table.

use std::fmt::Write;

use crate::engine::table::{EdgeDecl, EdgeKind, StateKind, Table};
use crate::table::guard::FactValue;

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiagramFormat {
    /// A Mermaid flowchart.
    Mermaid,
    /// A Graphviz digraph.
    Dot,
    /// Markdown: the Mermaid diagram and tables of states and edges.
    Markdown,
}

const CONTINUE_COLOR: &str = "#1f6feb";
const TERMINAL_COLOR: &str = "#cf222e";

/// Render `table`; `source` names the table file in the Markdown header.
pub fn render(table: &Table, source: &str, format: DiagramFormat) -> String {
    match format {
        DiagramFormat::Mermaid => mermaid(table),
        DiagramFormat::Dot => dot(table),
        DiagramFormat::Markdown => markdown(table, source),
    }
}

/// A node id: the name with anything but ASCII letters, digits and `_` replaced by `_`
/// (and Mermaid's `end` keyword avoided).
fn id(name: &str) -> String {
    let id: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if id == "end" { format!("{id}_") } else { id }
}

/// Text inside a quoted Mermaid label.
fn mermaid_text(text: &str) -> String {
    text.replace('"', "#quot;")
}

/// Text inside a quoted DOT string.
fn dot_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

fn children<'t>(table: &'t Table, parent: Option<&str>) -> impl Iterator<Item = &'t crate::engine::table::StateDecl> {
    table.states.iter().filter(move |s| s.parent.as_deref() == parent)
}

/// The Mermaid flowchart.
pub fn mermaid(table: &Table) -> String {
    fn nest(table: &Table, parent: Option<&str>, depth: usize, out: &mut String) {
        let pad = "    ".repeat(depth);
        for s in children(table, parent) {
            match s.kind {
                StateKind::Superstate => {
                    let _ = writeln!(out, "{pad}subgraph {}", id(&s.name));
                    nest(table, Some(&s.name), depth + 1, out);
                    let _ = writeln!(out, "{pad}end");
                }
                StateKind::Leaf => {
                    let _ = writeln!(out, "{pad}{}", id(&s.name));
                }
                StateKind::Terminal => {
                    let _ = writeln!(out, "{pad}{}((({})))", id(&s.name), id(&s.name));
                }
            }
        }
    }
    let mut out = String::from("flowchart TD\n");
    let _ = writeln!(out, "    start_((start)) --> {}", id(&table.initial));
    nest(table, None, 1, &mut out);
    let mut continues = Vec::new();
    let mut terminals = Vec::new();
    for (i, e) in table.edges.iter().enumerate() {
        let arrow = match e.kind {
            EdgeKind::Internal => "-->",
            EdgeKind::Continue => {
                continues.push((i + 1).to_string());
                "-.->"
            }
            EdgeKind::Terminal => {
                terminals.push((i + 1).to_string());
                "==>"
            }
        };
        let _ = writeln!(out, "    {} {arrow}|\"{}\"| {}", id(&e.from), mermaid_text(&e.id), id(&e.to));
    }
    for s in table.states.iter().filter(|s| s.kind == StateKind::Terminal) {
        let _ = writeln!(out, "    style {} fill:#ffebe9,stroke:{TERMINAL_COLOR}", id(&s.name));
    }
    if !continues.is_empty() {
        let _ = writeln!(out, "    linkStyle {} stroke:{CONTINUE_COLOR},color:{CONTINUE_COLOR}", continues.join(","));
    }
    if !terminals.is_empty() {
        let _ = writeln!(out, "    linkStyle {} stroke:{TERMINAL_COLOR},color:{TERMINAL_COLOR}", terminals.join(","));
    }
    out
}

/// The Graphviz digraph. An edge from a superstate is drawn from its cluster (`ltail`).
pub fn dot(table: &Table) -> String {
    fn nest(table: &Table, parent: Option<&str>, depth: usize, out: &mut String) {
        let pad = "    ".repeat(depth);
        for s in children(table, parent) {
            match s.kind {
                StateKind::Superstate => {
                    let _ = writeln!(out, "{pad}subgraph cluster_{} {{", id(&s.name));
                    let _ = writeln!(out, "{pad}    label=\"{}\";", dot_text(&s.name));
                    let _ = writeln!(out, "{pad}    {}__anchor [shape=point, style=invis];", id(&s.name));
                    nest(table, Some(&s.name), depth + 1, out);
                    let _ = writeln!(out, "{pad}}}");
                }
                StateKind::Leaf => {
                    let _ = writeln!(out, "{pad}{};", id(&s.name));
                }
                StateKind::Terminal => {
                    let _ = writeln!(out, "{pad}{} [shape=doublecircle, color=\"{TERMINAL_COLOR}\"];", id(&s.name));
                }
            }
        }
    }
    let mut out = String::from("digraph transitions {\n    compound=true;\n    node [shape=box, style=rounded];\n");
    out.push_str("    __initial [shape=point];\n");
    nest(table, None, 1, &mut out);
    let _ = writeln!(out, "    __initial -> {};", id(&table.initial));
    for e in &table.edges {
        let superstate = table.state(&e.from).is_some_and(|s| s.kind == StateKind::Superstate);
        let (tail, ltail) = if superstate {
            (format!("{}__anchor", id(&e.from)), format!(", ltail=cluster_{}", id(&e.from)))
        } else {
            (id(&e.from), String::new())
        };
        let style = match e.kind {
            EdgeKind::Internal => String::new(),
            EdgeKind::Continue => {
                format!(", style=dashed, color=\"{CONTINUE_COLOR}\", fontcolor=\"{CONTINUE_COLOR}\"")
            }
            EdgeKind::Terminal => {
                format!(", style=bold, color=\"{TERMINAL_COLOR}\", fontcolor=\"{TERMINAL_COLOR}\"")
            }
        };
        let _ = writeln!(out, "    {tail} -> {} [label=\"{}\"{ltail}{style}];", id(&e.to), dot_text(&e.id));
    }
    out.push_str("}\n");
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn code(text: &str) -> String {
    if text.is_empty() { String::new() } else { format!("`{}`", cell(text)) }
}

fn reason(e: &EdgeDecl) -> String {
    match e.kind {
        EdgeKind::Internal => String::new(),
        EdgeKind::Continue => format!("continue `{}`", e.reason.as_deref().unwrap_or_default()),
        EdgeKind::Terminal => format!("terminal `{}`", e.reason.as_deref().unwrap_or_default()),
    }
}

/// The Markdown document: the Mermaid diagram, then the states and every edge.
pub fn markdown(table: &Table, source: &str) -> String {
    let count = |f: fn(&EdgeKind) -> bool| table.edges.iter().filter(|e| f(&e.kind)).count();
    let mut out = String::from("# Transitions\n\n");
    let _ = writeln!(
        out,
        "Generated from `{source}` by `agentloop table --format markdown`; do not edit by hand.\n\
         Regenerate with `cargo run -- table --format markdown > docs/transitions.md`\n\
         or `UPDATE=1 cargo test --test it audit::docs_transitions_md_is_current`.\n"
    );
    let _ = writeln!(
        out,
        "{} states, {} edges: {} internal, {} continue (dotted, blue), {} terminal (thick, red).\n\
         Initial state: `{}`. Edges from a superstate apply in every state below it.\n",
        table.states.len(),
        table.edges.len(),
        count(|k| *k == EdgeKind::Internal),
        count(|k| *k == EdgeKind::Continue),
        count(|k| *k == EdgeKind::Terminal),
        table.initial
    );
    let _ = writeln!(out, "```mermaid\n{}```\n", mermaid(table));
    out.push_str("## States\n\n| state | kind | parent | does |\n|---|---|---|---|\n");
    for s in &table.states {
        let kind = match s.kind {
            StateKind::Leaf => "leaf",
            StateKind::Superstate => "superstate",
            StateKind::Terminal => "terminal",
        };
        let parent = s.parent.as_deref().unwrap_or_default();
        let _ = writeln!(out, "| `{}` | {kind} | {} | {} |", s.name, code(parent), cell(&s.doc));
    }
    out.push_str("\n## Edges\n\n| id | from | event | guard | to | reason | consumes | resets | sets |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for e in &table.edges {
        let list = |v: &[String]| v.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
        let sets = e
            .sets
            .iter()
            .map(|(k, v)| match v {
                FactValue::Bool(b) => format!("`{k} = {b}`"),
                FactValue::Value(v) => format!("`{k} = \"{v}\"`"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "| `{}` | `{}` | `{}` | {} | `{}` | {} | {} | {} | {sets} |",
            e.id,
            e.from,
            e.on,
            code(e.guard_text.as_deref().unwrap_or_default()),
            e.to,
            reason(e),
            list(&e.consumes),
            list(&e.resets)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn mermaid_nests_superstates_and_styles_edges_apart() {
        let m = mermaid(shipped());
        assert!(m.starts_with("flowchart TD\n    start_((start)) --> Prepare\n    subgraph Loop\n"), "{m}");
        assert!(
            m.contains("        subgraph Sampling\n            Request\n            Consume\n            Compact\n        end\n"),
            "{m}"
        );
        assert!(m.contains("    Done(((Done)))\n"), "{m}");
        assert!(m.contains("    Sampling ==>|\"sampling.abort\"| Done\n"), "{m}");
        assert!(m.contains("    Checkpoint -.->|\"checkpoint.next_turn\"| Prepare\n"), "{m}");
        let continues: Vec<String> = (shipped().edges.iter().enumerate())
            .filter(|(_, e)| e.kind == EdgeKind::Continue)
            .map(|(i, _)| (i + 1).to_string())
            .collect();
        assert!(!continues.is_empty());
        let style = format!("    linkStyle {} stroke:#1f6feb,color:#1f6feb\n", continues.join(","));
        assert!(m.contains(&style), "{m}");
    }

    #[test]
    fn dot_draws_superstate_edges_from_their_cluster() {
        let d = dot(shipped());
        assert!(
            d.contains("    Sampling__anchor -> Done [label=\"sampling.abort\", ltail=cluster_Sampling, style=bold"),
            "{d}"
        );
        assert!(d.contains("    Request -> Request [label=\"request.retry\"];\n"), "{d}");
        assert!(d.ends_with("}\n"));
    }

    #[test]
    fn markdown_escapes_pipes_in_guards() {
        let t = Table::load(
            "t.toml",
            "schema = 1\ninitial = \"A\"\n[[state]]\nname = \"A\"\n[[state]]\nname = \"Z\"\nkind = \"terminal\"\n[[event]]\nname = \"go\"\n[[fact]]\nname = \"a\"\n[[fact]]\nname = \"b\"\n[[edge]]\nid = \"x\"\nfrom = \"A\"\non = \"go\"\nguard = \"a || b\"\nto = \"Z\"\nterminal = \"completed\"\n",
        )
        .unwrap();
        let md = markdown(&t, "t.toml");
        assert!(md.contains("| `x` | `A` | `go` | `a \\|\\| b` | `Z` | terminal `completed` |  |  |  |\n"), "{md}");
        let md = markdown(shipped(), "loop.toml");
        assert!(
            md.contains(
                "| `consume.truncated` | `Consume` | `message_complete` | `!has_tool_use && truncation == output_cap` | `Recover` |  \
                 |  |  | `cause = \"truncated\"` |\n"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| `tools.done` | `ExecuteTools` | `tools_finished` |  | `Checkpoint` |  |  |  | `tools_ran = true` |\n"
            ),
            "{md}"
        );
    }
}
