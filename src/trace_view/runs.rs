//! The runs a set of `--trace=jsonl` files hold, read for the view: each file's main run and
//! its subagents' runs (their header carries `parent_run_id`, their records a `run_id`), each
//! a list of transition records in order.

use serde_json::{Map, Value};

/// Why a trace cannot be viewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A line is not what a trace holds.
    #[error("{path}, line {line}: {message}")]
    Line {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file holds no transition record.
    #[error("{path}: no transition records (is it a --trace=jsonl recording?)")]
    Empty {
        /// The file.
        path: String,
    },
}

/// One run: a trace's main run or one of its subagents'.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The file it was read from.
    pub trace: String,
    /// Its `run_id` (empty when the header names none).
    pub run_id: String,
    /// The run that started it, for a subagent's.
    pub parent_run_id: Option<String>,
    /// The `Agent` call that started it, for a subagent's.
    pub parent_tool_use_id: Option<String>,
    /// Its transition records, in order.
    pub records: Vec<Record>,
    /// Its tool calls, in the order they started.
    pub tools: Vec<ToolSpan>,
    /// When each reply's first event arrived.
    pub replies: Vec<f64>,
    /// The waits before a failed model call was sent again.
    pub retries: Vec<Retry>,
}

/// One tool call, from its trace's `tool` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpan {
    /// The `tool_use` id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// When it started.
    pub start_ms: f64,
    /// When it ended, if the trace says (a run cut short may not).
    pub end_ms: Option<f64>,
    /// Started while the reply was still streaming.
    pub early: bool,
    /// Ended in an error.
    pub is_error: bool,
}

/// One wait before a retry, from a `retry` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// When the wait began.
    pub t_ms: f64,
    /// How long it was.
    pub delay_ms: f64,
    /// Which retry, from 1.
    pub attempt: u64,
    /// The failure retried.
    pub error: String,
}

/// One transition record, as the view uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its `seq` within its run.
    pub seq: u64,
    /// Milliseconds since the session started (one clock for a trace's runs).
    pub t_ms: f64,
    /// The turn it belongs to.
    pub turn: u64,
    /// The edge taken.
    pub edge: String,
    /// The states it left and entered.
    pub from: String,
    /// The state entered.
    pub to: String,
    /// The guard facts as recorded.
    pub guards: Map<String, Value>,
    /// The counters after the edge.
    pub counters: Map<String, Value>,
}

/// The runs of the trace `text`, read from `path`, main run first, then its subagents' in the
/// order their headers appear.
///
/// # Errors
/// [`ReadError::Line`] for a line that is not a JSON object or a record without `edge`,
/// `from` or `to`; [`ReadError::Empty`] when no record is found.
pub fn read(path: &str, text: &str) -> Result<Vec<Run>, ReadError> {
    let mut runs = vec![Run {
        trace: path.to_owned(),
        run_id: String::new(),
        parent_run_id: None,
        parent_tool_use_id: None,
        records: Vec::new(),
        tools: Vec::new(),
        replies: Vec::new(),
        retries: Vec::new(),
    }];
    let line_error = |line: usize, message: String| ReadError::Line { path: path.to_owned(), line, message };
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(mut line)) = serde_json::from_str::<Value>(raw) else {
            return Err(line_error(i + 1, "not a JSON object".into()));
        };
        let text_of = |line: &Map<String, Value>, key: &str| line.get(key).and_then(Value::as_str).map(str::to_owned);
        match line.get("type").and_then(Value::as_str) {
            Some("header") => {
                let run_id = text_of(&line, "run_id").unwrap_or_default();
                match text_of(&line, "parent_run_id") {
                    None => runs[0].run_id = run_id,
                    Some(parent) => runs.push(Run {
                        trace: path.to_owned(),
                        run_id,
                        parent_run_id: Some(parent),
                        parent_tool_use_id: text_of(&line, "parent_tool_use_id"),
                        records: Vec::new(),
                        tools: Vec::new(),
                        replies: Vec::new(),
                        retries: Vec::new(),
                    }),
                }
            }
            Some("transition") => {
                let field = |key: &str| {
                    text_of(&line, key).ok_or_else(|| line_error(i + 1, format!("the record has no `{key}`")))
                };
                let (edge, from, to) = (field("edge")?, field("from")?, field("to")?);
                let number = |key: &str| line.get(key).and_then(Value::as_f64).unwrap_or(0.0);
                let record = Record {
                    seq: number("seq") as u64,
                    t_ms: number("t_ms"),
                    turn: number("turn") as u64,
                    edge,
                    from,
                    to,
                    guards: take_object(&mut line, "guards"),
                    counters: take_object(&mut line, "counters"),
                };
                let run = run_of(&mut runs, path, text_of(&line, "run_id"));
                runs[run].records.push(record);
            }
            Some("tool") => {
                let run = run_of(&mut runs, path, text_of(&line, "run_id"));
                let t_ms = line.get("t_ms").and_then(Value::as_f64).unwrap_or(0.0);
                let id = text_of(&line, "id").unwrap_or_default();
                let tools = &mut runs[run].tools;
                match line.get("phase").and_then(Value::as_str) {
                    Some("start") => tools.push(ToolSpan {
                        id,
                        name: text_of(&line, "name").unwrap_or_default(),
                        start_ms: t_ms,
                        end_ms: None,
                        early: line.get("early").and_then(Value::as_bool).unwrap_or(false),
                        is_error: false,
                    }),
                    Some("end") => {
                        if let Some(span) = tools.iter_mut().rev().find(|s| s.id == id && s.end_ms.is_none()) {
                            span.end_ms = Some(t_ms);
                            span.is_error = line.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                        }
                    }
                    _ => {}
                }
            }
            Some("reply") => {
                let run = run_of(&mut runs, path, text_of(&line, "run_id"));
                runs[run].replies.push(line.get("t_ms").and_then(Value::as_f64).unwrap_or(0.0));
            }
            Some("retry") => {
                let run = run_of(&mut runs, path, text_of(&line, "run_id"));
                let number = |key: &str| line.get(key).and_then(Value::as_f64).unwrap_or(0.0);
                runs[run].retries.push(Retry {
                    t_ms: number("t_ms"),
                    delay_ms: number("delay_ms"),
                    attempt: number("attempt") as u64,
                    error: text_of(&line, "error").unwrap_or_default(),
                });
            }
            _ => {}
        }
    }
    if runs.iter().all(|run| run.records.is_empty()) {
        return Err(ReadError::Empty { path: path.to_owned() });
    }
    Ok(runs)
}

