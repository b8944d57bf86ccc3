//! What a front end needs to start a run, below the command line: the terminal session
//! ([`crate::interactive`]), the Claude Agent SDK's protocol ([`crate::sdk`]) and the headless
//! command line (`cli`) are peers on it, and nothing below them imports `cli`. Errors are
//! typed from here down; their messages are what the user reads.
//!
//! - [`spec`]: [`spec::RunSpec`], a run resolved and ready for the engine, and how it is printed.
//! - [`session`]: the session a run goes on (new, resumed, forked, in memory).
//! - [`output`]: the sink that prints a run (text, JSON, stream-json) and its result object.
//! - [`signals`]: SIGINT, SIGTERM, SIGHUP and a closed stdout, each a [`Stop`].
//! - [`stdio`]: a stdout that notices when it is closed and cancels the run (stderr's lines,
//!   which every module writes, are `crate::stderr`'s).
//! - [`exit`]: [`ExitStatus`], every exit code the process can end with.

pub mod exit;
pub mod output;
pub mod session;
pub mod signals;
pub mod spec;
pub mod stdio;

pub use exit::ExitStatus;
pub use signals::Stop;
