//! What a command's body runs or reads before its prompt goes to the model.
//!
//! - `` !`command` `` (at the start of a line or after a space): the command runs as a `Bash`
//!   call and its output takes the span's place. A call that is refused or fails leaves
//!   `` [!`command` failed: …] `` there instead (and a warning); the prompt still goes to the
//!   model, which reads why (Claude Code ends the prompt there instead).
//! - `@path` (at the start of a line or after a space) naming a file: the file is read as a
//!   `Read` call and its contents go before the prompt in a `<system-reminder>`, as Claude
//!   Code attaches them. A path that names no file is left as text; a read that is refused is
//!   a warning.
//!
//! Both are found in the command's file, before the arguments are put in: arguments can
//! neither start a command nor name a file to read. Every call goes through the caller's
//! [`CallTool`], which for a run is [`ToolboxCaller`]: the same hooks, permission check (with
//! the command's `allowed-tools`), approver and sandbox as the model's own calls.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::CustomCommand;
use super::arguments::{Arguments, has_placeholder};
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::session::Session;
use crate::hooks::HookEnv;
use crate::permissions::Policy;
use crate::tools::orchestrate::{Approvals, Toolbox};
use crate::tools::{ToolCall, ToolContext, ToolOutput};

/// A command run with its arguments, before its spans and references are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The command's name.
    pub name: String,
    /// The arguments as typed.
    pub arguments: String,
    /// Rules that allow tools for this prompt.
    pub allowed_tools: Vec<String>,
    /// This prompt's model, if the command sets one.
    pub model: Option<String>,
    pieces: Vec<Piece>,
    files: Vec<String>,
}

/// A part of the body: text (arguments put in), or a command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Shell(String),
}

/// Runs one tool call for a command (`Bash` for a span, `Read` for a reference).
pub trait CallTool {
    /// Call `tool` with `input`.
    fn call<'a>(&'a self, tool: &'a str, input: Value) -> BoxFuture<'a, ToolOutput>;
}

/// The resolved prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The text the model gets.
    pub text: String,
    /// What the user should know (spans that failed, files that were not read).
    pub warnings: Vec<String>,
}

impl Invocation {
    /// `command` with `arguments`.
    pub fn new(command: &CustomCommand, arguments: &Arguments) -> Invocation {
        let mut pieces: Vec<Piece> =
            spans(&command.body).into_iter().map(|p| p.map_text(|t| arguments.substitute(t))).collect();
        if !arguments.raw.is_empty() && !has_placeholder(&command.body) {
            pieces.push(Piece::Text(format!("\n\nARGUMENTS: {}", arguments.raw)));
        }
        let files = spans(&command.body)
            .iter()
            .filter_map(|p| match p {
                Piece::Text(text) => Some(references(text)),
                Piece::Shell(_) => None,
            })
            .flatten()
            .collect();
        Invocation {
            name: command.name.clone(),
            arguments: arguments.raw.clone(),
            allowed_tools: command.allowed_tools.clone(),
            model: command.model.clone(),
            pieces,
            files,
        }
    }

