// The arena leaderboard: GET /api/arenas and GET /api/arenas/{id}/report
// (docs/api.md), the same figures as `tossim arena report`. Text reaches the
// page only through text nodes (dom.js); plots are SVG built element by element.

import { getJSON } from "./api.js";
import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const REFRESH_MS = 10000; // a running arena's figures are fetched again this often
const app = document.getElementById("app");
let refresh = null;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const pct = (v) => (v === null || v === undefined ? "–" : `${(100 * v).toFixed(1)}%`);
const ci = (d) => (d && d.rate !== null && d.rate !== undefined
  ? `${pct(d.rate)} [${pct(d.lo)}, ${pct(d.hi)}]` : "–");
const num = (v, digits = 2) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));

/** Horizontal bars with error bars: rows of {label, value, lo, hi, cls}. */
function barChart(title, rows, { max = 1, percent = true, testid } = {}) {
  const rowH = 22, left = 150, width = 300, right = 60;
  const height = 26 + rowH * rows.length;
  const scale = max > 0 ? width / max : 0;
  const chart = svg("svg", { class: "lb-plot", width: left + width + right, height, role: "img",
    "aria-label": title, "data-testid": testid || "plot" });
  chart.append(svg("title", {}, title), svg("text", { x: 0, y: 14, "font-weight": "bold" }, title));
  rows.forEach((r, i) => {
    const y = 22 + i * rowH;
    chart.append(svg("text", { x: left - 6, y: y + 14, "text-anchor": "end" }, r.label));
    chart.append(svg("line", { class: "axis", x1: left, x2: left, y1: y, y2: y + rowH }));
    if (r.value === null || r.value === undefined) {
      chart.append(svg("text", { x: left + 4, y: y + 14 }, "no data"));
      return;
    }
    const w = Math.max(0, Math.min(r.value, max)) * scale;
    chart.append(svg("rect", { class: `bar ${r.cls || ""}`, x: left, y: y + 3, width: w.toFixed(1), height: rowH - 8 }));
    if (r.lo !== null && r.lo !== undefined && r.hi !== null && r.hi !== undefined) {
      const x1 = left + r.lo * scale, x2 = left + Math.min(r.hi, max) * scale, m = y + rowH / 2 - 1;
      chart.append(svg("path", { class: "err", d: `M${x1} ${m}H${x2}M${x1} ${m - 5}V${m + 5}M${x2} ${m - 5}V${m + 5}` }));
    }
    chart.append(svg("text", { x: left + width + 6, y: y + 14 }, percent ? pct(r.value) : num(r.value)));
  });
  return chart;
}

function table(testid, head, rows, rowClass) {
  return h("div", { class: "lb-scroll" },
    h("table", { class: "lb-table", testid },
      h("thead", null, h("tr", null, head.map((c) => h("th", null, c)))),
      h("tbody", null, rows.map((cells, i) => h("tr", { class: rowClass ? rowClass(i) : null },
        cells.map((c) => h("td", null, c)))))));
}

