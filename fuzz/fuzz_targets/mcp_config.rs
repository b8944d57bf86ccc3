//! MCP server configuration: `--mcp-config` JSON (`mcp::config::load`, user and local scope
//! of a `~/.claude.json`) and a project's `.mcp.json` (`mcp::config::project`, read from a
//! real file in a scratch directory), with `${VAR}` expansion.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentloop::internals::mcp::{ProjectConsent, load, project};
use libfuzzer_sys::fuzz_target;

/// The variables the fuzzed configuration can expand: two set, every other one unset.
fn var(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/fuzz".into()),
        "TOKEN" => Some("secret".into()),
        _ => None,
    }
}

/// A scratch directory for the `.mcp.json` file, one per process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agentloop-fuzz-mcp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scratch directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if text.trim_start().starts_with('{') {
        let _ = load(text, Path::new("/work/project"), &var);
    }
    let dir = scratch();
    std::fs::write(dir.join(".mcp.json"), data).expect("write .mcp.json");
    let enabled = ["alpha".to_owned(), "fs".to_owned()];
    let disabled = ["beta".to_owned()];
    for all in [false, true] {
        let consent = ProjectConsent { all, enabled: &enabled, disabled: &disabled };
        let _ = project(dir, consent, &[], &var);
    }
});
