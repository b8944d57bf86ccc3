//! The environment of child shells: the Bash tool and hook commands run without the model's
//! credentials and without variables whose names look like secrets, so a command the model
//! chose (`env`, `curl -d "$(printenv)" …`) cannot read or send them.
//!
//! What is removed, from the environment agentloop itself was started with:
//!
//! - the model credentials [`CREDENTIALS`] (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`),
//!   always;
//! - every variable whose name contains, in any case, one of [`SECRET_MARKS`] (`KEY`,
//!   `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD`, `CREDENTIAL`), unless one of the settings'
//!   `shellEnvironment.keep` patterns names it (as Codex's default shell environment policy
//!   drops `*KEY*`, `*SECRET*` and `*TOKEN*`), and the OTLP exporter's headers
//!   (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, …), which carry a
//!   collector's credentials.
//!
//! The environment is computed once per run ([`ShellEnv::inherited`]), so each spawn only
//! copies a ready list.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::de::{Deserialize, Deserializer, Error as _};

/// The model credentials: no child process gets them, whatever the settings keep.
pub const CREDENTIALS: [&str; 2] = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];

/// Parts of a variable name (compared in upper case) that mark the variable as a secret.
pub const SECRET_MARKS: [&str; 6] = ["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// One `shellEnvironment.keep` pattern: an exact variable name (`GITHUB_TOKEN`) or a name
/// with `*` wildcards, each matching any run of characters (`NPM_*`, `*_TOKEN`). Names are
/// compared with their case, as the environment does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepPattern {
    source: String,
}

/// Why a pattern of `shellEnvironment.keep` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeepError {
    /// The empty pattern.
    #[error("an empty pattern keeps nothing: write a variable name or a pattern like `NPM_*`")]
    Empty,
    /// One of the `CREDENTIALS`.
    #[error("`{0}` is a model credential: it is never passed to tools or hooks")]
    Credential(String),
}

impl KeepPattern {
    /// Read a pattern.
    ///
    /// # Errors
    /// [`KeepError`] when the pattern is empty or is exactly one of the `CREDENTIALS`, which
    /// can never be kept. (A wildcard pattern that happens to match a credential is allowed;
    /// it keeps everything else it matches.)
    pub fn new(source: &str) -> Result<KeepPattern, KeepError> {
        if source.is_empty() {
            return Err(KeepError::Empty);
        }
        if CREDENTIALS.contains(&source) {
            return Err(KeepError::Credential(source.to_owned()));
        }
        Ok(KeepPattern { source: source.to_owned() })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches the whole of `name`.
    pub fn matches(&self, name: &str) -> bool {
        let mut parts = self.source.split('*');
        // `split` always yields at least one part.
        let first = parts.next().unwrap_or_default();
        let Some(mut rest) = name.strip_prefix(first) else { return false };
        let middle: Vec<&str> = parts.collect();
        let Some((last, middle)) = middle.split_last() else {
            // No `*`: an exact name.
            return rest.is_empty();
        };
        for part in middle {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        rest.ends_with(last)
    }
}

impl<'de> Deserialize<'de> for KeepPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let source = String::deserialize(d)?;
        KeepPattern::new(&source).map_err(D::Error::custom)
    }
}

/// Whether a child shell loses the variable `name`: it is a credential, or it looks like a
/// secret and no pattern of `keep` names it.
pub fn is_removed(name: &OsStr, keep: &[KeepPattern]) -> bool {
    let name = name.to_string_lossy();
    if CREDENTIALS.contains(&name.as_ref()) {
        return true;
    }
    let upper = name.to_ascii_uppercase();
    // OTLP headers carry the collector's credentials (`authorization=Bearer …`).
    let otlp_headers = upper.starts_with("OTEL_EXPORTER_OTLP_") && upper.ends_with("HEADERS");
    (otlp_headers || SECRET_MARKS.iter().any(|mark| upper.contains(mark)))
        && !keep.iter().any(|pattern| pattern.matches(&name))
}

/// The environment child shells run with: the inherited variables that `is_removed` lets
/// through. Its `Debug` shows variable names only, never values.
#[derive(Clone, PartialEq, Eq)]
pub struct ShellEnv {
    /// What the child gets, in the order of the environment it came from.
    vars: Vec<(OsString, OsString)>,
    /// Names of the variables left out.
    removed: Vec<OsString>,
}

