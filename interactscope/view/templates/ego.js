// EgoBench page: run summary, scores per variant, one section per task (opened on click).
const pct = v => v == null ? "—" : fmt(100 * v, 1);
const js = v => bdi(JSON.stringify(v, null, 1));

function scoreRow(s) {
  const cls = Object.entries(s.error_classes || {}).filter(([, n]) => n).map(([c, n]) => `${bdi(c)} ${n}`).join(", ");
  return `<tr data-variant="${esc(s.variant)}"><td>${bdi(s.variant)}${s.scenario ? ` <span class="ci">${bdi(s.scenario)}</span>` : ""}</td><td>${s.n_tasks}</td>` +
    `<td>${pct(s.joint_succ)}</td><td>${pct(s.micro_acc)} <span class="ci">(${s.matched}/${s.total_gt})</span></td>` +
    `<td>${pct(s.tool_succ)}</td><td>${pct(s.result_succ)}</td><td>${cls || "—"}</td></tr>`;
}

function runCard(r, tag) {
  const h = r.health || {};
  const counts = o => Object.entries(o || {}).map(([k, n]) => `${bdi(k)} ${n}`).join(", ") || "—";
  const health = h.all_pass == null ? "no user verdicts (scripted user)" : `user all-pass ${pct(h.all_pass)}% over ${h.trajectories} trajectories, ${h.rewrites} rewrites`;
  return `<div class="runcard">${tag ? `<b>${tag}</b> ` : ""}<b>agent ${bdi(r.agent)}</b>, user ${bdi(r.user)}, mode ${bdi(r.mode)}` +
    `<br><span class="ci">${bdi(r.path)}</span><br>sees_pixels: ${r.sees_pixels.yes ?? 0} yes, ${r.sees_pixels.no ?? 0} no` +
    `<br>stop reasons: ${counts(r.stop_reasons)}<br>${bdi(health)}<br><span class="ci">scores: ${bdi(r.score_source)}</span>` +
    r.warnings.map(w => `<br><span class="warn">${bdi(w)}</span>`).join("") + "</div>";
}

function scoreTable(variants, overall, id) {
  const rows = variants.concat(overall ? [overall] : []).map(scoreRow).join("");
  return `<table class="scores" id="${id}"><tr><th>variant</th><th>tasks</th><th>JointSucc %</th><th>MicroAcc %</th>` +
    `<th>ToolSucc %</th><th>ResultSucc %</th><th>error classes</th></tr>${rows}</table>`;
}

function renderSummary(root) {
  const two = !!DATA.other;
  const cards = runCard(DATA.run, two ? "A" : "") + (two ? runCard(DATA.other, "B") : "");
  let scores = (two ? "<h3>A</h3>" : "") + scoreTable(DATA.variants, DATA.overall, "score-table");
  if (two) {
    const keys = ks => ks.length ? ks.map(esc).join(", ") : "none";
    scores += "<h3>B</h3>" + scoreTable(DATA.other_variants, DATA.other_overall, "score-table-b") +
      `<p id="gained-lost">B against A (JointSucc, tasks both played): gained ${DATA.gained.length} (${keys(DATA.gained)}), lost ${DATA.lost.length} (${keys(DATA.lost)})</p>`;
  }
  root.appendChild(el("section", {id: "summary"}, `<h2>Summary</h2><div class="runcards">${cards}</div><h2>Scores</h2>${scores}`));
}

function renderFilters(root) {
  const vs = [...new Set(DATA.tasks.map(t => t.variant))];
  const opt = (v, l) => `<option value="${esc(v)}">${bdi(l || v)}</option>`;  // each option is its own bidi paragraph
  root.appendChild(el("div", {class: "filters"},
    `<label>variant <select id="filter-variant">${opt("", "all")}${vs.map(v => opt(v)).join("")}</select></label>` +
    `<label>success <select id="filter-success">${opt("", "all")}${opt("success", "JointSucc")}${opt("failed", "failed")}${opt("no-episode", "no episode")}</select></label>` +
    `<span id="shown"></span>`));
}

// Success and failure in the palette's hit / wrong styles (glyph + word); a task without an
// episode gets the neutral "no episode" badge, never a failed 0/N, and says how the scores count it.
function badge(ok, label) { return stateBadge(ok ? "hit" : "wrong", bdi(label)); }

function noEpisode(run) {
  const skip = (run.score_settings || {}).missing_log === "skip";
  return stateBadge("unscored", "no episode", skip ? "left out of the scores (missing_log = skip)" : "counted as failed in the scores (missing_log = fail)");
}

