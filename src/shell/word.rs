//! Shell words after quote removal, and the text rules that produce them: backslash escapes
//! outside and inside double quotes, and ANSI-C `$'…'` strings.

/// How much of a word is known before the shell runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum WordKind {
    /// Exactly the text: no expansion of any kind.
    #[default]
    Literal,
    /// A pattern the shell expands into file names (`*.rs`, `{a,b}`, `[ab]`): no code runs,
    /// but the words it becomes are not known.
    Pattern,
    /// Depends on variables, substitutions or the user's home (`$HOME/x`, `$(cmd)`, `~/x`).
    Dynamic,
}

/// One shell word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// The text after quote removal; for a [`WordKind::Dynamic`] word, the source text of its
    /// expansions stays as written (`$HOME/x`).
    pub text: String,
    /// What is known about it.
    pub kind: WordKind,
}

impl Word {
    /// A literal word.
    pub fn literal(text: impl Into<String>) -> Word {
        Word { text: text.into(), kind: WordKind::Literal }
    }

    /// A word that depends on something only known when the shell runs.
    pub fn dynamic(text: impl Into<String>) -> Word {
        Word { text: text.into(), kind: WordKind::Dynamic }
    }

    /// Whether the word is exactly its text.
    pub fn is_literal(&self) -> bool {
        self.kind == WordKind::Literal
    }

    /// Append `other`, keeping the least known kind.
    pub(crate) fn append(&mut self, other: &Word) {
        self.text.push_str(&other.text);
        self.kind = self.kind.max(other.kind);
    }
}

/// An unquoted word's text with backslash escapes removed, and whether an unquoted glob
/// character (`*`, `?`, `[`) or a leading `~` remains.
///
/// `None` when the text holds unescaped blanks: bash would split it there (a newline ends
/// the command), so the parser and bash disagree about it. tree-sitter-bash reads
/// `ls⏎\rm x` as `ls` with the argument `⏎\rm`, where bash runs `ls`, then `rm x`.
pub(crate) fn unquoted(raw: &str) -> Option<(String, WordKind)> {
    let mut text = String::with_capacity(raw.len());
    let mut kind = WordKind::Literal;
    let mut chars = raw.chars();
    let mut first = true;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(escaped) => text.push(escaped),
            },
            '*' | '?' | '[' => {
                kind = kind.max(WordKind::Pattern);
                text.push(c);
            }
            '~' if first => {
                kind = WordKind::Dynamic;
                text.push(c);
            }
            ' ' | '\t' | '\n' | '\r' => return None,
            c => text.push(c),
        }
        first = false;
    }
    Some((text, kind))
}

/// Text between double quotes (no expansions in it) with its escapes removed: only `\$`,
/// `` \` ``, `\"`, `\\` and backslash-newline are escapes there.
pub(crate) fn double_quoted(raw: &str) -> String {
    let mut text = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    text.push(chars.next().expect("peeked"));
                    continue;
                }
                Some('\n') => {
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        text.push(c);
    }
    text
}

/// Decode the body of an ANSI-C string (`$'…'` without the `$'` and `'`), as bash does.
/// Returns `None` for an escape bash would turn into something other than text (a NUL,
/// which ends the word early).
pub(crate) fn ansi_c(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let code = match e {
            '0'..='7' => {
                let mut value = e.to_digit(8).expect("octal digit");
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                Some(value & 0xff)
            }
            'x' => hex(&mut chars, 2),
            'u' => hex(&mut chars, 4),
            'U' => hex(&mut chars, 8),
            'c' => chars.next().map(|c| (c as u32) & 0x1f),
            _ => {
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        match code {
            Some(0) => return None,
            // `\x`/`\u` with no digits stay as written.
            None if matches!(e, 'x' | 'u' | 'U') => {
                out.push('\\');
                out.push(e);
            }
            None => return None,
            // Bytes above 0x7f from `\x`/octal are raw bytes, not characters: unknown text.
            Some(v) if v > 0x7f && !matches!(e, 'u' | 'U') => return None,
            Some(v) => out.push(char::from_u32(v)?),
        }
    }
    Some(out)
}

fn hex(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, max: usize) -> Option<u32> {
    let mut value = None;
    for _ in 0..max {
        match chars.peek().and_then(|c| c.to_digit(16)) {
            Some(d) => {
                value = Some(value.unwrap_or(0) * 16 + d);
                chars.next();
            }
            None => break,
        }
    }
    value
}

/// Whether the unquoted text of a word holds a brace expansion (`{a,b}`, `{1..3}`): a `{`
/// followed by a `,` or `..` and then a `}`.
pub(crate) fn has_brace_expansion(unquoted: &str) -> bool {
    let Some(open) = unquoted.find('{') else { return false };
    let rest = &unquoted[open + 1..];
    let Some(close) = rest.rfind('}') else { return false };
    let inner = &rest[..close];
    inner.contains(',') || inner.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_escapes_and_patterns() {
        let ok = |t: &str, k| Some((t.to_owned(), k));
        assert_eq!(unquoted(r"\rm"), ok("rm", WordKind::Literal));
        assert_eq!(unquoted(r"r\m"), ok("rm", WordKind::Literal));
        assert_eq!(unquoted(r"a\ b"), ok("a b", WordKind::Literal));
        assert_eq!(unquoted("a\\\nb"), ok("ab", WordKind::Literal));
        assert_eq!(unquoted(r"\*"), ok("*", WordKind::Literal));
        assert_eq!(unquoted("*.rs"), ok("*.rs", WordKind::Pattern));
        assert_eq!(unquoted("~/x"), ok("~/x", WordKind::Dynamic));
        assert_eq!(unquoted("a~b"), ok("a~b", WordKind::Literal));
        assert_eq!(unquoted("\n\\rm"), None);
    }

    #[test]
    fn double_quoted_escapes() {
        assert_eq!(double_quoted(r#"a \"b\" \$c \x"#), r#"a "b" $c \x"#);
    }

    #[test]
    fn ansi_c_strings() {
        assert_eq!(ansi_c(r"\x72m").as_deref(), Some("rm"));
        assert_eq!(ansi_c(r"\162\155").as_deref(), Some("rm"));
        assert_eq!(ansi_c(r"\u0072m").as_deref(), Some("rm"));
        assert_eq!(ansi_c(r"a\tb\n").as_deref(), Some("a\tb\n"));
        assert_eq!(ansi_c(r"\'").as_deref(), Some("'"));
        assert_eq!(ansi_c(r"x\0y"), None);
        assert_eq!(ansi_c(r"\xff"), None);
    }

    #[test]
    fn brace_expansions() {
        assert!(has_brace_expansion("{rm,x}"));
        assert!(has_brace_expansion("a{1..3}"));
        assert!(!has_brace_expansion("{}"));
        assert!(!has_brace_expansion("{x}"));
    }
}
