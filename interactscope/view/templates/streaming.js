// Streaming page: summary, filters, one section per interaction; timelines drawn on demand.
const OUTCOMES = ["hit", "premature", "wrong", "late", "missed", "unjudged", "infra_error"];
const BADGE_STATES = Object.keys(STATES).filter(k => STATES[k].kind === "outcome");
const MARK_STATES = ["hit", "premature", "wrong", "late", "unjudged", "unscored"].concat(Object.keys(STATES).filter(k => STATES[k].kind === "mark"));
const W = 960, PAD = 30;

function ciCell(c) {
  if (!c) return "<td>—</td>";
  // text/interval come formatted from Python: the same rounding as the leaderboard (6.25 -> 6.2)
  const ci = c.interval ? ` <span class="ci">${esc(c.interval)}</span>` : "";
  return `<td title="${iso(c.counts)}${c.note ? " — " + iso(c.note) : ""}">${esc(c.text)}${ci}</td>`;
}

// A run without score files gets the neutral "not scored" cell, never a number.
function runCell(r, c) { return r.scored ? ciCell(c) : `<td class="not-scored">${stateBadge("unscored")}</td>`; }

function envCell(r, c) {
  if (!r.scored) return runCell(r, c);
  if (!c) return `<td title="no environment interaction in this run">—</td>`;
  return `<td title="${iso(c.note)}">${esc(c.text)} <span class="ci">(${esc(c.counts)})</span></td>`;
}

function envRows(runs) {
  const names = [];
  runs.forEach(r => r.environment.forEach(c => { if (!names.includes(c.metric)) names.push(c.metric); }));
  if (!names.length) return "";
  return `<tr class="env-head"><th colspan="${runs.length + 1}">environment interactions — beyond the paper (%; counts, no interval)</th></tr>` +
    names.map(m => `<tr class="env-metric"><td>${bdi(m)}</td>` + runs.map(r => envCell(r, r.environment.find(c => c.metric === m))).join("") + "</tr>").join("");
}

function renderSummary(root) {
  const runs = DATA.runs;
  let cards = runs.map((r, i) => {
    const h = r.health || {}, j = h.judge || {};
    const health = r.scored ? `infrastructure errors ${h.infrastructure_errors ?? 0}, suppressed ${h.suppressed_records ?? 0}, ` +
      `parse errors ${h.parse_errors ?? 0}, unparseable verdicts ${j.unparseable_pairs ?? 0}, unjudged targets ${j.unjudged_targets ?? 0}` : "";
    return `<div class="runcard" data-run="${i}"><b>${bdi(r.label)}</b> — model ${bdi(r.model)}, ${bdi(r.protocol)} protocol, ${bdi(r.interactions)}` +
      (r.judge ? `, judge ${bdi(r.judge)}` : "") + `<br><span class="ci">${bdi(r.path)}</span>` +
      (r.approximation ? `<br><span class="ci">judge approximation: ${bdi(r.approximation)}</span>` : "") +
      (health ? `<br>health: ${health}` : "") +
      (r.scored ? "" : `<br>${stateBadge("unscored")} <span class="ci">run <code>interactscope score ${bdi(r.path)}</code> to see outcomes</span>`) + r.warnings.map(w => `<br><span class="warn">${bdi(w)}</span>`).join("") + "</div>";
  }).join("");
  const metrics = [];
  runs.forEach(r => r.scores.forEach(c => { if (!metrics.includes(c.metric)) metrics.push(c.metric); }));
  const head = "<tr><th>metric (%; 95% CI)</th>" + runs.map(r => `<th>${bdi(r.label)}<br><span class="ci">${bdi(r.interactions)}</span></th>`).join("") + "</tr>";
  const rows = metrics.map(m => `<tr><td>${bdi(m)}</td>` + runs.map(r => runCell(r, r.scores.find(c => c.metric === m))).join("") + "</tr>").join("");
  const table = metrics.length ? `<table class="scores" id="score-table">${head}${rows}${envRows(runs)}</table>` :
    `<p id="no-scores">${stateBadge("unscored")} no run is scored yet: run <code>interactscope score RUN</code> to see outcomes</p>`;
  root.appendChild(el("section", {id: "summary"}, `<h2>Summary</h2><div class="runcards">${cards}</div><h2>Scores</h2>${table}`));
}

