//! `git` read-only: `--no-pager` at most before one of [`GIT_READ_ONLY`], and that
//! subcommand's known options. Left out, so they ask: `-c`, `-C`, `--git-dir` and every other
//! global option, `--output` (writes), `--ext-diff` and `--textconv` (run programs),
//! `--no-index` (compares files anywhere), `blame --contents` and `-S` (read other files),
//! `--show-signature` (runs gpg). Operands (revisions, paths) are checked as paths: a
//! revision such as `HEAD~1` names nothing outside the working directory.

use crate::shell::Word;

use super::options::{BASE, Operands, Spec, Value, parse as parse_options};
use super::{NotReadOnly, PathArg};

const T: Value = Value::Text;
const P: Value = Value::Path;

/// Git subcommands that can be read-only.
pub(crate) const GIT_READ_ONLY: &[&str] =
    &["status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "branch"];

/// The paths `git ARGS` reads, or why it is not read-only.
pub(super) fn parse(args: &[Word]) -> Result<Vec<PathArg<'_>>, NotReadOnly> {
    let at = args.iter().position(|a| !(a.is_literal() && a.text == "--no-pager")).ok_or(NotReadOnly::GitAlone)?;
    let (sub, rest) = (&args[at], &args[at + 1..]);
    if !sub.is_literal() {
        return Err(NotReadOnly::GitSubcommandUnknown(sub.text.clone()));
    }
    let spec = match sub.text.as_str() {
        "status" => &STATUS,
        "log" | "show" => &LOG,
        "diff" => &DIFF,
        "rev-parse" => &REV_PARSE,
        "ls-files" => &LS_FILES,
        "blame" => &BLAME,
        "branch" => {
            return if branch_lists(rest) { Ok(Vec::new()) } else { Err(NotReadOnly::GitBranchChanges) };
        }
        other => return Err(NotReadOnly::GitSubcommand(other.to_owned())),
    };
    parse_options(spec, rest)
}

/// Short options of the diff machinery (`git diff`, `log -p`, `show`).
const DIFF_FLAGS: &str = "pusRzabwWD";
/// Its short options whose value can only be attached (`-M50%`, `-U5`).
const DIFF_OPTIONAL: &str = "BMCUX";
/// Its long options without a value.
const DIFF_LONG: &[&str] = &[
    "patch",
    "no-patch",
    "raw",
    "patch-with-raw",
    "patch-with-stat",
    "numstat",
    "shortstat",
    "summary",
    "name-only",
    "name-status",
    "no-color",
    "no-color-moved",
    "no-renames",
    "rename-empty",
    "no-rename-empty",
    "check",
    "full-index",
    "binary",
    "ignore-space-at-eol",
    "ignore-space-change",
    "ignore-all-space",
    "ignore-blank-lines",
    "ignore-cr-at-eol",
    "minimal",
    "patience",
    "histogram",
    "exit-code",
    "quiet",
    "no-ext-diff",
    "no-textconv",
    "text",
    "no-prefix",
    "default-prefix",
    "function-context",
    "ita-invisible-in-index",
    "ita-visible-in-index",
    "irreversible-delete",
    "cumulative",
    "compact-summary",
    "indent-heuristic",
    "no-indent-heuristic",
    "find-copies-harder",
    "cached",
    "staged",
    "merge-base",
    "no-relative",
];
/// Its long options with a value.
const DIFF_VALUED: &[(&str, Value)] = &[
    ("diff-algorithm", T),
    ("diff-filter", T),
    ("src-prefix", T),
    ("dst-prefix", T),
    ("line-prefix", T),
    ("inter-hunk-context", T),
    ("ignore-matching-lines", T),
    ("anchored", T),
    ("word-diff-regex", T),
    ("stat-width", T),
    ("stat-name-width", T),
    ("stat-count", T),
    ("color-moved-ws", T),
    ("ws-error-highlight", T),
    ("skip-to", T),
    ("rotate-to", T),
];
/// Its long options whose value can only be attached.
const DIFF_OPTIONAL_LONG: &[&str] = &[
    "stat",
    "dirstat",
    "unified",
    "color",
    "color-moved",
    "word-diff",
    "color-words",
    "relative",
    "submodule",
    "ignore-submodules",
    "abbrev",
    "find-renames",
    "find-copies",
    "break-rewrites",
];

const DIFF: Spec = Spec {
    flags: DIFF_FLAGS,
    valued: &[('S', T), ('G', T), ('I', T), ('O', P), ('l', T)],
    optional: DIFF_OPTIONAL,
    long_flags: DIFF_LONG,
    long_valued: DIFF_VALUED,
    long_optional: DIFF_OPTIONAL_LONG,
    ..BASE
};

