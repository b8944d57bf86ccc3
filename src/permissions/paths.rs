//! Paths in Bash commands against the file rules: which arguments are paths (for a program on
//! the read-only list, exactly the files its parse names; for any other, every argument that
//! could be one), where they resolve (symlinks followed, globs expanded), and whether a
//! `Read(…)` deny rule covers them.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use super::readonly::{self, DOT, PathArg};
use super::rule::Rule;
use crate::shell::{Analysis, SimpleCommand, Word, WordKind};
use crate::tools::paths::canonicalize_partial;

/// Most directory entries read to expand one glob; past it the glob is not proven.
const MAX_GLOB_ENTRIES: usize = 4096;

/// What is known about the paths of a command line, worst first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathVerdict {
    /// A path is covered by this `Read(…)` deny rule.
    Denied { rule: String, path: PathBuf },
    /// A path cannot be known from the text (a variable, a substitution, a changed directory).
    Unknown(String),
    /// A path resolves outside the working directory and the readable roots.
    Outside(PathBuf),
    /// Every path stays inside and is not denied.
    Inside,
}

impl PathVerdict {
    fn rank(&self) -> u8 {
        match self {
            PathVerdict::Denied { .. } => 3,
            PathVerdict::Unknown(_) => 2,
            PathVerdict::Outside(_) => 1,
            PathVerdict::Inside => 0,
        }
    }

    fn worst(self, other: PathVerdict) -> PathVerdict {
        if other.rank() > self.rank() { other } else { self }
    }
}

/// Checks paths against the working directory, the readable roots and the read-deny rules.
pub(crate) struct PathCheck<'p> {
    cwd: &'p Path,
    roots: &'p [PathBuf],
    denied: Vec<&'p Rule>,
    /// The line's input redirections (`< file`).
    reads: &'p [Word],
    /// The directories relative paths may resolve against, or why they are unknown.
    bases: Result<Vec<PathBuf>, UnknownDirectory>,
    /// The verdict over `reads`, worked out once however many commands are checked.
    reads_verdict: std::cell::OnceCell<PathVerdict>,
}

/// Commands whose arguments are never paths and that no read-only entry describes: `env`
/// and `command` alone (with a command they are wrappers, whose command is checked).
const NO_PATH_ARGUMENTS: &[&str] = &["env", "command"];

impl<'p> PathCheck<'p> {
    /// A check of `analysis`'s paths against the working directory, the readable roots and
    /// `denied` (the `Read(…)` deny rules in force, or none).
    pub(crate) fn new(cwd: &'p Path, roots: &'p [PathBuf], denied: Vec<&'p Rule>, analysis: &'p Analysis) -> Self {
        let bases = directories(cwd, analysis);
        PathCheck { cwd, roots, denied, reads: &analysis.reads, bases, reads_verdict: std::cell::OnceCell::new() }
    }

