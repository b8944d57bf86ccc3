//! The terminal's modes, through `termios`: the mode it was found in (restored whenever the
//! session gives the terminal back), the mode of a running turn (no echo, keys one at a time,
//! Ctrl+C still a signal) and single-key and single-line reads that give up when told to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const STDIN: libc::c_int = 0;

/// The terminal mode stdin had when the session started.
#[derive(Clone, Copy)]
pub struct Terminal {
    original: Option<libc::termios>,
}

impl Terminal {
    /// Remember the current mode of stdin (nothing when stdin is no terminal).
    pub fn save() -> Terminal {
        Terminal { original: get() }
    }

    /// Put the remembered mode back.
    pub fn restore(&self) {
        if let Some(t) = &self.original {
            set(t);
        }
    }

    /// The mode while a turn runs: keys are not echoed and arrive one at a time (so an
    /// approval needs no Enter), and Ctrl+C still raises SIGINT, which interrupts the turn.
    pub fn turn_mode(&self) {
        if let Some(mut t) = self.original {
            t.c_lflag &= !(libc::ICANON | libc::ECHO);
            t.c_lflag |= libc::ISIG;
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            set(&t);
        }
    }

    /// The mode for typing one line (a reason for a denial): echoed, edited by the terminal.
    pub fn line_mode(&self) {
        if let Some(mut t) = self.original {
            t.c_lflag |= libc::ICANON | libc::ECHO | libc::ISIG;
            set(&t);
        }
    }
}

fn get() -> Option<libc::termios> {
    // SAFETY: tcgetattr writes a termios into the zeroed struct we own; fd 0 may be anything.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(STDIN, &mut t) == 0).then_some(t)
    }
}

fn set(t: &libc::termios) {
    // SAFETY: tcsetattr reads the termios we pass.
    unsafe {
        libc::tcsetattr(STDIN, libc::TCSANOW, t);
    }
}

/// Throw away keys typed before a question is asked, so type-ahead never answers it.
pub fn discard_typeahead() {
    // SAFETY: tcflush on fd 0 only drops pending input.
    unsafe {
        libc::tcflush(STDIN, libc::TCIFLUSH);
    }
}

/// Wait up to `timeout` for stdin to be readable.
fn readable(timeout: Duration) -> bool {
    let mut fds = libc::pollfd { fd: STDIN, events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd we own.
    unsafe { libc::poll(&mut fds, 1, ms) > 0 }
}

fn read_byte() -> Option<u8> {
    let mut byte = 0u8;
    // SAFETY: reads at most one byte into `byte`.
    let n = unsafe { libc::read(STDIN, (&raw mut byte).cast(), 1) };
    (n == 1).then_some(byte)
}

/// A key read from stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A plain byte (a letter, Enter, Ctrl+C when signals are off).
    Byte(u8),
    /// Esc on its own (not the start of an arrow key's sequence).
    Escape,
    /// Stdin closed.
    Closed,
}

/// Read one key, blocking, until one arrives or `stop` is set (`None`).
pub fn read_key(stop: &AtomicBool) -> Option<Key> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if !readable(Duration::from_millis(50)) {
            continue;
        }
        let Some(byte) = read_byte() else { return Some(Key::Closed) };
        if byte != 0x1b {
            return Some(Key::Byte(byte));
        }
        // An escape sequence (an arrow key) arrives at once; Esc alone does not.
        if !readable(Duration::from_millis(30)) {
            return Some(Key::Escape);
        }
        while readable(Duration::from_millis(5)) {
            if read_byte().is_none() {
                break;
            }
        }
    }
}

/// Read one line (without its newline), until Enter or `stop` is set (`None`).
pub fn read_line(stop: &AtomicBool) -> Option<String> {
    let mut bytes = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if !readable(Duration::from_millis(50)) {
            continue;
        }
        match read_byte() {
            None | Some(b'\n') | Some(b'\r') => return Some(String::from_utf8_lossy(&bytes).into_owned()),
            Some(b) => bytes.push(b),
        }
    }
}

/// Run `read` on its own thread; dropping the returned future stops it (at its next poll).
pub async fn on_thread<T: Send + 'static>(read: impl FnOnce(&AtomicBool) -> Option<T> + Send + 'static) -> Option<T> {
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let guard = StopOnDrop(stop.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(read(&stop));
    });
    let result = rx.await.ok().flatten();
    drop(guard);
    result
}

/// The terminal's height in rows (24 when unknown).
pub fn rows() -> usize {
    // SAFETY: TIOCGWINSZ fills the winsize we own.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_row > 0 { ws.ws_row as usize } else { 24 }
    }
}

/// The terminal's width in columns (80 when unknown).
pub fn columns() -> usize {
    // SAFETY: TIOCGWINSZ fills the winsize we own.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col > 0 { ws.ws_col as usize } else { 80 }
    }
}