function diffList(id, title, items) {
  // Long lists start folded so the interactions stay on the first screen.
  const link = x => `<li><a href="#" data-goto="${esc(x.split("/")[0])}">${bdi(x)}</a></li>`;
  return `<details id="${id}"${items.length <= 20 ? " open" : ""}><summary>${title}: ${items.length}</summary>` +
    `<ul>${items.map(link).join("")}</ul></details>`;
}

function renderDiff(root) {
  if (DATA.runs.length !== 2) return;
  const a = bdi(DATA.runs[0].label), b = bdi(DATA.runs[1].label);
  if (!DATA.runs.every(r => r.scored)) {
    root.appendChild(el("section", {id: "diff", class: "diff"}, `<h2>${b} against ${a}</h2><p>${stateBadge("unscored")} ` +
      `targets gained and lost need both runs scored: run <code>interactscope score</code> on ${DATA.runs.filter(r => !r.scored).map(r => bdi(r.path)).join(", ")}</p>`));
    return;
  }
  root.appendChild(el("section", {id: "diff", class: "diff"}, `<h2>${b} against ${a}</h2>` +
    diffList("gained", `<b>Targets gained</b> (missed by ${a}, hit by ${b})`, DATA.gained) +
    diffList("lost", `<b>Targets lost</b> (hit by ${a}, missed by ${b})`, DATA.lost)));
}

function legend() {
  const item = k => `<span>${stateBadge(k, null, STATES[k].meaning)}</span>`;
  return `<div class="legend" id="legend"><div>targets and runs: ${BADGE_STATES.map(item).join("")}</div>` +
    `<div>timeline marks: ${MARK_STATES.filter(k => STATES[k].kind === "mark").map(item).join("")}` +
    `<span>| shaded: target window; dotted: region boundary; dashed: q; ticks: decision points (silent ones carry no mark)</span></div></div>`;
}

function tags(it) {
  const s = new Set();
  it.runs.forEach(r => {
    Object.values(r.outcomes).forEach(o => o && s.add(o));
    if (r.marks.some(m => m.cls === "error")) s.add("error");
    if (r.present && !r.scored) s.add("unscored");
    if (r.present && r.grid.length && !r.responses) s.add("silent");
  });
  if (it.gained.length) s.add("gained");
  if (it.lost.length) s.add("lost");
  return [...s];
}

function renderFilters(root) {
  const tasks = [...new Set(DATA.interactions.map(i => i.task))].sort();
  const outs = OUTCOMES.concat(["silent", "error", "unscored"], DATA.runs.length === 2 ? ["gained", "lost"] : []);
  const word = {error: "error record", unscored: "not scored"};
  const opt = (v, l) => `<option value="${esc(v)}">${esc(l || word[v] || v)}</option>`;  // each option is its own bidi paragraph
  root.appendChild(el("div", {class: "filters"},
    `<label>task <select id="filter-task">${opt("", "all")}${tasks.map(t => opt(t)).join("")}</select></label>` +
    `<label>outcome <select id="filter-outcome">${opt("", "all")}${outs.map(o => opt(o)).join("")}</select></label>` +
    `<span id="shown"></span>`));
  root.insertAdjacentHTML("beforeend", legend());
}

// One group per run: its label, then one chip per target outcome present (count + word, the
// target ids on hover); an unscored run gets the neutral "not scored" chip instead of 0/N.
function runBadges(r, i) {
  const label = bdi(DATA.runs[i].label);
  if (!r.present) return `<span class="runbadges" data-run="${i}"><span class="who">${label}:</span><span class="badge neutral">— not in this run</span></span>`;
  let h;
  if (!r.scored) h = stateBadge("unscored", null, `${r.responses} response(s); run interactscope score to see outcomes`);
  else {
    const by = {};
    Object.entries(r.outcomes).forEach(([k, o]) => { (by[o || "unscored"] = by[o || "unscored"] || []).push(k); });
    h = Object.keys(STATES).filter(o => by[o]).map(o =>
      stateBadge(o, `${by[o].length} ${esc(STATES[o].label)}`, `${STATES[o].label}: ${by[o].join(", ")}`)).join("");
  }
  if (r.grid.length && !r.responses) h += stateBadge("silent", null, STATES.silent.meaning);
  return `<span class="runbadges" data-run="${i}"><span class="who">${label}:</span>${h}</span>`;
}

