//! The interactive session: `agentloop` on a terminal with no `-p`. Each line typed at the
//! `> ` prompt runs as a prompt on one session; the answer streams as it arrives, tool calls
//! show as a line when they start and when they finish, a status line names the state the
//! machine is in, permission questions are answered with one key (an MCP server's questions to
//! the user are asked the same way, [`elicit`]), and Ctrl+C interrupts a
//! turn through the engine's abort edges (the transcript stays consistent).
//!
//! The turn runs on the main task (the machine's future is not `Send`) while the same
//! `select!` waits for signals and ticks the status line; the line editor and the turn's key
//! reader run on threads of their own. Keys typed during a turn are typed ahead (see
//! [`keys`]): echoed under the status line, queued with Enter, run in order when the turn
//! ends; an interrupt puts them back into the editor's line instead.

pub mod approver;
pub mod commands;
pub mod editor;
pub mod elicit;
pub mod keys;
pub mod memory;
pub mod render;
pub mod status;
pub mod term;

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::engine::clock::SystemClock;
use crate::engine::compact;
use crate::engine::events::{EngineEvent, EventSink};
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::reason::TerminalReason;
use crate::engine::run::{RunOutcome, header, run_prompt};
use crate::engine::session::Session;
use crate::engine::trace::{TraceFormat, TraceWriter};
use crate::hooks::command::CommandHooks;
use crate::hooks::settings::Settings;
use crate::launch::ExitStatus;
use crate::launch::session::{self, SessionOptions};
use crate::launch::signals::{Signals, Stop};
use crate::launch::spec::{DEFAULT_MODEL, RunSpec};
use crate::model::Model;
use crate::permissions::Policy;
use crate::permissions::approver::Approver;
use crate::protocol::{Role, Usage};
use crate::tools::Registry;
use crate::tools::shell_env::ShellEnv;
use approver::TerminalApprover;
use commands::Command;
use editor::{Input, LineEditor};
use keys::Keyboard;
use render::{DIM, RED, Screen, Style, YELLOW};
use status::Status;

/// Sessions `/resume` lists.
const RESUME_LIST: usize = 10;

/// How often the status line's clock is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// Run the interactive session until the user leaves; `first` is run as the first prompt.
/// Returns the exit status.
pub async fn run(spec: RunSpec, session_flags: SessionOptions, first: Option<String>) -> ExitStatus {
    let history = crate::session::paths::home_from(std::env::var_os("AGENTLOOP_HOME"), std::env::var_os("HOME"))
        .map(|home| home.join("history"));
    // The editor first: it installs a SIGINT handler of its own, which is dropped here so
    // that the one installed next (which would chain to it) is alone.
    let completions = commands::BUILT_IN_NAMES
        .iter()
        .map(|&name| name.to_owned())
        .chain(spec.commands.iter().map(|c| c.name.clone()))
        .collect();
    let editor = LineEditor::start(history, completions);
    // SAFETY: setting a signal's disposition to the default; nothing else runs handlers yet.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
    let signals = match Signals::install() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("agentloop: cannot catch signals: {e}");
            return ExitStatus::Internal;
        }
    };
    let terminal = term::Terminal::save();
    let screen = Screen::stdout(Style::detect());
    let RunSpec {
        cwd,
        options,
        model,
        settings,
        policy,
        session,
        mut tools,
        trace,
        mcp,
        sandbox,
        commands: custom,
        memory,
        ..
    } = spec;
    // MCP servers started while the session was prepared; they are up (or a warning names
    // each failed one) before the first prompt.
    let statuses = mcp.finish(&mut tools).await;
    let connected: Vec<&str> = statuses.iter().filter(|s| s.status == "connected").map(|s| s.name.as_str()).collect();
    if !connected.is_empty() {
        eprintln!("MCP servers: {}", connected.join(", "));
    }
    let keyboard = Keyboard::new(screen.clone());
    // An MCP server's questions to the user are asked here too.
    crate::mcp::elicitation::process()
        .answer_with(Arc::new(elicit::TerminalAsker::new(screen.clone(), keyboard.clone())));
    let mut it = Interactive {
        approver: Arc::new(TerminalApprover::new(screen.clone(), keyboard.clone())),
        keyboard,
        shell_env: Arc::new(ShellEnv::inherited(&settings.shell_environment.keep)),
        sandbox,
        screen,
        terminal,
        signals,
        editor,
        cwd,
        options,
        model,
        settings,
        policy,
        session,
        tools,
        session_flags,
        custom,
        memory,
        totals: Totals::default(),
        // `--trace` starts with /trace on.
        trace: trace.format.is_some(),
    };
    // However the session ends (a panic included), the terminal gets its mode back.
    let _restore = RestoreOnDrop(terminal);
    it.banner();
    it.main_loop(first).await
}

