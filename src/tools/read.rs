//! `Read`: a file's lines, numbered like `cat -n`, with Claude Code's input schema.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::resolve;
use super::{ReadRecord, Subject, Tool, ToolContext, ToolKind, ToolOutput, typed_call};

/// Lines returned when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2000;
/// Characters kept of one line; the rest is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes sniffed for NUL to decide that a file is binary.
const SNIFF_BYTES: usize = 8192;
/// Most bytes one call reads from a file (10 MiB). A longer file is read up to the last whole
/// line within the cap, and the result says where it stopped; `offset` and `limit` count lines
/// within that part.
pub const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

/// The `Read` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Read;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    file_path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for Read {
    fn name(&self) -> &'static str {
        "Read"
    }

    fn description(&self) -> &'static str {
        "Reads a file from the local filesystem. Returns its lines numbered like `cat -n` \
         (line number, tab, line). By default up to 2000 lines from the start; use offset \
         (1-based line number to start at) and limit (number of lines) for long files. \
         Lines longer than 2000 characters are cut. At most the first 10 MiB of a file are \
         read; for lines past that, use Grep or Bash. Binary files, directories and other \
         non-regular files (FIFOs, devices, sockets) are refused."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path of the file to read (absolute, or relative to the working directory)"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show, counting from 1 (for files too long to read whole)"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show (default 2000)"}
            },
            "required": ["file_path"],
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
        Subject::path_field(input, "file_path", None)
    }

    fn attaches_memory(&self) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("Read", input, move |input: Input| async move { read(input, &ctx).await })
    }
}

async fn read(input: Input, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    if input.offset == Some(0) || input.limit == Some(0) {
        return Err(ToolOutput::error("offset and limit start at 1"));
    }
    let path = resolve(ctx, &input.file_path, true)?;
    let meta = tokio::fs::metadata(&path)
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot read {}: {e}", input.file_path)))?;
    if meta.is_dir() {
        return Err(ToolOutput::error(format!(
            "{} is a directory, not a file. Use Glob or Bash `ls` to list it.",
            input.file_path
        )));
    }
    if !meta.is_file() {
        return Err(not_regular(&input.file_path, &meta));
    }
    let opened = path.clone();
    let shown = input.file_path.clone();
    let (meta, bytes, truncated) = tokio::task::spawn_blocking(move || read_capped(&opened, &shown))
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot read {}: {e}", input.file_path)))??;
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(ToolOutput::error(format!(
            "{} looks like a binary file ({} bytes); Read only shows text.",
            input.file_path,
            meta.len()
        )));
    }
    ctx.reads
        .lock()
        .expect("reads lock is never poisoned: no code panics while holding it")
        .insert(path, ReadRecord { modified: meta.modified().ok() });
    let text = String::from_utf8_lossy(&bytes);
    let mut out = number_lines(&text, input.offset.unwrap_or(1), input.limit.unwrap_or(DEFAULT_LIMIT));
    if truncated {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "… (the file is {} bytes; Read stops at {MAX_READ_BYTES} bytes (10 MiB), so only its first {} bytes \
             were read; use Grep or Bash `tail`/`sed -n` for the rest)\n",
            meta.len(),
            bytes.len()
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// The error for a path that is neither a regular file nor a directory.
fn not_regular(shown: &str, meta: &std::fs::Metadata) -> ToolOutput {
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    let kind = if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    ToolOutput::error(format!("{shown} is {kind}, not a regular file; Read only reads regular files."))
}

/// Open `path` without blocking (a FIFO swapped in after the metadata check must not hang
/// the open), check again on the open file that it is a regular file, and read at most
/// [`MAX_READ_BYTES`]. When the file is longer, the bytes are cut back to the last whole line
/// and the flag is set.
fn read_capped(path: &std::path::Path, shown: &str) -> Result<(std::fs::Metadata, Vec<u8>, bool), ToolOutput> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| ToolOutput::error(format!("Cannot read {shown}: {e}"));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_regular(shown, &meta));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(MAX_READ_BYTES + 1)).unwrap_or(0));
    file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
    let truncated = bytes.len() as u64 > MAX_READ_BYTES;
    if truncated {
        let cap = usize::try_from(MAX_READ_BYTES).unwrap_or(usize::MAX);
        let keep = memchr::memrchr(b'\n', &bytes[..cap]).map_or(cap, |i| i + 1);
        bytes.truncate(keep);
    }
    Ok((meta, bytes, truncated))
}

