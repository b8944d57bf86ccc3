//! The view as one self-contained HTML file: the statechart (SVG, laid out here), the runs'
//! records as compact JSON, the coverage, and the stylesheet and script inlined. Nothing is
//! fetched: no network, no CDN, no other file, so it opens from an e-mail attachment.
//!
//! A record goes into the page as `[seq, t_ms, turn, edge, guards, counters]`: `edge` the
//! edge's index in the table (or its id when the table does not declare it), `guards` as
//! `[[fact, value], …]` with the fact's index, and `counters` as `[[counter, value], …]`
//! holding only the counters that changed since the run's previous record (all of them in
//! the first), so a 1000-turn trace stays a few MB. A run's tool calls are `[name, start,
//! end, early, is_error, id]`, its replies' first events a list of times, its retries' waits
//! `[t, delay, attempt, error]`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::audit::coverage::Coverage;
use crate::engine::table::Table;
use crate::trace_view::chart;
use crate::trace_view::runs::Run;

const STYLE: &str = include_str!("view.css");
const SCRIPT: &str = include_str!("view.js");

/// The whole page for `runs` of `table`.
pub fn html(table: &Table, table_path: &str, runs: &[Run], coverage: &Coverage) -> String {
    let data = data(table, table_path, runs, coverage);
    let title = match runs.first() {
        Some(run) if runs.iter().all(|r| r.trace == run.trace) => format!("agentloop trace: {}", run.trace),
        _ => format!("agentloop traces: {} runs", runs.len()),
    };
    let mut page = String::with_capacity(data.len() + STYLE.len() + SCRIPT.len() + 64 * 1024);
    page.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    page.push_str(&format!("<title>{}</title><style>{STYLE}</style></head><body>", chart::escape(&title)));
    page.push_str(&format!(
        "<header><h1>{}</h1><label>Run <select id=\"run\"></select></label><span id=\"summary\"></span></header>",
        chart::escape(&title)
    ));
    page.push_str("<section><h2>The machine</h2><p class=\"hint\">Edges this selection took are drawn heavy with their count; click one to list its records.</p><div class=\"scroll\">");
    page.push_str(&chart::svg(table));
    page.push_str("</div></section>");
    page.push_str("<section><h2>Timeline</h2><p class=\"hint\">The machine's state over time, one lane per run (subagents under their parent). Wheel to zoom, drag to pan; click to find the record.</p><svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\"></svg></section>");
    page.push_str(
        "<section><h2>Counters</h2><svg id=\"counters\" xmlns=\"http://www.w3.org/2000/svg\"></svg></section>",
    );
    page.push_str("<section><h2>Transitions</h2><div class=\"filters\"><label>Edge <select id=\"f-edge\"><option value=\"\">any</option></select></label><label>State <select id=\"f-state\"><option value=\"\">any</option></select></label><label>Turn <input id=\"f-turn\" type=\"number\" min=\"0\"></label><button id=\"f-clear\" type=\"button\">Clear</button><span id=\"f-count\"></span></div><div class=\"scroll table\"><table id=\"records\"><thead><tr><th>run</th><th>seq</th><th>t (ms)</th><th>turn</th><th>from</th><th>edge</th><th>to</th><th>reason</th><th>guards</th><th>counters changed</th></tr></thead><tbody></tbody></table></div></section>");
    page.push_str("<section><h2>Coverage</h2><div id=\"coverage\"></div></section>");
    page.push_str("<script type=\"application/json\" id=\"data\">");
    page.push_str(&data);
    page.push_str("</script><script>");
    page.push_str(SCRIPT);
    page.push_str("</script></body></html>\n");
    page
}

/// The page's data as JSON, safe inside a `script` element.
fn data(table: &Table, table_path: &str, runs: &[Run], coverage: &Coverage) -> String {
    let edge_index: BTreeMap<&str, usize> = table.edges.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    let facts: Vec<&str> = table.facts.iter().map(|f| f.name.as_str()).collect();
    let counters: Vec<&str> = table.counters.iter().map(|c| c.name.as_str()).collect();
    let index_of = |names: &[&str], name: &str| names.iter().position(|n| *n == name);
    let runs_json: Vec<Value> = runs
        .iter()
        .map(|run| {
            let parent = run.parent_run_id.as_ref().and_then(|p| {
                runs.iter().position(|r| r.trace == run.trace && r.run_id == *p && r.parent_run_id.is_none())
            });
            let mut last: BTreeMap<usize, Value> = BTreeMap::new();
            let records: Vec<Value> = run
                .records
                .iter()
                .map(|r| {
                    let edge = edge_index.get(r.edge.as_str()).map_or_else(|| json!(r.edge), |i| json!(i));
                    let guards: Vec<Value> = r
                        .guards
                        .iter()
                        .map(|(k, v)| index_of(&facts, k).map_or_else(|| json!([k, v]), |i| json!([i, v])))
                        .collect();
                    let mut changed = Vec::new();
                    for (k, v) in &r.counters {
                        match index_of(&counters, k) {
                            Some(i) if last.get(&i) == Some(v) => {}
                            Some(i) => {
                                last.insert(i, v.clone());
                                changed.push(json!([i, v]));
                            }
                            None => changed.push(json!([k, v])),
                        }
                    }
                    let t = (r.t_ms * 1000.0).round() / 1000.0;
                    json!([r.seq, t, r.turn, edge, guards, changed])
                })
                .collect();
            let round = |t: f64| (t * 1000.0).round() / 1000.0;
            let tools: Vec<Value> = run
                .tools
                .iter()
                .map(|t| json!([t.name, round(t.start_ms), t.end_ms.map(round), t.early, t.is_error, t.id]))
                .collect();
            let retries: Vec<Value> =
                run.retries.iter().map(|r| json!([round(r.t_ms), r.delay_ms, r.attempt, r.error])).collect();
            json!({
                "trace": run.trace,
                "run_id": run.run_id,
                "parent": parent,
                "call": run.parent_tool_use_id,
                "records": records,
                "tools": tools,
                "replies": run.replies.iter().map(|t| round(*t)).collect::<Vec<_>>(),
                "retries": retries,
            })
        })
        .collect();
    let table_json = json!({
        "path": table_path,
        "initial": table.initial,
        "states": table.states.iter().map(|s| json!({"name": s.name, "parent": s.parent})).collect::<Vec<_>>(),
        "edges": table.edges.iter().map(|e| json!({
            "id": e.id, "from": e.from, "to": e.to, "on": e.on, "kind": e.kind.as_str(),
            "reason": e.reason, "guard": e.guard_text,
        })).collect::<Vec<_>>(),
        "facts": facts,
        "counters": counters,
    });
    let coverage_json = json!({
        "edges": coverage.edges.iter().map(|e| json!({"id": e.id, "taken": e.taken, "runs": e.runs, "scenario": e.scenario})).collect::<Vec<_>>(),
        "reasons": coverage.reasons.iter().map(|r| json!({"name": r.name, "kind": r.kind, "taken": r.taken, "runs": r.runs, "scenario": r.scenario})).collect::<Vec<_>>(),
        "unknown_edges": coverage.unknown_edges,
    });
    let text = json!({"table": table_json, "runs": runs_json, "coverage": coverage_json}).to_string();
    // `</script>` (any case) or `<!--` inside the JSON would end or alter the element.
    text.replace('<', "\\u003c")
}
