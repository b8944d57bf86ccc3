//! Where a run's settings come from, as in Claude Code: the user's, the project's and the
//! local settings files, chosen by `--setting-sources`, then `--settings`, merged into one
//! [`Settings`] ([`load`]).
//!
//! | source | settings file | also |
//! |---|---|---|
//! | `user` | `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json` | `commands/`, `output-styles/`, `agents/` there |
//! | `project` | `.claude/settings.json` in the working directory | `.claude/commands/`, `.claude/output-styles/`, `.claude/agents/` |
//! | `local` | `.claude/settings.local.json` in the working directory | |
//!
//! Without `--setting-sources` all three load (Claude Code's default); `--setting-sources ""`
//! loads none; `--settings` loads whatever the sources say. A later source wins over an
//! earlier one (user, then project, then local, then `--settings`): objects merge key by key,
//! lists are joined without duplicates, any other value is replaced.
//!
//! The project and local files sit in the working directory, so a cloned repository writes
//! them. They may add hooks, rules and restrictions, but not loosen what confines the session
//! ([`repository`]): what they say about `defaultMode: bypassPermissions` (Claude Code ignores
//! that too), the sandbox's looser values, `shellEnvironment.keep` and the consent to start the
//! project's own MCP servers is ignored with a warning naming the file.

pub mod frontmatter;
mod merge;
pub mod repository;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::hooks::settings::{Settings, SettingsError};

/// One of Claude Code's settings sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SettingSource {
    /// The user's own settings, commands, styles and agents.
    User,
    /// The project's, checked in under `.claude/`.
    Project,
    /// `.claude/settings.local.json`: the user's settings for this project.
    Local,
}

impl SettingSource {
    /// Every source, lowest precedence first.
    pub const ALL: [SettingSource; 3] = [SettingSource::User, SettingSource::Project, SettingSource::Local];

    /// The source as `--setting-sources` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SettingSource::User => "user",
            SettingSource::Project => "project",
            SettingSource::Local => "local",
        }
    }

    /// The source's settings file, if there is a place for it (the user's needs a home).
    pub fn settings_file(self, dirs: &ConfigDirs) -> Option<PathBuf> {
        match self {
            SettingSource::User => dirs.user.as_ref().map(|d| d.join("settings.json")),
            SettingSource::Project => Some(dirs.project.join(".claude/settings.json")),
            SettingSource::Local => Some(dirs.project.join(".claude/settings.local.json")),
        }
    }

    /// The directory the source keeps its `kind` files in (`commands`, `output-styles`,
    /// `agents`); the local source has none.
    pub fn dir(self, dirs: &ConfigDirs, kind: &str) -> Option<PathBuf> {
        match self {
            SettingSource::User => dirs.user.as_ref().map(|d| d.join(kind)),
            SettingSource::Project => Some(dirs.project.join(".claude").join(kind)),
            SettingSource::Local => None,
        }
    }

    /// Whether the working directory (a repository the user may have just cloned) holds
    /// this source's files.
    pub fn is_in_working_directory(self) -> bool {
        matches!(self, SettingSource::Project | SettingSource::Local)
    }
}

/// The sources a run reads: `--setting-sources`, or all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingSources {
    /// Distinct, lowest precedence first.
    list: Vec<SettingSource>,
}

/// A `--setting-sources` value that names something else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--setting-sources: `{0}` is not a settings source (user, project, local)")]
pub struct SourcesError(pub String);

impl Default for SettingSources {
    fn default() -> Self {
        SettingSources::all()
    }
}

impl SettingSources {
    /// All three, Claude Code's default.
    pub fn all() -> SettingSources {
        SettingSources { list: SettingSource::ALL.to_vec() }
    }

    /// None (`--setting-sources ""`).
    pub fn none() -> SettingSources {
        SettingSources { list: Vec::new() }
    }

    /// The sources of a `--setting-sources` value: `None` (the flag absent) is all of them;
    /// otherwise comma-separated names, spaces around them ignored, `""` for none.
    ///
    /// # Errors
    /// [`SourcesError`] for a name that is not `user`, `project` or `local`.
    pub fn parse(flag: Option<&str>) -> Result<SettingSources, SourcesError> {
        let Some(flag) = flag else { return Ok(SettingSources::all()) };
        let mut list = Vec::new();
        for name in flag.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let source = SettingSource::ALL
                .into_iter()
                .find(|s| s.as_str() == name)
                .ok_or_else(|| SourcesError(name.to_owned()))?;
            if !list.contains(&source) {
                list.push(source);
            }
        }
        list.sort();
        Ok(SettingSources { list })
    }

    /// The sources read, lowest precedence first.
    pub fn list(&self) -> &[SettingSource] {
        &self.list
    }
}

