// The replay viewer: a game's visible events (from GET /api/games/{id}/replay
// or a live socket) played back like a lichess game: play/pause, speed, step,
// jump to a day or night, a timeline with deaths and trials marked, a spoiler
// toggle, moment links and export. The state shown at each moment is derived
// from the events up to it (derive() below): the same events a viewer saw
// live, so nothing the viewer may not see can appear.

import { h, setChildren, setText } from "./dom.js";

export const SPEEDS = [0.5, 1, 2, 4, 8, 16];
const STEP_MS = 900; // one event per STEP_MS at 1x; phase changes linger longer

const DEATH_KEYS = new Set(["dawn.death", "lynch.death"]);
const ROLE_KEYS = new Set(["dawn.role", "lynch.death", "game.roles", "mayor.reveal", "night.promoted"]);

/** "Day 2" / "Night 2" for an event. */
export function segmentLabel(e) {
  return `${e.phase === "night" ? "Night" : "Day"} ${e.day}`;
}

/**
 * The viewer's state after the first `n` events, in GameView's state shape:
 * {day, phase, roster, trial, result, winners, you, deadline: null}.
 * `spoilers`: false shows only what the chosen view knew by then; true shows
 * every role these events ever reveal, and the result.
 * `viewerSlot`: the seat whose view this is (its role card), or null.
 * `hidden`: false leaves out every event that was not public (roles dealt,
 * night results, private chats): a finished game's replay with spoilers off
 * shows no view's secrets.
 * The roster (every seat's name) is there from the start: names are public
 * from the first event, and a replay opened at event 0 lists the players.
 */
export function derive(events, n, { spoilers = false, viewerSlot = null, hidden = true } = {}) {
  const players = new Map(); // slot -> {slot, name, alive, role, revealed_mayor, death}
  let day = 1;
  let phase = "day1";
  let accused = null;
  let votes = {};
  let result = null;
  let winners = [];
  const you = viewerSlot ? { slot: viewerSlot, name: `Player ${viewerSlot}`, alive: true, role: null, teammates: [] } : null;
  const learnRole = (slot, role) => {
    const p = players.get(Number(slot));
    if (p && role) p.role = role;
  };
  const start = events.find((e) => e.key === "game.start");
  const seated = start && start.data && Array.isArray(start.data.players) ? start.data.players : [];
  for (const p of seated) {
    players.set(Number(p.slot), { slot: Number(p.slot), name: p.name, alive: true, role: null, revealed_mayor: false });
  }
  if (you && players.has(you.slot)) you.name = players.get(you.slot).name;
  const upto = spoilers ? events.length : n;
  for (let i = 0; i < upto; i += 1) {
    const e = events[i];
    if (!hidden && !isPublic(e)) continue;
    const d = e.data || {};
    const now = i < n; // effects beyond the moment only reveal roles (spoilers)
    if (ROLE_KEYS.has(e.key) && d.player) learnRole(d.player, d.role);
    if (e.key === "game.role") {
      // omniscient events name their audience; a player's view holds only its own card
      const slot = Array.isArray(e.to) && e.to.length === 1 ? e.to[0] : you ? you.slot : null;
      if (slot) learnRole(slot, d.role);
      if (you && slot === you.slot) you.role = d.role;
    }
    if (e.key === "game.mafia_team" && Array.isArray(d.members)) {
      for (const m of d.members) {
        learnRole(m.slot, m.role);
        if (you && m.slot !== you.slot) you.teammates.push(Number(m.slot));
      }
    }
    if (!now) continue;
    if (e.day) day = e.day;
    if (e.phase) phase = e.phase;
    if (e.key && e.key.startsWith("phase.")) {
      votes = {};
      if (e.key !== "phase.defense" && e.key !== "phase.judgement" && e.key !== "phase.last_words") accused = null;
    }
    if (e.key === "trial.start") accused = d.accused ?? null;
    if (e.key === "vote.cast" && d.voter) {
      votes[String(d.voter)] = d.target;
    }
    if (DEATH_KEYS.has(e.key) && d.player) {
      const p = players.get(Number(d.player));
      if (p) {
        p.alive = false;
        // a death found at dawn of Day N was on Night N-1, as the live view says
        const atNight = e.key === "dawn.death";
        p.death = { day: atNight ? e.day - 1 : e.day, at_night: atNight, causes: d.causes || (e.key === "lynch.death" ? ["lynch"] : []) };
        if (you && p.slot === you.slot) you.alive = false;
      }
    }
    if ((e.key === "dawn.will" || e.key === "lynch.will") && d.player) {
      const p = players.get(Number(d.player));
      if (p && p.death) p.death.will = d.will;
    }
    if (e.key === "dawn.revived" && d.player) {
      const p = players.get(Number(d.player));
      if (p) {
        p.alive = true;
        delete p.death;
      }
    }
    if (e.key === "mayor.reveal" && d.player) {
      const p = players.get(Number(d.player));
      if (p) p.revealed_mayor = true;
    }
    if (e.key === "game.end") {
      result = d.result || null;
      winners = d.winners || [];
    }
  }
  if (spoilers) {
    // the result is a spoiler too: with spoilers shown it is there from the start
    const end = events.find((e) => e.key === "game.end");
    if (end) {
      result = (end.data || {}).result || null;
      winners = (end.data || {}).winners || [];
    }
  }
  const tally = {};
  for (const target of Object.values(votes)) {
    if (target) tally[String(target)] = (tally[String(target)] || 0) + 1;
  }
  if (you) {
    const p = players.get(you.slot);
    if (p) you.alive = p.alive;
    if (!you.role && p) you.role = p.role;
  }
  return {
    day,
    phase: result && !spoilers ? "ended" : phase,
    phase_seq: 0,
    deadline: null,
    roster: [...players.values()].sort((a, b) => a.slot - b.slot).map((p) => ({ ...p })),
    trial: { accused, votes: phase === "voting" ? tally : {} },
    result,
    winners,
    you: you && you.role && hidden ? you : null,
    legal: [],
  };
}

