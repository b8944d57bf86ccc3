//! Skills, as Claude Code has them: `<name>/SKILL.md` under `.claude/skills/` of the project
//! and `skills/` of the user's directory (`~/.claude/skills/`), with frontmatter `name`
//! (default: the directory's name) and `description` (required). Only names and descriptions
//! are in context (the `Skill` tool's description lists them) until the model calls `Skill`,
//! which answers with the body; the files the body names are in the skill's directory, for
//! `Read`.
//!
//! A skill is instructions, not permissions: its `allowed-tools` is read and shown, and no
//! call is allowed because of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolOutput, typed_call};
use crate::settings::frontmatter::Document;
use crate::settings::{ConfigDirs, SettingSource, SettingSources};

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: PathBuf,
    /// Its `allowed-tools`, as written (shown, never granted).
    pub allowed_tools: Vec<String>,
    /// The body: the instructions.
    body: String,
}

/// The skills of a session, by name; a project's skill replaces a user's of the same name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    list: Vec<SkillDefinition>,
}

impl Skills {
    /// The skills of the sources `sources` reads; a file that cannot be used is skipped with
    /// a warning naming it.
    pub fn discover(sources: &SettingSources, dirs: &ConfigDirs) -> (Skills, Vec<String>) {
        let mut skills = Skills::default();
        let mut warnings = Vec::new();
        for source in [SettingSource::User, SettingSource::Project] {
            if !sources.list().contains(&source) {
                continue;
            }
            let Some(dir) = source.dir(dirs, "skills") else { continue };
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut files: Vec<PathBuf> =
                entries.filter_map(Result::ok).map(|e| e.path().join("SKILL.md")).filter(|p| p.is_file()).collect();
            files.sort();
            for file in files {
                match read(&file) {
                    Ok(skill) => {
                        skills.list.retain(|s| s.name != skill.name);
                        skills.list.push(skill);
                    }
                    Err(e) => warnings.push(format!("{e}; the skill is ignored")),
                }
            }
        }
        skills.list.sort_by(|a, b| a.name.cmp(&b.name));
        (skills, warnings)
    }

    /// Whether there is no skill.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The names, sorted (`system/init`'s `skills`).
    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|s| s.name.clone()).collect()
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&SkillDefinition> {
        self.list.iter().find(|s| s.name == name)
    }
}

fn read(path: &Path) -> Result<SkillDefinition, String> {
    let (file, doc) = Document::read(path).map_err(|e| e.to_string())?;
    let dir_name =
        path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = |key: &str| doc.text(&file, key).map(|v| v.map(|t| t.trim().to_owned())).map_err(|e| e.to_string());
    let name = text("name")?.filter(|n| !n.is_empty()).unwrap_or(dir_name);
    let description = text("description")?.filter(|d| !d.is_empty()).ok_or_else(|| {
        let line = doc.field("description").map_or(1, |f| f.line);
        format!("{file}:{line}: a skill needs a `description`: the model chooses skills by it")
    })?;
    Ok(SkillDefinition {
        name,
        description,
        path: path.to_path_buf(),
        allowed_tools: doc.items("allowed-tools"),
        body: doc.body,
    })
}

/// The `Skill` tool of a session with skills.
#[derive(Debug)]
pub struct SkillTool {
    skills: Arc<Skills>,
    description: String,
}

