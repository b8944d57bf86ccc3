//! The search behind `Grep`: a regex matcher and a searcher from ripgrep's library crates,
//! run over a parallel gitignore-aware walk, one `Searcher` per walker thread.
//!
//! Binary files (a NUL byte seen before the search of the file ends) are skipped whole, like
//! ripgrep does for files it finds by walking.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::DirEntry;
use ignore::types::TypesBuilder;
use tokio_util::sync::CancellationToken;

use super::OutputMode;
use crate::tools::read::MAX_LINE_CHARS;
use crate::tools::walk;

/// What to search for and how to report it.
#[derive(Debug, Clone)]
pub(super) struct Query {
    pub(super) pattern: String,
    pub(super) root: PathBuf,
    pub(super) glob: Option<String>,
    pub(super) file_type: Option<String>,
    pub(super) mode: OutputMode,
    pub(super) case_insensitive: bool,
    pub(super) line_numbers: bool,
    pub(super) before: usize,
    pub(super) after: usize,
    pub(super) multiline: bool,
    pub(super) head_limit: Option<usize>,
    pub(super) threads: usize,
    /// Paths `Read(…)` deny rules hide: skipped as if absent.
    pub(super) hidden: std::sync::Arc<crate::permissions::ReadDeny>,
}

/// What one file contributed.
#[derive(Debug)]
pub(super) struct Hits {
    /// The file's path (absolute when the root is).
    pub(super) path: PathBuf,
    /// Content mode: output lines (`path:n:text`, `path-n-text` context, `--` breaks).
    pub(super) lines: Vec<String>,
    /// Matching lines (at least 1; exactly 1 in files_with_matches mode, which stops there).
    pub(super) count: u64,
    /// Modification time, read (on the walker's thread) in files_with_matches mode only.
    pub(super) modified: SystemTime,
}

/// Why a search did not run to the end.
#[derive(Debug)]
pub(super) enum Failure {
    /// Bad input: the message names the regex, glob or type error.
    Input(String),
    /// The call was cancelled.
    Cancelled,
}

/// Search the tree of `q.root` (or the single file it names); hits in no particular order.
pub(super) fn run(q: &Query, cancel: &CancellationToken) -> Result<Vec<Hits>, Failure> {
    let matcher = matcher(q)?;
    let mut builder = walk::builder(&q.root, q.threads);
    if let Some(name) = &q.file_type {
        let types = TypesBuilder::new()
            .add_defaults()
            .select(name)
            .build()
            .map_err(|e| Failure::Input(format!("Invalid type {name:?}: {e}")))?;
        builder.types(types);
    }
    // The `ignore` crate lets a type match un-hide a hidden file; keep hidden files out anyway.
    let glob = q.glob.as_deref().map(PathGlob::new).transpose()?;
    let root = q.root.clone();
    let hidden = q.hidden.clone();
    builder.filter_entry(move |e| {
        !e.file_name().as_encoded_bytes().starts_with(b".")
            && glob.as_ref().is_none_or(|g| g.allows(&root, e))
            && !hidden.hides(e.path())
    });
    let searcher = searcher(q);
    walk::collect(&builder, cancel, || {
        let mut searcher = searcher.clone();
        let matcher = matcher.clone();
        move |entry: &DirEntry| {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return None;
            }
            let mut sink = Collect::new(q, entry.path());
            searcher.search_path(&matcher, entry.path(), &mut sink).ok()?;
            let mut hits = sink.finish()?;
            if q.mode == OutputMode::FilesWithMatches {
                hits.modified = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
            }
            Some(hits)
        }
    })
    .map_err(|walk::Cancelled| Failure::Cancelled)
}

/// The regex matcher: line-oriented (ripgrep's fast path) unless `multiline`, where `.` also
/// matches a newline. `^`/`$` match at line boundaries in both.
fn matcher(q: &Query) -> Result<RegexMatcher, Failure> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(q.case_insensitive).multi_line(true);
    if q.multiline {
        b.dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(&q.pattern).map_err(|e| Failure::Input(format!("Invalid regex {:?}: {e}", q.pattern)))
}

/// The searcher every walker thread clones: binary files quit, context and line numbers only
/// where the output shows them.
fn searcher(q: &Query) -> Searcher {
    let content = q.mode == OutputMode::Content;
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .multi_line(q.multiline)
        .line_number(content && q.line_numbers)
        .before_context(if content { q.before } else { 0 })
        .after_context(if content { q.after } else { 0 })
        .build()
}

/// The `glob` filter, with ripgrep's `--glob` meaning: a pattern without `/` matches a file's
/// name at any depth, one with `/` its path relative to the root; a leading `!` excludes what
/// matches (directories included) instead of keeping only it.
struct PathGlob {
    matcher: GlobMatcher,
    by_name: bool,
    exclude: bool,
}

impl PathGlob {
    fn new(glob: &str) -> Result<Self, Failure> {
        let (exclude, pattern) = match glob.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, glob),
        };
        let pattern = pattern.strip_prefix('/').or_else(|| pattern.strip_prefix("./")).unwrap_or(pattern);
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| Failure::Input(format!("Invalid glob {glob:?}: {e}")))?
            .compile_matcher();
        Ok(PathGlob { matcher, by_name: !pattern.contains('/'), exclude })
    }

    fn allows(&self, root: &Path, entry: &DirEntry) -> bool {
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let hit = if self.by_name {
            self.matcher.is_match(entry.file_name())
        } else {
            self.matcher.is_match(walk::relative(root, entry.path()))
        };
        if self.exclude { !hit } else { hit || is_dir }
    }
}

/// Collects one file's hits; binary data discards them.
struct Collect<'q> {
    q: &'q Query,
    path: &'q Path,
    shown: String,
    lines: Vec<String>,
    count: u64,
    binary: bool,
}

impl<'q> Collect<'q> {
    fn new(q: &'q Query, path: &'q Path) -> Self {
        Collect { q, path, shown: String::new(), lines: Vec::new(), count: 0, binary: false }
    }

    fn push(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) {
        if self.shown.is_empty() {
            self.shown = self.path.display().to_string();
        }
        let text = String::from_utf8_lossy(trim_terminator(bytes));
        let mut line = match number {
            Some(n) => format!("{}{sep}{n}{sep}", self.shown),
            None => format!("{}{sep}", self.shown),
        };
        match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                line.push_str(&text[..cut]);
                line.push_str("… [line truncated]");
            }
            None => line.push_str(&text),
        }
        self.lines.push(line);
    }

    fn finish(self) -> Option<Hits> {
        (self.count > 0 && !self.binary).then(|| Hits {
            path: self.path.to_path_buf(),
            lines: self.lines,
            count: self.count,
            modified: SystemTime::UNIX_EPOCH,
        })
    }
}

fn trim_terminator(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> io::Result<bool> {
        match self.q.mode {
            OutputMode::FilesWithMatches => {
                self.count = 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.count += if self.q.multiline { m.lines().count() as u64 } else { 1 };
                Ok(true)
            }
            OutputMode::Content => {
                let first = m.line_number();
                for (i, line) in m.lines().enumerate() {
                    self.count += 1;
                    self.push(':', first.map(|n| n + i as u64), line);
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> io::Result<bool> {
        self.push('-', c.line_number(), c.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> io::Result<bool> {
        self.lines.push("--".to_owned());
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}