// The same chips for run A and run B: JointSucc, tools matched, final state against the GT.
function outcomeBadges(t) {
  return badge(t.joint_succ, t.joint_succ ? "JointSucc" : "failed") + badge(t.tool_succ, `tools ${t.matched}/${t.total_gt}`) +
    badge(t.result_succ, t.result_succ ? "state = GT" : "state ≠ GT");
}

function header(t) {
  const o = t.other, b = o ? ` · B: ` + (o.present ? outcomeBadges(o) : noEpisode(DATA.other)) : DATA.other ? ` · B: ${noEpisode(DATA.other)}` : "";
  if (!t.present && o) return `${bdi(t.key)} <span class="ci">A:</span>${noEpisode(DATA.run)}${b}`;
  return headA(t) + b;
}

function headA(t) {
  const nd = t.diff.length;
  if (!t.present) return `${bdi(t.key)} ${noEpisode(DATA.run)}`;
  return `${bdi(t.key)} ` + outcomeBadges(t) +
    (t.error_class ? `<span class="badge neutral">${bdi(t.error_class)}</span>` : "") +
    `<span class="ci"> · stop ${bdi(t.stop_reason || "—")} · ${t.calls.length} call(s)` + (nd ? ` · diff in ${nd} table(s)` : "") + "</span>";
}

function renderShells(root) {
  const html = DATA.tasks.map((t, n) =>
    `<section class="task" id="t-${n}" data-n="${n}" data-key="${esc(t.key)}" data-variant="${esc(t.variant)}" data-success="${!t.present ? "no-episode" : t.joint_succ ? "success" : "failed"}">` +
    `<h3 class="task-head">${header(t)}</h3><div class="body" hidden></div></section>`).join("");
  const box = el("div", {id: "tasks"}, html);
  root.appendChild(box);
  return box;
}

function dialogueHtml(t) {
  if (!t.dialogue.length) return "<p class=\"ci\">no dialogue</p>";
  return `<div class="dialogue">${t.dialogue.map(d => `<div class="turn ${bdi(d.role)}"><b>${bdi(d.role)}</b>${bdi(d.text)}</div>`).join("")}</div>`;
}

function callsHtml(t) {
  if (!t.calls.length) return "<p class=\"ci\">no tool calls</p>";
  const row = (c, i) => {
    const res = c.malformed ? `malformed: ${bdi(c.malformed)}` : c.ok == null ? "not executed" :
      c.ok ? `ok${c.changed ? " (state changed)" : ""}: <code>${bdi(JSON.stringify(c.output))}</code>` : `failed (${bdi(c.error_kind)}): ${bdi(c.error)}`;
    const ign = c.ignored.length ? `<br><span class="ci">ignored: ${bdi(c.ignored.join(", "))}</span>` : "";
    return `<tr class="call ${c.ok === false || c.malformed ? "call-failed" : ""}"><td>${i + 1}</td><td>${c.turn}</td><td>${bdi(c.name)}</td><td><code>${js(c.arguments)}</code>${ign}</td><td>${res}</td></tr>`;
  };
  return `<table class="calls"><tr><th>#</th><th>turn</th><th>tool</th><th>arguments</th><th>result</th></tr>${t.calls.map(row).join("")}</table>`;
}

function gtHtml(t) {
  return `<details><summary>ground-truth calls (${t.gt_calls.length})</summary><table class="calls">` +
    t.gt_calls.map(c => `<tr><td>${bdi(c.name)}</td><td><code>${js(c.arguments)}</code></td></tr>`).join("") + "</table></details>";
}

function verdictsHtml(t) {
  if (!t.has_ledger) return "";
  if (!t.verdicts.length) return "<h4>Auditor</h4><p class=\"ci\">ledger without auditor verdicts</p>";
  const row = v => `<tr class="verdict"><td>${v.turn}</td><td>${bdi(v.proposal)}${v.calls.length ? ": " + bdi(v.calls.join(", ")) : ""}</td><td>${v.attempt}</td>` +
    `<td class="verdict-${bdi(v.verdict)}">${bdi(v.verdict)}${v.unparseable ? " (unparseable)" : ""}</td><td>${bdi(v.reason)}${v.revised ? `<br><i>revised: ${bdi(v.revised)}</i>` : ""}</td></tr>`;
  return `<h4>Auditor verdicts (${t.verdicts.length})</h4><table class="calls verdicts"><tr><th>turn</th><th>proposal</th><th>attempt</th><th>verdict</th><th>reason</th></tr>${t.verdicts.map(row).join("")}</table>`;
}

