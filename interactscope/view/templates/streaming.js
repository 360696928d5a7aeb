// Streaming page: summary, filters, one section per interaction; timelines drawn on demand.
const CLASSES = ["hit", "premature", "wrong", "late", "unjudged", "unmatched", "ignored", "suppressed", "error", "unscored"];
const OUTCOMES = ["hit", "premature", "wrong", "late", "missed", "unjudged", "infra_error"];
const W = 960, PAD = 30;

function ciCell(c) {
  if (!c) return "<td>—</td>";
  const ci = c.low == null ? "" : ` <span class="ci">[${fmt(c.low)}, ${fmt(c.high)}]</span>`;
  return `<td title="${iso(c.counts)}${c.note ? " — " + iso(c.note) : ""}">${fmt(c.estimate)}${ci}</td>`;
}

function renderSummary(root) {
  const runs = DATA.runs;
  let cards = runs.map((r, i) => {
    const h = r.health || {}, j = h.judge || {};
    const health = r.scored ? `infrastructure errors ${h.infrastructure_errors ?? 0}, suppressed ${h.suppressed_records ?? 0}, ` +
      `parse errors ${h.parse_errors ?? 0}, unparseable verdicts ${j.unparseable_pairs ?? 0}, unjudged targets ${j.unjudged_targets ?? 0}` : "";
    return `<div class="runcard" data-run="${i}"><b>${bdi(r.label)}</b> — model ${bdi(r.model)}, ${bdi(r.protocol)} protocol` +
      (r.judge ? `, judge ${bdi(r.judge)}` : "") + `<br><span class="ci">${bdi(r.path)}</span>` +
      (r.approximation ? `<br><span class="ci">judge approximation: ${bdi(r.approximation)}</span>` : "") +
      (health ? `<br>health: ${health}` : "") + r.warnings.map(w => `<br><span class="warn">${bdi(w)}</span>`).join("") + "</div>";
  }).join("");
  const metrics = [];
  runs.forEach(r => r.scores.forEach(c => { if (!metrics.includes(c.metric)) metrics.push(c.metric); }));
  const head = "<tr><th>metric (%; 95% CI)</th>" + runs.map(r => `<th>${bdi(r.label)}</th>`).join("") + "</tr>";
  const rows = metrics.map(m => `<tr><td>${bdi(m)}</td>` + runs.map(r => ciCell(r.scores.find(c => c.metric === m))).join("") + "</tr>").join("");
  const table = metrics.length ? `<table class="scores" id="score-table">${head}${rows}</table>` : "<p>No scores yet.</p>";
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
  root.appendChild(el("section", {id: "diff", class: "diff"}, `<h2>${b} against ${a}</h2>` +
    diffList("gained", `<b>Targets gained</b> (missed by ${a}, hit by ${b})`, DATA.gained) +
    diffList("lost", `<b>Targets lost</b> (hit by ${a}, missed by ${b})`, DATA.lost)));
}

function legend() {
  const sw = c => `<span><i style="background:var(--${c})"></i>${c}</span>`;
  return `<div class="legend">${CLASSES.map(sw).join("")}<span>| shaded: target window; dotted: region boundary; dashed: q</span>` +
    `<span><i style="background:var(--infra_error)"></i>target infra_error: every decision point of its span failed (left out of the scores)</span></div>`;
}

function tags(it) {
  const s = new Set();
  it.runs.forEach(r => {
    Object.values(r.outcomes).forEach(o => o && s.add(o));
    if (r.marks.some(m => m.cls === "error")) s.add("error");
  });
  if (it.gained.length) s.add("gained");
  if (it.lost.length) s.add("lost");
  return [...s];
}

function renderFilters(root) {
  const tasks = [...new Set(DATA.interactions.map(i => i.task))].sort();
  const outs = OUTCOMES.concat(["error"], DATA.runs.length === 2 ? ["gained", "lost"] : []);
  const opt = (v, l) => `<option value="${esc(v)}">${esc(l || v)}</option>`;  // each option is its own bidi paragraph
  root.appendChild(el("div", {class: "filters"},
    `<label>task <select id="filter-task">${opt("", "all")}${tasks.map(t => opt(t)).join("")}</select></label>` +
    `<label>outcome <select id="filter-outcome">${opt("", "all")}${outs.map(o => opt(o)).join("")}</select></label>` +
    `<span id="shown"></span>`));
  root.insertAdjacentHTML("beforeend", legend());
}

