// agentloop trace view: everything the page shows is drawn here from the JSON in #data,
// except the statechart's layout, which the page carries as SVG.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("data").textContent);
  const table = data.table;
  const edges = table.edges;
  const COLORS = ["#2563eb", "#0f766e", "#b45309", "#7c3aed", "#be123c", "#0369a1", "#4d7c0f", "#a21caf", "#c2410c", "#1d4ed8", "#15803d", "#9f1239", "#6d28d9", "#0e7490"];
  const STATES = table.states.map(s => s.name);
  const stateColor = name => COLORS[Math.max(0, STATES.indexOf(name)) % COLORS.length];

  // Each run's records, decoded: counters carried forward, edge resolved.
  const runs = data.runs.map((run, index) => {
    const counters = {};
    const records = run.records.map(([seq, t, turn, edge, guards, changed]) => {
      for (const [c, v] of changed) counters[typeof c === "number" ? table.counters[c] : c] = v;
      const decl = typeof edge === "number" ? edges[edge] : null;
      return {
        run: index, seq, t, turn,
        edge: decl ? edge : -1,
        id: decl ? decl.id : String(edge),
        from: decl ? decl.from : "?", to: decl ? decl.to : "?",
        kind: decl ? decl.kind : "internal", reason: decl ? decl.reason : null,
        guards: guards.map(([f, v]) => [typeof f === "number" ? table.facts[f] : f, v]),
        changed: changed.map(([c, v]) => [typeof c === "number" ? table.counters[c] : c, v]),
        counters: Object.assign({}, counters),
      };
    });
    const tools = run.tools.map(([name, start, end, early, error, id]) => ({ name, start, end, early, error, id }));
    const retries = run.retries.map(([t, delay, attempt, error]) => ({ t, delay, attempt, error }));
    return { index, trace: run.trace, runId: run.run_id, parent: run.parent, call: run.call, records, tools, replies: run.replies, retries };
  });
  const label = run => (run.parent === null ? run.trace.split(/[\\/]/).pop() : "  subagent " + (run.call || run.runId));

  const state = { run: "all", edge: "", st: "", turn: "", selected: null, zoom: 1, offset: 0 };
  const selectedRuns = () => (state.run === "all" ? runs : [runs[Number(state.run)]]);

  // The run selector.
  const runSelect = document.getElementById("run");
  runSelect.add(new Option(runs.length > 1 ? `all ${runs.length} runs` : "the run", "all"));
  if (runs.length > 1) runs.forEach(run => runSelect.add(new Option(label(run), String(run.index))));
  runSelect.addEventListener("change", () => { state.run = runSelect.value; state.selected = null; state.offset = 0; state.zoom = 1; render(); });

  // The filters.
  const fEdge = document.getElementById("f-edge"), fState = document.getElementById("f-state"), fTurn = document.getElementById("f-turn");
  edges.forEach((e, i) => fEdge.add(new Option(e.id, String(i))));
  STATES.forEach(s => fState.add(new Option(s, s)));
  fEdge.addEventListener("change", () => { state.edge = fEdge.value; renderTable(); renderChart(); });
  fState.addEventListener("change", () => { state.st = fState.value; renderTable(); });
  fTurn.addEventListener("input", () => { state.turn = fTurn.value; renderTable(); });
  const clearFilters = () => { state.edge = state.st = state.turn = ""; fEdge.value = fState.value = fTurn.value = ""; };
  document.getElementById("f-clear").addEventListener("click", () => { clearFilters(); state.selected = null; render(); });

  // The chart: heat from the selected runs, click to filter.
  const chart = document.getElementById("chart");
  chart.querySelectorAll(".edge").forEach(g => g.addEventListener("click", () => {
    const i = g.getAttribute("data-edge");
    state.edge = state.edge === i ? "" : i; fEdge.value = state.edge; renderChart(); renderTable();
  }));
  function renderChart() {
    const counts = new Array(edges.length).fill(0);
    const reached = new Set();
    for (const run of selectedRuns()) for (const r of run.records) {
      if (r.edge >= 0) counts[r.edge]++;
      if (r.kind === "terminal" && r.reason) reached.add(r.reason);
    }
    chart.querySelectorAll(".edge").forEach(g => {
      const i = Number(g.getAttribute("data-edge"));
      const n = counts[i];
      g.classList.toggle("taken", n > 0);
      g.classList.toggle("selected", state.edge === String(i) || (state.selected && state.selected.edge === i));
      const path = g.querySelector("path");
      path.style.strokeWidth = n > 0 ? String(1.5 + 1.6 * Math.log2(1 + n)) : "";
      g.querySelector("text").textContent = n > 0 ? String(n) : "";
    });
    chart.querySelectorAll(".end").forEach(g => g.classList.toggle("reached", reached.has(g.getAttribute("data-reason"))));
  }

  // The table of records.
  const tbody = document.querySelector("#records tbody");
  const fCount = document.getElementById("f-count");
  let shown = [];
  // Rows are drawn a page at a time: a 1000-turn run is 5000 records.
  const ROWS = 500;
  let limit = ROWS;
  function renderTable(keep) {
    if (!keep) limit = ROWS;
    const turn = state.turn === "" ? null : Number(state.turn);
    shown = [];
    for (const run of selectedRuns()) for (const r of run.records) {
      if (state.edge !== "" && r.edge !== Number(state.edge)) continue;
      if (state.st !== "" && r.from !== state.st && r.to !== state.st) continue;
      if (turn !== null && r.turn !== turn) continue;
      shown.push(r);
    }
    if (state.run === "all" && runs.length > 1) shown.sort((a, b) => a.t - b.t || a.run - b.run);
    const rows = shown.slice(0, limit).map((r, i) => `<tr data-i="${i}"${state.selected === r ? ' class="selected"' : ""}><td>${r.run}</td><td>${r.seq}</td><td>${r.t.toFixed(1)}</td><td>${r.turn}</td><td>${escXml(r.from)}</td><td class="kind-${r.kind}">${escXml(r.id)}</td><td>${escXml(r.to)}</td><td>${escXml(r.reason || "")}</td><td class="guards">${escXml(r.guards.map(([k, v]) => `${k}=${v}`).join(" "))}</td><td class="counters">${escXml(r.changed.map(([k, v]) => `${k}=${v}`).join(" "))}</td></tr>`);
    if (shown.length > limit) rows.push(`<tr class="more"><td colspan="10"><button type="button" id="more">Show ${Math.min(ROWS, shown.length - limit)} more of ${shown.length - limit}</button></td></tr>`);
    tbody.innerHTML = rows.join("");
    fCount.textContent = `${shown.length} record${shown.length === 1 ? "" : "s"}`;
  }
  tbody.addEventListener("click", ev => {
    if (ev.target.id === "more") { limit += ROWS; renderTable(true); return; }
    const tr = ev.target.closest("tr[data-i]");
    if (!tr) return;
    select(shown[Number(tr.getAttribute("data-i"))], false);
  });
  function select(record, scroll) {
    state.selected = record;
    renderChart(); renderTimeline();
    tbody.querySelectorAll("tr.selected").forEach(tr => tr.classList.remove("selected"));
    const i = shown.indexOf(record);
    if (i >= limit) { limit = i + 1; renderTable(true); }
    const tr = i >= 0 ? tbody.querySelector(`tr[data-i="${i}"]`) : null;
    if (tr) { tr.classList.add("selected"); if (scroll) tr.scrollIntoView({ block: "center" }); }
  }

  // The timeline: a lane per run, the state entered by each record until the next.
  const tl = document.getElementById("timeline");
  const LANE = 26, LEFT = 170, TOP = 22;
  function lanes() {
    const chosen = selectedRuns();
    const order = [];
    for (const run of chosen) if (run.parent === null || !chosen.includes(runs[run.parent])) {
      order.push(run);
      for (const child of chosen) if (child.parent === run.index) order.push(child);
    }
    return order;
  }
  function extent() {
    let end = 0;
    for (const run of selectedRuns()) for (const r of run.records) end = Math.max(end, r.t);
    return Math.max(end, 1);
  }
  // A run's rows: its states, its model calls (each attempt from entering Request to leaving
  // Consume or to its retry, the reply's first event ticked, retries' waits), then its tool
  // calls packed into as few rows as their overlaps allow.
  function rowsOf(run) {
    const rows = [{ kind: "states", run }];
    const calls = [];
    let open = null;
    for (const r of run.records) {
      // A retry or a fallback (Request to Request) ends one attempt and begins the next.
      if (open !== null && r.from === "Request" && r.to === "Request") { calls.push([open, r.t]); open = r.t; continue; }
      if (r.to === "Request" && r.from !== "Request" && r.from !== "Consume") open = r.t;
      if (open !== null && r.from === "Consume" && r.to !== "Consume") { calls.push([open, r.t]); open = null; }
    }
    if (open !== null && run.records.length) calls.push([open, run.records[run.records.length - 1].t]);
    if (calls.length || run.retries.length) rows.push({ kind: "model", run, calls });
    const ends = [];
    const packed = run.tools.map(tool => {
      const end = tool.end === null ? extent() : tool.end;
      let row = ends.findIndex(e => e <= tool.start);
      if (row < 0) { row = ends.length; ends.push(0); }
      ends[row] = end;
      return { tool, row, end };
    });
    for (let i = 0; i < ends.length; i++) rows.push({ kind: "tools", run, lane: i, tools: packed.filter(p => p.row === i) });
    return rows;
  }
  function renderTimeline() {
    const rows = lanes().flatMap(rowsOf);
    const width = tl.clientWidth || 1000;
    const height = TOP + rows.length * LANE + 18;
    tl.setAttribute("viewBox", `0 0 ${width} ${height}`);
    tl.setAttribute("height", String(height));
    const span = extent();
    const scale = (width - LEFT - 10) / span * state.zoom;
    const x = t => LEFT + (t - state.offset) * scale;
    const clip = (t0, t1) => [Math.max(LEFT, x(t0)), Math.min(width, x(t1))];
    const parts = [];
    // Time ticks.
    const step = niceStep(span / state.zoom / 8);
    for (let t = Math.ceil(state.offset / step) * step; x(t) < width; t += step) {
      parts.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${TOP - 6}" y2="${height - 14}" stroke="#eef1f5"/><text x="${x(t) + 2}" y="${TOP - 9}">${fmtMs(t)}</text>`);
    }
    rows.forEach((row, lane) => {
      const y = TOP + lane * LANE;
      const run = row.run;
      if (row.kind === "model") {
        parts.push(`<text x="18" y="${y + 16}">model calls</text>`);
        for (const [t0, t1] of row.calls) {
          const [x0, x1] = clip(t0, t1);
          if (x1 > x0) parts.push(`<rect class="call" x="${x0.toFixed(1)}" y="${y + 6}" width="${Math.max(1, x1 - x0).toFixed(2)}" height="${LANE - 14}"><title>model call ${fmtMs(t0)}–${fmtMs(t1)} (${fmtMs(t1 - t0)})</title></rect>`);
          const first = run.replies.find(t => t >= t0 && t <= t1);
          if (first !== undefined && x(first) >= LEFT && x(first) <= width) parts.push(`<line class="ttft" x1="${x(first)}" x2="${x(first)}" y1="${y + 3}" y2="${y + LANE - 5}"><title>first event ${fmtMs(first - t0)} after the call began</title></line>`);
        }
        for (const r of run.retries) {
          const [x0, x1] = clip(r.t, r.t + r.delay);
          if (x1 > x0) parts.push(`<rect class="backoff" x="${x0.toFixed(1)}" y="${y + 8}" width="${Math.max(1, x1 - x0).toFixed(2)}" height="${LANE - 18}"><title>retry ${r.attempt} after ${fmtMs(r.delay)}: ${escXml(r.error)}</title></rect>`);
        }
        return;
      }
      if (row.kind === "tools") {
        if (row.lane === 0) parts.push(`<text x="18" y="${y + 16}">tool calls</text>`);
        for (const { tool, end } of row.tools) {
          const [x0, x1] = clip(tool.start, end);
          if (x1 < x0) continue;
          const cls = "tool" + (tool.early ? " early" : "") + (tool.error ? " error" : "") + (tool.end === null ? " unfinished" : "");
          const w = Math.max(1.5, x1 - x0);
          parts.push(`<g class="${cls}"><rect x="${x0.toFixed(1)}" y="${y + 4}" width="${w.toFixed(2)}" height="${LANE - 10}"/>${w > 40 ? `<text x="${(x0 + 3).toFixed(1)}" y="${y + 16}">${escXml(tool.name)}</text>` : ""}<title>${escXml(tool.name)} ${escXml(tool.id)}: ${fmtMs(tool.start)}–${tool.end === null ? "not finished" : fmtMs(tool.end) + " (" + fmtMs(tool.end - tool.start) + ")"}${tool.early ? ", started while the reply streamed" : ""}${tool.error ? ", failed" : ""}</title></g>`);
        }
        return;
      }
      parts.push(`<text class="lane-label" x="6" y="${y + 16}">${escXml(label(run).trim().slice(0, 24))}</text>`);
      let start = run.records.length ? (run.parent === null ? 0 : run.records[0].t) : 0;
      let current = run.parent === null ? table.initial : run.records.length ? run.records[0].from : table.initial;
      // An interval a pixel or wider is a bar of its own; narrower ones share their pixel,
      // drawn in the colour of the state that held it longest, so a long run draws at most
      // a bar per pixel whatever its length.
      let bucket = null, lastMark = -1;
      const bar = (x0, w, st, i, t0, t1, by) => parts.push(`<rect data-run="${run.index}" data-rec="${i}" x="${x0.toFixed(1)}" y="${y + 3}" width="${w.toFixed(2)}" height="${LANE - 8}" fill="${stateColor(st)}" opacity="0.8"><title>${escXml(st)} ${fmtMs(t0)}–${fmtMs(t1)}, left by ${escXml(by)}</title></rect>`);
      const flush = () => { if (bucket) bar(bucket.px, 1, bucket.st, bucket.i, bucket.t0, bucket.t1, bucket.by); bucket = null; };
      run.records.forEach((r, i) => {
        const x0 = Math.max(LEFT, x(start)), x1 = Math.min(width, x(r.t));
        if (x1 - x0 >= 1) { flush(); bar(x0, x1 - x0, current, i, start, r.t, r.id); }
        else if (x1 > x0 || (x1 === x0 && x0 > LEFT && x0 < width)) {
          const px = Math.floor(x0);
          if (bucket && bucket.px !== px) flush();
          if (!bucket || r.t - start > bucket.t1 - bucket.t0) bucket = { px, st: current, i, t0: start, t1: r.t, by: r.id };
        }
        // Retries, fallbacks, compaction and recovery: self-loops and edges into Recover or
        // Compact, one mark a pixel.
        const mx = Math.round(x(r.t));
        if ((r.from === r.to || r.to === "Recover" || r.to === "Compact") && mx >= LEFT && mx <= width && mx !== lastMark) {
          lastMark = mx;
          parts.push(`<path class="mark" d="M${mx},${y + 1} l4,-6 h-8z"><title>${escXml(r.id)} at ${fmtMs(r.t)}</title></path>`);
        }
        start = r.t; current = r.to;
      });
      flush();
    });
    if (state.selected && x(state.selected.t) >= LEFT) {
      parts.push(`<line class="cursor" x1="${x(state.selected.t)}" x2="${x(state.selected.t)}" y1="${TOP - 4}" y2="${height - 14}"/>`);
    }
    // A legend of the states' colours.
    let lx = LEFT;
    for (const s of STATES) {
      if (table.states.some(d => d.parent === s)) continue;
      parts.push(`<rect x="${lx}" y="${height - 12}" width="10" height="10" fill="${stateColor(s)}"/><text x="${lx + 13}" y="${height - 3}">${escXml(s)}</text>`);
      lx += 20 + s.length * 7.2;
    }
    parts.push(`<text x="${lx + 10}" y="${height - 3}">▮ model call, | first event, ▮ retry wait, ▯ tool call started early</text>`);
    tl.innerHTML = parts.join("");
  }
  tl.addEventListener("click", ev => {
    const rect = ev.target.closest("rect[data-run]");
    if (!rect || dragged) return;
    const record = runs[Number(rect.getAttribute("data-run"))].records[Number(rect.getAttribute("data-rec"))];
    if (!shown.includes(record)) { clearFilters(); renderTable(); }
    select(record, true);
  });
  tl.addEventListener("wheel", ev => {
    ev.preventDefault();
    const width = tl.clientWidth || 1000, span = extent();
    const scale = (width - LEFT - 10) / span * state.zoom;
    const at = state.offset + (ev.offsetX - LEFT) / scale;
    state.zoom = Math.min(5000, Math.max(1, state.zoom * (ev.deltaY < 0 ? 1.25 : 0.8)));
    const next = (width - LEFT - 10) / span * state.zoom;
    state.offset = clampOffset(at - (ev.offsetX - LEFT) / next);
    renderTimeline();
  }, { passive: false });
  let drag = null, dragged = false;
  tl.addEventListener("mousedown", ev => { drag = { x: ev.clientX, offset: state.offset }; dragged = false; });
  window.addEventListener("mousemove", ev => {
    if (!drag) return;
    const width = tl.clientWidth || 1000;
    const scale = (width - LEFT - 10) / extent() * state.zoom;
    if (Math.abs(ev.clientX - drag.x) > 3) dragged = true;
    state.offset = clampOffset(drag.offset - (ev.clientX - drag.x) / scale);
    renderTimeline();
  });
  window.addEventListener("mouseup", () => { drag = null; setTimeout(() => { dragged = false; }, 0); });
  const clampOffset = o => Math.max(0, Math.min(o, extent() * (1 - 1 / state.zoom)));

  // The counters over the run: one line per counter that ever changes.
  const cs = document.getElementById("counters");
  function renderCounters() {
    const run = selectedRuns()[0];
    const width = cs.clientWidth || 1000, height = 150, left = 40, bottom = 20;
    const records = run ? run.records : [];
    const names = table.counters.filter(c => new Set(records.map(r => r.counters[c])).size > 1);
    const max = Math.max(1, ...records.flatMap(r => names.map(c => r.counters[c] || 0)));
    const x = i => left + (records.length > 1 ? i / (records.length - 1) : 0) * (width - left - 160);
    const y = v => 8 + (1 - v / max) * (height - bottom - 8);
    const parts = [`<text x="4" y="14">${max}</text><text x="4" y="${height - bottom}">0</text>`];
    names.forEach((c, k) => {
      const pts = records.map((r, i) => `${x(i).toFixed(1)},${y(r.counters[c] || 0).toFixed(1)}`).join(" ");
      parts.push(`<polyline points="${pts}" fill="none" stroke="${COLORS[k % COLORS.length]}" stroke-width="1.5"/><text x="${width - 150}" y="${16 + 14 * k}" fill="${COLORS[k % COLORS.length]}">${escXml(c)}</text>`);
    });
    parts.push(`<text x="${left}" y="${height - 4}">${run ? escXml(label(run).trim()) + ": " : ""}by record, ${records.length} records${names.length ? "" : "; no counter changed"}</text>`);
    cs.setAttribute("viewBox", `0 0 ${width} ${height}`);
    cs.setAttribute("height", String(height));
    cs.innerHTML = parts.join("");
  }

  // Coverage over every run loaded.
  function renderCoverage() {
    const cov = data.coverage;
    const never = cov.edges.filter(e => e.taken === 0);
    const reasons = cov.reasons.filter(r => r.taken === 0);
    const item = (name, scenario) => `<li><code>${escXml(name)}</code>${scenario ? ` — <code>agentloop demo ${escXml(scenario)}</code> takes it` : ""}</li>`;
    let html = `<p>${cov.edges.length - never.length} of ${cov.edges.length} edges and ${cov.reasons.length - reasons.length} of ${cov.reasons.length} reasons taken by the ${runs.length} run${runs.length === 1 ? "" : "s"} loaded.</p>`;
    if (never.length) html += `<h3>Edges never taken</h3><ul>${never.map(e => item(e.id, e.scenario)).join("")}</ul>`;
    if (reasons.length) html += `<h3>Reasons never reached</h3><ul>${reasons.map(r => item(r.name, r.scenario)).join("")}</ul>`;
    const unknown = Object.keys(cov.unknown_edges);
    if (unknown.length) html += `<p>Edges the table does not declare: ${unknown.map(u => `<code>${escXml(u)}</code>`).join(", ")}</p>`;
    document.getElementById("coverage").innerHTML = html;
  }

  function render() {
    const records = selectedRuns().reduce((n, r) => n + r.records.length, 0);
    const ends = selectedRuns().map(r => r.records.length ? r.records[r.records.length - 1] : null).filter(r => r && r.kind === "terminal").map(r => r.reason);
    document.getElementById("summary").textContent = `${records} records · ${fmtMs(extent())} · ended ${ends.join(", ") || "without a terminal"}`;
    renderChart(); renderTable(); renderTimeline(); renderCounters();
  }
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-3))));
    return [1, 2, 5, 10].map(m => m * p).find(s => s >= raw) || p * 10;
  }
  function fmtMs(t) { return t >= 1000 ? `${(t / 1000).toFixed(t >= 10000 ? 0 : 1)} s` : `${t.toFixed(t >= 10 ? 0 : 1)} ms`; }
  function escXml(s) { return String(s).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]); }

  renderCoverage();
  render();
  window.addEventListener("resize", () => { renderTimeline(); renderCounters(); });
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-ready", "true");
})();
