//! The allow-list: each read-only program with the options it may be given (GNU coreutils,
//! grep, findutils, diffutils, util-linux, file, tree and ripgrep as of 2024). Left out on
//! purpose — so they ask — are the options that write (`sort -o`, `tree -o`, `file -C`),
//! run programs (`rg --pre`, `rg --hostname-bin`, `rg -z`, `diff -l`, `sort
//! --compress-program`, `file -z`), read a list of files named in a file (`--files0-from`,
//! `file -f`, `tree --fromfile`), follow symbolic links while walking (`grep -R`, `rg -L`,
//! `find -L`, `ls -L`, `du -L`, `tree -l`, `diff -r`, which follows them by default), set
//! the clock (`date -s`), or that nobody needs here. Values that are files (`grep -f FILE`,
//! `diff --from-file=FILE`, `date -f FILE`, `date -r FILE`) are checked like the operands.

use crate::shell::Word;

use super::NotReadOnly;
use super::options::{BASE, Dot, Operands, Order, Spec, Value};

const T: Value = Value::Text;
const P: Value = Value::Path;

/// The spec of a read-only program other than `find` and `git`, by name.
pub(super) fn spec(name: &str) -> Option<&'static Spec> {
    Some(match name {
        "ls" => &LS,
        "cat" => &CAT,
        "head" => &HEAD,
        "tail" => &TAIL,
        "wc" => &WC,
        "grep" | "egrep" | "fgrep" => &GREP,
        "rg" => &RG,
        "sort" => &SORT,
        "uniq" => &UNIQ,
        "cut" => &CUT,
        "tr" => &TR,
        "diff" => &DIFF,
        "cmp" => &CMP,
        "nl" => &NL,
        "od" => &OD,
        "hexdump" => &HEXDUMP,
        "stat" => &STAT,
        "du" => &DU,
        "df" => &DF,
        "file" => &FILE,
        "tree" => &TREE,
        "basename" => &BASENAME,
        "dirname" => &DIRNAME,
        "realpath" => &REALPATH,
        "readlink" => &READLINK,
        "pwd" => &PWD,
        "echo" | "true" | "false" | "((" => &ANYTHING,
        "printf" => &PRINTF,
        "which" => &WHICH,
        "date" => &DATE,
        "test" | "[" | "[[" => &TEST,
        _ => return None,
    })
}

const LS: Spec = Spec {
    flags: "aAbBcCdDfFgGhiklmnNopqQrRsStuUvxXZ1",
    valued: &[('I', T), ('w', T), ('T', T)],
    long_flags: &[
        "all",
        "almost-all",
        "author",
        "escape",
        "ignore-backups",
        "directory",
        "dired",
        "file-type",
        "full-time",
        "group-directories-first",
        "no-group",
        "human-readable",
        "si",
        "inode",
        "kibibytes",
        "literal",
        "numeric-uid-gid",
        "hide-control-chars",
        "show-control-chars",
        "quote-name",
        "reverse",
        "recursive",
        "size",
        "context",
        "zero",
        "help",
        "version",
    ],
    long_valued: &[
        ("block-size", T),
        ("format", T),
        ("hide", T),
        ("indicator-style", T),
        ("ignore", T),
        ("quoting-style", T),
        ("sort", T),
        ("time", T),
        ("time-style", T),
        ("tabsize", T),
        ("width", T),
    ],
    long_optional: &["color", "classify", "hyperlink"],
    recursive_options: &["-R", "--recursive"],
    dot: Dot::Always,
    ..BASE
};

const CAT: Spec = Spec {
    flags: "AbeEnstTuv",
    long_flags: &[
        "show-all",
        "number-nonblank",
        "show-ends",
        "number",
        "squeeze-blank",
        "show-tabs",
        "show-nonprinting",
        "help",
        "version",
    ],
    ..BASE
};

const HEAD: Spec = Spec {
    flags: "qvz",
    valued: &[('c', T), ('n', T)],
    long_flags: &["quiet", "silent", "verbose", "zero-terminated", "help", "version"],
    long_valued: &[("bytes", T), ("lines", T)],
    numeric: true,
    ..BASE
};

