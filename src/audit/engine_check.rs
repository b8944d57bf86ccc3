//! Whether this engine can run a table: the check `run --table` and `demo --table` add to the
//! audit.
//!
//! The engine's vocabulary is generated from the shipped table, and each edge's effect lives
//! in one handler. An edited table may change what the loop *decides*: counter bounds, guards,
//! `consumes` and `resets`, the ranking, new counters, and it may drop edges (and the reasons
//! only they carried) as long as the audit still proves it total and terminating. It may not
//! change what the engine *does*: the states and their hierarchy, the events, the facts and
//! their values, the counters the engine reads, and each kept edge's source, event, target,
//! reason and `sets`.

use std::collections::BTreeMap;

use crate::engine::edge::Edge;
use crate::engine::generated::SUPPLIED;
use crate::engine::table::{Table, shipped};
use crate::table::finding::{Code, Finding, Location};

/// Everything in `table` this engine cannot run, one finding each.
pub fn engine_findings(table: &Table, path: &str) -> Vec<Finding> {
    let engine = shipped();
    let mut out = Vec::new();
    let whole = || Location::at(path, None);
    let mut push = |message: String, at: Location| out.push(Finding::new(Code::EngineMismatch, message, at));

    if table.initial != engine.initial {
        push(format!("the run starts in `{}`, not in `{}`", engine.initial, table.initial), whole());
    }
    let states = |t: &Table| -> BTreeMap<String, (String, Option<String>)> {
        t.states.iter().map(|s| (s.name.clone(), (format!("{:?}", s.kind), s.parent.clone()))).collect()
    };
    if states(table) != states(engine) {
        push(
            format!(
                "the states and their hierarchy must be the engine's: {}",
                engine.states.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
            whole(),
        );
    }
    let events = |t: &Table| t.events.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    if events(table) != events(engine) {
        push(format!("the events must be the engine's: {}", events(engine).join(", ")), whole());
    }
    let facts = |t: &Table| t.facts.iter().map(|f| (f.name.clone(), f.values.clone())).collect::<BTreeMap<_, _>>();
    if facts(table) != facts(engine) {
        let names: Vec<String> = facts(engine).into_keys().collect();
        push(format!("the facts and their values must be the engine's: {}", names.join(", ")), whole());
    }
    for c in &engine.counters {
        match table.counter(&c.name) {
            None => push(format!("the engine reads counter `{}`, which the table lacks", c.name), whole()),
            Some(mine) if mine.option != c.option => push(
                format!("counter `{}` must keep `option = {:?}`", c.name, c.option.as_deref().unwrap_or("")),
                whole(),
            ),
            Some(_) => {}
        }
    }
    for e in &table.edges {
        let at = Location::at(path, Some(e.line)).edge(&e.id);
        let Some(known) = Edge::from_id(&e.id).and_then(|id| engine.edge(id.id())) else {
            push(format!("the engine has no effect for edge `{}`", e.id), at);
            continue;
        };
        let mut changed = Vec::new();
        if e.from != known.from {
            changed.push(format!("leave `{}`", known.from));
        }
        if e.on != known.on {
            changed.push(format!("fire on `{}`", known.on));
        }
        if e.to != known.to {
            changed.push(format!("enter `{}`", known.to));
        }
        if (e.kind, &e.reason) != (known.kind, &known.reason) {
            changed.push(match known.reason.as_deref() {
                Some(reason) => format!("carry the {} reason `{reason}`", known.kind.as_str()),
                None => "stay internal".to_owned(),
            });
        }
        if e.sets != known.sets {
            changed.push("keep its `sets`".to_owned());
        }
        if !changed.is_empty() {
            push(format!("edge `{}` must {}: its effect depends on it", e.id, changed.join(", ")), at);
        }
    }
    for r in &table.reasons {
        let kind = if r.terminal { "terminal" } else { "continue" };
        match engine.reasons.iter().find(|k| k.name == r.name && k.terminal == r.terminal) {
            None => push(format!("the engine has no {kind} reason `{}`", r.name), whole()),
            Some(known) if known.exit_code != r.exit_code => push(
                format!(
                    "terminal reason `{}` has exit_code {}, but the engine exits {} with it",
                    r.name,
                    r.exit_code.unwrap_or_default(),
                    known.exit_code.unwrap_or_default()
                ),
                whole(),
            ),
            Some(_) => {}
        }
    }
    for e in &table.edges {
        let Some(guard) = &e.guard else { continue };
        let supplied = SUPPLIED.iter().find(|(s, on, _)| *s == e.from && *on == e.on).map_or(&[][..], |(_, _, f)| f);
        for atom in guard.atoms().into_keys() {
            if table.fact(&atom).is_none() || supplied.contains(&atom.as_str()) || set_on_entry(table, &e.from, &atom) {
                continue;
            }
            push(
                format!(
                    "edge `{}` reads `{atom}`, which the engine finds out in `{}` on `{}` only for {}",
                    e.id,
                    e.from,
                    e.on,
                    match supplied {
                        [] => "no fact".to_owned(),
                        facts => facts.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", "),
                    }
                ),
                Location::at(path, Some(e.line)).edge(&e.id),
            );
        }
    }
    out
}

