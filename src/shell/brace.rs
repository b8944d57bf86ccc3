//! Brace expansion, as bash does it before every other expansion: `secret{s,}/key` is the two
//! words `secrets/key` and `secret/key`, `a{1..3}` is `a1 a2 a3`. Paths are checked on the
//! words a command really gets, so a `Read(./.env)` deny rule sees the `.env` in `.en{v,}`.
//!
//! The expansion works on characters marked quoted or not: only unquoted `{`, `,`, `}` and
//! `..` are brace syntax (`'{a,b}'` and `\{a,b\}` stay one word). Where the result could
//! differ from bash's — a brace left over that bash might still expand, more than
//! [`MAX_BRACE_WORDS`] words, a sequence of other characters than letters and digits — the
//! answer is `None` and the word counts as unknown.

use tree_sitter::Node;

use super::walk::{Walker, children};
use super::word::{self, Word, WordKind};

/// Most words one word may expand into; past it the word is not known.
pub const MAX_BRACE_WORDS: usize = 256;

/// One character of a word after quote removal, and whether it was quoted or escaped (then it
/// is never brace syntax nor a glob character).
pub(crate) type Char = (char, bool);

/// What one brace expression stands for.
enum Braces {
    /// `{a,b,c}`: the alternatives, as ranges of the text.
    Alternatives(Vec<std::ops::Range<usize>>),
    /// `{1..3}`, `{a..e..2}`: the generated items.
    Sequence(Vec<String>),
    /// A sequence bash expands that is not followed here: too long, or of other characters
    /// than letters and digits (`{Z..a}`).
    Unknown,
}

/// The words `text` expands into, in bash's order (`{a,b}{c,d}` is `ac ad bc bd`); the text
/// itself when it holds no brace expression. `None` when the result is not certain or has
/// more than [`MAX_BRACE_WORDS`] words. Empty results are dropped, as bash drops them.
pub(crate) fn expand(text: &[Char]) -> Option<Vec<Vec<Char>>> {
    let mut out = Vec::new();
    expand_into(text, &mut out)?;
    let changed = out.len() != 1 || out[0] != text;
    if changed && out.iter().any(|word| word.iter().any(|&(c, quoted)| !quoted && matches!(c, '{' | '}'))) {
        // A brace left over, which bash might read differently (`{a,{b}}`): not certain.
        return None;
    }
    out.retain(|word| !word.is_empty());
    Some(out)
}

fn expand_into(text: &[Char], out: &mut Vec<Vec<Char>>) -> Option<()> {
    for open in (0..text.len()).filter(|&i| text[i] == ('{', false)) {
        if open > 0 && text[open - 1] == ('$', false) {
            continue;
        }
        let Some((close, braces)) = brace_at(text, open) else { continue };
        let (pre, post) = (&text[..open], &text[close + 1..]);
        let alternatives: Vec<Vec<Char>> = match braces {
            Braces::Alternatives(ranges) => ranges.into_iter().map(|r| text[r].to_vec()).collect(),
            Braces::Sequence(items) => items.iter().map(|s| s.chars().map(|c| (c, false)).collect()).collect(),
            Braces::Unknown => return None,
        };
        for alternative in alternatives {
            let mut rest = Vec::new();
            expand_into(&[alternative, post.to_vec()].concat(), &mut rest)?;
            for word in rest {
                out.push([pre, &word].concat());
                if out.len() > MAX_BRACE_WORDS {
                    return None;
                }
            }
        }
        return Some(());
    }
    out.push(text.to_vec());
    Some(())
}

