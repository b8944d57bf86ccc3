//! The `hooks` block of Claude Code's settings (`hooks::settings::Settings::from_value`) and
//! its tool matchers (`ToolMatcher`, names or a regular expression).
//!
//! The input is JSON settings; the matchers of what loads are asked about a few tool names
//! and the commands' own text. Invariant: a matcher re-read from its text is the same matcher
//! and matches the same names.
#![no_main]

use agentloop::hooks::settings::{HookMatcher, Settings, ToolMatcher};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TOOLS: &[&str] = &["Bash", "Read", "Edit", "Write", "mcp__server__tool", "", "Bash|Read"];

fn check(groups: &[HookMatcher]) {
    for group in groups {
        let Some(matcher) = &group.matcher else { continue };
        let again = ToolMatcher::new(matcher.as_str()).expect("a matcher that loaded compiles again");
        assert_eq!(&again, matcher);
        let names = group.hooks.iter().map(|h| h.command.as_str());
        for name in TOOLS.iter().copied().chain(names) {
            assert_eq!(matcher.matches(name), again.matches(name));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        // Not JSON: the text as one matcher.
        if let Ok(matcher) = ToolMatcher::new(text) {
            for name in TOOLS {
                let _ = matcher.matches(name);
            }
        }
        return;
    };
    let Ok(settings) = Settings::from_value("fuzz.json", &value) else { return };
    let hooks = &settings.hooks;
    check(&hooks.stop);
    check(&hooks.pre_tool_use);
    check(&hooks.post_tool_use);
    let _ = hooks.is_empty();
});
