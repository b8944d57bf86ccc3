//! The answers to the SDK's informational control requests, in the shapes Claude Code gives
//! them (the Claude ACP adapter sends each of these as a session starts and as it runs):
//! `initialize`'s model list, `get_settings`, `get_context_usage` and
//! `generate_session_title`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::hooks::settings::Permissions;
use crate::model::{Model, ModelRequest, Purpose};
use crate::protocol::{Message, ToolDefinition};

/// The one entry of `initialize`'s `models`: the session's model as `default`. agentloop has
/// no effort levels, fast mode or auto mode (the ACP adapter then starts its sessions in the
/// `default` permission mode instead of `auto`).
pub fn models(model: &str) -> Value {
    json!([{
        "value": "default",
        "resolvedModel": model,
        "displayName": "Default",
        "description": format!("The session's model ({model})"),
        "supportsEffort": false,
        "supportedEffortLevels": [],
        "supportsAdaptiveThinking": false,
        "supportsFastMode": false,
        "supportsAutoMode": false,
        "supportsThinkingOff": true,
    }])
}

/// `get_settings`: the settings in force (`effective`: the permission rules and mode read)
/// and what they applied (`applied`: the model).
pub fn settings(permissions: &Permissions, model: &str) -> Value {
    let mut effective = serde_json::Map::new();
    let mut rules = serde_json::Map::new();
    for (key, list) in [("allow", &permissions.allow), ("deny", &permissions.deny), ("ask", &permissions.ask)] {
        if !list.is_empty() {
            rules.insert(key.to_owned(), json!(list));
        }
    }
    if let Some(mode) = &permissions.default_mode {
        rules.insert("defaultMode".to_owned(), json!(mode));
    }
    if !rules.is_empty() {
        effective.insert("permissions".to_owned(), Value::Object(rules));
    }
    json!({
        "effective": effective,
        "sources": [],
        "applied": {"model": model, "effort": null, "apiProvider": "firstParty",
                    "ultracodeAvailable": false, "ultracodeRequested": false},
    })
}

/// What a session's context holds, for [`context_usage`].
#[derive(Debug, Clone, PartialEq)]
pub struct ContextParts<'a> {
    /// The model.
    pub model: &'a str,
    /// The context window, in tokens.
    pub window: u64,
    /// Characters of the system prompt, with what the session adds to it.
    pub system_chars: usize,
    /// The tools offered (built-in and MCP).
    pub tools: &'a [ToolDefinition],
    /// The conversation's estimated tokens.
    pub messages: u64,
}

/// `get_context_usage`: the context's categories (system prompt, built-in tools, MCP tools,
/// messages, the autocompact buffer, free space) in estimated tokens, as Claude Code reports
/// them (without its grid).
pub fn context_usage(parts: &ContextParts<'_>) -> Value {
    let (mcp, builtin): (Vec<&ToolDefinition>, Vec<&ToolDefinition>) =
        parts.tools.iter().partition(|t| t.name.starts_with("mcp__"));
    let tokens_of = |tools: &[&ToolDefinition]| -> u64 {
        if tools.is_empty() {
            return 0;
        }
        let owned: Vec<ToolDefinition> = tools.iter().map(|t| (*t).clone()).collect();
        crate::context::estimate_tokens_of_chars(crate::context::tools_chars(&owned))
    };
    let system = crate::context::estimate_tokens_of_chars(parts.system_chars);
    let (builtin_tokens, mcp_tokens) = (tokens_of(&builtin), tokens_of(&mcp));
    let thresholds = crate::context::Thresholds::for_window(parts.window);
    let buffer = parts.window.saturating_sub(thresholds.autocompact);
    let total = system + builtin_tokens + mcp_tokens + parts.messages;
    let free = parts.window.saturating_sub(total + buffer);
    let category =
        |id: &str, name: &str, tokens: u64, kind: &str| json!({"id": id, "name": name, "tokens": tokens, "kind": kind});
    let mut categories = vec![
        category("system_prompt", "System prompt", system, "used"),
        category("system_tools", "System tools", builtin_tokens, "used"),
    ];
    if mcp_tokens > 0 {
        categories.push(category("mcp_tools", "MCP tools", mcp_tokens, "used"));
    }
    categories.extend([
        category("messages", "Messages", parts.messages, "used"),
        category("autocompact_buffer", "Autocompact buffer", buffer, "buffer"),
        category("free_space", "Free space", free, "free"),
    ]);
    let mcp_tools: Vec<Value> = mcp
        .iter()
        .map(|t| {
            let server = t.name.strip_prefix("mcp__").and_then(|rest| rest.split("__").next()).unwrap_or_default();
            json!({"name": t.name, "serverName": server, "tokens": tokens_of(&[t])})
        })
        .collect();
    json!({
        "categories": categories,
        "totalTokens": total,
        "maxTokens": parts.window,
        "rawMaxTokens": parts.window,
        "percentage": (total * 100).checked_div(parts.window).unwrap_or(0),
        "model": parts.model,
        "memoryFiles": [],
        "mcpTools": mcp_tools,
        "agents": [],
        "autoCompactThreshold": thresholds.autocompact,
        "isAutoCompactEnabled": true,
        "apiUsage": null,
    })
}