/** Whether every viewer saw this event (events without an audience: yes). */
export function isPublic(e) {
  return !e.audience || e.audience === "public";
}

/**
 * A position as the game's moment rather than an index into one view's
 * events: how many public events (which every view has) it has passed.
 * Another point of view opens at the same moment with atMoment().
 */
export function momentOf(events, n) {
  let m = 0;
  for (let i = 0; i < Math.min(n, events.length); i += 1) if (isPublic(events[i])) m += 1;
  return m;
}

/** The position in `events` of moment `m`: just after its m-th public event. */
export function atMoment(events, m) {
  if (m <= 0) return 0;
  let seen = 0;
  for (let i = 0; i < events.length; i += 1) {
    if (isPublic(events[i])) {
      seen += 1;
      if (seen === m) return i + 1;
    }
  }
  return events.length;
}

/** Index ranges of each day and night, and the marks (deaths, trials, the end). */
export function timeline(events) {
  const segments = [];
  const marks = [];
  let current = null;
  events.forEach((e, i) => {
    const label = segmentLabel(e);
    if (e.phase !== "ended" && (!current || current.label !== label)) {
      current = { label, night: e.phase === "night", day: e.day, start: i, end: i };
      segments.push(current);
    }
    if (current) current.end = i;
    const d = e.data || {};
    if (DEATH_KEYS.has(e.key)) marks.push({ i, kind: "death", title: e.text || `Player ${d.player} died` });
    else if (e.key === "trial.start") marks.push({ i, kind: "trial", title: e.text || "Trial" });
    else if (e.key === "game.end") marks.push({ i, kind: "end", title: e.text || "Game over" });
  });
  return { segments, marks };
}

/**
 * The controls under a game: play/pause, speed, step, jump, timeline, spoiler
 * toggle, moment link, export, and (for live games) "Back to live".
 *
 * opts: {onSeek(n) (show the first n events), live: bool, onLive(), momentLink(v),
 *        exportData(): object, fileName}
 */
export class ReplayBar {
  constructor(opts) {
    this.opts = opts;
    this.events = [];
    this.n = 0; // events shown
    this.playing = false;
    this.speed = 1;
    this.timer = null;
    this.atLive = Boolean(opts.live);
    this.spoilers = Boolean(opts.spoilers);
    this.build();
    this.onKey = (ev) => this.key(ev);
    document.addEventListener("keydown", this.onKey);
  }

  destroy() {
    clearTimeout(this.timer);
    document.removeEventListener("keydown", this.onKey);
  }

