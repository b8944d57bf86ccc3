//! The terminal's modes, through `termios`: the mode it was found in (restored whenever the
//! session gives the terminal back) and the mode of a running turn (no echo, keys one at a
//! time, Ctrl+C still a signal), and its size. Keys are read in [`super::keys`].

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