impl SkillTool {
    /// The tool offering `skills`.
    pub fn new(skills: Arc<Skills>) -> SkillTool {
        let mut description = String::from(
            "Loads a skill: instructions for a kind of task, with the files they name in the skill's \
             directory. When a task matches a skill's description, call this first with the skill's name \
             (and, in `args`, what the task is about), then follow what it answers.\n\nAvailable skills:",
        );
        for skill in &skills.list {
            description.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        SkillTool { skills, description }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    skill: String,
    #[serde(default)]
    args: Option<String>,
}

impl Tool for SkillTool {
    fn name(&self) -> &'static str {
        "Skill"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "description": "The skill's name"},
                "args": {"type": "string", "description": "What the task at hand is about, for the skill"}
            },
            "required": ["skill"],
            "additionalProperties": false
        })
    }

    /// It only reads the skill's file.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let skills = self.skills.clone();
        typed_call("Skill", input, move |input: Input| async move {
            let name = input.skill.trim_start_matches('/');
            let Some(skill) = skills.get(name) else {
                return Err(ToolOutput::error(format!(
                    "<tool_use_error>Unknown skill: {name}. The skills are: {}</tool_use_error>",
                    skills.names().join(", ")
                )));
            };
            let dir = skill.path.parent().unwrap_or(Path::new("."));
            let mut text = format!(
                "Skill \"{}\" (from {}). Its files are in {}: Read the ones these instructions name. The \
                 instructions are guidance for the task, not permissions: every call is still judged by the rules.",
                skill.name,
                skill.path.display(),
                dir.display()
            );
            if !skill.allowed_tools.is_empty() {
                text.push_str(&format!(" (It lists the tools it uses: {}.)", skill.allowed_tools.join(", ")));
            }
            text.push_str(&format!("\n\n{}", skill.body.trim_end()));
            if let Some(args) = input.args.filter(|a| !a.trim().is_empty()) {
                text.push_str(&format!("\n\nThe task: {args}"));
            }
            Ok(ToolOutput::ok(text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[tokio::test]
    async fn skills_are_found_listed_and_loaded_on_demand() {
        let root = tempfile::tempdir().unwrap();
        let (user, project) = (root.path().join("claude"), root.path().join("project"));
        write(&user.join("skills/release/SKILL.md"), "---\ndescription: Cut a release.\n---\nUser release steps.\n");
        write(
            &user.join("skills/lint/SKILL.md"),
            "---\ndescription: Lint.\nallowed-tools: Bash(cargo clippy:*)\n---\nRun clippy.\n",
        );
        write(
            &project.join(".claude/skills/release/SKILL.md"),
            "---\nname: release\ndescription: Cut a release of this project.\n---\nBump the version, see checklist.md.\n",
        );
        write(&project.join(".claude/skills/broken/SKILL.md"), "---\nname: broken\n---\nNo description.\n");
        let dirs = ConfigDirs { user: Some(user.clone()), project: project.clone() };
        let (skills, warnings) = Skills::discover(&SettingSources::parse(None).unwrap(), &dirs);
        assert_eq!(skills.names(), ["lint", "release"]);
        assert_eq!(skills.get("release").unwrap().description, "Cut a release of this project.");
        let broken = project.join(".claude/skills/broken/SKILL.md");
        assert_eq!(
            warnings,
            [format!(
                "{}:1: a skill needs a `description`: the model chooses skills by it; the skill is ignored",
                broken.display()
            )]
        );
        let tool = SkillTool::new(Arc::new(skills));
        assert!(tool.description().ends_with("\n- lint: Lint.\n- release: Cut a release of this project."));
        let out = tool.call(json!({"skill": "release", "args": "version 2"}), ToolContext::new(&project)).await;
        let skill_md = project.join(".claude/skills/release/SKILL.md");
        assert_eq!(
            out.content,
            format!(
                "Skill \"release\" (from {}). Its files are in {}: Read the ones these instructions name. The \
                 instructions are guidance for the task, not permissions: every call is still judged by the rules.\
                 \n\nBump the version, see checklist.md.\n\nThe task: version 2",
                skill_md.display(),
                skill_md.parent().unwrap().display()
            )
        );
        let lint = tool.call(json!({"skill": "/lint"}), ToolContext::new(&project)).await;
        assert!(
            lint.content.contains("(It lists the tools it uses: Bash(cargo clippy:*).)\n\nRun clippy."),
            "{}",
            lint.content
        );
        let unknown = tool.call(json!({"skill": "deploy"}), ToolContext::new(&project)).await;
        assert_eq!(
            (unknown.is_error, unknown.content.as_str()),
            (true, "<tool_use_error>Unknown skill: deploy. The skills are: lint, release</tool_use_error>")
        );
        let (none, _) = Skills::discover(&SettingSources::parse(Some("")).unwrap(), &dirs);
        assert!(none.is_empty());
    }
}
