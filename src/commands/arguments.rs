//! A custom command's arguments in its body, as Claude Code 2.1.332 puts them there.
//!
//! The arguments are the text after the command's name (`/fix 12 "the parser"`), split like
//! a shell splits words: at spaces, with `"…"` and `'…'` keeping one argument together.
//!
//! | placeholder | becomes |
//! |---|---|
//! | `$ARGUMENTS` | the whole text, as typed |
//! | `$ARGUMENTS[N]`, `$N` | argument `N`, counted from 0 (`$0` is the first) |
//! | `\$` | a `$` that starts no placeholder |
//!
//! An argument that is not there leaves its placeholder as written (`$2` with two arguments
//! stays `$2`, as in Claude Code). A body with no placeholder at all gets the arguments
//! appended as a last paragraph, `ARGUMENTS: …`.

/// The arguments of one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arguments {
    /// The text after the name, trimmed.
    pub raw: String,
    /// It split into words.
    pub words: Vec<String>,
}

impl Arguments {
    /// Read the text after a command's name.
    pub fn new(raw: &str) -> Arguments {
        let raw = raw.trim();
        Arguments { raw: raw.to_owned(), words: split(raw) }
    }

    /// `text` with its placeholders replaced.
    pub fn substitute(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.raw.len());
        let mut rest = text;
        while let Some(at) = rest.find(['$', '\\']) {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            if let Some(after) = tail.strip_prefix("\\$") {
                out.push('$');
                rest = after;
                continue;
            }
            if let Some(after) = tail.strip_prefix('\\') {
                out.push('\\');
                rest = after;
                continue;
            }
            match placeholder(tail) {
                Some((Placeholder::All, len)) => {
                    out.push_str(&self.raw);
                    rest = &tail[len..];
                }
                Some((Placeholder::Index(n), len)) => {
                    out.push_str(self.words.get(n).map_or(&tail[..len], String::as_str));
                    rest = &tail[len..];
                }
                None => {
                    out.push('$');
                    rest = &tail[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Whether `text` has a placeholder (an unescaped `$ARGUMENTS` or `$N`).
pub fn has_placeholder(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices('$').any(|(at, _)| (at == 0 || bytes[at - 1] != b'\\') && placeholder(&text[at..]).is_some())
}

enum Placeholder {
    All,
    Index(usize),
}

/// The placeholder `text` starts with (it starts with `$`), and its length.
fn placeholder(text: &str) -> Option<(Placeholder, usize)> {
    let rest = text.strip_prefix('$')?;
    if let Some(after) = rest.strip_prefix("ARGUMENTS") {
        if let Some(index) = after.strip_prefix('[') {
            let digits = index.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && index[digits..].starts_with(']') {
                let n = index[..digits].parse().ok()?;
                return Some((Placeholder::Index(n), 1 + "ARGUMENTS[".len() + digits + 1));
            }
        }
        return Some((Placeholder::All, 1 + "ARGUMENTS".len()));
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n = rest[..digits].parse().ok()?;
    Some((Placeholder::Index(n), 1 + digits))
}

/// Split like a shell: words at whitespace, quotes keep one word together (and are removed).
fn split(raw: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in raw.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(Arguments::new(r#" "a b" c  'd e'f "" "#).words, ["a b", "c", "d ef", ""]);
        assert_eq!(Arguments::new("").words, Vec::<String>::new());
        assert_eq!(Arguments::new(r#"unclosed "quote here"#).words, ["unclosed", "quote here"]);
    }

    #[test]
    fn placeholders_as_claude_code_fills_them() {
        // Recorded from Claude Code 2.1.332 with `/pos "a b" c d`.
        let body = "A0=[$0] A1=[$1] A2=[$2] AI0=[$ARGUMENTS[0]] AI1=[$ARGUMENTS[1]] ALL=[$ARGUMENTS] END";
        assert_eq!(
            Arguments::new(r#""a b" c d"#).substitute(body),
            r#"A0=[a b] A1=[c] A2=[d] AI0=[a b] AI1=[c] ALL=["a b" c d] END"#
        );
        // With no arguments the positional ones stay as written; $ARGUMENTS is empty.
        assert_eq!(
            Arguments::new("").substitute(body),
            "A0=[$0] A1=[$1] A2=[$2] AI0=[$ARGUMENTS[0]] AI1=[$ARGUMENTS[1]] ALL=[] END"
        );
        // `/money a b … l`: two-digit indexes, an escaped `$`, `$ARGUMENTS` before other letters.
        let args = Arguments::new("a b c d e f g h i j k l");
        assert_eq!(
            args.substitute(r"Price $5 and $10 and \$1 and $ARGUMENTSX end $ \x"),
            r"Price f and k and $1 and a b c d e f g h i j k lX end $ \x"
        );
        assert_eq!(args.substitute("$ARGUMENTS[x] $ARGUMENTS[12]"), "a b c d e f g h i j k l[x] $ARGUMENTS[12]");
    }

    #[test]
    fn placeholders_are_found_unless_escaped() {
        assert!(has_placeholder("Only $0 here"));
        assert!(has_placeholder("x $ARGUMENTS"));
        assert!(!has_placeholder(r"costs \$5 or $ and $X"));
        assert!(!has_placeholder("USER dup\n"));
    }
}
