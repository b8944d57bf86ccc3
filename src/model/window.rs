//! The context window a model server says it has, so that autocompaction and the blocking
//! limit work on a local server's 4K–32K window instead of assuming Claude's 200K.
//!
//! Servers say it in different places; [`probe`] asks, in order:
//! - llama.cpp's `GET /props`: `default_generation_settings.n_ctx` (the window the server
//!   was started with, `-c`), or a top-level `n_ctx`;
//! - `GET {base}/models` (OpenAI's list): the entry for the served model, else the first, with
//!   llama.cpp's `meta.n_ctx`, vLLM's `max_model_len`, or the `context_length` /
//!   `context_window` / `max_context_length` that LM Studio, OpenRouter and others use.
//!
//! Each request is bounded by [`PROBE_TIMEOUT`]; a server that says nothing (OpenAI's own API,
//! Ollama's OpenAI layer) leaves the default, and `--context-window` overrides whatever is said.

use std::time::Duration;

use serde_json::Value;

/// How long one probe request may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Windows below this are not believed (a misread field): 1024 tokens.
pub const MIN_WINDOW: u64 = 1024;

/// The window the server at `base` (an OpenAI-style base URL such as `http://host:8080/v1`,
/// or a Messages API base such as `http://host:8080`) says `model` has, if it says.
pub async fn probe(client: &reqwest::Client, base: &str, model: &str) -> Option<u64> {
    let base = base.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    if let Some(n) = get_json(client, &format!("{root}/props")).await.as_ref().and_then(from_props) {
        return Some(n);
    }
    let models = if base.ends_with("/v1") { format!("{base}/models") } else { format!("{base}/v1/models") };
    get_json(client, &models).await.as_ref().and_then(|list| from_models(list, model))
}

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    let response = tokio::time::timeout(PROBE_TIMEOUT, client.get(url).send()).await.ok()?.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = tokio::time::timeout(PROBE_TIMEOUT, response.bytes()).await.ok()?.ok()?;
    serde_json::from_slice(&body).ok()
}

/// llama.cpp's `/props`.
pub fn from_props(props: &Value) -> Option<u64> {
    [&props["default_generation_settings"]["n_ctx"], &props["n_ctx"]].into_iter().find_map(window)
}

/// An OpenAI-style model list: the entry whose `id` is `model`, else the first.
pub fn from_models(list: &Value, model: &str) -> Option<u64> {
    let entries = list["data"].as_array()?;
    let entry = entries.iter().find(|e| e["id"] == model).or_else(|| entries.first())?;
    [
        &entry["meta"]["n_ctx"],
        &entry["max_model_len"],
        &entry["context_length"],
        &entry["context_window"],
        &entry["max_context_length"],
    ]
    .into_iter()
    .find_map(window)
}

fn window(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n >= MIN_WINDOW)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_servers_words_for_the_window() {
        // llama.cpp b11434, started with -c 2048.
        assert_eq!(from_props(&json!({"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1})), Some(2048));
        assert_eq!(from_props(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(from_props(&json!({"total_slots": 1})), None);
        let llama = json!({"object": "list", "data": [{"id": "/models/smol.gguf", "meta": {"n_ctx": 2048, "n_ctx_train": 8192}}]});
        assert_eq!(from_models(&llama, "smollm2"), Some(2048), "the only model, whatever it is called");
        let vllm = json!({"data": [
            {"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "max_model_len": 32768},
            {"id": "other", "max_model_len": 8192},
        ]});
        assert_eq!(from_models(&vllm, "other"), Some(8192));
        assert_eq!(from_models(&vllm, "Qwen/Qwen2.5-Coder-7B-Instruct"), Some(32768));
        assert_eq!(from_models(&json!({"data": [{"id": "m", "context_length": 131072}]}), "m"), Some(131_072));
        // OpenAI's list says nothing of windows; a tiny or non-numeric value is not believed.
        assert_eq!(from_models(&json!({"data": [{"id": "gpt-4.1", "owned_by": "openai"}]}), "gpt-4.1"), None);
        assert_eq!(from_models(&json!({"data": [{"id": "m", "max_model_len": 12}]}), "m"), None);
        assert_eq!(from_models(&json!({"data": [{"id": "m", "max_model_len": "4096"}]}), "m"), None);
        assert_eq!(from_models(&json!({"error": "no"}), "m"), None);
    }
}
