//! `[ … ]`, `[[ … ]]` and `(( … ))` as commands. Bash runs them like any command (`[` is the
//! `test` builtin), so they are listed among the line's commands — programs `[`, `[[` and
//! `((` — and an allow rule or the read-only proof must cover them like the `ls` beside them:
//! `[[ … ]]; ls` is two commands, not `ls`. The operands they evaluate are checked in
//! [`super::evaluate`].

use tree_sitter::Node;

use super::SimpleCommand;
use super::walk::{Walker, children};
use super::word::Word;

/// Operators of `[[ … ]]` whose operands are evaluated as arithmetic (in `[ … ]` they only
/// take integers).
const ARITHMETIC_TEST_OPERATORS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Operators of `[ … ]` and `[[ … ]]` whose operand is a variable name, subscript included.
const NAME_TEST_OPERATORS: &[&str] = &["-v", "-R"];

impl Walker<'_> {
    /// `[ … ]` or `[[ … ]]`: the command `[` or `[[` with its words in order (operators,
    /// operands, the closing bracket). Operands of `[ … ]` are brace-expanded, as for any
    /// command; those of `[[ … ]]` are not.
    pub(super) fn test_command(&mut self, node: Node) {
        let double = node.child(0).is_some_and(|c| c.kind() == "[[");
        let mut cmd = SimpleCommand::default();
        self.test_part(node, double, &mut cmd.words);
        self.finish(cmd);
    }

    fn test_part(&mut self, node: Node, double: bool, words: &mut Vec<Word>) {
        let operator = node.child_by_field_name("operator").map(|o| self.text(o));
        let arithmetic = node.kind() == "binary_expression"
            && double
            && operator.is_some_and(|op| ARITHMETIC_TEST_OPERATORS.contains(&op));
        let name = node.kind() == "unary_expression" && operator.is_some_and(|op| NAME_TEST_OPERATORS.contains(&op));
        if node.kind() == "binary_expression" && operator == Some("=~") {
            self.data_in_variable(|| "`=~`, which sets BASH_REMATCH".into());
        }
        for (_, child) in children(node) {
            match child.kind() {
                "binary_expression" | "unary_expression" | "parenthesized_expression" => {
                    self.test_part(child, double, words);
                }
                "redirected_statement" => self.statement(child),
                "test_operator" | "regex" => words.push(Word::literal(self.text(child))),
                _ if !child.is_named() => words.push(Word::literal(self.text(child))),
                _ => {
                    let operands = if double { vec![self.word(child)] } else { self.words(child) };
                    for operand in &operands {
                        if arithmetic {
                            self.evaluated(operand, true);
                        } else if name {
                            self.evaluated_name(operand);
                        }
                    }
                    words.extend(operands);
                }
            }
        }
    }

    /// `(( … ))`: the expression is walked as arithmetic, and the command `((` is listed with
    /// the expression as one word.
    pub(super) fn arithmetic_command(&mut self, node: Node) {
        self.arithmetic(node);
        let text = self.text(node);
        let inner = text.strip_prefix("((").and_then(|t| t.strip_suffix("))")).unwrap_or(text).trim();
        let words = vec![Word::literal("(("), Word::literal(inner), Word::literal("))")];
        self.finish(SimpleCommand { words, ..SimpleCommand::default() });
    }
}