function renderReport(report) {
  const a = report.arena, entries = report.entries;
  const spec = a.spec || {};
  const results = Object.entries(a.results || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "none yet";
  const board = table("leaderboard-table",
    ["#", "entry", "ordinal", "mu", "σ", "games", "win [95% CI]", "survival", "votes on Mafia"],
    entries.map((e) => [e.rank, `${e.label} (${e.entry})`, num(e.rating.ordinal), num(e.rating.mu),
      num(e.rating.sigma), e.games, ci(e.win), ci(e.survival), ci(e.mafia_votes)]),
    (i) => (i === 0 ? "top" : null));
  const top = Math.max(1, ...entries.map((e) => e.rating.mu + 2 * e.rating.sigma));
  const plots = h("div", { class: "lb-plots" },
    barChart("Win rate (95% interval)", entries.map((e) => ({ label: e.label, value: e.win.rate, lo: e.win.lo, hi: e.win.hi })), { testid: "plot-win" }),
    barChart("OpenSkill mu ± 2σ", entries.map((e) => ({ label: e.label, value: e.rating.mu, lo: Math.max(0, e.rating.mu - 2 * e.rating.sigma), hi: e.rating.mu + 2 * e.rating.sigma })), { max: top, percent: false, testid: "plot-rating" }),
    barChart("Win rate per faction", report.factions.map((f) => ({ label: `${f.label} · ${f.faction}`, value: f.rate, lo: f.lo, hi: f.hi, cls: f.faction })), { testid: "plot-factions" }),
    barChart("Votes on Mafia (non-Mafia seats)", entries.map((e) => ({ label: e.label, value: e.mafia_votes.rate, lo: e.mafia_votes.lo, hi: e.mafia_votes.hi })), { testid: "plot-votes" }));
  const reliability = table("reliability-table",
    ["entry", "backend", "decisions", "malformed", "faults", "timeouts", "errors", "tokens", "tokens/turn", "cost (USD)", "s/decision"],
    entries.map((e) => [e.label, e.backend, e.decisions, pct(e.malformed_rate), pct(e.fault_rate),
      pct(e.timeout_rate), pct(e.error_rate), e.prompt_tokens + e.completion_tokens,
      e.tokens_per_turn ?? "–", e.cost_usd === null ? "–" : num(e.cost_usd, 4), num(e.decision_seconds, 3)]));
  const factions = table("factions-table", ["entry", "faction", "seats", "wins", "win [95% CI]"],
    report.factions.map((f) => [f.label, f.faction, f.seats, f.wins, ci(f)]));
  const roles = table("roles-table", ["entry", "role", "faction", "seats", "wins", "win [95% CI]"],
    report.roles.map((r) => [r.label, r.role, r.faction, r.seats, r.wins, ci(r)]));
  return [
    h("section", { class: "panel" },
      h("h2", null, "Leaderboard"),
      h("p", { class: "muted small", testid: "arena-summary" },
        `${a.finished} of ${a.planned} games finished (${a.status}); ${spec.players} players, ` +
        `mode ${spec.mode}, seed ${spec.seed}. Results: ${results}. Ranked by the OpenSkill ` +
        "ordinal (mu − 3σ); intervals are 95% Wilson intervals."),
      board),
    h("section", { class: "panel" }, h("h2", null, "Plots"), plots),
    h("section", { class: "panel" }, h("h2", null, "Reliability, tokens, cost, latency"), reliability),
    h("section", { class: "panel" }, h("h2", null, "Win rate per faction"), factions),
    h("section", { class: "panel" }, h("h2", null, "Win rate per role"), roles),
  ];
}

async function show(arenaId, arenas, quiet = false) {
  clearTimeout(refresh);
  const select = h("select", { testid: "arena-select", "aria-label": "Arena",
    onchange: (ev) => { history.replaceState(null, "", `?arena=${encodeURIComponent(ev.target.value)}`); show(ev.target.value, arenas); } },
    arenas.map((a) => {
      const names = (a.spec.entries || []).map((e) => e.label).join(", ");
      const opt = h("option", { value: a.id }, `${a.id}: ${names} (${a.finished}/${a.planned})`);
      opt.selected = a.id === arenaId;
      return opt;
    }));
  const head = h("section", { class: "panel lb-head" }, h("h1", null, "Arena leaderboard"), select);
  if (!quiet) app.replaceChildren(head, h("p", { class: "muted" }, "Loading…"));
  try {
    const report = await getJSON(`/api/arenas/${encodeURIComponent(arenaId)}/report`);
    app.replaceChildren(head, ...renderReport(report));
    if (report.arena.status === "running") refresh = setTimeout(() => show(arenaId, arenas, true), REFRESH_MS);
  } catch (err) {
    app.replaceChildren(head, h("p", { class: "error", testid: "error" }, err.message));
  }
}

async function main() {
  let arenas;
  try {
    arenas = await getJSON("/api/arenas");
  } catch (err) {
    app.replaceChildren(h("p", { class: "error", testid: "error" }, err.message));
    return;
  }
  if (!arenas.length) {
    app.replaceChildren(h("section", { class: "panel empty", testid: "no-arenas" },
      h("h2", null, "No arenas yet"),
      h("p", null, "Play one with: tossim arena --entry scripted --entry smollm2 --games 12")));
    return;
  }
  const wanted = new URLSearchParams(location.search).get("arena");
  const id = arenas.some((a) => a.id === wanted) ? wanted : arenas[0].id;
  await show(id, arenas);
}

main();