impl ShellEnv {
    /// The environment `vars` less what the policy removes, with `keep` from the settings.
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>, keep: &[KeepPattern]) -> ShellEnv {
        let (mut kept, mut removed) = (Vec::new(), Vec::new());
        for (name, value) in vars {
            if is_removed(&name, keep) {
                removed.push(name);
            } else {
                kept.push((name, value));
            }
        }
        ShellEnv { vars: kept, removed }
    }

    /// Exactly `vars`, nothing removed: for a child whose configuration decides its whole
    /// environment (an MCP server, `crate::mcp::stdio::inherited`).
    pub fn exactly(vars: Vec<(OsString, OsString)>) -> ShellEnv {
        ShellEnv { vars, removed: Vec::new() }
    }

    /// This process's environment as it was at startup (`crate::credentials::vars_os`: the
    /// secrets are no longer in the process environment itself) less what the policy
    /// removes, with `keep` from the settings.
    pub fn inherited(keep: &[KeepPattern]) -> ShellEnv {
        ShellEnv::from_vars(crate::credentials::vars_os(), keep)
    }

    /// [`ShellEnv::inherited`] with no keep patterns, computed once per process: what a
    /// [`super::ToolContext::new`] or a [`crate::hooks::HookEnv::new`] starts with.
    pub fn inherited_default() -> Arc<ShellEnv> {
        static DEFAULT: OnceLock<Arc<ShellEnv>> = OnceLock::new();
        DEFAULT.get_or_init(|| Arc::new(ShellEnv::inherited(&[]))).clone()
    }

    /// Give `command` exactly this environment (variables set on it before are dropped; set
    /// the command's own variables after this).
    pub fn apply(&self, command: &mut tokio::process::Command) {
        command.env_clear();
        command.envs(self.vars.iter().map(|(name, value)| (name, value)));
    }

    /// The variables a child gets, in order, names and values.
    pub fn into_vars(self) -> Vec<(OsString, OsString)> {
        self.vars
    }

    /// The value a child gets for `name`, if any.
    pub fn var(&self, name: &str) -> Option<&OsStr> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, value)| value.as_os_str())
    }

    /// Names of the variables a child gets, in order.
    pub fn names(&self) -> impl Iterator<Item = &OsStr> {
        self.vars.iter().map(|(name, _)| name.as_os_str())
    }

    /// Names of the variables left out, in order.
    pub fn removed(&self) -> &[OsString] {
        &self.removed
    }
}

