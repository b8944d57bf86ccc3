//! The product model: the places (a state and the facts its entering edge fixed), counter
//! bounds, the split of counters into outer and inner ones, the mixed-radix encoding of counter
//! values, and each place's enabled edges for a given set of `COUNTER_left` bits (facts not
//! fixed range freely, so this is every edge some assignment of them enables).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use crate::audit::explore::split::{self, Estimate};
use crate::audit::guards::{events_of, facts_read, satisfiable};
use crate::engine::reason::ContinueReason;
use crate::engine::table::{EdgeDecl, EdgeKind, StateKind, Table};
use crate::table::guard::{FactValue, Facts};

/// The state whose entries count as model calls.
pub const CALL_STATE: &str = crate::engine::machine::StateName::Request.as_str();

/// A multiply-rotate hasher for the integer keys of the exploration (SipHash dominates otherwise).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by integers, with [`KeyHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// Enabled edges per place, by the `COUNTER_left` bits its guards read.
type EnabledCache = RefCell<Vec<FastMap<u64, Rc<[usize]>>>>;

/// One counter's bound for the exploration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CounterBound {
    /// Counter name.
    pub name: String,
    /// The bound (the table's, or the run option's override).
    pub bound: u32,
    /// Value at the start of a run: the bound minus `spent_at_start`.
    pub initial: u32,
    /// The run option that overrides the bound, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
}

impl CounterBound {
    /// The bounds of `table`'s counters, in table order, with the bound of counters whose
    /// option is `max_turns` set to `max_turns` when given.
    pub fn of(table: &Table, max_turns: Option<u32>) -> Vec<CounterBound> {
        table
            .counters
            .iter()
            .map(|c| {
                let bound = match (c.option.as_deref(), max_turns) {
                    (Some("max_turns"), Some(n)) => n,
                    _ => c.bound,
                };
                CounterBound {
                    name: c.name.clone(),
                    bound,
                    initial: bound.saturating_sub(c.spent_at_start),
                    option: c.option.clone(),
                }
            })
            .collect()
    }
}

/// Whether `edge` ends a turn and starts the next: a continue edge that consumes the turn
/// counter (the one `max_turns` sets: `next_turn`, and `task_notification`, whose turn a
/// background subagent's report starts); in a table without one, a continue edge named
/// `next_turn`.
pub(crate) fn is_next_turn(table: &Table, edge: &EdgeDecl) -> bool {
    edge.kind == EdgeKind::Continue
        && match table.counters.iter().find(|c| c.option.as_deref() == Some("max_turns")) {
            Some(turns) => edge.consumes.contains(&turns.name),
            None => edge.reason.as_deref() == Some(ContinueReason::NextTurn.as_str()),
        }
}

/// Model calls `edge` makes: `[excluding re-sends, including re-sends]`. It makes one when it
/// enters [`CALL_STATE`]; a re-send is an internal edge into it that consumes a counter (a
/// retry, the fallback switch).
pub(crate) fn edge_calls(edge: &EdgeDecl) -> [u64; 2] {
    let call = u64::from(edge.to == CALL_STATE);
    let resend = edge.kind == EdgeKind::Internal && !edge.consumes.is_empty();
    [if resend { 0 } else { call }, call]
}

/// A state as the exploration sees it: a table state with the facts the edge that entered it
/// `sets`, kept only when the state's guards read them (so edges that fix nothing the state
/// reads share a place). Every other fact is free there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// State index.
    pub state: usize,
    /// Facts fixed on entry.
    pub fixed: Facts,
}