    /// The prompt: the files referred to that exist under `cwd` (read through `tools`), the
    /// command's name and arguments in Claude Code's tags, and the body with each span's
    /// output.
    pub async fn prompt(&self, cwd: &Path, tools: &dyn CallTool) -> Prompt {
        let mut warnings = Vec::new();
        let mut text = String::new();
        for file in &self.files {
            if !cwd.join(file).is_file() {
                continue;
            }
            let output = tools.call("Read", json!({"file_path": file})).await;
            if output.is_error {
                warnings.push(format!("/{}: @{file} was not read: {}", self.name, output.content));
                continue;
            }
            text.push_str(&format!(
                "<system-reminder>\n/{} refers to @{file}; its contents:\n{}\n</system-reminder>\n",
                self.name,
                output.content.trim_end()
            ));
        }
        text.push_str(&format!(
            "<command-message>{0}</command-message>\n<command-name>/{0}</command-name>\n",
            self.name
        ));
        if !self.arguments.is_empty() {
            text.push_str(&format!("<command-args>{}</command-args>\n", self.arguments));
        }
        text.push('\n');
        for piece in &self.pieces {
            match piece {
                Piece::Text(part) => text.push_str(part),
                Piece::Shell(command) => {
                    let description = format!("!`…` of /{}", self.name);
                    let output = tools.call("Bash", json!({"command": command, "description": description})).await;
                    if output.is_error {
                        let why = output.content.trim_end();
                        warnings.push(format!("/{}: !`{command}` failed: {why}", self.name));
                        text.push_str(&format!("[!`{command}` failed: {why}]"));
                    } else if output.content != crate::tools::bash::NO_OUTPUT {
                        text.push_str(output.content.trim_end());
                    }
                }
            }
        }
        Prompt { text, warnings }
    }
}

impl Invocation {
    /// What this prompt runs with: `options` get the command's model, if it sets one, and the
    /// policy returned is `base` with its `allowed-tools` (see [`Invocation::policy`]).
    pub fn apply(&self, options: &mut EngineOptions, base: &Policy) -> (Policy, Vec<String>) {
        if let Some(model) = &self.model {
            options.model.clone_from(model);
        }
        self.policy(base)
    }

    /// `base` with the command's `allowed-tools` added as allow rules; a rule that does not
    /// parse is left out, with a warning.
    pub fn policy(&self, base: &Policy) -> (Policy, Vec<String>) {
        let mut policy = base.clone();
        let mut warnings = Vec::new();
        for rule in &self.allowed_tools {
            match policy.clone().with_rules(std::slice::from_ref(rule), &[], &[]) {
                Ok(with) => policy = with,
                Err(e) => warnings.push(format!("/{}: allowed-tools: {e}; the rule is left out", self.name)),
            }
        }
        (policy, warnings)
    }

    /// The prompt of this invocation in `session`, its spans run and its files read with
    /// `deps` (whose policy is [`Invocation::policy`]'s).
    pub async fn resolve(&self, deps: &Deps, session: &Session) -> Prompt {
        let transcript = session.transcript.as_ref().map(|t| t.path().to_path_buf());
        let caller = ToolboxCaller::new(deps, &session.id.to_string(), transcript, session.background.clone());
        self.prompt(&deps.cwd, &caller).await
    }
}

impl Piece {
    fn map_text(self, f: impl FnOnce(&str) -> String) -> Piece {
        match self {
            Piece::Text(text) => Piece::Text(f(&text)),
            shell @ Piece::Shell(_) => shell,
        }
    }
}

/// Whether position `at` of `text` starts a span or a reference: the start of the text or of
/// a line, or after whitespace.
fn starts_word(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_none_or(char::is_whitespace)
}

/// The body cut into text and `` !`command` `` spans.
fn spans(body: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = body;
    let mut offset = 0;
    while let Some(at) = rest.find("!`") {
        let absolute = offset + at;
        let after = &rest[at + 2..];
        match after.find('`') {
            Some(end)
                if starts_word(body, absolute) && !after[..end].trim().is_empty() && !after[..end].contains('\n') =>
            {
                text.push_str(&rest[..at]);
                pieces.push(Piece::Text(std::mem::take(&mut text)));
                pieces.push(Piece::Shell(after[..end].to_owned()));
                let consumed = at + 2 + end + 1;
                rest = &rest[consumed..];
                offset += consumed;
            }
            _ => {
                text.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
                offset += at + 2;
            }
        }
    }
    text.push_str(rest);
    pieces.push(Piece::Text(text));
    pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    pieces
}

/// The `@path` references of `text`, without trailing punctuation, each once.
fn references(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (at, _) in text.match_indices('@') {
        if !starts_word(text, at) {
            continue;
        }
        let word = text[at + 1..].split(char::is_whitespace).next().unwrap_or("");
        let path = word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
        if !path.is_empty() && !found.iter().any(|f| f == path) {
            found.push(path.to_owned());
        }
    }
    found
}

