//! The walk over tree-sitter-bash's syntax tree: statements, words, redirections.
//!
//! Every node kind the walk accepts is named below; anything else is
//! [`Hazard::Unparsable`]. Commands found anywhere (substitutions included) are pushed to
//! [`Analysis::commands`]; wrappers are looked through in [`super::wrappers`], text bash
//! evaluates in [`super::evaluate`], `[ ]`, `[[ ]]` and `(( ))` in [`super::conditional`],
//! brace expansion in [`super::brace`].

use tree_sitter::Node;

use super::word::{self, Word, WordKind};
use super::{Analysis, Hazard, SimpleCommand, is_harmless_variable, wrappers};

/// Reserved words of bash, which tree-sitter-bash sometimes reads as the program of a simple
/// command where bash reads a compound command (`time { rm x; }`, `coproc { … }`): such a
/// "command" means the parse and bash disagree.
const RESERVED_WORDS: &[&str] =
    &["{", "}", "!", "[[", "]]", "do", "done", "then", "fi", "elif", "else", "esac", "in", "function", "select"];

/// Walks one parsed command line into an [`Analysis`].
pub(super) struct Walker<'a> {
    pub(super) src: &'a str,
    pub(super) depth: usize,
    pub(super) out: &'a mut Analysis,
}

/// A node's children with their field names.
pub(super) fn children<'t>(node: Node<'t>) -> Vec<(Option<&'static str>, Node<'t>)> {
    let mut cursor = node.walk();
    let mut out = Vec::with_capacity(node.child_count());
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

impl<'a> Walker<'a> {
    pub(super) fn new(src: &'a str, depth: usize, out: &'a mut Analysis) -> Self {
        Walker { src, depth, out }
    }

    pub(super) fn text(&self, node: Node) -> &'a str {
        &self.src[node.byte_range()]
    }

    pub(super) fn hazard(&mut self, hazard: Hazard) {
        if !self.out.hazards.contains(&hazard) {
            self.out.hazards.push(hazard);
        }
    }

    pub(super) fn unparsable(&mut self, what: impl Into<String>) {
        self.hazard(Hazard::Unparsable(what.into()));
    }

    /// The root: a syntax error anywhere makes the whole line unparsable.
    pub(super) fn program(&mut self, root: Node) {
        if root.has_error() {
            self.unparsable("a syntax error");
            return;
        }
        self.statements(root);
    }

    /// Every named child of `node` as a statement.
    fn statements(&mut self, node: Node) {
        for (_, child) in children(node) {
            if child.is_named() {
                self.statement(child);
            }
        }
    }

    pub(super) fn statement(&mut self, node: Node) {
        match node.kind() {
            "comment" => {}
            "program" | "list" | "pipeline" | "subshell" | "do_group" | "else_clause" | "elif_clause"
            | "negated_command" | "if_statement" | "while_statement" => self.statements(node),
            "compound_statement" => {
                let arithmetic = node.child(0).is_some_and(|c| c.kind() == "((");
                if arithmetic { self.arithmetic_command(node) } else { self.statements(node) }
            }
            "redirected_statement" => {
                for (field, child) in children(node) {
                    match (field, child.is_named()) {
                        (_, false) => {}
                        (Some("body"), true) => self.statement(child),
                        (_, true) => self.redirect(child),
                    }
                }
            }
            "command" => self.command(node),
            "declaration_command" | "unset_command" => self.declaration(node),
            "variable_assignment" => {
                self.assignment(node);
            }
            "variable_assignments" => {
                for (_, child) in children(node) {
                    if child.is_named() {
                        self.statement(child);
                    }
                }
            }
            "for_statement" => self.for_statement(node),
            "c_style_for_statement" => {
                self.hazard(Hazard::Arithmetic);
                for (field, child) in children(node) {
                    match field {
                        Some("body") => self.statement(child),
                        Some(_) if child.is_named() => self.arithmetic_node(child),
                        _ => {}
                    }
                }
            }
            "case_statement" => {
                for (field, child) in children(node) {
                    match field {
                        Some("value") => {
                            self.word(child);
                        }
                        _ if child.kind() == "case_item" => self.case_item(child),
                        _ => {}
                    }
                }
            }
            "test_command" => self.test_command(node),
            "function_definition" => {
                let name = node.child_by_field_name("name").map(|n| self.text(n).to_owned()).unwrap_or_default();
                self.hazard(Hazard::FunctionDefinition(name));
                for (field, child) in children(node) {
                    match field {
                        Some("body") => self.statement(child),
                        Some("redirect") => self.redirect(child),
                        _ => {}
                    }
                }
            }
            other => self.unparsable(format!("`{other}`")),
        }
    }

    /// `for NAME in WORDS` (or `select`): the words are brace-expanded; a variable that gets
    /// something else than known text (a file name from a glob, a substitution's output, the
    /// positional parameters, `select`'s input) holds data.
    fn for_statement(&mut self, node: Node) {
        let select = node.child(0).is_some_and(|c| c.kind() == "select");
        let mut values = 0;
        for (field, child) in children(node) {
            match field {
                Some("variable") => {
                    let name = self.text(child).to_owned();
                    self.assigned(&name);
                }
                Some("value") => {
                    values += 1;
                    for word in self.words(child) {
                        if !word.is_literal() || word.text.contains('[') {
                            self.data_in_variable(|| format!("the loop over `{}`", word.text));
                        }
                    }
                }
                Some("body") => self.statement(child),
                _ => {}
            }
        }
        if select {
            self.data_in_variable(|| "`select`, which reads its input".into());
        } else if values == 0 {
            self.data_in_variable(|| "a loop over the positional parameters".into());
        }
    }

    fn case_item(&mut self, node: Node) {
        for (field, child) in children(node) {
            match field {
                Some("value") => {
                    self.word(child);
                }
                Some(_) => {}
                None if child.is_named() => self.statement(child),
                None => {}
            }
        }
    }

    /// A simple command: prefix assignments, name, arguments, redirections.
    fn command(&mut self, node: Node) {
        let mut cmd = SimpleCommand::default();
        for (field, child) in children(node) {
            match field {
                Some("name") => {
                    let words = match child.named_child(0) {
                        Some(inner) if child.named_child_count() == 1 => self.words(inner),
                        _ => {
                            self.unparsable("a command name");
                            vec![Word::dynamic(self.text(child))]
                        }
                    };
                    cmd.words.extend(words);
                }
                Some("argument") => {
                    let words = self.words(child);
                    cmd.words.extend(words);
                }
                Some("redirect") => self.redirect(child),
                _ if child.kind() == "variable_assignment" => {
                    if let (Some(name), _) = self.assignment(child) {
                        cmd.assignments.push(name);
                    }
                }
                _ if child.is_named() => self.statement(child),
                _ => {}
            }
        }
        self.reserved_program(&cmd);
        self.finish(cmd);
    }

    /// A reserved word where the parser saw a program: the parse is not bash's.
    pub(super) fn reserved_program(&mut self, cmd: &SimpleCommand) {
        if let Some(word) = cmd.words.first().filter(|w| w.is_literal() && RESERVED_WORDS.contains(&w.text.as_str())) {
            let text = word.text.clone();
            self.unparsable(format!("the reserved word `{text}` as a command"));
        }
    }

    /// `export`/`declare`/`local`/`readonly`/`typeset`/`unset` and their operands, as a
    /// simple command whose assignments count like standalone ones.
    fn declaration(&mut self, node: Node) {
        let mut cmd = SimpleCommand::default();
        for (_, child) in children(node) {
            if !child.is_named() {
                if cmd.words.is_empty() {
                    cmd.words.push(Word::literal(self.text(child)));
                }
                continue;
            }
            match child.kind() {
                "variable_assignment" => {
                    let (name, value) = self.assignment(child);
                    let word = match (name, value.is_literal()) {
                        (Some(name), true) => Word::literal(format!("{name}={}", value.text)),
                        _ => Word::dynamic(self.text(child)),
                    };
                    cmd.words.push(word);
                }
                "variable_name" => cmd.words.push(Word::literal(self.text(child))),
                _ => {
                    let word = self.word(child);
                    cmd.words.push(word);
                }
            }
        }
        self.finish(cmd);
    }

    /// Check a command's program and assignments, look through wrappers, record it.
    pub(super) fn finish(&mut self, mut cmd: SimpleCommand) {
        self.check_command(&mut cmd, 0);
        self.out.commands.push(cmd);
    }

    /// The checks every command gets, including those wrappers run (`level` wrappers deep):
    /// its assignments, a literal program, what it runs if it is a wrapper, and the text it
    /// evaluates if it is a builtin that evaluates some (`let`, `read`, `printf -v`, …).
    pub(super) fn check_command(&mut self, cmd: &mut SimpleCommand, level: usize) {
        for name in cmd.assignments.clone() {
            self.assigned(&name);
        }
        match cmd.words.first() {
            None => {}
            Some(program) if program.kind != WordKind::Literal => {
                let text = program.text.clone();
                self.hazard(Hazard::DynamicProgram(text));
            }
            Some(_) => {
                wrappers::look_through(self, cmd, level);
                self.evaluating_builtin(cmd);
            }
        }
    }

    /// `NAME=value` (standalone, in front of a command, or in a declaration): walks the
    /// value, checks the name; returns the name and the value. A subscript in the name is
    /// evaluated as arithmetic; a value that is not known text (or holds a `[`) is data.
    fn assignment(&mut self, node: Node) -> (Option<String>, Word) {
        let name_node = node.child_by_field_name("name");
        let name = name_node.map(|n| self.text(n).to_owned());
        let mut value = Word::literal("");
        for (field, child) in children(node) {
            if field != Some("value") {
                continue;
            }
            value = self.word(child);
            // `$((…))` is a number, whatever it evaluates.
            let numeric = child.kind() == "arithmetic_expansion";
            if !numeric && (!value.is_literal() || value.text.contains('[')) {
                let text = self.text(node).to_owned();
                self.data_in_variable(|| format!("`{text}`"));
            }
        }
        if let Some(subscript) = name_node.filter(|n| n.kind() == "subscript") {
            // `a[i]=v`: the subscript is evaluated as arithmetic.
            self.hazard(Hazard::Arithmetic);
            if let Some(index) = subscript.child_by_field_name("index") {
                self.arithmetic_node(index);
            }
        }
        if let Some(name) = &name {
            self.assigned(name);
        }
        (name, value)
    }

    /// A compound array value `(a b [i]=c)`: its words walked and brace-expanded; an element
    /// with a subscript (`[i]=c`) has it evaluated; elements that are not known text are data.
    fn array(&mut self, node: Node) -> Word {
        for (_, child) in children(node) {
            if !child.is_named() {
                continue;
            }
            if self.text(child).starts_with('[') {
                let text = self.text(child).to_owned();
                self.hazard(Hazard::Evaluated(format!("the array subscript in `{text}`")));
            }
            for word in self.words(child) {
                if !word.is_literal() || word.text.contains('[') {
                    let text = self.text(node).to_owned();
                    self.data_in_variable(|| format!("the array `{text}`"));
                }
            }
        }
        Word::dynamic(self.text(node))
    }

    /// A variable is given a value: harmless names pass, names that change what runs make
    /// the line opaque, any other is an [`Hazard::Assignment`].
    pub(super) fn assigned(&mut self, name: &str) {
        let name = name.split('[').next().unwrap_or(name).trim_end_matches('+');
        if is_harmless_variable(name) {
            return;
        }
        if is_rebinding_variable(name) {
            self.hazard(Hazard::Rebinding(format!("assigns {name}")));
        } else {
            self.hazard(Hazard::Assignment(name.to_owned()));
        }
    }

    fn redirect(&mut self, node: Node) {
        match node.kind() {
            "file_redirect" => {
                let op = children(node)
                    .into_iter()
                    .find(|(field, c)| !c.is_named() && field.is_none())
                    .map(|(_, c)| c.kind())
                    .unwrap_or("");
                let targets: Vec<Word> = children(node)
                    .into_iter()
                    .filter(|(field, _)| *field == Some("destination"))
                    .map(|(_, c)| self.word(c))
                    .collect();
                for target in targets {
                    self.redirection(op, target);
                }
            }
            "heredoc_redirect" => {
                for (field, child) in children(node) {
                    if !child.is_named() {
                        continue;
                    }
                    match (field, child.kind()) {
                        (_, "heredoc_start" | "heredoc_end" | "file_descriptor") => {}
                        (_, "heredoc_body") => {
                            for (_, part) in children(child) {
                                if part.is_named() && part.kind() != "heredoc_content" {
                                    self.word(part);
                                }
                            }
                        }
                        (Some("redirect"), _) => self.redirect(child),
                        (Some("argument"), _) => {
                            self.word(child);
                        }
                        _ => self.statement(child),
                    }
                }
            }
            "herestring_redirect" => {
                for (_, child) in children(node) {
                    if child.is_named() && child.kind() != "file_descriptor" {
                        self.word(child);
                    }
                }
            }
            other => self.unparsable(format!("the redirection `{other}`")),
        }
    }

    /// One redirection operator and its target.
    fn redirection(&mut self, op: &str, target: Word) {
        let fd_target = target.is_literal() && (target.text == "-" || target.text.bytes().all(|b| b.is_ascii_digit()));
        let dev_null = target.is_literal() && target.text == "/dev/null";
        match op {
            "<" => self.out.reads.push(target),
            "<&" | ">&" | "<&-" | ">&-" if fd_target => {}
            ">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>" | "<&" if dev_null => {}
            ">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>" | "<&" => {
                self.hazard(Hazard::WriteRedirect(target.text));
            }
            other => self.unparsable(format!("the redirection operator `{other}`")),
        }
    }

    /// A word: quotes removed, substitutions walked, its [`WordKind`].
    pub(super) fn word(&mut self, node: Node) -> Word {
        let raw = self.text(node);
        match node.kind() {
            "word" => {
                let Some((text, kind)) = word::unquoted(raw) else {
                    self.unparsable("blanks inside a word, where bash would split it");
                    return Word::dynamic(raw);
                };
                let kind = if word::has_brace_expansion(raw) { kind.max(WordKind::Pattern) } else { kind };
                Word { text, kind }
            }
            "number" | "variable_name" | "regex" if node.named_child_count() == 0 => Word::literal(raw),
            "number" => {
                for (_, child) in children(node) {
                    if child.is_named() {
                        self.word(child);
                    }
                }
                Word::dynamic(raw)
            }
            "raw_string" => Word::literal(raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default()),
            "ansi_c_string" => match raw.get(2..raw.len().saturating_sub(1)).and_then(word::ansi_c) {
                Some(text) => Word::literal(text),
                None => Word::dynamic(raw),
            },
            "string" => self.double_quoted(node),
            "translated_string" => match node.named_child(0) {
                Some(inner) => self.double_quoted(inner),
                None => Word::dynamic(raw),
            },
            "concatenation" => {
                let mut out = Word::default();
                for (_, child) in children(node) {
                    let part = if child.is_named() { self.word(child) } else { Word::literal(self.text(child)) };
                    out.append(&part);
                }
                if word::has_brace_expansion(&unquoted_parts(self.src, node)) {
                    out.kind = out.kind.max(WordKind::Pattern);
                }
                out
            }
            "simple_expansion" => Word::dynamic(raw),
            "expansion" => {
                self.expansion(node);
                Word::dynamic(raw)
            }
            "command_substitution" => {
                self.hazard(Hazard::CommandSubstitution);
                for (field, child) in children(node) {
                    match (field, child.is_named()) {
                        (Some("redirect"), _) => self.redirect(child),
                        (_, true) => self.statement(child),
                        _ => {}
                    }
                }
                Word::dynamic(raw)
            }
            "process_substitution" => {
                self.hazard(Hazard::ProcessSubstitution);
                self.statements(node);
                Word::dynamic(raw)
            }
            "arithmetic_expansion" => {
                self.arithmetic(node);
                Word::dynamic(raw)
            }
            "brace_expression" | "extglob_pattern" => Word { text: raw.to_owned(), kind: WordKind::Pattern },
            "array" => self.array(node),
            other => {
                self.unparsable(format!("the word `{other}`"));
                Word::dynamic(raw)
            }
        }
    }

    /// `"…"`: literal text between the expansions, with double-quote escapes removed.
    fn double_quoted(&mut self, node: Node) -> Word {
        let range = node.byte_range();
        let (start, end) = (range.start + 1, range.end.saturating_sub(1).max(range.start + 1));
        let mut out = Word::default();
        let mut pos = start;
        for (_, child) in children(node) {
            if !child.is_named() {
                continue;
            }
            let r = child.byte_range();
            if r.start > pos {
                out.append(&Word::literal(word::double_quoted(&self.src[pos..r.start])));
            }
            let part = match child.kind() {
                "string_content" => Word::literal(word::double_quoted(self.text(child))),
                _ => self.word(child),
            };
            out.append(&part);
            pos = r.end;
        }
        if end > pos {
            out.append(&Word::literal(word::double_quoted(&self.src[pos..end])));
        }
        out
    }

    /// `${…}`: walks what is inside; operators that assign or evaluate are hazards. A
    /// subscript (`${a[i]}`) and the offset and length of `${x:offset:length}` are arithmetic.
    pub(super) fn expansion(&mut self, node: Node) {
        let mut substring = false;
        for (field, child) in children(node) {
            match (field, child.kind()) {
                (Some("operator"), ":=" | "=" | "@" | "!") => {
                    let text = self.text(node).to_owned();
                    self.hazard(Hazard::ExpansionSideEffect(text.clone()));
                    self.data_in_variable(|| format!("`{text}`"));
                }
                (Some("operator"), ":") => substring = true,
                (Some("operator"), _) => substring = false,
                (_, _) if substring && child.is_named() => self.arithmetic_node(child),
                (_, "subscript") => {
                    let index = child.child_by_field_name("index");
                    let numeric = index.is_some_and(|i| {
                        let t = self.text(i);
                        t == "@" || t == "*" || t.bytes().all(|b| b.is_ascii_digit())
                    });
                    match index {
                        Some(index) if !numeric => {
                            self.hazard(Hazard::Arithmetic);
                            self.arithmetic_node(index);
                        }
                        _ => {}
                    }
                }
                (_, "variable_name" | "special_variable_name") => {}
                (_, _) if child.is_named() => {
                    self.word(child);
                }
                _ => {}
            }
        }
    }
}

/// The unquoted source text of a concatenation's parts (quoted parts left out), where a
/// brace expansion would be seen by the shell.
fn unquoted_parts(src: &str, node: Node) -> String {
    let mut out = String::new();
    for (_, child) in children(node) {
        if matches!(child.kind(), "word" | "{" | "}") || !child.is_named() {
            out.push_str(&src[child.byte_range()]);
        } else {
            out.push('_');
        }
    }
    out
}

/// Names whose assignment changes which program runs or what the shell executes.
pub(super) fn is_rebinding_variable(name: &str) -> bool {
    super::REBINDING_VARIABLES.contains(&name)
        || ["LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG", "GIT_EXEC_PATH"].iter().any(|p| name.starts_with(p))
        || ["_COMMAND", "EDITOR", "PAGER", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS"]
            .iter()
            .any(|s| name.ends_with(s))
}