impl fmt::Debug for ShellEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShellEnv")
            .field("names", &self.names().collect::<Vec<_>>())
            .field("removed", &self.removed)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(patterns: &[&str]) -> Vec<KeepPattern> {
        patterns.iter().map(|p| KeepPattern::new(p).unwrap()).collect()
    }

    fn removed(name: &str, patterns: &[&str]) -> bool {
        is_removed(OsStr::new(name), &keep(patterns))
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(n, v)| (OsString::from(n), OsString::from(v))).collect()
    }

    #[test]
    fn the_default_removes_credentials_and_secret_looking_names() {
        for name in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "MY_SERVICE_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "npm_config__authToken",
            "ssh_key_path",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        ] {
            assert!(removed(name, &[]), "{name} should be removed");
        }
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "USER",
            "ANTHROPIC_BASE_URL",
            "CARGO_HOME",
            "TOKIO_WORKERS",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "TRACEPARENT",
        ] {
            assert!(!removed(name, &[]), "{name} should be kept");
        }
    }

    #[test]
    fn keep_patterns_spare_what_they_name() {
        let patterns = ["GITHUB_TOKEN", "NPM_*", "*_PUBLIC_KEY", "A*B*C"];
        assert!(!removed("GITHUB_TOKEN", &patterns));
        assert!(removed("GITHUB_TOKEN_2", &patterns));
        assert!(removed("github_token", &patterns), "names are compared with their case");
        assert!(!removed("NPM_TOKEN", &patterns));
        assert!(!removed("NPM_", &patterns));
        assert!(removed("XNPM_TOKEN", &patterns));
        assert!(!removed("SSH_PUBLIC_KEY", &patterns));
        assert!(removed("SSH_PUBLIC_KEY_X", &patterns));
        assert!(!removed("A_KEY_B_C", &patterns));
        assert!(!removed("ABC_KEY_C", &patterns));
        assert!(removed("A_KEY_C_B", &patterns));
        // A pattern only ever matters for names the policy would remove.
        assert!(!removed("NPM_CONFIG_CACHE", &patterns));
    }

    #[test]
    fn credentials_are_never_kept() {
        for name in CREDENTIALS {
            assert!(removed(name, &["*", "ANTHROPIC_*", "*_KEY", "*_TOKEN"]), "{name}");
        }
        // Everything else a catch-all pattern names is kept.
        assert!(!removed("OPENAI_API_KEY", &["*"]));
        assert_eq!(
            KeepPattern::new("ANTHROPIC_API_KEY").map_err(|e| e.to_string()),
            Err("`ANTHROPIC_API_KEY` is a model credential: it is never passed to tools or hooks".to_owned())
        );
        assert_eq!(
            KeepPattern::new("ANTHROPIC_AUTH_TOKEN").map_err(|e| e.to_string()),
            Err("`ANTHROPIC_AUTH_TOKEN` is a model credential: it is never passed to tools or hooks".to_owned())
        );
        assert_eq!(
            KeepPattern::new("").map_err(|e| e.to_string()),
            Err("an empty pattern keeps nothing: write a variable name or a pattern like `NPM_*`".to_owned())
        );
    }

    #[test]
    fn patterns_match_whole_names() {
        let p = |s: &str| KeepPattern::new(s).unwrap();
        assert!(p("*").matches(""));
        assert!(p("*").matches("ANY"));
        assert!(p("**").matches("ANY"));
        assert!(p("A*").matches("A"));
        assert!(!p("A*").matches("BA"));
        assert!(p("*A").matches("BA"));
        assert!(!p("*A").matches("AB"));
        assert!(p("A*A").matches("AA"));
        assert!(!p("A*A").matches("A"), "the prefix and the suffix may not overlap");
        assert!(p("X*Y*Z").matches("XYZ"));
        assert!(p("X*Y*Z").matches("X1Y2Y3Z"));
        assert!(!p("X*Y*Z").matches("XZY"));
        assert_eq!(p("NPM_*").as_str(), "NPM_*");
    }

    #[test]
    fn an_environment_keeps_the_rest_in_order() {
        let env = ShellEnv::from_vars(
            vars(&[
                ("PATH", "/bin"),
                ("ANTHROPIC_API_KEY", "sk-secret"),
                ("GITHUB_TOKEN", "gh"),
                ("MY_SERVICE_TOKEN", "t0k"),
                ("LANG", "C"),
                ("ANTHROPIC_AUTH_TOKEN", "bearer"),
            ]),
            &keep(&["GITHUB_TOKEN"]),
        );
        assert_eq!(env.names().collect::<Vec<_>>(), ["PATH", "GITHUB_TOKEN", "LANG"]);
        assert_eq!(env.removed(), ["ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN", "ANTHROPIC_AUTH_TOKEN"]);
        // Debug shows names, never values.
        assert_eq!(
            format!("{env:?}"),
            r#"ShellEnv { names: ["PATH", "GITHUB_TOKEN", "LANG"], removed: ["ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN", "ANTHROPIC_AUTH_TOKEN"] }"#
        );
    }

    #[tokio::test]
    async fn a_command_gets_exactly_the_environment() {
        let env = ShellEnv::from_vars(
            vars(&[("ANTHROPIC_API_KEY", "sk-secret"), ("MY_SERVICE_TOKEN", "t0k"), ("LANG", "C")]),
            &[],
        );
        let mut command = tokio::process::Command::new("/usr/bin/env");
        // Set before: dropped, as a variable of agentloop's own environment would be.
        command.env("ANTHROPIC_API_KEY", "sk-injected").env("OTHER_SECRET", "s");
        env.apply(&mut command);
        command.env("SET_AFTER", "1");
        let out = command.output().await.unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "LANG=C\nSET_AFTER=1\n");
    }
}
