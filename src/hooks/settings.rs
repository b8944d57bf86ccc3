//! Claude Code's settings format (`settings.json`): the `hooks` table and the `permissions`
//! block, and our own `shellEnvironment` block, parsed with errors that name the file, the
//! JSON path and what was expected.
//!
//! This file only reads settings. Running hook commands is [`super::command`]'s job; applying
//! permission rules belongs to the tools' permission layer, and building the shells'
//! environment to `crate::tools::shell_env`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{Deserializer, Error as _, MapAccess, Unexpected, Visitor};
use serde_json::Value;

use crate::json_path;
use crate::tools::shell_env::KeepPattern;

/// Settings in Claude Code's format. Top-level keys other than `hooks`, `permissions`,
/// `shellEnvironment`, `sandbox`, `outputStyle`, `modelPrices` and the project MCP server consent
/// (`enableAllProjectMcpServers`, `enabledMcpjsonServers`, `disabledMcpjsonServers`) are
/// ignored (`env`, `model`, …).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Settings {
    /// Hook commands by event.
    #[serde(default, deserialize_with = "null_as_default")]
    pub hooks: HookTable,
    /// Permission rules, kept as written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub permissions: Permissions,
    /// Which secret-looking variables Bash and hook commands keep.
    #[serde(default, rename = "shellEnvironment", deserialize_with = "null_as_default")]
    pub shell_environment: ShellEnvironment,
    /// `enableAllProjectMcpServers`: start every server of the project's `.mcp.json`.
    #[serde(default, rename = "enableAllProjectMcpServers", deserialize_with = "null_as_default")]
    pub enable_all_project_mcp_servers: bool,
    /// `enabledMcpjsonServers`: the servers of the project's `.mcp.json` that may start.
    #[serde(default, rename = "enabledMcpjsonServers", deserialize_with = "null_as_default")]
    pub enabled_mcpjson_servers: Vec<String>,
    /// `disabledMcpjsonServers`: servers of the project's `.mcp.json` that never start (this
    /// wins over the two above).
    #[serde(default, rename = "disabledMcpjsonServers", deserialize_with = "null_as_default")]
    pub disabled_mcpjson_servers: Vec<String>,
    /// `sandbox`: how commands are confined (`crate::sandbox::settings`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub sandbox: crate::sandbox::SandboxSettings,
    /// `outputStyle`: the name of the output style (`crate::context::output_style`).
    #[serde(default, rename = "outputStyle")]
    pub output_style: Option<String>,
    /// `modelPrices` (ours): what models the price table does not know cost, by model-name
    /// prefix (`{"qwen2.5-coder": {"input": 0.1, "output": 0.3}}`, US dollars per million
    /// tokens). A model priced nowhere has an unknown cost.
    #[serde(default, rename = "modelPrices", deserialize_with = "null_as_default")]
    pub model_prices: BTreeMap<String, ModelPrice>,
    /// `modelProviders` (ours): where `--model chat:NAME` and `--model responses:NAME` send
    /// their requests, and which variable holds the key, when `OPENAI_BASE_URL` and
    /// `OPENAI_API_KEY` do not say. Never from the working directory's files.
    #[serde(default, rename = "modelProviders", deserialize_with = "null_as_default")]
    pub model_providers: ModelProviders,
}

/// The `modelProviders` block: one entry per OpenAI-style protocol.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelProviders {
    /// For `--model chat:NAME` (Chat Completions).
    #[serde(default)]
    pub chat: Option<ModelProvider>,
    /// For `--model responses:NAME` (the Responses API).
    #[serde(default)]
    pub responses: Option<ModelProvider>,
}

/// One provider: its base URL and the name of the variable that holds its key (a key itself
/// never sits in a settings file).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelProvider {
    /// The base URL, up to and including the version (`http://127.0.0.1:8080/v1`).
    #[serde(default, rename = "baseUrl")]
    pub base_url: Option<String>,
    /// The environment variable holding the bearer token (`LLAMA_API_KEY`).
    #[serde(default, rename = "apiKeyEnv")]
    pub api_key_env: Option<String>,
}

