//! The scenario format (`Scenario::parse`, what `agentloop run --scenario` and the demo
//! read) on any text. Invariant: a scenario that parses gives its blocks and stop reasons.
#![no_main]

use agentloop::scenario::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(scenario) = Scenario::parse("fuzz.json", text) else { return };
    for response in &scenario.responses {
        let _ = response.blocks();
        let _ = response.stop_reason();
    }
});
