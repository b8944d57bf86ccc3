//! `Edit`: exact string replacement in a file, with Claude Code's input schema. The file must
//! have been read in this run and be unchanged on disk since (see [`super::fresh`]); the
//! answer is a short unified diff of the change.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::TextDiff;

use super::paths::{resolve, write_no_follow};
use super::{Subject, Tool, ToolContext, ToolKind, ToolOutput, fresh, typed_call};

/// Diff lines shown in the answer; the rest is summarised in one line.
pub const MAX_DIFF_LINES: usize = 200;

/// The `Edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edit;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "Edit"
    }

    fn description(&self) -> &'static str {
        "Performs an exact string replacement in a file. The file must have been read with the \
         Read tool in this conversation and must not have changed on disk since. old_string must \
         match the file exactly, including indentation (copy it from the text after the line \
         number and tab of Read's output, never the number itself). The edit fails when \
         old_string is not in the file, or occurs more than once and replace_all is not set: add \
         surrounding lines to make it unique, or set replace_all to change every occurrence (for \
         example to rename a variable). Answers with a unified diff of the change."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path of the file to modify (absolute, or relative to the working directory)"},
                "old_string": {"type": "string", "description": "The text to replace"},
                "new_string": {"type": "string", "description": "The text to replace it with (must be different from old_string)"},
                "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurrences of old_string (default false)"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::EditsFiles
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        Subject::path_field(input, "file_path", None)
    }

    fn attaches_memory(&self) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("Edit", input, move |input: Input| async move { edit(input, &ctx).await })
    }
}

async fn edit(input: Input, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let shown = &input.file_path;
    if input.old_string.is_empty() {
        return Err(ToolOutput::error("old_string is empty. Use Write to create a file or replace all of it."));
    }
    if input.old_string == input.new_string {
        return Err(ToolOutput::error("old_string and new_string are identical: there is nothing to change."));
    }
    let path = resolve(ctx, shown, true)?;
    let meta = tokio::fs::metadata(&path).await.map_err(|e| ToolOutput::error(format!("Cannot edit {shown}: {e}")))?;
    if meta.is_dir() {
        return Err(ToolOutput::error(format!("{shown} is a directory; Edit needs a file path.")));
    }
    let bytes = tokio::fs::read(&path).await.map_err(|e| ToolOutput::error(format!("Cannot edit {shown}: {e}")))?;
    let old = String::from_utf8(bytes)
        .map_err(|_| ToolOutput::error(format!("{shown} is not UTF-8 text; Edit only changes text files.")))?;
    // A call run a second time (a resumed or replayed run) finds its change made: say so and
    // write nothing, rather than fail on the missing old_string. Nothing is written, so the
    // file need not have been read.
    if already_applied(&old, &input) {
        return Ok(ToolOutput::ok(format!(
            "{shown} already has this change (old_string is not in it and new_string is): nothing was written."
        )));
    }
    fresh::check(ctx, &path, shown, meta.modified().ok())?;
    let new = replace(&old, &input, shown)?;
    write_no_follow(&path, new.as_bytes())
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot write {shown}: {e}")))?;
    let modified = tokio::fs::metadata(&path).await.ok().and_then(|m| m.modified().ok());
    fresh::record(ctx, path, modified);
    let count = if input.replace_all { old.matches(&input.old_string).count() } else { 1 };
    let noun = if count == 1 { "replacement" } else { "replacements" };
    Ok(ToolOutput::ok(format!("Edited {shown} ({count} {noun}):\n{}", diff(&old, &new, shown))))
}

/// Whether the edit's change is in `text` already: `old_string` is gone and `new_string`,
/// which is not empty (a deletion leaves no trace to find), is there.
fn already_applied(text: &str, input: &Input) -> bool {
    !input.new_string.is_empty() && !text.contains(&input.old_string) && text.contains(&input.new_string)
}

/// The text after the edit.
fn replace(old: &str, input: &Input, shown: &str) -> Result<String, ToolOutput> {
    match old.matches(&input.old_string).count() {
        0 => Err(ToolOutput::error(format!(
            "old_string not found in {shown}. It must match the file exactly, including whitespace; Read the file \
             again if unsure."
        ))),
        1 => Ok(old.replacen(&input.old_string, &input.new_string, 1)),
        _ if input.replace_all => Ok(old.replace(&input.old_string, &input.new_string)),
        n => Err(ToolOutput::error(format!(
            "found {n} matches of old_string in {shown}; add context to make it unique or set replace_all to change \
             every one."
        ))),
    }
}