/// `git log` and `git show`: the revision walk's options and the diff machinery's.
const LOG: Spec = Spec {
    flags: "pusRzabwWDgiEFPmct",
    valued: &[('S', T), ('G', T), ('I', T), ('O', P), ('l', T), ('n', T), ('L', T)],
    optional: DIFF_OPTIONAL,
    long_flags: &[
        "patch",
        "no-patch",
        "raw",
        "patch-with-raw",
        "patch-with-stat",
        "numstat",
        "shortstat",
        "summary",
        "name-only",
        "name-status",
        "no-color",
        "no-renames",
        "full-index",
        "binary",
        "ignore-space-at-eol",
        "ignore-space-change",
        "ignore-all-space",
        "ignore-blank-lines",
        "minimal",
        "patience",
        "histogram",
        "no-ext-diff",
        "no-textconv",
        "text",
        "no-prefix",
        "function-context",
        "compact-summary",
        "find-copies-harder",
        "oneline",
        "graph",
        "all",
        "reverse",
        "first-parent",
        "merges",
        "no-merges",
        "abbrev-commit",
        "no-abbrev-commit",
        "no-decorate",
        "relative-date",
        "follow",
        "left-right",
        "cherry-pick",
        "cherry-mark",
        "cherry",
        "boundary",
        "ancestry-path",
        "simplify-by-decoration",
        "full-history",
        "dense",
        "sparse",
        "simplify-merges",
        "topo-order",
        "date-order",
        "author-date-order",
        "regexp-ignore-case",
        "extended-regexp",
        "fixed-strings",
        "perl-regexp",
        "basic-regexp",
        "all-match",
        "invert-grep",
        "pickaxe-regex",
        "pickaxe-all",
        "full-diff",
        "cc",
        "combined-all-paths",
        "use-mailmap",
        "mailmap",
        "no-mailmap",
        "log-size",
        "parents",
        "children",
        "source",
        "walk-reflogs",
        "left-only",
        "right-only",
        "clear-decorations",
        "no-notes",
        "no-expand-tabs",
        "show-pulls",
        "remove-empty",
        "single-worktree",
        "do-walk",
    ],
    long_valued: &[
        ("max-count", T),
        ("skip", T),
        ("since", T),
        ("after", T),
        ("until", T),
        ("before", T),
        ("author", T),
        ("committer", T),
        ("grep", T),
        ("grep-reflog", T),
        ("format", T),
        ("date", T),
        ("min-parents", T),
        ("max-parents", T),
        ("exclude", T),
        ("decorate-refs", T),
        ("decorate-refs-exclude", T),
        ("encoding", T),
        ("diff-algorithm", T),
        ("diff-filter", T),
        ("src-prefix", T),
        ("dst-prefix", T),
        ("inter-hunk-context", T),
        ("word-diff-regex", T),
        ("stat-width", T),
        ("stat-count", T),
    ],
    long_optional: &[
        "pretty",
        "decorate",
        "branches",
        "tags",
        "remotes",
        "no-walk",
        "expand-tabs",
        "show-linear-break",
        "stat",
        "dirstat",
        "unified",
        "color",
        "word-diff",
        "color-words",
        "relative",
        "submodule",
        "abbrev",
        "find-renames",
        "find-copies",
        "break-rewrites",
    ],
    numeric: true,
    ..BASE
};

const STATUS: Spec = Spec {
    flags: "sbvz",
    optional: "u",
    long_flags: &[
        "short",
        "branch",
        "long",
        "verbose",
        "show-stash",
        "ahead-behind",
        "no-ahead-behind",
        "renames",
        "no-renames",
        "no-column",
        "null",
    ],
    long_optional: &["porcelain", "untracked-files", "ignored", "ignore-submodules", "column", "find-renames"],
    ..BASE
};

const REV_PARSE: Spec = Spec {
    flags: "q",
    long_flags: &[
        "verify",
        "quiet",
        "show-toplevel",
        "show-prefix",
        "show-cdup",
        "git-dir",
        "absolute-git-dir",
        "git-common-dir",
        "is-inside-work-tree",
        "is-inside-git-dir",
        "is-bare-repository",
        "is-shallow-repository",
        "symbolic",
        "symbolic-full-name",
        "all",
        "revs-only",
        "no-revs",
        "flags",
        "no-flags",
        "sq",
        "local-env-vars",
        "show-superproject-working-tree",
        "show-ref-format",
    ],
    long_valued: &[("since", T), ("after", T), ("until", T), ("before", T)],
    long_optional: &["short", "abbrev-ref", "branches", "tags", "remotes", "show-object-format"],
    ..BASE
};

const LS_FILES: Spec = Spec {
    flags: "cdmoiskuzftv",
    valued: &[('x', T), ('X', P)],
    long_flags: &[
        "cached",
        "deleted",
        "modified",
        "others",
        "ignored",
        "stage",
        "killed",
        "directory",
        "no-empty-directory",
        "unmerged",
        "resolve-undo",
        "eol",
        "full-name",
        "recurse-submodules",
        "error-unmatch",
        "exclude-standard",
        "deduplicate",
        "sparse",
        "debug",
    ],
    long_valued: &[("exclude", T), ("exclude-from", P), ("exclude-per-directory", T), ("format", T), ("with-tree", T)],
    long_optional: &["abbrev"],
    ..BASE
};

const BLAME: Spec = Spec {
    flags: "bltpscfnew",
    valued: &[('L', T)],
    optional: "MC",
    long_flags: &[
        "root",
        "show-stats",
        "reverse",
        "first-parent",
        "porcelain",
        "line-porcelain",
        "incremental",
        "progress",
        "no-progress",
        "show-name",
        "show-number",
        "show-email",
        "color-lines",
        "color-by-age",
        "minimal",
    ],
    long_valued: &[("date", T), ("encoding", T), ("ignore-rev", T), ("ignore-revs-file", P)],
    long_optional: &["abbrev"],
    operands: Operands::Paths,
    ..BASE
};

/// `git branch` only lists: known listing flags, and operands only in list mode.
fn branch_lists(args: &[Word]) -> bool {
    const LIST_MODE: &[&str] = &[
        "-l",
        "--list",
        "-v",
        "-vv",
        "--verbose",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
    ];
    const FLAGS: &[&str] =
        &["-a", "--all", "-r", "--remotes", "--show-current", "--color", "--no-color", "-i", "--ignore-case"];
    if !args.iter().all(Word::is_literal) {
        return false;
    }
    let list_mode = args.iter().any(|a| LIST_MODE.contains(&a.text.as_str()));
    args.iter().all(|a| {
        let a = a.text.as_str();
        LIST_MODE.contains(&a)
            || FLAGS.contains(&a)
            || a.starts_with("--sort=")
            || a.starts_with("--format=")
            || (list_mode && !a.starts_with('-'))
    })
}
