//! A read-only program's command line as an allow-list: the options it may be given, which of
//! them take a value and which values are files, what its operands are — and the parse of a
//! command against it. An option that is not on the list (a later version's, an unknown long
//! option, an abbreviation of a known one) fails the parse: the command is not read-only.

use crate::shell::{Word, WordKind};

use super::{NotReadOnly, PathArg};

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Value {
    /// Text: a count, a pattern, a format, a name.
    Text,
    /// A file the program reads: checked like a path operand.
    Path,
}

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// None: `-l`, `--all`.
    No,
    /// One, attached (`-n5`, `--lines=5`) or the next word (`-n 5`, `--lines 5`).
    Required(Value),
    /// One only when attached (`--color=auto`, `-w16`): the next word is not it.
    Optional,
}

/// Where a program takes options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// Anywhere before `--` (GNU getopt moves them to the front).
    Anywhere,
    /// Before the first operand (POSIX utilities, `printf`, `pwd`).
    First,
    /// Nowhere: every word is an operand (`echo`, `test`).
    Never,
}

/// What a program's operands are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operands {
    /// Files it reads.
    Paths,
    /// A pattern, then files — unless one of these options gave the pattern (`grep -e`).
    PatternThenPaths(&'static [&'static str]),
    /// Text, never files.
    Text,
    /// `test` / `[` / `[[`: the operand of a file test (`-f x`, `a -nt b`) is a file.
    Test,
}

/// When a program with no file operand reads the working directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dot {
    /// Never (it reads stdin, or nothing).
    Never,
    /// Always (`ls`, `du`, `rg`).
    Always,
    /// When it recurses (`grep -r foo`).
    WhenRecursive,
}

/// One program's read-only command line.
pub(super) struct Spec {
    /// Short options without a value, as one string (`"la1"`).
    pub(super) flags: &'static str,
    /// Short options with a value.
    pub(super) valued: &'static [(char, Value)],
    /// Short options whose value can only be attached (`od -w16`).
    pub(super) optional: &'static str,
    /// Long options without a value, without the `--`.
    pub(super) long_flags: &'static [&'static str],
    /// Long options with a value.
    pub(super) long_valued: &'static [(&'static str, Value)],
    /// Long options whose value can only be attached (`--color[=WHEN]`).
    pub(super) long_optional: &'static [&'static str],
    /// Where options may be.
    pub(super) order: Order,
    /// What the operands are.
    pub(super) operands: Operands,
    /// `-5` is a count (`head -5`, `grep -2`, `git log -3`).
    pub(super) numeric: bool,
    /// Options (`-R`, `--recursive`) after which it walks the directories it is given.
    pub(super) recursive_options: &'static [&'static str],
    /// It always walks the directories it is given (`du`, `rg`).
    pub(super) recursive: bool,
    /// When it reads the working directory with no file operand.
    pub(super) dot: Dot,
    /// Every word is harmless to it (`echo`, `true`): a word only known when the shell runs
    /// may be given, even where it could be an option.
    pub(super) loose: bool,
    /// A last check of the operands (`uniq` writes its second one).
    pub(super) check: fn(&[&Word]) -> Result<(), NotReadOnly>,
}

/// A spec with nothing allowed, to build the others from (`Spec { flags: "l", ..BASE }`).
pub(super) const BASE: Spec = Spec {
    flags: "",
    valued: &[],
    optional: "",
    long_flags: &[],
    long_valued: &[],
    long_optional: &[],
    order: Order::Anywhere,
    operands: Operands::Paths,
    numeric: false,
    recursive_options: &[],
    recursive: false,
    dot: Dot::Never,
    loose: false,
    check: |_| Ok(()),
};

/// Operators of `test` whose operand is a file; the binary ones have a file on each side.
const FILE_TESTS: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-u", "-w", "-x", "-G", "-L", "-N", "-O",
    "-S",
];
const FILE_COMPARISONS: &[&str] = &["-nt", "-ot", "-ef"];

impl Spec {
    fn short(&self, c: char) -> Option<Arg> {
        if self.flags.contains(c) {
            Some(Arg::No)
        } else if self.optional.contains(c) {
            Some(Arg::Optional)
        } else {
            self.valued.iter().find(|(v, _)| *v == c).map(|(_, value)| Arg::Required(*value))
        }
    }

    fn long(&self, name: &str) -> Option<Arg> {
        if self.long_flags.contains(&name) {
            Some(Arg::No)
        } else if self.long_optional.contains(&name) {
            Some(Arg::Optional)
        } else {
            self.long_valued.iter().find(|(n, _)| *n == name).map(|(_, value)| Arg::Required(*value))
        }
    }
}

/// Whether the operand at `at` of `test` is a file: after a file test in unary position
/// (`-f x`, not the `-a` of `a -a b`), or on either side of `-nt`, `-ot`, `-ef`.
fn test_file_operand(operands: &[(&Word, bool)], at: usize) -> bool {
    let text = |i: usize| operands[i].0.text.as_str();
    let literal = |i: usize| operands[i].0.is_literal();
    let unary_position = |i: usize| i == 0 || matches!(text(i - 1), "!" | "(" | "-a" | "-o" | "&&" | "||");
    let after_test = at > 0 && literal(at - 1) && {
        let op = text(at - 1);
        (FILE_TESTS.contains(&op) && unary_position(at - 1)) || FILE_COMPARISONS.contains(&op)
    };
    let before_comparison = at + 1 < operands.len() && literal(at + 1) && FILE_COMPARISONS.contains(&text(at + 1));
    after_test || before_comparison
}

