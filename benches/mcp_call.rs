//! Issue 15: the overhead agentloop adds to an MCP tool call, the server's time excluded.
//! Target: a median under 1 ms.
//!
//! `cargo bench --bench mcp_call` starts the real `@modelcontextprotocol/server-everything`
//! over stdio (installed by `.ci/install-mcp-servers`; without it the benchmark says so and
//! skips) and calls its `echo` over one connection in three ways:
//!
//! - (a) `raw`: rmcp's `peer.call_tool`, the floor: the JSON-RPC round trip and the server;
//! - (b) `tool`: what agentloop adds per call around it: the permission check the engine does
//!   (`Policy::decide` under an `mcp__everything` allow rule) and `McpTool::call` (the input
//!   turned into arguments, the timeout and cancellation race, the result rendered as text);
//! - (c) `engine`: the whole per-call path of the engine's executor (`Toolbox::run_call`: the
//!   registry lookup, PreToolUse and PostToolUse hooks with none configured, the permission
//!   check, the call, the result budget).
//!
//! Criterion times each. Then the three are timed one call at a time in `ROUNDS` interleaved
//! rounds (the order alternating), so that drift in the machine or the server falls on all
//! alike; the overhead is the median of the per-round differences (b − a) and (c − a), and the
//! medians of each are printed beside it.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop::hooks::{HookEnv, NoHooks};
use agentloop::internals::executor::{Approvals, Toolbox};
use agentloop::internals::mcp::McpTool;
use agentloop::permissions::{Mode, Policy};
use agentloop::tools::{Registry, Tool, ToolCall, ToolContext};
use criterion::Criterion;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// Interleaved rounds (odd, so a median is one of them).
const ROUNDS: usize = 2001;
/// Calls before any timing: the server's JIT and both sides' buffers warm up.
const WARMUP: usize = 300;
/// The target for the median overhead.
const TARGET_MICROS: f64 = 1000.0;
const MESSAGE: &str = "hello from the benchmark";

fn entry() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The three ways to call `echo`, over one connection.
struct Bench {
    peer: rmcp::Peer<rmcp::service::RoleClient>,
    tool: Arc<dyn Tool>,
    policy: Policy,
    toolbox: Toolbox,
    ctx: ToolContext,
    input: Value,
    call: ToolCall,
}

impl Bench {
    async fn start(cwd: &Path) -> Bench {
        let args = [entry().display().to_string(), "stdio".to_owned()];
        let none = agentloop::sandbox::Sandbox::none();
        let connection = agentloop::internals::mcp::connect_stdio(
            agentloop::internals::mcp::Client::of("bench"),
            "node",
            &args,
            &Default::default(),
            &Default::default(),
            cwd,
            &none,
        )
        .await
        .expect("server-everything starts and answers initialize");
        let listed = connection.peer().list_all_tools().await.expect("tools/list");
        let echo = listed.iter().find(|t| t.name == "echo").expect("server-everything has echo");
        let connection = Arc::new(connection);
        let peer = connection.peer().clone();
        let tool: Arc<dyn Tool> =
            Arc::new(McpTool::new("everything", echo, connection, agentloop::internals::mcp::tool_timeout()));
        let rules = |r: &[&str]| r.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let policy = Policy::new(Mode::Default, cwd.to_path_buf())
            .with_rules(&rules(&["mcp__everything", "Read"]), &rules(&["Bash(rm:*)"]), &[])
            .expect("rules parse");
        let mut registry = Registry::standard();
        registry.register(tool.clone());
        let toolbox = Toolbox {
            registry,
            hooks: Arc::new(NoHooks),
            env: HookEnv::new("bench", cwd),
            policy: Arc::new(policy.clone()),
            result_cap: 100_000,
            spill_dir: cwd.join("spill"),
            approvals: Approvals::unattended(),
            effects: Arc::new(agentloop::SystemClock::new()),
        };
        let input = json!({"message": MESSAGE});
        let call = ToolCall { id: "toolu_bench".into(), name: tool.name().to_owned(), input: input.clone() };
        Bench { peer, tool, policy, toolbox, ctx: ToolContext::new(cwd), input, call }
    }

    /// (a) rmcp alone.
    async fn raw(&self) -> String {
        let arguments = self.input.as_object().cloned().unwrap_or_default();
        let result =
            self.peer.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments)).await.expect("echo");
        agentloop::internals::mcp::render(&result).text
    }

    /// (b) the permission check and the tool.
    async fn tool(&self) -> String {
        assert!(self.policy.decide(self.tool.as_ref(), &self.input).is_allowed());
        let output = self.tool.call(self.input.clone(), self.ctx.clone()).await;
        assert!(!output.is_error, "{}", output.content);
        output.content
    }

    /// (c) the executor's whole per-call path.
    async fn engine(&self) -> String {
        let result = self.toolbox.run_call(&self.call, self.ctx.clone()).await;
        assert!(!result.output.is_error, "{}", result.output.content);
        result.output.content
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    if !entry().exists() {
        eprintln!(
            "mcp_call: skipped: {} is missing (run .ci/install-mcp-servers to install server-everything from npm)",
            entry().display()
        );
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let bench = runtime.block_on(Bench::start(dir.path()));
    let expected = format!("Echo: {MESSAGE}");
    runtime.block_on(async {
        for _ in 0..WARMUP {
            assert_eq!(bench.raw().await, expected);
            assert_eq!(bench.tool().await, expected);
            assert_eq!(bench.engine().await, expected);
        }
    });

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("mcp_call");
    group.bench_function("raw_rmcp", |b| b.iter(|| black_box(runtime.block_on(bench.raw()))));
    group.bench_function("tool", |b| b.iter(|| black_box(runtime.block_on(bench.tool()))));
    group.bench_function("engine", |b| b.iter(|| black_box(runtime.block_on(bench.engine()))));
    group.finish();

    let (mut raw, mut tool, mut engine) = (Vec::new(), Vec::new(), Vec::new());
    let (mut tool_over, mut engine_over) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        for round in 0..ROUNDS {
            let time = |which: usize| {
                let bench = &bench;
                async move {
                    let began = Instant::now();
                    let text = match which {
                        0 => bench.raw().await,
                        1 => bench.tool().await,
                        _ => bench.engine().await,
                    };
                    let took = began.elapsed();
                    black_box(text);
                    micros(took)
                }
            };
            let (a, b, c) = if round % 2 == 0 {
                let a = time(0).await;
                let b = time(1).await;
                (a, b, time(2).await)
            } else {
                let c = time(2).await;
                let b = time(1).await;
                (time(0).await, b, c)
            };
            raw.push(a);
            tool.push(b);
            engine.push(c);
            tool_over.push(b - a);
            engine_over.push(c - a);
        }
    });
    let (raw, tool, engine) = (median(&mut raw), median(&mut tool), median(&mut engine));
    let (tool_over, engine_over) = (median(&mut tool_over), median(&mut engine_over));
    println!("mcp_call: {ROUNDS} interleaved rounds of server-everything's echo over stdio, medians:");
    println!("  (a) raw rmcp call_tool                 {raw:>9.1} µs");
    println!("  (b) permission check + McpTool::call   {tool:>9.1} µs   overhead (b − a) {tool_over:>7.1} µs");
    println!("  (c) Toolbox::run_call (engine path)    {engine:>9.1} µs   overhead (c − a) {engine_over:>7.1} µs");
    let worst = tool_over.max(engine_over);
    let verdict = if worst < TARGET_MICROS { "meets" } else { "MISSES" };
    println!("  target: overhead under {TARGET_MICROS:.0} µs median: {verdict} it ({worst:.1} µs)");
}
