//! The stdio transport's framing: one JSON-RPC message per line, each line at most
//! [`MAX_MESSAGE`] bytes, read with that bound so that a reply of any size never desyncs the
//! stream or leaves its call waiting for the timeout.
//!
//! A line within the bound is parsed whole (a large result is then capped like any other
//! tool output, [`crate::tools::orchestrate`]). A longer line is skipped as it arrives, never
//! held: only its size and its first and last bytes are kept, to find which request it
//! answers ([`reply_id`]). That request gets an error reply at once saying how large the
//! reply was ([`too_large`]); when the id cannot be read and one request is waiting, it is
//! that one; when several are, they all get it. A reply that is not a valid message is an
//! error reply to its request in the same way. The connection stays usable for the next call.

use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest message read (bytes of one line); a longer reply is an error reply.
pub const MAX_MESSAGE: usize = 64 * MIB;

const MIB: usize = 1024 * 1024;

/// How many bytes of each end of a skipped line are kept to find its id.
const KEPT: usize = 4096;

/// A buffer larger than this is not kept for the next line.
const KEPT_CAPACITY: usize = MIB;

/// The client's side of a stdio connection: messages to the server's stdin, lines from its
/// stdout.
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    skipping: Option<Skipped>,
    limit: usize,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
    waiting: Arc<Mutex<Vec<RequestId>>>,
    /// Error replies made up for a skipped line, not yet received.
    replies: Vec<RxJsonRpcMessage<RoleClient>>,
}

/// What is kept of a line over the limit while it is skipped.
struct Skipped {
    bytes: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineTransport<R, W> {
    /// A transport reading `read` (the server's stdout) and writing `write` (its stdin),
    /// with lines bounded by [`MAX_MESSAGE`].
    pub fn new(read: R, write: W) -> Self {
        Self::with_limit(read, write, MAX_MESSAGE)
    }

    /// [`LineTransport::new`] with lines bounded by `limit` bytes.
    pub fn with_limit(read: R, write: W, limit: usize) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            skipping: None,
            limit,
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            waiting: Arc::new(Mutex::new(Vec::new())),
            replies: Vec::new(),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Vec<RequestId>> {
        // A panic while the lock was held leaves a plain list of ids: still usable.
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next whole line (in `self.line`) or a skipped one, `None` at the end of the stream.
    /// Cancel-safe: what was read so far stays in `self` for the next call.
    async fn next_line(&mut self) -> Option<Line> {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return None,
                Ok(available) => available,
                Err(e) => {
                    tracing::error!("reading from the MCP server: {e}");
                    return None;
                }
            };
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.map_or(available.len(), |at| at + 1)];
            let taken = chunk.len();
            if let Some(skipped) = &mut self.skipping {
                skipped.keep_tail(chunk);
                skipped.bytes += taken;
            } else if self.line.len() + taken > self.limit {
                let mut head = self.line[..self.line.len().min(KEPT)].to_vec();
                head.extend_from_slice(&chunk[..chunk.len().min(KEPT - head.len())]);
                let mut skipped = Skipped { bytes: self.line.len() + taken, head, tail: Vec::new() };
                skipped.keep_tail(&self.line[self.line.len().saturating_sub(KEPT)..]);
                skipped.keep_tail(chunk);
                self.skipping = Some(skipped);
                self.line = Vec::new();
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.read.consume(taken);
            if newline.is_some() {
                return Some(match self.skipping.take() {
                    Some(skipped) => Line::Skipped(skipped),
                    None => Line::Whole,
                });
            }
        }
    }

    /// The message in `line`, or an error reply to the request it answers when it is not a
    /// message; `None` for a line that is neither (blank, or unreadable and no reply).
    fn parse(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let line = std::mem::take(&mut self.line);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = text.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(text);
        let parsed = if text.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text) {
                Ok(message) => {
                    if let Some(id) = answered(&message) {
                        self.waiting().retain(|w| w != id);
                    }
                    Some(message)
                }
                Err(e) => self.unreadable(text, &e),
            }
        };
        if line.capacity() <= KEPT_CAPACITY {
            self.line = line;
            self.line.clear();
        }
        parsed
    }

    /// An error reply to the waiting request `text` answers, which is not a message (`e`).
    fn unreadable(&mut self, text: &[u8], e: &serde_json::Error) -> Option<RxJsonRpcMessage<RoleClient>> {
        let value: Value = serde_json::from_slice(text).ok()?;
        if value.get("method").is_some() {
            tracing::debug!("ignoring an MCP message that cannot be read: {e}");
            return None;
        }
        let id = serde_json::from_value::<RequestId>(value.get("id")?.clone()).ok()?;
        self.fail(&[id], &format!("the server's reply is not a valid JSON-RPC message: {e}")).pop()
    }

    /// Error replies saying `message` to the waiting requests among `ids`, which stop waiting.
    fn fail(&mut self, ids: &[RequestId], message: &str) -> Vec<RxJsonRpcMessage<RoleClient>> {
        let mut waiting = self.waiting();
        let failed: Vec<RequestId> = ids.iter().filter(|id| waiting.contains(id)).cloned().collect();
        waiting.retain(|w| !failed.contains(w));
        failed
            .into_iter()
            .map(|id| {
                let error = rmcp::ErrorData::internal_error(message.to_owned(), None);
                JsonRpcMessage::error(error, Some(id))
            })
            .collect()
    }

    /// Error replies for the skipped line: to the request it answers, or to every waiting one
    /// when that cannot be read.
    fn oversized(&mut self, skipped: &Skipped) -> Vec<RxJsonRpcMessage<RoleClient>> {
        let message = too_large(skipped.bytes, self.limit);
        tracing::error!("{message}");
        let ids = match reply_id(&skipped.head, &skipped.tail) {
            Found::Id(id) => vec![id],
            Found::NotAReply => return Vec::new(),
            Found::Unknown => self.waiting().clone(),
        };
        self.fail(&ids, &message)
    }
}

