//! `NotebookEdit`: change one cell of a Jupyter notebook (`.ipynb`), with Claude Code's input
//! schema: replace a cell's source, insert a new cell after one (or at the start), or delete
//! one. Cells are found by their `id` (nbformat 4.5) or, for notebooks without ids, by
//! `cell-N` (N counting from 0). As with `Edit`, the notebook must have been read in this run
//! and be unchanged on disk since ([`super::fresh`]); an `Edit(…)` rule covers it.
//!
//! Everything of the notebook but the cell changed is written back as it was (its metadata,
//! the other cells, their outputs); a replaced code cell loses its outputs and execution
//! count, which no longer match its source.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::paths::{resolve, write_no_follow};
use super::{Subject, Tool, ToolContext, ToolKind, ToolOutput, fresh, typed_call};

/// The `NotebookEdit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotebookEdit;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Replace,
    Insert,
    Delete,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CellType {
    Code,
    Markdown,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    notebook_path: String,
    #[serde(default)]
    cell_id: Option<String>,
    new_source: String,
    #[serde(default)]
    cell_type: Option<CellType>,
    #[serde(default)]
    edit_mode: Mode,
}

impl Tool for NotebookEdit {
    fn name(&self) -> &'static str {
        "NotebookEdit"
    }

    fn description(&self) -> &'static str {
        "Changes one cell of a Jupyter notebook (.ipynb): replaces the source of the cell \
         cell_id (edit_mode replace, the default), inserts a new cell of cell_type after cell_id \
         (or at the start without one; edit_mode insert), or deletes the cell (edit_mode \
         delete). Cells are named by their id, or cell-N (from 0) in notebooks without ids. Read \
         the notebook first; it must not have changed on disk since."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "notebook_path": {"type": "string", "description": "The path of the notebook (absolute, or relative to the working directory)"},
                "cell_id": {"type": "string", "description": "The cell to edit; for insert, the new cell goes after it (at the start without one)"},
                "new_source": {"type": "string", "description": "The new source of the cell"},
                "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The cell's type; required for insert"},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "replace (default), insert or delete"}
            },
            "required": ["notebook_path", "new_source"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::EditsFiles
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        Subject::path_field(input, "notebook_path", None)
    }

    fn attaches_memory(&self) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("NotebookEdit", input, move |input: Input| async move { edit(input, &ctx).await })
    }
}