/// Number the lines `offset..offset+limit` (1-based) of `text` like `cat -n`.
pub fn number_lines(text: &str, offset: usize, limit: usize) -> String {
    if text.is_empty() {
        return "(the file exists but is empty)".to_owned();
    }
    let total = text.lines().count();
    if offset > total {
        return format!("(the file has {total} lines; offset {offset} is past the end)");
    }
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{:>6}\t", i + 1));
        match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                out.push_str(&line[..cut]);
                out.push_str("… [line truncated]");
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    let shown_end = (offset - 1 + limit).min(total);
    if shown_end < total {
        out.push_str(&format!("… ({} more lines; use offset {} to read on)\n", total - shown_end, shown_end + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    async fn call(dir: &Path, input: Value) -> ToolOutput {
        Read.call(input, ToolContext::new(dir)).await
    }

    #[tokio::test]
    async fn numbers_lines_with_offset_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let out = call(dir.path(), json!({"file_path": "a.txt"})).await;
        assert_eq!(out, ToolOutput::ok("     1\tone\n     2\ttwo\n     3\tthree\n"));
        let out = call(dir.path(), json!({"file_path": "a.txt", "offset": 2, "limit": 1})).await;
        assert_eq!(out, ToolOutput::ok("     2\ttwo\n… (1 more lines; use offset 3 to read on)\n"));
    }

    #[tokio::test]
    async fn refuses_bad_input_binary_directories_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bin"), [0u8, 1, 2]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let missing = call(dir.path(), json!({})).await;
        assert!(missing.is_error && missing.content.contains("missing field `file_path`"), "{missing:?}");
        let wrong = call(dir.path(), json!({"file_path": 7})).await;
        assert!(wrong.is_error && wrong.content.contains("invalid type"), "{wrong:?}");
        let bin = call(dir.path(), json!({"file_path": "bin"})).await;
        assert!(bin.is_error && bin.content.contains("binary"), "{bin:?}");
        let sub = call(dir.path(), json!({"file_path": "sub"})).await;
        assert!(sub.is_error && sub.content.contains("directory"), "{sub:?}");
        let outside = call(dir.path(), json!({"file_path": "/etc/hostname"})).await;
        assert!(outside.is_error && outside.content.contains("outside the working directory"), "{outside:?}");
        let absent = call(dir.path(), json!({"file_path": "nope.txt"})).await;
        assert!(absent.is_error && absent.content.contains("does not exist"), "{absent:?}");
    }

    #[tokio::test]
    async fn refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let out = call(dir.path(), json!({"file_path": "pipe"})).await;
        assert_eq!(
            out,
            ToolOutput::error("pipe is a FIFO (named pipe), not a regular file; Read only reads regular files.")
        );
        // A FIFO swapped in after the metadata check: the non-blocking open returns and the
        // check on the open file refuses it.
        let swapped = read_capped(&fifo, "pipe").unwrap_err();
        assert_eq!(
            swapped,
            ToolOutput::error("pipe is a FIFO (named pipe), not a regular file; Read only reads regular files.")
        );
    }

    #[tokio::test]
    async fn refuses_dev_zero_even_when_outside_paths_are_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext { allow_outside: true, ..ToolContext::new(dir.path()) };
        let out = Read.call(json!({"file_path": "/dev/zero"}), ctx).await;
        assert_eq!(
            out,
            ToolOutput::error("/dev/zero is a character device, not a regular file; Read only reads regular files.")
        );
    }

    #[tokio::test]
    async fn reads_at_most_the_byte_cap_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("{}\n", "x".repeat(999));
        let lines = 10_500;
        std::fs::write(dir.path().join("big.txt"), line.repeat(lines)).unwrap();
        // 10 MiB holds 10 485 whole lines of 1000 bytes; the 10 486th is cut off by the cap.
        let out = call(dir.path(), json!({"file_path": "big.txt", "offset": 10_484, "limit": 5})).await;
        let expected = format!(
            "{:>6}\t{x}\n{:>6}\t{x}\n… (the file is 10500000 bytes; Read stops at 10485760 bytes (10 MiB), \
             so only its first 10485000 bytes were read; use Grep or Bash `tail`/`sed -n` for the rest)\n",
            10_484,
            10_485,
            x = "x".repeat(999)
        );
        assert_eq!(out, ToolOutput::ok(expected));
        let past = call(dir.path(), json!({"file_path": "big.txt", "offset": 10_486})).await;
        assert!(!past.is_error);
        assert!(
            past.content.starts_with(
                "(the file has 10485 lines; offset 10486 is past the end)\n… (the file is 10500000 bytes;"
            ),
            "{past:?}"
        );
    }

    #[test]
    fn cuts_long_lines_and_reports_empty_files() {
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        let out = number_lines(&long, 1, 10);
        assert!(out.ends_with("… [line truncated]\n"));
        assert_eq!(out.chars().filter(|&c| c == 'x').count(), MAX_LINE_CHARS);
        assert_eq!(number_lines("", 1, 10), "(the file exists but is empty)");
    }
}
