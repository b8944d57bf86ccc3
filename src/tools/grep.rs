//! `Grep`: regex search over a tree with ripgrep's library crates (`grep-searcher`,
//! `grep-regex`, `ignore`, `globset`), with Claude Code's input schema.
//!
//! Output, paths absolute:
//! - `files_with_matches` (the default): one path per line, newest modification time first
//!   (ties in byte order of the paths), as Claude Code lists them;
//! - `content`: `path:line:text` for matching lines (`path:text` with `"-n": false`), context
//!   lines as `path-line-text`, `--` between groups that are not adjacent and between files
//!   when context is asked for; files in byte order of their paths, lines in file order;
//! - `count`: `path:N` (matching lines per file), in byte order of the paths.
//!
//! `head_limit` keeps the first N lines or entries (0 means no limit) and a note says how many
//! were left out. Options that do not apply to the chosen mode are ignored.

mod search;
#[cfg(test)]
mod tests;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::resolve;
use super::{Subject, Tool, ToolContext, ToolKind, ToolOutput, typed_call, walk};
use search::{Failure, Hits, Query};

/// The `Grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep {
    /// Walker threads; 0 means the machine's parallelism (see `walk::threads`).
    pub threads: usize,
}

/// What the search reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default, rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: OutputMode,
    #[serde(default, rename = "-i")]
    case_insensitive: bool,
    #[serde(default, rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(default, rename = "-A")]
    after: Option<usize>,
    #[serde(default, rename = "-B")]
    before: Option<usize>,
    #[serde(default, rename = "-C")]
    context: Option<usize>,
    #[serde(default)]
    head_limit: Option<usize>,
    #[serde(default)]
    multiline: bool,
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "Grep"
    }

    fn description(&self) -> &'static str {
        "Searches file contents for a regular expression (Rust regex syntax), using ripgrep's \
         search libraries in-process. Narrow the files with `glob` (e.g. \"*.rs\") or `type` \
         (e.g. \"rust\", \"py\"). `output_mode` picks what comes back: \"files_with_matches\" \
         (default; paths, newest first), \"content\" (path:line:text, with optional context \
         lines) or \"count\" (path:N). A match stays within one line unless `multiline` is \
         true. Skips what .gitignore excludes, hidden files and binary files."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to look for"},
                "path": {"type": "string", "description": "File or directory to search; the working directory when absent"},
                "glob": {"type": "string", "description": "Only search files whose path matches this glob, e.g. \"*.py\" or \"src/**/*.{ts,tsx}\"; a leading ! excludes"},
                "type": {"type": "string", "description": "Only search files of this type, by ripgrep's type names: rust, py, js, go, java, …"},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "What to return: matching lines (content), matching paths (files_with_matches, the default) or per-file match counts (count)"},
                "-i": {"type": "boolean", "description": "Ignore case"},
                "-n": {"type": "boolean", "description": "Prefix content lines with their line number (content mode; default true)"},
                "-A": {"type": "number", "description": "Lines of context after each match (content mode)"},
                "-B": {"type": "number", "description": "Lines of context before each match (content mode)"},
                "-C": {"type": "number", "description": "Lines of context on both sides of each match (content mode)"},
                "head_limit": {"type": "number", "description": "Keep only the first N output lines or entries; 0 or absent keeps all"},
                "multiline": {"type": "boolean", "description": "Let a match span lines (and `.` match a newline); default false"}
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
        typed_call("Grep", input, move |input: Input| grep(input, ctx, threads))
    }
}

async fn grep(input: Input, ctx: ToolContext, threads: usize) -> Result<ToolOutput, ToolOutput> {
    if input.pattern.is_empty() {
        return Err(ToolOutput::error("The pattern is empty."));
    }
    let root = resolve(&ctx, input.path.as_deref().unwrap_or("."), true)?;
    let query = Query {
        pattern: input.pattern,
        root,
        glob: input.glob.filter(|g| !g.is_empty()),
        file_type: input.file_type.filter(|t| !t.is_empty()),
        mode: input.output_mode,
        case_insensitive: input.case_insensitive,
        line_numbers: input.line_numbers.unwrap_or(true),
        before: input.before.or(input.context).unwrap_or(0),
        after: input.after.or(input.context).unwrap_or(0),
        multiline: input.multiline,
        head_limit: input.head_limit,
        threads,
        hidden: ctx.read_deny.clone(),
    };
    let cancel = ctx.cancel.clone();
    let hits = tokio::task::spawn_blocking(move || search::run(&query, &cancel).map(|h| render(&query, h)))
        .await
        .map_err(|e| ToolOutput::error(format!("Grep failed: {e}")))?;
    match hits {
        Ok(text) => Ok(ToolOutput::ok(text)),
        Err(Failure::Input(message)) => Err(ToolOutput::error(message)),
        Err(Failure::Cancelled) => Err(ToolOutput::error("Grep was cancelled.")),
    }
}

/// The text the model reads, in the mode's order, cut at `head_limit` with a note.
fn render(q: &Query, mut hits: Vec<Hits>) -> String {
    let limit = q.head_limit.filter(|&n| n > 0).unwrap_or(usize::MAX);
    let (lines, unit): (Vec<String>, &str) = match q.mode {
        OutputMode::FilesWithMatches => {
            let mut dated: Vec<_> = hits.into_iter().map(|h| (h.modified, h.path)).collect();
            walk::sort_newest_first(&mut dated, limit);
            (dated.into_iter().map(|(_, p)| p.display().to_string()).collect(), "files")
        }
        OutputMode::Count => {
            hits.sort_unstable_by(|a, b| walk::path_order(&a.path, &b.path));
            (hits.into_iter().map(|h| format!("{}:{}", h.path.display(), h.count)).collect(), "files")
        }
        OutputMode::Content => {
            hits.sort_unstable_by(|a, b| walk::path_order(&a.path, &b.path));
            let separate = q.before > 0 || q.after > 0;
            let mut lines = Vec::new();
            for h in hits {
                if separate && !lines.is_empty() {
                    lines.push("--".to_owned());
                }
                lines.extend(h.lines);
            }
            (lines, "lines")
        }
    };
    if lines.is_empty() {
        return if q.mode == OutputMode::FilesWithMatches { "No files found" } else { "No matches found" }.to_owned();
    }
    let total = lines.len();
    let mut out = lines.into_iter().take(limit).collect::<Vec<_>>().join("\n");
    if total > limit {
        out.push_str(&format!("\n({} more {unit} not shown; raise head_limit or narrow the search)", total - limit));
    }
    out
}
