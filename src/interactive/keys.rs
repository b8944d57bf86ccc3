//! The keys typed while a turn runs. One reader thread owns stdin for the whole turn: while a
//! permission question is open its keys go to the question, otherwise they edit the type-ahead
//! buffer, echoed at once under the status line. Enter queues the buffer as the next prompt.
//! Between turns the reader is stopped (woken through a pipe and joined), so the line editor is
//! the only reader at the `> ` prompt and no key is lost between the two.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc;

use super::render::Screen;

const STDIN: RawFd = 0;

/// How long the rest of an escape sequence or of a UTF-8 character may take to arrive.
const SEQUENCE_WAIT: Duration = Duration::from_millis(30);

/// Queued prompts shown under the status line; more are counted.
const QUEUED_SHOWN: usize = 3;

/// A key read from stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character (UTF-8 decoded).
    Char(char),
    /// Enter (CR or LF).
    Enter,
    /// Backspace (DEL or BS).
    Backspace,
    /// Esc on its own (not the start of an arrow key's sequence).
    Escape,
    /// A newline inside the line: Alt+Enter (ESC CR), or Enter within a paste.
    Newline,
    /// The terminal's mark that pasted text starts (`ESC [ 200 ~`).
    PasteStart,
    /// The terminal's mark that pasted text ends (`ESC [ 201 ~`).
    PasteEnd,
    /// Another control character (Ctrl+U is 0x15).
    Control(u8),
    /// Stdin closed.
    Closed,
}

/// What was typed ahead: prompts queued with Enter and the line being typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeAhead {
    /// Prompts queued with Enter, oldest first.
    pub queued: Vec<String>,
    /// The unfinished line.
    pub buffer: String,
    /// Between the terminal's paste marks: Enter is a newline, not the end of a prompt.
    pub pasting: bool,
}

impl TypeAhead {
    /// Apply one key; returns whether anything changed.
    pub fn key(&mut self, key: Key) -> bool {
        match key {
            Key::Char(c) => {
                self.buffer.push(c);
                true
            }
            Key::Backspace => self.buffer.pop().is_some(),
            Key::Newline => {
                self.buffer.push('\n');
                true
            }
            Key::Enter if self.pasting => {
                self.buffer.push('\n');
                true
            }
            Key::PasteStart | Key::PasteEnd => {
                self.pasting = key == Key::PasteStart;
                false
            }
            Key::Enter if self.buffer.trim().is_empty() => false,
            Key::Enter => {
                self.queued.push(std::mem::take(&mut self.buffer));
                true
            }
            // Ctrl+U: the whole line.
            Key::Control(0x15) => !std::mem::take(&mut self.buffer).is_empty(),
            // Ctrl+W: the last word and the spaces after it.
            Key::Control(0x17) => {
                let before = self.buffer.len();
                let kept = self.buffer.trim_end().trim_end_matches(|c: char| !c.is_whitespace()).len();
                self.buffer.truncate(kept);
                before != kept
            }
            Key::Control(_) | Key::Escape | Key::Closed => false,
        }
    }

    /// After an interrupt: everything typed becomes one unfinished line (the queued prompts
    /// and the buffer joined with newlines), so that nothing runs unasked and nothing is lost.
    pub fn unqueue(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let mut parts = std::mem::take(&mut self.queued);
        if !self.buffer.is_empty() {
            parts.push(std::mem::take(&mut self.buffer));
        }
        self.buffer = parts.join("\n");
    }

    /// The lines shown under the status line, each at most `width` characters: the queued
    /// prompts (the first few), then `› ` and the buffer (its end when it is too long).
    pub fn lines(&self, width: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for prompt in self.queued.iter().take(QUEUED_SHOWN) {
            let first = prompt.lines().next().unwrap_or("");
            lines.push(super::render::shorten(&format!("  queued: {first}"), width.saturating_sub(1)));
        }
        if self.queued.len() > QUEUED_SHOWN {
            lines.push(format!("  … {} more queued", self.queued.len() - QUEUED_SHOWN));
        }
        if !self.buffer.is_empty() || !self.queued.is_empty() {
            let room = width.saturating_sub(3);
            let count = self.buffer.chars().count();
            let shown: String = if count > room {
                let tail: String = self.buffer.chars().skip(count - room + 1).collect();
                format!("…{tail}")
            } else {
                self.buffer.clone()
            };
            lines.push(format!("› {}", shown.replace('\n', "↵")));
        }
        lines
    }
}