const TAIL: Spec = Spec {
    flags: "qvzfF",
    valued: &[('c', T), ('n', T), ('s', T)],
    long_flags: &["quiet", "silent", "verbose", "zero-terminated", "retry", "help", "version"],
    long_valued: &[("bytes", T), ("lines", T), ("sleep-interval", T), ("max-unchanged-stats", T), ("pid", T)],
    long_optional: &["follow"],
    numeric: true,
    ..BASE
};

const WC: Spec = Spec {
    flags: "cmlLw",
    long_flags: &["bytes", "chars", "lines", "max-line-length", "words", "help", "version"],
    long_valued: &[("total", T)],
    ..BASE
};

const GREP: Spec = Spec {
    flags: "EFGPiywxzsvVbnHhoqaIrLlcTZU",
    valued: &[('e', T), ('f', P), ('m', T), ('A', T), ('B', T), ('C', T)],
    long_flags: &[
        "extended-regexp",
        "fixed-strings",
        "basic-regexp",
        "perl-regexp",
        "ignore-case",
        "no-ignore-case",
        "word-regexp",
        "line-regexp",
        "null-data",
        "no-messages",
        "invert-match",
        "byte-offset",
        "line-number",
        "line-buffered",
        "with-filename",
        "no-filename",
        "only-matching",
        "quiet",
        "silent",
        "text",
        "recursive",
        "files-without-match",
        "files-with-matches",
        "count",
        "initial-tab",
        "null",
        "binary",
        "no-group-separator",
        "help",
        "version",
    ],
    long_valued: &[
        ("regexp", T),
        ("file", P),
        ("max-count", T),
        ("label", T),
        ("binary-files", T),
        ("include", T),
        ("exclude", T),
        ("exclude-from", P),
        ("exclude-dir", T),
        ("before-context", T),
        ("after-context", T),
        ("context", T),
        ("group-separator", T),
    ],
    long_optional: &["color", "colour"],
    operands: Operands::PatternThenPaths(&["-e", "-f", "--regexp", "--file"]),
    numeric: true,
    recursive_options: &["-r", "--recursive"],
    dot: Dot::WhenRecursive,
    ..BASE
};

const RG: Spec = Spec {
    flags: "abcFHhIilNnoPpqSsUuVvwx0.",
    valued: &[
        ('A', T),
        ('B', T),
        ('C', T),
        ('d', T),
        ('E', T),
        ('e', T),
        ('f', P),
        ('g', T),
        ('j', T),
        ('M', T),
        ('m', T),
        ('r', T),
        ('T', T),
        ('t', T),
    ],
    long_flags: &[
        "binary",
        "no-binary",
        "block-buffered",
        "line-buffered",
        "byte-offset",
        "no-byte-offset",
        "case-sensitive",
        "column",
        "no-column",
        "count",
        "count-matches",
        "crlf",
        "no-crlf",
        "debug",
        "trace",
        "no-config",
        "files",
        "files-with-matches",
        "files-without-match",
        "fixed-strings",
        "no-fixed-strings",
        "glob-case-insensitive",
        "heading",
        "no-heading",
        "hidden",
        "no-hidden",
        "ignore-case",
        "invert-match",
        "no-invert-match",
        "json",
        "no-json",
        "line-number",
        "no-line-number",
        "line-regexp",
        "max-columns-preview",
        "mmap",
        "no-mmap",
        "multiline",
        "no-multiline",
        "multiline-dotall",
        "no-ignore",
        "no-ignore-dot",
        "no-ignore-exclude",
        "no-ignore-files",
        "no-ignore-global",
        "no-ignore-parent",
        "no-ignore-vcs",
        "no-messages",
        "no-require-git",
        "no-unicode",
        "null",
        "null-data",
        "one-file-system",
        "only-matching",
        "passthru",
        "pcre2",
        "no-pcre2",
        "pretty",
        "quiet",
        "smart-case",
        "sort-files",
        "stats",
        "no-stats",
        "text",
        "no-text",
        "trim",
        "no-trim",
        "type-list",
        "unrestricted",
        "vimgrep",
        "with-filename",
        "no-filename",
        "word-regexp",
        "no-follow",
        "no-search-zip",
        "no-pre",
        "include-zero",
        "no-include-zero",
        "help",
        "version",
    ],
    long_valued: &[
        ("after-context", T),
        ("before-context", T),
        ("context", T),
        ("context-separator", T),
        ("field-match-separator", T),
        ("field-context-separator", T),
        ("max-count", T),
        ("max-depth", T),
        ("max-filesize", T),
        ("max-columns", T),
        ("threads", T),
        ("glob", T),
        ("iglob", T),
        ("type", T),
        ("type-not", T),
        ("type-add", T),
        ("type-clear", T),
        ("regexp", T),
        ("file", P),
        ("replace", T),
        ("sort", T),
        ("sortr", T),
        ("encoding", T),
        ("engine", T),
        ("color", T),
        ("colors", T),
        ("path-separator", T),
        ("dfa-size-limit", T),
        ("regex-size-limit", T),
        ("ignore-file", P),
    ],
    operands: Operands::PatternThenPaths(&["-e", "-f", "--regexp", "--file", "--files", "--type-list"]),
    recursive: true,
    dot: Dot::Always,
    ..BASE
};