/// One entry of `modelPrices`: US dollars per million tokens. Cache writes and reads cost
/// what uncached input does unless given.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached prompt tokens.
    pub input: UsdPerMillion,
    /// Generated tokens.
    pub output: UsdPerMillion,
    /// Prompt tokens written to the cache.
    #[serde(default, rename = "cacheWrite")]
    pub cache_write: Option<UsdPerMillion>,
    /// Prompt tokens read from the cache.
    #[serde(default, rename = "cacheRead")]
    pub cache_read: Option<UsdPerMillion>,
}

impl ModelPrice {
    /// As the price table holds prices (millionths of a dollar per million tokens).
    pub fn to_price(self) -> crate::model::anthropic::pricing::Price {
        let micros = |usd: UsdPerMillion| (usd.0 * 1e6).round() as u64;
        crate::model::anthropic::pricing::Price {
            input: micros(self.input),
            output: micros(self.output),
            cache_write: micros(self.cache_write.unwrap_or(self.input)),
            cache_read: micros(self.cache_read.unwrap_or(self.input)),
        }
    }
}

/// A price in US dollars per million tokens: a number from 0 to 1 000 000.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsdPerMillion(pub f64);

impl<'de> Deserialize<'de> for UsdPerMillion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let usd = f64::deserialize(d)?;
        if !(0.0..=1e6).contains(&usd) {
            return Err(D::Error::invalid_value(
                Unexpected::Float(usd),
                &"US dollars per million tokens, from 0 to 1000000",
            ));
        }
        Ok(UsdPerMillion(usd))
    }
}

/// The `hooks` object: for each event, a list of matcher groups.
///
/// Stop, PreToolUse and PostToolUse are the events this engine runs. Claude Code's other
/// event names (`Notification`, `SessionStart`, …, see [`KNOWN_HOOK_EVENTS`]) are kept,
/// unparsed, in [`HookTable::other`]; any other name is an error.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookTable {
    /// `Stop`: run when the model ends its turn. Matchers are ignored.
    pub stop: Vec<HookMatcher>,
    /// `PreToolUse`: run before a tool whose name matches.
    pub pre_tool_use: Vec<HookMatcher>,
    /// `PostToolUse`: run after a tool whose name matches.
    pub post_tool_use: Vec<HookMatcher>,
    /// Events this engine does not run, by name, as written.
    pub other: BTreeMap<String, Value>,
}

/// One matcher group: a tool-name matcher and the commands to run when it matches.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct HookMatcher {
    /// Which tools the group applies to; absent matches every tool.
    #[serde(default)]
    pub matcher: Option<ToolMatcher>,
    /// The commands of this group, in order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub hooks: Vec<HookCommand>,
}

/// One hook entry: `{"type": "command", "command": "…", "timeout": 30}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HookCommand {
    /// The entry's `type`; only `"command"` exists here.
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// Shell text, run with `bash -c`.
    pub command: String,
    /// Seconds before the command is killed; `None` means the default (60).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The kind of a hook entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum HookKind {
    /// A shell command.
    #[serde(rename = "command")]
    Command,
    /// A callback registered by the Claude Agent SDK in `initialize`; `command` holds its
    /// callback id. Never read from a settings file.
    #[serde(skip)]
    Callback,
}

/// The `permissions` block, kept as written for the permission layer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Permissions {
    /// Rules that allow a tool call without asking, e.g. `Bash(git status:*)`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub allow: Vec<String>,
    /// Rules that refuse a tool call, e.g. `Read(./secrets/**)`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub deny: Vec<String>,
    /// Rules that always ask.
    #[serde(default, deserialize_with = "null_as_default")]
    pub ask: Vec<String>,
    /// `defaultMode` (`default`, `acceptEdits`, `plan`, `bypassPermissions`, …), unchecked.
    #[serde(default, rename = "defaultMode")]
    pub default_mode: Option<String>,
}

