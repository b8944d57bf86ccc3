//! The Bash analysis (`shell::analyze`, tree-sitter-bash and the walk over its tree) and the
//! permission decision on a command line (`Policy::decide` with the Bash tool: rules, the
//! read-only proof, paths) on any text, in an empty scratch working directory.
//!
//! Invariants: the analysis terminates (libFuzzer's `-timeout`), the same line analyses the
//! same way twice, and a line the analysis finds opaque is never allowed by a deny-less
//! read-only proof.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentloop::permissions::{Decision, Mode, Policy};
use agentloop::internals::shell::analyze;
use agentloop::tools::Bash;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// An empty scratch working directory, one per process.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agentloop-fuzz-bash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scratch directory");
        dir
    })
}

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let allow = ["Bash(git status:*)".to_owned(), "Bash(ls:*)".to_owned(), "Read(./**)".to_owned()];
        let deny = ["Bash(rm:*)".to_owned(), "Read(./secret/**)".to_owned()];
        let ask = ["Bash(curl:*)".to_owned()];
        Policy::new(Mode::Default, scratch().to_path_buf()).with_rules(&allow, &deny, &ask).expect("the rules parse")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else { return };
    let analysis = analyze(command);
    // Another line in between, so the second analysis is not the cached copy of the first.
    let _ = analyze("true");
    assert_eq!(analysis, analyze(command), "the same line analysed differently");
    let decision = policy().decide(&Bash, &json!({ "command": command }));
    if analysis.is_opaque() {
        assert!(!matches!(decision, Decision::Allow { read_only: true, .. }), "an opaque line was proven read-only");
    }
});