/// Whether every way into `state` (each edge whose target is it or below it, and the start of
/// the run if it starts there) sets `fact`.
fn set_on_entry(table: &Table, state: &str, fact: &str) -> bool {
    let under = |leaf: &str| table.ancestry(leaf).contains(&state);
    let mut entries = table.edges.iter().filter(|e| under(&e.to)).peekable();
    entries.peek().is_some() && !under(&table.initial) && entries.all(|e| e.sets.contains_key(fact))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::table::SHIPPED_TABLE;

    fn findings(text: &str) -> Vec<String> {
        let table = Table::load("t.toml", text).unwrap();
        engine_findings(&table, "t.toml").into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn the_shipped_table_and_edited_bounds_and_guards_run() {
        assert_eq!(findings(SHIPPED_TABLE), Vec::<String>::new());
        let edited = SHIPPED_TABLE
            .replacen("name = \"stop_hook_blocks\"\nbound = 8", "name = \"stop_hook_blocks\"\nbound = 2", 1)
            .replacen("name = \"retries\"\nbound = 10", "name = \"retries\"\nbound = 3", 1);
        assert_eq!(findings(&edited), Vec::<String>::new());
    }

    #[test]
    fn what_the_effects_depend_on_is_fixed() {
        let moved = SHIPPED_TABLE.replacen(
            "id = \"recover.max_output_tokens_escalate\"\nfrom = \"Recover\"\non = \"recovery_checked\"\nguard = \"cause == truncated && escalations_left\"\nto = \"Request\"",
            "id = \"recover.max_output_tokens_escalate\"\nfrom = \"Recover\"\non = \"recovery_checked\"\nguard = \"cause == truncated && escalations_left\"\nto = \"Prepare\"",
            1,
        );
        assert_ne!(moved, SHIPPED_TABLE);
        assert_eq!(
            findings(&moved),
            vec!["edge `recover.max_output_tokens_escalate` must enter `Request`: its effect depends on it"]
        );
        let renamed = SHIPPED_TABLE.replacen("id = \"checkpoint.completed\"", "id = \"checkpoint.finished\"", 1);
        assert_eq!(findings(&renamed), vec!["the engine has no effect for edge `checkpoint.finished`"]);
    }

    /// A reason is the engine's business: the format accepts any declared one, the engine check
    /// only its own, with its own exit code.
    #[test]
    fn reasons_must_be_the_engines() {
        let renamed = SHIPPED_TABLE
            .replacen("name = \"completed\"", "name = \"finished\"", 1)
            .replace("terminal = \"completed\"", "terminal = \"finished\"");
        let found = findings(&renamed);
        assert!(found.contains(&"the engine has no terminal reason `finished`".to_owned()), "{found:?}");
        let recoded = SHIPPED_TABLE.replacen(
            "name = \"max_turns\"\nkind = \"terminal\"\nexit_code = 3",
            "name = \"max_turns\"\nkind = \"terminal\"\nexit_code = 9",
            1,
        );
        assert_ne!(recoded, SHIPPED_TABLE);
        assert_eq!(
            findings(&recoded),
            vec!["terminal reason `max_turns` has exit_code 9, but the engine exits 3 with it"]
        );
    }

    /// A guard may read only what the engine finds out in the edge's state on its event, a
    /// counter, or a fact every way into the state sets.
    #[test]
    fn a_guard_reads_only_what_its_state_finds_out() {
        let retry = "guard = \"error == retryable && retries_left\"";
        let exhausted = "guard = \"error == retryable && !retries_left\"";
        assert_eq!((SHIPPED_TABLE.matches(retry).count(), SHIPPED_TABLE.matches(exhausted).count()), (1, 1));
        let edited = SHIPPED_TABLE
            .replacen(retry, "guard = \"error == retryable && retries_left && !paused\"", 1)
            .replacen(exhausted, "guard = \"error == retryable && (!retries_left || paused)\"", 1);
        assert_eq!(
            findings(&edited),
            vec![
                "edge `consume.retry` reads `paused`, which the engine finds out in `Consume` on `stream_failed` only \
                 for `error`",
                "edge `consume.retries_exhausted` reads `paused`, which the engine finds out in `Consume` on \
                 `stream_failed` only for `error`",
            ]
        );
        // `tools_ran` is set by both edges into Checkpoint, so its guards may read it anywhere.
        assert_eq!(findings(SHIPPED_TABLE), Vec::<String>::new());
    }
}