const SORT: Spec = Spec {
    flags: "bdfgiMhnRrVcCmsuz",
    valued: &[('k', T), ('t', T), ('S', T)],
    long_flags: &[
        "ignore-leading-blanks",
        "dictionary-order",
        "ignore-case",
        "general-numeric-sort",
        "ignore-nonprinting",
        "month-sort",
        "human-numeric-sort",
        "numeric-sort",
        "random-sort",
        "reverse",
        "version-sort",
        "merge",
        "stable",
        "unique",
        "zero-terminated",
        "debug",
        "help",
        "version",
    ],
    long_valued: &[
        ("sort", T),
        ("key", T),
        ("field-separator", T),
        ("buffer-size", T),
        ("parallel", T),
        ("batch-size", T),
    ],
    long_optional: &["check"],
    ..BASE
};

const UNIQ: Spec = Spec {
    flags: "cdDiuz",
    valued: &[('f', T), ('s', T), ('w', T)],
    long_flags: &["count", "repeated", "ignore-case", "unique", "zero-terminated", "help", "version"],
    long_valued: &[("skip-fields", T), ("skip-chars", T), ("check-chars", T)],
    long_optional: &["all-repeated", "group"],
    check: one_known_input,
    ..BASE
};

/// `uniq` writes its second operand: one literal operand at most (a glob could be two).
fn one_known_input(operands: &[&Word]) -> Result<(), NotReadOnly> {
    match operands {
        [] => Ok(()),
        [input] if input.is_literal() => Ok(()),
        _ => Err(NotReadOnly::UniqOutput),
    }
}

const CUT: Spec = Spec {
    flags: "nsz",
    valued: &[('b', T), ('c', T), ('d', T), ('f', T)],
    long_flags: &["complement", "only-delimited", "zero-terminated", "help", "version"],
    long_valued: &[("bytes", T), ("characters", T), ("delimiter", T), ("fields", T), ("output-delimiter", T)],
    ..BASE
};

const TR: Spec = Spec {
    flags: "cCdst",
    long_flags: &["complement", "delete", "squeeze-repeats", "truncate-set1", "help", "version"],
    operands: Operands::Text,
    ..BASE
};

