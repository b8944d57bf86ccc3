//! agentloop: a coding-agent engine whose loop is an explicit hierarchical state machine.
//!
//! Layout:
//! - [`protocol`]: wire types of the Messages API, no logic.
//! - [`model`]: the `Model` seam, stream assembly, the scripted model and the Anthropic client.
//! - [`audit`]: proofs over the table, trace replay, diagrams.
//! - [`engine`]: the transition table, the statig machine, the trace.
//! - [`tools`]: the tools the model calls.
//! - [`hooks`]: Stop / PreToolUse / PostToolUse hooks in Claude Code's settings format.
#![warn(missing_docs)]

pub mod audit;
pub mod engine;
pub mod hooks;
pub mod model;
pub mod protocol;
pub mod tools;
