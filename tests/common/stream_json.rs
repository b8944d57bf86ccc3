//! Reading `--output-format stream-json` output in tests: the lines as JSON, the tool results
//! the model was sent, and the `system/init` line.

use serde_json::Value;

/// Every line of `stdout` as JSON (a line that is not JSON fails the test, naming it).
pub fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The tool_result blocks of the run, in order: (text content, is_error).
pub fn tool_results(lines: &[Value]) -> Vec<(String, bool)> {
    lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (b["content"].as_str().unwrap_or_default().to_owned(), b["is_error"] == true))
        .collect()
}

/// The `system/init` line.
pub fn init(lines: &[Value]) -> &Value {
    lines.iter().find(|l| l["type"] == "system" && l["subtype"] == "init").expect("a system/init line")
}
