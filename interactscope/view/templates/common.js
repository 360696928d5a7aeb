"use strict";
// Shared helpers of every page; the page's own script defines render(data).
const DATA = JSON.parse(document.getElementById("view-data").textContent);
// Outcome styles (interactscope/view/palette.py): colour + glyph + word, never colour alone.
const STATES = JSON.parse(document.getElementById("view-states").textContent);
function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
// Bidi isolation of every user string (an id ending in U+202E must not reverse the page's own
// text): <bdi> in HTML content; FSI…PDI (U+2068/U+2069, the same isolate) in attributes and
// SVG text, where elements cannot go (an <option> is a bidi paragraph of its own).
function bdi(s) { return `<bdi>${esc(s)}</bdi>`; }
function iso(s) { return "\u2068" + esc(s) + "\u2069"; }
function fmt(x, d) { return x == null ? "—" : Number(x).toFixed(d == null ? 1 : d); }
function el(tag, attrs, html) {
  const e = document.createElement(tag);
  for (const k in (attrs || {})) e.setAttribute(k, attrs[k]);
  if (html != null) e.innerHTML = html;
  return e;
}
function stateBadge(state, text, title) {
  const st = STATES[state];
  return `<span class="badge st-${state}"${title ? ` title="${iso(title)}"` : ""}>` +
    `${st.glyph} ${text == null ? esc(st.label) : text}</span>`;  // glyph as text: one node per badge (1,479-interaction pages)
}
