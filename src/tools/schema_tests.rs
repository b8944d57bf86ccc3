//! Snapshots of every standard tool's definition (name, description, input schema): a
//! change to what the model is told shows up as a snapshot diff in review.

use serde_json::json;

use super::{Registry, Tool};

fn definition(tool: &dyn Tool) -> serde_json::Value {
    json!({"name": tool.name(), "description": tool.description(), "input_schema": tool.input_schema()})
}

#[test]
fn standard_tools_in_order() {
    let names: Vec<String> = Registry::standard().definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            "Read",
            "Write",
            "Edit",
            "Bash",
            "Glob",
            "Grep",
            "TaskOutput",
            "TaskStop",
            "NotebookEdit",
            "TodoWrite",
            "WebFetch",
            "WebSearch"
        ]
    );
}

#[test]
fn read_schema() {
    insta::assert_json_snapshot!(definition(&super::read::Read));
}

#[test]
fn write_schema() {
    insta::assert_json_snapshot!(definition(&super::write::Write));
}

#[test]
fn edit_schema() {
    insta::assert_json_snapshot!(definition(&super::edit::Edit));
}

#[test]
fn bash_schema() {
    insta::assert_json_snapshot!(definition(&super::bash::Bash));
}

#[test]
fn glob_schema() {
    insta::assert_json_snapshot!(definition(&super::glob::Glob::default()));
}

#[test]
fn grep_schema() {
    insta::assert_json_snapshot!(definition(&super::grep::Grep::default()));
}

#[test]
fn task_output_schema() {
    insta::assert_json_snapshot!(definition(&super::task_output::TaskOutput));
}

#[test]
fn task_stop_schema() {
    insta::assert_json_snapshot!(definition(&super::task_stop::TaskStop));
}

#[test]
fn todo_write_schema() {
    insta::assert_json_snapshot!(definition(&super::todo::TodoWrite));
}

#[test]
fn notebook_edit_schema() {
    insta::assert_json_snapshot!(definition(&super::notebook_edit::NotebookEdit));
}

#[test]
fn web_fetch_schema() {
    insta::assert_json_snapshot!(definition(&super::web_fetch::WebFetch::default()));
}

#[test]
fn web_search_schema() {
    insta::assert_json_snapshot!(definition(&super::web_search::WebSearch));
}
