//! Output styles: instructions, chosen by the settings' `outputStyle`, that the system prompt
//! carries about how to answer, as in Claude Code.
//!
//! The styles are the built-in ones ([`BUILT_IN`]: `default`, `Proactive`, `Concise`,
//! `Explanatory`, `Learning`, the names Claude Code 2.1.332 has, with instructions of our own),
//! then the Markdown files of `output-styles/` in the user's directory and the project's
//! `.claude/` (each only when its settings source is read). A file's frontmatter gives `name`
//! (default: the file name without `.md`), `description` and `keep-coding-instructions`; its
//! body is the instructions. A project style replaces a user or built-in style of the same
//! name, and a user style a built-in one.
//!
//! The chosen style goes into agentloop's default system prompt as a `# Output Style: NAME`
//! section ([`system_prompt`]); unless the style keeps the coding instructions (the built-in
//! ones do), the prompt's sentences about coding give way to one about answering in the style. A system
//! prompt given with `--system-prompt` (even an empty one, which the Claude Agent SDK sends
//! when its `system_prompt` is not set) or `--system-prompt-file` replaces the whole prompt,
//! the style included, as in Claude Code; `system/init` still names the style chosen.

use std::path::Path;

use crate::engine::options::DEFAULT_SYSTEM_PROMPT;
use crate::settings::frontmatter::{Document, FileError, markdown_files};
use crate::settings::{ConfigDirs, SettingSource, SettingSources};

/// The style in force when the settings name none.
pub const DEFAULT_STYLE: &str = "default";

/// Where a style comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StyleOrigin {
    /// agentloop's own.
    BuiltIn,
    /// A file of the user's or the project's `output-styles/`.
    File(SettingSource),
}

/// One output style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyle {
    /// The name `outputStyle` chooses it by.
    pub name: String,
    /// One line about it.
    pub description: String,
    /// The instructions the system prompt carries; empty for `default`.
    pub prompt: String,
    /// Keep the default prompt's coding instructions beside the style's.
    pub keep_coding_instructions: bool,
    /// Where it comes from.
    pub origin: StyleOrigin,
}

/// A built-in style: name, description, instructions.
struct BuiltIn {
    name: &'static str,
    description: &'static str,
    prompt: &'static str,
}

/// The built-in styles, in the order they are listed.
const BUILT_IN: &[BuiltIn] = &[
    BuiltIn { name: DEFAULT_STYLE, description: "agentloop's usual answers", prompt: "" },
    BuiltIn {
        name: "Proactive",
        description: "Takes the obvious next steps without asking",
        prompt: "When a task has an obvious next step (running the tests after a change, fixing the lint \
it reports, updating the docs a change makes wrong), take it without asking first, and say what you did. Ask \
only when a step is hard to undo or the user's intent is unclear.",
    },
    BuiltIn {
        name: "Concise",
        description: "Short answers, no preamble",
        prompt: "Answer in as few words as the task allows: no preamble, no summary of what you are about to \
do or have just done, no restating the question. Show code and results rather than describing them.",
    },
    BuiltIn {
        name: "Explanatory",
        description: "Explains the choices it makes while it works",
        prompt: "Besides doing the task, help the user understand the code. When you make a choice that is not \
obvious (a design, an API, a trade-off), explain it briefly in a short note marked `Insight:` before or after \
the change, about this codebase rather than programming in general. Keep such notes in the conversation, never \
in the code.",
    },
    BuiltIn {
        name: "Learning",
        description: "Leaves small parts of the work for the user to write",
        prompt: "Work with the user as a teacher would. Do the routine parts of a task yourself, but where a \
small piece of code carries a real decision (a condition, a function body of a few lines), leave it for the user: \
mark the place with a `TODO(human)` comment, say what it must do and what to consider, and wait for them to \
write it. Explain your own choices briefly as you go.",
    },
];

/// The default system prompt when a style does not keep its coding instructions.
pub const STYLE_INTRO: &str = "You are agentloop, an agent that helps the user with tasks in the working \
directory, answering as your output style (below) describes. Use the tools to inspect and change files.";

/// The styles a run can choose from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyles {
    styles: Vec<OutputStyle>,
}

impl Default for OutputStyles {
    fn default() -> Self {
        OutputStyles::built_in()
    }
}