struct RestoreOnDrop(term::Terminal);

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        self.0.restore();
    }
}

/// Tokens and dollars of the prompts run so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Prompts run.
    pub prompts: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_tokens: u64,
    /// USD.
    pub cost_usd: f64,
}

impl Totals {
    /// Add one prompt's outcome.
    pub fn add(&mut self, outcome: &RunOutcome) {
        self.prompts += 1;
        self.input_tokens += outcome.usage.input_tokens;
        self.output_tokens += outcome.usage.output_tokens;
        self.cache_write_tokens += outcome.usage.cache_creation_input_tokens;
        self.cache_read_tokens += outcome.usage.cache_read_input_tokens;
        self.cost_usd += outcome.cost_usd;
    }

    /// Add the usage of a request outside the prompts (`/compact`'s summary).
    pub fn add_usage(&mut self, usage: &Usage, cost_usd: f64) {
        self.input_tokens += usage.input_tokens.unwrap_or(0);
        self.output_tokens += usage.output_tokens.unwrap_or(0);
        self.cache_write_tokens += usage.cache_creation_input_tokens.unwrap_or(0);
        self.cache_read_tokens += usage.cache_read_input_tokens.unwrap_or(0);
        self.cost_usd += cost_usd;
    }

    /// What `/cost` prints.
    pub fn describe(&self) -> String {
        format!(
            "{} prompt(s) · {} input + {} output tokens (cache: {} written, {} read) · ${:.4}",
            self.prompts,
            self.input_tokens,
            self.output_tokens,
            self.cache_write_tokens,
            self.cache_read_tokens,
            self.cost_usd
        )
    }
}

struct Interactive {
    screen: Screen,
    terminal: term::Terminal,
    keyboard: Keyboard,
    signals: Signals,
    editor: LineEditor,
    cwd: std::path::PathBuf,
    options: EngineOptions,
    model: Arc<dyn Model>,
    settings: Settings,
    policy: Policy,
    session: Session,
    tools: Registry,
    shell_env: Arc<ShellEnv>,
    sandbox: Arc<crate::sandbox::Sandbox>,
    approver: Arc<dyn Approver>,
    session_flags: SessionOptions,
    /// The custom slash commands.
    custom: Arc<crate::commands::Commands>,
    /// The memory loaded at the start of the session (`/memory`).
    memory: Arc<crate::context::memory::Memory>,
    totals: Totals,
    trace: bool,
}

/// What the loop does after a line.
enum Next {
    Continue,
    Exit(ExitStatus),
}

impl Interactive {
    fn banner(&self) {
        let style = self.screen.style;
        self.screen.line(&format!(
            "agentloop {} · {} · {}",
            env!("CARGO_PKG_VERSION"),
            self.options.model,
            self.cwd.display()
        ));
        self.screen.line(&style.paint(DIM, "/help for commands · Ctrl+C interrupts a reply · Ctrl+D leaves"));
        let messages = self.session.messages.to_messages();
        if !messages.is_empty() {
            self.screen.line(&style.paint(DIM, &format!("resumed session {} — the last exchanges:", self.session.id)));
            for line in last_exchanges(&messages, 3) {
                self.screen.line(&line);
            }
        }
    }

