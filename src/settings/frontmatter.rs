//! Markdown files that open with a frontmatter block: custom slash commands, output styles
//! and (later) agent definitions.
//!
//! ```text
//! ---
//! description: Commit the staged changes
//! allowed-tools: Bash(git add:*), Bash(git commit:*)
//! ---
//! Commit with the message $ARGUMENTS
//! ```
//!
//! The block is the small part of YAML these files use: `key: value` lines whose value is a
//! plain, `'single'`- or `"double"`-quoted scalar, an inline list `[a, b]`, a block list (`-
//! item` lines under an empty value) or a block scalar (`|` keeps line breaks, `>` folds them),
//! with `#` comments and blank lines. Anything else — nested mappings, anchors, a second
//! document — is an error naming the file and the line, as is a block that is never closed.
//! A file that does not start with `---` has no frontmatter: all of it is the body.

use std::fmt;

/// A parsed file: its frontmatter fields in order, and its body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Document {
    /// The fields of the frontmatter block, in the order written.
    pub fields: Vec<Field>,
    /// The text after the block, its leading blank lines removed.
    pub body: String,
}

/// One `key: value` of a frontmatter block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The key as written.
    pub key: String,
    /// The value.
    pub value: FieldValue,
    /// The 1-based line of the key in the file.
    pub line: usize,
}

/// A frontmatter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    /// A scalar, unquoted (an empty value is an empty text).
    Text(String),
    /// A list: `[a, b]` or `- a` lines.
    List(Vec<String>),
}

/// A frontmatter block that cannot be read: the file, the line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct FrontmatterError {
    /// The file, as it is named to the user.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// What is wrong there.
    pub message: String,
}

/// Why a file with frontmatter (a custom command, an output style) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Read {
        /// The file, as errors name it.
        file: String,
        /// Why.
        error: std::io::Error,
    },
    /// Its frontmatter, or a field of it, is malformed.
    #[error(transparent)]
    Frontmatter(#[from] FrontmatterError),
}

/// The `.md` files directly in `dir` (output styles, agent definitions), sorted; none when it
/// does not exist.
pub fn markdown_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    files.sort();
    files
}

impl Document {
    /// Read and parse the file at `path`: the name errors give it (its path as shown) and
    /// the document.
    ///
    /// # Errors
    /// [`FileError`] when the file cannot be read or its frontmatter does not parse.
    pub fn read(path: &std::path::Path) -> Result<(String, Document), FileError> {
        let file = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => return Err(FileError::Read { file, error }),
        };
        let doc = Document::parse(&file, &text)?;
        Ok((file, doc))
    }

    /// Parse `text`, the content of `file` (which names it in errors).
    ///
    /// # Errors
    /// [`FrontmatterError`] for a block that is not closed or a line that is not one of the
    /// forms this reader knows.
    pub fn parse(file: &str, text: &str) -> Result<Document, FrontmatterError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.split_inclusive('\n').enumerate().map(|(i, l)| (i + 1, l));
        let Some((_, first)) = lines.clone().next() else { return Ok(Document::default()) };
        if first.trim_end() != "---" {
            return Ok(Document { fields: Vec::new(), body: trim_leading_blank_lines(text).to_owned() });
        }
        lines.next();
        let mut block: Vec<(usize, &str)> = Vec::new();
        let mut body_start = None;
        for (n, line) in lines.by_ref() {
            if matches!(line.trim_end(), "---" | "...") {
                body_start = Some(n);
                break;
            }
            block.push((n, line.trim_end_matches(['\n', '\r'])));
        }
        let Some(closing) = body_start else {
            return Err(error(file, 1, "the frontmatter block opened here is never closed by a `---` line"));
        };
        let fields = parse_block(file, &block)?;
        let offset: usize = text.split_inclusive('\n').take(closing).map(str::len).sum();
        Ok(Document { fields, body: trim_leading_blank_lines(&text[offset..]).to_owned() })
    }

    /// The field `key`, if the block has it.
    pub fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The text of `key`, if the block has it.
    ///
    /// # Errors
    /// A [`FrontmatterError`] at the key's line when its value is a list.
    pub fn text(&self, file: &str, key: &str) -> Result<Option<&str>, FrontmatterError> {
        match self.field(key) {
            None => Ok(None),
            Some(Field { value: FieldValue::Text(text), .. }) => Ok(Some(text)),
            Some(Field { line, .. }) => Err(error(file, *line, &format!("`{key}` must be a text, not a list"))),
        }
    }

    /// `key` as a boolean (`true`/`false`, any case), if the block has it.
    ///
    /// # Errors
    /// A [`FrontmatterError`] at the key's line for any other value.
    pub fn boolean(&self, file: &str, key: &str) -> Result<Option<bool>, FrontmatterError> {
        let Some(text) = self.text(file, key)? else { return Ok(None) };
        match text.to_ascii_lowercase().as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            other => {
                let line = self.field(key).map_or(1, |f| f.line);
                Err(error(file, line, &format!("`{key}` must be true or false, not `{other}`")))
            }
        }
    }

    /// `key` as a list of items: a list, or a text of comma-separated items (Claude Code
    /// writes `allowed-tools: Bash(git add:*), Read`, and `paths: src/**/*.{ts,tsx}, lib/**`;
    /// commas inside parentheses or braces do not split). Empty items are dropped; an absent
    /// key is an empty list.
    pub fn items(&self, key: &str) -> Vec<String> {
        match self.field(key).map(|f| &f.value) {
            None => Vec::new(),
            Some(FieldValue::List(items)) => items.iter().filter(|i| !i.is_empty()).cloned().collect(),
            Some(FieldValue::Text(text)) => split_top_level_commas(text),
        }
    }
}