    /// The verdict over every path in `commands` (and the line's input redirections), each
    /// resolved against every directory the line may be in.
    pub(crate) fn check<'c>(&self, commands: impl IntoIterator<Item = &'c SimpleCommand>) -> PathVerdict {
        let bases = match &self.bases {
            Ok(bases) => bases,
            Err(why) => return PathVerdict::Unknown(why.to_string()),
        };
        let mut verdict = self
            .reads_verdict
            .get_or_init(|| {
                self.reads.iter().fold(PathVerdict::Inside, |verdict, word| {
                    let operand = PathArg { word, recursive: false, suffix: None, may_be_option: false };
                    verdict.worst(self.operand(&operand, bases))
                })
            })
            .clone();
        for cmd in commands {
            for operand in operands(cmd) {
                verdict = verdict.worst(self.operand(&operand, bases));
                if matches!(verdict, PathVerdict::Denied { .. }) {
                    return verdict;
                }
            }
        }
        verdict
    }

    fn operand(&self, operand: &PathArg, bases: &[PathBuf]) -> PathVerdict {
        let text = &operand.word.text[operand.suffix.unwrap_or(0)..];
        let relative = !text.starts_with('/');
        let mut verdict = PathVerdict::Inside;
        match operand.word.kind {
            WordKind::Dynamic => {
                return PathVerdict::Unknown(format!("`{}` is only known when the shell runs", operand.word.text));
            }
            WordKind::Literal => {
                for base in bases_for(relative, bases, self.cwd) {
                    verdict = verdict.worst(self.path(&base.join(text), operand.recursive));
                }
            }
            WordKind::Pattern => {
                for base in bases_for(relative, bases, self.cwd) {
                    let pattern = base.join(text);
                    let Some(matches) = expand(&pattern) else {
                        return PathVerdict::Unknown(format!("the glob `{text}` matches too much to check"));
                    };
                    if operand.may_be_option {
                        let option = matches.iter().find_map(|m| {
                            let name = m.strip_prefix(base).ok()?.components().next()?.as_os_str().to_string_lossy();
                            let looks_like_option = name.starts_with('-') || matches!(&*name, "!" | "(" | ")" | ",");
                            looks_like_option.then(|| name.into_owned())
                        });
                        if let Some(name) = option {
                            return PathVerdict::Unknown(format!(
                                "the glob `{text}` matches `{name}`, which the command would take as an option"
                            ));
                        }
                    }
                    // A glob that matches nothing stays a literal word.
                    if matches.is_empty() {
                        verdict = verdict.worst(self.path(&pattern, operand.recursive));
                    }
                    for path in matches {
                        verdict = verdict.worst(self.path(&path, operand.recursive));
                    }
                }
            }
        }
        verdict
    }

    /// One absolute path: canonical form, deny rules, inside or outside.
    fn path(&self, path: &Path, recursive: bool) -> PathVerdict {
        let resolved = canonicalize_partial(path).unwrap_or_else(|_| path.to_path_buf());
        for rule in &self.denied {
            let Some(pattern) = rule.path() else { continue };
            let reaches = recursive && resolved.is_dir() && pattern.reaches_into(&resolved);
            if pattern.covers(&resolved) || pattern.covers(path) || reaches {
                return PathVerdict::Denied { rule: rule.as_str().to_owned(), path: resolved };
            }
        }
        if resolved.starts_with(self.cwd)
            || self.roots.iter().any(|r| resolved.starts_with(r))
            || resolved == Path::new("/dev/null")
        {
            PathVerdict::Inside
        } else {
            PathVerdict::Outside(resolved)
        }
    }
}

fn bases_for<'b>(relative: bool, bases: &'b [PathBuf], cwd: &'b Path) -> Vec<&'b Path> {
    if relative { bases.iter().map(PathBuf::as_path).collect() } else { vec![cwd] }
}

/// Why the directories relative paths resolve against are unknown.
#[derive(Debug, Clone, thiserror::Error)]
enum UnknownDirectory {
    /// `env -C DIR` or `env --chdir`.
    #[error("`env -C` changes the directory")]
    EnvChdir,
    /// `cd`, `pushd` or `popd` to a directory the shell works out.
    #[error("`{0}` goes to a directory only known when the shell runs")]
    ChangedTo(String),
}

