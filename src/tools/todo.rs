//! `TodoWrite`: the model's plan for the task, as Claude Code's tool of that name takes it
//! (`todos: [{content, status, activeForm}]`, the whole list each time). The list belongs to
//! the session (a subagent's run has its own); the interactive session shows it as a
//! checklist, and stream-json carries it as the call's input and `tool_use_result`
//! (`{oldTodos, newTodos}`).

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{CallExtra, Tool, ToolContext, ToolOutput, typed_call};

/// Where an item of the list stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The same while it is being done ("Running the tests").
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

/// A session's todo list.
#[derive(Debug, Default)]
pub struct TodoList(Mutex<Vec<Todo>>);

impl TodoList {
    /// The list as it stands.
    pub fn items(&self) -> Vec<Todo> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replace the list with `todos`; the list it was.
    fn replace(&self, todos: Vec<Todo>) -> Vec<Todo> {
        std::mem::replace(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner), todos)
    }
}

/// The `TodoWrite` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWrite;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    todos: Vec<Todo>,
}

impl Tool for TodoWrite {
    fn name(&self) -> &'static str {
        "TodoWrite"
    }

    fn description(&self) -> &'static str {
        "Keeps the plan of the current task as a todo list the user sees. Use it for a task of \
         three steps or more, or when the user gives a list of things to do: write the whole \
         list each time, each item with its `content` (imperative: \"Run the tests\"), its \
         `activeForm` (\"Running the tests\") and its `status`. Mark an item in_progress before \
         starting it (one at a time) and completed as soon as it is done; add the items you \
         discover on the way. Skip it for a single simple step."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The updated todo list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "minLength": 1}
                        },
                        "required": ["content", "status", "activeForm"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    /// It changes only the session's list, the same way whenever it runs.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("TodoWrite", input, move |input: Input| async move {
            if let Some(i) =
                input.todos.iter().position(|t| t.content.trim().is_empty() || t.active_form.trim().is_empty())
            {
                return Err(ToolOutput::error(format!(
                    "<tool_use_error>InputValidationError: todos[{i}] needs a non-empty content and activeForm</tool_use_error>"
                )));
            }
            let count = |status| input.todos.iter().filter(|t| t.status == status).count();
            let text = format!(
                "The todo list is updated: {} item(s), {} in progress, {} pending, {} completed. Keep it current \
                 as you work: mark each item completed as soon as it is done.",
                input.todos.len(),
                count(TodoStatus::InProgress),
                count(TodoStatus::Pending),
                count(TodoStatus::Completed)
            );
            let old = ctx.todos.replace(input.todos.clone());
            let mut output = ToolOutput::ok(text);
            output.extra = Some(Box::new(CallExtra {
                tool_use_result: json!({"oldTodos": old, "newTodos": input.todos}),
                usage: Vec::new(),
            }));
            Ok(output)
        })
    }
}

/// The list as a checklist for a person: `☐` pending, `◐` in progress (in its active form),
/// `☑` completed, one item per line.
pub fn checklist(todos: &[Todo]) -> Vec<String> {
    todos
        .iter()
        .map(|t| match t.status {
            TodoStatus::Pending => format!("☐ {}", t.content),
            TodoStatus::InProgress => format!("◐ {}", t.active_form),
            TodoStatus::Completed => format!("☑ {}", t.content),
        })
        .collect()
}

/// The todos of a `TodoWrite` call's input, if it is one that parses.
pub fn todos_of(input: &Value) -> Option<Vec<Todo>> {
    serde_json::from_value::<Input>(input.clone()).ok().map(|i| i.todos)
}

/// A shared list, for a session.
pub fn new_list() -> Arc<TodoList> {
    Arc::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: &str) -> Value {
        json!({"content": content, "status": status, "activeForm": format!("{content}ing")})
    }

    #[tokio::test]
    async fn the_list_is_replaced_and_the_old_one_given_back() {
        let ctx = ToolContext::new(".");
        let first = json!({"todos": [item("Test", "in_progress"), item("Ship", "pending")]});
        let out = TodoWrite.call(first, ctx.clone()).await;
        assert!(!out.is_error);
        assert_eq!(
            out.content,
            "The todo list is updated: 2 item(s), 1 in progress, 1 pending, 0 completed. Keep it current as you \
             work: mark each item completed as soon as it is done."
        );
        assert_eq!(out.extra.unwrap().tool_use_result["oldTodos"], json!([]));
        let second = json!({"todos": [item("Test", "completed"), item("Ship", "in_progress")]});
        let out = TodoWrite.call(second, ctx.clone()).await;
        let result = out.extra.unwrap().tool_use_result;
        assert_eq!(result["oldTodos"], json!([item("Test", "in_progress"), item("Ship", "pending")]));
        assert_eq!(result["newTodos"], json!([item("Test", "completed"), item("Ship", "in_progress")]));
        assert_eq!(checklist(&ctx.todos.items()), ["☑ Test", "◐ Shiping"]);
    }

    #[tokio::test]
    async fn bad_items_are_errors_the_model_reads() {
        let ctx = ToolContext::new(".");
        let out = TodoWrite.call(json!({"todos": [item("", "pending")]}), ctx.clone()).await;
        assert_eq!(
            (out.is_error, out.content.as_str()),
            (
                true,
                "<tool_use_error>InputValidationError: todos[0] needs a non-empty content and activeForm</tool_use_error>"
            )
        );
        let out = TodoWrite.call(json!({"todos": [item("x", "started")]}), ctx.clone()).await;
        assert!(out.is_error && out.content.contains("unknown variant `started`"), "{}", out.content);
        assert!(ctx.todos.items().is_empty(), "a refused call changes nothing");
    }
}