/// What [`LineTransport::next_line`] read.
enum Line {
    Whole,
    Skipped(Skipped),
}

impl Skipped {
    /// Keep the last [`KEPT`] bytes of what was skipped, `chunk` being the newest.
    fn keep_tail(&mut self, chunk: &[u8]) {
        if chunk.len() >= KEPT {
            self.tail = chunk[chunk.len() - KEPT..].to_vec();
        } else {
            self.tail.extend_from_slice(chunk);
            let excess = self.tail.len().saturating_sub(KEPT);
            self.tail.drain(..excess);
        }
    }
}

/// The id a reply answers.
fn answered(message: &RxJsonRpcMessage<RoleClient>) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
    }
}

/// What the ends of a skipped line say about it.
#[derive(Debug, PartialEq)]
enum Found {
    /// A reply to this request.
    Id(RequestId),
    /// A request or notification of the server's own (it has a `method`).
    NotAReply,
    /// Nothing readable.
    Unknown,
}

/// The id of the message whose line begins with `head` and ends with `tail`: a top-level
/// `"id"` member among the first bytes (as Python servers write it) or the last member
/// (as TypeScript servers do).
fn reply_id(head: &[u8], tail: &[u8]) -> Found {
    let members = top_level_members(head);
    if members.iter().any(|(key, _)| key == "method") {
        return Found::NotAReply;
    }
    let id = members.into_iter().find(|(key, _)| key == "id").and_then(|(_, value)| value).or_else(|| last_id(tail));
    id.and_then(|id| serde_json::from_str(&id).ok()).map_or(Found::Unknown, Found::Id)
}

