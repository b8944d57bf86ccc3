//! `Grep` on the shared fixture tree: every output mode and flag, filters, limits and refusals,
//! each with its exact output.

use std::path::Path;

use serde_json::{Value, json};

use super::Grep;
use crate::tools::{Tool, ToolContext, ToolOutput, fixture};

async fn call(cwd: &Path, input: Value) -> ToolOutput {
    Grep::default().call(input, ToolContext::new(cwd)).await
}

/// Expected output: each entry is a path relative to `root` and the text that follows it
/// (`"--"` alone stands for a group separator).
fn out(root: &Path, entries: &[(&str, &str)]) -> ToolOutput {
    let lines: Vec<String> = entries
        .iter()
        .map(|(rel, rest)| if *rel == "--" { "--".to_owned() } else { format!("{}{rest}", root.join(rel).display()) })
        .collect();
    ToolOutput::ok(lines.join("\n"))
}

#[tokio::test]
async fn files_with_matches_newest_first_skipping_ignored_hidden_and_binary() {
    let (_dir, root) = fixture::tree();
    let files = call(&root, json!({"pattern": "TODO"})).await;
    let expected = [("scripts/build.py", ""), ("src/main.rs", ""), ("src/util/mod.rs", ""), ("web/app.js", "")];
    assert_eq!(files, out(&root, &expected));
    let insensitive = call(&root, json!({"pattern": "todo", "-i": true, "output_mode": "files_with_matches"})).await;
    let mut with_readme = expected.to_vec();
    with_readme.push(("README.md", ""));
    assert_eq!(insensitive, out(&root, &with_readme));
    assert_eq!(call(&root, json!({"pattern": "todo"})).await, out(&root, &[("README.md", "")]));
    assert_eq!(call(&root, json!({"pattern": "binary"})).await, ToolOutput::ok("No files found"));
    let explicit_binary = call(&root, json!({"pattern": "TODO", "path": "assets/logo.bin"})).await;
    assert_eq!(explicit_binary, ToolOutput::ok("No files found"));
}

#[tokio::test]
async fn content_mode_prints_numbered_lines_in_path_order() {
    let (_dir, root) = fixture::tree();
    let content = call(&root, json!({"pattern": "TODO", "output_mode": "content"})).await;
    let expected = [
        ("scripts/build.py", ":2:    print('TODO')"),
        ("src/main.rs", ":3:    // TODO: greet"),
        ("src/util/mod.rs", ":1:// TODO: more helpers"),
        ("web/app.js", ":2:  return 1; // TODO"),
    ];
    assert_eq!(content, out(&root, &expected));
    let plain = call(&root, json!({"pattern": "TODO:", "output_mode": "content", "-n": false})).await;
    assert_eq!(
        plain,
        out(&root, &[("src/main.rs", ":    // TODO: greet"), ("src/util/mod.rs", ":// TODO: more helpers")])
    );
    let none = call(&root, json!({"pattern": "nowhere to be found", "output_mode": "content"})).await;
    assert_eq!(none, ToolOutput::ok("No matches found"));
}

#[tokio::test]
async fn count_mode_counts_matching_lines_per_file() {
    let (_dir, root) = fixture::tree();
    let count = call(&root, json!({"pattern": "a", "output_mode": "count", "type": "rust"})).await;
    assert_eq!(count, out(&root, &[("src/lib.rs", ":2"), ("src/main.rs", ":1"), ("src/util/mod.rs", ":1")]));
    let none = call(&root, json!({"pattern": "zzz", "output_mode": "count"})).await;
    assert_eq!(none, ToolOutput::ok("No matches found"));
}