/// The `shellEnvironment` block (ours, not Claude Code's): `{"keep": ["GITHUB_TOKEN", "NPM_*"]}`.
///
/// Bash and hook commands run without the model credentials and without variables whose
/// names look like secrets (see `crate::tools::shell_env`); `keep` names those of the
/// latter they get anyway. Unlike Claude Code's blocks, which may hold keys this engine does
/// not read, an unknown key here is an error: it is most likely a misspelt `keep`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellEnvironment {
    /// Variable names or `*` patterns to pass through although they look like secrets.
    pub keep: Vec<KeepPattern>,
}

/// A `null` list reads as empty.
struct Keep(Vec<KeepPattern>);

impl<'de> Deserialize<'de> for Keep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        null_as_default(d).map(Keep)
    }
}

impl<'de> Deserialize<'de> for ShellEnvironment {
    // Hand-written so that only an object is accepted: a derived struct would also read a
    // JSON array as its fields in order.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ShellEnvironmentVisitor)
    }
}

struct ShellEnvironmentVisitor;

impl<'de> Visitor<'de> for ShellEnvironmentVisitor {
    type Value = ShellEnvironment;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object like {\"keep\": [\"GITHUB_TOKEN\"]}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ShellEnvironment, A::Error> {
        let mut block = ShellEnvironment::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "keep" => block.keep = map.next_value::<Keep>()?.0,
                other => return Err(A::Error::unknown_field(other, &["keep"])),
            }
        }
        Ok(block)
    }
}

/// Why settings cannot be used. Each message starts with the source it came from.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file could not be read.
    #[error("{origin}: cannot read: {error}")]
    Read {
        /// Where the settings came from (a file name).
        origin: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{origin}: {message}")]
    Syntax {
        /// Where the settings came from.
        origin: String,
        /// The parser's message (it names line and column).
        message: String,
    },
    /// The JSON does not have the settings' shape.
    #[error("{origin}: {}{message}", json_path::at(path))]
    Invalid {
        /// Where the settings came from.
        origin: String,
        /// JSON path of the offending value, like `hooks.Stop[0].hooks[0].command`; empty for the root.
        path: String,
        /// What was found and what was expected.
        message: String,
    },
}

impl Settings {
    /// Read settings from a JSON value; `source` names it in errors. `null` gives empty settings.
    ///
    /// # Errors
    ///
    /// [`SettingsError::Invalid`] when a value has the wrong type or a hook entry is not a command.
    pub fn from_value(source: &str, v: &Value) -> Result<Settings, SettingsError> {
        let found = match v {
            Value::Null => return Ok(Settings::default()),
            Value::Object(_) => None,
            Value::Bool(b) => Some(Unexpected::Bool(*b)),
            Value::Number(n) => Some(n.as_f64().map_or(Unexpected::Other("number"), Unexpected::Float)),
            Value::String(s) => Some(Unexpected::Str(s)),
            Value::Array(_) => Some(Unexpected::Seq),
        };
        // Checked here because a derived struct would also accept a JSON array of its fields.
        if let Some(found) = found {
            let message = serde_json::Error::invalid_type(found, &"a settings object").to_string();
            return Err(SettingsError::Invalid { origin: source.to_owned(), path: String::new(), message });
        }
        if let Some(hooks) = v.get("hooks")
            && let Err((path, message)) = check_hook_names(hooks)
        {
            return Err(SettingsError::Invalid { origin: source.to_owned(), path, message });
        }
        serde_path_to_error::deserialize(v).map_err(|e| SettingsError::Invalid {
            origin: source.to_owned(),
            path: json_path::of(&e),
            message: e.into_inner().to_string(),
        })
    }

    /// Read a settings file; errors name the file as given.
    ///
    /// # Errors
    ///
    /// [`SettingsError::Read`], [`SettingsError::Syntax`] or [`SettingsError::Invalid`].
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let origin = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|error| SettingsError::Read { origin: origin.clone(), error })?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| SettingsError::Syntax { origin: origin.clone(), message: e.to_string() })?;
        Settings::from_value(&origin, &value)
    }
}

/// Claude Code's hook event names. Stop, PreToolUse and PostToolUse run here; the others are
/// accepted and kept in [`HookTable::other`], so a settings file written for Claude Code loads.
pub const KNOWN_HOOK_EVENTS: &[&str] = &[
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
];

/// The keys of a matcher group of the events this engine runs.
const GROUP_KEYS: &[&str] = &["matcher", "hooks"];