/// Whether a word that is not literal could become an option when the shell expands it: a
/// glob whose first character is a glob character (`*` may match a file named `-R`), a
/// variable (`$X`).
pub(super) fn may_be_option(word: &Word) -> bool {
    match word.kind {
        WordKind::Literal => false,
        WordKind::Pattern => word.text.starts_with(['-', '*', '?', '[']),
        WordKind::Dynamic => word.text.starts_with(['-', '$', '`', '"']),
    }
}

/// Parse `args` against `spec`: the paths the command reads (option values and operands),
/// or why it is not on the allow-list.
pub(super) fn parse<'w>(spec: &Spec, args: &'w [Word]) -> Result<Vec<PathArg<'w>>, NotReadOnly> {
    let mut paths = Vec::new();
    let mut operands: Vec<(&Word, bool)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut options = spec.order != Order::Never;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let text = arg.text.as_str();
        let option_like = text.starts_with('-') && text != "-";
        if !options || !option_like {
            operands.push((arg, options));
            if spec.order == Order::First {
                options = false;
            }
            continue;
        }
        if !arg.is_literal() {
            if spec.loose {
                operands.push((arg, options));
                continue;
            }
            return Err(NotReadOnly::OptionUnknown(text.to_owned()));
        }
        if text == "--" {
            options = false;
            continue;
        }
        let mut value_of = |arg_kind: Arg, attached: Option<usize>, name: &str| -> Result<(), NotReadOnly> {
            let Arg::Required(value) = arg_kind else { return Ok(()) };
            let word = match attached {
                Some(_) => arg,
                None => {
                    i += 1;
                    args.get(i - 1).ok_or_else(|| NotReadOnly::OptionValueMissing(name.to_owned()))?
                }
            };
            if !word.is_literal() {
                return Err(NotReadOnly::OptionValueUnknown { option: name.to_owned(), value: word.text.clone() });
            }
            if value == Value::Path {
                paths.push(PathArg { word, suffix: attached, recursive: false, may_be_option: false });
            }
            Ok(())
        };
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, _)) => (name, Some(name.len() + 3)),
                None => (long, None),
            };
            let arg_kind = spec.long(name).ok_or_else(|| NotReadOnly::LongOption(name.to_owned()))?;
            if arg_kind == Arg::No && attached.is_some() {
                return Err(NotReadOnly::TakesNoValue(name.to_owned()));
            }
            value_of(arg_kind, attached, &format!("--{name}"))?;
            seen.push(format!("--{name}"));
            continue;
        }
        let cluster = &text[1..];
        if spec.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (at, c) in cluster.char_indices() {
            let arg_kind = spec.short(c).ok_or(NotReadOnly::ShortOption(c))?;
            seen.push(format!("-{c}"));
            let rest = 1 + at + c.len_utf8();
            match arg_kind {
                Arg::No => {}
                Arg::Optional => break,
                Arg::Required(_) => {
                    value_of(arg_kind, (rest < text.len()).then_some(rest), &format!("-{c}"))?;
                    break;
                }
            }
        }
    }
    let words: Vec<&Word> = operands.iter().map(|(w, _)| *w).collect();
    (spec.check)(&words)?;
    let recursive = spec.recursive || seen.iter().any(|s| spec.recursive_options.contains(&s.as_str()));
    let path = |(word, in_options): (&'w Word, bool)| PathArg {
        word,
        suffix: None,
        recursive,
        may_be_option: in_options && may_be_option(word),
    };
    let before = paths.len();
    let given = |options: &[&str]| seen.iter().any(|s| options.contains(&s.as_str()));
    for (at, &(word, in_options)) in operands.iter().enumerate() {
        let is_path = match spec.operands {
            Operands::Text => false,
            Operands::Paths => word.text != "-",
            Operands::PatternThenPaths(pattern_options) => (at > 0 || given(pattern_options)) && word.text != "-",
            Operands::Test => test_file_operand(&operands, at),
        };
        if is_path {
            paths.push(path((word, in_options)));
            continue;
        }
        let text_ok = spec.loose || spec.operands == Operands::Test || word.is_literal();
        let pattern_slot = matches!(spec.operands, Operands::PatternThenPaths(_));
        if !text_ok && (word.kind == WordKind::Pattern || pattern_slot || (in_options && may_be_option(word))) {
            return Err(NotReadOnly::OperandUnknown(word.text.clone()));
        }
    }
    let no_operand = paths.len() == before;
    if no_operand && (spec.dot == Dot::Always || (spec.dot == Dot::WhenRecursive && recursive)) {
        paths.push(PathArg { word: &super::DOT, suffix: None, recursive, may_be_option: false });
    }
    Ok(paths)
}