    async fn main_loop(&mut self, first: Option<String>) -> ExitStatus {
        let mut pending = first;
        let mut interrupts = 0;
        loop {
            // The first prompt, then the ones queued during a turn (shown as if typed), then
            // the editor, its line pre-filled with what was left unfinished.
            let queued = || {
                let prompt = self.keyboard.pop_queued()?;
                self.screen.line(&format!("> {prompt}"));
                Some(prompt)
            };
            let input = match pending.take().or_else(queued) {
                Some(prompt) => Input::Line(prompt),
                None => {
                    self.terminal.restore();
                    let initial = self.keyboard.take_buffer();
                    tokio::select! {
                        input = self.editor.read("> ", initial) => input,
                        stop = self.signals.next() => match stop {
                            // A Ctrl+C that arrives after its turn ended: as one at the prompt.
                            Stop::Interrupt => Input::Interrupted,
                            other => return other.exit_status(),
                        },
                    }
                }
            };
            let line = match input {
                Input::Eof => return ExitStatus::Success,
                Input::Interrupted => {
                    interrupts += 1;
                    if interrupts >= 2 {
                        return ExitStatus::Success;
                    }
                    self.screen.line(&self.screen.style.paint(DIM, "(Ctrl+C again to leave, or Ctrl+D)"));
                    continue;
                }
                Input::Line(line) => line,
            };
            interrupts = 0;
            if line.trim().is_empty() {
                continue;
            }
            let custom = self.custom.find(&line).map(|(command, arguments)| command.invoke(arguments));
            let next = match (commands::parse(&line), custom) {
                (Some(Command::Compact(instructions)), _) => self.compact(instructions.as_deref()).await,
                (Some(Command::Memory(Some(which))), _) => self.open_memory(&which).await,
                (Some(Command::Init(extra)), _) => self.turn(&commands::init_prompt(extra.as_deref()), None).await,
                // A custom command by a name no built-in command has.
                (Some(Command::Unknown(_)), Some(invocation)) => self.turn(&line, Some(invocation)).await,
                (Some(command), _) => self.command(command),
                (None, _) => self.turn(&line, None).await,
            };
            if let Next::Exit(code) = next {
                return code;
            }
        }
    }

    fn command(&mut self, command: Command) -> Next {
        let style = self.screen.style;
        match command {
            Command::Help => {
                self.screen.line(commands::HELP);
                for line in commands::custom_help(&self.custom) {
                    self.screen.line(&line);
                }
            }
            Command::Cost => self.screen.line(&self.totals.describe()),
            Command::Trace => {
                self.trace = !self.trace;
                self.screen.line(if self.trace { "trace on: every transition is shown" } else { "trace off" });
            }
            Command::Clear => match session::open(
                &SessionOptions {
                    no_session_persistence: self.session_flags.no_session_persistence,
                    ..SessionOptions::default()
                },
                &self.cwd,
            ) {
                Ok(mut session) => {
                    let sha = self.options.table().sha256.clone();
                    session::write_meta(&mut session, &self.options.model, &sha, self.policy.mode().as_str());
                    self.options.run_id = session.id.to_string();
                    session.nested_memory = Arc::new(self.session.nested_memory.restarted());
                    self.session = session;
                    self.screen.line(&format!("new session {}", self.session.id));
                }
                Err(e) => self.screen.line(&style.paint(RED, &format!("cannot start a new session: {e}"))),
            },
            Command::Model(None) => self.screen.line(&format!("model: {}", self.options.model)),
            Command::Model(Some(name)) => match crate::model::check_model_name(&name) {
                Ok(()) => {
                    self.options.model = name;
                    self.screen.line(&format!("model: {}", self.options.model));
                }
                Err(e) => self.screen.line(&style.paint(RED, &format!("{e} (default {DEFAULT_MODEL})"))),
            },
            Command::Permissions => self.screen.line(&permissions_text(&self.policy)),
            Command::Resume(which) => self.resume(which.as_deref()),
            Command::Memory(None) => {
                for line in memory::listing(&self.memory, &self.session.nested_memory.attached()) {
                    self.screen.line(&line);
                }
            }
            // Async: run by the main loop.
            Command::Compact(_) | Command::Memory(Some(_)) | Command::Init(_) => {}
            Command::Exit => return Next::Exit(ExitStatus::Success),
            Command::Unknown(name) => {
                self.screen.line(&style.paint(YELLOW, &format!("unknown command /{name}; /help lists them")));
            }
        }
        Next::Continue
    }

