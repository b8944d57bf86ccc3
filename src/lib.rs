//! agentloop: a coding-agent engine whose loop is an explicit hierarchical state machine.
//!
//! Layout:
//! - [`protocol`]: wire types of the Messages API, no logic.
//! - [`model`]: the `Model` seam, stream assembly, the scripted model and the Anthropic client.
//! - [`scenario`]: the scenario format that scripts a run for the scripted model.
//! - [`engine`]: the transition table, the statig machine, the trace.
//! - [`audit`]: proofs over the table, trace replay, diagrams.
//! - [`tools`]: the tools the model calls.
//! - [`permissions`]: the permission boundary: modes, rules, Bash analysis against them.
//! - [`shell`]: what a Bash command line would run, read off a real shell grammar.
//! - [`mcp`]: the MCP client: tools from Model Context Protocol servers.
//! - [`hooks`]: Stop / PreToolUse / PostToolUse hooks in Claude Code's settings format.
//! - [`process_group`]: the process groups of running commands, killed whole.
//! - [`credentials`]: the model credentials and other secrets, kept out of the process's
//!   environment and its `/proc` files.
//! - [`context`]: token estimates, collapse and compaction.
//! - [`settings`]: where settings come from (`--setting-sources`), merged; frontmatter files.
//! - [`session`]: the on-disk session store: JSONL transcripts, loading, repair, listing.
//! - [`harness`]: runs a scenario end to end (demo, tests, benchmarks).
//! - [`commands`]: custom slash commands (`.claude/commands/*.md`).
//! - [`launch`]: what a front end needs to start a run: the run spec, its output, signals,
//!   the session, the exit status.
//! - [`interactive`], [`sdk`]: the terminal session and the Claude Agent SDK's protocol.
//! - [`cli`]: the `agentloop` command line.
#![warn(missing_docs)]

pub mod audit;
pub mod cli;
pub mod commands;
pub mod context;
pub mod credentials;
pub mod engine;
mod error_chain;
pub mod harness;
pub mod hooks;
pub mod interactive;
mod json_path;
pub mod json_schema;
pub mod launch;
pub mod mcp;
pub mod model;
pub mod peer;
pub mod permissions;
pub mod process_group;
pub mod protocol;
pub mod sandbox;
pub mod scenario;
pub mod sdk;
pub mod session;
pub mod settings;
pub mod shell;
mod stderr;
pub mod table;
pub mod tools;
