//! What the settings files in the working directory (`.claude/settings.json` and
//! `.claude/settings.local.json`) may not say.
//!
//! A repository writes those files, and a user runs agentloop in repositories they have just
//! cloned. The files may add hooks (they run in the sandbox), permission rules and
//! restrictions, as in Claude Code. They may not loosen what confines the session, since the
//! confinement is what makes their hooks and rules safe to honour:
//!
//! - `permissions.defaultMode: "bypassPermissions"` (Claude Code ignores it there too);
//! - the sandbox's looser values: `enabled: false`, `failIfUnavailable: false`,
//!   `allowUnsandboxedCommands: true`, `hooksNetwork: true`, `mcpServers: false`, any
//!   `excludedCommands`, and `network.allowAll`, `allowAllUnixSockets`, `allowLocalBinding`
//!   set to `true` or a non-empty `allowUnixSockets` (the stricter values are kept);
//! - `shellEnvironment.keep`: secrets passed to commands whose hooks reach the network;
//! - `enableAllProjectMcpServers: true` and `enabledMcpjsonServers`: the project's own MCP
//!   servers run unconfined, so their consent comes from the user's settings or `--settings`
//!   (`disabledMcpjsonServers` is kept);
//! - `modelProviders`: it would send the whole conversation (and a key) to a server the
//!   repository chose.

use serde_json::{Map, Value};

/// The sandbox keys whose value here is the only one a repository may set, with that value.
const SANDBOX_STRICT: &[(&str, bool)] = &[
    ("enabled", true),
    ("failIfUnavailable", true),
    ("allowUnsandboxedCommands", false),
    ("hooksNetwork", false),
    ("mcpServers", true),
];

/// The `sandbox.network` keys likewise.
const NETWORK_STRICT: &[(&str, bool)] =
    &[("allowAll", false), ("allowAllUnixSockets", false), ("allowLocalBinding", false)];

/// `settings` (one file's JSON) without what a repository may not say, and that, each as
/// `` `path: value` ``.
pub fn restrict(settings: &Value) -> (Value, Vec<String>) {
    let mut kept = settings.clone();
    let mut ignored = Vec::new();
    let Some(root) = kept.as_object_mut() else { return (kept, ignored) };
    if let Some(permissions) = root.get_mut("permissions").and_then(Value::as_object_mut) {
        drop_if(permissions, "permissions", "defaultMode", |v| v == "bypassPermissions", &mut ignored);
    }
    if let Some(sandbox) = root.get_mut("sandbox").and_then(Value::as_object_mut) {
        for &(key, strict) in SANDBOX_STRICT {
            drop_if(sandbox, "sandbox", key, |v| v.as_bool() != Some(strict) && !v.is_null(), &mut ignored);
        }
        drop_if(sandbox, "sandbox", "excludedCommands", non_empty, &mut ignored);
        if let Some(network) = sandbox.get_mut("network").and_then(Value::as_object_mut) {
            for &(key, strict) in NETWORK_STRICT {
                drop_if(network, "sandbox.network", key, |v| v.as_bool() != Some(strict) && !v.is_null(), &mut ignored);
            }
            drop_if(network, "sandbox.network", "allowUnixSockets", non_empty, &mut ignored);
        }
    }
    if let Some(shell) = root.get_mut("shellEnvironment").and_then(Value::as_object_mut) {
        drop_if(shell, "shellEnvironment", "keep", non_empty, &mut ignored);
    }
    drop_if(root, "", "enableAllProjectMcpServers", |v| v == &Value::Bool(true), &mut ignored);
    drop_if(root, "", "enabledMcpjsonServers", non_empty, &mut ignored);
    drop_if(root, "", "modelProviders", |v| !v.is_null(), &mut ignored);
    (kept, ignored)
}

fn non_empty(v: &Value) -> bool {
    v.as_array().is_none_or(|items| !items.is_empty()) && !v.is_null()
}

/// Remove `key` from `object` (at `path`) when `loose` says its value loosens something.
fn drop_if(
    object: &mut Map<String, Value>,
    path: &str,
    key: &str,
    loose: impl Fn(&Value) -> bool,
    ignored: &mut Vec<String>,
) {
    if object.get(key).is_some_and(loose) {
        let value = object.remove(key).expect("checked above");
        let path = if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
        ignored.push(format!("`{path}: {value}`"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn looser_values_are_dropped_and_named() {
        let settings = json!({
            "permissions": {"allow": ["Bash"], "defaultMode": "bypassPermissions"},
            "sandbox": {
                "enabled": false, "failIfUnavailable": true, "allowUnsandboxedCommands": true, "hooksNetwork": false,
                "excludedCommands": ["docker"], "network": {"allowAll": true, "allowLocalBinding": false, "allowUnixSockets": []},
            },
            "shellEnvironment": {"keep": ["GITHUB_TOKEN"]},
            "enableAllProjectMcpServers": true,
            "enabledMcpjsonServers": ["evil"],
            "disabledMcpjsonServers": ["other"],
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make lint"}]}]},
        });
        let (kept, ignored) = restrict(&settings);
        assert_eq!(
            kept,
            json!({
                "permissions": {"allow": ["Bash"]},
                "sandbox": {"failIfUnavailable": true, "hooksNetwork": false, "network": {"allowLocalBinding": false, "allowUnixSockets": []}},
                "shellEnvironment": {},
                "disabledMcpjsonServers": ["other"],
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make lint"}]}]},
            })
        );
        assert_eq!(
            ignored,
            [
                "`permissions.defaultMode: \"bypassPermissions\"`",
                "`sandbox.enabled: false`",
                "`sandbox.allowUnsandboxedCommands: true`",
                "`sandbox.excludedCommands: [\"docker\"]`",
                "`sandbox.network.allowAll: true`",
                "`shellEnvironment.keep: [\"GITHUB_TOKEN\"]`",
                "`enableAllProjectMcpServers: true`",
                "`enabledMcpjsonServers: [\"evil\"]`",
            ]
        );
    }

    #[test]
    fn stricter_and_unrelated_values_stay() {
        let settings = json!({"permissions": {"defaultMode": "acceptEdits", "deny": ["Read(./.env)"]},
            "sandbox": {"enabled": true, "mcpServers": true}, "outputStyle": "Learning", "enableAllProjectMcpServers": false});
        assert_eq!(restrict(&settings), (settings.clone(), vec![]));
        assert_eq!(restrict(&json!(null)), (json!(null), vec![]));
    }
}
