// The game view shared by the watch page and the seat page.
//
// Everything a player typed (chat, names, wills, death notes) is put on the
// page as text nodes via dom.js; nothing here parses HTML.
//
// The seat's controls are built only from `state.legal` (tossim/engine/legal.py):
// a control exists exactly when the engine offers that action now.

import { formatSeconds, h, setChildren, setText, syncSelect } from "./dom.js";

const PHASE_LABEL = {
  day1: "Day",
  discussion: "Discussion",
  voting: "Voting",
  defense: "Defense",
  judgement: "Judgement",
  last_words: "Last Words",
  night: "Night",
  ended: "Game over",
};

// Role facts from the registry (GET /api/roles, tossim/engine/roles/cards.py):
// every role's card and the death causes' texts. app.js loads them once
// before the first page; until then a cause shows as its key.
const FACTS = { roles: new Map(), causes: {} };

export function setRoleFacts(data) {
  FACTS.roles = new Map(((data && data.roles) || []).map((r) => [r.key, r]));
  FACTS.causes = (data && data.causes) || {};
}

export function roleFact(key) {
  return FACTS.roles.get(key) || null;
}

export function allRoleFacts() {
  return [...FACTS.roles.values()];
}


const RESULT_TEXT = {
  town: "The Town won.",
  mafia: "The Mafia won.",
  serial_killer: "The Serial Killer won.",
  arsonist: "The Arsonist won.",
  werewolf: "The Werewolf won.",
  vampire: "The Vampires won.",
  draw: "The game ended in a draw.",
};

const CHANNEL_LABEL = {
  public: "Everyone",
  dead: "Dead chat",
  mafia: "Mafia chat",
  vampire: "Vampire chat",
  jail: "Jail",
  seance: "Seance",
};

const ABILITY_LABEL = {
  distract: "Role block",
  interrogate: "Interrogate",
  execute: "Execute the prisoner",
  alert: "Go on alert",
  guard: "Guard",
  transport: "Transport",
  revive: "Revive",
  haunt: "Haunt",
};

const NAMED_EVENT_CLASSES = [
  [/^phase\./, "phase"],
  [/^game\.(start|end|roles)$/, "system"],
  [/^(dawn|lynch\.(death|will|jester))|^(trial\.start|judge\.(lynch|pardon)|trial\.limit|mayor\.reveal)$/, "announce"],
  [/^(vote\.|judge\.(cast|changed|vote)$|chat\.whisper_notice$)/, "notice"],
];

/** Attack, defense and attributes of a role card (null when facts are missing). */
export function roleStats(fact) {
  if (!fact) return null;
  return h("div", { class: "role-stats", testid: "role-stats" },
    h("dl", { class: "attack-defense" },
      h("dt", null, "Attack"), h("dd", { testid: "role-attack" }, fact.attack),
      h("dt", null, "Defense"), h("dd", { testid: "role-defense" }, fact.defense)),
    fact.attributes.length
      ? h("ul", { class: "attributes", testid: "role-attributes" }, fact.attributes.map((a) => h("li", null, a)))
      : null);
}

export const MAX_CHAT = 500;
export const MAX_WILL = 400;
export const MAX_DEATH_NOTE = 400;

export function phaseTitle(state) {
  if (!state) return "Connecting…";
  if (state.phase === "ended") return "Game over";
  if (state.phase === "night") return `Night ${state.day}`;
  if (state.phase === "day1") return `Day ${state.day}`;
  return `Day ${state.day} · ${PHASE_LABEL[state.phase] || state.phase}`;
}

export function resultText(result) {
  return RESULT_TEXT[result] || (result ? String(result) : "");
}