async fn edit(input: Input, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let shown = &input.notebook_path;
    if !shown.ends_with(".ipynb") {
        return Err(ToolOutput::error(format!(
            "{shown} is not a notebook: NotebookEdit changes .ipynb files; use Edit."
        )));
    }
    let path = resolve(ctx, shown, true)?;
    let meta = tokio::fs::metadata(&path).await.map_err(|e| ToolOutput::error(format!("Cannot edit {shown}: {e}")))?;
    fresh::check(ctx, &path, shown, meta.modified().ok())?;
    let bytes = tokio::fs::read(&path).await.map_err(|e| ToolOutput::error(format!("Cannot edit {shown}: {e}")))?;
    let mut notebook: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ToolOutput::error(format!("{shown} is not a notebook: its JSON does not parse ({e}).")))?;
    let with_ids = notebook_has_ids(&notebook);
    let Some(cells) = notebook.get_mut("cells").and_then(Value::as_array_mut) else {
        return Err(ToolOutput::error(format!("{shown} is not a notebook: it has no `cells` list.")));
    };
    let position = match &input.cell_id {
        None => None,
        Some(id) => Some(find(cells, id).ok_or_else(|| {
            ToolOutput::error(format!("{shown} has no cell {id} (cells are named by their id, or cell-N from 0)."))
        })?),
    };
    let said = match input.edit_mode {
        Mode::Replace => {
            let Some(at) = position else {
                return Err(ToolOutput::error("replace needs the cell_id of the cell to change."));
            };
            let cell = cells[at].as_object_mut().ok_or_else(|| ToolOutput::error("the cell is not an object"))?;
            if let Some(kind) = input.cell_type {
                cell.insert("cell_type".into(), json!(type_name(kind)));
            }
            cell.insert("source".into(), source(&input.new_source));
            if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                cell.insert("outputs".into(), json!([]));
                cell.insert("execution_count".into(), Value::Null);
            }
            format!("Replaced the source of cell {} in {shown}.", name_of(cells, at))
        }
        Mode::Insert => {
            let Some(kind) = input.cell_type else {
                return Err(ToolOutput::error("insert needs cell_type: code or markdown."));
            };
            let at = position.map_or(0, |p| p + 1);
            let mut cell = Map::new();
            cell.insert("cell_type".into(), json!(type_name(kind)));
            if with_ids {
                cell.insert("id".into(), json!(new_id(cells)));
            }
            cell.insert("metadata".into(), json!({}));
            cell.insert("source".into(), source(&input.new_source));
            if kind == CellType::Code {
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            }
            cells.insert(at, Value::Object(cell));
            format!("Inserted a {} cell {} in {shown}.", type_name(kind), name_of(cells, at))
        }
        Mode::Delete => {
            let Some(at) = position else {
                return Err(ToolOutput::error("delete needs the cell_id of the cell to delete."));
            };
            let name = name_of(cells, at);
            cells.remove(at);
            format!("Deleted cell {name} from {shown}.")
        }
    };
    let mut text = serde_json::to_string_pretty(&notebook).map_err(|e| ToolOutput::error(e.to_string()))?;
    text.push('\n');
    write_no_follow(&path, text.as_bytes())
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot write {shown}: {e}")))?;
    let modified = tokio::fs::metadata(&path).await.ok().and_then(|m| m.modified().ok());
    fresh::record(ctx, path, modified);
    Ok(ToolOutput::ok(said))
}

fn type_name(kind: CellType) -> &'static str {
    match kind {
        CellType::Code => "code",
        CellType::Markdown => "markdown",
    }
}

/// A cell's source as notebooks store it: a list of lines, each but the last with its `\n`.
fn source(text: &str) -> Value {
    json!(text.split_inclusive('\n').collect::<Vec<_>>())
}

/// Whether the notebook's cells carry ids (nbformat 4.5 and later).
fn notebook_has_ids(notebook: &Value) -> bool {
    notebook["cells"].as_array().is_some_and(|cells| cells.iter().any(|c| c.get("id").is_some()))
}

/// The index of the cell `id` names: its `id`, or `cell-N`.
fn find(cells: &[Value], id: &str) -> Option<usize> {
    cells
        .iter()
        .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .or_else(|| id.strip_prefix("cell-").and_then(|n| n.parse::<usize>().ok()).filter(|n| *n < cells.len()))
}

/// How the model names the cell at `at`.
fn name_of(cells: &[Value], at: usize) -> String {
    cells[at].get("id").and_then(Value::as_str).map_or_else(|| format!("cell-{at}"), str::to_owned)
}