function badges(it) {
  // gained / lost are comparisons, not outcomes: neutral badges with an arrow.
  const diff = (g, w, t) => `<span class="badge neutral diff-${w}">${g} ${w} ${bdi(t)}</span>`;
  return it.runs.map(runBadges).join("") + it.gained.map(t => diff("▲", "gained", t)).join("") + it.lost.map(t => diff("▼", "lost", t)).join("");
}

function renderShells(root) {
  const html = DATA.interactions.map((it, n) =>
    `<section class="interaction" id="i-${n}" data-n="${n}" data-id="${esc(it.id)}" data-task="${esc(it.task)}" data-tags="${esc(tags(it).join(" "))}">` +
    `<h3>${bdi(it.id)} <span class="ci">${bdi(it.task)} · video ${bdi(it.video_id)} · q = ${fmt(it.q, 2)} s</span>${badges(it)}</h3>` +
    `<div class="query">“${bdi(it.query)}”</div><div class="body"></div></section>`).join("");
  const box = el("div", {id: "interactions"}, html);
  root.appendChild(box);
  return box;
}

function x(t, end) { return PAD + (W - 2 * PAD) * Math.max(0, t) / end; }

function timelineSvg(it, r, ri) {
  const end = it.end_s, H = 78, yM = 50;
  let s = `<svg class="timeline" viewBox="0 0 ${W} ${H}" data-run="${ri}">`;
  it.targets.forEach((t, k) => {
    const x0 = x(t.window_s[0], end), x1 = x(t.window_s[1], end);
    const o = r.outcomes[t.id] || "unscored", st = STATES[o] || STATES.unscored;
    const look = st.fill ? `fill="var(--${o})" opacity="0.15"` : `fill="none" stroke="#888" stroke-dasharray="4,3"`;
    s += `<rect class="window w-${o}" x="${x0}" y="14" width="${Math.max(2, x1 - x0)}" height="50" ${look}><title>${iso(t.id)} window [${fmt(t.window_s[0], 2)}, ${fmt(t.window_s[1], 2)}] s: ${esc(st.label)}</title></rect>`;
    s += `<line x1="${x(t.anchor_s, end)}" x2="${x(t.anchor_s, end)}" y1="14" y2="64" stroke="#555" stroke-width="1"/>`;
    s += `<text x="${x(t.anchor_s, end) + 2}" y="11" font-size="10">${iso(t.id)}: ${st.glyph} ${esc(st.label)}</text>`;
    const reg = r.regions[t.id];
    if (reg && reg[1] != null) s += `<line class="region" x1="${x(reg[1], end)}" x2="${x(reg[1], end)}" y1="14" y2="64" stroke="#333" stroke-dasharray="1,3"/>`;
  });
  s += `<line x1="${x(it.q, end)}" x2="${x(it.q, end)}" y1="6" y2="70" stroke="#1f618d" stroke-dasharray="5,3"><title>q = ${fmt(it.q, 2)} s</title></line>`;
  s += `<line x1="${PAD}" x2="${W - PAD}" y1="${yM}" y2="${yM}" stroke="#aaa"/>`;
  r.grid.forEach(t => { s += `<line class="gridpt" data-t="${t}" x1="${x(t, end)}" x2="${x(t, end)}" y1="${yM - 4}" y2="${yM + 4}"><title>decision point ${fmt(t, 2)} s</title></line>`; });
  for (let k = 0; k <= Math.floor(end); k++) s += `<text x="${x(k, end)}" y="${H - 2}" font-size="9" text-anchor="middle" fill="#777">${k}</text>`;
  r.marks.forEach((m, j) => {
    // Shape, glyph and colour: an error record is a cross, every other mark a disc with its glyph.
    const cx = x(m.t, end), cy = yM - 12, st = STATES[m.cls], tt = `<title>${fmt(m.t, 2)} s: ${esc(st.label)}</title>`;
    if (m.cls === "error") s += `<path class="mark mark-error" data-j="${j}" d="M${cx - 5},${cy - 5}l10,10m0,-10l-10,10" style="stroke:${st.ink};stroke-width:3">${tt}</path>`;
    else {
      const line = st.fill && st.kind === "outcome" ? "" : ` style="stroke:#333;stroke-width:1${st.fill ? "" : ";stroke-dasharray:2,1.5"}"`;
      s += `<circle class="mark mark-${m.cls}" data-j="${j}" cx="${cx}" cy="${cy}" r="${m.matched ? 7.5 : 6.5}" fill="${st.fill || "#fff"}"${line}>${tt}</circle>`;
      s += `<text class="glyph" x="${cx}" y="${cy}" fill="${st.ink}">${st.glyph}</text>`;
    }
  });
  return s + "</svg>";
}

