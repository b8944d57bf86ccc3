//! A lean Messages API stand-in for long benchmarks: it answers the `k`-th `POST` with the
//! `k`-th prepared SSE body and keeps nothing of the requests but their sizes.
//!
//! The tests' mock (`tests/common/mock_api.rs`) records every request as parsed JSON and
//! checks the tool pairing of the whole history on each one, which over a session of 1000
//! turns would hold gigabytes of `Value`s and spend seconds of the benchmark's CPU per run.
//! This server only frames HTTP/1.1 (keep-alive, `content-length` bodies), checks one cheap
//! fact per request (the body names the tool call the previous reply made, so the engine did
//! send the result back), and writes each response in one `write` with `TCP_NODELAY` set (see
//! the Nagle note in docs/performance.md). It runs on threads of the benchmark's own process,
//! so its CPU is not in the child's `wait4` usage.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// One prepared answer: the SSE body, and a string every request answered by it must contain
/// (empty: no check).
pub struct Turn {
    /// The whole `text/event-stream` body.
    pub sse: String,
    /// A string the request must contain, e.g. the id of the previous reply's `tool_use`.
    pub expect: String,
}

#[derive(Default)]
struct Seen {
    /// Body size of each request, in bytes.
    body_sizes: Vec<usize>,
    /// Problems: a missing expected string, a request past the script.
    problems: Vec<String>,
}

/// The server; dropping it stops accepting connections.
pub struct TurnServer {
    address: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
}

impl TurnServer {
    /// Listen on a free port of 127.0.0.1 and answer the requests with `turns`, in order.
    pub fn start(turns: Vec<Turn>) -> TurnServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let address = listener.local_addr().expect("local address");
        let turns = Arc::new(turns);
        let next = Arc::new(Mutex::new(0usize));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (accept_seen, accept_stop) = (seen.clone(), stop.clone());
        thread::spawn(move || {
            for socket in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(socket) = socket else { continue };
                let _ = socket.set_nodelay(true);
                let (turns, next, seen) = (turns.clone(), next.clone(), accept_seen.clone());
                thread::spawn(move || serve(socket, &turns, &next, &seen));
            }
        });
        TurnServer { address, seen, stop }
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The body size of every request answered so far, in bytes.
    pub fn body_sizes(&self) -> Vec<usize> {
        self.seen.lock().unwrap().body_sizes.clone()
    }

    /// Problems noted so far.
    pub fn problems(&self) -> Vec<String> {
        self.seen.lock().unwrap().problems.clone()
    }
}

impl Drop for TurnServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// Answer requests on one connection until the client closes it.
fn serve(mut socket: TcpStream, turns: &[Turn], next: &Mutex<usize>, seen: &Mutex<Seen>) {
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let Some(length) = read_request(&mut socket, &mut buffer, &mut chunk) else { return };
        let k = {
            let mut next = next.lock().unwrap();
            *next += 1;
            *next - 1
        };
        let body = &buffer[..length];
        let response = match turns.get(k) {
            Some(turn) => {
                let mut seen = seen.lock().unwrap();
                seen.body_sizes.push(length);
                if !turn.expect.is_empty() && memchr::memmem::find(body, turn.expect.as_bytes()).is_none() {
                    seen.problems.push(format!("request {}: does not contain {:?}", k + 1, turn.expect));
                }
                response(200, "text/event-stream; charset=utf-8", turn.sse.as_bytes())
            }
            None => {
                seen.lock().unwrap().problems.push(format!("request {} came after the end of the script", k + 1));
                response(
                    400,
                    "application/json",
                    br#"{"type":"error","error":{"type":"invalid_request_error","message":"past the script"}}"#,
                )
            }
        };
        buffer.drain(..length);
        if socket.write_all(&response).and_then(|()| socket.flush()).is_err() {
            return;
        }
    }
}

/// Head and body in one buffer: written in one call.
fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = if status == 200 { "OK" } else { "Bad Request" };
    let mut out =
        format!("HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n", body.len())
            .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Read one request's head and its `content-length` body; on return the body is at the start
/// of `buffer` and its length is returned. `None` once the client has closed the connection.
fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>, chunk: &mut [u8]) -> Option<usize> {
    let head_end = loop {
        if let Some(end) = memchr::memmem::find(buffer, b"\r\n\r\n") {
            break end;
        }
        let n = socket.read(chunk).ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim() == "content-length")
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    buffer.drain(..head_end + 4);
    while buffer.len() < length {
        let n = socket.read(chunk).ok().filter(|&n| n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some(length)
}
