//! `Write`: create a file or replace its whole content, with Claude Code's input schema.
//! An existing file is only overwritten when this run has read it and it is unchanged on
//! disk since (see [`super::fresh`]).

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{resolve, write_no_follow};
use super::{Subject, Tool, ToolContext, ToolKind, ToolOutput, fresh, typed_call};

/// The `Write` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Write;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    file_path: String,
    content: String,
}

impl Tool for Write {
    fn name(&self) -> &'static str {
        "Write"
    }

    fn description(&self) -> &'static str {
        "Writes a file to the local filesystem, replacing it if it exists. Missing parent \
         directories are created. An existing file must have been read with the Read tool in \
         this conversation first, and must not have changed on disk since; otherwise the write \
         is refused. Prefer the Edit tool for changing part of an existing file: it sends only \
         the change. Never create documentation files unless asked to."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path of the file to write (absolute, or relative to the working directory)"},
                "content": {"type": "string", "description": "The content to write to the file"}
            },
            "required": ["file_path", "content"],
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
        typed_call("Write", input, move |input: Input| async move { write(input, &ctx).await })
    }
}

async fn write(input: Input, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let shown = &input.file_path;
    let path = resolve(ctx, shown, false)?;
    let existed = match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolOutput::error(format!("{shown} is a directory; Write needs a file path.")));
        }
        Ok(meta) => {
            // A call run a second time (a resumed or replayed run) finds its content written:
            // say so and write nothing (so the file need not have been read).
            if meta.len() == input.content.len() as u64
                && tokio::fs::read(&path).await.is_ok_and(|bytes| bytes == input.content.as_bytes())
            {
                return Ok(ToolOutput::ok(format!("{shown} already has this content: nothing was written.")));
            }
            fresh::check(ctx, &path, shown, meta.modified().ok())?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(ToolOutput::error(format!("Cannot write {shown}: {e}"))),
    };
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| ToolOutput::error(format!("Cannot create the directory for {shown}: {e}")))?;
    }
    write_no_follow(&path, input.content.as_bytes())
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot write {shown}: {e}")))?;
    let modified = tokio::fs::metadata(&path).await.ok().and_then(|m| m.modified().ok());
    fresh::record(ctx, path, modified);
    let verb = if existed { "Updated" } else { "Created" };
    Ok(ToolOutput::ok(format!("{verb} file {shown} ({})", count_lines(&input.content))))
}