/// A unified diff of `old` → `new` with three lines of context, cut at [`MAX_DIFF_LINES`].
pub fn diff(old: &str, new: &str, shown: &str) -> String {
    let text = TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(shown, shown).to_string();
    let total = text.lines().count();
    if total <= MAX_DIFF_LINES {
        return text;
    }
    let mut out: String = text.split_inclusive('\n').take(MAX_DIFF_LINES).collect();
    out.push_str(&format!("… ({} more diff lines)\n", total - MAX_DIFF_LINES));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::read::Read;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    /// A context in which `a.txt` (holding `text`) has been read.
    async fn read_file(dir: &Path, text: &str) -> ToolContext {
        std::fs::write(dir.join("a.txt"), text).unwrap();
        let ctx = ToolContext::new(dir);
        assert!(!Read.call(json!({"file_path": "a.txt"}), ctx.clone()).await.is_error);
        ctx
    }

    async fn call(ctx: &ToolContext, input: Value) -> ToolOutput {
        Edit.call(input, ctx.clone()).await
    }

    #[tokio::test]
    async fn replaces_one_occurrence_and_answers_with_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = read_file(dir.path(), "one\ntwo\nthree\n").await;
        let out = call(&ctx, json!({"file_path": "a.txt", "old_string": "two", "new_string": "TWO"})).await;
        let expected =
            "Edited a.txt (1 replacement):\n--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";
        assert_eq!(out, ToolOutput::ok(expected));
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\nTWO\nthree\n");
        // The new mtime was recorded: a second edit needs no new Read.
        let again = call(&ctx, json!({"file_path": "a.txt", "old_string": "one\n", "new_string": ""})).await;
        assert_eq!(
            again,
            ToolOutput::ok(
                "Edited a.txt (1 replacement):\n--- a.txt\n+++ a.txt\n@@ -1,3 +1,2 @@\n-one\n TWO\n three\n"
            )
        );
    }

    #[tokio::test]
    async fn an_edit_already_made_is_reported_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\nTWO\nthree\n").unwrap();
        // Not read in this run: no write happens, so none is needed.
        let ctx = ToolContext::new(dir.path());
        let modified = std::fs::metadata(dir.path().join("a.txt")).unwrap().modified().unwrap();
        let again = call(&ctx, json!({"file_path": "a.txt", "old_string": "two", "new_string": "TWO"})).await;
        assert_eq!(
            again,
            ToolOutput::ok(
                "a.txt already has this change (old_string is not in it and new_string is): nothing was written."
            )
        );
        assert_eq!(std::fs::metadata(dir.path().join("a.txt")).unwrap().modified().unwrap(), modified);
        // A deletion cannot be told apart from an edit never made: the usual error.
        let gone = call(&ctx, json!({"file_path": "a.txt", "old_string": "four\n", "new_string": ""})).await;
        assert!(gone.is_error);
        // Neither string there: the usual refusal (the file was not read).
        let neither = call(&ctx, json!({"file_path": "a.txt", "old_string": "five", "new_string": "six"})).await;
        assert_eq!(neither, ToolOutput::error("a.txt has not been read in this run. Read it first, then change it."));
    }

    #[tokio::test]
    async fn replace_all_changes_every_occurrence() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = read_file(dir.path(), "x = 1\ny = x\n").await;
        let input = json!({"file_path": "a.txt", "old_string": "x", "new_string": "z", "replace_all": true});
        let out = call(&ctx, input).await;
        let expected =
            "Edited a.txt (2 replacements):\n--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n-x = 1\n-y = x\n+z = 1\n+y = z\n";
        assert_eq!(out, ToolOutput::ok(expected));
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "z = 1\ny = z\n");
    }

    #[tokio::test]
    async fn refuses_missing_ambiguous_and_identical_strings() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = read_file(dir.path(), "a a\n").await;
        let missing = call(&ctx, json!({"file_path": "a.txt", "old_string": "b", "new_string": "c"})).await;
        assert_eq!(
            missing,
            ToolOutput::error(
                "old_string not found in a.txt. It must match the file exactly, including whitespace; Read the file \
                 again if unsure."
            )
        );
        let twice = call(&ctx, json!({"file_path": "a.txt", "old_string": "a", "new_string": "c"})).await;
        assert_eq!(
            twice,
            ToolOutput::error(
                "found 2 matches of old_string in a.txt; add context to make it unique or set replace_all to change \
                 every one."
            )
        );
        let same = call(&ctx, json!({"file_path": "a.txt", "old_string": "a", "new_string": "a"})).await;
        assert_eq!(same, ToolOutput::error("old_string and new_string are identical: there is nothing to change."));
        let empty = call(&ctx, json!({"file_path": "a.txt", "old_string": "", "new_string": "a"})).await;
        assert_eq!(empty, ToolOutput::error("old_string is empty. Use Write to create a file or replace all of it."));
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "a a\n");
    }

    #[tokio::test]
    async fn refuses_unread_and_stale_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
        let ctx = read_file(dir.path(), "a\n").await;
        let unread = call(&ctx, json!({"file_path": "b.txt", "old_string": "b", "new_string": "c"})).await;
        assert_eq!(unread, ToolOutput::error("b.txt has not been read in this run. Read it first, then change it."));

        let file = dir.path().join("a.txt");
        std::fs::write(&file, "a changed\n").unwrap();
        let later = SystemTime::now() + Duration::from_secs(60);
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(later).unwrap();
        let stale = call(&ctx, json!({"file_path": "a.txt", "old_string": "a", "new_string": "c"})).await;
        assert_eq!(
            stale,
            ToolOutput::error(
                "a.txt has been modified on disk since it was read (by the user, a formatter or another process). \
                 Read it again, then change it."
            )
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a changed\n");
    }

    #[tokio::test]
    async fn refuses_bad_input_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = read_file(dir.path(), "a\n").await;
        let missing = call(&ctx, json!({"file_path": "a.txt", "old_string": "a"})).await;
        assert_eq!(
            missing,
            ToolOutput::error(
                "<tool_use_error>InputValidationError: Edit failed due to the following issue: \
                 missing field `new_string`</tool_use_error>"
            )
        );
        let wrong =
            call(&ctx, json!({"file_path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"}));
        let wrong = wrong.await;
        assert!(
            wrong.is_error && wrong.content.contains("invalid type: string \"yes\", expected a boolean"),
            "{wrong:?}"
        );
        let outside = call(&ctx, json!({"file_path": "/etc/hostname", "old_string": "a", "new_string": "b"})).await;
        assert!(outside.is_error && outside.content.contains("outside the working directory"), "{outside:?}");
        let absent = call(&ctx, json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"})).await;
        assert!(absent.is_error && absent.content.contains("does not exist"), "{absent:?}");
    }

    #[tokio::test]
    async fn a_symlink_to_the_outside_is_refused() {
        let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (root, out) = (inside.path().canonicalize().unwrap(), outside.path().canonicalize().unwrap());
        std::fs::write(out.join("x.txt"), "a\n").unwrap();
        std::os::unix::fs::symlink(out.join("x.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(out.join("missing.txt"), root.join("dangling.txt")).unwrap();
        let ctx = ToolContext::new(&root);
        let refused = call(&ctx, json!({"file_path": "link.txt", "old_string": "a", "new_string": "b"})).await;
        assert_eq!(
            refused,
            ToolOutput::error(format!(
                "Permission denied: link.txt resolves to {} which is outside the working directory {}",
                out.join("x.txt").display(),
                root.display()
            ))
        );
        assert_eq!(std::fs::read_to_string(out.join("x.txt")).unwrap(), "a\n");
        let dangling = call(&ctx, json!({"file_path": "dangling.txt", "old_string": "a", "new_string": "b"})).await;
        assert_eq!(
            dangling,
            ToolOutput::error(
                "File does not exist or cannot be opened: dangling.txt (No such file or directory (os error 2))"
            )
        );
        assert!(!out.join("missing.txt").exists());
    }

    #[test]
    fn long_diffs_are_cut() {
        let old: String = (0..300).map(|i| format!("{i}\n")).collect();
        let new = old.replace('\n', "!\n");
        let out = diff(&old, &new, "f");
        assert_eq!(out.lines().count(), MAX_DIFF_LINES + 1);
        // 2 header lines, 1 hunk line, 300 removed and 300 added: 603 in all.
        assert!(out.ends_with("… (403 more diff lines)\n"), "{out}");
    }
}
