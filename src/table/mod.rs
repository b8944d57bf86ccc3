//! The table format, read in one place: the serde shape of `transitions/loop.toml`
//! ([`format`]), its guard expressions ([`guard`]), the findings a check reports
//! ([`finding`]) and the declaration rules ([`check`]).
//!
//! `build.rs` compiles this module too (`#[path]`), checks the shipped table with it before it
//! generates a single name, and fails the build with the finding `agentloop audit` would
//! print. So nothing here may use the rest of the crate: the engine's own knowledge (the
//! reasons it has, what a run does) is handed in, as [`check::KnownReason`]s.

pub mod check;
pub mod finding;
pub mod format;
pub mod guard;
