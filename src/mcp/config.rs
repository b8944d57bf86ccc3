//! MCP server configuration in Claude Code's format:
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"type": "stdio", "command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "${TOKEN}"}},
//!   "web":   {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${KEY:-none}"}}
//! }}
//! ```
//!
//! An `http` server may carry Claude Code's `oauth` object — `clientId`, `callbackPort`,
//! `authServerMetadataUrl`, `scopes` — for its sign-in ([`crate::mcp::oauth`]).
//!
//! `type` defaults to `stdio` when `command` is given. Two more types are recognized without
//! being run everywhere: `sse` (the legacy HTTP+SSE transport: never run) and `sdk` (a server
//! in the Claude Agent SDK's process: run only in the SDK mode); each is a failed server with
//! a warning saying why, never an error of the whole configuration. `${VAR}` and `${VAR:-default}` are
//! expanded in `command`, `args`, `env`, `url` and `headers`; an unset variable without a
//! default is an error. Errors name where the configuration came from and the JSON path of
//! the offending value.
//!
//! A server's [`Scope`] is where it is configured. The user's own configuration
//! (`--mcp-config`, Claude Code's `~/.claude.json` user and local scopes) expands every
//! variable. A project's `.mcp.json` comes with the repository, so its servers get only what
//! Bash gets ([`crate::tools::shell_env`]): `${VAR}` of a variable Bash does not get (a model
//! credential, a secret-looking name `shellEnvironment.keep` does not name) expands to
//! nothing, `${VAR:-default}` too, with a warning naming the server and the variable
//! ([`Withheld`]); and a stdio server inherits Bash's environment.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use crate::json_path;
use crate::tools::shell_env::{self, KeepPattern};

/// Where a server is configured, which decides what of agentloop's environment it gets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    /// The user's own configuration (`--mcp-config`: a file, inline JSON, or Claude Code's
    /// `~/.claude.json` with its user and local scopes): `${VAR}` expands every variable, and
    /// a stdio server inherits agentloop's environment less the model credentials.
    #[default]
    User,
    /// A project's `.mcp.json`: `${VAR}` of a variable Bash does not get expands to nothing
    /// ([`Withheld`]), and a stdio server inherits the environment Bash gets.
    Project {
        /// The settings' `shellEnvironment.keep`, as for Bash.
        keep: Vec<KeepPattern>,
    },
}

impl Scope {
    /// Whether `${name}` expands to nothing here: a project server asks for a variable Bash
    /// does not get.
    pub fn withholds(&self, name: &str) -> bool {
        match self {
            Scope::User => false,
            Scope::Project { keep } => shell_env::is_removed(OsStr::new(name), keep),
        }
    }
}

/// A `${VAR}` of a project server that expanded to nothing ([`Scope::withholds`]). Its
/// `Display` is the warning, naming the server and the variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// The server's name.
    pub server: String,
    /// The variable's name.
    pub variable: String,
}

impl fmt::Display for Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if shell_env::CREDENTIALS.contains(&self.variable.as_str()) {
            "never a model credential; --mcp-config passes it to a server of your own"
        } else {
            "the settings' shellEnvironment.keep passes it"
        };
        write!(
            f,
            "MCP server `{}` of .mcp.json: ${{{}}} expands to nothing: a project's servers get only the variables \
Bash gets ({how})",
            self.server, self.variable
        )
    }
}

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerConfig {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// Where it is configured, which decides the environment it inherits.
        scope: Scope,
    },
    /// A Streamable HTTP endpoint (`super::http`).
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// How to sign in when it asks (its `oauth` object).
        oauth: Option<crate::mcp::oauth::Settings>,
    },
    /// The legacy HTTP+SSE transport, which agentloop does not run: reported as a failed
    /// server (`SSE_UNSUPPORTED`), the rest of the configuration still applies.
    Sse {
        /// The endpoint, as written (not expanded: it is only shown).
        url: Option<String>,
    },
    /// A server in the Claude Agent SDK's process (`super::sdk`), reachable only from the
    /// SDK mode; elsewhere it is reported as failed.
    Sdk {
        /// The server's own name in the SDK (`create_sdk_mcp_server(name=…)`), as configured
        /// and reported; `mcp_message` addresses the server by its key, not by this.
        name: String,
    },
}