    /// `/resume`: list this directory's sessions (numbered, newest first), or reopen one.
    fn resume(&mut self, which: Option<&str>) {
        let style = self.screen.style;
        let cwd = std::fs::canonicalize(&self.cwd).unwrap_or_else(|_| self.cwd.clone());
        let listed = crate::session::SessionStore::from_env().and_then(|store| store.list(&cwd));
        let sessions = match listed {
            Ok(sessions) => sessions,
            Err(e) => return self.screen.line(&style.paint(RED, &format!("cannot list the sessions: {e}"))),
        };
        let Some(which) = which else {
            if sessions.is_empty() {
                return self.screen.line("no sessions in this directory");
            }
            for (n, s) in sessions.iter().take(RESUME_LIST).enumerate() {
                let prompt = s.first_prompt.as_deref().unwrap_or("").lines().next().unwrap_or("");
                let current = if s.id == self.session.id { " (this session)" } else { "" };
                self.screen.line(&format!(
                    "{:>2}. {}  {} prompt(s)  {}{current}",
                    n + 1,
                    s.id,
                    s.prompts,
                    render::shorten(prompt, 50)
                ));
            }
            return self.screen.line(&style.paint(DIM, "/resume N (or an id) reopens one"));
        };
        let id = match which.parse::<usize>() {
            Ok(n) if (1..=sessions.len().min(RESUME_LIST)).contains(&n) => sessions[n - 1].id.to_string(),
            Ok(n) => return self.screen.line(&style.paint(RED, &format!("no session number {n}; /resume lists them"))),
            Err(_) => which.to_owned(),
        };
        if crate::session::Uuid::parse(&id).is_ok_and(|id| id == self.session.id) {
            // Its transcript is this process's to write: reopening it would find it in use.
            return self.screen.line(&format!("session {id} is the current session"));
        }
        let args = SessionOptions {
            resume: Some(id),
            no_session_persistence: self.session_flags.no_session_persistence,
            ..SessionOptions::default()
        };
        match session::open(&args, &cwd) {
            Ok(mut session) => {
                self.options.run_id = session.id.to_string();
                // A reopened conversation starts again from the start's memory: what an earlier
                // process attached to its history may be attached once more.
                session.nested_memory = Arc::new(self.session.nested_memory.restarted());
                self.session = session;
                self.screen.line(&format!("resumed session {} — the last exchanges:", self.session.id));
                for line in last_exchanges(&self.session.messages.to_messages(), 3) {
                    self.screen.line(&line);
                }
            }
            Err(e) => self.screen.line(&style.paint(RED, &e.to_string())),
        }
    }

