//! Issue 15: the overhead agentloop adds to an MCP tool call over Streamable HTTP, server time
//! excluded. Target: under 1 ms median.
//!
//! A local MCP server (wiremock on 127.0.0.1, on threads of this process) answers
//! `initialize`, `tools/list` and `tools/call` at once with a fixed JSON-RPC body. agentloop
//! connects to it as a run does (`mcp::open`, then the server's tool as an `McpTool`) and the
//! bench times `CALLS` calls of `McpTool::call`, one at a time, as the executor makes them:
//! JSON-RPC request, HTTP POST, response parsing, rendering the result to text. The baseline
//! is the same HTTP exchange without the MCP client: a plain reqwest POST of the same
//! `tools/call` body to the same server, awaited and read whole, timed interleaved with the
//! calls. The overhead is the difference of the medians; both are printed with their 99th
//! percentiles.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop::internals::mcp::McpTool;
use agentloop::internals::mcp::{self, ServerConfig};
use agentloop::tools::{Tool, ToolContext};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Timed calls of each kind.
const CALLS: usize = 2001;
/// Untimed calls first (connections, allocator, caches).
const WARMUP: usize = 200;
/// The target for the median overhead.
const TARGET_MS: f64 = 1.0;

struct Answer;

impl Respond for Answer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let result = match body["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench", "version": "1"}
            }),
            Some("tools/list") => json!({"tools": [{
                "name": "echo",
                "description": "Echoes.",
                "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}
            }]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": "Echo: hello"}]}),
            _ => return ResponseTemplate::new(202),
        };
        ResponseTemplate::new(200).set_body_json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST")).respond_with(Answer).mount(&server).await;
        Mock::given(method("GET")).respond_with(ResponseTemplate::new(405)).mount(&server).await;
        Mock::given(method("DELETE")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
        let url = format!("{}/mcp", server.uri());
        let config = ServerConfig::Http { url: url.clone(), headers: BTreeMap::new(), oauth: None };
        let connection = mcp::open("bench", &config, std::path::Path::new(".")).await.expect("connect");
        let listed = connection.peer().list_all_tools().await.expect("tools/list");
        let tool = McpTool::new("bench", &listed[0], Arc::new(connection), Duration::from_secs(10));
        let input = json!({"message": "hello"});
        let raw = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hello"}}})
        .to_string();

        let call = || async {
            let started = Instant::now();
            let out = tool.call(input.clone(), ToolContext::new(".")).await;
            let took = started.elapsed();
            assert!(!out.is_error && out.content == "Echo: hello", "{out:?}");
            took
        };
        let post = || async {
            let started = Instant::now();
            let response = raw
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let text = response.text().await.unwrap();
            let took = started.elapsed();
            assert!(text.contains("Echo: hello"), "{text}");
            took
        };
        for _ in 0..WARMUP {
            call().await;
            post().await;
        }
        let (mut calls, mut posts) = (Vec::with_capacity(CALLS), Vec::with_capacity(CALLS));
        for _ in 0..CALLS {
            calls.push(call().await);
            posts.push(post().await);
        }
        calls.sort();
        posts.sort();
        let (call_median, post_median) = (percentile(&calls, 0.5), percentile(&posts, 0.5));
        let overhead = call_median - post_median;
        println!("MCP tool call over Streamable HTTP, {CALLS} calls against a local server:");
        println!("  McpTool::call       median {call_median:.3} ms, p99 {:.3} ms", percentile(&calls, 0.99));
        println!("  plain HTTP POST     median {post_median:.3} ms, p99 {:.3} ms", percentile(&posts, 0.99));
        println!(
            "  overhead (median difference) {overhead:.3} ms, target < {TARGET_MS} ms: {}",
            if overhead < TARGET_MS { "met" } else { "MISSED" }
        );
    });
}