/// The keys of a hook entry of the events this engine runs (`async` is Claude Code's; the
/// entry runs in order here either way).
const ENTRY_KEYS: &[&str] = &["type", "command", "timeout", "async"];

/// Names in the `hooks` table that a typo would otherwise silently disable: every event name
/// must be one of [`KNOWN_HOOK_EVENTS`], and the groups and entries of the events this engine
/// runs may hold only the keys it reads. Shapes are left to serde. Returns the JSON path and
/// the message.
fn check_hook_names(hooks: &Value) -> Result<(), (String, String)> {
    let Some(events) = hooks.as_object() else { return Ok(()) };
    for (event, groups) in events {
        if !KNOWN_HOOK_EVENTS.contains(&event.as_str()) {
            let hint = KNOWN_HOOK_EVENTS
                .iter()
                .find(|known| known.eq_ignore_ascii_case(event))
                .map(|known| format!(" (did you mean `{known}`?)"))
                .unwrap_or_default();
            let message = format!("unknown hook event `{event}`{hint}; known events: {}", KNOWN_HOOK_EVENTS.join(", "));
            return Err((format!("hooks.{event}"), message));
        }
        if !matches!(event.as_str(), "Stop" | "PreToolUse" | "PostToolUse") {
            continue;
        }
        for (i, group) in groups.as_array().into_iter().flatten().enumerate() {
            let path = format!("hooks.{event}[{i}]");
            unknown_key(group, GROUP_KEYS, &path)?;
            for (j, entry) in group.get("hooks").and_then(Value::as_array).into_iter().flatten().enumerate() {
                unknown_key(entry, ENTRY_KEYS, &format!("{path}.hooks[{j}]"))?;
            }
        }
    }
    Ok(())
}

/// The first key of `object` (if it is one) that is not in `known`, as an error at `path`.
fn unknown_key(object: &Value, known: &[&str], path: &str) -> Result<(), (String, String)> {
    let Some(map) = object.as_object() else { return Ok(()) };
    match map.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => {
            let expected = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
            Err((path.to_owned(), format!("unknown key `{key}`; known keys: {expected}")))
        }
        None => Ok(()),
    }
}

impl HookMatcher {
    /// Whether this group applies to `tool_name` (an absent matcher matches every tool).
    pub fn matches(&self, tool_name: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.matches(tool_name))
    }
}

/// A group's `matcher` in Claude Code's syntax, checked when the settings are read.
///
/// `""` and `"*"` match every tool. A matcher made only of letters, digits, `_`, `|` and
/// spaces is a list of exact tool names (`"Edit|Write"`; spaces around a name are ignored).
/// Anything else is a regular expression that must match somewhere in the tool name, as
/// JavaScript's `RegExp.test` does (`"Notebook.*"`, `"mcp__.*__write"`; anchor it with `^…$`
/// to match whole names). Where Claude Code silently ignores a pattern that does not compile,
/// reading the settings fails and names it.
#[derive(Debug, Clone)]
pub struct ToolMatcher {
    /// The matcher as written.
    source: String,
    kind: MatcherKind,
}

#[derive(Debug, Clone)]
enum MatcherKind {
    Any,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

impl ToolMatcher {
    /// Read a matcher.
    ///
    /// # Errors
    /// The regular expression's own error, for a pattern that does not compile.
    pub fn new(source: &str) -> Result<ToolMatcher, regex::Error> {
        let trimmed = source.trim();
        let kind = if trimmed.is_empty() || trimmed == "*" {
            MatcherKind::Any
        } else if trimmed.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'|' | b' ')) {
            MatcherKind::Names(trimmed.split('|').map(|name| name.trim().to_owned()).collect())
        } else {
            MatcherKind::Pattern(regex::Regex::new(source)?)
        };
        Ok(ToolMatcher { source: source.to_owned(), kind })
    }

    /// The matcher as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the matcher applies to `tool_name`.
    pub fn matches(&self, tool_name: &str) -> bool {
        match &self.kind {
            MatcherKind::Any => true,
            MatcherKind::Names(names) => names.iter().any(|name| name == tool_name),
            MatcherKind::Pattern(pattern) => pattern.is_match(tool_name),
        }
    }
}