/// What the exploration needs to know about one edge.
pub(crate) struct EdgeInfo {
    /// Target place index.
    pub to: usize,
    /// The target is a terminal state.
    pub terminal: bool,
    /// Model calls the edge makes: `[excluding re-sends, including re-sends]`.
    pub calls: [u64; 2],
    /// The edge is a `next_turn` continue edge.
    pub next_turn: bool,
    /// The edge ends a segment: terminal, `next_turn`, or touches an outer counter.
    pub exit: bool,
    /// What the edge does to the outer counters' code.
    pub on_outer: Effect,
    /// What the edge does to the inner counters' code.
    pub on_inner: Effect,
    /// Counters (indices) it consumes.
    pub consumes: Vec<usize>,
    /// Counters (indices) it resets.
    pub resets: Vec<usize>,
    /// Counters (indices) its guard reads as `COUNTER_left`.
    pub reads: Vec<usize>,
}

/// Mixed-radix encoding of a subset of the counters.
pub(crate) struct Radix {
    /// Counter indices, in digit order.
    pub counters: Vec<usize>,
    mult: Vec<u64>,
    base: Vec<u64>,
    /// Number of distinct codes.
    pub space: u64,
}

impl Radix {
    pub(crate) fn new(counters: Vec<usize>, bounds: &[CounterBound]) -> Option<Radix> {
        let mut mult = Vec::with_capacity(counters.len());
        let mut base = Vec::with_capacity(counters.len());
        let mut space = 1u64;
        for &c in &counters {
            mult.push(space);
            let b = u64::from(bounds[c].bound) + 1;
            base.push(b);
            space = space.checked_mul(b)?;
        }
        Some(Radix { counters, mult, base, space })
    }

    /// The code of these counters in `values`.
    pub fn encode(&self, values: &[u32]) -> u64 {
        self.counters.iter().zip(&self.mult).map(|(&c, m)| u64::from(values[c]) * m).sum()
    }

    /// Write these counters of `code` into `values`.
    pub fn decode(&self, code: u64, values: &mut [u32]) {
        for ((&c, m), b) in self.counters.iter().zip(&self.mult).zip(&self.base) {
            values[c] = ((code / m) % b) as u32;
        }
    }

    /// Bit `c` set when counter `c` of this radix is left (above zero) in `code`.
    pub fn mask(&self, code: u64) -> u64 {
        let mut mask = 0;
        for ((&c, &m), &b) in self.counters.iter().zip(&self.mult).zip(&self.base) {
            if !(code / m).is_multiple_of(b) {
                mask |= 1 << c;
            }
        }
        mask
    }

    /// What `consumes` and `resets` (counter indices) do to the digits of this radix.
    pub(crate) fn effect(&self, consumes: &[usize], resets: &[usize]) -> Effect {
        let digits = |list: &[usize]| -> Vec<(u64, u64)> {
            list.iter()
                .filter_map(|c| self.counters.iter().position(|x| x == c))
                .map(|i| (self.mult[i], self.base[i]))
                .collect()
        };
        Effect { consumes: digits(consumes), resets: digits(resets) }
    }
}

/// An edge's change to one radix's code, as (digit multiplier, digit base) pairs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Effect {
    consumes: Vec<(u64, u64)>,
    resets: Vec<(u64, u64)>,
}

impl Effect {
    /// The code after the edge: consumed digits one lower (never below zero), then reset
    /// digits at their bound.
    pub fn apply(&self, mut code: u64) -> u64 {
        for &(m, b) in &self.consumes {
            if !(code / m).is_multiple_of(b) {
                code -= m;
            }
        }
        for &(m, b) in &self.resets {
            let digit = (code / m) % b;
            code += (b - 1 - digit) * m;
        }
        code
    }

    /// Whether the edge changes no digit of this radix.
    pub fn is_empty(&self) -> bool {
        self.consumes.is_empty() && self.resets.is_empty()
    }
}

/// The table prepared for exploration.
pub(crate) struct Model<'t> {
    /// The table.
    pub table: &'t Table,
    /// Places: the initial one first, then in the order edges enter them.
    pub places: Vec<Place>,
    /// Bounds, in table order.
    pub bounds: Vec<CounterBound>,
    /// Counters that only change at segment exits.
    pub outer: Radix,
    /// Counters explored inside segments.
    pub inner: Radix,
    /// The split's cost estimate ([`split::choose`]).
    pub estimate: Estimate,
    /// Per edge, in table order.
    pub edges: Vec<EdgeInfo>,
    /// Index of the initial place (the initial state, nothing fixed).
    pub initial: usize,
    /// Per place, the bits of the counters whose `COUNTER_left` its guards read.
    read: Vec<u64>,
    cache: EnabledCache,
}

