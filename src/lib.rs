//! agentloop: a coding-agent engine whose loop is an explicit hierarchical state machine,
//! driven by the transition table `transitions/loop.toml`.
//!
//! # Embedding the engine
//!
//! A run needs a [`Model`] (what answers the requests), a [`Registry`] of [`Tool`]s (what the
//! model may call), and the rest of its [`Deps`]: the hooks, the effects (the clock, message
//! ids, and the journal of a durable run: [`engine::effects`]), the permission
//! policy, the shell environment and sandbox of commands, and who is asked when the policy
//! cannot decide. [`run`] drives the machine on a prompt with [`EngineOptions`] until it
//! reaches a terminal reason; every [`EngineEvent`] goes to the [`EventSink`] given (a
//! closure will do), and the [`RunOutcome`] holds the conversation, the final text, the usage
//! and the trace: one [`TraceRecord`] per transition. [`run_prompt`] goes on an existing
//! [`Session`] instead (several prompts, a transcript on disk).
//!
//! `examples/embed.rs` is the whole of it, runnable with `cargo run --example embed`: a
//! custom tool, a custom model that calls it and then answers, one run, its trace. In
//! outline:
//!
//! ```ignore
//! let mut tools = Registry::new();
//! tools.register(Arc::new(Shout));                    // impl Tool for Shout
//! let deps = Deps {
//!     model: Arc::new(Relay),                         // impl Model for Relay
//!     tools,
//!     hooks: Arc::new(NoHooks),
//!     effects: Arc::new(SystemClock::new()),
//!     cancel: CancellationToken::new(),
//!     cwd: cwd.clone(),
//!     policy: Arc::new(Policy::new(Mode::Default, cwd)),
//!     shell_env: ShellEnv::inherited_default(),
//!     sandbox: Sandbox::none(),
//!     approver: Arc::new(Unattended),
//! };
//! let outcome = agentloop::run(deps, EngineOptions::default(), "hello", Box::new(|_: &EngineEvent| {})).await?;
//! for record in &outcome.trace { /* record.edge, record.from, record.to, record.reason … */ }
//! ```
//!
//! The public API, and nothing else of the crate, is:
//! - the items re-exported here, the core of a run;
//! - [`protocol`]: the Messages API's wire types, what models, tools and the trace speak;
//! - [`model`]: the [`Model`] seam, its [`ReplyStream`] ([`model::reply`]: built from events,
//!   or from a whole message with [`model::reply::whole`]), the [`model::assemble::Assembler`]
//!   that reads one, and the two models shipped: [`model::anthropic::AnthropicModel`] (the
//!   Messages API) and [`model::scripted::ScriptedModel`] (a scenario);
//! - [`tools`]: the [`Tool`] trait with what a call gets and gives ([`tools::ToolContext`],
//!   [`tools::ToolOutput`]), the [`Registry`], and the built-in tools;
//! - [`permissions`]: the [`permissions::Policy`] (modes and rules), the
//!   [`permissions::Approver`] seam;
//! - [`hooks`]: the [`hooks::Hooks`] seam, and [`hooks::command::CommandHooks`] that runs
//!   Claude Code's hook settings ([`hooks::settings`]);
//! - [`sandbox`]: how commands are confined ([`sandbox::Sandbox`]); a binary that runs them
//!   sandboxed dispatches [`sandbox::helper`] first thing;
//! - [`session`]: transcripts on disk: the store, writing, loading and repair;
//! - [`scenario`] and [`harness`]: a run scripted by a scenario file, end to end, for tests;
//! - [`json_schema`]: the schema a structured answer is checked against;
//! - [`credentials::seal`]: the model credentials taken out of the process's environment;
//! - [`engine`], [`table`], [`audit`]: the machine, the table and its proofs, public as they
//!   are for now;
//! - [`Cli`], [`run_cli`] and [`ExitStatus`]: the `agentloop` command line, for the binary.
//!
//! Every other module is the crate's own: the command line's parts, the terminal session,
//! the Claude Agent SDK's protocol and the launch layer they share, the MCP client, the
//! settings files, the shell reader. (`internals`, hidden from these docs, lends a few of
//! them to the fuzz targets, the benchmarks and some integration tests; it is not API.)
//!
//! # Layout
//!
//! - [`protocol`]: wire types of the Messages API, no logic.
//! - [`model`]: the `Model` seam, stream assembly, the scripted model and the Anthropic client.
//! - [`scenario`]: the scenario format that scripts a run for the scripted model.
//! - [`engine`]: the transition table, the statig machine, the trace.
//! - [`audit`]: proofs over the table, trace replay, diagrams.
//! - [`table`]: the one reader of the table format.
//! - [`tools`]: the tools the model calls.
//! - [`permissions`]: the permission boundary: modes, rules, Bash analysis against them.
//! - `shell`: what a Bash command line would run, read off a real shell grammar.
//! - `mcp`: the MCP client: tools from Model Context Protocol servers.
//! - [`hooks`]: Stop / PreToolUse / PostToolUse hooks in Claude Code's settings format.
//! - `process_group`: the process groups of running commands, killed whole.
//! - [`credentials`]: the model credentials and other secrets, kept out of the process's
//!   environment and its `/proc` files.
//! - `context`: token estimates, collapse and compaction.
//! - `settings`: where settings come from (`--setting-sources`), merged; frontmatter files.
//! - [`session`]: the on-disk session store: JSONL transcripts, loading, repair, listing.
//! - [`harness`]: runs a scenario end to end (demo, tests, benchmarks).
//! - `commands`: custom slash commands (`.claude/commands/*.md`).
//! - `agents`: subagent definitions (`.claude/agents/*.md`, `--agents`, the SDK's).
//! - `launch`: what a front end needs to start a run, below the command line: the run spec,
//!   its output, signals, the session, the exit status ([`ExitStatus`]).
//! - `interactive`, `sdk`: the terminal session and the Claude Agent SDK's protocol, on the
//!   launch layer.
//! - `cli`: the `agentloop` command line: clap's flags, resolved onto the launch layer.
#![warn(missing_docs)]

pub mod agents;
pub mod audit;
pub(crate) mod cli;
pub(crate) mod commands;
pub(crate) mod context;
pub mod credentials;
pub mod engine;
mod error_chain;
pub mod harness;
pub mod hooks;
mod http_client;
pub(crate) mod interactive;
#[doc(hidden)]
pub mod internals;
mod json_path;
pub mod json_schema;
pub(crate) mod launch;
pub(crate) mod mcp;
pub mod model;
pub(crate) mod peer;
pub mod permissions;
pub(crate) mod process_group;
pub mod protocol;
pub mod sandbox;
pub mod scenario;
pub(crate) mod sdk;
pub mod session;
pub(crate) mod settings;
pub(crate) mod shell;
mod stderr;
pub mod table;
pub mod telemetry;
pub mod tools;
pub mod trace_view;

pub use cli::{Cli, main as run_cli};
pub use engine::clock::{Clock, SystemClock};
pub use engine::effects::Effects;
pub use engine::events::{EngineEvent, EventSink};
pub use engine::machine::Deps;
pub use engine::options::EngineOptions;
pub use engine::reason::TerminalReason;
pub use engine::run::{EngineError, RunOutcome, run, run_prompt};
pub use engine::session::Session;
pub use engine::trace::TraceRecord;
pub use launch::{ExitStatus, Stop};
pub use model::{Model, ModelError, ModelRequest, ReplyStream};
pub use tools::{Registry, Tool};