function markDetail(m) {
  const u = v => "\u2068" + v + "\u2069";  // escaped once below, with the rest
  const tools = m.tools.length ? "\ntool calls: " + u(JSON.stringify(m.tools)) : "";
  const lines = [`t = ${fmt(m.t, 3)} s — ${u(m.cls)}` + (m.target ? ` (target ${u(m.target)}${m.matched ? ", the eligible response" : ""})` : ""),
    "text: " + u(m.text) + tools,
    "content verdict: " + (m.verdict ? u(m.verdict) : (m.target ? "not judged (scoring never read it)" : "—")),
    `latency ${m.latency_s == null ? "—" : fmt(m.latency_s, 2) + " s"}, tokens ${m.prompt_tokens ?? "—"} in / ${m.completion_tokens ?? "—"} out`];
  if (m.error) lines.push("error: " + u(m.error));
  if (m.parse_error) lines.push("parse error: " + u(m.parse_error));
  return esc(lines.join("\n"));
}

function framesHtml(r, t) {
  const f = r.frames[String(Math.round(t * 1000))];
  if (!f) return `<div class="ci">t = ${fmt(t, 3)} s: no frame data</div>`;
  let h = `<div class="ci">t = ${fmt(t, 3)} s — ${f.times.length} frame(s) seen` + (f.times.length ? ` at ${f.times.map(v => fmt(v, 2)).join(", ")} s` : "") + (f.note ? ` — ${bdi(f.note)}` : "") + "</div><div class=\"frames\">";
  f.thumbs.forEach((k, i) => { if (k && DATA.thumbs[k]) h += `<figure><img class="thumb" alt="frame ${fmt(f.times[i], 2)} s" src="${DATA.thumbs[k]}"><figcaption>${fmt(f.times[i], 2)} s</figcaption></figure>`; });
  h += "</div>";
  if (f.transcript != null) h += `<div class="transcript">heard so far: “${bdi(f.transcript)}”</div>`;
  return h;
}

function renderBody(sec) {
  if (sec.dataset.drawn) return;
  sec.dataset.drawn = "1";
  const it = DATA.interactions[+sec.dataset.n];
  const tg = it.targets.map(t => `${bdi(t.id)} @ ${t.interval ? "[" + fmt(t.window_s[0], 2) + ", " + fmt(t.window_s[1], 2) + "]" : fmt(t.anchor_s, 2)} s: “${bdi(t.reference)}”` + (t.tools ? ` tools ${bdi(t.tools.join(", "))}` : "")).join("<br>");
  let h = `<div class="ci">targets:<br>${tg}</div>`;
  it.runs.forEach((r, ri) => {
    h += `<div class="runrow" data-run="${ri}"><div class="runlabel">${bdi(DATA.runs[ri].label)}</div>`;
    h += r.present ? timelineSvg(it, r, ri) : "";
    h += envHtml(r.environment);
    h += r.notes.map(n => `<div class="ci">${bdi(n)}</div>`).join("");
    h += `<div class="detail"></div><div class="seen"></div></div>`;
  });
  sec.querySelector(".body").innerHTML = h;
}

function yesNo(v, what) {
  return v == null ? `<span class="ci">${what} —</span>` : stateBadge(v ? "hit" : "wrong", `${what} ${v ? "yes" : "no"}`);
}

// The environment columns of one run on one environment interaction (docs/protocol.md#environments).
function envHtml(e) {
  if (!e) return "";
  const frac = p => `${p[0]}/${p[1]}`;
  const infra = (e.state_reason || "").includes("infrastructure");
  const state = e.state_correct == null ? stateBadge(infra ? "infra_error" : "unscored", "state not judged", e.state_reason || "") :
    stateBadge(e.state_correct ? "hit" : "wrong", e.state_correct ? "state correct" : "state incorrect");
  const tg = e.targets.map(t => `${bdi(t.target_id)}: ${yesNo(t.time_tool, "time-tool")}${yesNo(t.time_call, "time-call")}`).join(" · ");
  return `<div class="envrow">environment <b>${bdi(e.environment)}</b> (beyond the paper): time-tool ${frac(e.time_tool)} · ` +
    `time-call ${frac(e.time_call)} · ${state} · action precision ${frac(e.action_precision)}<br>${tg}</div>`;
}