/// What each model has used over the process's prompts, for the result's `modelUsage`:
/// like Claude Code's, a running total over the whole session (the ACP adapter subtracts the
/// previous reading to get a turn's share).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelUsage {
    by_model: std::collections::BTreeMap<String, (crate::engine::state::UsageTotals, f64)>,
}

impl ModelUsage {
    /// Count a prompt's `usage` and `cost_usd` for `model`.
    pub fn add(&mut self, model: &str, usage: &crate::engine::state::UsageTotals, cost_usd: f64) {
        let (total, cost) = self.by_model.entry(model.to_owned()).or_default();
        total.input_tokens += usage.input_tokens;
        total.output_tokens += usage.output_tokens;
        total.cache_creation_input_tokens += usage.cache_creation_input_tokens;
        total.cache_read_input_tokens += usage.cache_read_input_tokens;
        *cost += cost_usd;
    }

    /// The `modelUsage` object: per model, its tokens, cost and `contextWindow` (`window`).
    pub fn to_json(&self, window: u64) -> Value {
        let entries = self.by_model.iter().map(|(model, (u, cost))| {
            let entry = json!({
                "inputTokens": u.input_tokens,
                "outputTokens": u.output_tokens,
                "cacheReadInputTokens": u.cache_read_input_tokens,
                "cacheCreationInputTokens": u.cache_creation_input_tokens,
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": window,
                "maxOutputTokens": crate::model::DEFAULT_MAX_TOKENS,
            });
            (model.clone(), entry)
        });
        Value::Object(entries.collect())
    }
}

/// The longest title [`fallback_title`] makes, in characters.
const TITLE_CHARS: usize = 60;

/// What the title request asks of the model.
const TITLE_SYSTEM: &str = "You name coding sessions. Given the user's first request, answer with a title of at \
most six words in the language of the request, as JSON: {\"title\": \"...\"}. Answer with the JSON only.";

/// `generate_session_title`: a short title for a session about `description`, asked of
/// `model` (a side request with no tools, as Claude Code makes); the model's JSON
/// `{"title": …}` or its first line. When the request fails or gives nothing usable, the
/// title is made from the description itself ([`fallback_title`]).
pub async fn session_title(model: Arc<dyn Model>, model_name: &str, description: &str) -> String {
    let request = ModelRequest {
        model: model_name.to_owned(),
        system: TITLE_SYSTEM.to_owned(),
        system_context: None,
        server_tools: Vec::new(),
        messages: vec![Message::user_text(description)].into(),
        tools: Vec::new(),
        max_tokens: 200,
        thinking: None,
        purpose: Purpose::Aux,
    };
    let text = crate::model::side::ask(&*model, request).await.ok().map(|answer| answer.message.text());
    text.and_then(|text| parse_title(&text)).unwrap_or_else(|| fallback_title(description))
}

/// The title in a model's answer: `{"title": …}` (also inside other text), else its first
/// non-empty line without quotes; `None` when it has neither.
pub fn parse_title(text: &str) -> Option<String> {
    let from_json = text.find('{').zip(text.rfind('}')).and_then(|(start, end)| {
        let value: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
        value.get("title")?.as_str().map(str::to_owned)
    });
    let title = from_json.or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned))?;
    let title = title.trim().trim_matches(['"', '\'', '`']).trim();
    (!title.is_empty()).then(|| title.to_owned())
}