function capitalize(s) {
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

function abilityLabel(ability) {
  return ABILITY_LABEL[ability] || capitalize(String(ability || "Act").replace(/_/g, " "));
}

/** A stable colour per seat, used for names in the log and the roster. */
function seatHue(slot) {
  return (Number(slot) * 137.508) % 360;
}

function eventClass(e) {
  const key = e.key || "";
  const secret = e.audience && e.audience !== "public";
  if (key === "chat.whisper") return "k-chat k-whisper";
  if (key.startsWith("chat.") && key !== "chat.whisper_notice") return `k-chat ch-${key.slice(5)}`;
  for (const [re, cls] of NAMED_EVENT_CLASSES) {
    if (re.test(key)) return secret ? `k-${cls} k-private` : `k-${cls}`;
  }
  return secret ? "k-private" : "k-info";
}

/**
 * GameView: the DOM of one game, updated from websocket messages.
 * opts: {mode: "watch" | "play", send(command) -> bool, toolbar: Node?, notesKey: string?}
 */
export class GameView {
  constructor(root, opts) {
    this.root = root;
    this.mode = opts.mode;
    this.send = opts.send;
    this.notesKey = opts.notesKey || null; // where a player's notepad is kept (play mode)
    this.state = null;
    this.names = new Map();
    this.lastV = 0;
    this.unread = 0;
    this.errorTimer = null;
    // the chat just sent, {text, choice}, until it shows in the log or is refused
    this.pendingChat = null;
    // where the text in the chat box is meant to go ("c:mafia", "w:4"): typed
    // at night for the Mafia, it must never go to Everyone the next morning
    this.draftChoice = null;
    this.seats = new Map(); // slot -> the game summary's seat (kind, backend/model)
    this.standins = new Set(); // human seats a stand-in plays while their player is away
    this.speed = "";
    this.build(opts.toolbar);
    this.tick = setInterval(() => this.updateCountdown(), 250);
  }

  destroy() {
    clearInterval(this.tick);
    clearTimeout(this.errorTimer);
  }

  // ---- layout ------------------------------------------------------------------

  build(toolbar) {
    const play = this.mode === "play";
    this.phaseEl = h("h2", { class: "phase", testid: "phase", "aria-live": "polite" }, "Connecting…");
    this.countdownEl = h("span", { class: "countdown", testid: "countdown", role: "timer", hidden: true });
    this.trialEl = h("span", { class: "trial-info", testid: "trial-info" });
    this.connEl = h("span", { class: "conn", testid: "connection", role: "status" }, "Connecting…");
    this.resultEl = h("div", { class: "result-banner", testid: "game-result", hidden: true });

    this.rosterEl = h("ol", { class: "roster", testid: "roster" });
    this.graveEl = h("ol", { class: "graveyard", testid: "graveyard" });
    this.graveEmpty = h("p", { class: "muted" }, "Nobody has died yet.");

    this.logEl = h("ol", {
      class: "event-log", testid: "event-log", role: "log", "aria-label": "Game events",
      tabindex: "0",
    });
    // the log follows the newest event until the reader scrolls up; a
    // change of its height (the AI thinking panel below it growing, a
    // window resized) keeps a following log at its end. Only a move up
    // stops it: a browser runs a frame's scroll events before its resize
    // observers, so a scroll event pending when the log's box shrank saw
    // the log short of its end and stopped it (seen in the demo: the live
    // log stuck at a Judgement with "17 new" while the game was at night)
    this.following = true;
    this.lastTop = 0;
    this.logEl.addEventListener("scroll", () => {
      const top = this.logEl.scrollTop;
      if (this.nearBottom()) {
        this.following = true;
        this.setUnread(0);
      } else if (top < this.lastTop) {
        this.following = false;
      }
      this.lastTop = top;
    });
    if (typeof ResizeObserver === "function") {
      new ResizeObserver(() => { if (this.following) this.scrollToEnd(); }).observe(this.logEl);
    }
    this.jumpEl = h("button", {
      class: "jump", type: "button", hidden: true, testid: "jump-latest",
      onclick: () => this.scrollToEnd(),
    }, "New events ↓");

    const graveyard = h("section", { class: "panel", "aria-labelledby": "grave-h" },
      h("h3", { id: "grave-h" }, "Graveyard"), this.graveEmpty, this.graveEl);

    // Summaries of finished days' public discussion (see setSummaries); hidden while empty.
    this.summaryList = h("ol", { class: "day-summaries", testid: "day-summaries", tabindex: "0" });
    this.summaryPanel = h("section", {
      class: "panel summaries", testid: "summaries", "aria-labelledby": "summaries-h", hidden: true,
    }, h("h3", { id: "summaries-h" }, "Earlier days"), this.summaryList);
    this.summarySig = "";

    // the role list stays in view all game, as in Town of Salem
    this.roleListEl = h("p", { class: "small role-list", testid: "role-list" });
    this.roleListPanel = h("section", { class: "panel role-list-panel", testid: "role-list-panel", hidden: true,
      "aria-labelledby": "role-list-h" }, h("h3", { id: "role-list-h" }, "Roles in this game"), this.roleListEl);
    const left = h("aside", { class: "col col-left" },
      h("section", { class: "panel", "aria-labelledby": "roster-h" },
        h("h3", { id: "roster-h" }, "Players"), this.rosterEl),
      this.roleListPanel,
      play ? graveyard : null,
      this.summaryPanel);

    const center = h("section", { class: "col col-center", "aria-label": "Chat and events" },
      h("div", { class: "log-wrap" }, this.logEl, this.jumpEl));
    if (play) center.appendChild(this.buildComposer());

    const right = h("aside", { class: "col col-right" });
    this.roleCardEl = h("section", { class: "panel role-card", testid: "role-card", hidden: true });
    right.appendChild(this.roleCardEl);
    if (play) right.appendChild(this.buildActions());
    else right.appendChild(graveyard);
    if (play && this.notesKey) right.appendChild(this.buildNotepad(this.notesKey));

    const header = h("header", { class: "game-header" },
      h("div", { class: "phase-block" }, this.phaseEl, this.countdownEl),
      this.trialEl,
      h("div", { class: "header-right" }, toolbar || null, this.connEl));

    setChildren(this.root,
      h("div", { class: `game mode-${this.mode}`, testid: "game" },
        header, this.resultEl,
        h("div", { class: "game-grid" }, left, center, right)));
  }

  /** A private notepad beside the will: kept in this browser only (never
   * sent to the server), for the whole game, under `key`. */
  buildNotepad(key) {
    let saved = "";
    try { saved = localStorage.getItem(key) || ""; } catch { /* storage off */ }
    const area = h("textarea", { testid: "notepad", rows: "6", maxlength: "4000",
      "aria-label": "Your private notes", placeholder: "Claims, results, who voted whom…" });
    area.value = saved;
    const status = h("span", { class: "saved", testid: "notepad-status", "aria-live": "polite" });
    area.addEventListener("input", () => {
      try {
        localStorage.setItem(key, area.value);
        setText(status, "Kept in this browser");
      } catch {
        setText(status, "Cannot keep notes in this browser");
      }
    });
    return h("section", { class: "panel notepad", testid: "notepad-panel", "aria-labelledby": "notes-h" },
      h("h3", { id: "notes-h" }, "Notes"),
      h("p", { class: "hint" }, "Only you see these; they stay until you clear them."),
      area, status);
  }

  buildComposer() {
    this.chatTo = h("select", { id: "chat-to", testid: "chat-to", "aria-label": "Send to", hidden: true });
    this.chatInput = h("input", {
      disabled: true,
      id: "chat-input", testid: "chat-input", type: "text", maxlength: String(MAX_CHAT),
      autocomplete: "off", "aria-label": "Message", placeholder: "Say something…",
    });
    this.chatCount = h("span", { class: "counter", testid: "chat-count", "aria-live": "off" });
    this.chatSend = h("button", { type: "submit", testid: "chat-send", class: "primary" }, "Send");
    this.chatInput.addEventListener("input", () => {
      this.updateChatCount();
      if (!this.chatInput.value) this.draftChoice = null;
      else if (this.draftChoice === null) this.draftChoice = this.currentChoice();
    });
    // choosing another channel for the text is the user's own decision
    this.chatTo.addEventListener("change", () => {
      if (this.chatInput.value) this.draftChoice = this.currentChoice();
    });
    this.composer = h("form", {
      class: "composer", testid: "composer",
      onsubmit: (ev) => {
        ev.preventDefault();
        this.sendChat();
      },
    }, this.chatTo, this.chatInput, this.chatCount, this.chatSend);
    this.updateChatCount();
    return this.composer;
  }

  buildActions() {
    this.errorEl = h("div", { class: "error", testid: "error", role: "alert", hidden: true });

    // Vote
    this.voteHint = h("p", { class: "hint", testid: "vote-hint" });
    this.voteButtons = h("div", { class: "target-grid", testid: "vote-buttons" });
    this.voteCancel = h("button", {
      type: "button", testid: "vote-cancel", class: "ghost",
      onclick: () => this.command({ type: "vote", target: null }),
    }, "Cancel vote");
    this.votePanel = h("section", { class: "action", testid: "vote-panel", hidden: true },
      h("h4", null, "Vote to put someone on trial"), this.voteHint, this.voteButtons, this.voteCancel);

    // Judgement
    this.judgeHint = h("p", { class: "hint", testid: "judge-hint" });
    this.judgeButtons = {};
    const judgeRow = h("div", { class: "button-row" });
    for (const verdict of ["guilty", "innocent", "abstain"]) {
      const b = h("button", {
        type: "button", class: `verdict ${verdict}`, testid: `judge-${verdict}`, "aria-pressed": "false",
        onclick: () => this.command({ type: "judge", verdict }),
      }, capitalize(verdict));
      this.judgeButtons[verdict] = b;
      judgeRow.appendChild(b);
    }
    this.judgePanel = h("section", { class: "action", testid: "judge-panel", hidden: true },
      h("h4", null, "Judgement"), this.judgeHint, judgeRow);

    // Night
    this.nightTitle = h("h4", { testid: "night-title" });
    this.nightTargets = [
      h("select", { id: "night-target", testid: "night-target", "aria-label": "Target" }),
      h("select", { id: "night-target-2", testid: "night-target-2", "aria-label": "Second target" }),
    ];
    this.nightSubmit = h("button", {
      type: "button", class: "primary", testid: "night-submit", onclick: () => this.submitNight(),
    }, "Confirm");
    this.nightCancel = h("button", {
      type: "button", class: "ghost", testid: "night-cancel",
      onclick: () => this.command({ type: "night", targets: [] }),
    }, "Cancel");
    this.nightCurrent = h("p", { class: "hint", testid: "night-current" });
    this.nightPanel = h("section", { class: "action", testid: "night-panel", hidden: true },
      this.nightTitle, ...this.nightTargets,
      h("div", { class: "button-row" }, this.nightSubmit, this.nightCancel), this.nightCurrent);

    // Jail and seance (day abilities with a target)
    this.dayPanels = {};
    for (const [ability, title] of [["jail", "Jail tonight"], ["seance", "Seance tonight"]]) {
      const select = h("select", { id: `${ability}-target`, testid: `${ability}-target`, "aria-label": title });
      const current = h("p", { class: "hint", testid: `${ability}-current` });
      const panel = h("section", { class: "action", testid: `${ability}-panel`, hidden: true },
        h("h4", null, title), select,
        h("div", { class: "button-row" },
          h("button", {
            type: "button", class: "primary", testid: `${ability}-submit`,
            onclick: () => {
              const target = Number(select.value);
              if (!select.value) return this.showError("Choose a player first.");
              this.command({ type: "day", ability, target });
            },
          }, capitalize(ability)),
          h("button", {
            type: "button", class: "ghost", testid: `${ability}-cancel`,
            onclick: () => this.command({ type: "day", ability, target: null }),
          }, "Cancel")),
        current);
      this.dayPanels[ability] = { panel, select, current };
    }

    // Mayor reveal: a second click confirms (revealing cannot be undone).
    this.revealButton = h("button", {
      type: "button", class: "danger", testid: "reveal",
      onclick: () => {
        if (this.revealButton.dataset.armed !== "1") {
          this.revealButton.dataset.armed = "1";
          setText(this.revealButton, "Click again to reveal");
          return;
        }
        this.revealButton.dataset.armed = "";
        setText(this.revealButton, "Reveal as Mayor");
        this.command({ type: "day", ability: "reveal" });
      },
    }, "Reveal as Mayor");
    this.revealPanel = h("section", { class: "action", testid: "reveal-panel", hidden: true },
      h("h4", null, "Mayor"), h("p", { class: "hint" }, "Your vote counts 3 once revealed; doctors cannot heal you."),
      this.revealButton);

    // Will and death note
    this.notes = {};
    for (const [kind, title, max, id] of [
      ["will", "Last will", MAX_WILL, "will"],
      ["death_note", "Death note", MAX_DEATH_NOTE, "death-note"],
    ]) {
      const input = h("textarea", {
        id: `${id}-input`, testid: `${id}-input`, maxlength: String(max), rows: "5",
        "aria-label": title, spellcheck: "true",
      });
      const count = h("span", { class: "counter", testid: `${id}-count` });
      const status = h("span", { class: "saved", testid: `${id}-status`, "aria-live": "polite" });
      const note = { input, count, status, max, dirty: false, panel: null };
      input.addEventListener("input", () => {
        note.dirty = true;
        setText(status, "Unsaved");
        this.updateCounter(note);
      });
      const save = h("button", {
        type: "button", class: "primary", testid: `${id}-save`,
        onclick: () => {
          if (this.command({ type: kind, text: input.value })) setText(status, "Saving…");
        },
      }, "Save");
      note.panel = h("section", { class: "action", testid: `${id}-panel`, hidden: true },
        h("h4", null, h("label", { for: `${id}-input` }, title)), input,
        h("div", { class: "button-row" }, save, count, status));
      this.updateCounter(note);
      this.notes[kind] = note;
    }

    this.noActions = h("p", { class: "muted", testid: "no-actions", hidden: true }, "Nothing to do right now.");

    return h("section", { class: "panel actions", testid: "actions", "aria-labelledby": "actions-h" },
      h("h3", { id: "actions-h" }, "Actions"),
      this.errorEl, this.noActions,
      this.votePanel, this.judgePanel, this.nightPanel,
      this.dayPanels.jail.panel, this.dayPanels.seance.panel, this.revealPanel,
      this.notes.will.panel, this.notes.death_note.panel);
  }

  // ---- messages -------------------------------------------------------------------

  setConnection(status, detail) {
    const labels = {
      connecting: "Connecting…",
      live: "● Live",
      reconnecting: "Reconnecting…",
      closed: "Disconnected",
      ended: "Game over",
      history: "Earlier moment (live game)",
      replay: "Replay",
    };
    // "● Live" only while the game runs
    if (status === "live" && this.state && this.state.phase === "ended") status = "ended";
    setText(this.connEl, detail && status !== "live" ? `${labels[status] || status} — ${detail}` : labels[status] || status);
    this.connEl.dataset.status = status;
  }

  /** The game summary (GET /api/games/{id}): seat kinds for the player list, the speed. */
  setGame(summary) {
    this.seats = new Map((summary.seats || []).map((s) => [Number(s.slot), s]));
    this.speed = summary.speed || "";
    if (this.state) this.renderRoster(this.state);
    this.updateCountdown();
  }

  /** Show exactly these events and this state (a replay's moment, or back to live). */
  showEvents(events, state) {
    this.logEl.replaceChildren();
    this.lastV = 0;
    this.state = null;
    this.roleSignature = "";
    this.graveSignature = "";
    // names first: the log's authors are this moment's names, never "Player N"
    if (state && state.roster) this.names = new Map(state.roster.map((p) => [p.slot, p.name]));
    this.addEvents(events);
    this.scrollToEnd();
    if (state) this.applyState(state);
    else setText(this.phaseEl, "Before the game");
  }

  /** One "events" message: names first (the log shows them), then the log, then the rest. */
  update(events, state) {
    if (state && state.roster) this.names = new Map(state.roster.map((p) => [p.slot, p.name]));
    if (events.length) this.addEvents(events);
    if (state) this.applyState(state);
  }

  applyState(state) {
    // an error was about the phase it happened in: a new phase clears it
    // (seen on a phone: "Choose a player first." from a night's Confirm
    // still showed in the next day's discussion)
    if (this.state && state.phase_seq !== this.state.phase_seq) this.clearError();
    this.state = state;
    this.names = new Map((state.roster || []).map((p) => [p.slot, p.name]));
    if (state.phase === "ended" && this.connEl.dataset.status === "live") this.setConnection("ended", "");
    setText(this.phaseEl, phaseTitle(state));
    this.phaseEl.dataset.phase = state.phase;
    this.root.querySelector(".game").dataset.phase = state.phase === "night" ? "night" : state.phase === "ended" ? "ended" : "day";
    this.updateTrial(state);
    this.updateCountdown();
    this.updateResult(state);
    this.renderRoster(state);
    this.renderGraveyard(state);
    this.renderRoleCard(state.you);
    if (this.mode === "play") this.renderActions(state);
  }

  name(slot) {
    if (slot === null || slot === undefined) return "";
    return this.names.get(slot) || `Player ${slot}`;
  }

  updateTrial(state) {
    const t = state.trial || {};
    let text = "";
    if (state.phase === "voting" && t.needed) {
      text = `${t.needed} votes needed for a trial`;
    } else if (["defense", "judgement", "last_words"].includes(state.phase) && t.accused) {
      text = `On trial: ${this.name(t.accused)}`;
    }
    setText(this.trialEl, text);
    this.trialEl.hidden = !text;
  }

  updateCountdown() {
    const deadline = this.state && this.state.deadline;
    if (!deadline || this.state.phase === "ended") {
      const untimed = this.state && this.state.phase !== "ended" && ["fast", "paced"].includes(this.speed)
        && this.connEl.dataset.status === "live";
      this.countdownEl.hidden = !untimed;
      if (untimed) {
        setText(this.countdownEl, "AI pace");
        this.countdownEl.classList.remove("urgent");
        this.countdownEl.setAttribute("aria-label", "No timer: the phase ends when every AI seat has acted");
      }
      return;
    }
    const left = deadline - Date.now() / 1000;
    this.countdownEl.hidden = false;
    setText(this.countdownEl, formatSeconds(left));
    this.countdownEl.classList.toggle("urgent", left <= 10);
    this.countdownEl.setAttribute("aria-label", `${Math.max(0, Math.ceil(left))} seconds left`);
  }

  updateResult(state) {
    if (state.phase !== "ended" && !state.result) {
      this.resultEl.hidden = true;
      return;
    }
    const winners = (state.winners || []).map((s) => this.name(s));
    setChildren(this.resultEl,
      h("strong", null, resultText(state.result) || "The game is over."),
      winners.length ? ` Winners: ${winners.join(", ")}.` : "");
    this.resultEl.hidden = false;
  }

  // ---- earlier days -----------------------------------------------------------------

  /**
   * The "Earlier days" panel: [{day, text}] in day order, newest last. The text
   * is model-written (untrusted): it goes on the page as text only. No
   * summaries: no panel.
   */
  setSummaries(summaries) {
    const items = (Array.isArray(summaries) ? summaries : [])
      .filter((s) => s && Number.isInteger(Number(s.day)) && typeof s.text === "string" && s.text.trim())
      .map((s, i) => ({ day: Number(s.day), text: s.text.trim(), i }))
      .sort((a, b) => a.day - b.day || a.i - b.i);
    const sig = JSON.stringify(items.map((s) => [s.day, s.text]));
    if (sig === this.summarySig) return;
    this.summarySig = sig;
    setChildren(this.summaryList, items.map((s) =>
      h("li", { class: "day-summary", dataset: { day: s.day } },
        h("span", { class: "day" }, `Day ${s.day}: `),
        h("span", { class: "text" }, s.text))));
    this.summaryPanel.hidden = items.length === 0;
    this.summaryList.scrollTop = this.summaryList.scrollHeight; // the newest day
  }

  // ---- roster, graveyard, role card ----------------------------------------------

  /** The seats stand-ins play now (a `standins` message): labelled in the roster. */
  setStandins(slots) {
    this.standins = new Set((slots || []).map(Number));
    if (this.state) this.renderRoster(this.state);
  }

  renderRoster(state) {
    const you = state.you || null;
    const mates = new Set((you && you.teammates) || []);
    const votes = (state.trial && state.trial.votes) || {};
    const accused = state.trial && state.trial.accused;
    const winners = new Set(state.winners || []);
    const rows = (state.roster || []).map((p) => {
      const classes = ["player", p.alive ? "alive" : "dead"];
      if (you && p.slot === you.slot) classes.push("you");
      if (mates.has(p.slot)) classes.push("mate");
      if (p.slot === accused) classes.push("accused");
      if (winners.has(p.slot)) classes.push("winner");
      const nameEl = h("span", { class: "name" }, p.name);
      nameEl.style.setProperty("--hue", String(seatHue(p.slot)));
      const tags = [];
      if (you && p.slot === you.slot) {
        tags.push(h("span", { class: "tag you-tag" }, this.mode === "play" ? "you" : "viewing"));
      }
      const seat = this.seats.get(p.slot);
      if (seat && (seat.kind === "ai" || !seat.claimed)) {
        // an AI seat, or a human seat nobody took (a scripted bot plays it)
        tags.push(h("span", { class: "tag ai", testid: `seat-kind-${p.slot}`, title: "An AI plays this seat" },
          `AI · ${seat.kind === "ai" ? seat.model || seat.backend || "scripted" : "scripted"}`));
      }
      if (this.standins.has(p.slot)) {
        tags.push(h("span", { class: "tag standin", testid: `standin-${p.slot}`,
          title: "The player is away: a scripted bot plays this seat until they come back" }, "(stand-in)"));
      }
      if (p.revealed_mayor) tags.push(h("span", { class: "tag mayor" }, "Mayor"));
      if (you && you.target === p.slot) tags.push(h("span", { class: "tag target" }, "target"));
      if (mates.has(p.slot)) tags.push(h("span", { class: "tag mafia" }, "Mafia"));
      if (winners.has(p.slot)) tags.push(h("span", { class: "tag win" }, "won"));
      const count = votes[String(p.slot)];
      const role = p.role && !(p.revealed_mayor && p.role === "Mayor")
        ? h("span", { class: "role", testid: `role-${p.slot}` }, p.role)
        : null;
      return h("li", { class: classes.join(" "), testid: `roster-${p.slot}`, dataset: { slot: p.slot } },
        h("span", { class: "slot" }, String(p.slot)),
        h("span", { class: "who" }, nameEl, ...tags, role),
        count ? h("span", { class: "votes", title: "votes", testid: `votes-${p.slot}` }, String(count)) : null,
        h("span", { class: "status" }, p.alive ? "" : "dead"));
    });
    setChildren(this.rosterEl, rows);
  }

  renderGraveyard(state) {
    const dead = (state.roster || [])
      .filter((p) => !p.alive)
      .sort((a, b) => {
        const da = a.death || {};
        const db = b.death || {};
        return (da.day || 0) - (db.day || 0) || Number(!!da.at_night) - Number(!!db.at_night) || a.slot - b.slot;
      });
    const signature = JSON.stringify(dead);
    if (signature === this.graveSignature) return;
    this.graveSignature = signature;
    this.graveEmpty.hidden = dead.length > 0;
    setChildren(this.graveEl, dead.map((p) => {
      const d = p.death || {};
      const when = d.day ? `${d.at_night ? "Night" : "Day"} ${d.day}` : "";
      const causes = (d.causes || []).map((c) => FACTS.causes[c] || c).join(", ");
      const parts = [
        h("div", { class: "grave-head" },
          h("span", { class: "name" }, p.name),
          h("span", { class: "role" }, p.role || "Unknown role")),
        h("div", { class: "grave-meta" }, [when, causes].filter(Boolean).join(" · ")),
      ];
      if (d.will) {
        parts.push(h("details", { class: "will" },
          h("summary", null, "Last will"),
          h("p", { class: "prewrap", testid: `grave-will-${p.slot}` }, d.will)));
      } else if (p.death) {
        parts.push(h("div", { class: "muted small" }, "No last will."));
      }
      for (const note of d.death_notes || []) {
        parts.push(h("details", { class: "will note" },
          h("summary", null, "Death note"),
          h("p", { class: "prewrap" }, note)));
      }
      return h("li", { class: "grave", testid: `grave-${p.slot}` }, parts);
    }));
  }

  renderRoleCard(you) {
    if (!you) {
      this.roleCardEl.hidden = true;
      return;
    }
    const alive = new Map(((this.state && this.state.roster) || []).map((p) => [p.slot, p.alive]));
    const signature = JSON.stringify([you.role, you.alive, you.jailed, you.target, you.teammates, you.uses, you.prisoner, this.names.size, [...alive]]);
    this.roleCardEl.hidden = false;
    if (signature === this.roleSignature) return;
    this.roleSignature = signature;
    const faction = String(you.faction || "").toLowerCase().replace(/\s+/g, "_");
    this.roleCardEl.dataset.faction = faction;
    const extras = [];
    if (you.target !== undefined && you.target !== null) extras.push(`Your target: ${this.name(you.target)}`);
    if (you.teammates && you.teammates.length) {
      extras.push(`Mafia: ${you.teammates.map((s) => `${this.name(s)}${alive.get(s) === false ? " (dead)" : ""}`).join(", ")}`);
    }
    for (const [k, v] of Object.entries(you.uses || {})) extras.push(`${capitalize(k.replace(/_/g, " "))} left: ${v}`);
    if (you.prisoner) extras.push(`Prisoner tonight: ${this.name(you.prisoner)}`);
    setChildren(this.roleCardEl,
      h("h3", null, this.mode === "play" ? "Your role" : `${you.name}'s role`),
      h("div", { class: "role-name", testid: "role-name" }, you.role || "?"),
      you.alignment ? h("div", { class: "alignment" }, you.alignment) : null,
      !you.alive ? h("div", { class: "badge dead-badge" }, "You are dead") : null,
      you.jailed ? h("div", { class: "badge jail-badge" }, "You are in jail") : null,
      you.summary ? h("p", { class: "summary" }, you.summary) : null,
      you.goal ? h("p", { class: "goal" }, h("strong", null, "Goal: "), you.goal) : null,
      roleStats(roleFact(you.role_key)),
      extras.length ? h("ul", { class: "extras" }, extras.map((x) => h("li", null, x))) : null);
  }

  // ---- action panel (seat only) ---------------------------------------------------

  renderActions(state) {
    const legal = new Map((state.legal || []).map((a) => [a.kind, a]));
    const you = state.you || {};
    const label = (slot) => `${slot}. ${this.name(slot)}`;

    // composer: chat channels + whisper targets
    const chat = legal.get("chat");
    const whisper = legal.get("whisper");
    const to = [];
    if (chat) for (const ch of chat.options) to.push({ value: `c:${ch}`, label: CHANNEL_LABEL[ch] || capitalize(ch) });
    if (whisper) for (const t of whisper.targets) to.push({ value: `w:${t}`, label: `Whisper to ${label(t)}` });
    syncSelect(this.chatTo, to);
    this.chatTo.hidden = to.length < 2;
    this.checkDraft();
    const canTalk = to.length > 0;
    this.chatInput.disabled = !canTalk;
    this.chatSend.disabled = !canTalk;
    this.chatInput.placeholder = canTalk
      ? (chat ? `Message ${CHANNEL_LABEL[chat.options[0]] || chat.options[0]}…` : "Whisper…")
      : "You cannot talk now.";

    // vote
    const vote = legal.get("vote");
    this.votePanel.hidden = !vote;
    if (vote) {
      const votes = (state.trial && state.trial.votes) || {};
      const needed = state.trial && state.trial.needed;
      setText(this.voteHint, `${needed ? `${needed} votes put a player on trial. ` : ""}${
        you.vote ? `You vote for ${this.name(you.vote)}.` : "You have not voted."}`);
      const sig = vote.targets.join(",");
      if (this.voteButtons.dataset.signature !== sig) {
        this.voteButtons.dataset.signature = sig;
        setChildren(this.voteButtons, vote.targets.map((t) =>
          h("button", {
            type: "button", class: "target", testid: `vote-${t}`, dataset: { slot: t },
            "aria-pressed": "false", onclick: () => this.command({ type: "vote", target: t }),
          }, h("span", { class: "label" }), h("span", { class: "count" }))));
      }
      for (const b of this.voteButtons.children) {
        const t = Number(b.dataset.slot);
        setText(b.querySelector(".label"), label(t));
        setText(b.querySelector(".count"), votes[String(t)] ? String(votes[String(t)]) : "");
        b.setAttribute("aria-pressed", String(you.vote === t));
      }
      this.voteCancel.disabled = you.vote === null || you.vote === undefined;
    }

    // judgement
    const judge = legal.get("judge");
    this.judgePanel.hidden = !judge;
    if (judge) {
      const accused = state.trial && state.trial.accused;
      setText(this.judgeHint, accused ? `Is ${this.name(accused)} guilty?` : "");
      for (const [verdict, b] of Object.entries(this.judgeButtons)) {
        b.hidden = !judge.options.includes(verdict);
        b.setAttribute("aria-pressed", String((you.verdict || "abstain") === verdict));
      }
    }

    // night
    const night = legal.get("night");
    this.nightPanel.hidden = !night;
    if (night) {
      setText(this.nightTitle, `Tonight: ${abilityLabel(night.ability)}`);
      const opts = night.targets.map((t) => ({ value: t, label: t === you.slot ? `${label(t)} (yourself)` : label(t) }));
      this.nightTargets.forEach((sel, i) => {
        const used = i < night.n_targets;
        sel.hidden = !used;
        if (used) syncSelect(sel, opts, i === 0 ? "Choose a target…" : "Choose a second target…");
      });
      setText(this.nightSubmit, night.n_targets === 0 ? abilityLabel(night.ability) : "Confirm");
      const chosen = you.night_action || [];
      setText(this.nightCurrent, chosen.length
        ? `Chosen: ${night.n_targets === 0 ? "yes" : chosen.map((s) => this.name(s)).join(" and ")}`
        : "No action chosen.");
      this.nightCancel.disabled = chosen.length === 0;
    }

    // jail / seance
    for (const [ability, part] of Object.entries(this.dayPanels)) {
      const a = legal.get(ability);
      part.panel.hidden = !a;
      if (!a) continue;
      syncSelect(part.select, a.targets.map((t) => ({ value: t, label: label(t) })), "Choose a player…");
      const chosen = ability === "jail" ? you.jail_choice : null;
      setText(part.current, chosen ? `Chosen: ${this.name(chosen)}` : "");
    }

    // reveal
    this.revealPanel.hidden = !legal.get("reveal");

    // will / death note: keep what the user is typing
    for (const [kind, note] of Object.entries(this.notes)) {
      const a = legal.get(kind);
      note.panel.hidden = !a;
      const saved = you[kind] || "";
      if (!note.dirty && document.activeElement !== note.input && note.input.value !== saved) {
        note.input.value = saved;
        this.updateCounter(note);
      }
    }

    const anyAction = ["vote", "judge", "night", "jail", "seance", "reveal", "will", "death_note"].some((k) => legal.has(k));
    this.noActions.hidden = anyAction;
    if (!anyAction) {
      setText(this.noActions, state.phase === "ended" ? "The game is over." : you.alive === false ? "You are dead. You can still read the dead chat." : "Nothing to do right now.");
    }
  }

  submitNight() {
    const night = this.state && (this.state.legal || []).find((a) => a.kind === "night");
    if (!night) return;
    let targets;
    if (night.n_targets === 0) {
      targets = night.targets.slice(0, 1); // self-targeted abilities (alert, vest) name the actor
    } else {
      targets = this.nightTargets.slice(0, night.n_targets).map((s) => s.value);
      if (targets.some((v) => !v)) {
        this.showError(night.n_targets === 2 ? "Choose two players." : "Choose a player first.");
        return;
      }
      targets = targets.map(Number);
    }
    this.command({ type: "night", targets });
  }

  /** The composer's target now: "c:<channel>" or "w:<slot>" ("" when none). */
  currentChoice() {
    return this.chatTo.value || (this.chatTo.options[0] && this.chatTo.options[0].value) || "";
  }

  /** Text in the box keeps the channel (or whisper target) it was written
   * for: selected again while that channel is open, dropped (with a note)
   * once the composer offers others instead, so that a Mafia line typed at
   * night, or given back after an error, is never posted to Everyone by the
   * next Enter (docs/api.md, "Unsent chat"). While the seat cannot talk at
   * all, the text waits. */
  checkDraft() {
    if (!this.chatInput.value) {
      this.draftChoice = null;
      return;
    }
    const choice = this.draftChoice;
    const offered = [...this.chatTo.options].map((o) => o.value);
    if (choice === null || offered.length === 0) return;
    if (offered.includes(choice)) {
      this.chatTo.value = choice;
      return;
    }
    this.chatInput.value = "";
    this.draftChoice = null;
    this.updateChatCount();
    this.showError(`Your unsent message to ${this.choiceLabel(choice)} was dropped: `
      + "that chat is closed now.");
  }

  choiceLabel(choice) {
    if (choice.startsWith("w:")) return `${this.name(Number(choice.slice(2)))} (whisper)`;
    const ch = choice.slice(2);
    return CHANNEL_LABEL[ch] || capitalize(ch);
  }

  sendChat() {
    this.checkDraft();
    const text = this.chatInput.value;
    if (!text.trim()) return;
    const choice = this.currentChoice();
    let command;
    if (choice.startsWith("w:")) {
      command = { type: "whisper", target: Number(choice.slice(2)), text };
    } else {
      command = { type: "chat", text };
      // always named: a line for the Mafia that reaches the server after
      // the night has ended is refused, never posted in the day's channel
      if (choice.startsWith("c:")) command.channel = choice.slice(2);
    }
    if (this.command(command)) {
      this.pendingChat = { text, choice };
      this.chatInput.value = "";
      this.draftChoice = null;
      this.updateChatCount();
    }
  }

  command(cmd) {
    this.clearError();
    const ok = this.send(cmd);
    if (!ok) this.showError("Not connected: reconnecting…");
    return ok;
  }

  updateChatCount() {
    const n = this.chatInput.value.length;
    setText(this.chatCount, n > MAX_CHAT - 100 ? `${n}/${MAX_CHAT}` : "");
  }

  updateCounter(note) {
    const n = note.input.value.length;
    setText(note.count, `${n}/${note.max}`);
    note.count.classList.toggle("full", n >= note.max);
  }

  showError(text, candidates) {
    if (!this.errorEl) return;
    const extra = candidates && candidates.length
      ? ` Possible targets: ${candidates.map((s) => `${s}. ${this.name(s)}`).join(", ")}.`
      : "";
    setText(this.errorEl, `${text}${extra}`);
    this.errorEl.hidden = false;
    clearTimeout(this.errorTimer);
    this.errorTimer = setTimeout(() => this.clearError(), 15000);
  }

  clearError() {
    if (!this.errorEl) return;
    clearTimeout(this.errorTimer);
    this.errorEl.hidden = true;
    setText(this.errorEl, "");
  }

  /** A {"type": "error"} message from the server. */
  serverError(msg) {
    this.showError(msg.error || "The server refused that.", msg.candidates);
    if (this.pendingChat && this.chatInput && !this.chatInput.value) {
      // give the unsent text back, for the channel it was written for
      this.chatInput.value = this.pendingChat.text;
      this.draftChoice = this.pendingChat.choice;
      this.updateChatCount();
      this.pendingChat = null;
      this.checkDraft();
    }
    this.pendingChat = null;
    for (const note of Object.values(this.notes || {})) {
      if (note.status.textContent === "Saving…") setText(note.status, "Not saved");
    }
  }

  // ---- event log ---------------------------------------------------------------

  addEvents(events) {
    const stick = this.following;
    const frag = document.createDocumentFragment();
    const late = [];
    for (const e of events) {
      if (e.key === "game.start" && e.data && Array.isArray(e.data.role_list) && e.data.role_list.length) {
        setText(this.roleListEl, e.data.role_list.map((k) => String(k).replace(/_/g, " ").replace(/\b\w/g, (c) => c.toUpperCase())).join(", "));
        this.roleListPanel.hidden = false;
      }
      this.noteOwnEvent(e);
      const row = this.renderEvent(e);
      if (typeof e.v === "number" && e.v < this.lastV) late.push(row);
      else frag.appendChild(row);
      if (typeof e.v === "number" && e.v > this.lastV) this.lastV = e.v;
    }
    this.logEl.appendChild(frag);
    for (const row of late) this.insertInOrder(row);
    if (!this.state && events.length) {
      // A delayed spectator stream carries no state: follow the phase from the events.
      const last = events[events.length - 1];
      if (last.phase) setText(this.phaseEl, phaseTitle({ day: last.day, phase: last.phase }));
    }
    if (stick) this.scrollToEnd();
    else this.setUnread(this.unread + events.length);
  }

  insertInOrder(row) {
    const v = Number(row.dataset.v);
    const next = [...this.logEl.children].find((el) => Number(el.dataset.v) > v);
    this.logEl.insertBefore(row, next || null);
  }

  noteOwnEvent(e) {
    if (this.mode !== "play") return;
    if (e.key === "will.saved") this.markSaved("will");
    else if (e.key === "death_note.saved") this.markSaved("death_note");
    else if (e.key && e.key.startsWith("chat.") && e.data && this.state && this.state.you
      && e.data.author === this.state.you.slot) {
      this.pendingChat = null;
    }
  }

  markSaved(kind) {
    const note = this.notes && this.notes[kind];
    if (!note) return;
    note.dirty = false;
    setText(note.status, "Saved ✓");
  }

  renderEvent(e) {
    const cls = eventClass(e);
    const row = h("li", {
      class: `ev ${cls}`,
      dataset: { v: e.v ?? "", key: e.key || "" },
      title: `#${e.v} · ${e.phase === "night" ? "Night" : "Day"} ${e.day}${e.key ? ` · ${e.key}` : ""}`,
    });
    const d = e.data || {};
    const isChat = e.key && e.key.startsWith("chat.") && e.key !== "chat.whisper_notice" && typeof d.text === "string";
    if (isChat) {
      const channel = e.key.slice(5);
      if (channel !== "public") {
        row.appendChild(h("span", { class: "chan" }, channel === "whisper" ? "whisper" : CHANNEL_LABEL[channel] || channel));
      }
      row.appendChild(this.authorEl(d.author, d.as, e.secret && e.secret.author));
      if (channel === "whisper") {
        row.appendChild(h("span", { class: "arrow" }, " → "));
        row.appendChild(this.authorEl(d.target));
      }
      row.appendChild(h("span", { class: "sep" }, ": "));
      row.appendChild(h("span", { class: "text" }, d.text));
    } else {
      row.appendChild(h("span", { class: "text" }, e.text ?? ""));
    }
    if (Array.isArray(e.to) && e.audience !== "public") {
      row.appendChild(h("span", { class: "to" }, ` (to ${e.to.map((s) => this.name(s)).join(", ")})`));
    }
    return row;
  }

  authorEl(slot, anonymous, secretSlot) {
    if (slot === null || slot === undefined) {
      const who = anonymous || "Someone";
      return h("span", { class: "author anon" }, secretSlot ? `${who} (${this.name(secretSlot)})` : who);
    }
    const el = h("span", { class: "author" }, this.name(slot));
    el.style.setProperty("--hue", String(seatHue(slot)));
    return el;
  }

  nearBottom() {
    const el = this.logEl;
    return el.scrollHeight - el.scrollTop - el.clientHeight < 48;
  }

  scrollToEnd() {
    this.following = true;
    this.logEl.scrollTop = this.logEl.scrollHeight;
    this.setUnread(0);
  }

  setUnread(n) {
    this.unread = n;
    this.jumpEl.hidden = n === 0;
    if (n) setText(this.jumpEl, `${n} new ↓`);
  }
}
