//! Structure checks: the table format's declaration rules ([`crate::table::check`]) with the
//! engine's reasons, and the checks on a loaded table (reasons declared, targets, terminal
//! edges, dead ends).

use crate::engine::table::{EdgeKind, ReasonDecl, StateKind, Table};
use crate::table::check;
use crate::table::finding::{Code, Finding, Location};

pub use crate::table::check::InputError;

/// Parse `text` leniently and report every declaration problem, a declared reason checked
/// against the reasons the engine knows.
///
/// # Errors
/// [`InputError::Toml`] or [`InputError::Unusable`] naming the line.
pub fn raw_findings(path: &str, text: &str) -> Result<Vec<Finding>, InputError> {
    let engine = ReasonDecl::engine();
    check::raw_findings(path, text, Some(&ReasonDecl::known(&engine)))
}

/// Checks on a loaded table: every reason declared, edge targets and terminal edges well
/// formed, and no non-terminal leaf without outgoing edges.
pub fn table_findings(table: &Table, path: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let edge_loc = |e: &crate::engine::table::EdgeDecl| Location::at(path, Some(e.line)).edge(&e.id);
    for r in &table.reasons {
        if !table.edges.iter().any(|e| e.reason.as_deref() == Some(r.name.as_str())) {
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
        let terminal_edge = e.kind == EdgeKind::Terminal;
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