impl OutputStyles {
    /// Only the built-in styles.
    pub fn built_in() -> OutputStyles {
        let styles = BUILT_IN
            .iter()
            .map(|b| OutputStyle {
                name: b.name.to_owned(),
                description: b.description.to_owned(),
                prompt: b.prompt.to_owned(),
                keep_coding_instructions: true,
                origin: StyleOrigin::BuiltIn,
            })
            .collect();
        OutputStyles { styles }
    }

    /// The built-in styles and those of the `output-styles/` directories of `sources` in
    /// `dirs`. A file that cannot be read is skipped with a warning naming it (and the line).
    pub fn discover(sources: &SettingSources, dirs: &ConfigDirs) -> (OutputStyles, Vec<String>) {
        let mut catalog = OutputStyles::built_in();
        let mut warnings = Vec::new();
        for &source in sources.list() {
            let Some(dir) = source.dir(dirs, "output-styles") else { continue };
            for path in markdown_files(&dir) {
                match read_style(&path, source) {
                    Ok(style) => catalog.insert(style),
                    Err(e) => warnings.push(format!("{e}; the output style is ignored")),
                }
            }
        }
        (catalog, warnings)
    }

    /// Add `style`, replacing one of the same name where it was listed.
    fn insert(&mut self, style: OutputStyle) {
        match self.styles.iter_mut().find(|s| s.name == style.name) {
            Some(slot) => *slot = style,
            None => self.styles.push(style),
        }
    }

    /// The names, in order (`available_output_styles`).
    pub fn names(&self) -> Vec<String> {
        self.styles.iter().map(|s| s.name.clone()).collect()
    }

    /// The style called `name` (names are case-sensitive, as in Claude Code).
    pub fn get(&self, name: &str) -> Option<&OutputStyle> {
        self.styles.iter().find(|s| s.name == name)
    }

    /// The style the settings' `outputStyle` chooses: its name as written (or `default`), the
    /// style when there is one by that name and it is not `default`, and a warning for a name
    /// no style has (Claude Code reports such a name and adds nothing to the prompt).
    pub fn choose(&self, setting: Option<&str>) -> (ChosenStyle, Option<String>) {
        let name = setting.filter(|n| !n.trim().is_empty()).unwrap_or(DEFAULT_STYLE).to_owned();
        let style = self.get(&name).filter(|s| !s.prompt.is_empty()).cloned();
        let warning = self.get(&name).is_none().then(|| {
            format!(
                "the settings' outputStyle `{name}` names no output style ({}); none is used",
                self.names().join(", ")
            )
        });
        (ChosenStyle { name, style }, warning)
    }
}

/// The style of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenStyle {
    /// The name reported in `system/init` (`output_style`).
    pub name: String,
    /// Its instructions, when it has any.
    pub style: Option<OutputStyle>,
}

impl Default for ChosenStyle {
    fn default() -> Self {
        ChosenStyle { name: DEFAULT_STYLE.to_owned(), style: None }
    }
}

/// agentloop's default system prompt with `style`: its `# Output Style` section after the
/// prompt, which becomes [`STYLE_INTRO`] unless the style keeps the coding instructions.
pub fn system_prompt(style: &OutputStyle) -> String {
    let base = if style.keep_coding_instructions { DEFAULT_SYSTEM_PROMPT } else { STYLE_INTRO };
    format!("{base}\n\n# Output Style: {}\n{}", style.name, style.prompt.trim_end())
}

