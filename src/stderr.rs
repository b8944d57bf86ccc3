//! Lines on stderr, for every part of agentloop that reports to the person running it:
//! written whole and never panicking (after SIGHUP the terminal may be gone, and `eprintln!`
//! would panic on the failed write).

use std::io::{IsTerminal, Write};

/// Write `text` and a newline to stderr, ignoring errors.
pub fn line(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Whether stderr is a terminal (colours on).
pub fn is_terminal() -> bool {
    std::io::stderr().is_terminal()
}