/// Why a `"type": "sse"` server is not started.
pub const SSE_UNSUPPORTED: &str = "the legacy HTTP+SSE transport (`type: sse`) is not supported: \
configure the server's Streamable HTTP endpoint with `type: http`";

/// Servers by name, in name order.
pub type Servers = BTreeMap<String, ServerConfig>;

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    name: Option<String>,
    oauth: Option<RawOAuth>,
}

/// Claude Code's `oauth` object of an HTTP server.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawOAuth {
    client_id: Option<String>,
    callback_port: Option<u16>,
    auth_server_metadata_url: Option<String>,
    scopes: Option<String>,
}

/// Why an MCP configuration cannot be used; each names where it came from (`origin`: the
/// flag or the file).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{origin}: cannot read: {error}")]
    Read {
        /// The flag and file, or the file.
        origin: String,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{origin}: not valid JSON: {error}")]
    Syntax {
        /// The flag, or the file.
        origin: String,
        /// What the parser said.
        error: serde_json::Error,
    },
    /// The JSON is not a configuration.
    #[error("{origin}: {}{problem}", json_path::at(path))]
    Invalid {
        /// The flag, or the file.
        origin: String,
        /// JSON path of the offending value; empty at the top.
        path: String,
        /// What is wrong there.
        problem: ConfigProblem,
    },
}

/// What is wrong at one place of an MCP configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigProblem {
    /// The top level is not an object.
    #[error("expected an object with `mcpServers`")]
    NotAnObject,
    /// A value of the wrong shape.
    #[error("{0}")]
    Shape(serde_json::Error),
    /// A server name with other characters.
    #[error("a server name has only letters, digits, `_` and `-`")]
    ServerName,
    /// A stdio server without `command`.
    #[error("missing: a stdio server needs a command")]
    NoCommand,
    /// An HTTP server without `url`.
    #[error("missing: an http server needs a url")]
    NoUrl,
    /// A `type` no server has.
    #[error("unknown server type `{0}` (expected `stdio`, `http`, `sse` or `sdk`)")]
    UnknownType(String),
    /// A `${VAR}` that does not expand.
    #[error(transparent)]
    Expand(#[from] ExpandError),
}

/// Why `${VAR}` expansion failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// A `${` without its `}` (the whole text).
    #[error("`${{` without a closing `}}` in `{0}`")]
    Unclosed(String),
    /// An unset variable without a default.
    #[error("the environment variable `{0}` is not set")]
    Unset(String),
}

/// Parse one configuration of the user's (`origin` names it in errors), expanding variables
/// with `var`.
///
/// # Errors
/// `ConfigError::Invalid`: `ORIGIN: at PATH: message`.
pub fn parse(origin: &str, json: &Value, var: &dyn Fn(&str) -> Option<String>) -> Result<Servers, ConfigError> {
    parse_in(origin, json, var, &Scope::User).map(|(servers, _)| servers)
}

