//! `agentloop mcp [--header 'Name: value']... [--call TOOL [--arguments JSON]] URL`: talk to
//! one Streamable HTTP MCP server by hand, as the agent would: connect (the `initialize`
//! handshake), list its tools, and print them or call one and print the result the model
//! would read. A question the server asks during the call (elicitation) is asked on stdin
//! ([`crate::mcp::elicitation::lines`]). The official MCP client conformance suite drives the
//! client through this command.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::launch::ExitStatus;
use crate::mcp::{Connection, ServerConfig};

/// `agentloop mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The server's Streamable HTTP endpoint (e.g. `http://127.0.0.1:3001/mcp`).
    #[arg(value_name = "URL")]
    pub url: String,
    /// A header sent with every request, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Call this tool (its name on the server) instead of listing the tools.
    #[arg(long, value_name = "TOOL")]
    pub call: Option<String>,
    /// The tool's arguments, a JSON object.
    #[arg(long, value_name = "JSON", requires = "call", default_value = "{}")]
    pub arguments: String,
    /// The sign-in, when the server asks for one.
    #[command(flatten)]
    pub oauth: OAuthArgs,
}

/// How `agentloop mcp` signs in to a server that asks for it (OAuth). Secrets come from the
/// environment, never the command line: `MCP_CLIENT_SECRET` (as `claude mcp add
/// --client-secret` reads it) and `MCP_XAA_ID_TOKEN`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OAuthArgs {
    /// A client id registered in advance at the authorization server (its secret, if any, in
    /// `$MCP_CLIENT_SECRET`).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// A PKCS#8 PEM private key the client authenticates with (`private_key_jwt`).
    #[arg(long, value_name = "FILE", requires = "client_id")]
    pub client_key: Option<std::path::PathBuf>,
    /// The URL of agentloop's client metadata document, used as its client id where the
    /// authorization server accepts one.
    #[arg(long, value_name = "URL")]
    pub client_metadata_url: Option<String>,
    /// The loopback port the browser is sent back to (default: any free port).
    #[arg(long, value_name = "PORT")]
    pub callback_port: Option<u16>,
    /// The scopes to ask for, space-separated (default: what the server says it needs).
    #[arg(long, value_name = "SCOPES")]
    pub scope: Option<String>,
    /// The authorization server's metadata URL, instead of discovering it.
    #[arg(long, value_name = "URL")]
    pub auth_server_metadata: Option<String>,
    /// A cross-app sign-in (SEP-990) through this identity provider: its issuer. The user's
    /// ID token from it comes in `$MCP_XAA_ID_TOKEN`.
    #[arg(long, value_name = "ISSUER", requires_all = ["xaa_idp_client_id", "client_id"])]
    pub xaa_idp: Option<String>,
    /// agentloop's client id at that identity provider.
    #[arg(long, value_name = "ID", requires = "xaa_idp")]
    pub xaa_idp_client_id: Option<String>,
}

/// Why `agentloop mcp`'s flags, or the server, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum McpCommandError {
    /// A `--header` that is not `Name: value`.
    #[error("--header `{0}`: expected `Name: value`")]
    Header(String),
    /// A cross-app sign-in without its ID token.
    #[error("--xaa-idp: the ID token comes in ${XAA_ID_TOKEN_VAR}, which is not set")]
    NoIdToken,
    /// The server did not list its tools.
    #[error("tools/list: {0}")]
    ListTools(String),
}

/// The variable holding a pre-registered client's secret.
pub const CLIENT_SECRET_VAR: &str = "MCP_CLIENT_SECRET";

/// The variable holding the ID token of a cross-app sign-in.
pub const XAA_ID_TOKEN_VAR: &str = "MCP_XAA_ID_TOKEN";