    /// `/memory N`: open memory file N in the user's editor, on the terminal, until it exits.
    async fn open_memory(&mut self, which: &str) -> Next {
        let style = self.screen.style;
        let attached = self.session.nested_memory.attached();
        let files = memory::numbered(&self.memory, &attached);
        let path = match which.parse::<usize>() {
            Ok(n) if (1..=files.len()).contains(&n) => files[n - 1].path.clone(),
            _ => {
                self.screen.line(&style.paint(RED, &format!("no memory file {which}; /memory lists them")));
                return Next::Continue;
            }
        };
        let Some(editor) = memory::editor_command(std::env::var_os("VISUAL"), std::env::var_os("EDITOR")) else {
            let line = format!("no editor to open {}: set $VISUAL or $EDITOR", path.display());
            self.screen.line(&style.paint(YELLOW, &line));
            return Next::Continue;
        };
        self.terminal.restore();
        let mut child = match memory::command(&editor, &path).spawn() {
            Ok(child) => child,
            Err(e) => {
                self.screen.line(&style.paint(RED, &format!("cannot start the editor `{editor}`: {e}")));
                return Next::Continue;
            }
        };
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                // A Ctrl+C reaches the editor too: it is the editor's. Other signals end the
                // session (and the editor with it).
                stop = self.signals.next() => if stop != Stop::Interrupt {
                    return Next::Exit(stop.exit_status());
                },
            }
        };
        match status {
            Ok(status) if status.success() => {
                self.screen.line(&format!("closed {}: what this session loaded of it stays as it was", path.display()))
            }
            Ok(status) => self.screen.line(&style.paint(YELLOW, &format!("the editor `{editor}` ended: {status}"))),
            Err(e) => self.screen.line(&style.paint(RED, &format!("the editor `{editor}`: {e}"))),
        }
        Next::Continue
    }

    /// What the engine runs with, cancelled by `cancel`.
    fn deps(&self, cancel: &CancellationToken) -> Deps {
        Deps {
            model: self.model.clone(),
            tools: self.tools.clone(),
            hooks: Arc::new(CommandHooks::new(self.settings.hooks.clone())),
            effects: Arc::new(SystemClock::new()),
            cancel: cancel.clone(),
            cwd: self.cwd.clone(),
            policy: Arc::new(self.policy.clone()),
            shell_env: self.shell_env.clone(),
            sandbox: self.sandbox.clone(),
            approver: self.approver.clone(),
        }
    }

    /// `/compact`: replace the history with a summary now, as the loop's autocompact does,
    /// with the status line up and Ctrl+C able to stop it (the history then stays).
    async fn compact(&mut self, instructions: Option<&str>) -> Next {
        let style = self.screen.style;
        if self.session.messages.is_empty() {
            self.screen.line("nothing to compact: the conversation is empty");
            return Next::Continue;
        }
        let cancel = CancellationToken::new();
        let deps = self.deps(&cancel);
        let started = Instant::now();
        let status = Arc::new(Mutex::new(Status::compacting(started)));
        let mut sink = CompactSink { screen: self.screen.clone(), status: status.clone(), usage: None };
        self.terminal.turn_mode();
        self.screen.set_status(Some(status.lock().unwrap_or_else(PoisonError::into_inner).line(started)));
        self.keyboard.start();
        let options = self.options.clone();
        // The future borrows the sink: it is dropped before the sink is read.
        let Driven { result, interrupted, stopped } = {
            let run = compact::compact_session(&mut self.session, &deps, &options, instructions, &mut sink);
            drive(run, &mut self.signals, &self.screen, &status, &cancel, false).await
        };
        self.keyboard.stop();
        if interrupted {
            self.keyboard.unqueue();
        }
        self.screen.set_status(None);
        self.screen.end_line();
        self.terminal.restore();
        if let Some((usage, cost)) = sink.usage {
            self.totals.add_usage(&usage, cost);
        }
        match result {
            Ok(done) => self.screen.line(&format!(
                "compacted: {} messages → 1 summary · about {} → {} tokens",
                done.messages_before, done.tokens_before, done.tokens_after
            )),
            Err(compact::CompactError::Interrupted) => {
                self.screen.line(&style.paint(YELLOW, "⎿ compaction interrupted; the history is unchanged"));
            }
            Err(e) => self.screen.line(&style.paint(RED, &format!("⎿ {e}; the history is unchanged"))),
        }
        match stopped {
            Some(stop) => Next::Exit(stop.exit_status()),
            None => Next::Continue,
        }
    }

    /// Run `prompt` on the session, streaming its output, until it ends or is interrupted;
    /// with `invocation`, the custom command's prompt instead, on its model and with its
    /// `allowed-tools` (its `!` spans and files go through the session's approver).
    async fn turn(&mut self, prompt: &str, invocation: Option<crate::commands::inline::Invocation>) -> Next {
        let cancel = CancellationToken::new();
        let mut deps = self.deps(&cancel);
        let mut options = self.options.clone();
        if let Some(invocation) = &invocation {
            let (policy, warnings) = invocation.apply(&mut options, &self.policy);
            deps.policy = Arc::new(policy);
            for warning in warnings {
                self.screen.line(&self.screen.style.paint(YELLOW, &format!("warning: {warning}")));
            }
        }
        let started = Instant::now();
        let status = Arc::new(Mutex::new(Status::new(started)));
        let trace = self.trace.then(|| PrettyTrace::new(self.screen.style.color, &self.options));
        if let Some(trace) = &trace {
            trace.flush(&self.screen);
        }
        let sink = TurnSink { screen: self.screen.clone(), status: status.clone(), trace, text_block: None };
        self.terminal.turn_mode();
        self.screen.set_status(Some(status.lock().unwrap_or_else(PoisonError::into_inner).line(started)));
        self.keyboard.start();
        let session = &mut self.session;
        let screen = self.screen.clone();
        let run = async move {
            let prompt = match &invocation {
                Some(invocation) => {
                    let resolved = invocation.resolve(&deps, session).await;
                    for warning in resolved.warnings {
                        screen.line(&screen.style.paint(YELLOW, &format!("warning: {warning}")));
                    }
                    resolved.text
                }
                None => prompt.to_owned(),
            };
            run_prompt(session, deps, options, &prompt, Box::new(sink)).await
        };
        let Driven { result, interrupted, stopped } =
            drive(run, &mut self.signals, &self.screen, &status, &cancel, true).await;
        self.keyboard.stop();
        // An interrupted turn (Ctrl+C, or Esc at a question) runs none of the queued prompts:
        // they go back into the editor's line.
        let aborted = result
            .as_ref()
            .is_ok_and(|o| matches!(o.terminal, TerminalReason::AbortedStreaming | TerminalReason::AbortedTools));
        if interrupted || aborted {
            self.keyboard.unqueue();
        }
        // An interrupt drops an open question unanswered: close it.
        self.screen.end_question();
        self.screen.set_status(None);
        self.screen.end_line();
        self.terminal.restore();
        match result {
            Ok(outcome) => {
                self.totals.add(&outcome);
                if let Some(line) = ending(&outcome, self.screen.style) {
                    self.screen.line(&line);
                }
            }
            Err(e) => {
                self.screen.line(&format!("agentloop: internal error: {e}"));
                return Next::Exit(ExitStatus::Internal);
            }
        }
        match stopped {
            Some(stop) => Next::Exit(stop.exit_status()),
            None => Next::Continue,
        }
    }
}

