//! The statechart as SVG, laid out when the view is written.
//!
//! A table is small (ten states, fifty edges) and hierarchical, so the layout is our own and
//! fixed by the table alone, so two views of one table look the same:
//! - the leaf states stand in one row, in the order a depth-first walk from the initial
//!   state meets them (so the main path reads left to right), siblings of a superstate
//!   kept together, and each superstate is a box
//!   around its children (nested boxes for nested superstates);
//! - an edge to a later state in the row arcs above it, to an earlier one below it, higher
//!   the farther it goes; parallel edges between two states are stacked; an edge back to
//!   its own state is a loop above it;
//! - each terminal reason is an end node in a row beneath, and a terminal edge runs down to
//!   the node of its reason; an edge out of a superstate leaves from its box.
//!
//! Every edge is a `path` with `data-edge` (its index in the table), a `title` (id, event,
//! guard, counters), and a `text` with `data-count` for the view's script to fill in.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::engine::table::{EdgeKind, StateKind, Table};

const NODE_W: f64 = 128.0;
const NODE_H: f64 = 40.0;
const GAP: f64 = 56.0;
const MARGIN: f64 = 24.0;
/// Padding of a superstate box per level of superstates inside it.
const BOX_PAD: f64 = 14.0;
const END_W: f64 = 150.0;
const END_H: f64 = 26.0;

/// Where a state's box is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Place {
    fn cx(&self) -> f64 {
        self.x + self.w / 2.0
    }
}

/// The computed layout: leaves and superstates by name, end nodes by reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Leaf states, in row order.
    pub leaves: Vec<String>,
    /// Every leaf's and superstate's box.
    pub states: BTreeMap<String, Place>,
    /// Each terminal reason's end node, in the table's order of reasons.
    pub ends: Vec<(String, Place)>,
    /// The drawing's size.
    pub width: f64,
    /// The drawing's height.
    pub height: f64,
    /// The row's top.
    row: f64,
    /// How far each arc between two different states rises above the row (forward) or falls
    /// below it (backward), by the edge's index in the table: the one measure the margins
    /// and the drawing share. Loops and terminal edges have none.
    arcs: BTreeMap<usize, f64>,
}