/// An id no cell has yet: 8 hex digits.
fn new_id(cells: &[Value]) -> String {
    loop {
        let id = format!("{:08x}", rand::random::<u32>());
        if !cells.iter().any(|c| c.get("id").and_then(Value::as_str) == Some(&id)) {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::read::Read;

    fn notebook() -> Value {
        json!({"cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
            {"cell_type": "code", "id": "calc", "metadata": {"tags": ["x"]}, "execution_count": 3,
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["2\n"]}], "source": ["print(1 + 1)"]}
        ], "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5})
    }

    async fn read_notebook(dir: &std::path::Path, nb: &Value) -> ToolContext {
        std::fs::write(dir.join("n.ipynb"), nb.to_string()).unwrap();
        let ctx = ToolContext::new(dir);
        assert!(!Read.call(json!({"file_path": "n.ipynb"}), ctx.clone()).await.is_error);
        ctx
    }

    fn on_disk(dir: &std::path::Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join("n.ipynb")).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn replace_insert_and_delete_keep_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = read_notebook(dir.path(), &notebook()).await;
        let out = NotebookEdit
            .call(
                json!({"notebook_path": "n.ipynb", "cell_id": "calc", "new_source": "print(2 + 2)\nprint(3)"}),
                ctx.clone(),
            )
            .await;
        assert_eq!(out, ToolOutput::ok("Replaced the source of cell calc in n.ipynb."));
        let nb = on_disk(dir.path());
        assert_eq!(nb["cells"][1]["source"], json!(["print(2 + 2)\n", "print(3)"]));
        assert_eq!(
            (nb["cells"][1]["outputs"].clone(), nb["cells"][1]["execution_count"].clone()),
            (json!([]), Value::Null)
        );
        assert_eq!(nb["cells"][1]["metadata"], json!({"tags": ["x"]}));
        assert_eq!(nb["metadata"], notebook()["metadata"]);
        assert_eq!(nb["cells"][0], notebook()["cells"][0]);

        let out = NotebookEdit
            .call(
                json!({"notebook_path": "n.ipynb", "cell_id": "intro", "new_source": "x = 1",
                "cell_type": "code", "edit_mode": "insert"}),
                ctx.clone(),
            )
            .await;
        let nb = on_disk(dir.path());
        let id = nb["cells"][1]["id"].as_str().unwrap().to_owned();
        assert_eq!(out, ToolOutput::ok(format!("Inserted a code cell {id} in n.ipynb.")));
        assert_eq!(id.len(), 8);
        assert_eq!(nb["cells"].as_array().unwrap().len(), 3);
        assert_eq!(nb["cells"][1]["source"], json!(["x = 1"]));

        let out = NotebookEdit
            .call(
                json!({"notebook_path": "n.ipynb", "cell_id": "intro", "new_source": "", "edit_mode": "delete"}),
                ctx.clone(),
            )
            .await;
        assert_eq!(out, ToolOutput::ok("Deleted cell intro from n.ipynb."));
        let nb = on_disk(dir.path());
        let ids: Vec<&str> = nb["cells"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, [id.as_str(), "calc"]);
    }

    #[tokio::test]
    async fn cells_without_ids_go_by_number_and_errors_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let mut nb = notebook();
        for cell in nb["cells"].as_array_mut().unwrap() {
            cell.as_object_mut().unwrap().remove("id");
        }
        let ctx = read_notebook(dir.path(), &nb).await;
        let out = NotebookEdit
            .call(json!({"notebook_path": "n.ipynb", "cell_id": "cell-0", "new_source": "# New"}), ctx.clone())
            .await;
        assert_eq!(out, ToolOutput::ok("Replaced the source of cell cell-0 in n.ipynb."));
        assert_eq!(on_disk(dir.path())["cells"][0]["source"], json!(["# New"]));
        let missing = NotebookEdit
            .call(json!({"notebook_path": "n.ipynb", "cell_id": "cell-9", "new_source": "x"}), ctx.clone())
            .await;
        assert_eq!(
            missing,
            ToolOutput::error("n.ipynb has no cell cell-9 (cells are named by their id, or cell-N from 0).")
        );
        let untyped = NotebookEdit
            .call(json!({"notebook_path": "n.ipynb", "new_source": "x", "edit_mode": "insert"}), ctx.clone())
            .await;
        assert_eq!(untyped, ToolOutput::error("insert needs cell_type: code or markdown."));
        std::fs::write(dir.path().join("other.ipynb"), notebook().to_string()).unwrap();
        let unread = NotebookEdit
            .call(json!({"notebook_path": "other.ipynb", "cell_id": "calc", "new_source": "x"}), ctx.clone())
            .await;
        assert_eq!(
            unread,
            ToolOutput::error("other.ipynb has not been read in this run. Read it first, then change it.")
        );
        let text = NotebookEdit.call(json!({"notebook_path": "a.py", "new_source": "x"}), ctx).await;
        assert_eq!(text, ToolOutput::error("a.py is not a notebook: NotebookEdit changes .ipynb files; use Edit."));
    }
}
