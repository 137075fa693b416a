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
    this.turns = []; // {slot, seq, day, phase, steps, action, live?, done?}
    this.until = null; // show turns up to this (day, phase); null: all
    this.list = h("div", { class: "thinking-seats", testid: "thinking-seats" });
    this.empty = h("p", { class: "muted small" }, "Model seats' thinking, tool calls and observations appear here as they happen.");
    this.el = h("section", { class: "panel thinking", testid: "thinking", "aria-labelledby": "thinking-h", hidden: true },
      h("h3", { id: "thinking-h" }, "AI seats thinking"), this.empty, this.list);
    setChildren(slot, this.el);
    // One <details> per seat, kept across renders: only its contents change,
    // so a reader's click, focus and open/closed state survive new turns.
    this.seats = new Map(); // slot -> {details, summary, body}
    this.loaded = false;
  }

  destroy() {
    this.stopped = true;
  }

  /**
   * Stored turns (GET /api/games/{id}/turns). Called once the server has
   * accepted this view (its socket's hello, or a replay it served), since the
   * route refuses the omniscient view of a live game with a human seat; the
   * later calls (a reconnect) do nothing.
   */
  async load(gameId) {
    if (this.loaded) return;
    this.loaded = true;
    let data;
    try {
      data = await getJSON(`/api/games/${encodeURIComponent(gameId)}/turns`);
    } catch {
      this.loaded = false; // asked again at the next hello
      return;
    }
    if (this.stopped) return;
    const turns = Array.isArray(data) ? data : (data && data.turns) || [];
    for (const t of turns) {
      const slot = Number(t.slot);
      // a stored turn is the finished form of one streamed before it loaded
      this.turns = this.turns.filter((x) => !(x.live && x.slot === slot && x.day === t.day && x.phase === t.phase));
      this.turns.push({ ...t, slot, steps: [...(t.steps || [])] });
    }
    this.render();
  }

  /** One streamed step: it joins the seat's turn of that day and phase. */
  add(msg) {
    const slot = Number(msg.slot);
    let turn = [...this.turns].reverse().find((t) => t.slot === slot);
    if (!turn || turn.day !== msg.day || turn.phase !== msg.phase || turn.done) {
      turn = { slot, day: msg.day, phase: msg.phase, steps: [], live: true };
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

  seat(slot) {
    let seat = this.seats.get(slot);
    if (!seat) {
      const summary = h("summary", null);
      const body = h("ol", { class: "turns" });
      const details = h("details", { class: "seat-thinking", testid: `thinking-${slot}` }, summary, body);
      seat = { details, summary, body, sig: "" };
      this.seats.set(slot, seat);
    }
    return seat;
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
    const slots = [...bySlot.keys()].sort((a, b) => a - b);
    const els = slots.map((slot) => {
      // in game order (a stored turn may load after a streamed later one)
      const turns = bySlot.get(slot).map((t, i) => [t, i])
        .sort((a, b) => order(a[0].day, a[0].phase) - order(b[0].day, b[0].phase) || a[1] - b[1])
        .map(([t]) => t);
      const seat = this.seat(slot);
      const last = turns[turns.length - 1];
      setChildren(seat.summary, `Player ${slot}`, h("span", { class: "muted small" },
        ` · ${turns.length} turn${turns.length > 1 ? "s" : ""} · last: Day ${last.day} ${last.phase}`));
      setChildren(seat.body, turns.map((t) => h("li", { class: "turn" },
        h("div", { class: "small muted" }, `Day ${t.day} · ${t.phase}`),
        h("ol", { class: "steps" }, t.steps.map(stepEl)),
        t.action ? h("div", { class: "small" }, "Action: ", h("code", null, clip(t.action))) : null)));
      return seat.details;
    });
    // move only what changed: the seats' elements stay the same nodes
    const current = [...this.list.children];
    if (current.length !== els.length || current.some((el, i) => el !== els[i])) setChildren(this.list, els);
  }
}