impl OAuthArgs {
    /// The sign-in's settings, the secrets read from `var`.
    ///
    /// # Errors
    /// [`McpCommandError::NoIdToken`]: a cross-app sign-in without its ID token.
    pub fn settings(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<crate::mcp::oauth::Settings, McpCommandError> {
        let xaa = match (&self.xaa_idp, &self.xaa_idp_client_id) {
            (Some(issuer), Some(client_id)) => {
                let id_token = var(XAA_ID_TOKEN_VAR).filter(|t| !t.is_empty()).ok_or(McpCommandError::NoIdToken)?;
                Some(crate::mcp::oauth::Xaa { issuer: issuer.clone(), client_id: client_id.clone(), id_token })
            }
            _ => None,
        };
        Ok(crate::mcp::oauth::Settings {
            client_id: self.client_id.clone(),
            client_secret: self.client_id.as_ref().and_then(|_| var(CLIENT_SECRET_VAR)).filter(|s| !s.is_empty()),
            client_key_file: self.client_key.clone(),
            client_metadata_url: self.client_metadata_url.clone(),
            callback_port: self.callback_port,
            auth_server_metadata_url: self.auth_server_metadata.clone(),
            scopes: self.scope.clone(),
            xaa,
        })
    }
}

/// Run `agentloop mcp`: print the server's tools, or the result of `--call`.
pub async fn command(args: McpArgs) -> ExitStatus {
    let headers = match parse_headers(&args.headers) {
        Ok(headers) => headers,
        Err(e) => return usage(&e.to_string()),
    };
    let arguments = match serde_json::from_str::<Value>(&args.arguments) {
        Ok(Value::Object(map)) => map,
        Ok(other) => return usage(&format!("--arguments: expected a JSON object, not {other}")),
        Err(e) => return usage(&format!("--arguments: not valid JSON: {e}")),
    };
    let oauth = match args.oauth.settings(&crate::credentials::var) {
        Ok(settings) => settings,
        Err(e) => return usage(&e.to_string()),
    };
    let config = ServerConfig::Http { url: args.url.clone(), headers, oauth: Some(oauth) };
    // The server's questions to the user are asked here, on stdin.
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    crate::mcp::elicitation::process()
        .answer_with(Arc::new(crate::mcp::elicitation::lines::Lines::new(stdin, |text| eprint!("{text}"))));
    let connection = match crate::mcp::open(&args.url, &config, std::path::Path::new(".")).await {
        Ok(connection) => connection,
        Err(message) => return failed(&format!("{}: {message}", args.url)),
    };
    let code = match (list(&connection).await, &args.call) {
        (Err(e), _) => failed(&e.to_string()),
        (Ok(tools), None) => {
            print_tools(&connection, &tools);
            ExitStatus::Success
        }
        (Ok(_), Some(tool)) => call(&connection, tool, arguments).await,
    };
    connection.close().await;
    code
}

/// `Name: value` pairs, as `curl -H` takes them.
///
/// # Errors
/// [`McpCommandError::Header`]: a pair without a colon or with an empty name.
pub fn parse_headers(pairs: &[String]) -> Result<BTreeMap<String, String>, McpCommandError> {
    pairs
        .iter()
        .map(|pair| match pair.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.trim().to_owned())),
            _ => Err(McpCommandError::Header(pair.clone())),
        })
        .collect()
}

/// The server's tools, as the agent lists them before any call (a tool it does not list is
/// still called, and the server says what it makes of it).
async fn list(connection: &Connection) -> Result<Vec<rmcp::model::Tool>, McpCommandError> {
    connection.peer().list_all_tools().await.map_err(|e| McpCommandError::ListTools(crate::mcp::describe(&e)))
}

/// Print the server, the negotiated protocol version, then one line per tool.
fn print_tools(connection: &Connection, tools: &[rmcp::model::Tool]) {
    let (name, version) = connection
        .peer()
        .peer_info()
        .and_then(|info| info.server_info.as_ref().map(|s| (s.name.clone(), s.version.clone())))
        .unwrap_or_default();
    println!("{name} {version} (protocol {})", connection.protocol_version().unwrap_or_default());
    for tool in tools {
        let description = tool.description.as_deref().unwrap_or_default();
        println!("{}\t{}", tool.name, description.lines().next().unwrap_or_default());
    }
}

/// Call `tool` and print what the model would read; an `isError` result exits 1.
async fn call(connection: &Connection, tool: &str, arguments: serde_json::Map<String, Value>) -> ExitStatus {
    let request = rmcp::model::CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let timeout = crate::mcp::tool_timeout();
    let result = match tokio::time::timeout(timeout, connection.peer().call_tool(request)).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => return failed(&format!("tool `{tool}` failed: {}", crate::mcp::describe(&e))),
        Err(_) => {
            return failed(&format!("tool `{tool}` timed out after {} ms (MCP_TOOL_TIMEOUT)", timeout.as_millis()));
        }
    };
    println!("{}", crate::mcp::tool::render(&result).text);
    ExitStatus::failure_if(result.is_error == Some(true))
}

fn usage(message: &str) -> ExitStatus {
    eprintln!("agentloop mcp: {message}");
    ExitStatus::Usage
}

/// The server failed, or the tool answered with an error.
fn failed(message: &str) -> ExitStatus {
    eprintln!("agentloop mcp: {message}");
    ExitStatus::Failure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_name_colon_value() {
        let pairs = ["Authorization: Bearer a:b".to_owned(), "X-Empty:".to_owned()];
        assert_eq!(
            parse_headers(&pairs).unwrap(),
            BTreeMap::from([("Authorization".into(), "Bearer a:b".into()), ("X-Empty".into(), String::new())])
        );
        assert_eq!(
            parse_headers(&["nocolon".to_owned()]).unwrap_err().to_string(),
            "--header `nocolon`: expected `Name: value`"
        );
        assert_eq!(
            parse_headers(&[": v".to_owned()]).unwrap_err().to_string(),
            "--header `: v`: expected `Name: value`"
        );
    }
}
