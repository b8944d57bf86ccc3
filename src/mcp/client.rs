//! agentloop's side of one MCP connection: the `initialize` handshake it offers
//! ([`client_info`]) and the requests a server may send it — `ping`, and `elicitation/create`,
//! answered through the process's [`Elicitations`]. Sampling and roots are not offered, so a
//! server that asks for them anyway gets rmcp's refusal.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{RequestContext, RoleClient};

use super::elicitation::{self, Elicitations, Request};

/// The client's side of the `initialize` handshake: agentloop's name and version, the newest
/// protocol version that still has a handshake (2025-11-25; the server answers with the
/// version it speaks and the session uses that one), and the elicitation capability in both
/// modes, form and URL, as Claude Code offers it.
pub fn client_info() -> ClientConfig {
    let mut info = ClientConfig::default();
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    info.client_info = Implementation::new("agentloop", env!("CARGO_PKG_VERSION"));
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::new())
            .with_url(UrlElicitationCapability::new()),
    );
    info.capabilities = capabilities;
    info
}

/// The handler of one connection's server requests.
pub struct Client {
    server: String,
    elicitations: Arc<Elicitations>,
}

impl Client {
    /// The client of the server named `server` (in the configuration; its URL for
    /// `agentloop mcp`), its elicitations answered by `elicitations`.
    pub fn new(server: &str, elicitations: Arc<Elicitations>) -> Client {
        Client { server: server.to_owned(), elicitations }
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The client of `server`, answering through the process's elicitations
    /// ([`elicitation::process`]).
    pub fn of(server: &str) -> Client {
        Client::new(server, elicitation::process())
    }
}

impl ClientHandler for Client {
    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let answer = match Request::from_params(&self.server, params) {
            Some(request) => self.elicitations.answer(&request).await,
            None => elicitation::Answer::only(elicitation::Action::Decline),
        };
        Ok(elicitation::result_of(answer))
    }

    fn get_info(&self) -> ClientConfig {
        client_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_offers_elicitation_in_both_modes() {
        let info = serde_json::to_value(client_info()).unwrap();
        assert_eq!(info["protocolVersion"], "2025-11-25");
        assert_eq!(info["capabilities"], serde_json::json!({"elicitation": {"form": {}, "url": {}}}));
        assert_eq!(info["clientInfo"]["name"], "agentloop");
    }
}