/// Read one style file.
fn read_style(path: &Path, source: SettingSource) -> Result<OutputStyle, FileError> {
    let (file, doc) = Document::read(path)?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = doc.text(&file, "name")?.filter(|n| !n.trim().is_empty());
    Ok(OutputStyle {
        name: name.map_or(stem, |n| n.trim().to_owned()),
        description: doc.text(&file, "description")?.unwrap_or("").to_owned(),
        keep_coding_instructions: doc.boolean(&file, "keep-coding-instructions")?.unwrap_or(false),
        prompt: doc.body,
        origin: StyleOrigin::File(source),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(root: &Path) -> ConfigDirs {
        ConfigDirs { user: Some(root.join("claude")), project: root.join("project") }
    }

    fn write(path: std::path::PathBuf, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn built_in_styles_are_listed_as_claude_code_lists_them() {
        assert_eq!(OutputStyles::built_in().names(), ["default", "Proactive", "Concise", "Explanatory", "Learning"]);
        let (chosen, warning) = OutputStyles::built_in().choose(None);
        assert_eq!((chosen, warning), (ChosenStyle::default(), None));
        let (chosen, _) = OutputStyles::built_in().choose(Some("Explanatory"));
        assert_eq!(chosen.name, "Explanatory");
        assert!(chosen.style.unwrap().prompt.contains("Insight:"));
    }

    #[test]
    fn an_unknown_name_is_reported_as_written_and_adds_nothing() {
        let (chosen, warning) = OutputStyles::built_in().choose(Some("explanatory"));
        assert_eq!(chosen, ChosenStyle { name: "explanatory".into(), style: None });
        assert_eq!(
            warning.unwrap(),
            "the settings' outputStyle `explanatory` names no output style (default, Proactive, Concise, \
Explanatory, Learning); none is used"
        );
    }

    #[test]
    fn files_of_the_chosen_sources_add_and_replace_styles() {
        let root = tempfile::tempdir().unwrap();
        let dirs = dirs(root.path());
        let user = dirs.user.clone().unwrap().join("output-styles");
        let project = dirs.project.join(".claude/output-styles");
        write(user.join("mine.md"), "---\nname: Mine\ndescription: user style\n---\nUser body\n");
        write(user.join("same.md"), "---\nname: Same\n---\nUSER\n");
        write(project.join("same.md"), "---\nname: Same\nkeep-coding-instructions: true\n---\nPROJECT\n");
        write(project.join("pirate.md"), "Say arr.\n");
        write(project.join("Explanatory.md"), "Overridden.\n");
        write(project.join("notes.txt"), "not a style");
        let (styles, warnings) = OutputStyles::discover(&SettingSources::all(), &dirs);
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(
            styles.names(),
            ["default", "Proactive", "Concise", "Explanatory", "Learning", "Mine", "Same", "pirate"]
        );
        let same = styles.get("Same").unwrap();
        assert_eq!((same.prompt.as_str(), same.keep_coding_instructions), ("PROJECT\n", true));
        assert_eq!(same.origin, StyleOrigin::File(SettingSource::Project));
        assert_eq!(styles.get("Explanatory").unwrap().prompt, "Overridden.\n");
        let mine = styles.get("Mine").unwrap();
        assert_eq!((mine.description.as_str(), mine.keep_coding_instructions), ("user style", false));

        let (styles, _) = OutputStyles::discover(&SettingSources::parse(Some("user")).unwrap(), &dirs);
        assert_eq!(styles.get("Same").unwrap().prompt, "USER\n");
        assert_eq!(styles.get("pirate"), None);
        let (styles, _) = OutputStyles::discover(&SettingSources::none(), &dirs);
        assert_eq!(styles, OutputStyles::built_in());
    }

    #[test]
    fn a_bad_file_is_skipped_with_its_line() {
        let root = tempfile::tempdir().unwrap();
        let dirs = dirs(root.path());
        let path = dirs.project.join(".claude/output-styles/bad.md");
        write(path.clone(), "---\nname: Bad\nkeep-coding-instructions: maybe\n---\nbody");
        let (styles, warnings) = OutputStyles::discover(&SettingSources::all(), &dirs);
        assert_eq!(styles.get("Bad"), None);
        assert_eq!(
            warnings,
            [format!(
                "{}:3: `keep-coding-instructions` must be true or false, not `maybe`; the output style is ignored",
                path.display()
            )]
        );
    }

    #[test]
    fn the_style_goes_after_the_prompt_and_may_replace_it() {
        let style = |keep| OutputStyle {
            name: "Pirate".into(),
            description: String::new(),
            prompt: "Say arr.\n".into(),
            keep_coding_instructions: keep,
            origin: StyleOrigin::BuiltIn,
        };
        assert_eq!(system_prompt(&style(false)), format!("{STYLE_INTRO}\n\n# Output Style: Pirate\nSay arr."));
        assert_eq!(system_prompt(&style(true)), format!("{DEFAULT_SYSTEM_PROMPT}\n\n# Output Style: Pirate\nSay arr."));
    }
}