/// The directories relative paths may resolve against: the working directory and the
/// literal targets of `cd`/`pushd`; a `cd` to somewhere unknown makes them unknown.
fn directories(cwd: &Path, analysis: &Analysis) -> Result<Vec<PathBuf>, UnknownDirectory> {
    let mut bases = vec![cwd.to_path_buf()];
    if !analysis.changes_directory {
        return Ok(bases);
    }
    for cmd in analysis.all_commands() {
        let name = cmd.program_name().unwrap_or_default();
        if name == "env" {
            let chdir = cmd.args().iter().any(|a| a.text.starts_with("-C") || a.text.starts_with("--chdir"));
            if chdir {
                return Err(UnknownDirectory::EnvChdir);
            }
            continue;
        }
        if !matches!(name, "cd" | "pushd" | "popd") {
            continue;
        }
        let targets: Vec<&Word> = cmd.args().iter().filter(|a| !a.text.starts_with('-')).collect();
        match targets.as_slice() {
            [target] if target.is_literal() && name != "popd" => {
                let dir =
                    if target.text.starts_with('/') { PathBuf::from(&target.text) } else { cwd.join(&target.text) };
                bases.push(dir);
            }
            _ => return Err(UnknownDirectory::ChangedTo(name.to_owned())),
        }
    }
    Ok(bases)
}

/// The arguments of `cmd` that may be paths, with wrappers' inner commands' arguments.
fn operands(cmd: &SimpleCommand) -> Vec<PathArg<'_>> {
    let mut out = Vec::new();
    collect_operands(cmd, &mut out);
    out
}

fn collect_operands<'c>(cmd: &'c SimpleCommand, out: &mut Vec<PathArg<'c>>) {
    for inner in &cmd.runs {
        collect_operands(inner, out);
    }
    out.extend(readonly::wrapper_reads(cmd));
    let name = cmd.program_name().unwrap_or_default();
    if NO_PATH_ARGUMENTS.contains(&name) || !cmd.runs.is_empty() {
        return;
    }
    match readonly::parse(cmd) {
        Some(Ok(paths)) => out.extend(paths),
        Some(Err(_)) | None => every_possible_path(cmd, name, out),
    }
}

/// For a command the read-only list does not describe: every argument that is not an option
/// (after the pattern of `grep`-like programs), and the value of every option that holds
/// one (`--file=x`, `-fx`) — more than the command reads, never less.
fn every_possible_path<'c>(cmd: &'c SimpleCommand, name: &str, out: &mut Vec<PathArg<'c>>) {
    let args = cmd.args();
    let recursive = is_recursive(name, args);
    let mut pattern_given = !matches!(name, "grep" | "egrep" | "fgrep" | "rg");
    let explicit_pattern = args
        .iter()
        .any(|a| matches!(a.text.as_str(), "-e" | "-f" | "--regexp" | "--file") || a.text.starts_with("--regexp="));
    if explicit_pattern {
        pattern_given = true;
    }
    let mut path_operands = 0;
    let mut after_dashdash = false;
    for arg in args {
        if !after_dashdash && arg.text == "--" {
            after_dashdash = true;
            continue;
        }
        if !after_dashdash && arg.text.starts_with('-') && arg.text.len() > 1 {
            if let Some(at) = option_path(&arg.text) {
                out.push(PathArg { word: arg, recursive: false, suffix: Some(at), may_be_option: false });
            }
            continue;
        }
        if !pattern_given {
            pattern_given = true;
            continue;
        }
        path_operands += 1;
        out.push(PathArg { word: arg, recursive, suffix: None, may_be_option: false });
    }
    if path_operands == 0 && (recursive || matches!(name, "ls" | "du" | "tree" | "find" | "rg")) {
        out.push(PathArg { word: &DOT, recursive, suffix: None, may_be_option: false });
    }
}

/// Where a path may start inside an option word: after `=` in `--file=x`, after the letter
/// in `-fx`; `None` for a bare option (`--all`, `-l`).
fn option_path(text: &str) -> Option<usize> {
    if text.starts_with("--") {
        return text.find('=').map(|i| i + 1);
    }
    // `-fVALUE`: the value starts after the option's letter, which may be any character.
    let letter = text[1..].chars().next()?;
    let at = 1 + letter.len_utf8();
    (text.len() > at).then_some(at)
}

