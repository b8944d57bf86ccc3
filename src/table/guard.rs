//! Guard expressions of the transition table.
//!
//! Grammar: `expr := or`, `or := and ("||" and)*`, `and := unary ("&&" unary)*`,
//! `unary := "!" unary | "(" expr ")" | atom`, `atom := NAME | NAME "==" VALUE | NAME "!=" VALUE`.
//! A bare `NAME` reads a boolean fact; `NAME_left` reads a counter as "greater than zero".
//! Guards are tiny, so the auditor can decide exclusivity and coverage by enumeration.

use std::collections::BTreeMap;
use std::fmt;

/// The deepest nesting of `!` and parentheses a guard may have. Real guards nest two or three
/// levels; the bound keeps the recursive parser (and every walk over a guard) off the end of
/// the stack on a hostile table.
pub const MAX_GUARD_DEPTH: usize = 256;

/// A parsed guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Reads a boolean fact (or `counter_left`).
    Flag(String),
    /// An enumerated fact equals a value.
    Is(String, String),
    /// Negation.
    Not(Box<Guard>),
    /// All must hold.
    All(Vec<Guard>),
    /// One must hold.
    Any(Vec<Guard>),
}

/// The value of one fact when a guard is evaluated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum FactValue {
    /// A boolean fact.
    Bool(bool),
    /// An enumerated fact.
    Value(String),
}

impl fmt::Display for FactValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FactValue::Bool(b) => write!(f, "{b}"),
            FactValue::Value(v) => f.write_str(v),
        }
    }
}

/// Fact values by name.
pub type Facts = BTreeMap<String, FactValue>;

/// Why a guard could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// The text is not a guard.
    #[error("bad guard `{text}`: {reason}")]
    Syntax {
        /// The guard text.
        text: String,
        /// What was wrong.
        reason: String,
    },
    /// The guard nests `!` and parentheses deeper than [`MAX_GUARD_DEPTH`]. The text is left
    /// out of the message: it is at least that long.
    #[error("the guard nests `!` and parentheses deeper than {MAX_GUARD_DEPTH} levels")]
    TooDeep,
    /// A fact the guard reads was not supplied, or has the wrong kind.
    #[error("guard reads `{0}`, which the state did not report")]
    Missing(String),
}

impl Guard {
    /// Parse guard text.
    ///
    /// # Errors
    /// [`GuardError::Syntax`] naming the text and the problem; [`GuardError::TooDeep`] past
    /// [`MAX_GUARD_DEPTH`] levels of nesting.
    pub fn parse(text: &str) -> Result<Guard, GuardError> {
        let tokens = tokenize(text)?;
        let mut parser = Parser { tokens: &tokens, pos: 0, text, depth: 0 };
        let guard = parser.or()?;
        if parser.pos != tokens.len() {
            return Err(parser.error("unexpected trailing input"));
        }
        Ok(guard)
    }

    /// Evaluate against `facts`.
    ///
    /// # Errors
    /// [`GuardError::Missing`] when a fact the guard reads is absent or of the wrong kind.
    pub fn eval(&self, facts: &Facts) -> Result<bool, GuardError> {
        Ok(match self {
            Guard::Flag(name) => match facts.get(name) {
                Some(FactValue::Bool(b)) => *b,
                _ => return Err(GuardError::Missing(name.clone())),
            },
            Guard::Is(name, value) => match facts.get(name) {
                Some(FactValue::Value(v)) => v == value,
                _ => return Err(GuardError::Missing(name.clone())),
            },
            Guard::Not(inner) => !inner.eval(facts)?,
            Guard::All(parts) => {
                for part in parts {
                    if !part.eval(facts)? {
                        return Ok(false);
                    }
                }
                true
            }
            Guard::Any(parts) => {
                for part in parts {
                    if part.eval(facts)? {
                        return Ok(true);
                    }
                }
                false
            }
        })
    }

