//! `agentloop trace view` end to end: the page the built binary writes for demo traces, read
//! as a file (one file, nothing fetched) and opened in a real browser — Debian's Chromium,
//! driven over the WebDriver protocol by its `chromedriver` (`.ci/run` installs both) — where
//! the script must run without a console error, a click on an edge must filter the records,
//! and a screenshot is saved under `target/` for a person to look at.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentloop::engine::table::shipped;

use crate::coverage::record;
use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};

/// `agentloop trace view TRACES -o OUT`; the page.
fn view(traces: &[PathBuf], out: &Path) -> String {
    let done = Command::cargo_bin("agentloop")
        .unwrap()
        .args(["trace", "view"])
        .args(traces)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(String::from_utf8_lossy(&done.stderr), format!("agentloop trace view: wrote {}\n", out.display()));
    std::fs::read_to_string(out).unwrap()
}

/// The JSON the page carries.
fn page_data(page: &str) -> Value {
    let start = page.find(r#"<script type="application/json" id="data">"#).unwrap() + 42;
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

fn demo_traces(dir: &Path) -> Vec<PathBuf> {
    ["read-greeting", "max-turns", "subagent"].iter().map(|n| record(dir, n)).collect()
}

#[test]
fn the_view_is_one_file_that_fetches_nothing_and_carries_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let traces = demo_traces(dir.path());
    let page = view(&traces, &dir.path().join("view.html"));
    assert!(page.starts_with("<!doctype html>\n<html lang=\"en\">"));
    // Nothing is loaded from anywhere: no src or href attribute, no CSS import or URL; the
    // only address is the SVG namespace's name.
    for forbidden in [" src=", " href=", "@import", "url(http", "<link", "<iframe"] {
        assert!(!page.contains(forbidden), "the page holds {forbidden:?}");
    }
    let addresses: Vec<&str> = page.match_indices("http").map(|(i, _)| &page[i..(i + 26).min(page.len())]).collect();
    assert!(addresses.iter().all(|a| a.starts_with("http://www.w3.org/2000/svg")), "{addresses:?}");
    // The chart draws every edge and every terminal reason.
    for (i, edge) in shipped().edges.iter().enumerate() {
        assert!(page.contains(&format!(r#"data-edge="{i}""#)), "{} is drawn", edge.id);
    }
    for reason in shipped().reasons.iter().filter(|r| r.terminal) {
        assert!(page.contains(&format!(r#"data-reason="{}""#, reason.name)), "{} has an end node", reason.name);
    }
    let data = page_data(&page);
    let runs = data["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "three main runs and the subagent's");
    let records: Vec<usize> = runs.iter().map(|r| r["records"].as_array().unwrap().len()).collect();
    assert_eq!(records, [9, 5, 9, 9], "read-greeting, max-turns, subagent and its child");
    assert_eq!(runs[3]["parent"], 2, "the subagent's run is its parent's child");
    // A record is [seq, t_ms, turn, edge index, guards, changed counters].
    let first = &runs[0]["records"][0];
    assert_eq!(first[0], 1);
    assert_eq!(first[3], shipped().edges.iter().position(|e| e.id == "prepare.request").unwrap());
    assert_eq!(first[5].as_array().unwrap().len(), shipped().counters.len(), "the first record carries every counter");
    let second = &runs[0]["records"][1];
    assert_eq!(second[5], json!([]), "request.stream_opened changes no counter");
    assert_eq!(data["coverage"]["edges"].as_array().unwrap().iter().filter(|e| e["taken"] != 0).count(), 8);
    // The trace's event lines: the subagent scenario's Agent call in the main run, its Read
    // (started while the child's reply streamed) in the child's, and a reply's first event
    // for each model call.
    let tools = |run: usize| -> Vec<(String, bool, bool)> {
        runs[run]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t[0].as_str().unwrap().to_owned(), t[3].as_bool().unwrap(), t[2].is_number()))
            .collect()
    };
    assert_eq!(tools(2), [("Agent".to_owned(), false, true)]);
    assert_eq!(tools(3), [("Read".to_owned(), true, true)]);
    assert_eq!(tools(0), [("Read".to_owned(), true, true)]);
    let replies = |run: usize| runs[run]["replies"].as_array().unwrap().len();
    assert_eq!([replies(0), replies(1), replies(2), replies(3)], [2, 1, 2, 2]);
    for run in runs {
        let records = run["records"].as_array().unwrap();
        let (first, last) = (records[0][1].as_f64().unwrap(), records[records.len() - 1][1].as_f64().unwrap());
        for tool in run["tools"].as_array().unwrap() {
            let (start, end) = (tool[1].as_f64().unwrap(), tool[2].as_f64().unwrap());
            assert!(first <= start && start <= end && end <= last, "a call within its run's records: {tool}");
        }
    }
}

#[test]
fn retries_reach_the_view_with_their_waits() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(dir.path(), "flaky-network");
    let page = view(std::slice::from_ref(&trace), &dir.path().join("flaky.html"));
    let retries = page_data(&page)["runs"][0]["retries"].clone();
    let retries = retries.as_array().unwrap();
    assert_eq!(retries.iter().map(|r| r[2].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        retries.iter().map(|r| r[3].as_str().unwrap()).collect::<Vec<_>>(),
        [
            "HTTP 529 overloaded_error: Overloaded (request id req_scripted_0)",
            "HTTP 500 api_error: Internal server error (request id req_scripted_1)",
            "stream ended before message_stop",
        ]
    );
    assert!(retries.iter().all(|r| r[1].as_f64().unwrap() > 0.0), "each wait has its length");
}

#[test]
fn a_bad_trace_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"header\"}\n[1, 2]\n").unwrap();
    let done = Command::cargo_bin("agentloop").unwrap().args(["trace", "view"]).arg(&bad).output().unwrap();
    assert_eq!(done.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&done.stderr),
        format!("agentloop trace view: {}, line 2: not a JSON object\n", bad.display())
    );
    assert!(!dir.path().join("bad.html").exists());
}

/// A WebDriver session on a chromedriver of our own, driving headless Chromium.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

impl Browser {
    async fn start(profile: &Path) -> Browser {
        assert!(
            Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
            "Chromium and chromedriver are needed (apt-get install chromium chromium-driver; .ci/run installs them)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        // Plain HTTP on loopback; reqwest is built without a default TLS provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // A container's /dev/shm may be too small for Chromium's shared memory.
            "--disable-dev-shm-usage",
            "--window-size=1400,1000",
        ]
        .map(str::to_owned)
        .into_iter()
        .chain([format!("--user-data-dir={}", profile.display())])
        .collect::<Vec<_>>();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let created: Value =
            http.post(format!("{base}/session")).json(&capabilities).send().await.unwrap().json().await.unwrap();
        let session =
            created["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {created}")).to_owned();
        Browser { driver, base, session, http }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}/{path}", self.base, self.session);
        let request = self.http.request(method, url);
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(answer["value"].get("error").is_none(), "{path}: {answer}");
        answer["value"].clone()
    }

    async fn open(&self, file: &Path) {
        self.call(reqwest::Method::POST, "url", Some(json!({"url": format!("file://{}", file.display())}))).await;
    }

    async fn script(&self, script: &str) -> Value {
        self.call(reqwest::Method::POST, "execute/sync", Some(json!({"script": script, "args": []}))).await
    }

    /// The console's messages at level SEVERE (errors) since the last call.
    async fn console_errors(&self) -> Vec<String> {
        let log = self.call(reqwest::Method::POST, "se/log", Some(json!({"type": "browser"}))).await;
        log.as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["level"] == "SEVERE")
            .map(|entry| entry["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    async fn screenshot(&self, to: &Path) {
        use base64::Engine as _;
        let png = self.call(reqwest::Method::GET, "screenshot", None).await;
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

#[tokio::test]
async fn in_chromium_the_view_runs_clean_and_a_click_on_an_edge_filters_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let traces = demo_traces(dir.path());
    let file = dir.path().join("view.html");
    view(&traces, &file);
    let browser = Browser::start(&dir.path().join("profile")).await;
    browser.open(&file).await;
    assert_eq!(browser.script("return document.body.dataset.ready").await, "true", "the script ran to its end");
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
    assert_eq!(browser.script("return document.querySelectorAll('#records tbody tr').length").await, 32);
    assert_eq!(browser.script("return document.querySelectorAll('#timeline rect[data-run]').length > 0").await, true);
    // The heat: the edges the four runs took carry their counts.
    let tools = shipped().edges.iter().position(|e| e.id == "consume.tools").unwrap();
    let count = format!("return document.querySelector('#chart text[data-count=\"{tools}\"]').textContent");
    assert_eq!(browser.script(&count).await, "4");
    // A click on consume.tools lists its four records, and only those.
    let click = format!(
        "document.querySelector('#chart .edge[data-edge=\"{tools}\"] path.hit').dispatchEvent(new MouseEvent('click', {{bubbles: true}}));"
    );
    browser.script(&click).await;
    let edges = browser
        .script(
            "return Array.from(document.querySelectorAll('#records tbody tr')).map(tr => tr.children[5].textContent)",
        )
        .await;
    assert_eq!(edges, json!(["consume.tools", "consume.tools", "consume.tools", "consume.tools"]));
    assert_eq!(browser.script("return document.getElementById('f-count').textContent").await, "4 records");
    // Choosing the subagent's run narrows everything to its nine records.
    browser
        .script("const s = document.getElementById('run'); s.value = '3'; s.dispatchEvent(new Event('change'));")
        .await;
    assert_eq!(browser.script(&count).await, "1");
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
    browser.screenshot(&target_dir().join("trace-view.png")).await;
}

/// A scenario of `turns` Read turns and an answer, for the 1000-turn view.
fn long_scenario(turns: usize) -> Value {
    let mut responses: Vec<Value> = (0..turns)
        .map(|_| {
            json!({"content": [{"type": "text", "text": "Reading."},
                {"type": "tool_use", "name": "Read", "input": {"file_path": "note.txt"}}]})
        })
        .collect();
    responses.push(json!({"content": [{"type": "text", "text": "Done."}]}));
    json!({
        "name": "long",
        "description": "a long session",
        "prompt": "Read the note again and again.",
        "files": {"note.txt": "a note\n"},
        "options": {"max_turns": turns + 5},
        "responses": responses,
    })
}

#[tokio::test]
async fn a_1000_turn_view_stays_small_and_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("long.json");
    std::fs::write(&scenario, long_scenario(1000).to_string()).unwrap();
    let trace = dir.path().join("long.jsonl");
    let status = Command::cargo_bin("agentloop")
        .unwrap()
        .env("AGENTLOOP_HOME", dir.path().join("home"))
        .current_dir(dir.path())
        .arg("run")
        .arg("--model")
        .arg(format!("scripted:{}", scenario.display()))
        .args(["--trace=jsonl", "--trace-file"])
        .arg(&trace)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let file = dir.path().join("long.html");
    let page = view(std::slice::from_ref(&trace), &file);
    let records = page_data(&page)["runs"][0]["records"].as_array().unwrap().len();
    assert_eq!(records, 1000 * 5 + 4, "five records a tool turn, four for the answer");
    let trace_size = std::fs::metadata(&trace).unwrap().len();
    eprintln!("1000-turn view: {} bytes (the trace: {trace_size} bytes)", page.len());
    assert!(page.len() < 3 << 20, "the view of a 1000-turn trace is {} bytes", page.len());

    let browser = Browser::start(&dir.path().join("profile")).await;
    browser.open(&file).await;
    assert_eq!(browser.script("return document.body.dataset.ready").await, "true");
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
    // A page of rows at a time, then the rest on demand.
    assert_eq!(browser.script("return document.querySelectorAll('#records tbody tr[data-i]').length").await, 500);
    assert_eq!(
        browser.script("return document.getElementById('f-count').textContent").await,
        format!("{records} records")
    );
    browser.script("document.getElementById('more').click()").await;
    assert_eq!(browser.script("return document.querySelectorAll('#records tbody tr[data-i]').length").await, 1000);
    // Reported, not asserted: the time from navigation to the script's end.
    let ms = browser.script("return document.body.dataset.readyMs").await;
    eprintln!("1000-turn view: ready {} ms after navigation", ms.as_str().unwrap());
}