function badges(it) {
  return it.runs.map((r, i) => {
    if (!r.present) return `<span class="badge" style="background:#bbb">${bdi(DATA.runs[i].label)}: —</span>`;
    const o = Object.values(r.outcomes), hits = o.filter(x => x === "hit").length;
    return `<span class="badge" style="background:${hits === o.length && o.length ? "var(--hit)" : "#607d8b"}">${bdi(DATA.runs[i].label)}: ${hits}/${o.length}</span>`;
  }).join("") + it.gained.map(t => `<span class="badge" style="background:var(--hit)">gained ${bdi(t)}</span>`).join("") +
    it.lost.map(t => `<span class="badge" style="background:var(--wrong)">lost ${bdi(t)}</span>`).join("");
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
    const o = r.outcomes[t.id] || "";
    s += `<rect x="${x0}" y="14" width="${Math.max(2, x1 - x0)}" height="50" fill="var(--${o === "hit" || o === "infra_error" ? o : "missed"})" opacity="0.13"><title>${iso(t.id)} window [${fmt(t.window_s[0], 2)}, ${fmt(t.window_s[1], 2)}] s: ${iso(o || "unscored")}</title></rect>`;
    s += `<line x1="${x(t.anchor_s, end)}" x2="${x(t.anchor_s, end)}" y1="14" y2="64" stroke="#555" stroke-width="1"/>`;
    s += `<text x="${x(t.anchor_s, end) + 2}" y="11" font-size="10">${iso(t.id)}${o ? ": " + iso(o) : ""}</text>`;
    const reg = r.regions[t.id];
    if (reg && reg[1] != null) s += `<line class="region" x1="${x(reg[1], end)}" x2="${x(reg[1], end)}" y1="14" y2="64" stroke="#333" stroke-dasharray="1,3"/>`;
  });
  s += `<line x1="${x(it.q, end)}" x2="${x(it.q, end)}" y1="6" y2="70" stroke="#1f618d" stroke-dasharray="5,3"><title>q = ${fmt(it.q, 2)} s</title></line>`;
  s += `<line x1="${PAD}" x2="${W - PAD}" y1="${yM}" y2="${yM}" stroke="#aaa"/>`;
  r.grid.forEach(t => { s += `<line class="gridpt" data-t="${t}" x1="${x(t, end)}" x2="${x(t, end)}" y1="${yM - 4}" y2="${yM + 4}"><title>decision point ${fmt(t, 2)} s</title></line>`; });
  for (let k = 0; k <= Math.floor(end); k++) s += `<text x="${x(k, end)}" y="${H - 2}" font-size="9" text-anchor="middle" fill="#777">${k}</text>`;
  r.marks.forEach((m, j) => {
    const cx = x(m.t, end), tt = `<title>${fmt(m.t, 2)} s: ${iso(m.cls)}</title>`;
    if (m.cls === "error") s += `<path class="mark mark-error" data-j="${j}" d="M${cx - 5},${yM - 17}l10,10m0,-10l-10,10" stroke="var(--error)" stroke-width="3">${tt}</path>`;
    else if (m.cls === "suppressed") s += `<circle class="mark mark-suppressed" data-j="${j}" cx="${cx}" cy="${yM - 12}" r="5" fill="#fff" style="stroke:var(--suppressed);stroke-width:2">${tt}</circle>`;
    else s += `<circle class="mark mark-${m.cls}" data-j="${j}" cx="${cx}" cy="${yM - 12}" r="${m.matched ? 7 : 5.5}" fill="var(--${m.cls})">${tt}</circle>`;
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
    h += r.notes.map(n => `<div class="ci">${bdi(n)}</div>`).join("");
    h += `<div class="detail"></div><div class="seen"></div></div>`;
  });
  sec.querySelector(".body").innerHTML = h;
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