/// The line shown after a prompt that did not simply complete.
fn ending(outcome: &RunOutcome, style: Style) -> Option<String> {
    match outcome.terminal {
        TerminalReason::Completed => None,
        TerminalReason::AbortedStreaming | TerminalReason::AbortedTools => {
            Some(style.paint(YELLOW, "⎿ interrupted — the conversation keeps what was said so far"))
        }
        other => {
            let why = outcome.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
            Some(style.paint(RED, &format!("⎿ ended: {}{why}", other.as_str())))
        }
    }
}

/// What `/permissions` prints.
fn permissions_text(policy: &Policy) -> String {
    let mut out = vec![format!("mode: {}", policy.mode().as_str())];
    let lists = policy.rule_lists();
    for (name, rules) in [("allow", lists.allow), ("deny", lists.deny), ("ask", lists.ask)] {
        out.push(format!("{name}: {}", if rules.is_empty() { "(none)".into() } else { rules.join(", ") }));
    }
    let grants = policy.grants().rules();
    out.push(format!(
        "allowed for this session: {}",
        if grants.is_empty() { "(none)".into() } else { grants.join(", ") }
    ));
    out.join("\n")
}

/// The last `n` exchanges of a resumed conversation: each prompt and the reply's text, cut.
pub fn last_exchanges(messages: &[crate::protocol::Message], n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let prompts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User && !m.text().trim().is_empty())
        .map(|(i, _)| i)
        .collect();
    let from = prompts.len().saturating_sub(n);
    for (k, &start) in prompts[from..].iter().enumerate() {
        let end = prompts.get(from + k + 1).copied().unwrap_or(messages.len());
        lines.push(format!("> {}", render::shorten(messages[start].text().lines().next().unwrap_or(""), 100)));
        let reply: String = messages[start + 1..end]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| m.text())
            .filter(|t| !t.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        for line in reply.lines().take(3) {
            lines.push(format!("  {}", render::shorten(line, 100)));
        }
    }
    lines
}

/// How a driven future ended ([`drive`]).
struct Driven<T> {
    /// Its output.
    result: T,
    /// A signal cancelled it.
    interrupted: bool,
    /// A signal that ends the session (SIGTERM, SIGHUP, a second Ctrl+C), to exit with.
    stopped: Option<Stop>,
}

