//! The guard expressions of the transition table (`table::guard::Guard::parse`), evaluated
//! against facts drawn from the guard's own atoms.
//!
//! Invariants: a parsed guard printed back (fully parenthesized, by this target) parses to
//! the same guard; evaluation never panics.
#![no_main]

use agentloop::table::guard::{FactValue, Facts, Guard, GuardError};
use libfuzzer_sys::fuzz_target;

/// The guard as text the parser reads back to the same tree.
fn print(guard: &Guard) -> String {
    match guard {
        Guard::Flag(name) => name.clone(),
        Guard::Is(name, value) => format!("{name} == {value}"),
        Guard::Not(inner) => match inner.as_ref() {
            Guard::Flag(_) | Guard::Not(_) => format!("!{}", print(inner)),
            _ => format!("!({})", print(inner)),
        },
        Guard::All(parts) => join(parts, " && "),
        Guard::Any(parts) => join(parts, " || "),
    }
}

fn join(parts: &[Guard], op: &str) -> String {
    let items: Vec<String> = parts
        .iter()
        .map(|part| match part {
            Guard::All(_) | Guard::Any(_) | Guard::Is(..) => format!("({})", print(part)),
            Guard::Flag(_) | Guard::Not(_) => print(part),
        })
        .collect();
    items.join(op)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(guard) = Guard::parse(text) else { return };
    match Guard::parse(&print(&guard)) {
        Ok(again) => assert_eq!(again, guard, "printed as {}", print(&guard)),
        // Printing adds parentheses, which may pass the nesting bound the text was within.
        Err(GuardError::TooDeep) => {}
        Err(e) => panic!("the printed guard {} does not parse: {e}", print(&guard)),
    }
    let atoms = guard.atoms();
    for pick in 0..3usize {
        let facts: Facts = atoms
            .iter()
            .map(|(name, values)| {
                let value = if values.is_empty() {
                    FactValue::Bool(pick % 2 == 0)
                } else {
                    FactValue::Value(values[pick % values.len()].clone())
                };
                (name.clone(), value)
            })
            .collect();
        let _ = guard.eval(&facts);
    }
});