/// The keys of the top-level members at the start of a JSON object (`text` may be cut
/// anywhere), each with its value's text when it is a number or a string read whole.
fn top_level_members(text: &[u8]) -> Vec<(String, Option<String>)> {
    let mut members = Vec::new();
    let (mut depth, mut at) = (0_usize, 0);
    let mut expecting_key = false;
    while at < text.len() {
        match text[at] {
            b'{' | b'[' => {
                depth += 1;
                expecting_key = depth == 1 && text[at] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expecting_key = depth == 1,
            b'"' => {
                let Some(end) = string_end(text, at) else { break };
                if depth == 1 && expecting_key {
                    let key = String::from_utf8_lossy(&text[at + 1..end]).into_owned();
                    let value = scalar_after_colon(&text[end + 1..]);
                    members.push((key, value));
                    expecting_key = false;
                }
                at = end;
            }
            _ => {}
        }
        at += 1;
    }
    members
}

/// The index of the quote that closes the string opening at `start`, if it is in `text`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// After a key: `: VALUE`, the value's text when it is a number or a string whole in `rest`.
fn scalar_after_colon(rest: &[u8]) -> Option<String> {
    let rest = std::str::from_utf8(rest.get(..rest.len().min(256))?).ok().or_else(|| {
        // Cut inside a character: read up to the last whole one.
        let valid = std::str::from_utf8(&rest[..rest.len().min(256)]).err()?.valid_up_to();
        std::str::from_utf8(&rest[..valid]).ok()
    })?;
    let value = rest.trim_start().strip_prefix(':')?.trim_start();
    if value.starts_with('"') {
        let end = string_end(value.as_bytes(), 0)?;
        return Some(value[..=end].to_owned());
    }
    let end = value.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(value.len());
    (end > 0).then(|| value[..end].to_owned())
}

/// The value of an `"id"` member that is the last of the object `tail` ends.
fn last_id(tail: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(tail);
    let body = text.trim_end().strip_suffix('}')?.trim_end();
    let at = body.rfind("\"id\"")?;
    let value = body[at + 4..].trim_start().strip_prefix(':')?.trim();
    let scalar =
        value.starts_with('"') && value.ends_with('"') && value.len() >= 2 && !value[1..value.len() - 1].contains('"')
            || !value.is_empty() && value.chars().all(|c| c.is_ascii_digit() || c == '-');
    scalar.then(|| value.to_owned())
}

/// The error a request gets for a reply of `bytes` bytes over `limit`.
pub fn too_large(bytes: usize, limit: usize) -> String {
    format!("the server's reply was {}, over the limit of {} for one message", amount(bytes), amount(limit))
}

/// `bytes` in words: `N bytes` below a MB, else `N MB` or `N.N MB`.
fn amount(bytes: usize) -> String {
    match (bytes / MIB, bytes % MIB) {
        (0, _) => format!("{bytes} bytes"),
        (whole, 0) => format!("{whole} MB"),
        (whole, rest) => format!("{whole}.{} MB", rest * 10 / MIB),
    }
}

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            self.waiting().push(request.id.clone());
        }
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let write = self.write.clone();
        async move {
            let line = line?;
            let mut write = write.lock().await;
            let Some(write) = write.as_mut() else {
                return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed"));
            };
            write.write_all(&line).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if let Some(message) = self.replies.pop() {
                return Some(message);
            }
            match self.next_line().await? {
                Line::Whole => {
                    if let Some(message) = self.parse() {
                        return Some(message);
                    }
                }
                Line::Skipped(skipped) => self.replies = self.oversized(&skipped),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_a_skipped_reply_is_read_from_either_end() {
        let id = |n| Found::Id(RequestId::Number(n));
        assert_eq!(
            reply_id(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xx"#, b"x\"}]}}"),
            id(7)
        );
        assert_eq!(
            reply_id(br#"{"result":{"content":[{"id":1,"text":"xxx"#, br#"xxx"}]},"jsonrpc":"2.0","id":12}"#),
            id(12)
        );
        assert_eq!(reply_id(br#"{ "id" : "req-1", "result": {"#, b"}}"), Found::Id(RequestId::String("req-1".into())));
        assert_eq!(
            reply_id(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"#, b"}}"),
            Found::NotAReply
        );
        // An "id" inside the result, not the last member: unknown.
        assert_eq!(reply_id(br#"{"result":{"text":"xxx"#, br#"xx","id":3}}"#), Found::Unknown);
    }

    #[test]
    fn sizes_are_said_in_mb() {
        assert_eq!(
            too_large(70 * MIB + MIB / 2, MAX_MESSAGE),
            "the server's reply was 70.5 MB, over the limit of 64 MB for one message"
        );
    }

    /// Requests sent through `transport`, one per id.
    async fn send_requests(
        transport: &mut LineTransport<tokio::io::DuplexStream, tokio::io::DuplexStream>,
        ids: &[i64],
    ) {
        for &id in ids {
            let request = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest::default());
            transport.send(JsonRpcMessage::request(request, RequestId::Number(id))).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_an_error_reply_and_the_next_message_still_arrives() {
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        let (client_out, _server_in) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::with_limit(client_in, client_out, 1000);
        send_requests(&mut transport, &[1, 2]).await;
        let writer = tokio::spawn(async move {
            let mut server_out = server_out;
            let big = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"text\":\"{}\"}}}}\n", "x".repeat(5000));
            server_out.write_all(big.as_bytes()).await.unwrap();
            server_out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n").await.unwrap();
        });
        let first = serde_json::to_value(transport.receive().await.unwrap()).unwrap();
        assert_eq!(
            first,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603,
                "message": "the server's reply was 5046 bytes, over the limit of 1000 bytes for one message"}})
        );
        let second = serde_json::to_value(transport.receive().await.unwrap()).unwrap();
        assert_eq!(second, serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        writer.await.unwrap();
        assert!(transport.waiting().is_empty());
    }

    #[tokio::test]
    async fn a_line_over_the_limit_whose_id_cannot_be_read_fails_every_waiting_request() {
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        let (client_out, _server_in) = tokio::io::duplex(1 << 16);
        let mut transport = LineTransport::with_limit(client_in, client_out, 1000);
        send_requests(&mut transport, &[1, 2]).await;
        let writer = tokio::spawn(async move {
            let mut server_out = server_out;
            let big = format!("{{\"result\":{{\"text\":\"{}\"}}}}\n", "x".repeat(5000));
            server_out.write_all(big.as_bytes()).await.unwrap();
        });
        let mut failed = Vec::new();
        for _ in 0..2 {
            let reply = serde_json::to_value(transport.receive().await.unwrap()).unwrap();
            assert_eq!(reply["error"]["code"], -32603);
            failed.push(reply["id"].as_i64().unwrap());
        }
        failed.sort_unstable();
        assert_eq!(failed, [1, 2]);
        writer.await.unwrap();
        assert!(transport.waiting().is_empty());
    }
}