/// Wait for `run` (a turn, or `/compact`) while the status line ticks; a signal cancels it
/// through `cancel` (saying `interrupting…` first when `announce`), and one that ends the
/// session is remembered.
async fn drive<F: std::future::Future>(
    run: F,
    signals: &mut Signals,
    screen: &Screen,
    status: &Mutex<Status>,
    cancel: &CancellationToken,
    announce: bool,
) -> Driven<F::Output> {
    tokio::pin!(run);
    let mut ticker = tokio::time::interval(TICK);
    let mut stopped: Option<Stop> = None;
    let mut interrupted = false;
    let result = loop {
        tokio::select! {
            result = &mut run => break result,
            _ = ticker.tick() => {
                let line = status.lock().unwrap_or_else(PoisonError::into_inner).line(Instant::now());
                screen.set_status(Some(line));
            }
            stop = signals.next() => {
                if announce && !cancel.is_cancelled() {
                    screen.line(&screen.style.paint(DIM, "interrupting…"));
                }
                cancel.cancel();
                interrupted = true;
                if stop != Stop::Interrupt {
                    stopped = Some(stop);
                }
            }
        }
    };
    Driven { result, interrupted, stopped }
}

/// `/trace`: the pretty trace of `--trace`, written through the screen.
struct PrettyTrace {
    writer: TraceWriter,
    buffer: Arc<Mutex<Vec<u8>>>,
}

#[derive(Clone)]
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl PrettyTrace {
    fn new(color: bool, options: &EngineOptions) -> PrettyTrace {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let mut writer = TraceWriter::new(Box::new(SharedBuffer(buffer.clone())), TraceFormat::Pretty, color);
        let _ = writer.header(&header(options));
        PrettyTrace { writer, buffer }
    }

    fn flush(&self, screen: &Screen) {
        let bytes = std::mem::take(&mut *self.buffer.lock().unwrap_or_else(PoisonError::into_inner));
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            screen.line(line);
        }
    }
}

/// The sink of `/compact`: the status line kept current, the summary's usage kept for
/// `/cost`, warnings shown.
struct CompactSink {
    screen: Screen,
    status: Arc<Mutex<Status>>,
    usage: Option<(Usage, f64)>,
}

impl EventSink for CompactSink {
    fn event(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::Usage { usage, cost_usd, .. } => self.usage = Some((*usage, cost_usd.unwrap_or(0.0))),
            EngineEvent::Warning(warning) => {
                self.screen.line(&self.screen.style.paint(YELLOW, &format!("warning: {warning}")));
            }
            _ => {}
        }
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        if status.observe(event) {
            self.screen.set_status(Some(status.line(Instant::now())));
        }
    }
}

/// The sink of one turn: text and tool lines to the screen, the status line kept current.
struct TurnSink {
    screen: Screen,
    status: Arc<Mutex<Status>>,
    trace: Option<PrettyTrace>,
    text_block: Option<usize>,
}

impl TurnSink {
    /// A subagent's tool calls and warnings, indented under its `Agent` call; its
    /// transitions to the trace. Its text is not shown: the parent relays what matters.
    fn subagent_event(&mut self, agent: &crate::engine::events::SubagentRun, event: &EngineEvent) {
        let style = self.screen.style;
        let prefix = format!("  ↳ {} ", agent.agent_type);
        match event {
            EngineEvent::ToolStarted { name, input, .. } => {
                self.screen.line(&format!("{prefix}{}", render::tool_started(style, name, input)));
            }
            EngineEvent::ToolFinished { name, is_error, duration, preview, .. } => {
                self.screen
                    .line(&format!("{prefix}{}", render::tool_finished(style, name, *is_error, *duration, preview)));
            }
            EngineEvent::Warning(warning) => {
                self.screen.line(&style.paint(YELLOW, &format!("{prefix}warning: {warning}")));
            }
            EngineEvent::Transition(record) => {
                if let Some(trace) = &mut self.trace {
                    let _ = trace.writer.record(record);
                    trace.flush(&self.screen);
                }
            }
            _ => {}
        }
    }
}