/// "1 line", "N lines": how many lines `text` has.
pub(crate) fn count_lines(text: &str) -> String {
    match text.lines().count() {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::read::Read;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, SystemTime};

    async fn call(ctx: &ToolContext, input: Value) -> ToolOutput {
        Write.call(input, ctx.clone()).await
    }

    #[tokio::test]
    async fn creates_files_and_parent_directories() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = call(&ctx, json!({"file_path": "a/b/new.txt", "content": "one\ntwo\n"})).await;
        assert_eq!(out, ToolOutput::ok("Created file a/b/new.txt (2 lines)"));
        assert_eq!(std::fs::read_to_string(dir.path().join("a/b/new.txt")).unwrap(), "one\ntwo\n");
        // The write is recorded, so writing again needs no Read.
        let again = call(&ctx, json!({"file_path": "a/b/new.txt", "content": "three"})).await;
        assert_eq!(again, ToolOutput::ok("Updated file a/b/new.txt (1 line)"));
        assert_eq!(std::fs::read_to_string(dir.path().join("a/b/new.txt")).unwrap(), "three");
    }

    #[tokio::test]
    async fn a_write_already_made_is_reported_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("done.txt"), "same\n").unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = call(&ctx, json!({"file_path": "done.txt", "content": "same\n"})).await;
        assert_eq!(out, ToolOutput::ok("done.txt already has this content: nothing was written."));
        // Other content still needs the file read first.
        let other = call(&ctx, json!({"file_path": "done.txt", "content": "different\n"})).await;
        assert_eq!(other, ToolOutput::error("done.txt has not been read in this run. Read it first, then change it."));
    }

    #[tokio::test]
    async fn overwrites_only_files_read_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("old.txt");
        std::fs::write(&file, "before\n").unwrap();
        let ctx = ToolContext::new(dir.path());
        let blind = call(&ctx, json!({"file_path": "old.txt", "content": "x"})).await;
        assert_eq!(blind, ToolOutput::error("old.txt has not been read in this run. Read it first, then change it."));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "before\n");

        assert!(!Read.call(json!({"file_path": "old.txt"}), ctx.clone()).await.is_error);
        let later = SystemTime::now() + Duration::from_secs(60);
        std::fs::write(&file, "changed behind our back\n").unwrap();
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(later).unwrap();
        let stale = call(&ctx, json!({"file_path": "old.txt", "content": "x"})).await;
        assert_eq!(
            stale,
            ToolOutput::error(
                "old.txt has been modified on disk since it was read (by the user, a formatter or another process). \
                 Read it again, then change it."
            )
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed behind our back\n");

        assert!(!Read.call(json!({"file_path": "old.txt"}), ctx.clone()).await.is_error);
        let ok = call(&ctx, json!({"file_path": "old.txt", "content": "after\n"})).await;
        assert_eq!(ok, ToolOutput::ok("Updated file old.txt (1 line)"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "after\n");
    }

    #[tokio::test]
    async fn refuses_bad_input_directories_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ctx = ToolContext::new(dir.path());
        let missing = call(&ctx, json!({"file_path": "a.txt"})).await;
        assert_eq!(
            missing,
            ToolOutput::error(
                "<tool_use_error>InputValidationError: Write failed due to the following issue: \
                 missing field `content`</tool_use_error>"
            )
        );
        let wrong = call(&ctx, json!({"file_path": "a.txt", "content": 5})).await;
        assert!(wrong.is_error && wrong.content.contains("invalid type: integer `5`, expected a string"), "{wrong:?}");
        let sub = call(&ctx, json!({"file_path": "sub", "content": ""})).await;
        assert_eq!(sub, ToolOutput::error("sub is a directory; Write needs a file path."));
        let outside = call(&ctx, json!({"file_path": "../escape.txt", "content": ""})).await;
        assert!(outside.is_error && outside.content.contains("outside the working directory"), "{outside:?}");
        assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    }

    /// A working directory and a separate "outside" directory, both canonical.
    fn dirs() -> (tempfile::TempDir, PathBuf, tempfile::TempDir, PathBuf) {
        let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (root, out) = (inside.path().canonicalize().unwrap(), outside.path().canonicalize().unwrap());
        (inside, root, outside, out)
    }

    fn outside_error(shown: &str, resolved: &Path, root: &Path) -> ToolOutput {
        ToolOutput::error(format!(
            "Permission denied: {shown} resolves to {} which is outside the working directory {}",
            resolved.display(),
            root.display()
        ))
    }

    #[tokio::test]
    async fn a_dangling_symlink_to_the_outside_is_refused() {
        let (_i, root, _o, out) = dirs();
        std::os::unix::fs::symlink(out.join("x"), root.join("notes.md")).unwrap();
        let ctx = ToolContext::new(&root);
        let refused = call(&ctx, json!({"file_path": "notes.md", "content": "secret"})).await;
        assert_eq!(refused, outside_error("notes.md", &out.join("x"), &root));
        assert!(!out.join("x").exists());
        assert!(root.join("notes.md").symlink_metadata().unwrap().file_type().is_symlink());
    }

    #[tokio::test]
    async fn a_dangling_symlink_inside_creates_its_target() {
        let (_i, root, _o, _out) = dirs();
        std::os::unix::fs::symlink("drafts/notes.md", root.join("notes.md")).unwrap();
        let ctx = ToolContext::new(&root);
        let created = call(&ctx, json!({"file_path": "notes.md", "content": "hello\n"})).await;
        assert_eq!(created, ToolOutput::ok("Created file notes.md (1 line)"));
        assert_eq!(std::fs::read_to_string(root.join("drafts/notes.md")).unwrap(), "hello\n");
        assert!(root.join("notes.md").symlink_metadata().unwrap().file_type().is_symlink());
    }

    #[tokio::test]
    async fn a_symlinked_directory_to_the_outside_is_refused() {
        let (_i, root, _o, out) = dirs();
        std::os::unix::fs::symlink(&out, root.join("dir")).unwrap();
        let ctx = ToolContext::new(&root);
        let refused = call(&ctx, json!({"file_path": "dir/new.txt", "content": "x"})).await;
        assert_eq!(refused, outside_error("dir/new.txt", &out.join("new.txt"), &root));
        let deeper = call(&ctx, json!({"file_path": "dir/a/b.txt", "content": "x"})).await;
        assert_eq!(deeper, outside_error("dir/a/b.txt", &out.join("a/b.txt"), &root));
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_symlink_loop_is_an_error() {
        let (_i, root, _o, _out) = dirs();
        std::os::unix::fs::symlink("loop-b", root.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", root.join("loop-b")).unwrap();
        let ctx = ToolContext::new(&root);
        let out = call(&ctx, json!({"file_path": "loop-a", "content": "x"})).await;
        assert_eq!(out, ToolOutput::error("Cannot resolve loop-a: Too many levels of symbolic links (os error 40)"));
    }
}