  build() {
    const btn = (testid, label, title, onclick) =>
      h("button", { type: "button", class: "ghost icon", testid, title, "aria-label": title, onclick }, label);
    this.startBtn = btn("rp-start", "|◀", "First event (Home)", () => this.step(-this.events.length));
    this.backBtn = btn("rp-back", "◀ 1", "One event back (←)", () => this.step(-1));
    this.playBtn = btn("rp-play", "▶ Play", "Play (space)", () => this.toggle());
    this.fwdBtn = btn("rp-forward", "1 ▶", "One event forward (→)", () => this.step(1));
    this.endBtn = btn("rp-end", "▶|", "Last event (End)", () => (this.opts.live ? this.goLive() : this.step(this.events.length)));
    this.speedSel = h("select", { testid: "rp-speed", "aria-label": "Speed" },
      SPEEDS.map((s) => h("option", { value: String(s), selected: s === 1 }, `${s}x`)));
    this.speedSel.addEventListener("change", () => {
      this.speed = Number(this.speedSel.value) || 1;
      if (this.playing) this.schedule();
    });
    this.spoilerBox = h("input", { type: "checkbox", id: "rp-spoilers", testid: "rp-spoilers", checked: this.spoilers });
    this.spoilerBox.addEventListener("change", () => {
      this.spoilers = this.spoilerBox.checked;
      this.renderTrack();
      this.emit();
    });
    this.liveBtn = h("button", {
      type: "button", class: "primary", testid: "rp-live", hidden: true,
      onclick: () => this.goLive(),
    }, "Back to live");
    this.position = h("span", { class: "small muted rp-pos", testid: "rp-position", "aria-live": "off" });
    this.range = h("input", { type: "range", min: "0", max: "0", value: "0", testid: "rp-range", "aria-label": "Timeline" });
    this.range.addEventListener("input", () => this.seek(Number(this.range.value)));
    this.track = h("div", { class: "rp-track", "aria-hidden": "true" });
    this.jumps = h("div", { class: "rp-jumps", testid: "rp-jumps", role: "group", "aria-label": "Jump to a day or night" });
    this.linkEl = h("a", { class: "button ghost", testid: "rp-link", href: "#" }, "Link to this moment");
    this.exportEl = h("button", { type: "button", class: "ghost", testid: "rp-export", onclick: () => this.exportJSON() }, "Export JSON");
    this.el = h("section", { class: "panel replay-bar", testid: "replay-bar", "aria-label": "Replay controls" },
      h("div", { class: "rp-row" },
        this.startBtn, this.backBtn, this.playBtn, this.fwdBtn, this.endBtn, this.speedSel,
        this.position, this.liveBtn),
      h("div", { class: "rp-timeline" }, this.track, this.range),
      this.jumps,
      h("div", { class: "rp-row" },
        h("label", { for: "rp-spoilers", class: "check" }, this.spoilerBox, " Show spoilers (hidden roles, night results, the result)"),
        this.linkEl, this.exportEl));
  }

  /** New events (live games append; replays set them once). */
  setEvents(events) {
    const follow = this.atLive || this.n >= this.events.length;
    this.events = events;
    this.range.max = String(events.length);
    if (this.opts.live && this.atLive) this.n = events.length;
    else if (!this.opts.live && follow && this.playing === false && this.n === 0) this.n = 0;
    this.renderTrack();
    this.update();
    return follow;
  }

  /** A finished game's replay without spoilers marks only what has happened by now. */
  get hidesFuture() {
    return !this.opts.live && !this.spoilers;
  }

  renderTrack() {
    const total = Math.max(1, this.events.length);
    const { segments, marks: all } = timeline(this.events);
    const marks = this.hidesFuture ? all.filter((m) => m.i < this.n) : all;
    const sig = `${this.events.length}|${marks.length}`;
    if (this.track.dataset.sig === sig) return;
    this.track.dataset.sig = sig;
    setChildren(this.track,
      segments.map((s) => {
        const el = h("span", { class: `rp-seg ${s.night ? "night" : "day"}`, title: s.label });
        el.style.left = `${(s.start / total) * 100}%`;
        el.style.width = `${((s.end - s.start + 1) / total) * 100}%`;
        return el;
      }),
      marks.map((m) => {
        const el = h("span", { class: `rp-mark ${m.kind}`, title: m.title, testid: `rp-mark-${m.kind}` },
          m.kind === "death" ? "†" : m.kind === "trial" ? "⚖" : "■");
        el.style.left = `${((m.i + 0.5) / total) * 100}%`;
        return el;
      }));
    setChildren(this.jumps, segments.map((s) =>
      h("button", {
        type: "button", class: `chip ${s.night ? "night" : "day"}`,
        testid: `rp-jump-${s.label.replace(" ", "-").toLowerCase()}`,
        onclick: () => this.seek(s.start + 1),
      }, s.label)));
  }