/// The index of the run a line with `run_id` belongs to: the main run's (or a line with
/// none), a subagent's, or a new one for a subagent whose header is missing.
fn run_of(runs: &mut Vec<Run>, path: &str, run_id: Option<String>) -> usize {
    match run_id {
        Some(id) if id != runs[0].run_id => match runs.iter().skip(1).position(|r| r.run_id == id) {
            Some(p) => p + 1,
            None => {
                let parent = runs[0].run_id.clone();
                runs.push(Run {
                    trace: path.to_owned(),
                    run_id: id,
                    parent_run_id: Some(parent),
                    parent_tool_use_id: None,
                    records: Vec::new(),
                    tools: Vec::new(),
                    replies: Vec::new(),
                    retries: Vec::new(),
                });
                runs.len() - 1
            }
        },
        _ => 0,
    }
}

fn take_object(line: &mut Map<String, Value>, key: &str) -> Map<String, Value> {
    match line.remove(key) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_with_a_subagent_is_two_runs_and_a_bad_line_is_named() {
        let text = concat!(
            r#"{"type":"header","schema":1,"run_id":"main"}"#,
            "\n",
            r#"{"type":"transition","seq":1,"t_ms":1.5,"turn":1,"from":"Prepare","to":"Request","edge":"prepare.request","guards":{"over_autocompact":false},"counters":{"turns":99}}"#,
            "\n",
            r#"{"type":"header","schema":1,"run_id":"agent-1","parent_run_id":"main","parent_tool_use_id":"toolu_1"}"#,
            "\n",
            r#"{"type":"transition","run_id":"agent-1","seq":1,"t_ms":2,"turn":1,"from":"Prepare","to":"Request","edge":"prepare.request"}"#,
            "\n\n",
            r#"{"type":"transition","seq":2,"t_ms":3,"turn":1,"from":"Request","to":"Consume","edge":"request.stream_opened"}"#,
            "\n",
            r#"{"type":"reply","phase":"start","t_ms":3.5,"model":"m"}"#,
            "\n",
            r#"{"type":"tool","phase":"start","t_ms":4,"id":"toolu_2","name":"Read","early":true,"run_id":"agent-1"}"#,
            "\n",
            r#"{"type":"tool","phase":"end","t_ms":4.75,"id":"toolu_2","name":"Read","is_error":true,"run_id":"agent-1"}"#,
            "\n",
            r#"{"type":"retry","t_ms":5,"attempt":1,"max":10,"delay_ms":500,"error":"HTTP 529 overloaded"}"#,
            "\n",
        );
        let runs = read("t.jsonl", text).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].run_id, "main");
        assert_eq!(
            runs[0].records.iter().map(|r| r.edge.as_str()).collect::<Vec<_>>(),
            ["prepare.request", "request.stream_opened"]
        );
        assert_eq!(runs[0].records[0].t_ms, 1.5);
        assert_eq!(runs[0].records[0].counters["turns"], 99);
        assert_eq!(runs[1].parent_run_id.as_deref(), Some("main"));
        assert_eq!(runs[1].parent_tool_use_id.as_deref(), Some("toolu_1"));
        assert_eq!(runs[1].records.len(), 1);
        assert_eq!(runs[0].replies, [3.5]);
        assert_eq!(
            runs[1].tools,
            [ToolSpan {
                id: "toolu_2".into(),
                name: "Read".into(),
                start_ms: 4.0,
                end_ms: Some(4.75),
                early: true,
                is_error: true
            }]
        );
        assert_eq!(
            runs[0].retries,
            [Retry { t_ms: 5.0, delay_ms: 500.0, attempt: 1, error: "HTTP 529 overloaded".into() }]
        );

        let bad = format!("{text}not json\n");
        assert_eq!(read("t.jsonl", &bad).unwrap_err().to_string(), "t.jsonl, line 11: not a JSON object");
        assert_eq!(
            read("t.jsonl", r#"{"type":"header","run_id":"x"}"#).unwrap_err(),
            ReadError::Empty { path: "t.jsonl".into() }
        );
        assert_eq!(
            read("t.jsonl", r#"{"type":"transition","from":"A","to":"B"}"#).unwrap_err().to_string(),
            "t.jsonl, line 1: the record has no `edge`"
        );
    }
}