/// The keys of the session: the reader thread of a running turn, the type-ahead it fills and
/// the open question it feeds.
#[derive(Clone)]
pub struct Keyboard {
    inner: Arc<Inner>,
}

struct Inner {
    screen: Screen,
    shared: Mutex<Shared>,
    running: Mutex<Option<Running>>,
}

struct Shared {
    typed: TypeAhead,
    /// The open question's channel: keys go there instead of the buffer.
    question: Option<mpsc::UnboundedSender<Key>>,
    /// Stdin closed (or no reader runs): a question gets [`Key::Closed`].
    closed: bool,
}

struct Running {
    thread: JoinHandle<()>,
    wake: OwnedFd,
}

impl Keyboard {
    /// A keyboard echoing on `screen`; no reader runs until [`Keyboard::start`].
    pub fn new(screen: Screen) -> Keyboard {
        let shared = Shared { typed: TypeAhead::default(), question: None, closed: true };
        Keyboard { inner: Arc::new(Inner { screen, shared: Mutex::new(shared), running: Mutex::new(None) }) }
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.inner.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start the reader (the terminal is in the turn's mode: keys one at a time, no echo),
    /// and show what is typed ahead already.
    pub fn start(&self) {
        let mut running = self.inner.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.is_some() {
            return;
        }
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two fds, which are ours from here on.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return;
        }
        // SAFETY: both fds were just opened and are owned by nothing else.
        let (wake_read, wake) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        self.shared().closed = false;
        self.inner.screen.bracketed_paste(true);
        let keyboard = self.clone();
        let thread = std::thread::spawn(move || {
            let mut input = Input { wake: wake_read };
            while let Ok(key) = next_key(&mut input) {
                keyboard.deliver(key);
                if key == Key::Closed {
                    break;
                }
            }
        });
        *running = Some(Running { thread, wake });
        drop(running);
        self.redraw();
    }

    /// Stop the reader and wait for it: every key it read has been delivered. What was typed
    /// ahead stays (see [`Keyboard::pop_queued`], [`Keyboard::take_buffer`]); it is no
    /// longer drawn.
    pub fn stop(&self) {
        let running = self.inner.running.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(running) = running {
            // SAFETY: one byte written to the pipe we own.
            unsafe {
                libc::write(running.wake.as_raw_fd(), [1u8].as_ptr().cast(), 1);
            }
            let _ = running.thread.join();
        }
        {
            let mut shared = self.shared();
            shared.closed = true;
            shared.typed.pasting = false;
        }
        self.inner.screen.bracketed_paste(false);
        self.inner.screen.set_extra(Vec::new());
    }

    fn deliver(&self, key: Key) {
        let mut shared = self.shared();
        if key == Key::Closed {
            shared.closed = true;
        }
        // A paste never answers a question (a pasted `y` is no approval): it goes to the
        // buffer, marks included.
        let pasted = shared.typed.pasting || key == Key::PasteStart;
        if let Some(question) = shared.question.as_ref().filter(|_| !pasted) {
            if question.send(key).is_ok() {
                return;
            }
            shared.question = None;
        }
        if shared.typed.key(key) {
            let lines = shared.typed.lines(super::term::columns());
            drop(shared);
            self.inner.screen.set_extra(lines);
        }
    }

    fn redraw(&self) {
        let lines = self.shared().typed.lines(super::term::columns());
        self.inner.screen.set_extra(lines);
    }

    /// The next queued prompt, if any (the rest stay queued).
    pub fn pop_queued(&self) -> Option<String> {
        let mut shared = self.shared();
        (!shared.typed.queued.is_empty()).then(|| shared.typed.queued.remove(0))
    }

    /// The unfinished line, taken (to pre-fill the editor).
    pub fn take_buffer(&self) -> String {
        std::mem::take(&mut self.shared().typed.buffer)
    }

    /// After an interrupt: the queued prompts are not run but join the unfinished line.
    pub fn unqueue(&self) {
        self.shared().typed.unqueue();
        self.redraw();
    }

    /// Open a question: until the returned value is dropped, keys go to it.
    pub fn question(&self) -> Question {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut shared = self.shared();
        if shared.closed {
            let _ = tx.send(Key::Closed);
        }
        shared.question = Some(tx);
        Question { keyboard: self.clone(), keys: rx }
    }
}

/// An open question's keys.
pub struct Question {
    keyboard: Keyboard,
    keys: mpsc::UnboundedReceiver<Key>,
}

impl Question {
    /// The next key typed ([`Key::Closed`] once stdin is closed or the reader stopped).
    pub async fn key(&mut self) -> Key {
        self.keys.recv().await.unwrap_or(Key::Closed)
    }
}

impl Drop for Question {
    fn drop(&mut self) {
        self.keyboard.shared().question = None;
    }
}

/// Stdin and the pipe that wakes the reader to stop.
struct Input {
    wake: OwnedFd,
}

/// Why no byte came.
enum NoByte {
    /// Told to stop.
    Stop,
    /// Nothing within the wait.
    Timeout,
    /// Stdin closed.
    Closed,
}

impl Input {
    /// One byte from stdin, waiting at most `wait` (forever when `None`).
    fn byte(&mut self, wait: Option<Duration>) -> Result<u8, NoByte> {
        let mut fds = [
            libc::pollfd { fd: STDIN, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.wake.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let ms = wait.map_or(-1, |w| w.as_millis().min(i32::MAX as u128) as i32);
        loop {
            // SAFETY: two pollfds we own.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(NoByte::Closed);
            }
            if n == 0 {
                return Err(NoByte::Timeout);
            }
            // Keys already typed are read before a stop is obeyed.
            if fds[0].revents != 0 {
                let mut byte = 0u8;
                // SAFETY: reads at most one byte into `byte`.
                let read = unsafe { libc::read(STDIN, (&raw mut byte).cast(), 1) };
                if read == 1 {
                    return Ok(byte);
                }
                if read < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(NoByte::Closed);
            }
            return Err(NoByte::Stop);
        }
    }
}

/// The reader was told to stop.
struct Stopped;

/// The next key: escape sequences (arrows, function keys, Alt+key) are skipped, UTF-8 is
/// decoded.
fn next_key(input: &mut Input) -> Result<Key, Stopped> {
    loop {
        let byte = match input.byte(None) {
            Ok(byte) => byte,
            Err(NoByte::Stop) => return Err(Stopped),
            Err(NoByte::Closed) => return Ok(Key::Closed),
            Err(NoByte::Timeout) => continue,
        };
        match byte {
            0x1b => match input.byte(Some(SEQUENCE_WAIT)) {
                Err(NoByte::Timeout) => return Ok(Key::Escape),
                Err(NoByte::Stop) => return Err(Stopped),
                Err(NoByte::Closed) => return Ok(Key::Closed),
                Ok(b'[') => match csi(input)? {
                    Csi::PasteStart => return Ok(Key::PasteStart),
                    Csi::PasteEnd => return Ok(Key::PasteEnd),
                    Csi::Other => {}
                },
                Ok(b'\r' | b'\n') => return Ok(Key::Newline),
                // SS3 (`ESC O A`): one more byte. Alt+key: the key is dropped.
                Ok(b'O') => {
                    let _ = input.byte(Some(SEQUENCE_WAIT));
                }
                Ok(_) => {}
            },
            b'\r' | b'\n' => return Ok(Key::Enter),
            0x7f | 0x08 => return Ok(Key::Backspace),
            b if b < 0x20 => return Ok(Key::Control(b)),
            b if b < 0x80 => return Ok(Key::Char(b as char)),
            lead => {
                if let Some(c) = utf8_char(input, lead)?
                    && !c.is_control()
                {
                    return Ok(Key::Char(c));
                }
            }
        }
    }
}

/// The CSI sequences the type-ahead acts on.
enum Csi {
    /// `ESC [ 200 ~`.
    PasteStart,
    /// `ESC [ 201 ~`.
    PasteEnd,
    /// Any other (an arrow key, a function key): skipped.
    Other,
}

/// Read a CSI sequence's parameters up to its final byte.
fn csi(input: &mut Input) -> Result<Csi, Stopped> {
    let mut bytes = Vec::new();
    loop {
        match input.byte(Some(SEQUENCE_WAIT)) {
            Ok(b @ 0x40..=0x7e) => {
                bytes.push(b);
                return Ok(match bytes.as_slice() {
                    b"200~" => Csi::PasteStart,
                    b"201~" => Csi::PasteEnd,
                    _ => Csi::Other,
                });
            }
            Ok(b) => bytes.push(b),
            Err(NoByte::Timeout | NoByte::Closed) => return Ok(Csi::Other),
            Err(NoByte::Stop) => return Err(Stopped),
        }
    }
}

/// The character a UTF-8 sequence starting with `lead` makes, `None` when invalid.
fn utf8_char(input: &mut Input, lead: u8) -> Result<Option<char>, Stopped> {
    let len = match lead {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Ok(None),
    };
    let mut bytes = vec![lead];
    while bytes.len() < len {
        match input.byte(Some(SEQUENCE_WAIT)) {
            Ok(b) => bytes.push(b),
            Err(NoByte::Stop) => return Err(Stopped),
            Err(NoByte::Timeout | NoByte::Closed) => return Ok(None),
        }
    }
    Ok(std::str::from_utf8(&bytes).ok().and_then(|s| s.chars().next()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(keys: &[Key]) -> TypeAhead {
        let mut t = TypeAhead::default();
        for key in keys {
            t.key(*key);
        }
        t
    }

    fn chars(text: &str) -> Vec<Key> {
        text.chars().map(Key::Char).collect()
    }

    #[test]
    fn keys_edit_the_buffer_and_enter_queues_it() {
        let mut keys = chars("helo");
        keys.extend([Key::Backspace, Key::Backspace]);
        keys.extend(chars("llo wörld"));
        keys.push(Key::Enter);
        keys.push(Key::Enter);
        keys.extend(chars("next one"));
        keys.push(Key::Control(0x17));
        let t = typed(&keys);
        assert_eq!(t, TypeAhead { queued: vec!["hello wörld".into()], buffer: "next ".into(), pasting: false });
        assert_eq!(t.lines(80), vec!["  queued: hello wörld", "› next "]);
        let mut cleared = t.clone();
        assert!(cleared.key(Key::Control(0x15)));
        assert_eq!(cleared.buffer, "");
        assert!(!cleared.key(Key::Escape));
    }

    #[test]
    fn a_paste_and_alt_enter_keep_newlines_inside_one_prompt() {
        let mut keys = vec![Key::PasteStart];
        keys.extend(chars("line one"));
        keys.push(Key::Enter);
        keys.extend(chars("line two"));
        keys.push(Key::PasteEnd);
        keys.push(Key::Newline);
        keys.extend(chars("three"));
        let t = typed(&keys);
        assert_eq!(t, TypeAhead { queued: vec![], buffer: "line one\nline two\nthree".into(), pasting: false });
        keys.push(Key::Enter);
        assert_eq!(typed(&keys).queued, vec!["line one\nline two\nthree".to_owned()]);
    }

    #[test]
    fn lines_show_the_end_of_a_long_buffer_and_count_the_queue() {
        let mut t = typed(&chars("abcdefghijklmnop"));
        assert_eq!(t.lines(10), vec!["› …klmnop"]);
        t.queued = vec!["1".into(), "2".into(), "3".into(), "4\nsecond line".into(), "5".into()];
        t.buffer.clear();
        assert_eq!(t.lines(40), vec!["  queued: 1", "  queued: 2", "  queued: 3", "  … 2 more queued", "› "]);
        assert!(TypeAhead::default().lines(40).is_empty());
    }

    #[test]
    fn an_interrupt_joins_the_queue_into_the_unfinished_line() {
        let mut t = TypeAhead { queued: vec!["first".into(), "second".into()], buffer: "third".into(), pasting: false };
        t.unqueue();
        assert_eq!(t, TypeAhead { queued: vec![], buffer: "first\nsecond\nthird".into(), pasting: false });
        let mut only_buffer = TypeAhead { queued: vec![], buffer: "draft".into(), pasting: false };
        only_buffer.unqueue();
        assert_eq!(only_buffer.buffer, "draft");
    }

    #[tokio::test]
    async fn a_question_takes_the_keys_while_it_is_open() {
        let screen = Screen::new(Box::new(std::io::sink()), super::super::render::Style { color: false });
        let keyboard = Keyboard::new(screen);
        keyboard.shared().closed = false;
        keyboard.deliver(Key::Char('a'));
        let mut question = keyboard.question();
        keyboard.deliver(Key::Char('y'));
        assert_eq!(question.key().await, Key::Char('y'));
        drop(question);
        keyboard.deliver(Key::Char('b'));
        assert_eq!(keyboard.shared().typed.buffer, "ab");
        // With no reader, a question is answered by a closed stdin.
        keyboard.stop();
        assert_eq!(keyboard.question().key().await, Key::Closed);
    }
}