impl EventSink for TurnSink {
    fn event(&mut self, event: &EngineEvent) {
        let style = self.screen.style;
        let mut status_line = {
            let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
            status.observe(event).then(|| status.line(Instant::now()))
        };
        match event {
            EngineEvent::TextDelta { index, text } => {
                if self.text_block.is_some_and(|b| b != *index) {
                    self.screen.end_line();
                }
                self.text_block = Some(*index);
                // The new status goes out with the text: one write to the terminal per delta.
                if let Some(line) = status_line.take() {
                    self.screen.store_status(line);
                }
                self.screen.reply_text(&render::printable(text));
            }
            EngineEvent::Message { message, .. } if message.role == Role::Assistant => {
                self.text_block = None;
                self.screen.keep_attempt();
                self.screen.end_line();
            }
            EngineEvent::ToolStarted { id, name, input, .. } => {
                self.text_block = None;
                self.screen.tool_started(id, &render::tool_started(style, name, input));
                // The model's plan, as a checklist under its call.
                if name == "TodoWrite"
                    && let Some(todos) = crate::tools::todo::todos_of(input)
                {
                    for line in crate::tools::todo::checklist(&todos) {
                        self.screen.line(&format!("  {line}"));
                    }
                }
            }
            EngineEvent::ToolFinished { name, is_error, duration, preview, .. } => {
                self.screen.line(&render::tool_finished(style, name, *is_error, *duration, preview));
            }
            EngineEvent::Warning(warning) => self.screen.line(&style.paint(YELLOW, &format!("warning: {warning}"))),
            EngineEvent::Transition(record) => {
                // A stream that failed is sent again: its partial text is erased.
                if crate::engine::edge::Edge::id_abandons_attempt(&record.edge) {
                    self.text_block = None;
                    self.screen.abandon_attempt();
                }
                if let Some(trace) = &mut self.trace {
                    let _ = trace.writer.record(record);
                    trace.flush(&self.screen);
                }
            }
            EngineEvent::SubagentStarted { agent, header } => {
                self.text_block = None;
                self.screen.end_line();
                let line =
                    format!("  ↳ subagent {} {} started: {}", agent.agent_type, agent.agent_id, agent.description);
                self.screen.line(&style.paint(DIM, &line));
                if let Some(trace) = &mut self.trace {
                    let _ = trace.writer.header(header);
                    trace.flush(&self.screen);
                }
            }
            EngineEvent::Subagent { agent, event } => self.subagent_event(agent, event),
            EngineEvent::SubagentEnded { agent, report } => {
                let line = format!(
                    "  ↳ subagent {} {} {} ({}) after {:.1}s",
                    agent.agent_type,
                    agent.agent_id,
                    report.status,
                    report.terminal.as_str(),
                    report.duration_ms.as_secs_f64()
                );
                self.screen.line(&style.paint(DIM, &line));
            }
            _ => {}
        }
        if let Some(line) = status_line {
            self.screen.set_status(Some(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Message};

    #[test]
    fn resumed_sessions_show_their_last_exchanges() {
        let assistant = |text: &str| Message { role: Role::Assistant, content: vec![ContentBlock::text(text)] };
        let messages = vec![
            Message::user_text("first question"),
            assistant("first answer"),
            Message::user_text("second question"),
            assistant("line one\nline two\nline three\nline four"),
        ];
        assert_eq!(last_exchanges(&messages, 1), vec!["> second question", "  line one", "  line two", "  line three"]);
        assert_eq!(last_exchanges(&messages, 5).len(), 6);
    }

    #[test]
    fn cost_sums_the_outcomes() {
        let mut totals = Totals::default();
        let outcome = RunOutcome {
            terminal: TerminalReason::Completed,
            error: None,
            messages: vec![],
            final_text: String::new(),
            usage: crate::engine::state::UsageTotals { input_tokens: 100, output_tokens: 20, ..Default::default() },
            model_calls: 1,
            cost_usd: 0.0015,
            unpriced_models: Vec::new(),
            turns: 1,
            structured_output: None,
            trace: vec![],
            api_failure: None,
            permission_denials: vec![],
            delegated: Vec::new(),
            subagents: None,
        };
        totals.add(&outcome);
        totals.add(&outcome);
        assert_eq!(
            totals.describe(),
            "2 prompt(s) · 200 input + 40 output tokens (cache: 0 written, 0 read) · $0.0030"
        );
        let summary = Usage { input_tokens: Some(50), output_tokens: Some(10), ..Usage::default() };
        totals.add_usage(&summary, 0.0005);
        assert_eq!(
            totals.describe(),
            "2 prompt(s) · 250 input + 50 output tokens (cache: 0 written, 0 read) · $0.0035"
        );
    }
}