/// The brace expression opening at `open`, if it is one: where it closes and what it holds.
fn brace_at(text: &[Char], open: usize) -> Option<(usize, Braces)> {
    let mut depth = 0usize;
    let mut commas = Vec::new();
    for (i, &(c, quoted)) in text.iter().enumerate().skip(open) {
        if quoted {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    if !commas.is_empty() {
                        let mut ranges = Vec::new();
                        let mut start = open + 1;
                        for comma in commas {
                            ranges.push(start..comma);
                            start = comma + 1;
                        }
                        ranges.push(start..i);
                        return Some((i, Braces::Alternatives(ranges)));
                    }
                    let inner: String = text[open + 1..i].iter().map(|&(c, _)| c).collect();
                    let quoted_inside = text[open + 1..i].iter().any(|&(_, q)| q);
                    return if quoted_inside { None } else { sequence(&inner).map(|braces| (i, braces)) };
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    None
}

/// The items of a sequence expression's inside (`1..10`, `05..10..2`, `a..e`), `None` when it
/// is not one, [`Braces::Unknown`] when it is too long or would generate other characters
/// than letters and digits.
fn sequence(inner: &str) -> Option<Braces> {
    let parts: Vec<&str> = inner.split("..").collect();
    let step = match parts.as_slice() {
        [_, _] => 1,
        [_, _, step] => step.parse::<i64>().ok()?.unsigned_abs().max(1),
        _ => return None,
    };
    let (from, to) = (parts[0], parts[1]);
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = a.abs_diff(b) / step + 1;
        if count > MAX_BRACE_WORDS as u64 {
            return Some(Braces::Unknown);
        }
        let padded = |s: &str| s.trim_start_matches('-').len() > 1 && s.trim_start_matches('-').starts_with('0');
        let width = if padded(from) || padded(to) { from.len().max(to.len()) } else { 0 };
        let items = (0..count).map(|k| {
            let offset = i64::try_from(k * step).unwrap_or(i64::MAX);
            let n = if a <= b { a + offset } else { a - offset };
            if width == 0 {
                n.to_string()
            } else if n < 0 {
                format!("-{:0>w$}", n.unsigned_abs(), w = width - 1)
            } else {
                format!("{n:0>width$}")
            }
        });
        return Some(Braces::Sequence(items.collect()));
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    let (Some(x), None, Some(y), None) = (a.next(), a.next(), b.next(), b.next()) else { return None };
    if !x.is_ascii_alphabetic() || !y.is_ascii_alphabetic() {
        return None;
    }
    let (x, y) = (u32::from(x), u32::from(y));
    let step = u32::try_from(step).ok()?;
    let items: Vec<u32> =
        if x <= y { (x..=y).step_by(step as usize).collect() } else { (y..=x).rev().step_by(step as usize).collect() };
    let items: Option<Vec<String>> =
        items.into_iter().map(|c| char::from_u32(c).filter(char::is_ascii_alphabetic).map(String::from)).collect();
    Some(items.map_or(Braces::Unknown, Braces::Sequence))
}

impl Walker<'_> {
    /// The words one word node becomes after brace expansion (substitutions in it walked
    /// once): the one word when it holds no brace expression or depends on the shell (`$x`),
    /// a [`WordKind::Dynamic`] word when its expansion is not certain.
    pub(super) fn words(&mut self, node: Node) -> Vec<Word> {
        let whole = self.word(node);
        if whole.kind == WordKind::Dynamic {
            return vec![whole];
        }
        let Some(chars) = self.brace_chars(node) else { return vec![whole] };
        if !chars.contains(&('{', false)) {
            return vec![whole];
        }
        match expand(&chars) {
            Some(words) if words.len() == 1 && words[0] == chars => vec![whole],
            Some(words) => words.iter().map(|w| to_word(w)).collect(),
            None => vec![Word::dynamic(whole.text)],
        }
    }

    /// The characters of a word node after quote removal, each marked quoted or not; `None`
    /// when a part of it is only known when the shell runs.
    fn brace_chars(&self, node: Node) -> Option<Vec<Char>> {
        let raw = self.text(node);
        let quoted = |text: &str| text.chars().map(|c| (c, true)).collect::<Vec<_>>();
        match node.kind() {
            "word" => {
                let mut out = Vec::new();
                let mut chars = raw.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some('\n') | None => {}
                            Some(escaped) => out.push((escaped, true)),
                        },
                        c => out.push((c, false)),
                    }
                }
                Some(out)
            }
            "brace_expression" | "{" | "}" => Some(raw.chars().map(|c| (c, false)).collect()),
            "number" if node.named_child_count() == 0 => Some(raw.chars().map(|c| (c, false)).collect()),
            "raw_string" => Some(quoted(raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default())),
            "ansi_c_string" => raw.get(2..raw.len().saturating_sub(1)).and_then(word::ansi_c).map(|t| quoted(&t)),
            "string" => {
                let plain = children(node).iter().all(|(_, c)| !c.is_named() || c.kind() == "string_content");
                let inside = raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default();
                plain.then(|| quoted(&word::double_quoted(inside)))
            }
            "concatenation" => {
                let mut out = Vec::new();
                for (_, child) in children(node) {
                    out.extend(self.brace_chars(child)?);
                }
                Some(out)
            }
            _ => None,
        }
    }
}