fn error(file: &str, line: usize, message: &str) -> FrontmatterError {
    FrontmatterError { file: file.to_owned(), line, message: message.to_owned() }
}

fn trim_leading_blank_lines(text: &str) -> &str {
    let mut rest = text;
    while let Some(end) = rest.find('\n') {
        if rest[..end].trim().is_empty() {
            rest = &rest[end + 1..];
        } else {
            break;
        }
    }
    if rest.trim().is_empty() { "" } else { rest }
}

/// Split `a, b(c, d), e{f,g}` at the commas outside parentheses and braces.
fn split_top_level_commas(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items.into_iter().map(|i| i.trim().to_owned()).filter(|i| !i.is_empty()).collect()
}

/// What a key with an empty value may be followed by.
enum Pending {
    /// Nothing yet: `- item` lines make it a list, anything else ends it as an empty text.
    Empty,
    /// A block scalar (`|` or `>`): the indented lines that follow.
    Block { folded: bool, lines: Vec<String> },
}

fn parse_block(file: &str, block: &[(usize, &str)]) -> Result<Vec<Field>, FrontmatterError> {
    let mut fields: Vec<Field> = Vec::new();
    let mut pending: Option<Pending> = None;
    for &(n, line) in block {
        let indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        match &mut pending {
            Some(Pending::Block { lines, .. }) if indented || trimmed.is_empty() => {
                lines.push(trimmed.to_owned());
                continue;
            }
            Some(Pending::Empty) if trimmed.starts_with("- ") || trimmed == "-" => {
                let item = scalar(file, n, trimmed.trim_start_matches('-').trim())?;
                let last = fields.last_mut().expect("a pending value belongs to the last field");
                match &mut last.value {
                    FieldValue::List(items) => items.push(item),
                    FieldValue::Text(_) => last.value = FieldValue::List(vec![item]),
                }
                continue;
            }
            _ => {}
        }
        if let Some(Pending::Block { folded, lines }) = pending.take() {
            let last = fields.last_mut().expect("a pending value belongs to the last field");
            last.value = FieldValue::Text(join_block(&lines, folded));
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indented {
            return Err(error(file, n, "an indented line here belongs to no key (nested values are not supported)"));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(error(file, n, &format!("expected `key: value`, found `{trimmed}`")));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(error(file, n, &format!("`{key}` is not a key (letters, digits, `-` and `_`)")));
        }
        if let Some(first) = fields.iter().find(|f| f.key == key) {
            return Err(error(file, n, &format!("`{key}` is given twice (first on line {})", first.line)));
        }
        let value = strip_comment(value.trim());
        let (value, next) = match value {
            "" => (FieldValue::Text(String::new()), Some(Pending::Empty)),
            "|" | "|-" | "|+" => {
                (FieldValue::Text(String::new()), Some(Pending::Block { folded: false, lines: vec![] }))
            }
            ">" | ">-" | ">+" => {
                (FieldValue::Text(String::new()), Some(Pending::Block { folded: true, lines: vec![] }))
            }
            v if v.starts_with('[') => (FieldValue::List(inline_list(file, n, v)?), None),
            v if v.starts_with(['{', '&', '*', '!']) => {
                return Err(error(file, n, &format!("`{v}`: mappings, anchors and tags are not supported here")));
            }
            v => (FieldValue::Text(scalar(file, n, v)?), None),
        };
        fields.push(Field { key: key.to_owned(), value, line: n });
        pending = next;
    }
    if let Some(Pending::Block { folded, lines }) = pending {
        let last = fields.last_mut().expect("a pending value belongs to the last field");
        last.value = FieldValue::Text(join_block(&lines, folded));
    }
    Ok(fields)
}

fn join_block(lines: &[String], folded: bool) -> String {
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(0, |i| i + 1);
    let lines = &lines[..end];
    if !folded {
        return lines.join("\n");
    }
    // `>`: lines join with spaces; an empty line is a line break.
    let mut out = String::new();
    for line in lines {
        if line.is_empty() {
            out.push('\n');
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out
}

/// A plain value loses a trailing ` # comment`; quoted values are left to [`scalar`].
fn strip_comment(value: &str) -> &str {
    if value.starts_with(['"', '\'']) {
        return value;
    }
    match value.find(" #") {
        Some(at) => value[..at].trim_end(),
        None if value.starts_with('#') => "",
        None => value,
    }
}

/// A scalar: quoted (with its escapes) or plain.
fn scalar(file: &str, line: usize, value: &str) -> Result<String, FrontmatterError> {
    let unterminated = |q: char| error(file, line, &format!("the value opened with {q} is never closed on this line"));
    if let Some(rest) = value.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        loop {
            match chars.next() {
                None => return Err(unterminated('"')),
                Some('"') => break,
                Some('\\') => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(c @ ('"' | '\\' | '/')) => out.push(c),
                    Some(c) => return Err(error(file, line, &format!("unknown escape `\\{c}` in a quoted value"))),
                    None => return Err(unterminated('"')),
                },
                Some(c) => out.push(c),
            }
        }
        return after_quote(file, line, chars.as_str(), out);
    }
    if let Some(rest) = value.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        loop {
            match chars.next() {
                None => return Err(unterminated('\'')),
                Some('\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                    out.push('\'');
                }
                Some('\'') => break,
                Some(c) => out.push(c),
            }
        }
        return after_quote(file, line, &chars.collect::<String>(), out);
    }
    Ok(value.to_owned())
}

