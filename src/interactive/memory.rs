//! `/memory`: the session's memory files as the user sees them — numbered, each with its
//! scope, its size, the file that imported it and whether the cap cut it; those loaded at the
//! start first, then those attached since ([`crate::context::memory::nested`]) — and `/memory N`,
//! which opens file N in the user's editor (`$VISUAL`, else `$EDITOR`) while the session waits.

use std::ffi::OsString;
use std::path::Path;

use crate::context::memory::{MEMORY_CAP_BYTES, Memory, MemoryFile};

/// The files `/memory N` numbers from 1, in order: the start's, then those attached since.
pub fn numbered<'a>(start: &'a Memory, attached: &'a [MemoryFile]) -> Vec<&'a MemoryFile> {
    start.files.iter().chain(attached).collect()
}

/// The lines `/memory` prints.
pub fn listing(start: &Memory, attached: &[MemoryFile]) -> Vec<String> {
    if start.files.is_empty() && attached.is_empty() && start.left_out.is_empty() {
        return vec![
            "no memory files are loaded (CLAUDE.md, AGENTS.md, .claude/rules/*.md, CLAUDE.local.md); /init asks the \
             model to write a CLAUDE.md"
                .to_owned(),
        ];
    }
    let mut lines = Vec::new();
    let mut n = 0;
    let mut list = |lines: &mut Vec<String>, files: &[MemoryFile]| {
        for file in files {
            n += 1;
            lines.push(format!("{n:>2}. {}", describe(file)));
        }
    };
    lines.push("loaded at the start of the session (lowest precedence first):".to_owned());
    if start.files.is_empty() {
        lines.push("    (none)".to_owned());
    }
    list(&mut lines, &start.files);
    if !start.left_out.is_empty() {
        let names: Vec<String> = start.left_out.iter().map(|p| p.display().to_string()).collect();
        lines.push(format!("    left out by the {MEMORY_CAP_BYTES}-byte cap: {}", names.join(", ")));
    }
    if !attached.is_empty() {
        lines.push("attached since, when the model first touched a file they cover:".to_owned());
        list(&mut lines, attached);
    }
    lines.push("/memory N opens file N in $VISUAL or $EDITOR".to_owned());
    lines
}

/// One file's line: path, scope, bytes loaded, the importing file, the cut.
fn describe(file: &MemoryFile) -> String {
    let mut line = format!("{} · {} · {} bytes", file.path.display(), file.scope.as_str(), file.bytes);
    if let Some(from) = &file.imported_from {
        line.push_str(&format!(" · imported by {}", from.display()));
    }
    if file.cut {
        line.push_str(" · cut by the cap");
    }
    line
}

/// The user's editor: `visual` (`$VISUAL`), else `editor` (`$EDITOR`); an empty one is none.
pub fn editor_command(visual: Option<OsString>, editor: Option<OsString>) -> Option<String> {
    [visual, editor].into_iter().flatten().map(|e| e.to_string_lossy().trim().to_owned()).find(|e| !e.is_empty())
}

/// The command that runs `editor` on `path` on the session's terminal. It goes through
/// `sh -c`, as editors are named with their options (`code --wait`); the path is the script's
/// argument, never parsed by the shell. The editor is killed if the session stops waiting.
pub fn command(editor: &str, path: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(path).kill_on_drop(true);
    command
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::memory::{MemoryRoots, MemoryScope};
    use crate::settings::{ConfigDirs, SettingSources};

    #[test]
    fn the_listing_numbers_the_starts_files_then_the_attached_ones() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap();
        std::fs::write(project.join("CLAUDE.md"), "Rules. @notes.md\n").unwrap();
        std::fs::write(project.join("notes.md"), "Notes.\n").unwrap();
        let sources = SettingSources::parse(Some("project")).unwrap();
        let dirs = ConfigDirs { user: None, project: project.clone() };
        let start = Memory::discover(&sources, &dirs, &MemoryRoots::default());
        let mut attached = start.files[1].clone();
        attached.path = project.join("sub/CLAUDE.md");
        attached.imported_from = None;
        attached.cut = true;
        let p = project.display();
        assert_eq!(
            listing(&start, std::slice::from_ref(&attached)),
            [
                "loaded at the start of the session (lowest precedence first):".to_owned(),
                format!(" 1. {p}/CLAUDE.md · project · 17 bytes"),
                format!(" 2. {p}/notes.md · project · 7 bytes · imported by {p}/CLAUDE.md"),
                "attached since, when the model first touched a file they cover:".to_owned(),
                format!(" 3. {p}/sub/CLAUDE.md · project · 7 bytes · cut by the cap"),
                "/memory N opens file N in $VISUAL or $EDITOR".to_owned(),
            ]
        );
        let numbered: Vec<_> = numbered(&start, std::slice::from_ref(&attached)).iter().map(|f| f.scope).collect();
        assert_eq!(numbered, [MemoryScope::Project; 3]);
        assert_eq!(
            listing(&Memory::default(), &[]),
            ["no memory files are loaded (CLAUDE.md, AGENTS.md, .claude/rules/*.md, CLAUDE.local.md); /init asks the \
              model to write a CLAUDE.md"]
        );
    }

    #[test]
    fn the_editor_is_visual_else_editor() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(editor_command(os("code --wait"), os("vi")), Some("code --wait".to_owned()));
        assert_eq!(editor_command(os(" "), os("vi")), Some("vi".to_owned()));
        assert_eq!(editor_command(None, os("nano")), Some("nano".to_owned()));
        assert_eq!(editor_command(None, os("")), None);
        assert_eq!(editor_command(None, None), None);
    }

    #[tokio::test]
    async fn the_editor_gets_the_path_as_one_argument() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a file; with $(odd) chars.md");
        let out = dir.path().join("out");
        // An editor named with its options: `printf '%s' >OUT`, given the path after them.
        let status = command(&format!("printf '%s' >{}", out.display()), &file).status().await.unwrap();
        assert!(status.success());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), file.display().to_string());
    }
}
