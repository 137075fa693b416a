// "AI seats thinking": in the omniscient view, each model seat's turns (its
// thinking, tool calls with their observations, faults and the action it
// took), folded by default. Live, they come as websocket messages
//   {"type": "thinking", "slot", "day", "phase", "step": {"kind", "text"?, "name"?, "args"?, "observation"?}}
// and for a finished (or all-AI) game from GET /api/games/{id}/turns:
//   [{"slot", "seq", "day", "phase", "steps": [...], "action"}]
// Model text is untrusted: it goes on the page as text only.

import { getJSON } from "./api.js";
import { h, setChildren } from "./dom.js";

const PHASES = ["day1", "discussion", "voting", "defense", "judgement", "last_words", "night", "ended"];
const order = (day, phase) => Number(day || 0) * 10 + Math.max(0, PHASES.indexOf(phase));
const MAX_STEP_TEXT = 4000;

function clip(text) {
  const s = typeof text === "string" ? text : JSON.stringify(text);
  return s && s.length > MAX_STEP_TEXT ? `${s.slice(0, MAX_STEP_TEXT)}…` : s || "";
}

function stepEl(step) {
  const kind = step && step.kind;
  if (kind === "tool") {
    const args = step.args === undefined || step.args === null ? "" : clip(step.args);
    return h("li", { class: "step tool" },
      h("span", { class: "step-kind" }, "tool"), h("code", null, `${step.name || "?"}(${args})`),
      step.observation !== undefined ? h("pre", { class: "observation" }, clip(step.observation)) : null);
  }
  const label = { thinking: "thinks", fault: "fault", action: "acts" }[kind] || String(kind || "step");
  return h("li", { class: `step ${kind || ""}` },
    h("span", { class: "step-kind" }, label),
    h("span", { class: "prewrap" }, clip(step && (step.text ?? (step.name ? `${step.name} ${clip(step.args)}` : "")))));
}

export class ThinkingPanel {
  constructor(slot) {
    this.turns = []; // {slot, seq, day, phase, steps, action}
    this.until = null; // show turns up to this (day, phase); null: all
    this.list = h("div", { class: "thinking-seats", testid: "thinking-seats" });
    this.empty = h("p", { class: "muted small" }, "Model seats' thinking, tool calls and observations appear here as they happen.");
    this.el = h("section", { class: "panel thinking", testid: "thinking", "aria-labelledby": "thinking-h", hidden: true },
      h("h3", { id: "thinking-h" }, "AI seats thinking"), this.empty, this.list);
    setChildren(slot, this.el);
    this.open = new Set(); // slots whose <details> the user opened
  }

  destroy() {
    this.stopped = true;
  }

  /** Stored turns (finished and all-AI games); a server without the route shows nothing. */
  async load(gameId) {
    let data;
    try {
      data = await getJSON(`/api/games/${encodeURIComponent(gameId)}/turns`);
    } catch {
      return;
    }
    if (this.stopped) return;
    const turns = Array.isArray(data) ? data : (data && data.turns) || [];
    const known = new Set(this.turns.map((t) => `${t.slot}|${t.seq}`));
    for (const t of turns) if (!known.has(`${t.slot}|${t.seq}`)) this.turns.push({ ...t, steps: [...(t.steps || [])] });
    this.render();
  }

  /** One streamed step: it joins the seat's turn of that day and phase. */
  add(msg) {
    const slot = Number(msg.slot);
    let turn = [...this.turns].reverse().find((t) => t.slot === slot);
    if (!turn || turn.day !== msg.day || turn.phase !== msg.phase || turn.done) {
      turn = { slot, seq: this.turns.length + 1, day: msg.day, phase: msg.phase, steps: [], live: true };
      this.turns.push(turn);
    }
    turn.steps.push(msg.step || {});
    if (msg.step && msg.step.kind === "action") turn.done = true;
    this.render();
  }

  /** Replays: only the turns up to the event shown. */
  showUntil(event) {
    this.until = event ? order(event.day, event.phase) : -1;
    this.render();
  }

  render() {
    const shown = this.turns.filter((t) => this.until === null || order(t.day, t.phase) <= this.until);
    this.el.hidden = this.turns.length === 0;
    this.empty.hidden = shown.length > 0;
    const bySlot = new Map();
    for (const t of shown) {
      if (!bySlot.has(t.slot)) bySlot.set(t.slot, []);
      bySlot.get(t.slot).push(t);
    }
    setChildren(this.list, [...bySlot.entries()].sort((a, b) => a[0] - b[0]).map(([slot, turns]) => {
      const last = turns[turns.length - 1];
      const details = h("details", { class: "seat-thinking", testid: `thinking-${slot}`, open: this.open.has(slot) },
        h("summary", null, `Player ${slot}`, h("span", { class: "muted small" },
          ` · ${turns.length} turn${turns.length > 1 ? "s" : ""} · last: Day ${last.day} ${last.phase}`)),
        h("ol", { class: "turns" }, turns.map((t) => h("li", { class: "turn" },
          h("div", { class: "small muted" }, `Day ${t.day} · ${t.phase}`),
          h("ol", { class: "steps" }, t.steps.map(stepEl)),
          t.action ? h("div", { class: "small" }, "Action: ", h("code", null, clip(t.action))) : null))));
      details.addEventListener("toggle", () => {
        if (details.open) this.open.add(slot);
        else this.open.delete(slot);
      });
      return details;
    }));
  }
}
