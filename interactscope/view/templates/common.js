"use strict";
// Shared helpers of every page; the page's own script defines render(data).
const DATA = JSON.parse(document.getElementById("view-data").textContent);
function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function fmt(x, d) { return x == null ? "—" : Number(x).toFixed(d == null ? 1 : d); }
function el(tag, attrs, html) {
  const e = document.createElement(tag);
  for (const k in (attrs || {})) e.setAttribute(k, attrs[k]);
  if (html != null) e.innerHTML = html;
  return e;
}