/// Where the sources live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDirs {
    /// The user's Claude Code directory (`user_config_dir`); `None` without a home.
    pub user: Option<PathBuf>,
    /// The working directory (the project's `.claude/` is in it).
    pub project: PathBuf,
}

impl ConfigDirs {
    /// The directories of a run in `cwd`, the user's from the environment.
    pub fn from_env(cwd: &Path) -> ConfigDirs {
        ConfigDirs {
            user: user_config_dir(std::env::var_os("CLAUDE_CONFIG_DIR"), std::env::var_os("HOME")),
            project: cwd.to_path_buf(),
        }
    }
}

/// Claude Code's own directory, given the values of `CLAUDE_CONFIG_DIR` and `HOME`: the first
/// when set, else `$HOME/.claude`.
pub fn user_config_dir(config_dir: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match config_dir.filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home.filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".claude")),
    }
}

/// The settings of a run and where they came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loaded {
    /// The merged settings.
    pub settings: Settings,
    /// The files read, lowest precedence first (`--settings` as given, when it is a file).
    pub files: Vec<PathBuf>,
    /// What the user should know: a file that could not be used, a value that was ignored.
    pub warnings: Vec<String>,
}

/// Why the settings of a run cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `--settings` starts like JSON but is not.
    #[error("--settings: not valid JSON: {0}")]
    FlagSyntax(serde_json::Error),
    /// `--settings` (its JSON, or the file it names), or the merged settings, are not
    /// settings.
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

/// Read the settings of `sources` in `dirs`, then `flag` (`--settings`: a file or the JSON
/// itself), and merge them. A settings file that is missing is skipped; one that cannot be
/// read or parsed is skipped with a warning (Claude Code skips it silently).
///
/// # Errors
/// `LoadError` when `--settings` cannot be used: the flag is the user's own and explicit.
pub fn load(sources: &SettingSources, dirs: &ConfigDirs, flag: Option<&str>) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    let mut layers: Vec<Value> = Vec::new();
    for &source in sources.list() {
        let Some(path) = source.settings_file(dirs) else { continue };
        let value = match read_file(&path) {
            Ok(None) => continue,
            Ok(Some(value)) => value,
            Err(e) => {
                loaded.warnings.push(format!("{e}; the file is ignored"));
                continue;
            }
        };
        let value = if source.is_in_working_directory() {
            let (kept, ignored) = repository::restrict(&value);
            let user_file = SettingSource::User.settings_file(dirs).map(|p| p.display().to_string());
            let where_to = user_file.map_or_else(|| "--settings".to_owned(), |f| format!("{f} or --settings"));
            loaded.warnings.extend(ignored.into_iter().map(|what| {
                format!(
                    "{}: {what} is ignored: settings in the working directory cannot loosen permissions or \
confinement (put it in {where_to})",
                    path.display()
                )
            }));
            kept
        } else {
            value
        };
        loaded.files.push(path);
        layers.push(value);
    }
    if let Some(flag) = flag {
        let (value, file) = flag_value(flag)?;
        loaded.files.extend(file);
        layers.push(value);
    }
    let merged = layers.into_iter().fold(Value::Null, merge::merge);
    loaded.settings = Settings::from_value("the merged settings", &merged)?;
    Ok(loaded)
}

/// A settings file's JSON, checked on its own so that an error names it; `None` when the file
/// does not exist.
fn read_file(path: &Path) -> Result<Option<Value>, SettingsError> {
    match read_value(path) {
        Err(SettingsError::Read { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        other => other.map(Some),
    }
}

/// A settings file's JSON, checked on its own.
fn read_value(path: &Path) -> Result<Value, SettingsError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| SettingsError::Read { origin: origin.clone(), error })?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| SettingsError::Syntax { origin: origin.clone(), message: e.to_string() })?;
    Settings::from_value(&origin, &value)?;
    Ok(value)
}

/// `--settings`: the JSON itself (the Claude Agent SDK passes it inline), or a file. Returns
/// the value and the file, if it was one.
fn flag_value(flag: &str) -> Result<(Value, Option<PathBuf>), LoadError> {
    if flag.trim_start().starts_with('{') {
        let value: Value = serde_json::from_str(flag).map_err(LoadError::FlagSyntax)?;
        Settings::from_value("--settings", &value)?;
        return Ok((value, None));
    }
    let path = PathBuf::from(flag);
    let value = read_value(&path)?;
    Ok((value, Some(path)))
}

#[cfg(test)]
mod tests;