fn after_quote(file: &str, line: usize, rest: &str, value: String) -> Result<String, FrontmatterError> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(value)
    } else {
        Err(error(file, line, &format!("unexpected `{rest}` after a quoted value")))
    }
}

/// `[a, "b, c", d]`.
fn inline_list(file: &str, line: usize, value: &str) -> Result<Vec<String>, FrontmatterError> {
    let Some(inner) = value.strip_prefix('[').and_then(|v| v.trim_end().strip_suffix(']')) else {
        return Err(error(file, line, "a list opened with [ must close with ] on the same line"));
    };
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                current.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (None, ',') => items.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    if quote.is_some() {
        return Err(error(file, line, "a quoted item of the list is never closed"));
    }
    items.push(current);
    items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()).map(|i| scalar(file, line, i)).collect()
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Text(text) => f.write_str(text),
            FieldValue::List(items) => write!(f, "[{}]", items.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Document, FrontmatterError> {
        Document::parse(".claude/commands/x.md", text)
    }

    /// The message of the error `text` is.
    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    fn text(key: &str, value: &str, line: usize) -> Field {
        Field { key: key.into(), value: FieldValue::Text(value.into()), line }
    }

    #[test]
    fn a_block_of_scalars_and_the_body_after_it() {
        let doc = parse(
            "---\ndescription: Commit things  # why\nargument-hint: \"[message]\"\nmodel: 'claude-haiku-4-5'\n\
             ---\n\nCommit with $ARGUMENTS\n",
        )
        .unwrap();
        assert_eq!(
            doc.fields,
            vec![
                text("description", "Commit things", 2),
                text("argument-hint", "[message]", 3),
                text("model", "claude-haiku-4-5", 4)
            ]
        );
        assert_eq!(doc.body, "Commit with $ARGUMENTS\n");
    }

    #[test]
    fn no_block_means_all_of_it_is_the_body() {
        let doc = parse("\nJust a body $ARGUMENTS\n---\n").unwrap();
        assert_eq!(doc.fields, vec![]);
        assert_eq!(doc.body, "Just a body $ARGUMENTS\n---\n");
        assert_eq!(parse("").unwrap(), Document::default());
        assert_eq!(parse("---\n---\n").unwrap(), Document::default());
    }

    #[test]
    fn lists_inline_in_blocks_and_as_comma_separated_text() {
        let doc = parse(
            "---\nallowed-tools: Bash(git add:*), Bash(git commit:*, x), Read\ntools: [Read, \"Grep, x\", 'Glob']\n\
             more:\n  - one\n  - 'two'\npaths: src/**/*.{ts,tsx}, lib/**\n---\nbody",
        )
        .unwrap();
        assert_eq!(doc.items("allowed-tools"), ["Bash(git add:*)", "Bash(git commit:*, x)", "Read"]);
        assert_eq!(doc.items("paths"), ["src/**/*.{ts,tsx}", "lib/**"]);
        assert_eq!(doc.items("tools"), ["Read", "Grep, x", "Glob"]);
        assert_eq!(doc.items("more"), ["one", "two"]);
        assert_eq!(doc.items("absent"), Vec::<String>::new());
        assert_eq!(doc.body, "body");
    }

    #[test]
    fn block_scalars_keep_or_fold_their_lines() {
        let doc = parse("---\nkept: |\n  one\n  two\n\nfolded: >\n  one\n  two\n\n  three\nempty:\n---\n").unwrap();
        assert_eq!(doc.text("f", "kept").unwrap(), Some("one\ntwo"));
        assert_eq!(doc.text("f", "folded").unwrap(), Some("one two\nthree"));
        assert_eq!(doc.text("f", "empty").unwrap(), Some(""));
    }

    #[test]
    fn booleans_and_their_errors_name_the_line() {
        let doc = parse("---\nkeep-coding-instructions: True\nbad: yes\nlist: [a]\n---\n").unwrap();
        assert_eq!(doc.boolean("s.md", "keep-coding-instructions").unwrap(), Some(true));
        assert_eq!(doc.boolean("s.md", "absent").unwrap(), None);
        assert_eq!(
            doc.boolean("s.md", "bad").unwrap_err().to_string(),
            "s.md:3: `bad` must be true or false, not `yes`"
        );
        assert_eq!(doc.text("s.md", "list").unwrap_err().to_string(), "s.md:4: `list` must be a text, not a list");
    }

    #[test]
    fn bad_blocks_are_errors_naming_the_file_and_line() {
        let f = ".claude/commands/x.md";
        assert_eq!(
            error("---\ndescription: x\n"),
            format!("{f}:1: the frontmatter block opened here is never closed by a `---` line")
        );
        assert_eq!(error("---\na: 1\njust words\n---\n"), format!("{f}:3: expected `key: value`, found `just words`"));
        assert_eq!(
            error("---\na: 1\nmeta:\n  nested: 2\n---\n"),
            format!("{f}:4: an indented line here belongs to no key (nested values are not supported)")
        );
        assert_eq!(error("---\na: 1\na: 2\n---\n"), format!("{f}:3: `a` is given twice (first on line 2)"));
        assert_eq!(
            error("---\n\ndescription: \"open\n---\n"),
            format!("{f}:3: the value opened with \" is never closed on this line")
        );
        assert_eq!(
            error("---\nx: [a, b\n---\n"),
            format!("{f}:2: a list opened with [ must close with ] on the same line")
        );
        assert_eq!(
            error("---\nx: {a: 1}\n---\n"),
            format!("{f}:2: `{{a: 1}}`: mappings, anchors and tags are not supported here")
        );
        assert_eq!(error("---\nx: 'a' b\n---\n"), format!("{f}:2: unexpected `b` after a quoted value"));
        assert_eq!(
            error("---\nbad key: 1\n---\n"),
            format!("{f}:2: `bad key` is not a key (letters, digits, `-` and `_`)")
        );
        assert_eq!(error("---\nx: \"a\\q\"\n---\n"), format!("{f}:2: unknown escape `\\q` in a quoted value"));
    }

    #[test]
    fn crlf_files_and_a_byte_order_mark_read_the_same() {
        let doc = parse("\u{feff}---\r\ndescription: Windows\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(doc.fields, vec![text("description", "Windows", 2)]);
        assert_eq!(doc.body, "body\r\n");
    }
}