/// Lay `table` out.
pub fn layout(table: &Table) -> Layout {
    let order = discovery_order(table);
    let rank = |name: &str| order.iter().position(|s| s == name).unwrap_or(usize::MAX);
    // The first leaf a state holds (or is), to order siblings.
    let children = |parent: Option<&str>| -> Vec<&str> {
        let mut kids: Vec<&str> = table
            .states
            .iter()
            .filter(|s| s.parent.as_deref() == parent && s.kind != StateKind::Terminal)
            .map(|s| s.name.as_str())
            .collect();
        kids.sort_by_key(|k| first_rank(table, k, &rank));
        kids
    };
    let mut leaves = Vec::new();
    let mut stack: Vec<&str> = children(None).into_iter().rev().collect();
    while let Some(state) = stack.pop() {
        let kids = children(Some(state));
        if kids.is_empty() {
            if table.state(state).is_some_and(|s| s.kind == StateKind::Leaf) {
                leaves.push(state.to_owned());
            }
        } else {
            stack.extend(kids.into_iter().rev());
        }
    }
    let depth_below = |name: &str| height_of(table, name);
    let top_pad = depth_below(table.states.iter().find(|s| s.parent.is_none()).map_or("", |s| s.name.as_str()));
    // The boxes are placed with the row at 0, then moved down once the arcs above it are
    // measured: their heights depend on the boxes' x alone.
    let row = 0.0;
    let mut states = BTreeMap::new();
    for (i, leaf) in leaves.iter().enumerate() {
        let x = MARGIN + BOX_PAD * top_pad as f64 + i as f64 * (NODE_W + GAP);
        states.insert(leaf.clone(), Place { x, y: row, w: NODE_W, h: NODE_H });
    }
    // Superstates, innermost first, each around its leaves.
    let mut supers: Vec<&str> =
        table.states.iter().filter(|s| s.kind == StateKind::Superstate).map(|s| s.name.as_str()).collect();
    supers.sort_by_key(|s| depth_below(s));
    for name in supers {
        let inside: Vec<Place> = leaves
            .iter()
            .filter(|leaf| is_within(table, leaf, name))
            .filter_map(|leaf| states.get(leaf))
            .copied()
            .collect();
        if inside.is_empty() {
            continue;
        }
        let pad = BOX_PAD * depth_below(name) as f64;
        let left = inside.iter().map(|p| p.x).fold(f64::INFINITY, f64::min) - pad;
        let right = inside.iter().map(|p| p.x + p.w).fold(f64::NEG_INFINITY, f64::max) + pad;
        let label = 16.0 * depth_below(name) as f64;
        states.insert(
            name.to_owned(),
            Place { x: left, y: row - pad - label, w: right - left, h: NODE_H + 2.0 * pad + label },
        );
    }
    // Each arc's height, from the centres of the boxes it joins, the k-th between the same
    // two states stacked above the ones before; room for the highest above the row and the
    // deepest below it.
    let (mut arcs, mut pairs) = (BTreeMap::new(), BTreeMap::new());
    let (mut above, mut below) = (0.0f64, 0.0f64);
    for (i, edge) in table.edges.iter().enumerate().filter(|(_, e)| e.kind != EdgeKind::Terminal && e.from != e.to) {
        let (Some(from), Some(to)) = (states.get(&edge.from), states.get(&edge.to)) else { continue };
        let (a, b) = (from.cx(), to.cx());
        let k = pairs.entry((&edge.from, &edge.to)).and_modify(|k| *k += 1).or_insert(0usize);
        let h = arc_height((b - a).abs() / (NODE_W + GAP), *k as f64);
        if b > a {
            above = above.max(h)
        } else {
            below = below.max(h)
        }
        arcs.insert(i, h);
    }
    // Arcs leave from the row; the boxes' labels need their own room above it.
    let row = MARGIN + (above * 0.75 + 12.0).max((BOX_PAD + 16.0) * top_pad as f64 + 8.0);
    for place in states.values_mut() {
        place.y += row;
    }
    let row_right = states.values().map(|p| p.x + p.w).fold(0.0, f64::max);
    let below_row = row + NODE_H + BOX_PAD * top_pad as f64 + below * 0.75 + 24.0;
    let reasons: Vec<&str> = table.reasons.iter().filter(|r| r.terminal).map(|r| r.name.as_str()).collect();
    let end_row = below_row + 40.0;
    let end_w = reasons.iter().map(|r| r.len() as f64 * 7.4 + 22.0).fold(END_W, f64::max);
    let per_line = (((row_right - MARGIN) / (end_w + 12.0)).floor() as usize).max(1);
    let ends: Vec<(String, Place)> = reasons
        .iter()
        .enumerate()
        .map(|(i, reason)| {
            let (line, col) = (i / per_line, i % per_line);
            let x = MARGIN + col as f64 * (end_w + 12.0);
            let y = end_row + line as f64 * (END_H + 14.0);
            ((*reason).to_owned(), Place { x, y, w: end_w, h: END_H })
        })
        .collect();
    let height = ends.iter().map(|(_, p)| p.y + p.h).fold(below_row, f64::max) + MARGIN;
    let width = row_right.max(ends.iter().map(|(_, p)| p.x + p.w).fold(0.0, f64::max)) + MARGIN;
    Layout { leaves, states, ends, width, height, row, arcs }
}

/// States in the order a depth-first walk from the initial state meets them, taking each
/// state's edges in file order (an edge out of a superstate leaves each of its states). A
/// table declares a state's usual way on first, so the main path reads left to right.
fn discovery_order(table: &Table) -> Vec<String> {
    let mut seen = vec![table.initial.clone()];
    // The walk's stack: each state entered, and how many of its edges were looked at.
    let mut stack = vec![(table.initial.clone(), 0usize)];
    while let Some((state, next)) = stack.last_mut() {
        let leaving = table.edges.iter().filter(|e| e.from == *state || is_within(table, state, &e.from)).nth(*next);
        *next += 1;
        match leaving {
            Some(edge) if !seen.contains(&edge.to) => {
                seen.push(edge.to.clone());
                stack.push((edge.to.clone(), 0));
            }
            Some(_) => {}
            None => {
                stack.pop();
            }
        }
    }
    for state in &table.states {
        if !seen.contains(&state.name) {
            seen.push(state.name.clone());
        }
    }
    seen
}

/// The earliest discovery rank of `name` or of any state inside it.
fn first_rank(table: &Table, name: &str, rank: &impl Fn(&str) -> usize) -> usize {
    table
        .states
        .iter()
        .filter(|s| s.name == name || is_within(table, &s.name, name))
        .map(|s| rank(&s.name))
        .min()
        .unwrap_or(usize::MAX)
}

/// Whether `state` lies (at any depth) inside the superstate `outer`. The walk up stops after
/// as many steps as there are states, so even a table whose parents loop cannot hang it.
fn is_within(table: &Table, state: &str, outer: &str) -> bool {
    let mut current = table.state(state).and_then(|s| s.parent.as_deref());
    for _ in 0..table.states.len() {
        match current {
            Some(parent) if parent == outer => return true,
            Some(parent) => current = table.state(parent).and_then(|s| s.parent.as_deref()),
            None => return false,
        }
    }
    false
}

