//! The `sandbox` block of the settings, in Claude Code's keys, with agentloop's defaults:
//! the sandbox is on unless `enabled` is `false`.
//!
//! Honoured: `enabled`, `failIfUnavailable`, `excludedCommands`,
//! `allowUnsandboxedCommands`, `network.allowAllUnixSockets`, `network.allowUnixSockets`
//! (any entry allows Unix sockets: the kernel filter cannot tell paths apart),
//! `network.allowLocalBinding`; and agentloop's own `network.allowAll` (open network for
//! commands), `hooksNetwork` (hooks reach the network; default true) and `mcpServers`
//! (stdio MCP servers run sandboxed, with the network open; default false).
//! `network.allowedDomains` bounds WebFetch only. Claude Code's other keys
//! (`autoAllowBashIfSandboxed`, `filesystem`, …) are accepted and not honoured:
//! docs/permissions.md says what that means.

use serde::Deserialize;

use super::policy::Network;

/// The `sandbox` settings block.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxSettings {
    /// Confine commands (default true).
    pub enabled: bool,
    /// Exit 2 at start when the kernel cannot confine commands (default false).
    pub fail_if_unavailable: bool,
    /// Claude Code's "run Bash calls that would be asked about sandboxed without asking":
    /// read, not honoured (calls are still asked about).
    pub auto_allow_bash_if_sandboxed: bool,
    /// Commands (the first word, or a prefix of the line) that run unconfined.
    pub excluded_commands: Vec<String>,
    /// Whether a call's `dangerouslyDisableSandbox: true` may run unconfined (after the
    /// usual permission check, which then never auto-approves it; default true).
    pub allow_unsandboxed_commands: bool,
    /// Network bounds.
    pub network: NetworkSettings,
    /// Hooks reach the network (default true: they are the user's own programs).
    pub hooks_network: bool,
    /// Stdio MCP servers run sandboxed (writing policy, network open; default false).
    pub mcp_servers: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: true,
            fail_if_unavailable: false,
            auto_allow_bash_if_sandboxed: false,
            excluded_commands: Vec::new(),
            allow_unsandboxed_commands: true,
            network: NetworkSettings::default(),
            hooks_network: true,
            mcp_servers: false,
        }
    }
}

/// The `sandbox.network` block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkSettings {
    /// agentloop's own: commands reach any address.
    pub allow_all: bool,
    /// Unix-domain sockets may be created.
    pub allow_all_unix_sockets: bool,
    /// Socket paths to allow; any entry allows every Unix socket (see the module doc).
    pub allow_unix_sockets: Vec<String>,
    /// TCP sockets may be bound (a dev server), but connect nowhere.
    pub allow_local_binding: bool,
    /// Claude Code's domain allow-list: bounds WebFetch (`crate::tools::web_fetch`); not
    /// honoured for commands (their network stays closed or open, no domain proxy).
    pub allowed_domains: Vec<String>,
}

impl NetworkSettings {
    /// The network of Bash commands.
    pub fn for_commands(&self) -> Network {
        if self.allow_all {
            return Network::Open;
        }
        Network::Closed {
            unix_sockets: self.allow_all_unix_sockets || !self.allow_unix_sockets.is_empty(),
            local_binding: self.allow_local_binding,
        }
    }
}

impl SandboxSettings {
    /// Whether `command` (a whole Bash line) is one of the excluded commands: its first
    /// word is one, or the line starts with one followed by a space or its end.
    pub fn excludes(&self, command: &str) -> bool {
        let line = command.trim_start();
        self.excluded_commands.iter().map(|e| e.trim()).filter(|e| !e.is_empty()).any(|excluded| {
            let excluded = excluded.trim_end_matches(":*").trim_end_matches('*').trim_end();
            line == excluded || line.strip_prefix(excluded).is_some_and(|rest| rest.starts_with(' '))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_confine_with_no_network() {
        let s: SandboxSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(s, SandboxSettings::default());
        assert!(s.enabled && s.allow_unsandboxed_commands && s.hooks_network && !s.mcp_servers);
        assert_eq!(s.network.for_commands(), Network::CLOSED);
    }

    #[test]
    fn reads_claude_codes_keys() {
        let s: SandboxSettings = serde_json::from_str(
            r#"{"enabled": false, "failIfUnavailable": true, "excludedCommands": ["docker", "git push:*"],
                "network": {"allowUnixSockets": ["/var/run/docker.sock"], "allowLocalBinding": true,
                "allowedDomains": ["github.com"]}, "filesystem": {"denyRead": []}}"#,
        )
        .unwrap();
        assert!(!s.enabled && s.fail_if_unavailable);
        assert_eq!(s.network.for_commands(), Network::Closed { unix_sockets: true, local_binding: true });
        assert!(s.excludes("docker ps"));
        assert!(s.excludes("docker"));
        assert!(!s.excludes("dockerd"));
        assert!(s.excludes("git push origin main"));
        assert!(!s.excludes("git pull"));
    }

    #[test]
    fn allow_all_opens_the_network() {
        let s: SandboxSettings = serde_json::from_str(r#"{"network": {"allowAll": true}}"#).unwrap();
        assert_eq!(s.network.for_commands(), Network::Open);
    }
}