/// [`CallTool`] for a run: each call goes through a [`Toolbox`] built from the run's
/// dependencies, with their policy (the caller adds the command's rules to it).
pub struct ToolboxCaller {
    toolbox: Toolbox,
    ctx: ToolContext,
    next: AtomicU32,
}

impl ToolboxCaller {
    /// Calls with `deps` (whose policy already holds the command's `allowed-tools`) for
    /// session `session_id`, whose transcript is `transcript_path`, sharing its background
    /// shells.
    pub fn new(
        deps: &Deps,
        session_id: &str,
        transcript_path: Option<std::path::PathBuf>,
        background: Arc<crate::tools::background::BackgroundShells>,
    ) -> ToolboxCaller {
        let toolbox = Toolbox {
            registry: deps.tools.clone(),
            hooks: deps.hooks.clone(),
            env: HookEnv {
                session_id: session_id.to_owned(),
                cwd: deps.cwd.clone(),
                shell_env: deps.shell_env.clone(),
                transcript_path,
                permission_mode: deps.policy.mode().as_str(),
                sandbox: deps.sandbox.clone(),
            },
            policy: deps.policy.clone(),
            result_cap: crate::tools::orchestrate::DEFAULT_RESULT_CAP,
            spill_dir: std::env::temp_dir().join(format!("agentloop-{session_id}")),
            approvals: Approvals::new(deps.approver.clone(), deps.cancel.clone()),
            effects: deps.effects.clone(),
        };
        let ctx = ToolContext {
            cancel: deps.cancel.clone(),
            shell_env: deps.shell_env.clone(),
            sandbox: deps.sandbox.clone(),
            read_deny: deps.policy.read_deny(),
            background,
            ..ToolContext::new(deps.cwd.clone())
        };
        ToolboxCaller { toolbox, ctx, next: AtomicU32::new(1) }
    }
}

