//! The frontmatter of the Markdown files settings point at (agents, custom slash commands,
//! output styles): `settings::frontmatter::Document::parse`, then every field read as text,
//! as a boolean and as a list.
#![no_main]

use agentloop::internals::settings::Document;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(document) = Document::parse("fuzz.md", text) else { return };
    let keys: Vec<String> = document.fields.iter().map(|field| field.key.clone()).collect();
    for key in &keys {
        assert!(document.field(key).is_some());
        let _ = document.text("fuzz.md", key);
        let _ = document.boolean("fuzz.md", key);
        let _ = document.items(key);
    }
});
