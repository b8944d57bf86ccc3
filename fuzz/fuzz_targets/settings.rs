//! Settings JSON as `--settings` gives it (`settings::load`, the layering the CLI runs), the
//! working-directory restriction (`settings::repository::restrict`) and the permission rules
//! and mode it carries (`Policy::with_rules`, `Mode::from_str`).
//!
//! Invariant: settings that load still load once the restriction took out what a repository
//! may not say.
#![no_main]

use std::path::PathBuf;
use std::str::FromStr;

use agentloop::hooks::settings::Settings;
use agentloop::permissions::{Mode, Policy};
use agentloop::internals::settings::{ConfigDirs, SettingSources, load, repository};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // `--settings` reads a file unless the value starts with `{`: only the inline form here.
    if !text.trim_start().starts_with('{') {
        return;
    }
    let dirs = ConfigDirs { user: None, project: PathBuf::from("/nonexistent/agentloop-fuzz") };
    let Ok(loaded) = load(&SettingSources::none(), &dirs, Some(text)) else { return };
    let settings = loaded.settings;

    let value: Value = serde_json::from_str(text).expect("settings that loaded are JSON");
    let (kept, _ignored) = repository::restrict(&value);
    Settings::from_value("restricted", &kept).expect("restricting valid settings keeps them valid");

    let permissions = &settings.permissions;
    if let Some(mode) = &permissions.default_mode {
        let _ = Mode::from_str(mode);
    }
    let _ = Policy::new(Mode::Default, PathBuf::from("/nonexistent/agentloop-fuzz")).with_rules(
        &permissions.allow,
        &permissions.deny,
        &permissions.ask,
    );
});