/// Whether `name` with `args` walks directories it is given.
fn is_recursive(name: &str, args: &[Word]) -> bool {
    let short = |letters: &[char]| {
        args.iter().any(|a| {
            a.text.starts_with('-') && !a.text.starts_with("--") && a.text.chars().any(|c| letters.contains(&c))
        })
    };
    match name {
        "find" | "rg" | "du" | "tree" => true,
        "grep" | "egrep" | "fgrep" => {
            short(&['r', 'R']) || args.iter().any(|a| a.text.starts_with("--recursive") || a.text.contains("recurse"))
        }
        "ls" => short(&['R']) || args.iter().any(|a| a.text == "--recursive"),
        "tar" | "rsync" => true,
        "cp" | "scp" | "zip" | "chmod" | "chown" => {
            short(&['r', 'R', 'a']) || args.iter().any(|a| a.text == "--recursive")
        }
        _ => false,
    }
}

/// The existing paths a glob matches (as bash would, `**` like `*`), or `None` past
/// [`MAX_GLOB_ENTRIES`] entries read.
fn expand(pattern: &Path) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::from("/")];
    let mut read = 0usize;
    for component in pattern.components().skip(1) {
        let part = component.as_os_str().to_string_lossy();
        let globbed = part.contains(['*', '?', '[']);
        let mut next = Vec::new();
        if !globbed {
            for dir in current {
                next.push(dir.join(&*part));
            }
        } else {
            let matcher = GlobBuilder::new(&part).literal_separator(true).build().ok()?.compile_matcher();
            for dir in current {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                for entry in entries.flatten() {
                    read += 1;
                    if read > MAX_GLOB_ENTRIES {
                        return None;
                    }
                    if matcher.is_match(entry.file_name()) {
                        next.push(dir.join(entry.file_name()));
                    }
                }
            }
        }
        current = next;
    }
    Some(current.into_iter().filter(|p| p.symlink_metadata().is_ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyze;

    #[test]
    fn operands_skip_patterns_and_options() {
        let texts = |line: &str| -> Vec<String> {
            let a = analyze(line);
            operands(&a.commands[0]).iter().map(|o| o.word.text[o.suffix.unwrap_or(0)..].to_owned()).collect()
        };
        assert_eq!(texts("grep -n foo a.txt b.txt"), ["a.txt", "b.txt"]);
        assert_eq!(texts("grep -e foo -e bar a.txt"), ["a.txt"]);
        assert_eq!(texts("grep -rn foo"), [""]);
        // Not read-only (unknown options): every word that could be a path.
        assert_eq!(texts("cat --file=/etc/x -f/etc/y z"), ["/etc/x", "/etc/y", "z"]);
        assert_eq!(texts("grep -R -e foo --exclude-from=.env -f.env a"), ["foo", ".env", ".env", "a"]);
        assert_eq!(texts("base64 --wrap=0 -w0 secret"), ["0", "0", "secret"]);
        assert_eq!(texts("echo /etc/passwd"), Vec::<String>::new());
        assert_eq!(texts("timeout 5 cat /etc/passwd"), ["/etc/passwd"]);
        assert_eq!(texts("date -f /etc/passwd"), ["/etc/passwd"]);
        assert_eq!(texts("cat secret{s,}/key"), ["secrets/key", "secret/key"]);
        assert_eq!(texts("ls"), [""]);
        // An option letter outside ASCII: its value starts after the whole character (the
        // fuzzer found a slice inside one).
        assert_eq!(texts("cat -\u{1df}hx"), ["hx"]);
        assert_eq!(texts("cat -\u{1df} x"), ["x"]);
    }

    #[test]
    fn globs_expand_against_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        std::fs::write(root.join("src/b.rs"), "").unwrap();
        std::fs::write(root.join("src/c.txt"), "").unwrap();
        let mut found = expand(&root.join("src/*.rs")).unwrap();
        found.sort();
        assert_eq!(found, [root.join("src/a.rs"), root.join("src/b.rs")]);
        assert_eq!(expand(&root.join("*/c.txt")).unwrap(), [root.join("src/c.txt")]);
    }
}