/// A word from expanded characters: a glob where an unquoted `*`, `?` or `[` remains,
/// dynamic where it starts with an unquoted `~`.
fn to_word(chars: &[Char]) -> Word {
    let text: String = chars.iter().map(|&(c, _)| c).collect();
    let kind = if chars.first() == Some(&('~', false)) {
        WordKind::Dynamic
    } else if chars.iter().any(|&(c, quoted)| !quoted && matches!(c, '*' | '?' | '[')) {
        WordKind::Pattern
    } else {
        WordKind::Literal
    };
    Word { text, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(text: &str) -> Vec<Char> {
        text.chars().map(|c| (c, false)).collect()
    }

    fn words(text: &str) -> Option<Vec<String>> {
        expand(&chars(text)).map(|ws| ws.iter().map(|w| w.iter().map(|&(c, _)| c).collect()).collect())
    }

    #[test]
    fn alternatives_and_sequences() {
        assert_eq!(words("secret{s,}/key").unwrap(), ["secrets/key", "secret/key"]);
        assert_eq!(words(".en{v,}").unwrap(), [".env", ".en"]);
        assert_eq!(words("{a,b}{c,d}").unwrap(), ["ac", "ad", "bc", "bd"]);
        assert_eq!(words("{a,{b,c}}d").unwrap(), ["ad", "bd", "cd"]);
        assert_eq!(words("x{1..3}").unwrap(), ["x1", "x2", "x3"]);
        assert_eq!(words("{3..1}").unwrap(), ["3", "2", "1"]);
        assert_eq!(words("{01..3}").unwrap(), ["01", "02", "03"]);
        assert_eq!(words("{1..7..3}").unwrap(), ["1", "4", "7"]);
        assert_eq!(words("{a..c}").unwrap(), ["a", "b", "c"]);
        assert_eq!(words("{,}").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn plain_words_stay_and_quotes_protect() {
        assert_eq!(words("HEAD@{1}").unwrap(), ["HEAD@{1}"]);
        assert_eq!(words("{}").unwrap(), ["{}"]);
        assert_eq!(words("a{b").unwrap(), ["a{b"]);
        let quoted: Vec<Char> = "{a,b}".chars().map(|c| (c, true)).collect();
        assert_eq!(expand(&quoted).unwrap(), vec![quoted.clone()]);
        let mixed: Vec<Char> = vec![('{', false), ('a', false), (',', true), ('b', false), ('}', false)];
        assert_eq!(expand(&mixed).unwrap(), vec![mixed.clone()]);
    }

    #[test]
    fn uncertain_or_too_many_words_are_unknown() {
        assert_eq!(words("{a,{b}}"), None);
        assert_eq!(words("{a}{b,c}"), None);
        assert_eq!(words("{1..1000}"), None);
        assert_eq!(words("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"), None);
        assert_eq!(words("{Z..a}"), None);
    }
}
