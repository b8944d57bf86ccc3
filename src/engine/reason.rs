//! The named outcomes of the loop: the continue and terminal reasons the table declares in
//! its `[[reason]]` section, generated with their strings and exit codes
//! (see [`crate::engine::generated`]).

pub use crate::engine::generated::{ContinueReason, TerminalReason};