    /// Evaluate against the facts known so far, in Kleene's three-valued logic: `None` when
    /// the value depends on a fact `facts` lacks (`false && x` is `false` whatever `x` is). A
    /// fact of the wrong kind reads as not holding, as [`Guard::eval`]'s error does for an
    /// edge.
    pub fn eval_partial(&self, facts: &Facts) -> Option<bool> {
        match self {
            Guard::Flag(name) => match facts.get(name) {
                Some(FactValue::Bool(b)) => Some(*b),
                Some(FactValue::Value(_)) => Some(false),
                None => None,
            },
            Guard::Is(name, value) => match facts.get(name) {
                Some(FactValue::Value(v)) => Some(v == value),
                Some(FactValue::Bool(_)) => Some(false),
                None => None,
            },
            Guard::Not(inner) => inner.eval_partial(facts).map(|v| !v),
            Guard::All(parts) => junction(parts, facts, false),
            Guard::Any(parts) => junction(parts, facts, true),
        }
    }

    /// Every fact the guard reads, with the values it compares enumerated facts against.
    pub fn atoms(&self) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut BTreeMap<String, Vec<String>>) {
        match self {
            Guard::Flag(name) => {
                out.entry(name.clone()).or_default();
            }
            Guard::Is(name, value) => {
                let values = out.entry(name.clone()).or_default();
                if !values.contains(value) {
                    values.push(value.clone());
                }
            }
            Guard::Not(inner) => inner.collect(out),
            Guard::All(parts) | Guard::Any(parts) => parts.iter().for_each(|p| p.collect(out)),
        }
    }
}

/// `parts` joined by `&&` (`decisive` false) or `||` (true), in three-valued logic: one part
/// of the decisive value decides it, else any undecided part leaves it undecided.
fn junction(parts: &[Guard], facts: &Facts, decisive: bool) -> Option<bool> {
    let mut known = true;
    for part in parts {
        match part.eval_partial(facts) {
            Some(v) if v == decisive => return Some(decisive),
            Some(_) => {}
            None => known = false,
        }
    }
    known.then_some(!decisive)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Not,
    And,
    Or,
    Eq,
    Ne,
    Open,
    Close,
}

