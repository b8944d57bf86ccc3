//! A child process on a pseudo-terminal, for tests of the interactive session: the child gets
//! the PTY as its controlling terminal (so Ctrl+C written to it raises SIGINT), the test reads
//! what it prints and types keys.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A child on a PTY.
pub struct Pty {
    child: Child,
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
    /// When each read from the PTY returned: the output's length after it, and the time.
    arrivals: Arc<Mutex<Vec<(usize, Instant)>>>,
    /// How far [`Pty::expect`] has read.
    seen: usize,
}

impl Pty {
    /// Start `command` on a new 100×30 PTY.
    pub fn spawn(mut command: Command) -> Pty {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize { ws_row: 30, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: openpty fills the two fds; the name and termios pointers may be null.
        let rc = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size) };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both fds are ours from here on.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn on a PTY");
        let master = std::fs::File::from(master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let (sink, times) = (output.clone(), arrivals.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let at = Instant::now();
                let mut out = sink.lock().unwrap();
                out.extend_from_slice(&buf[..n]);
                times.lock().unwrap().push((out.len(), at));
            }
        });
        let _ = master.as_raw_fd();
        Pty { child, master, output, arrivals, seen: 0 }
    }

    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Everything printed so far, as text.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Everything printed so far, as bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.output.lock().unwrap().clone()
    }

    /// Bytes printed so far.
    pub fn len(&self) -> usize {
        self.output.lock().unwrap().len()
    }

    /// Whether the terminal echoes typed keys itself (the `ECHO` flag), as opposed to the
    /// program writing them.
    pub fn kernel_echo(&self) -> bool {
        // SAFETY: tcgetattr fills the zeroed termios we own; on a PTY's master it reports the
        // terminal's mode.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            libc::tcgetattr(self.master.as_raw_fd(), &mut t) == 0 && t.c_lflag & libc::ECHO != 0
        }
    }

    /// When the output's byte at `offset` was read from the PTY, if it was.
    pub fn arrival(&self, offset: usize) -> Option<Instant> {
        let arrivals = self.arrivals.lock().unwrap();
        let at = arrivals.partition_point(|(end, _)| *end <= offset);
        arrivals.get(at).map(|(_, time)| *time)
    }

    /// Wait until `needle` appears after what earlier calls matched; returns the text up to
    /// and including it. Panics with the whole output after `timeout`.
    pub fn expect(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let out = self.output.lock().unwrap();
                let text = String::from_utf8_lossy(&out[self.seen.min(out.len())..]).into_owned();
                if let Some(at) = text.find(needle) {
                    let end = at + needle.len();
                    self.seen += text[..end].len();
                    return text[..end].to_owned();
                }
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {needle:?}; the screen so far:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Type `bytes`.
    pub fn send(&mut self, bytes: &str) {
        self.send_bytes(bytes.as_bytes());
    }

    /// Type raw bytes, which need not be UTF-8.
    #[allow(dead_code, reason = "not every test binary that shares this file types raw bytes")]
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Wait for the child to exit; its exit code (-1 for a signal). Kills it after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the child did not exit; the screen so far:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