/// Levels of superstates from `name` down: 0 for a leaf, 1 for a superstate of leaves (at
/// most the number of states, whatever the table).
fn height_of(table: &Table, name: &str) -> usize {
    table
        .states
        .iter()
        .filter(|s| is_within(table, &s.name, name))
        .map(|s| {
            let mut depth = 1;
            let mut current = s.parent.as_deref();
            while let Some(parent) = current.filter(|p| *p != name && depth <= table.states.len()) {
                depth += 1;
                current = table.state(parent).and_then(|p| p.parent.as_deref());
            }
            depth
        })
        .max()
        .unwrap_or(0)
}
/// The chart of `table` as an SVG element.
pub fn svg(table: &Table) -> String {
    let layout = layout(table);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg id="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {:.0} {:.0}" width="{:.0}" height="{:.0}" role="img" aria-label="the statechart of the transition table">"#,
        layout.width, layout.height, layout.width, layout.height
    );
    out.push_str(r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="context-stroke"/></marker></defs>"#);
    // Superstates first (outermost first), so the leaves and edges are drawn over them.
    let mut supers: Vec<(&String, &Place)> =
        layout.states.iter().filter(|(name, _)| !layout.leaves.contains(name)).collect();
    supers.sort_by(|a, b| (b.1.w * b.1.h).total_cmp(&(a.1.w * a.1.h)));
    for (name, p) in supers {
        node(&mut out, "super", "data-state", name, p, 10.0, (p.x + 8.0, p.y + 14.0));
    }
    let mut loops: BTreeMap<String, usize> = BTreeMap::new();
    let mut leaving: BTreeMap<String, usize> = BTreeMap::new();
    let terminal_count =
        |from: &str| table.edges.iter().filter(|e| e.kind == EdgeKind::Terminal && e.from == from).count();
    for (i, edge) in table.edges.iter().enumerate() {
        let Some(from) = layout.states.get(&edge.from) else { continue };
        let (d, label) = if edge.kind == EdgeKind::Terminal {
            let Some((_, end)) = layout.ends.iter().find(|(r, _)| Some(r) == edge.reason.as_ref()) else { continue };
            let k = leaving.entry(edge.from.clone()).or_insert(0);
            let n = terminal_count(&edge.from).max(1) as f64;
            let x0 = from.x + from.w * (*k as f64 + 1.0) / (n + 1.0);
            *k += 1;
            let y0 = from.y + from.h;
            let (x1, y1) = (end.cx(), end.y);
            let mid = (y0 + y1) / 2.0;
            (format!("M{x0:.1},{y0:.1} C{x0:.1},{mid:.1} {x1:.1},{mid:.1} {x1:.1},{y1:.1}"), (x1, y1 - 4.0))
        } else if let Some(to) = layout.states.get(&edge.to) {
            if edge.from == edge.to {
                let k = loops.entry(edge.from.clone()).or_insert(0);
                let h = 26.0 + 14.0 * *k as f64;
                let x0 = from.x + 30.0 + 10.0 * *k as f64;
                let x1 = x0 + 34.0;
                *k += 1;
                let y = from.y;
                (
                    format!("M{x0:.1},{y:.1} C{x0:.1},{:.1} {x1:.1},{:.1} {x1:.1},{y:.1}", y - h, y - h),
                    ((x0 + x1) / 2.0, y - h * 0.75 - 2.0),
                )
            } else {
                let Some(&h) = layout.arcs.get(&i) else { continue };
                let forward = to.cx() > from.cx();
                let (x0, x1) =
                    if forward { (from.cx() + 14.0, to.cx() - 14.0) } else { (from.cx() - 14.0, to.cx() + 14.0) };
                let (y, apex) = if forward {
                    (from.y.min(to.y), from.y.min(to.y) - h)
                } else {
                    (from.y.max(to.y) + NODE_H, from.y.max(to.y) + NODE_H + h)
                };
                (
                    format!("M{x0:.1},{y:.1} C{x0:.1},{apex:.1} {x1:.1},{apex:.1} {x1:.1},{y:.1}"),
                    ((x0 + x1) / 2.0, if forward { y - h * 0.75 - 3.0 } else { y + h * 0.75 + 11.0 }),
                )
            }
        } else {
            continue;
        };
        let mut title = format!("{}: {} → {} on {}", edge.id, edge.from, edge.to, edge.on);
        if let Some(guard) = &edge.guard_text {
            let _ = write!(title, "\nwhen {guard}");
        }
        if !edge.consumes.is_empty() {
            let _ = write!(title, "\nconsumes {}", edge.consumes.join(", "));
        }
        if !edge.resets.is_empty() {
            let _ = write!(title, "\nresets {}", edge.resets.join(", "));
        }
        if let Some(reason) = &edge.reason {
            let _ = write!(title, "\n{} {reason}", edge.kind.as_str());
        }
        let _ = write!(
            out,
            r#"<g class="edge {kind}" data-edge="{i}"><path d="{d}" marker-end="url(#arrow)"/><path class="hit" d="{d}"/><text data-count="{i}" x="{:.1}" y="{:.1}"></text><title>{}</title></g>"#,
            label.0,
            label.1,
            escape(&title),
            kind = edge.kind.as_str(),
        );
    }
    for leaf in &layout.leaves {
        let p = &layout.states[leaf];
        let class = if *leaf == table.initial { "state initial" } else { "state" };
        node(&mut out, class, "data-state", leaf, p, 8.0, (p.cx(), p.y + p.h / 2.0 + 5.0));
    }
    for (reason, p) in &layout.ends {
        node(&mut out, "end", "data-reason", reason, p, 13.0, (p.cx(), p.y + p.h / 2.0 + 4.0));
    }
    out.push_str("</svg>");
    out
}

