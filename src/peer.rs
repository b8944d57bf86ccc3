//! Requests agentloop makes of the program that drives it (the Claude Agent SDK's control
//! protocol: hook callbacks, permission questions, messages to its in-process MCP servers),
//! and why one got no answer to use. The SDK mode answers them ([`crate::sdk::control`]);
//! the hooks and the MCP client only ask ([`crate::hooks::command::HookCallbacks`],
//! [`crate::mcp::sdk::Channel`]).

/// Why a request to the driving program got no answer to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// It answered with an error; its text.
    #[error("{0}")]
    Answered(String),
    /// Its input is closed: nobody can answer.
    #[error("the SDK's input is closed: nobody can answer")]
    Closed,
    /// Its input closed before it answered.
    #[error("the SDK's input closed before it answered")]
    ClosedBeforeAnswer,
}