/// A title made from `description` alone: its first line, cut at a word boundary to at most
/// [`TITLE_CHARS`] characters (with `…` when cut).
pub fn fallback_title(description: &str) -> String {
    let line = description.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("New session");
    if line.chars().count() <= TITLE_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(TITLE_CHARS).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head).trim_end();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition { name: name.into(), description: "d".into(), input_schema: json!({"type": "object"}) }
    }

    #[test]
    fn context_usage_adds_up_the_categories() {
        let tools = [tool("Read"), tool("mcp__calc__add")];
        let usage = context_usage(&ContextParts {
            model: "claude-sonnet-4-5",
            window: 200_000,
            system_chars: 400,
            tools: &tools,
            messages: 1_000,
        });
        let tokens = |id: &str| {
            usage["categories"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap()["tokens"].as_u64().unwrap()
        };
        assert_eq!(tokens("system_prompt"), 100);
        assert_eq!(tokens("messages"), 1_000);
        assert_eq!(tokens("autocompact_buffer"), 200_000 - 167_000);
        let used = tokens("system_prompt") + tokens("system_tools") + tokens("mcp_tools") + tokens("messages");
        assert_eq!(usage["totalTokens"], used);
        assert_eq!(tokens("free_space"), 200_000 - used - 33_000);
        assert_eq!(usage["rawMaxTokens"], 200_000);
        assert_eq!(usage["percentage"], used * 100 / 200_000);
        assert_eq!(usage["mcpTools"][0]["serverName"], "calc");
        assert_eq!(usage["mcpTools"].as_array().unwrap().len(), 1);
        let builtin_only = context_usage(&ContextParts {
            model: "m",
            window: 200_000,
            system_chars: 0,
            tools: &tools[..1],
            messages: 0,
        });
        let ids: Vec<&str> =
            builtin_only["categories"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
        assert_eq!(ids, ["system_prompt", "system_tools", "messages", "autocompact_buffer", "free_space"]);
    }

    #[test]
    fn model_usage_is_a_running_total_per_model() {
        use crate::engine::state::UsageTotals;
        let mut usage = ModelUsage::default();
        let turn = UsageTotals { input_tokens: 10, output_tokens: 5, ..UsageTotals::default() };
        usage.add("claude-sonnet-4-5", &turn, 0.25);
        usage.add("claude-sonnet-4-5", &turn, 0.25);
        usage.add("claude-haiku-4-5", &turn, 0.125);
        let json = usage.to_json(200_000);
        assert_eq!(json["claude-sonnet-4-5"]["inputTokens"], 20);
        assert_eq!(json["claude-sonnet-4-5"]["outputTokens"], 10);
        assert_eq!(json["claude-sonnet-4-5"]["costUSD"], 0.5);
        assert_eq!(json["claude-haiku-4-5"]["contextWindow"], 200_000);
        assert_eq!(json.as_object().unwrap().len(), 2);
    }

    #[test]
    fn settings_report_the_rules_read() {
        let permissions =
            Permissions { allow: vec!["Read".into()], default_mode: Some("plan".into()), ..Permissions::default() };
        assert_eq!(
            settings(&permissions, "m"),
            json!({"effective": {"permissions": {"allow": ["Read"], "defaultMode": "plan"}}, "sources": [],
                   "applied": {"model": "m", "effort": null, "apiProvider": "firstParty",
                               "ultracodeAvailable": false, "ultracodeRequested": false}})
        );
        assert_eq!(settings(&Permissions::default(), "m")["effective"], json!({}));
    }

    #[test]
    fn titles_come_from_the_models_json_or_its_first_line() {
        assert_eq!(parse_title(r#"{"title": "Fix the login bug"}"#).as_deref(), Some("Fix the login bug"));
        assert_eq!(parse_title("Sure:\n{\"title\": \"Add tests\"}").as_deref(), Some("Add tests"));
        assert_eq!(parse_title("\n\"Refactor the parser\"\nmore").as_deref(), Some("Refactor the parser"));
        assert_eq!(parse_title("  \n "), None);
        assert_eq!(fallback_title("Write a file for me\nplease"), "Write a file for me");
        let long = "Please look through every module of this repository and explain how it all fits together";
        let title = fallback_title(long);
        assert_eq!(title, "Please look through every module of this repository and…");
        assert!(title.chars().count() <= TITLE_CHARS + 1);
        assert_eq!(fallback_title(""), "New session");
    }
}