const DIFF: Spec = Spec {
    flags: "qscuenytTpNiEZbwBad",
    valued: &[('C', T), ('U', T), ('W', T), ('F', T), ('I', T), ('x', T), ('X', P), ('S', T), ('D', T)],
    long_flags: &[
        "normal",
        "brief",
        "report-identical-files",
        "ed",
        "rcs",
        "side-by-side",
        "left-column",
        "suppress-common-lines",
        "show-c-function",
        "expand-tabs",
        "initial-tab",
        "suppress-blank-empty",
        "new-file",
        "unidirectional-new-file",
        "ignore-file-name-case",
        "no-ignore-file-name-case",
        "ignore-case",
        "ignore-tab-expansion",
        "ignore-trailing-space",
        "ignore-space-change",
        "ignore-all-space",
        "ignore-blank-lines",
        "text",
        "strip-trailing-cr",
        "minimal",
        "speed-large-files",
        "no-dereference",
        "help",
        "version",
    ],
    long_valued: &[
        ("width", T),
        ("show-function-line", T),
        ("label", T),
        ("tabsize", T),
        ("exclude", T),
        ("exclude-from", P),
        ("starting-file", T),
        ("ignore-matching-lines", T),
        ("ifdef", T),
        ("line-format", T),
        ("old-line-format", T),
        ("new-line-format", T),
        ("unchanged-line-format", T),
        ("old-group-format", T),
        ("new-group-format", T),
        ("changed-group-format", T),
        ("unchanged-group-format", T),
        ("horizon-lines", T),
        ("palette", T),
        ("from-file", P),
        ("to-file", P),
    ],
    long_optional: &["context", "unified", "color"],
    ..BASE
};

const CMP: Spec = Spec {
    flags: "bls",
    valued: &[('i', T), ('n', T)],
    long_flags: &["print-bytes", "verbose", "quiet", "silent", "help", "version"],
    long_valued: &[("ignore-initial", T), ("bytes", T)],
    ..BASE
};

const NL: Spec = Spec {
    flags: "p",
    valued: &[('b', T), ('d', T), ('f', T), ('h', T), ('i', T), ('l', T), ('n', T), ('s', T), ('v', T), ('w', T)],
    long_flags: &["no-renumber", "help", "version"],
    long_valued: &[
        ("body-numbering", T),
        ("section-delimiter", T),
        ("footer-numbering", T),
        ("header-numbering", T),
        ("line-increment", T),
        ("join-blank-lines", T),
        ("number-format", T),
        ("number-separator", T),
        ("starting-line-number", T),
        ("number-width", T),
    ],
    ..BASE
};

const OD: Spec = Spec {
    flags: "abcdfiloxsv",
    valued: &[('A', T), ('j', T), ('N', T), ('S', T), ('t', T)],
    optional: "w",
    long_flags: &["output-duplicates", "traditional", "help", "version"],
    long_valued: &[("address-radix", T), ("endian", T), ("skip-bytes", T), ("read-bytes", T), ("format", T)],
    long_optional: &["strings", "width"],
    ..BASE
};

const HEXDUMP: Spec = Spec {
    flags: "bcCdoxvhV",
    valued: &[('e', T), ('f', P), ('n', T), ('s', T)],
    optional: "L",
    long_flags: &[
        "one-byte-octal",
        "one-byte-char",
        "canonical",
        "two-bytes-decimal",
        "two-bytes-octal",
        "two-bytes-hex",
        "no-squeezing",
        "help",
        "version",
    ],
    long_valued: &[("format", T), ("format-file", P), ("length", T), ("skip", T)],
    long_optional: &["color"],
    ..BASE
};

const STAT: Spec = Spec {
    flags: "Lft",
    valued: &[('c', T)],
    long_flags: &["dereference", "file-system", "terse", "help", "version"],
    long_valued: &[("format", T), ("printf", T), ("cached", T)],
    ..BASE
};

const DU: Spec = Spec {
    flags: "0abchkmsxSPl",
    valued: &[('d', T), ('B', T), ('t', T), ('X', P)],
    long_flags: &[
        "null",
        "all",
        "apparent-size",
        "bytes",
        "total",
        "human-readable",
        "si",
        "summarize",
        "one-file-system",
        "separate-dirs",
        "count-links",
        "no-dereference",
        "inodes",
        "help",
        "version",
    ],
    long_valued: &[
        ("max-depth", T),
        ("block-size", T),
        ("threshold", T),
        ("exclude", T),
        ("exclude-from", P),
        ("time-style", T),
    ],
    long_optional: &["time"],
    recursive: true,
    dot: Dot::Always,
    ..BASE
};

const DF: Spec = Spec {
    flags: "ahHiklPTv",
    valued: &[('B', T), ('t', T), ('x', T)],
    long_flags: &[
        "all",
        "human-readable",
        "si",
        "inodes",
        "local",
        "no-sync",
        "sync",
        "portability",
        "print-type",
        "total",
        "help",
        "version",
    ],
    long_valued: &[("block-size", T), ("type", T), ("exclude-type", T)],
    long_optional: &["output"],
    ..BASE
};