fn tokenize(text: &str) -> Result<Vec<Token>, GuardError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let syntax = |reason: String| GuardError::Syntax { text: text.to_owned(), reason };
    while i < bytes.len() {
        let c = bytes[i];
        let two = bytes.get(i..i + 2);
        match c {
            b' ' | b'\t' => i += 1,
            b'(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            b')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            b'&' if two == Some(b"&&") => {
                tokens.push(Token::And);
                i += 2;
            }
            b'|' if two == Some(b"||") => {
                tokens.push(Token::Or);
                i += 2;
            }
            b'=' if two == Some(b"==") => {
                tokens.push(Token::Eq);
                i += 2;
            }
            b'!' if two == Some(b"!=") => {
                tokens.push(Token::Ne);
                i += 2;
            }
            b'!' => {
                tokens.push(Token::Not);
                i += 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                tokens.push(Token::Name(text[start..i].to_owned()));
            }
            _ => return Err(syntax(format!("unexpected character `{}` at column {}", c as char, i + 1))),
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    text: &'a str,
    /// Levels of `!` and `(` open around the current position.
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, reason: &str) -> GuardError {
        GuardError::Syntax { text: self.text.to_owned(), reason: reason.to_owned() }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn or(&mut self) -> Result<Guard, GuardError> {
        let mut parts = vec![self.and()?];
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 { parts.remove(0) } else { Guard::Any(parts) })
    }

    fn and(&mut self) -> Result<Guard, GuardError> {
        let mut parts = vec![self.unary()?];
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 { parts.remove(0) } else { Guard::All(parts) })
    }

    /// Enter one level of `!` or `(`, unless that passes [`MAX_GUARD_DEPTH`].
    fn nest(&mut self) -> Result<(), GuardError> {
        self.depth += 1;
        if self.depth > MAX_GUARD_DEPTH {
            return Err(GuardError::TooDeep);
        }
        self.pos += 1;
        Ok(())
    }

    fn unary(&mut self) -> Result<Guard, GuardError> {
        match self.peek().cloned() {
            Some(Token::Not) => {
                self.nest()?;
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(Guard::Not(Box::new(inner)))
            }
            Some(Token::Open) => {
                self.nest()?;
                let inner = self.or()?;
                if self.peek() != Some(&Token::Close) {
                    return Err(self.error("missing `)`"));
                }
                self.pos += 1;
                self.depth -= 1;
                Ok(inner)
            }
            Some(Token::Name(name)) => {
                self.pos += 1;
                let negate = match self.peek() {
                    Some(Token::Eq) => false,
                    Some(Token::Ne) => true,
                    _ => return Ok(Guard::Flag(name)),
                };
                self.pos += 1;
                let Some(Token::Name(value)) = self.peek().cloned() else {
                    return Err(self.error("expected a value after `==` or `!=`"));
                };
                self.pos += 1;
                let is = Guard::Is(name, value);
                Ok(if negate { Guard::Not(Box::new(is)) } else { is })
            }
            _ => Err(self.error("expected a fact name, `!` or `(`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(pairs: &[(&str, FactValue)]) -> Facts {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn partial_evaluation_is_three_valued() {
        let g = Guard::parse("a && !(b || c == x)").unwrap();
        let yes = || FactValue::Bool(true);
        let no = || FactValue::Bool(false);
        assert_eq!(g.eval_partial(&facts(&[])), None);
        assert_eq!(g.eval_partial(&facts(&[("a", no())])), Some(false));
        assert_eq!(g.eval_partial(&facts(&[("a", yes())])), None);
        assert_eq!(g.eval_partial(&facts(&[("a", yes()), ("b", yes())])), Some(false));
        assert_eq!(g.eval_partial(&facts(&[("a", yes()), ("b", no())])), None);
        let c = |v: &str| ("c", FactValue::Value(v.into()));
        assert_eq!(g.eval_partial(&facts(&[("a", yes()), ("b", no()), c("y")])), Some(true));
        assert_eq!(g.eval_partial(&facts(&[("a", yes()), ("b", no()), c("x")])), Some(false));
    }

    #[test]
    fn parses_and_evaluates_with_precedence() {
        let g = Guard::parse("error == retryable && !(fallback_due && fallbacks_left) && retries_left").unwrap();
        let mut f = facts(&[
            ("error", FactValue::Value("retryable".into())),
            ("fallback_due", FactValue::Bool(true)),
            ("fallbacks_left", FactValue::Bool(false)),
            ("retries_left", FactValue::Bool(true)),
        ]);
        assert!(g.eval(&f).unwrap());
        f.insert("fallbacks_left".into(), FactValue::Bool(true));
        assert!(!g.eval(&f).unwrap());
        let or = Guard::parse("a || b && !c").unwrap();
        assert_eq!(
            or,
            Guard::Any(vec![
                Guard::Flag("a".into()),
                Guard::All(vec![Guard::Flag("b".into()), Guard::Not(Box::new(Guard::Flag("c".into())))])
            ])
        );
    }

    #[test]
    fn reports_missing_facts_and_syntax_errors() {
        let g = Guard::parse("x && y").unwrap();
        assert_eq!(g.eval(&facts(&[("x", FactValue::Bool(true))])), Err(GuardError::Missing("y".into())));
        assert!(matches!(Guard::parse("a &&"), Err(GuardError::Syntax { .. })));
        assert!(matches!(Guard::parse("(a"), Err(GuardError::Syntax { .. })));
        assert!(matches!(Guard::parse("a & b"), Err(GuardError::Syntax { .. })));
        let deep = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(Guard::parse(&deep(MAX_GUARD_DEPTH)).unwrap(), Guard::Flag("a".into()));
        assert_eq!(Guard::parse(&deep(MAX_GUARD_DEPTH + 1)), Err(GuardError::TooDeep));
        assert_eq!(Guard::parse(&deep(20_000)), Err(GuardError::TooDeep));
        assert_eq!(Guard::parse(&format!("{}a", "!".repeat(20_000))), Err(GuardError::TooDeep));
        // Depth is nesting, not count: many groups side by side are fine.
        let wide = vec!["(!a)"; 1000].join(" && ");
        assert!(Guard::parse(&wide).is_ok());
        assert_eq!(Guard::parse("s != block").unwrap(), Guard::Not(Box::new(Guard::Is("s".into(), "block".into()))));
    }

    #[test]
    fn lists_atoms_with_compared_values() {
        let g = Guard::parse("stop_hook == block || stop_hook == pass && turns_left").unwrap();
        let atoms = g.atoms();
        assert_eq!(atoms["stop_hook"], vec!["block".to_string(), "pass".to_string()]);
        assert!(atoms["turns_left"].is_empty());
    }
}