/// Two matchers are the same when they are written the same.
impl PartialEq for ToolMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for ToolMatcher {}

impl<'de> Deserialize<'de> for ToolMatcher {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let source = String::deserialize(d)?;
        ToolMatcher::new(&source)
            .map_err(|e| D::Error::custom(format!("`{source}` is not a valid regular expression: {e}")))
    }
}

impl HookTable {
    /// Whether no Stop, PreToolUse or PostToolUse command is configured.
    pub fn is_empty(&self) -> bool {
        [&self.stop, &self.pre_tool_use, &self.post_tool_use]
            .iter()
            .all(|groups| groups.iter().all(|g| g.hooks.is_empty()))
    }
}

/// `null` reads as the type's default, like an absent key.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// Wraps a list so a `null` event value reads as an empty list inside the map visitor.
struct Groups(Vec<HookMatcher>);

impl<'de> Deserialize<'de> for Groups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        null_as_default(d).map(Groups)
    }
}

impl<'de> Deserialize<'de> for HookTable {
    // Hand-written rather than `#[serde(flatten)]`: flatten buffers the map, and the buffered
    // values lose the JSON path that error messages must name.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TableVisitor)
    }
}

struct TableVisitor;

impl<'de> Visitor<'de> for TableVisitor {
    type Value = HookTable;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from hook event names to lists of matchers")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HookTable, A::Error> {
        let mut table = HookTable::default();
        while let Some(event) = map.next_key::<String>()? {
            let slot = match event.as_str() {
                "Stop" => &mut table.stop,
                "PreToolUse" => &mut table.pre_tool_use,
                "PostToolUse" => &mut table.post_tool_use,
                _ => {
                    let raw: Value = map.next_value()?;
                    table.other.insert(event, raw);
                    continue;
                }
            };
            let Groups(groups) = map.next_value()?;
            *slot = groups;
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid(v: Value) -> String {
        Settings::from_value("settings.json", &v).unwrap_err().to_string()
    }

    fn cmd(command: &str, timeout: Option<u64>) -> HookCommand {
        HookCommand { kind: HookKind::Command, command: command.to_owned(), timeout }
    }

    #[test]
    fn parses_the_full_format() {
        let v = json!({
            "env": {"FOO": "1"},
            "model": "opus",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "exit 0", "timeout": 30}]}],
                "PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "check"}]}],
                "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "fmt", "async": false}]}],
                "Notification": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]
            },
            "permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./secrets/**)"], "defaultMode": "default"}
        });
        let s = Settings::from_value("settings.json", &v).unwrap();
        assert_eq!(s.hooks.stop, vec![HookMatcher { matcher: None, hooks: vec![cmd("exit 0", Some(30))] }]);
        let matcher = |s: &str| Some(ToolMatcher::new(s).unwrap());
        assert_eq!(
            s.hooks.pre_tool_use,
            vec![HookMatcher { matcher: matcher("Bash|Edit"), hooks: vec![cmd("check", None)] }]
        );
        assert_eq!(s.hooks.post_tool_use, vec![HookMatcher { matcher: matcher("*"), hooks: vec![cmd("fmt", None)] }]);
        assert_eq!(s.hooks.other.keys().collect::<Vec<_>>(), vec!["Notification"]);
        assert_eq!(s.hooks.other["Notification"], json!([{"hooks": [{"type": "prompt", "prompt": "x"}]}]));
        assert_eq!(
            s.permissions,
            Permissions {
                allow: vec!["Bash(git status:*)".into()],
                deny: vec!["Read(./secrets/**)".into()],
                ask: vec![],
                default_mode: Some("default".into()),
            }
        );
        assert!(!s.hooks.is_empty());
    }

    #[test]
    fn null_and_absent_give_empty_settings() {
        for v in [
            Value::Null,
            json!({}),
            json!({"hooks": null, "permissions": null, "shellEnvironment": null}),
            json!({"hooks": {"Stop": null}}),
            json!({"shellEnvironment": {"keep": null}}),
        ] {
            let s = Settings::from_value("s", &v).unwrap();
            assert_eq!(s, Settings::default(), "{v}");
            assert!(s.hooks.is_empty());
        }
    }

    #[test]
    fn shell_environment_keeps_patterns() {
        let v = json!({"shellEnvironment": {"keep": ["GITHUB_TOKEN", "NPM_*"]}});
        let s = Settings::from_value("settings.json", &v).unwrap();
        let keep: Vec<&str> = s.shell_environment.keep.iter().map(KeepPattern::as_str).collect();
        assert_eq!(keep, ["GITHUB_TOKEN", "NPM_*"]);
    }

    #[test]
    fn shell_environment_errors_name_the_path() {
        assert_eq!(
            invalid(json!({"shellEnvironment": {"keep": ["NPM_*", "ANTHROPIC_API_KEY"]}})),
            "settings.json: at shellEnvironment.keep[1]: `ANTHROPIC_API_KEY` is a model credential: it is never \
             passed to tools or hooks"
        );
        assert_eq!(
            invalid(json!({"shellEnvironment": {"keep": [""]}})),
            "settings.json: at shellEnvironment.keep[0]: an empty pattern keeps nothing: write a variable name or a \
             pattern like `NPM_*`"
        );
        assert_eq!(
            invalid(json!({"shellEnvironment": {"keep": [1]}})),
            "settings.json: at shellEnvironment.keep[0]: invalid type: integer `1`, expected a string"
        );
        assert_eq!(
            invalid(json!({"shellEnvironment": {"keeps": ["X"]}})),
            "settings.json: at shellEnvironment: unknown field `keeps`, expected `keep`"
        );
        assert_eq!(
            invalid(json!({"shellEnvironment": ["X"]})),
            "settings.json: at shellEnvironment: invalid type: sequence, expected an object like {\"keep\": [\"GITHUB_TOKEN\"]}"
        );
    }

    #[test]
    fn wrong_command_type_names_the_path() {
        let v = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": 3}]}]}});
        assert_eq!(
            invalid(v),
            "settings.json: at hooks.Stop[0].hooks[0].command: invalid type: integer `3`, expected a string"
        );
    }

    #[test]
    fn non_command_hook_is_rejected() {
        let v = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "command": "x"}]}]}});
        assert_eq!(
            invalid(v),
            "settings.json: at hooks.PreToolUse[0].hooks[0].type: unknown variant `prompt`, expected `command`"
        );
    }

    #[test]
    fn other_shape_errors() {
        assert_eq!(
            invalid(json!({"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}})),
            "settings.json: at hooks.Stop[0].hooks[0]: missing field `command`"
        );
        assert_eq!(
            invalid(
                json!({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}})
            ),
            "settings.json: at hooks.PostToolUse[0].hooks[0].timeout: invalid value: integer `-1`, expected u64"
        );
        assert_eq!(
            invalid(json!({"hooks": []})),
            "settings.json: at hooks: invalid type: sequence, expected a map from hook event names to lists of matchers"
        );
        assert_eq!(
            invalid(json!({"permissions": {"allow": "Bash"}})),
            "settings.json: at permissions.allow: invalid type: string \"Bash\", expected a sequence"
        );
        assert_eq!(invalid(json!([1])), "settings.json: invalid type: sequence, expected a settings object");
        assert_eq!(invalid(json!("x")), "settings.json: invalid type: string \"x\", expected a settings object");
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#).unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.hooks.stop[0].hooks, vec![cmd("true", None)]);

        std::fs::write(&path, "{\"hooks\": ").unwrap();
        let shown = path.display();
        assert_eq!(
            Settings::load(&path).unwrap_err().to_string(),
            format!("{shown}: EOF while parsing a value at line 1 column 10")
        );

        std::fs::write(&path, r#"{"hooks": {"Stop": [{"matcher": 1}]}}"#).unwrap();
        assert_eq!(
            Settings::load(&path).unwrap_err().to_string(),
            format!("{shown}: at hooks.Stop[0].matcher: invalid type: integer `1`, expected a string")
        );

        let missing = dir.path().join("missing.json");
        let err = Settings::load(&missing).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: cannot read: ", missing.display())), "{err}");
    }

    #[test]
    fn matcher_semantics() {
        let m = |s: Option<&str>| HookMatcher { matcher: s.map(|s| ToolMatcher::new(s).unwrap()), hooks: vec![] };
        for all in [None, Some(""), Some("*"), Some(" * ")] {
            assert!(m(all).matches("Read"), "{all:?}");
        }
        // Names: exact, whole names only.
        assert!(m(Some("Edit|Write")).matches("Write"));
        assert!(m(Some("Edit|Write")).matches("Edit"));
        assert!(!m(Some("Edit|Write")).matches("Read"));
        assert!(!m(Some("Edit|Write")).matches("Edi"));
        assert!(!m(Some("Edit")).matches("NotebookEdit"));
        assert!(m(Some("Edit | Write")).matches("Write"));
        assert!(m(Some("Bash")).matches("Bash"));
        assert!(m(Some("mcp__memory__create_entities")).matches("mcp__memory__create_entities"));
        // Patterns: found anywhere in the name, unless anchored.
        assert!(m(Some("Notebook.*")).matches("NotebookEdit"));
        assert!(m(Some("mcp__.*__write.*")).matches("mcp__files__write_file"));
        assert!(!m(Some("mcp__.*__write.*")).matches("mcp__files__read_file"));
        assert!(m(Some("Ed.t")).matches("NotebookEdit"));
        assert!(!m(Some("^Ed.t$")).matches("NotebookEdit"));
        assert!(m(Some("^(Edit|Write)$")).matches("Write"));
    }

    #[test]
    fn an_unknown_event_name_names_its_path_and_the_known_ones() {
        let known = "known events: PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, Notification, \
                     UserPromptSubmit, Stop, SubagentStart, SubagentStop, PreCompact, SessionStart, SessionEnd";
        assert_eq!(
            invalid(
                json!({"hooks": {"preToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}})
            ),
            format!(
                "settings.json: at hooks.preToolUse: unknown hook event `preToolUse` (did you mean `PreToolUse`?); {known}"
            )
        );
        assert_eq!(
            invalid(json!({"hooks": {"Stop": [], "AfterToolUse": []}})),
            format!("settings.json: at hooks.AfterToolUse: unknown hook event `AfterToolUse`; {known}")
        );
    }

    #[test]
    fn every_claude_code_event_is_accepted() {
        let hooks: serde_json::Map<String, Value> = KNOWN_HOOK_EVENTS
            .iter()
            .map(|event| (event.to_string(), json!([{"hooks": [{"type": "command", "command": "true"}]}])))
            .collect();
        let s = Settings::from_value("settings.json", &json!({"hooks": hooks})).unwrap();
        assert_eq!(s.hooks.stop.len() + s.hooks.pre_tool_use.len() + s.hooks.post_tool_use.len(), 3);
        assert_eq!(s.hooks.other.len(), KNOWN_HOOK_EVENTS.len() - 3);
    }

    #[test]
    fn an_unknown_key_in_a_group_or_an_entry_names_its_path() {
        assert_eq!(
            invalid(json!({"hooks": {"PreToolUse": [{"matchers": "Bash", "hooks": []}]}})),
            "settings.json: at hooks.PreToolUse[0]: unknown key `matchers`; known keys: `matcher`, `hooks`"
        );
        assert_eq!(
            invalid(json!({"hooks": {"Stop": [{"hooks": [
                {"type": "command", "command": "true"},
                {"type": "command", "command": "true", "timout": 5}
            ]}]}})),
            "settings.json: at hooks.Stop[0].hooks[1]: unknown key `timout`; known keys: `type`, `command`, `timeout`, \
             `async`"
        );
    }

    #[test]
    fn a_matcher_that_does_not_compile_names_its_path() {
        let err = invalid(json!({"hooks": {"PostToolUse": [
            {"matcher": "Bash", "hooks": []},
            {"matcher": "Edit(", "hooks": []}
        ]}}));
        assert!(
            err.starts_with(
                "settings.json: at hooks.PostToolUse[1].matcher: `Edit(` is not a valid regular expression: "
            ),
            "{err}"
        );
    }
}
