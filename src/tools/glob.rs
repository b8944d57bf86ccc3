//! `Glob`: files whose path matches a glob pattern, newest first, with Claude Code's input
//! schema.
//!
//! The tree is walked with ripgrep's default filters (`.gitignore`, `.ignore`, hidden files
//! skipped; also outside git repositories). The pattern is matched against each file's path
//! relative to the searched directory, with `/` matched only literally: `*.rs` finds the files
//! at the top, `**/*.rs` those at any depth, `src/**/mod.rs` and `*.{js,ts}` work as in a shell.
//! Paths are printed absolute, one per line.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::resolve;
use super::{Subject, Tool, ToolContext, ToolKind, ToolOutput, typed_call, walk};

/// Files listed at most; the rest are counted in a note.
pub const MAX_RESULTS: usize = 100;

/// The `Glob` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob {
    /// Walker threads; 0 means the machine's parallelism (see `walk::threads`).
    pub threads: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "Glob"
    }

    fn description(&self) -> &'static str {
        "Lists files whose path matches a glob such as \"**/*.rs\" or \"src/**/mod.rs\", relative \
         to the searched directory (`*` stays within one directory level, `**` crosses them). \
         Answers with absolute paths, most recently modified first, at most 100 of them. \
         Skips what .gitignore excludes and hidden files."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob to match file paths against"},
                "path": {"type": "string", "description": "Directory to search; the working directory when absent"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ReadsFiles
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        // Searching with no path searches the working directory.
        Subject::path_field(input, "path", Some("."))
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let threads = self.threads;
        typed_call("Glob", input, move |input: Input| glob(input, ctx, threads))
    }
}

async fn glob(input: Input, ctx: ToolContext, threads: usize) -> Result<ToolOutput, ToolOutput> {
    let shown = input.path.as_deref().unwrap_or(".");
    let root = resolve(&ctx, shown, true)?;
    if !root.is_dir() {
        return Err(ToolOutput::error(format!("Path is not a directory: {shown}")));
    }
    let pattern = input.pattern.strip_prefix("./").unwrap_or(&input.pattern);
    if pattern.is_empty() {
        return Err(ToolOutput::error("The glob pattern is empty."));
    }
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolOutput::error(format!("Invalid glob pattern {pattern:?}: {e}")))?
        .compile_matcher();
    let absolute = Path::new(pattern).is_absolute();
    let cancel = ctx.cancel.clone();
    let hidden = ctx.read_deny.clone();
    let found = tokio::task::spawn_blocking(move || find(&root, &matcher, absolute, threads, &hidden, &cancel))
        .await
        .map_err(|e| ToolOutput::error(format!("Glob failed: {e}")))?
        .map_err(|walk::Cancelled| ToolOutput::error("Glob was cancelled."))?;
    Ok(ToolOutput::ok(render(found)))
}

/// Files under `root` whose relative path (absolute path when `absolute`) matches; the first
/// [`MAX_RESULTS`] are the newest, in order.
fn find(
    root: &Path,
    matcher: &GlobMatcher,
    absolute: bool,
    threads: usize,
    hidden: &std::sync::Arc<crate::permissions::ReadDeny>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<(SystemTime, PathBuf)>, walk::Cancelled> {
    let mut builder = walk::builder(root, threads);
    if !hidden.is_empty() {
        let hidden = hidden.clone();
        builder.filter_entry(move |e| !hidden.hides(e.path()));
    }
    let mut found = walk::collect(&builder, cancel, || {
        |entry: &ignore::DirEntry| {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return None;
            }
            let path = entry.path();
            let candidate = if absolute { path } else { walk::relative(root, path) };
            if !matcher.is_match(candidate) {
                return None;
            }
            let modified = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
            Some((modified, path.to_path_buf()))
        }
    })?;
    walk::sort_newest_first(&mut found, MAX_RESULTS);
    Ok(found)
}

