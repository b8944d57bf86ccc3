//! `agentloop auth status`: which credential agentloop would use, in the shape `claude auth
//! status --json` prints (the Claude ACP adapter runs it to show the session's identity).
//!
//! agentloop has no sign-in of its own: it is logged in when `ANTHROPIC_API_KEY` (an API key)
//! or `ANTHROPIC_AUTH_TOKEN` (a bearer token) is set, as the model client reads them. Like
//! Claude Code it exits 1 when neither is.

use serde_json::{Value, json};

use crate::credentials::Credential;
use crate::launch::ExitStatus;
use crate::session::SessionStore;

/// `agentloop auth`'s subcommands.
#[derive(Debug, Clone, clap::Args)]
pub struct AuthArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: AuthCommand,
}

/// `agentloop auth …`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum AuthCommand {
    /// Show which credential the model client would use (JSON by default).
    Status(StatusArgs),
}

/// `agentloop auth status` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// Print JSON (the default).
    #[arg(long, conflicts_with = "text")]
    pub json: bool,
    /// Print one line of text instead.
    #[arg(long)]
    pub text: bool,
}

/// The JSON `auth status` prints for `credential`, with the session store's root `home`
/// (`None` when neither `AGENTLOOP_HOME` nor `HOME` is set). The keys are Claude Code's;
/// `analyticsDisabled` is true (agentloop sends no analytics) and no console sign-in is
/// offered.
pub fn status_json(credential: Credential, home: Option<&std::path::Path>) -> Value {
    let method = match credential {
        Credential::ApiKey => "api_key",
        Credential::AuthToken => "oauth_token",
        Credential::None => "none",
    };
    let mut status = json!({
        "loggedIn": credential != Credential::None,
        "authMethod": method,
        "apiProvider": "firstParty",
        "analyticsDisabled": true,
        "projectsDirectory": home.map(|h| h.join("projects")),
        "configDirectory": home,
        "loginExpiresAt": null,
        "consoleProfileSignInOffered": false,
    });
    if credential == Credential::ApiKey {
        status["apiKeySource"] = json!("ANTHROPIC_API_KEY");
    }
    status
}

/// The line `auth status --text` prints for `credential`.
pub fn status_text(credential: Credential) -> &'static str {
    match credential {
        Credential::ApiKey => "API key: ANTHROPIC_API_KEY",
        Credential::AuthToken => "Auth token: ANTHROPIC_AUTH_TOKEN",
        Credential::None => "Not logged in. Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to authenticate.",
    }
}

/// Run `agentloop auth …`; returns the exit status (1 when not logged in, as Claude Code).
pub fn command(args: &AuthArgs) -> ExitStatus {
    match &args.command {
        AuthCommand::Status(status) => {
            let credential = Credential::from_lookup(crate::credentials::var);
            if status.text {
                println!("{}", status_text(credential));
            } else {
                let store = SessionStore::from_env().ok();
                let json = status_json(credential, store.as_ref().map(SessionStore::home));
                println!("{}", serde_json::to_string_pretty(&json).expect("a JSON value prints"));
            }
            ExitStatus::failure_if(credential == Credential::None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn the_credential_is_chosen_as_the_model_client_chooses() {
        let both = [("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_AUTH_TOKEN", "t")];
        assert_eq!(Credential::from_lookup(lookup(&both)), Credential::ApiKey);
        let token = [("ANTHROPIC_API_KEY", "  "), ("ANTHROPIC_AUTH_TOKEN", "t")];
        assert_eq!(Credential::from_lookup(lookup(&token)), Credential::AuthToken);
        assert_eq!(Credential::from_lookup(lookup(&[])), Credential::None);
    }

    #[test]
    fn the_json_has_claude_codes_keys() {
        let home = Path::new("/h/.agentloop");
        assert_eq!(
            status_json(Credential::ApiKey, Some(home)),
            json!({"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty",
                   "analyticsDisabled": true, "projectsDirectory": "/h/.agentloop/projects",
                   "configDirectory": "/h/.agentloop", "loginExpiresAt": null,
                   "consoleProfileSignInOffered": false, "apiKeySource": "ANTHROPIC_API_KEY"})
        );
        let none = status_json(Credential::None, None);
        assert_eq!((&none["loggedIn"], &none["authMethod"]), (&json!(false), &json!("none")));
        assert_eq!((&none["projectsDirectory"], &none["configDirectory"]), (&Value::Null, &Value::Null));
        assert!(none.get("apiKeySource").is_none());
        assert_eq!(status_json(Credential::AuthToken, Some(home))["authMethod"], "oauth_token");
    }
}
