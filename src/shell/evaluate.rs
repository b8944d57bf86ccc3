//! Text bash evaluates: arithmetic (`(( ))`, `$(( ))`, `$[ ]`, array subscripts,
//! `${x:offset:length}`, the operands of `[[ … -eq … ]]`, `let`, `declare -i`) and variable
//! names (`[[ -v … ]]`, `test -v`, `printf -v`, `read`, `unset`, `declare`). An array
//! subscript in such text is evaluated in turn and a `$(…)` in it runs — even when the text
//! was single-quoted: `[[ -v 'a[$(rm x)]' ]]` runs `rm x`, and so does `(( x ))` when `x`
//! holds `a[$(rm x)]`. Hence:
//!
//! - evaluated text that holds a `[`, a quoted `$` or backquote inside arithmetic (quotes do
//!   not protect there), a substitution's output, a special or positional parameter, or a
//!   name only known at run time is [`Hazard::Evaluated`], which hides what runs: every
//!   deny rule matches;
//! - evaluated text that names variables is [`Hazard::Arithmetic`]; when some variable of the
//!   line also gets its value from data ([`Analysis::variables_from_data`]) the line is
//!   [`Hazard::Evaluated`] as well (see [`super::analyze`]).
//!
//! [`Analysis::variables_from_data`]: super::Analysis::variables_from_data

use tree_sitter::Node;

use super::walk::{Walker, children};
use super::{Hazard, SimpleCommand, Word, WordKind};

/// Special parameters whose value is a number: harmless in arithmetic.
const NUMERIC_SPECIAL: &[&str] = &["#", "?", "$", "!"];

/// Variables the shell sets from data the line controls: the positional parameters, the
/// last argument (`_`), what `read`, `mapfile`, `getopts`, `select` and `=~` set, the
/// directories `cd` goes to.
const DATA_VARIABLES: &[&str] = &[
    "@",
    "*",
    "_",
    "0",
    "REPLY",
    "MAPFILE",
    "OPTARG",
    "BASH_REMATCH",
    "BASH_ARGV",
    "BASH_COMMAND",
    "BASH_EXECUTION_STRING",
    "PWD",
    "OLDPWD",
];

/// Builtins declaring variables, whose operands are names (`declare -i x=…`).
const DECLARATIONS: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