impl<'t> Model<'t> {
    /// Prepare `table`, with the bound of counters whose option is `max_turns` set to `max_turns`,
    /// and the counters split into outer and inner ones by [`split::choose`].
    /// `None` when the counter values cannot be encoded in 64 bits.
    pub fn new(table: &'t Table, max_turns: Option<u32>) -> Option<Model<'t>> {
        let bounds = CounterBound::of(table, max_turns);
        if bounds.len() > 64 {
            return None;
        }
        let index = |name: &str| table.counters.iter().position(|c| c.name == name);
        let mut order: Vec<usize> = Vec::new();
        for c in table.ranking.iter().filter_map(|n| index(n)).chain(0..bounds.len()) {
            if !order.contains(&c) {
                order.push(c);
            }
        }
        let state_index = |name: &str| table.states.iter().position(|s| s.name == name).unwrap_or(0);
        let mut places = vec![Place { state: state_index(&table.initial), fixed: Facts::new() }];
        let targets: Vec<usize> = table
            .edges
            .iter()
            .map(|e| {
                let read = facts_read(table, &e.to);
                let fixed: Facts =
                    e.sets.iter().filter(|(k, _)| read.contains(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                let place = Place { state: state_index(&e.to), fixed };
                places.iter().position(|p| *p == place).unwrap_or_else(|| {
                    places.push(place);
                    places.len() - 1
                })
            })
            .collect();
        let uses: Vec<split::EdgeUse> = table
            .edges
            .iter()
            .map(|e| split::EdgeUse {
                consumes: e.consumes.iter().filter_map(|c| index(c)).fold(0, |m, c| m | 1 << c),
                resets: e.resets.iter().filter_map(|c| index(c)).fold(0, |m, c| m | 1 << c),
                exit: is_next_turn(table, e) || table.state(&e.to).is_some_and(|s| s.kind == StateKind::Terminal),
                terminal: table.state(&e.to).is_some_and(|s| s.kind == StateKind::Terminal),
            })
            .collect();
        let choice = split::choose(&order, &bounds, places.len() as u64, &uses);
        let in_order = |set: u64| order.iter().copied().filter(|c| set & (1 << c) != 0).collect::<Vec<_>>();
        let all = order.iter().fold(0u64, |m, c| m | 1 << c);
        let outer = Radix::new(in_order(choice.outer), &bounds)?;
        let inner = Radix::new(in_order(all & !choice.outer), &bounds)?;
        (places.len() as u64).checked_mul(inner.space)?;
        let edges = table
            .edges
            .iter()
            .zip(targets)
            .map(|(e, to)| {
                let consumes: Vec<usize> = e.consumes.iter().filter_map(|c| index(c)).collect();
                let resets: Vec<usize> = e.resets.iter().filter_map(|c| index(c)).collect();
                let terminal = table.state(&e.to).is_some_and(|s| s.kind == StateKind::Terminal);
                let next_turn = is_next_turn(table, e);
                let on_outer = outer.effect(&consumes, &resets);
                let on_inner = inner.effect(&consumes, &resets);
                let reads = e
                    .guard
                    .iter()
                    .flat_map(|g| g.atoms().into_keys())
                    .filter(|atom| table.fact(atom).is_none())
                    .filter_map(|atom| atom.strip_suffix("_left").and_then(&index))
                    .collect();
                EdgeInfo {
                    to,
                    terminal,
                    calls: edge_calls(e),
                    next_turn,
                    exit: terminal || next_turn || !on_outer.is_empty(),
                    on_outer,
                    on_inner,
                    consumes,
                    resets,
                    reads,
                }
            })
            .collect();
        let read = places
            .iter()
            .map(|p| {
                let ancestry = table.ancestry(&table.states[p.state].name);
                let from_here = table.edges.iter().zip(&edges).filter(|(e, _)| ancestry.contains(&e.from.as_str()));
                from_here.flat_map(|(_, info): (_, &EdgeInfo)| &info.reads).fold(0u64, |bits, c| bits | 1 << c)
            })
            .collect();
        let cache = RefCell::new((0..places.len()).map(|_| FastMap::default()).collect());
        Some(Model { table, places, bounds, outer, inner, estimate: choice.estimate, edges, initial: 0, read, cache })
    }

    /// Initial counter values, in table order.
    pub fn initial_values(&self) -> Vec<u32> {
        self.bounds.iter().map(|b| b.initial).collect()
    }

    /// Edges out of `place` that some assignment of its free facts enables when exactly the
    /// counters in `mask` are left, sorted by table order.
    pub fn enabled(&self, place: usize, mask: u64) -> Rc<[usize]> {
        let mask = mask & self.read[place];
        if let Some(hit) = self.cache.borrow()[place].get(&mask) {
            return Rc::clone(hit);
        }
        let edges: Rc<[usize]> = self.enabled_knowing(place, mask, u64::MAX).into();
        self.cache.borrow_mut()[place].insert(mask, Rc::clone(&edges));
        edges
    }

    /// Edges out of `place` that some assignment of its free facts and of the `COUNTER_left`
    /// atoms of counters outside `known` enables, when exactly the counters in `mask` (of
    /// those in `known`) are left; sorted by table order. With every counter known, what
    /// [`Model::enabled`] caches.
    pub fn enabled_knowing(&self, place: usize, mask: u64, known: u64) -> Vec<usize> {
        let table = self.table;
        let Place { state, fixed } = &self.places[place];
        let name = &table.states[*state].name;
        // The known counters' `_left` atoms come from `mask`, the facts the entering edge set
        // are fixed; an edge is enabled when some assignment of the rest of what its own guard
        // reads makes it hold (the groups are exclusive, so it is then the edge taken).
        let mut base: Facts = fixed.clone();
        for (c, counter) in table.counters.iter().enumerate().filter(|(c, _)| known & (1 << c) != 0) {
            let atom = format!("{}_left", counter.name);
            if table.fact(&atom).is_none() {
                base.insert(atom, FactValue::Bool(mask & (1 << c) != 0));
            }
        }
        let mut out = BTreeSet::new();
        for event in events_of(table, name) {
            for e in table.edges_from(name, event) {
                if satisfiable(table, e.guard.as_ref(), &base) {
                    out.extend(table.edges.iter().position(|x| std::ptr::eq(x, e)));
                }
            }
        }
        out.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::shipped;

    #[test]
    fn splits_counters_and_encodes_values() {
        let m = Model::new(shipped(), None).unwrap();
        let names = |r: &Radix| r.counters.iter().map(|&c| m.bounds[c].name.as_str()).collect::<Vec<_>>();
        // Every counter is on one side; each side's space is the product of its ranges.
        let (mut all, space) = (names(&m.outer), |r: &Radix| {
            r.counters.iter().map(|&c| u64::from(m.bounds[c].bound) + 1).product::<u64>()
        });
        all.extend(names(&m.inner));
        all.sort_unstable();
        let mut declared: Vec<&str> = shipped().counters.iter().map(|c| c.name.as_str()).collect();
        declared.sort_unstable();
        assert_eq!(all, declared);
        assert_eq!((m.outer.space, m.inner.space), (space(&m.outer), space(&m.inner)));
        let v = m.initial_values();
        // The split the cost model chooses for the shipped table (a table edit that moves it
        // shows here, for `cargo insta review`).
        insta::assert_snapshot!(
            "shipped_split",
            format!(
                "outer: {}\ninner: {}\ninitial values: {v:?}",
                names(&m.outer).join(", "),
                names(&m.inner).join(", ")
            )
        );
        let mut back = vec![0; v.len()];
        m.inner.decode(m.inner.encode(&v), &mut back);
        m.outer.decode(m.outer.encode(&v), &mut back);
        assert_eq!(back, v);
    }

    /// (state, facts fixed) of every place, and the place each edge enters.
    #[test]
    fn places_keep_the_facts_the_entering_edge_sets() {
        let t = shipped();
        let m = Model::new(t, None).unwrap();
        let show = |p: &Place| {
            let fixed: Vec<String> = p.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{} {}", t.states[p.state].name, fixed.join(","))
        };
        let places: Vec<String> = m.places.iter().map(show).collect();
        assert_eq!(
            places,
            vec![
                "Prepare ",
                "Request ",
                "Done ",
                "Compact ",
                "ExecuteTools ",
                "Prepare tools_pending=false",
                "Consume ",
                "Recover cause=prompt_too_long",
                "Checkpoint tools_ran=false",
                "Recover cause=truncated",
                "Checkpoint tools_ran=true",
            ]
        );
        let into = |id: &str| places[m.edges[t.edges.iter().position(|e| e.id == id).unwrap()].to].clone();
        assert_eq!(into("consume.prompt_too_long"), "Recover cause=prompt_too_long");
        assert_eq!(into("tools.done"), "Checkpoint tools_ran=true");
        assert_eq!(into("checkpoint.next_turn"), "Prepare tools_pending=false");
        // Each place enables only the edges its fixed facts allow.
        let everything = (1 << t.counters.len()) - 1;
        let at = |label: &str| places.iter().position(|p| p == label).unwrap();
        let ids =
            |label: &str| m.enabled(at(label), everything).iter().map(|&e| t.edges[e].id.as_str()).collect::<Vec<_>>();
        assert_eq!(ids("Recover cause=truncated"), vec!["recover.max_output_tokens_escalate"]);
        // Only the run's start can finish a resumed tool phase.
        assert!(ids("Prepare ").contains(&"prepare.resume_tools"));
        assert!(!ids("Prepare tools_pending=false").contains(&"prepare.resume_tools"));
        assert_eq!(
            ids("Recover cause=prompt_too_long"),
            vec!["recover.collapse_drain_retry", "recover.reactive_compact_retry", "recover.prompt_too_long"]
        );
        assert_eq!(
            ids("Checkpoint tools_ran=true"),
            vec![
                "checkpoint.abort",
                "checkpoint.hook_stopped",
                "checkpoint.next_turn",
                "checkpoint.structured_output",
                "checkpoint.structured_output_retry"
            ]
        );
        assert_eq!(
            ids("Checkpoint tools_ran=false"),
            vec![
                "checkpoint.abort",
                "checkpoint.stop_hook_prevented",
                "checkpoint.stop_hook_blocking",
                "checkpoint.token_budget_continuation",
                "checkpoint.task_notification",
                "checkpoint.completed"
            ]
        );
    }

    #[test]
    fn enabled_edges_follow_the_counter_bits() {
        let t = shipped();
        let m = Model::new(t, Some(3)).unwrap();
        assert_eq!(m.bounds[2].initial, 2);
        let request = m.places.iter().position(|p| t.states[p.state].name == "Request").unwrap();
        let ids = |mask: u64| m.enabled(request, mask).iter().map(|&e| t.edges[e].id.as_str()).collect::<Vec<_>>();
        let everything = (1 << t.counters.len()) - 1;
        assert_eq!(
            ids(everything),
            vec![
                "request.stream_opened",
                "request.retry",
                "request.overload_retry",
                "request.wait_over_cap",
                "request.prompt_too_long",
                "request.model_error",
                "request.budget_exhausted",
                "sampling.abort"
            ]
        );
        assert_eq!(
            ids(0),
            vec![
                "request.stream_opened",
                "request.retries_exhausted",
                "request.wait_over_cap",
                "request.prompt_too_long",
                "request.model_error",
                "request.budget_exhausted",
                "sampling.abort"
            ]
        );
    }
}