#[tokio::test]
async fn context_lines_and_group_separators() {
    let (_dir, root) = fixture::tree();
    let around = call(&root, json!({"pattern": "println", "output_mode": "content", "-C": 1})).await;
    let expected = [
        ("src/main.rs", "-1-fn main() {"),
        ("src/main.rs", ":2:    println!(\"hello\");"),
        ("src/main.rs", "-3-    // TODO: greet"),
    ];
    assert_eq!(around, out(&root, &expected));
    let after = call(&root, json!({"pattern": "TODO", "output_mode": "content", "type": "rust", "-A": 1})).await;
    let expected = [
        ("src/main.rs", ":3:    // TODO: greet"),
        ("src/main.rs", "-4-}"),
        ("--", ""),
        ("src/util/mod.rs", ":1:// TODO: more helpers"),
        ("src/util/mod.rs", "-2-pub fn helper() -> &'static str {"),
    ];
    assert_eq!(after, out(&root, &expected));
    let gap = call(&root, json!({"pattern": "pub mod|a \\+ b", "output_mode": "content", "-A": 1, "-B": 0})).await;
    let expected = [
        ("src/lib.rs", ":1:pub mod util;"),
        ("src/lib.rs", "-2-"),
        ("--", ""),
        ("src/lib.rs", ":4:    a + b"),
        ("src/lib.rs", "-5-}"),
    ];
    assert_eq!(gap, out(&root, &expected));
    let before = call(&root, json!({"pattern": "a \\+ b", "output_mode": "content", "-B": 2, "-C": 9})).await;
    let expected = [("src/lib.rs", "-2-"), ("src/lib.rs", "-3-pub fn add(a: i32, b: i32) -> i32 {")];
    let mut expected = expected.to_vec();
    expected.extend([("src/lib.rs", ":4:    a + b"), ("src/lib.rs", "-5-}")]);
    assert_eq!(before, out(&root, &expected));
}

#[tokio::test]
async fn head_limit_cuts_every_mode_with_a_note() {
    let (_dir, root) = fixture::tree();
    let files = call(&root, json!({"pattern": "TODO", "head_limit": 2})).await;
    let note = "\n(2 more files not shown; raise head_limit or narrow the search)";
    let head = out(&root, &[("scripts/build.py", ""), ("src/main.rs", "")]).content;
    assert_eq!(files, ToolOutput::ok(format!("{head}{note}")));
    let lines = call(&root, json!({"pattern": "TODO", "output_mode": "content", "head_limit": 1})).await;
    let head = out(&root, &[("scripts/build.py", ":2:    print('TODO')")]).content;
    assert_eq!(
        lines,
        ToolOutput::ok(format!("{head}\n(3 more lines not shown; raise head_limit or narrow the search)"))
    );
    let count = call(&root, json!({"pattern": "TODO", "output_mode": "count", "head_limit": 3})).await;
    let head = out(&root, &[("scripts/build.py", ":1"), ("src/main.rs", ":1"), ("src/util/mod.rs", ":1")]).content;
    assert_eq!(
        count,
        ToolOutput::ok(format!("{head}\n(1 more files not shown; raise head_limit or narrow the search)"))
    );
    let unlimited = call(&root, json!({"pattern": "TODO", "output_mode": "count", "head_limit": 0})).await;
    assert_eq!(unlimited.content.lines().count(), 4);
    let roomy = call(&root, json!({"pattern": "TODO", "head_limit": 10})).await;
    assert_eq!(roomy.content.lines().count(), 4);
}

#[tokio::test]
async fn glob_and_type_filters() {
    let (_dir, root) = fixture::tree();
    let by_name = call(&root, json!({"pattern": "TODO", "glob": "*.{js,py}"})).await;
    assert_eq!(by_name, out(&root, &[("scripts/build.py", ""), ("web/app.js", "")]));
    let by_path = call(&root, json!({"pattern": "TODO", "glob": "src/**/*.rs"})).await;
    assert_eq!(by_path, out(&root, &[("src/main.rs", ""), ("src/util/mod.rs", "")]));
    let excluded = call(&root, json!({"pattern": "TODO", "glob": "!src"})).await;
    assert_eq!(excluded, out(&root, &[("scripts/build.py", ""), ("web/app.js", "")]));
    let python = call(&root, json!({"pattern": "TODO", "type": "py"})).await;
    assert_eq!(python, out(&root, &[("scripts/build.py", "")]));
    let both = call(&root, json!({"pattern": "main", "type": "js", "glob": "web/*"})).await;
    assert_eq!(both, out(&root, &[("web/app.js", "")]));
    let in_dir = call(&root, json!({"pattern": "TODO", "path": "src", "type": "rust"})).await;
    assert_eq!(in_dir, out(&root, &[("src/main.rs", ""), ("src/util/mod.rs", "")]));
    // An explicit file is searched whatever the filters say, as with rg.
    let file =
        call(&root, json!({"pattern": "hello", "path": "src/main.rs", "type": "py", "output_mode": "content"})).await;
    assert_eq!(file, out(&root, &[("src/main.rs", ":2:    println!(\"hello\");")]));
}

