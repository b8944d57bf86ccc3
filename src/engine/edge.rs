//! Every edge of the table as a Rust value, generated from `transitions/loop.toml`
//! (see [`crate::engine::generated`]).

pub use crate::engine::generated::Edge;