function select(sec, row, t, markEl, gridEl) {
  const it = DATA.interactions[+sec.dataset.n], ri = +row.dataset.run, r = it.runs[ri];
  row.querySelectorAll(".selected").forEach(e => e.classList.remove("selected"));
  if (markEl) { markEl.classList.add("selected"); row.querySelector(".detail").innerHTML = markDetail(r.marks[+markEl.dataset.j]); }
  else row.querySelector(".detail").innerHTML = "";
  if (gridEl) gridEl.classList.add("selected");
  row.querySelector(".seen").innerHTML = framesHtml(r, t);
}

function onClick(ev) {
  const go = ev.target.closest("[data-goto]");
  if (go) {
    ev.preventDefault();
    const sec = document.querySelector(`section.interaction[data-id="${CSS.escape(go.dataset.goto)}"]`);
    if (sec) { sec.hidden = false; renderBody(sec); sec.scrollIntoView(); }
    return;
  }
  const sec = ev.target.closest("section.interaction"), row = ev.target.closest(".runrow");
  if (!sec || !row) return;
  const r = DATA.interactions[+sec.dataset.n].runs[+row.dataset.run];
  const mark = ev.target.closest(".mark"), grid = ev.target.closest(".gridpt");
  if (mark) select(sec, row, r.marks[+mark.dataset.j].t, mark, null);
  else if (grid) select(sec, row, +grid.dataset.t, null, grid);
}

function applyFilters() {
  const task = document.getElementById("filter-task").value, out = document.getElementById("filter-outcome").value;
  let n = 0;
  document.querySelectorAll("section.interaction").forEach(sec => {
    const show = (!task || sec.dataset.task === task) && (!out || sec.dataset.tags.split(" ").includes(out));
    sec.hidden = !show;
    if (show) { n++; if (!DATA.lazy) renderBody(sec); }
  });
  document.getElementById("shown").textContent = `showing ${n} of ${DATA.interactions.length} interactions`;
}

let hashTarget = null;  // the #i-N section to keep in view while lazy sections above it grow

function goHash() {
  // Sections are built after load, so the browser's own jump to #i-N finds nothing: do it here.
  const m = /^#i-(\d+)$/.exec(location.hash), sec = m && document.getElementById("i-" + m[1]);
  if (!sec) return;
  sec.hidden = false;
  renderBody(sec);
  hashTarget = sec;
  sec.scrollIntoView();
}
["wheel", "keydown", "mousedown", "touchstart"].forEach(t => addEventListener(t, () => { hashTarget = null; }, {passive: true}));

function render() {
  const root = document.getElementById("app");
  root.innerHTML = "";
  renderSummary(root);
  renderDiff(root);
  root.appendChild(el("h2", {}, `Interactions (${DATA.interactions.length})`));
  renderFilters(root);
  const box = renderShells(root);
  box.addEventListener("click", onClick);
  document.getElementById("diff")?.addEventListener("click", onClick);
  document.getElementById("filter-task").addEventListener("change", applyFilters);
  document.getElementById("filter-outcome").addEventListener("change", applyFilters);
  if (DATA.lazy && "IntersectionObserver" in window) {
    const io = new IntersectionObserver(es => {
      es.forEach(e => { if (e.isIntersecting) { renderBody(e.target); io.unobserve(e.target); } });
      if (hashTarget) hashTarget.scrollIntoView();  // sections drawn above it pushed it down
    }, {rootMargin: "400px"});
    box.querySelectorAll("section.interaction").forEach(s => io.observe(s));
  } else {
    box.querySelectorAll("section.interaction").forEach(renderBody);
  }
  applyFilters();
  window.addEventListener("hashchange", goHash);
  goHash();
  const s = DATA.settings;
  document.body.appendChild(el("footer", {}, `${bdi(DATA.generated_by)} · thumbnails ≤ ${s.max_thumbnails} (${s.thumbs_per_point} per point, ${s.thumb_px} px) · bootstrap B = ${s.resamples}, seed ${s.seed}` + (DATA.lazy ? " · timelines drawn as they scroll into view" : "")));
  document.body.dataset.ready = "1";
}

render();