impl Walker<'_> {
    /// Record that a variable of the line gets its value from data (`what`, for messages).
    pub(super) fn data_in_variable(&mut self, what: impl FnOnce() -> String) {
        if self.out.variables_from_data.is_none() {
            self.out.variables_from_data = Some(what());
        }
    }

    fn evaluated_hazard(&mut self, what: String) {
        self.hazard(Hazard::Evaluated(what));
    }

    /// The named children of an arithmetic node (`((…))`, `$((…))`), as arithmetic.
    pub(super) fn arithmetic(&mut self, node: Node) {
        for (_, child) in children(node) {
            if child.is_named() {
                self.arithmetic_node(child);
            }
        }
    }

    /// One node of an arithmetic expression.
    pub(super) fn arithmetic_node(&mut self, node: Node) {
        let text = self.text(node).to_owned();
        match node.kind() {
            "number" if node.named_child_count() == 0 => {}
            "variable_name" | "word" => {
                if text.contains(['[', '$', '`', '\\', '\'', '"']) || DATA_VARIABLES.contains(&text.as_str()) {
                    self.evaluated_hazard(format!("`{text}` as arithmetic"));
                } else if !is_integer(&text) {
                    self.hazard(Hazard::Arithmetic);
                }
            }
            "simple_expansion" => {
                let name = node.named_child(0).map(|n| self.text(n)).unwrap_or_default();
                if NUMERIC_SPECIAL.contains(&name) {
                } else if is_data_variable(name) {
                    self.evaluated_hazard(format!("`{text}` as arithmetic"));
                } else {
                    self.hazard(Hazard::Arithmetic);
                }
            }
            "expansion" => {
                self.expansion(node);
                let length =
                    children(node).get(1).is_some_and(|(field, c)| *field == Some("operator") && c.kind() == "#");
                let name = children(node)
                    .into_iter()
                    .find(|(_, c)| matches!(c.kind(), "variable_name" | "special_variable_name" | "subscript"))
                    .map(|(_, c)| self.text(c).split('[').next().unwrap_or_default().to_owned())
                    .unwrap_or_default();
                if length {
                } else if is_data_variable(&name) {
                    self.evaluated_hazard(format!("`{text}` as arithmetic"));
                } else {
                    self.hazard(Hazard::Arithmetic);
                }
            }
            "subscript" => {
                self.evaluated_hazard(format!("the array subscript `{text}`"));
                self.arithmetic(node);
            }
            "command_substitution" | "process_substitution" => {
                self.word(node);
                self.evaluated_hazard(format!("the output of `{text}` as arithmetic"));
            }
            "raw_string" | "ansi_c_string" => {
                if text.contains(['$', '`', '[']) {
                    self.evaluated_hazard(format!("`{text}` as arithmetic (quotes do not protect there)"));
                }
            }
            "string_content" => {
                if text.contains('[') {
                    self.evaluated_hazard(format!("`{text}` as arithmetic"));
                }
            }
            _ => self.arithmetic(node),
        }
    }

    /// A word whose value bash evaluates as arithmetic (`names`: a name in it is a variable,
    /// as in `let x` or `[[ x -eq 1 ]]`).
    pub(super) fn evaluated(&mut self, word: &Word, names: bool) {
        let text = &word.text;
        if text.contains('[') {
            return self.evaluated_hazard(format!("`{text}` as arithmetic"));
        }
        match word.kind {
            WordKind::Literal if names && !is_integer(text) => self.hazard(Hazard::Arithmetic),
            WordKind::Literal => {}
            WordKind::Pattern | WordKind::Dynamic => {
                if text.contains("$(") || text.contains(['`', '<', '>']) || mentions_data_variable(text) {
                    self.evaluated_hazard(format!("`{text}` as arithmetic"));
                } else {
                    self.hazard(Hazard::Arithmetic);
                }
            }
        }
    }

    /// A word bash takes as a variable name, where a subscript is evaluated: it must be a
    /// literal name without one.
    pub(super) fn evaluated_name(&mut self, word: &Word) {
        if word.text.contains('[') || !word.is_literal() {
            let text = word.text.clone();
            self.evaluated_hazard(format!("`{text}` as a variable name"));
        }
    }

    /// The operands of a builtin that evaluates some of them (`let`, `test -v`, `printf -v`,
    /// `read`, `mapfile`, `unset`, `getopts`, `wait -p`, `declare` and its kin), and the
    /// variables it fills with data.
    pub(super) fn evaluating_builtin(&mut self, cmd: &SimpleCommand) {
        let Some(name) = cmd.program_name() else { return };
        let args = cmd.args();
        match name {
            "let" => args.iter().for_each(|a| self.evaluated(a, true)),
            "test" | "[" => {
                for pair in args.windows(2) {
                    if pair[0].is_literal() && matches!(pair[0].text.as_str(), "-v" | "-R") {
                        self.evaluated_name(&pair[1]);
                    }
                }
            }
            "printf" => {
                if let Some(first) = args.first().filter(|a| a.text.starts_with("-v")) {
                    self.data_in_variable(|| "`printf -v`".into());
                    match first.text.strip_prefix("-v").filter(|n| !n.is_empty()) {
                        Some(attached) => self.evaluated_name(&Word { text: attached.into(), kind: first.kind }),
                        None => args.get(1).into_iter().for_each(|n| self.evaluated_name(n)),
                    }
                }
            }
            "read" => self.name_operands(name, args, "adinNptu", Some('a')),
            "mapfile" | "readarray" => self.name_operands(name, args, "dnOsuCc", None),
            "getopts" => {
                self.data_in_variable(|| "`getopts`".into());
                args.get(1).into_iter().for_each(|n| self.evaluated_name(n));
            }
            "unset" => args.iter().filter(|a| !a.text.starts_with('-')).for_each(|a| self.evaluated_name(a)),
            "wait" => {
                for pair in args.windows(2) {
                    if pair[0].text == "-p" {
                        self.evaluated_name(&pair[1]);
                    }
                }
            }
            _ if DECLARATIONS.contains(&name) => self.declaration_operands(args),
            _ => {}
        }
    }

    /// `read`/`mapfile` operands: options (of which those in `valued` take a value, and
    /// `name_option`'s value is a name), then variable names. What they read is data.
    fn name_operands(&mut self, program: &str, args: &[Word], valued: &str, name_option: Option<char>) {
        self.data_in_variable(|| format!("`{program}`, which reads its input"));
        let mut i = 0;
        let mut options = true;
        while let Some(arg) = args.get(i) {
            i += 1;
            if options && arg.is_literal() && arg.text == "--" {
                options = false;
                continue;
            }
            let cluster = arg.text.strip_prefix('-').filter(|c| options && arg.is_literal() && !c.is_empty());
            let Some(cluster) = cluster else {
                options = false;
                self.evaluated_name(arg);
                continue;
            };
            for (at, c) in cluster.char_indices() {
                if !valued.contains(c) {
                    continue;
                }
                let attached = &cluster[at + c.len_utf8()..];
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(Word { text: attached.into(), kind: arg.kind })
                };
                if Some(c) == name_option {
                    value.into_iter().for_each(|v| self.evaluated_name(&v));
                }
                break;
            }
        }
    }

    /// `declare`/`local`/`export`/… operands: a name holding a subscript (or only known at run
    /// time) is evaluated; with `-i` values are arithmetic (and so is every later assignment
    /// to the variable), with `-n` a value is a name.
    fn declaration_operands(&mut self, args: &[Word]) {
        let options: String = args
            .iter()
            .filter(|a| a.is_literal() && (a.text.starts_with('-') || a.text.starts_with('+')))
            .map(|a| &a.text[1..])
            .collect();
        if options.contains('i') {
            self.hazard(Hazard::Arithmetic);
        }
        for arg in args.iter().filter(|a| !(a.is_literal() && (a.text.starts_with('-') || a.text.starts_with('+')))) {
            let (name, value) = match arg.text.split_once('=') {
                Some((name, value)) => (name, Some(Word { text: value.into(), kind: arg.kind })),
                None => (arg.text.as_str(), None),
            };
            if name.contains(['[', '$', '`']) || name.is_empty() {
                self.evaluated_hazard(format!("`{name}` as a variable name"));
            }
            match value {
                Some(value) if options.contains('i') => self.evaluated(&value, true),
                Some(value) if options.contains('n') => self.evaluated_name(&value),
                _ => {}
            }
        }
    }
}

/// `12`, `-3`, `+0`.
fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A parameter name in [`DATA_VARIABLES`] or a positional parameter (`1`, `10`).
fn is_data_variable(name: &str) -> bool {
    DATA_VARIABLES.contains(&name) || (!name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the source text of a word expands a parameter of [`is_data_variable`]
/// (`$1`, `${@}`, `$_`, `$REPLY`).
fn mentions_data_variable(text: &str) -> bool {
    text.match_indices('$').any(|(at, _)| {
        let rest = &text[at + 1..];
        let rest = rest.strip_prefix('{').unwrap_or(rest);
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let special = rest.starts_with(['@', '*']) || rest.starts_with(|c: char| c.is_ascii_digit());
        special || is_data_variable(&name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_variables_in_words() {
        assert!(mentions_data_variable("$1"));
        assert!(mentions_data_variable("${@}"));
        assert!(mentions_data_variable("$_"));
        assert!(mentions_data_variable("x$REPLY"));
        assert!(!mentions_data_variable("$n"));
        assert!(!mentions_data_variable("$_x"));
        assert!(!mentions_data_variable("$#"));
        assert!(is_integer("-12") && !is_integer("0x1") && !is_integer(""));
    }
}