  update() {
    this.renderTrack();
    this.range.value = String(this.n);
    const e = this.events[this.n - 1];
    const where = e ? `${segmentLabel(e)} · event ${this.n}/${this.events.length}` : `start · 0/${this.events.length}`;
    setText(this.position, where);
    setText(this.playBtn, this.playing ? "II Pause" : "▶ Play");
    this.playBtn.setAttribute("aria-label", this.playing ? "Pause (space)" : "Play (space)");
    this.playBtn.title = this.playBtn.getAttribute("aria-label");
    this.liveBtn.hidden = !this.opts.live || this.atLive;
    if (this.opts.momentLink) this.linkEl.href = this.opts.momentLink(e ? e.v : 0);
    for (const b of this.jumps.children) {
      b.setAttribute("aria-current", String(Boolean(e) && b.textContent === segmentLabel(e)));
    }
  }

  emit() {
    this.update();
    this.opts.onSeek(this.n, { spoilers: this.spoilers, live: this.opts.live && this.atLive });
  }

  seek(n) {
    this.n = Math.max(0, Math.min(this.events.length, n));
    this.atLive = Boolean(this.opts.live) && this.n >= this.events.length && !this.playing && this.atLive;
    if (this.opts.live && this.n < this.events.length) this.atLive = false;
    if (this.n >= this.events.length) this.pause();
    this.emit();
  }

  /** Open at the last event whose version is at most `v`. */
  seekVersion(v) {
    let n = 0;
    this.events.forEach((e, i) => {
      if (typeof e.v === "number" && e.v <= v) n = i + 1;
    });
    this.atLive = false;
    this.seek(n);
  }

  /** Open at the game's moment `m` (momentOf: another view's position). */
  seekMoment(m) {
    this.atLive = false;
    this.seek(atMoment(this.events, m));
  }

  step(delta) {
    this.pause();
    if (this.opts.live) this.atLive = false;
    this.seek(this.n + delta);
  }

  toggle() {
    if (this.playing) this.pause();
    else this.play();
  }

  play() {
    if (this.n >= this.events.length) this.n = 0;
    if (this.opts.live) this.atLive = false;
    this.playing = true;
    this.schedule();
    this.update();
  }

  pause() {
    this.playing = false;
    clearTimeout(this.timer);
    this.update();
  }

  schedule() {
    clearTimeout(this.timer);
    const next = this.events[this.n];
    const linger = next && next.key && next.key.startsWith("phase.") ? 2 : 1;
    this.timer = setTimeout(() => {
      if (!this.playing) return;
      this.n += 1;
      if (this.n >= this.events.length) {
        this.n = this.events.length;
        this.playing = false;
      }
      this.emit();
      if (this.playing) this.schedule();
    }, (STEP_MS * linger) / this.speed);
  }

  goLive() {
    this.pause();
    this.atLive = true;
    this.n = this.events.length;
    this.emit();
  }

  exportJSON() {
    const data = this.opts.exportData();
    const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const a = h("a", { href: url, download: this.opts.fileName || "tossim-game.json", hidden: true });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  key(ev) {
    const t = ev.target;
    const typing = t && ((t.tagName === "INPUT" && t.type !== "checkbox")
      || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (typing) return; // the timeline's range input moves with the arrows by itself
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const keys = {
      " ": () => this.toggle(),
      ArrowLeft: () => this.step(-1),
      ArrowRight: () => this.step(1),
      Home: () => this.step(-this.events.length),
      End: () => (this.opts.live ? this.goLive() : this.step(this.events.length)),
    };
    const act = keys[ev.key];
    if (!act) return;
    if (ev.key === " " && t && t.tagName === "BUTTON") return; // the button's own click
    ev.preventDefault();
    act();
  }
}