impl CallTool for ToolboxCaller {
    fn call<'a>(&'a self, tool: &'a str, input: Value) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let call = ToolCall { id: format!("toolu_command_{n:02}"), name: tool.to_owned(), input };
            let result = self.toolbox.run_call(&call, self.ctx.clone()).await;
            for warning in result.warnings {
                crate::stderr::line(&format!("agentloop: warning: {warning}"));
            }
            result.output
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers `Bash` with the command upper-cased (or an error for one starting with
    /// `fail`), `Read` with the path's contents marked; records the calls.
    #[derive(Default)]
    struct Fake {
        calls: Mutex<Vec<(String, Value)>>,
    }

    impl CallTool for Fake {
        fn call<'a>(&'a self, tool: &'a str, input: Value) -> BoxFuture<'a, ToolOutput> {
            self.calls.lock().unwrap().push((tool.to_owned(), input.clone()));
            Box::pin(async move {
                match tool {
                    "Bash" if input["command"].as_str().unwrap().starts_with("fail") => {
                        ToolOutput::error("Permission to use Bash was not granted")
                    }
                    "Bash" => ToolOutput::ok(format!("{}\n", input["command"].as_str().unwrap().to_uppercase())),
                    _ if input["file_path"] == "secret.txt" => ToolOutput::error("denied by Read(./secret.txt)"),
                    _ => ToolOutput::ok(format!("1\tcontents of {}", input["file_path"].as_str().unwrap())),
                }
            })
        }
    }

    fn command(body: &str) -> CustomCommand {
        CustomCommand {
            name: "cmd".into(),
            description: String::new(),
            argument_hint: String::new(),
            allowed_tools: vec!["Bash(git status:*)".into()],
            model: Some("claude-haiku-4-5".into()),
            body: body.into(),
            source: crate::settings::SettingSource::Project,
            path: "cmd.md".into(),
        }
    }

    async fn prompt(body: &str, args: &str, cwd: &Path) -> (Prompt, Vec<(String, Value)>) {
        let fake = Fake::default();
        let invocation = command(body).invoke(args);
        let prompt = invocation.prompt(cwd, &fake).await;
        (prompt, fake.calls.into_inner().unwrap())
    }

    #[tokio::test]
    async fn the_prompt_carries_claude_codes_tags_and_the_body() {
        let dir = tempfile::tempdir().unwrap();
        let (p, calls) = prompt("Args: $ARGUMENTS one=$0\n", "alpha beta", dir.path()).await;
        assert_eq!(
            p.text,
            "<command-message>cmd</command-message>\n<command-name>/cmd</command-name>\n\
<command-args>alpha beta</command-args>\n\nArgs: alpha beta one=alpha\n"
        );
        assert_eq!((p.warnings, calls), (vec![], vec![]));
        let (p, _) = prompt("No placeholder.\n", "x y", dir.path()).await;
        assert!(p.text.ends_with("\n\nNo placeholder.\n\n\nARGUMENTS: x y"), "{}", p.text);
        let (p, _) = prompt("Plain.", "", dir.path()).await;
        assert_eq!(p.text, "<command-message>cmd</command-message>\n<command-name>/cmd</command-name>\n\nPlain.");
        let invocation = command("x").invoke("");
        assert_eq!(
            (invocation.model.as_deref(), invocation.allowed_tools.as_slice()),
            (Some("claude-haiku-4-5"), ["Bash(git status:*)".to_owned()].as_slice())
        );
    }

    #[tokio::test]
    async fn spans_run_as_bash_calls_and_failures_are_shown() {
        let dir = tempfile::tempdir().unwrap();
        let body = "Status: !`git status`\n!`fail here` and `!` or a!`not this` `!`x` end";
        let (p, calls) = prompt(body, "", dir.path()).await;
        assert!(
            p.text.ends_with(
                "\n\nStatus: GIT STATUS\n[!`fail here` failed: Permission to use Bash was not granted] and `!` or \
a!`not this` `!`x` end"
            ),
            "{}",
            p.text
        );
        assert_eq!(p.warnings, ["/cmd: !`fail here` failed: Permission to use Bash was not granted"]);
        assert_eq!(
            calls,
            [
                ("Bash".to_owned(), json!({"command": "git status", "description": "!`…` of /cmd"})),
                ("Bash".to_owned(), json!({"command": "fail here", "description": "!`…` of /cmd"})),
            ]
        );
    }

    #[tokio::test]
    async fn arguments_neither_start_commands_nor_name_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "n").unwrap();
        let (p, calls) = prompt("Do $ARGUMENTS", "!`rm -rf x` @notes.txt", dir.path()).await;
        assert!(p.text.ends_with("\n\nDo !`rm -rf x` @notes.txt"), "{}", p.text);
        assert_eq!(calls, vec![]);
    }

    #[tokio::test]
    async fn files_referred_to_are_read_and_attached() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        let body = "See @notes.txt, @missing.txt, @secret.txt and mail@notes.txt; again @notes.txt.";
        let (p, calls) = prompt(body, "", dir.path()).await;
        assert!(
            p.text.starts_with(
                "<system-reminder>\n/cmd refers to @notes.txt; its contents:\n1\tcontents of notes.txt\n\
</system-reminder>\n<command-message>cmd</command-message>"
            ),
            "{}",
            p.text
        );
        assert!(p.text.ends_with(&format!("\n\n{body}")));
        assert_eq!(p.warnings, ["/cmd: @secret.txt was not read: denied by Read(./secret.txt)"]);
        assert_eq!(
            calls,
            [
                ("Read".to_owned(), json!({"file_path": "notes.txt"})),
                ("Read".to_owned(), json!({"file_path": "secret.txt"})),
            ]
        );
    }
}