/// [`parse`] for servers of `scope`: also the variables withheld from them, in the order of
/// the servers and, within one, of first use.
fn parse_in(
    origin: &str,
    json: &Value,
    var: &dyn Fn(&str) -> Option<String>,
    scope: &Scope,
) -> Result<(Servers, Vec<Withheld>), ConfigError> {
    let fail = |path: &str, problem: ConfigProblem| ConfigError::Invalid {
        origin: origin.to_owned(),
        path: path.to_owned(),
        problem,
    };
    if !json.is_object() {
        return Err(fail("", ConfigProblem::NotAnObject));
    }
    let raw: RawFile = serde_path_to_error::deserialize(json)
        .map_err(|e| fail(&json_path::of(&e), ConfigProblem::Shape(e.into_inner())))?;
    let mut servers = Servers::new();
    let mut withheld = Vec::new();
    for (name, raw) in raw.mcp_servers {
        let at = |field: &str| format!("mcpServers.{name}.{field}");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(fail(&format!("mcpServers.{name}"), ConfigProblem::ServerName));
        }
        // The variables withheld from this server, each once.
        let withheld_here = RefCell::new(Vec::<String>::new());
        let lookup = |variable: &str| {
            if !scope.withholds(variable) {
                return var(variable);
            }
            let mut names = withheld_here.borrow_mut();
            if !names.iter().any(|n| n == variable) {
                names.push(variable.to_owned());
            }
            Some(String::new())
        };
        let expand_one = |field: String, text: &str| expand(text, &lookup).map_err(|e| fail(&field, e.into()));
        // `env` and `headers`: each value expanded, an error naming `FIELD.KEY`.
        let expand_map = |field: &str, map: &BTreeMap<String, String>| {
            map.iter()
                .map(|(k, v)| Ok((k.clone(), expand_one(at(&format!("{field}.{k}")), v)?)))
                .collect::<Result<BTreeMap<_, _>, ConfigError>>()
        };
        let kind =
            raw.kind.as_deref().unwrap_or(if raw.url.is_some() && raw.command.is_none() { "http" } else { "stdio" });
        let server = match kind {
            "stdio" => {
                let command = raw.command.as_deref().ok_or_else(|| fail(&at("command"), ConfigProblem::NoCommand))?;
                let command = expand_one(at("command"), command)?;
                let args = raw
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| expand_one(at(&format!("args[{i}]")), a))
                    .collect::<Result<_, _>>()?;
                let env = expand_map("env", &raw.env)?;
                ServerConfig::Stdio { command, args, env, scope: scope.clone() }
            }
            "http" => {
                let url = raw.url.as_deref().ok_or_else(|| fail(&at("url"), ConfigProblem::NoUrl))?;
                let url = expand_one(at("url"), url)?;
                let headers = expand_map("headers", &raw.headers)?;
                let oauth = match &raw.oauth {
                    None => None,
                    Some(o) => Some(crate::mcp::oauth::Settings {
                        client_id: o.client_id.as_deref().map(|v| expand_one(at("oauth.clientId"), v)).transpose()?,
                        callback_port: o.callback_port,
                        auth_server_metadata_url: o
                            .auth_server_metadata_url
                            .as_deref()
                            .map(|v| expand_one(at("oauth.authServerMetadataUrl"), v))
                            .transpose()?,
                        scopes: o.scopes.clone(),
                        ..crate::mcp::oauth::Settings::default()
                    }),
                };
                ServerConfig::Http { url, headers, oauth }
            }
            // Recognized but not run here: reported as failed when the servers start.
            "sse" => ServerConfig::Sse { url: raw.url.clone() },
            "sdk" => ServerConfig::Sdk { name: raw.name.clone().unwrap_or_else(|| name.clone()) },
            other => {
                return Err(fail(&at("type"), ConfigProblem::UnknownType(other.to_owned())));
            }
        };
        withheld.extend(withheld_here.take().into_iter().map(|variable| Withheld { server: name.clone(), variable }));
        servers.insert(name, server);
    }
    Ok((servers, withheld))
}

/// `--mcp-config VALUE`: a file, or the JSON itself (it starts with `{`).
///
/// Claude Code's own `~/.claude.json` is such a file: its top-level `mcpServers` are the user
/// scope, and its `projects` map holds, under the project's absolute path, the local scope
/// (where `claude mcp add` puts a server by default). The local servers of `cwd` are taken too
/// and win over user servers of the same name, as in Claude Code.
///
/// # Errors
/// `ConfigError` naming the flag or the file.
pub fn load(value: &str, cwd: &std::path::Path, var: &dyn Fn(&str) -> Option<String>) -> Result<Servers, ConfigError> {
    let (origin, text) = if value.trim_start().starts_with('{') {
        ("--mcp-config".to_owned(), value.to_owned())
    } else {
        let origin = format!("--mcp-config {value}");
        match std::fs::read_to_string(value) {
            Ok(text) => (origin, text),
            Err(error) => return Err(ConfigError::Read { origin, error }),
        }
    };
    let json: Value = match serde_json::from_str(&text) {
        Ok(json) => json,
        Err(error) => return Err(ConfigError::Syntax { origin, error }),
    };
    let mut servers = parse(&origin, &json, var)?;
    if let Some((key, local)) = local_scope(&json, cwd) {
        let local = serde_json::json!({ "mcpServers": local });
        servers.extend(parse(&format!("{origin}: projects[{key}]"), &local, var)?);
    }
    Ok(servers)
}