const FILE: Spec = Spec {
    flags: "bcdEikLhNn0rsv",
    valued: &[('F', T), ('e', T), ('P', T)],
    long_flags: &[
        "brief",
        "checking-printout",
        "debug",
        "mime",
        "mime-type",
        "mime-encoding",
        "apple",
        "extension",
        "keep-going",
        "dereference",
        "no-dereference",
        "no-pad",
        "no-buffer",
        "print0",
        "raw",
        "special-files",
        "help",
        "version",
    ],
    long_valued: &[("separator", T), ("exclude", T), ("exclude-quiet", T), ("parameter", T)],
    ..BASE
};

const TREE: Spec = Spec {
    flags: "adfiqNQpugshDFvtcUrCAnSJXx",
    valued: &[('L', T), ('P', T), ('I', T), ('H', T), ('T', T)],
    long_flags: &[
        "noreport",
        "dirsfirst",
        "prune",
        "du",
        "si",
        "inodes",
        "device",
        "matchdirs",
        "ignore-case",
        "gitignore",
        "help",
        "version",
    ],
    long_valued: &[("charset", T), ("filelimit", T), ("timefmt", T), ("sort", T)],
    recursive: true,
    dot: Dot::Always,
    ..BASE
};

const BASENAME: Spec = Spec {
    flags: "az",
    valued: &[('s', T)],
    long_flags: &["multiple", "zero", "help", "version"],
    long_valued: &[("suffix", T)],
    operands: Operands::Text,
    ..BASE
};

const DIRNAME: Spec = Spec { flags: "z", long_flags: &["zero", "help", "version"], operands: Operands::Text, ..BASE };

const REALPATH: Spec = Spec {
    flags: "emLPqsz",
    long_flags: &[
        "canonicalize-existing",
        "canonicalize-missing",
        "logical",
        "physical",
        "quiet",
        "strip",
        "no-symlinks",
        "zero",
        "help",
        "version",
    ],
    long_valued: &[("relative-to", P), ("relative-base", P)],
    ..BASE
};

const READLINK: Spec = Spec {
    flags: "femnqsvz",
    long_flags: &[
        "canonicalize",
        "canonicalize-existing",
        "canonicalize-missing",
        "no-newline",
        "quiet",
        "silent",
        "verbose",
        "zero",
        "help",
        "version",
    ],
    ..BASE
};

const PWD: Spec = Spec { flags: "LP", order: Order::First, operands: Operands::Text, ..BASE };

/// `echo`, `true`, `false`, `(( … ))`: whatever the words, nothing is read or written.
const ANYTHING: Spec = Spec { order: Order::Never, operands: Operands::Text, loose: true, ..BASE };

/// `printf FORMAT ARGS…`: no option at all (`-v VAR` assigns).
const PRINTF: Spec = Spec { order: Order::First, operands: Operands::Text, ..BASE };

const WHICH: Spec = Spec { flags: "as", operands: Operands::Text, ..BASE };

const DATE: Spec = Spec {
    flags: "uR",
    valued: &[('d', T), ('f', P), ('r', P)],
    optional: "I",
    long_flags: &["utc", "universal", "rfc-email", "debug", "resolution", "help", "version"],
    long_valued: &[("date", T), ("file", P), ("reference", P), ("rfc-3339", T)],
    long_optional: &["iso-8601"],
    operands: Operands::Text,
    check: only_format,
    ..BASE
};

/// `date`'s one operand is a `+FORMAT`; any other sets the clock.
fn only_format(operands: &[&Word]) -> Result<(), NotReadOnly> {
    match operands {
        [] => Ok(()),
        [format] if format.is_literal() && format.text.starts_with('+') => Ok(()),
        _ => Err(NotReadOnly::DateSetsClock),
    }
}

/// `test`, `[ … ]`, `[[ … ]]`: no options; the operands of file tests are files.
const TEST: Spec = Spec { order: Order::Never, operands: Operands::Test, ..BASE };