/// The listing the model reads: at most [`MAX_RESULTS`] paths, then a note on the rest.
fn render(found: Vec<(SystemTime, PathBuf)>) -> String {
    if found.is_empty() {
        return "No files found".to_owned();
    }
    let total = found.len();
    let mut lines: Vec<String> = found.into_iter().take(MAX_RESULTS).map(|(_, p)| p.display().to_string()).collect();
    if total > MAX_RESULTS {
        lines.push(format!("({} more files not shown; narrow the pattern)", total - MAX_RESULTS));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::fixture;

    async fn call(cwd: &Path, input: Value) -> ToolOutput {
        Glob::default().call(input, ToolContext::new(cwd)).await
    }

    fn listing(root: &Path, rel: &[&str]) -> ToolOutput {
        ToolOutput::ok(rel.iter().map(|r| root.join(r).display().to_string()).collect::<Vec<_>>().join("\n"))
    }

    #[tokio::test]
    async fn matches_relative_paths_newest_first_skipping_ignored_and_hidden() {
        let (_dir, root) = fixture::tree();
        let all_rs = call(&root, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(all_rs, listing(&root, &["src/main.rs", "src/util/mod.rs", "src/lib.rs"]));
        let top = call(&root, json!({"pattern": "*.md"})).await;
        assert_eq!(top, listing(&root, &["README.md"]));
        assert_eq!(call(&root, json!({"pattern": "*.rs"})).await, ToolOutput::ok("No files found"));
        let mods = call(&root, json!({"pattern": "src/**/mod.rs"})).await;
        assert_eq!(mods, listing(&root, &["src/util/mod.rs"]));
        let web = call(&root, json!({"pattern": "web/*.{js,ts}"})).await;
        assert_eq!(web, listing(&root, &["web/app.ts", "web/app.js"]));
        // Glob does not look inside files: the binary assets/logo.bin is listed like the rest.
        let everything = call(&root, json!({"pattern": "**/*"})).await;
        let expected = [
            "assets/logo.bin",
            "scripts/build.py",
            "web/app.ts",
            "src/main.rs",
            "src/util/mod.rs",
            "src/lib.rs",
            "web/app.js",
            "README.md",
        ];
        assert_eq!(everything, listing(&root, &expected));
    }

    #[tokio::test]
    async fn searches_a_subdirectory_and_accepts_dot_slash_and_absolute_patterns() {
        let (_dir, root) = fixture::tree();
        let sub = call(&root, json!({"pattern": "*.rs", "path": "src"})).await;
        assert_eq!(sub, listing(&root, &["src/main.rs", "src/lib.rs"]));
        let dotted = call(&root, json!({"pattern": "./src/*.rs"})).await;
        assert_eq!(dotted, listing(&root, &["src/main.rs", "src/lib.rs"]));
        let abs = format!("{}/web/*.js", root.display());
        assert_eq!(call(&root, json!({"pattern": abs})).await, listing(&root, &["web/app.js"]));
    }

    #[tokio::test]
    async fn caps_the_listing_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for i in 0..105 {
            std::fs::write(root.join(format!("f{i:03}.txt")), "x").unwrap();
            let when = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i);
            std::fs::File::options()
                .write(true)
                .open(root.join(format!("f{i:03}.txt")))
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        let out = call(&root, json!({"pattern": "*.txt"})).await;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), 101);
        assert_eq!(lines[0], root.join("f104.txt").display().to_string());
        assert_eq!(lines[99], root.join("f005.txt").display().to_string());
        assert_eq!(lines[100], "(5 more files not shown; narrow the pattern)");
    }

    #[tokio::test]
    async fn refuses_bad_input_and_paths_outside() {
        let (_dir, root) = fixture::tree();
        let missing = call(&root, json!({})).await;
        assert!(missing.is_error && missing.content.contains("missing field `pattern`"), "{missing:?}");
        let wrong = call(&root, json!({"pattern": 3})).await;
        assert!(wrong.is_error && wrong.content.contains("invalid type: integer `3`, expected a string"), "{wrong:?}");
        let bad = call(&root, json!({"pattern": "src/[a"})).await;
        assert!(bad.is_error && bad.content.starts_with("Invalid glob pattern \"src/[a\": "), "{bad:?}");
        let outside = call(&root, json!({"pattern": "*", "path": ".."})).await;
        assert!(outside.is_error && outside.content.contains("outside the working directory"), "{outside:?}");
        let file = call(&root, json!({"pattern": "*", "path": "README.md"})).await;
        assert_eq!(file, ToolOutput::error("Path is not a directory: README.md"));
        let absent = call(&root, json!({"pattern": "*", "path": "nope"})).await;
        assert!(absent.is_error && absent.content.contains("does not exist"), "{absent:?}");
    }

    #[tokio::test]
    async fn a_cancelled_call_says_so() {
        let (_dir, root) = fixture::tree();
        let ctx = ToolContext::new(&root);
        ctx.cancel.cancel();
        let out = Glob::default().call(json!({"pattern": "**/*"}), ctx).await;
        assert_eq!(out, ToolOutput::error("Glob was cancelled."));
    }
}