function diffHtml(t) {
  if (t.diff_note) return `<p class="warn">${bdi(t.diff_note)}</p>`;
  if (!t.present) return "<p class=\"ci\">no episode: nothing to replay</p>";
  if (!t.diff.length) return "<p class=\"empty-diff\">final state equals the ground-truth state (empty diff)</p>";
  const cell = (v, miss) => miss ? "<i>absent</i>" : `<code>${js(v)}</code>`;
  return t.diff.map(d => {
    const only = (o, side) => Object.entries(o).map(([k, v]) => `<tr class="diff-row only-${side}"><td>${bdi(k)}</td><td>(whole row)</td>` +
      (side === "gt" ? `<td>${cell(v)}</td><td><i>absent</i></td>` : `<td><i>absent</i></td><td>${cell(v)}</td>`) + "</tr>").join("");
    const ch = d.changed.map(c => `<tr class="diff-row changed"><td>${bdi(c.row)}</td><td>${bdi(c.field)}</td><td>${cell(c.gt, c.missing === "gt")}</td><td>${cell(c.agent, c.missing === "agent")}</td></tr>`).join("");
    return `<table class="diff" data-table="${esc(d.table)}"><caption>table <b>${bdi(d.table)}</b></caption><tr><th>row</th><th>field</th><th>ground truth</th><th>episode</th></tr>${only(d.only_gt, "gt")}${only(d.only_agent, "agent")}${ch}</table>`;
  }).join("");
}

function renderBody(sec) {
  if (sec.dataset.drawn) return;
  sec.dataset.drawn = "1";
  const t = DATA.tasks[+sec.dataset.n];
  if (!t.other) { sec.querySelector(".body").innerHTML = bodyHtml(t); return; }
  const a = t.present ? bodyHtml(t) : "<p class=\"ci\">no episode in A</p>";
  sec.querySelector(".body").innerHTML = `<div class="sides"><div class="side side-a"><h4>A: ${bdi(DATA.run.agent)}</h4>${a}</div>` +
    `<div class="side side-b"><h4>B: ${bdi(DATA.other.agent)}</h4>${bodyHtml(t.other)}</div></div>`;
}

function bodyHtml(t) {
  const uv = t.user_verdicts.length ? `<p class="ci">user Evaluator: ${t.user_verdicts.filter(v => v.all_pass).length}/${t.user_verdicts.length} turns passed all four criteria</p>` : "";
  const errs = t.errors.map(e => `<div class="warn">error: ${bdi(e)}</div>`).join("");
  return `<p class="ci">instruction: ${bdi(t.instruction)}</p>` +
    `<p>stop reason <b>${bdi(t.stop_reason || "—")}</b> · error class <b>${bdi(t.error_class || "— (JointSucc)")}</b>` + (t.note ? ` · <span class="ci">${bdi(t.note)}</span>` : "") +
    ` · tokens ${t.input_tokens} in / ${t.output_tokens} out · ${fmt(t.latency_s, 2)} s</p>${errs}` +
    `<h4>Dialogue</h4>${dialogueHtml(t)}${uv}<h4>Tool calls</h4>${callsHtml(t)}${gtHtml(t)}${verdictsHtml(t)}<h4>Final state against the ground truth</h4><div class="state-diff">${diffHtml(t)}</div>`;
}

function openTask(sec, show) {
  renderBody(sec);
  sec.querySelector(".body").hidden = !show;
}

function goHash() {
  const m = /^#t-(\d+)$/.exec(location.hash), sec = m && document.getElementById("t-" + m[1]);
  if (!sec) return;
  sec.hidden = false;
  openTask(sec, true);
  sec.scrollIntoView();
}

function applyFilters() {
  const v = document.getElementById("filter-variant").value, s = document.getElementById("filter-success").value;
  let n = 0;
  document.querySelectorAll("section.task").forEach(sec => {
    const show = (!v || sec.dataset.variant === v) && (!s || sec.dataset.success === s);
    sec.hidden = !show;
    if (show) n++;
  });
  document.getElementById("shown").textContent = `showing ${n} of ${DATA.tasks.length} tasks`;
}

function render() {
  const root = document.getElementById("app");
  root.innerHTML = "";
  renderSummary(root);
  root.appendChild(el("h2", {}, `Tasks (${DATA.tasks.length})`));
  renderFilters(root);
  const box = renderShells(root);
  box.addEventListener("click", ev => {
    const head = ev.target.closest(".task-head");
    if (!head) return;
    const sec = head.closest("section.task");
    openTask(sec, sec.querySelector(".body").hidden);
  });
  document.getElementById("filter-variant").addEventListener("change", applyFilters);
  document.getElementById("filter-success").addEventListener("change", applyFilters);
  applyFilters();
  window.addEventListener("hashchange", goHash);
  goHash();
  document.body.appendChild(el("footer", {}, `${bdi(DATA.generated_by)} · EgoBench run · click a task to open it; #t-N links to task N`));
  document.body.dataset.ready = "1";
}

render();