#[tokio::test]
async fn multiline_spans_lines_and_dot_matches_newline() {
    let (_dir, root) = fixture::tree();
    let span =
        call(&root, json!({"pattern": "fn main\\(\\) \\{\\n\\s+println", "multiline": true, "output_mode": "content"}))
            .await;
    assert_eq!(span, out(&root, &[("src/main.rs", ":1:fn main() {"), ("src/main.rs", ":2:    println!(\"hello\");")]));
    let dot = call(&root, json!({"pattern": "helpers.pub", "multiline": true, "output_mode": "count"})).await;
    assert_eq!(dot, out(&root, &[("src/util/mod.rs", ":2")]));
    let single = call(&root, json!({"pattern": "helpers.pub"})).await;
    assert_eq!(single, ToolOutput::ok("No files found"));
    let newline = call(&root, json!({"pattern": "\\{\\n"})).await;
    assert!(newline.is_error && newline.content.starts_with("Invalid regex \"\\\\{\\\\n\": "), "{newline:?}");
}

#[tokio::test]
async fn refuses_bad_input() {
    let (_dir, root) = fixture::tree();
    let missing = call(&root, json!({"output_mode": "content"})).await;
    assert!(missing.is_error && missing.content.contains("missing field `pattern`"), "{missing:?}");
    let wrong = call(&root, json!({"pattern": "x", "-i": "yes"})).await;
    assert!(wrong.is_error && wrong.content.contains("invalid type: string \"yes\", expected a boolean"), "{wrong:?}");
    let mode = call(&root, json!({"pattern": "x", "output_mode": "lines"})).await;
    assert!(mode.is_error && mode.content.contains("unknown variant `lines`"), "{mode:?}");
    let negative = call(&root, json!({"pattern": "x", "head_limit": -1})).await;
    assert!(negative.is_error && negative.content.contains("invalid value: integer `-1`"), "{negative:?}");
    let unknown = call(&root, json!({"pattern": "x", "-w": true})).await;
    assert!(unknown.is_error && unknown.content.contains("unknown field `-w`"), "{unknown:?}");
    let regex = call(&root, json!({"pattern": "fn ("})).await;
    assert!(regex.is_error && regex.content.starts_with("Invalid regex \"fn (\": "), "{regex:?}");
    assert!(regex.content.contains("unclosed group"), "{regex:?}");
    let kind = call(&root, json!({"pattern": "x", "type": "nosuchtype"})).await;
    assert_eq!(kind, ToolOutput::error("Invalid type \"nosuchtype\": unrecognized file type: nosuchtype"));
    let glob = call(&root, json!({"pattern": "x", "glob": "src/[a"})).await;
    assert!(glob.is_error && glob.content.starts_with("Invalid glob \"src/[a\": "), "{glob:?}");
    assert_eq!(call(&root, json!({"pattern": ""})).await, ToolOutput::error("The pattern is empty."));
}

#[tokio::test]
async fn refuses_paths_outside_and_reports_cancellation() {
    let (_dir, root) = fixture::tree();
    let outside = call(&root.join("src"), json!({"pattern": "x", "path": "../web"})).await;
    assert!(outside.is_error && outside.content.contains("outside the working directory"), "{outside:?}");
    let absent = call(&root, json!({"pattern": "x", "path": "nope"})).await;
    assert!(absent.is_error && absent.content.contains("does not exist"), "{absent:?}");
    let ctx = ToolContext::new(&root);
    ctx.cancel.cancel();
    assert_eq!(Grep::default().call(json!({"pattern": "x"}), ctx).await, ToolOutput::error("Grep was cancelled."));
}

#[tokio::test]
async fn one_thread_and_many_threads_agree() {
    let (_dir, root) = fixture::tree();
    for mode in ["content", "files_with_matches", "count"] {
        let input = json!({"pattern": "[a-z]+", "output_mode": mode, "-C": 1});
        let one = Grep { threads: 1 }.call(input.clone(), ToolContext::new(&root)).await;
        let four = Grep { threads: 4 }.call(input, ToolContext::new(&root)).await;
        assert_eq!(one, four);
        assert!(!one.is_error);
    }
}

#[test]
fn schema_names_claude_codes_fields() {
    let schema = Grep::default().input_schema();
    let mut names: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    names.sort_unstable();
    let expected =
        ["-A", "-B", "-C", "-i", "-n", "glob", "head_limit", "multiline", "output_mode", "path", "pattern", "type"];
    assert_eq!(names, expected);
    assert_eq!(schema["required"], json!(["pattern"]));
}