/// The `mcpServers` of the entry for `cwd` in a Claude Code `projects` map, with its key.
fn local_scope<'a>(json: &'a Value, cwd: &std::path::Path) -> Option<(&'a str, &'a Value)> {
    let cwd = cwd.to_str()?;
    let (key, project) = json.get("projects")?.as_object()?.get_key_value(cwd)?;
    Some((key.as_str(), project.get("mcpServers")?))
}

/// Which servers of a project's `.mcp.json` may start: the settings' consent.
#[derive(Debug, Clone, Copy)]
pub struct ProjectConsent<'a> {
    /// `enableAllProjectMcpServers`.
    pub all: bool,
    /// `enabledMcpjsonServers`.
    pub enabled: &'a [String],
    /// `disabledMcpjsonServers` (wins).
    pub disabled: &'a [String],
}

impl ProjectConsent<'_> {
    fn allows(&self, name: &str) -> bool {
        !self.disabled.iter().any(|n| n == name) && (self.all || self.enabled.iter().any(|n| n == name))
    }
}

/// What a project's `.mcp.json` gives a run ([`project`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectServers {
    /// The servers the settings consent to, of [`Scope::Project`].
    pub servers: Servers,
    /// The names of those they do not consent to (not started).
    pub skipped: Vec<String>,
    /// The variables that expanded to nothing in the consented servers.
    pub withheld: Vec<Withheld>,
}

/// The servers of `DIR/.mcp.json` the settings consent to, and the names of those they do not
/// (never started: a cloned repository cannot start processes by itself). No file: nothing.
/// Only consented servers are parsed and expanded, as `Scope::Project` with the settings'
/// `keep` patterns.
///
/// # Errors
/// The file cannot be read, or is not valid, naming `.mcp.json` and the JSON path.
pub fn project(
    dir: &std::path::Path,
    consent: ProjectConsent<'_>,
    keep: &[KeepPattern],
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<ProjectServers, ConfigError> {
    let path = dir.join(".mcp.json");
    let origin = path.display().to_string();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ProjectServers::default()),
        Err(error) => return Err(ConfigError::Read { origin, error }),
    };
    let mut json: Value = match serde_json::from_str(&text) {
        Ok(json) => json,
        Err(error) => return Err(ConfigError::Syntax { origin, error }),
    };
    let mut skipped = Vec::new();
    if let Some(servers) = json.get_mut("mcpServers").and_then(Value::as_object_mut) {
        skipped = servers.keys().filter(|name| !consent.allows(name)).cloned().collect();
        servers.retain(|name, _| consent.allows(name));
    }
    let (servers, withheld) = parse_in(&origin, &json, var, &Scope::Project { keep: keep.to_vec() })?;
    Ok(ProjectServers { servers, skipped, withheld })
}

