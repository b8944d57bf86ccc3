//! Runs the `Grep` or `Glob` tool once, straight from the library, and prints its output: the
//! timed side of `benches/search.sh`.
//!
//! ```text
//! cargo run --release --example search_bench -- grep PATTERN DIR [MODE] [THREADS]
//! cargo run --release --example search_bench -- glob PATTERN DIR [THREADS]
//! ```
//! MODE is an `output_mode` (`files_with_matches` by default); THREADS 0 (the default) means
//! the machine's parallelism. Content mode shows line numbers, as `rg -n` does.

use std::process::ExitCode;

use agentloop::tools::Glob;
use agentloop::tools::Grep;
use agentloop::tools::{Tool, ToolContext};
use serde_json::json;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let (Some(tool), Some(pattern), Some(dir)) = (arg(0), arg(1), arg(2)) else {
        eprintln!("usage: search_bench grep PATTERN DIR [MODE] [THREADS] | glob PATTERN DIR [THREADS]");
        return ExitCode::from(2);
    };
    let threads_at = |i: usize| arg(i).map_or(Ok(0), str::parse::<usize>);
    let (tool, input): (Box<dyn Tool>, _) = match tool {
        "grep" => {
            let Ok(threads) = threads_at(4) else { return usage_error("THREADS must be a number") };
            let mode = arg(3).unwrap_or("files_with_matches");
            (Box::new(Grep { threads }), json!({"pattern": pattern, "path": dir, "output_mode": mode}))
        }
        "glob" => {
            let Ok(threads) = threads_at(3) else { return usage_error("THREADS must be a number") };
            (Box::new(Glob { threads }), json!({"pattern": pattern, "path": dir}))
        }
        other => return usage_error(&format!("unknown tool {other:?}: grep or glob")),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let ctx = ToolContext { allow_outside: true, ..ToolContext::new(dir) };
    let out = runtime.block_on(tool.call(input, ctx));
    println!("{}", out.content);
    if out.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("search_bench: {message}");
    ExitCode::from(2)
}
