//! `find`: starting points, then an expression of known tests and actions that only print.
//! Left out, so they ask: the actions that run programs (`-exec`, `-execdir`, `-ok`,
//! `-okdir`), delete (`-delete`) or write files (`-fprint`, `-fprint0`, `-fprintf`, `-fls`),
//! following symbolic links (`-L`, `-H`, `-follow`, `-xtype`), reading starting points from a
//! file (`-files0-from`), and any primary this list does not know.

use crate::shell::Word;

use super::options::may_be_option;
use super::{DOT, NotReadOnly, PathArg};

/// Primaries without an argument.
const NO_ARGUMENT: &[&str] = &[
    "(",
    ")",
    "!",
    ",",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-daystart",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nogroup",
    "-nouser",
    "-true",
    "-false",
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-help",
    "--help",
    "-version",
    "--version",
];

/// Primaries whose argument is text.
const TEXT_ARGUMENT: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-size",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-used",
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-printf",
    "-fstype",
    "-context",
];

/// Primaries whose argument is a file, whose times or identity are read.
const PATH_ARGUMENT: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];

/// Whether a word starts the expression (so it is not a starting point).
fn starts_expression(word: &Word) -> bool {
    word.is_literal() && (word.text.starts_with('-') || matches!(word.text.as_str(), "(" | "!" | ")" | ","))
}

/// The paths `find ARGS` reads, or why it is not read-only.
pub(super) fn parse(args: &[Word]) -> Result<Vec<PathArg<'_>>, NotReadOnly> {
    let mut i = 0;
    while let Some(word) = args.get(i).filter(|w| w.is_literal()) {
        match word.text.as_str() {
            "-P" => i += 1,
            "-D" => i += 2,
            opt if opt.starts_with("-O") && opt.len() > 2 => i += 1,
            _ => break,
        }
    }
    let mut paths = Vec::new();
    while let Some(word) = args.get(i).filter(|w| !starts_expression(w)) {
        paths.push(PathArg { word, suffix: None, recursive: true, may_be_option: may_be_option(word) });
        i += 1;
    }
    if paths.is_empty() {
        paths.push(PathArg { word: &DOT, suffix: None, recursive: true, may_be_option: false });
    }
    while let Some(word) = args.get(i) {
        i += 1;
        let text = word.text.as_str();
        if !word.is_literal() {
            return Err(NotReadOnly::FindPrimaryUnknown(text.to_owned()));
        }
        if NO_ARGUMENT.contains(&text) {
            continue;
        }
        let newer = text.strip_prefix("-newer").filter(|xy| xy.len() == 2 && xy.chars().all(|c| "aBcmt".contains(c)));
        let path = PATH_ARGUMENT.contains(&text) || newer.is_some_and(|xy| !xy.ends_with('t'));
        if !(path || newer.is_some() || TEXT_ARGUMENT.contains(&text)) {
            return Err(NotReadOnly::FindPrimary(text.to_owned()));
        }
        let value = args.get(i).filter(|v| v.is_literal()).ok_or_else(|| NotReadOnly::FindValue(text.to_owned()))?;
        i += 1;
        if path {
            paths.push(PathArg { word: value, suffix: None, recursive: false, may_be_option: false });
        }
    }
    Ok(paths)
}