/// Expand `${VAR}` and `${VAR:-default}` in `text`.
///
/// # Errors
/// [`ExpandError`]: an unset variable without a default, or a `${` without its `}`.
pub fn expand(text: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| ExpandError::Unclosed(text.to_owned()))?;
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        match (var(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(name.to_owned())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// agentloop's environment as it was at startup ([`crate::credentials::var`]), for
/// [`parse`], [`load`], [`project`] and [`expand`].
pub fn env_var(name: &str) -> Option<String> {
    crate::credentials::var(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn vars(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "TOKEN" => Some("secret".into()),
            _ => None,
        }
    }

    #[test]
    fn expansion_takes_variables_and_defaults() {
        assert_eq!(expand("${HOME}/bin", &vars).unwrap(), "/home/me/bin");
        assert_eq!(expand("a${NOPE:-x y}b${TOKEN:-z}", &vars).unwrap(), "ax yb".to_owned() + "secret");
        assert_eq!(expand("${NOPE:-}", &vars).unwrap(), "");
        assert_eq!(expand("plain $HOME", &vars).unwrap(), "plain $HOME");
        assert_eq!(expand("${NOPE}", &vars).unwrap_err().to_string(), "the environment variable `NOPE` is not set");
        assert_eq!(expand("x${HOME", &vars).unwrap_err().to_string(), "`${` without a closing `}` in `x${HOME`");
    }

    #[test]
    fn stdio_and_http_servers_parse_with_expansion() {
        let json = json!({"mcpServers": {
            "files": {"command": "${HOME}/srv", "args": ["--token", "${TOKEN}"], "env": {"K": "${NOPE:-d}"}},
            "web": {"type": "http", "url": "https://h/${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "bare": {"type": "stdio", "command": "srv"}
        }, "other": 1});
        let servers = parse("x", &json, &vars).unwrap();
        assert_eq!(
            servers["files"],
            ServerConfig::Stdio {
                command: "/home/me/srv".into(),
                args: vec!["--token".into(), "secret".into()],
                env: BTreeMap::from([("K".into(), "d".into())]),
                scope: Scope::User,
            }
        );
        assert_eq!(
            servers["web"],
            ServerConfig::Http {
                url: "https://h/secret".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer secret".into())]),
                oauth: None,
            }
        );
        assert_eq!(
            servers["bare"],
            ServerConfig::Stdio { command: "srv".into(), args: vec![], env: BTreeMap::new(), scope: Scope::User }
        );
        assert!(parse("x", &json!({}), &vars).unwrap().is_empty());
    }

    #[test]
    fn sse_and_sdk_servers_are_recognized_beside_the_others() {
        let json = json!({"mcpServers": {
            "legacy": {"type": "sse", "url": "https://h/sse?key=${UNSET_KEY}", "headers": {"X-Key": "${UNSET_KEY}"}},
            "calc": {"type": "sdk", "name": "calc"},
            "unnamed": {"type": "sdk"},
            "files": {"command": "srv"}
        }});
        let servers = parse("--mcp-config", &json, &vars).unwrap();
        // Not run, so not expanded: an unset variable in it is no error.
        assert_eq!(servers["legacy"], ServerConfig::Sse { url: Some("https://h/sse?key=${UNSET_KEY}".into()) });
        assert_eq!(servers["calc"], ServerConfig::Sdk { name: "calc".into() });
        assert_eq!(servers["unnamed"], ServerConfig::Sdk { name: "unnamed".into() });
        assert_eq!(
            servers["files"],
            ServerConfig::Stdio { command: "srv".into(), args: vec![], env: BTreeMap::new(), scope: Scope::User }
        );
    }

    #[test]
    fn a_project_file_starts_only_the_servers_the_settings_consent_to() {
        let dir = tempfile::tempdir().unwrap();
        let none = ProjectConsent { all: false, enabled: &[], disabled: &[] };
        assert_eq!(project(dir.path(), none, &[], &vars).unwrap(), ProjectServers::default());
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "${UNSET_IN_B}"}, "c": {"command": "c"}}}"#,
        )
        .unwrap();
        let names = |p: ProjectServers| (p.servers.into_keys().collect::<Vec<_>>(), p.skipped);
        assert_eq!(
            names(project(dir.path(), none, &[], &vars).unwrap()),
            (vec![], vec!["a".into(), "b".into(), "c".into()])
        );
        let enabled = ["a".to_owned(), "c".to_owned()];
        let some = ProjectConsent { all: false, enabled: &enabled, disabled: &[] };
        // `b` is not parsed, so its unset variable is no error.
        assert_eq!(
            names(project(dir.path(), some, &[], &vars).unwrap()),
            (vec!["a".into(), "c".into()], vec!["b".into()])
        );
        let disabled = ["c".to_owned()];
        let all_but_c = ProjectConsent { all: true, enabled: &[], disabled: &disabled };
        let err = project(dir.path(), all_but_c, &[], &vars).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: at mcpServers.b.command: the environment variable `UNSET_IN_B` is not set",
                dir.path().join(".mcp.json").display()
            )
        );
    }

    fn keep(patterns: &[&str]) -> Vec<KeepPattern> {
        patterns.iter().map(|p| KeepPattern::new(p).unwrap()).collect()
    }

    /// A project's servers get only what Bash gets: a model credential or a secret-looking
    /// variable the keep patterns do not name expands to nothing (a default too), in every
    /// field, each named once per server; the user's own configuration expands them all.
    #[test]
    fn a_project_server_cannot_expand_what_bash_does_not_get() {
        let lookup = |name: &str| match name {
            "ANTHROPIC_API_KEY" => Some("sk-ant-key".to_owned()),
            "ANTHROPIC_AUTH_TOKEN" => Some("bearer".to_owned()),
            "GITHUB_TOKEN" => Some("gh-token".to_owned()),
            "NPM_TOKEN" => Some("npm-token".to_owned()),
            "HOME" => Some("/home/me".to_owned()),
            _ => None,
        };
        let servers = json!({"mcpServers": {
            "ai": {"command": "${HOME}/ai", "args": ["--key", "${ANTHROPIC_API_KEY}"],
                   "env": {"A": "${ANTHROPIC_API_KEY}", "B": "x${GITHUB_TOKEN:-fallback}y", "C": "${NPM_TOKEN}"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/${ANTHROPIC_AUTH_TOKEN}",
                    "headers": {"X-Api-Key": "${ANTHROPIC_API_KEY}", "X-Home": "${HOME}"}}
        }});
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".mcp.json"), servers.to_string()).unwrap();
        let all = ProjectConsent { all: true, enabled: &[], disabled: &[] };
        let keep = keep(&["NPM_*"]);
        let project = project(dir.path(), all, &keep, &lookup).unwrap();
        let scope = Scope::Project { keep: keep.clone() };
        assert_eq!(
            project.servers["ai"],
            ServerConfig::Stdio {
                command: "/home/me/ai".into(),
                args: vec!["--key".into(), "".into()],
                env: BTreeMap::from([
                    ("A".into(), "".into()),
                    ("B".into(), "xy".into()),
                    ("C".into(), "npm-token".into())
                ]),
                scope,
            }
        );
        assert_eq!(
            project.servers["web"],
            ServerConfig::Http {
                url: "http://127.0.0.1:9/".into(),
                headers: BTreeMap::from([("X-Api-Key".into(), "".into()), ("X-Home".into(), "/home/me".into())]),
                oauth: None,
            }
        );
        let withheld = |server: &str, variable: &str| Withheld { server: server.into(), variable: variable.into() };
        assert_eq!(
            project.withheld,
            [
                withheld("ai", "ANTHROPIC_API_KEY"),
                withheld("ai", "GITHUB_TOKEN"),
                withheld("web", "ANTHROPIC_AUTH_TOKEN"),
                withheld("web", "ANTHROPIC_API_KEY"),
            ]
        );
        assert_eq!(
            project.withheld[0].to_string(),
            "MCP server `ai` of .mcp.json: ${ANTHROPIC_API_KEY} expands to nothing: a project's servers get only the \
variables Bash gets (never a model credential; --mcp-config passes it to a server of your own)"
        );
        assert_eq!(
            project.withheld[1].to_string(),
            "MCP server `ai` of .mcp.json: ${GITHUB_TOKEN} expands to nothing: a project's servers get only the \
variables Bash gets (the settings' shellEnvironment.keep passes it)"
        );
        // The same servers as the user's own configuration: everything expands.
        let user = parse("--mcp-config", &servers, &lookup).unwrap();
        assert_eq!(
            user["ai"],
            ServerConfig::Stdio {
                command: "/home/me/ai".into(),
                args: vec!["--key".into(), "sk-ant-key".into()],
                env: BTreeMap::from([
                    ("A".into(), "sk-ant-key".into()),
                    ("B".into(), "xgh-tokeny".into()),
                    ("C".into(), "npm-token".into())
                ]),
                scope: Scope::User,
            }
        );
        assert_eq!(
            user["web"],
            ServerConfig::Http {
                url: "http://127.0.0.1:9/bearer".into(),
                headers: BTreeMap::from([
                    ("X-Api-Key".into(), "sk-ant-key".into()),
                    ("X-Home".into(), "/home/me".into())
                ]),
                oauth: None,
            }
        );
    }

    #[test]
    fn errors_name_the_origin_and_the_json_path() {
        let err = |json: Value| parse("--mcp-config", &json, &vars).unwrap_err().to_string();
        assert_eq!(
            err(json!({"mcpServers": {"s": {"command": "c", "args": ["ok", "${NOPE}"]}}})),
            "--mcp-config: at mcpServers.s.args[1]: the environment variable `NOPE` is not set"
        );
        assert_eq!(
            err(json!({"mcpServers": {"s": {"command": "c", "args": "x"}}})),
            "--mcp-config: at mcpServers.s.args: invalid type: string \"x\", expected a sequence"
        );
        assert_eq!(
            err(json!({"mcpServers": {"s": {"type": "stdio"}}})),
            "--mcp-config: at mcpServers.s.command: missing: a stdio server needs a command"
        );
        assert_eq!(
            err(json!({"mcpServers": {"s": {"type": "http"}}})),
            "--mcp-config: at mcpServers.s.url: missing: an http server needs a url"
        );
        assert_eq!(
            err(json!({"mcpServers": {"s": {"type": "ssse", "url": "u"}}})),
            "--mcp-config: at mcpServers.s.type: unknown server type `ssse` (expected `stdio`, `http`, `sse` or `sdk`)"
        );
        assert_eq!(
            err(json!({"mcpServers": {"a b": {"command": "c"}}})),
            "--mcp-config: at mcpServers.a b: a server name has only letters, digits, `_` and `-`"
        );
        assert_eq!(
            err(json!({"mcpServers": {"s": {"command": "c", "env": {"K": "${NOPE}"}}}})),
            "--mcp-config: at mcpServers.s.env.K: the environment variable `NOPE` is not set"
        );
        assert_eq!(err(json!([])), "--mcp-config: expected an object with `mcpServers`");
        assert_eq!(
            load("{not json", Path::new("/p"), &vars).unwrap_err().to_string(),
            "--mcp-config: not valid JSON: key must be a string at line 1 column 2"
        );
        assert!(
            load("/nonexistent/mcp.json", Path::new("/p"), &vars)
                .unwrap_err()
                .to_string()
                .starts_with("--mcp-config /nonexistent/mcp.json: cannot read: ")
        );
    }

    #[test]
    fn claude_code_user_file_gives_user_and_local_servers_of_the_project() {
        // The shape of ~/.claude.json: settings of Claude Code's own beside the servers.
        let file = json!({
            "numStartups": 12,
            "theme": "dark",
            "mcpServers": {
                "shared": {"type": "stdio", "command": "user-shared"},
                "docs": {"type": "http", "url": "https://docs.example/mcp"}
            },
            "projects": {
                "/work/app": {
                    "allowedTools": [],
                    "mcpServers": {"shared": {"type": "stdio", "command": "local-shared", "args": ["${HOME}"]}}
                },
                "/work/other": {"mcpServers": {"elsewhere": {"command": "other"}}}
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        std::fs::write(&path, file.to_string()).unwrap();
        let path = path.to_str().unwrap();

        let in_app = load(path, Path::new("/work/app"), &vars).unwrap();
        assert_eq!(in_app.keys().collect::<Vec<_>>(), ["docs", "shared"]);
        assert_eq!(
            in_app["shared"],
            ServerConfig::Stdio {
                command: "local-shared".into(),
                args: vec!["/home/me".into()],
                env: BTreeMap::new(),
                scope: Scope::User,
            }
        );
        let elsewhere = load(path, Path::new("/work/unknown"), &vars).unwrap();
        assert_eq!(
            elsewhere["shared"],
            ServerConfig::Stdio {
                command: "user-shared".into(),
                args: vec![],
                env: BTreeMap::new(),
                scope: Scope::User
            }
        );
        assert_eq!(elsewhere.len(), 2);

        let bad = json!({"projects": {"/work/app": {"mcpServers": {"s": {"type": "http"}}}}});
        std::fs::write(dir.path().join("bad.json"), bad.to_string()).unwrap();
        let bad_path = dir.path().join("bad.json");
        assert_eq!(
            load(bad_path.to_str().unwrap(), Path::new("/work/app"), &vars).unwrap_err().to_string(),
            format!(
                "--mcp-config {}: projects[/work/app]: at mcpServers.s.url: missing: an http server needs a url",
                bad_path.display()
            )
        );
    }
}