/// A box named `name`: a group of class `class` whose `attr` is the name, a rectangle at `p`
/// with corners of radius `rx`, and the name as text at `text`.
fn node(out: &mut String, class: &str, attr: &str, name: &str, p: &Place, rx: f64, text: (f64, f64)) {
    let _ = write!(
        out,
        r#"<g class="{class}" {attr}="{n}"><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="{rx}"/><text x="{:.1}" y="{:.1}">{n}</text></g>"#,
        p.x,
        p.y,
        p.w,
        p.h,
        text.0,
        text.1,
        n = escape(name)
    );
}

/// How far an arc between states `span` places apart rises (or falls), the `k`-th of those
/// between the same two states (a cubic's control points; the curve reaches three quarters).
fn arc_height(span: f64, k: f64) -> f64 {
    34.0 + 22.0 * span + 12.0 * k
}

/// `text` safe inside an HTML or SVG element or a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn the_shipped_table_is_one_row_of_leaves_in_nested_boxes_above_its_end_nodes() {
        let layout = layout(shipped());
        assert_eq!(
            layout.leaves,
            ["Prepare", "Request", "Consume", "Compact", "ExecuteTools", "Checkpoint", "Recover"]
        );
        let place = |name: &str| layout.states[name];
        // Sampling holds Compact, Request and Consume, and Loop holds everything.
        for leaf in ["Compact", "Request", "Consume"] {
            let (outer, inner) = (place("Sampling"), place(leaf));
            assert!(outer.x < inner.x && inner.x + inner.w < outer.x + outer.w, "{leaf} inside Sampling");
        }
        let (outer, inner) = (place("Loop"), place("Sampling"));
        assert!(outer.x < inner.x && outer.y < inner.y && inner.x + inner.w < outer.x + outer.w);
        let terminal: Vec<&str> = shipped().reasons.iter().filter(|r| r.terminal).map(|r| r.name.as_str()).collect();
        assert_eq!(layout.ends.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>(), terminal);
        assert!(
            layout.ends.iter().all(|(_, p)| p.y > place("Loop").y + place("Loop").h),
            "end nodes below the machine"
        );
        // The same table, the same drawing.
        assert_eq!(svg(shipped()), svg(shipped()));
    }

    /// The margins come from the same arcs the drawing draws: every arc's curve stays inside
    /// the drawing, above the row or between the row and the end nodes.
    #[test]
    fn every_arc_fits_the_room_the_layout_made_for_it() {
        let table = shipped();
        let layout = layout(table);
        assert!(!layout.arcs.is_empty());
        let end_top = layout.ends.iter().map(|(_, p)| p.y).fold(f64::INFINITY, f64::min);
        for (&i, &h) in &layout.arcs {
            let edge = &table.edges[i];
            let (from, to) = (layout.states[&edge.from], layout.states[&edge.to]);
            if to.cx() > from.cx() {
                assert!(from.y.min(to.y) - 0.75 * h >= 0.0, "{} rises out of the drawing", edge.id);
            } else {
                assert!(from.y.max(to.y) + NODE_H + 0.75 * h < end_top, "{} falls onto the end nodes", edge.id);
            }
        }
    }

    #[test]
    fn every_edge_of_the_shipped_table_is_drawn_with_its_title() {
        let drawn = svg(shipped());
        for (i, edge) in shipped().edges.iter().enumerate() {
            assert!(drawn.contains(&format!(r#"data-edge="{i}""#)), "{} drawn", edge.id);
            assert!(
                drawn.contains(&format!("<title>{}: {} → {} on {}", edge.id, edge.from, edge.to, edge.on)),
                "{} titled",
                edge.id
            );
        }
        assert_eq!(drawn.matches(r#"<g class="edge "#).count(), shipped().edges.len());
    }
}
