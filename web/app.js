// ToSSim browser client: hash routes in one page.
//   #/                          home: watch the demo, play (create or join a lobby), replay
//   #/lobby/{id}                a lobby: seats, invite link; its owner starts it and changes it
//   #/play/{id}                 play the seat this browser holds (token in localStorage)
//   #/watch/{id}?viewer=..&v=.. watch live or replay (public | omniscient | seat number);
//                               v: open at that event version (a moment link);
//                               at: open at that moment (public events passed: another
//                               view's position); spoilers=1: spoilers shown
//   #/rules, #/roles            the rules and the roles (docs/rules.md, docs/roles.md)

import { ApiError, GameSocket, getJSON, listOf, loadRoleFacts, postJSON, api } from "./api.js";
import { h, setChildren, setText, syncSelect } from "./dom.js";
import { GameView, allRoleFacts, phaseTitle, resultText, roleStats, setRoleFacts } from "./render.js";
import { ReplayBar, derive, isPublic, momentOf } from "./replay.js";
import { ThinkingPanel } from "./thinking.js";
import { renderMarkdown } from "./markdown.js";

const root = document.getElementById("app");
let page = null; // the current page: {destroy()}

// A debug/test hook: the current game's state, raw commands, the socket.
const hook = {
  view: null,
  socket: null,
  replay: null,
  get state() {
    return this.view ? this.view.state : null;
  },
  get version() {
    return this.socket ? this.socket.lastVersion : 0;
  },
  send(command) {
    return this.socket ? this.socket.command(command) : false;
  },
  sendRaw(message) {
    return this.socket ? this.socket.send(message) : false;
  },
};
window.tossim = hook;

// ---- what this browser holds: seats and lobby owner tokens (per game) ---------------
// localStorage, so a second tab or a reopened browser plays the same seat.

const SEAT_KEY = (gameId) => `tossim.seat.${gameId}`;
const OWNER_KEY = (gameId) => `tossim.owner.${gameId}`;

function readJSON(key) {
  try {
    return JSON.parse(localStorage.getItem(key) || "null");
  } catch {
    return null;
  }
}

function saveSeat(seat) {
  localStorage.setItem(SEAT_KEY(seat.game_id), JSON.stringify(seat));
}

function loadSeat(gameId) {
  const seat = readJSON(SEAT_KEY(gameId));
  return seat && seat.token ? seat : null;
}

function forgetSeat(gameId) {
  localStorage.removeItem(SEAT_KEY(gameId));
}

const ownerToken = (gameId) => localStorage.getItem(OWNER_KEY(gameId));
const ownerHeaders = (gameId) => ({ Authorization: `Bearer ${ownerToken(gameId) || ""}` });

function playerName() {
  let name = localStorage.getItem("tossim.name");
  if (!name) {
    name = `Guest${Math.floor(1000 + Math.random() * 9000)}`;
    localStorage.setItem("tossim.name", name);
  }
  return name;
}

// ---- helpers -------------------------------------------------------------------

const gameIdOf = (obj) => obj && (obj.game_id || obj.id);
const enc = encodeURIComponent;

function errorText(err) {
  return err instanceof ApiError ? err.message : String(err && err.message ? err.message : err);
}

function seatsOf(obj) {
  return Array.isArray(obj && obj.seats) ? obj.seats : [];
}

function humanSeats(lobby) {
  return seatsOf(lobby).filter((s) => s.kind === "human");
}

function shortId(id) {
  const s = String(id);
  return s.length > 10 ? s.slice(0, 8) : s;
}

/** "AI · scripted" / "AI · SmolLM2" / "Human" for a seat of a lobby or game summary. */
export function seatKindLabel(s) {
  if (!s) return "";
  if (s.kind === "human") return "Human";
  return `AI · ${s.model || s.backend || "scripted"}`;
}

function summaryLine(g) {
  const bits = [];
  if (g.mode) bits.push(g.mode);
  const n = g.players || seatsOf(g).length;
  if (n) bits.push(`${n} players`);
  if (g.speed) bits.push(g.speed);
  const humans = seatsOf(g).filter((s) => s.kind === "human").length;
  bits.push(humans ? `${humans} human${humans > 1 ? "s" : ""}` : "all AI");
  if (g.phase && g.status !== "finished" && g.status !== "lobby") bits.push(phaseTitle({ day: g.day, phase: g.phase }));
  if (g.result) bits.push(resultText(g.result));
  return bits.join(" · ");
}

async function joinLobby(lobbyId, name, slot = null) {
  const res = await postJSON(`/api/lobbies/${enc(lobbyId)}/join`, slot ? { name, slot } : { name });
  const seat = { game_id: res.game_id, lobby_id: lobbyId, slot: res.slot, token: res.token, name };
  saveSeat(seat);
  return seat;
}

async function startLobby(lobbyId) {
  return api("POST", `/api/lobbies/${enc(lobbyId)}/start`, {}, ownerHeaders(lobbyId));
}

/** Create a lobby; the owner token (and the creator's seat) are kept in this browser. */
async function createLobby(body) {
  const lobby = await api("POST", "/api/lobbies", body);
  localStorage.setItem(OWNER_KEY(lobby.id), lobby.owner_token);
  if (lobby.seat) saveSeat({ ...lobby.seat, lobby_id: lobby.id, name: body.name });
  return lobby;
}

/** Where a game's page is for this browser: its seat, its lobby, or watching. */
function gameHref(g, finished) {
  const id = gameIdOf(g);
  if (g.status === "lobby") return `#/lobby/${enc(id)}`;
  if (!finished && loadSeat(id)) return `#/play/${enc(id)}`;
  return `#/watch/${enc(id)}?viewer=public`;
}

/**
 * The page for a link to a game or lobby this server does not have (a typo,
 * a game from another server or an old database): a plain message and the
 * way home, instead of a game page that would wait for a game forever.
 */
function showMissing(what, id) {
  document.title = "Not found · ToSSim";
  setChildren(root, h("section", { class: "panel narrow missing", testid: "not-found", role: "alert" },
    h("h2", null, what === "lobby" ? "No such lobby" : "No such game"),
    h("p", null, `This server has no ${what} with the id `, h("code", null, String(id)),
      ". The link may be mistyped, or the game was on another server."),
    h("p", { class: "button-row" },
      h("a", { class: "button primary", href: "#/", testid: "not-found-home" }, "Home: games and lobbies"))));
}

function field(label, id, control, hint) {
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hint || null);
}

// ---- router -------------------------------------------------------------------

function route() {
  if (page && page.destroy) page.destroy();
  page = null;
  hook.view = null;
  hook.socket = null;
  hook.replay = null;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  for (const a of document.querySelectorAll(".topbar a[data-route]")) {
    a.setAttribute("aria-current", String(a.dataset.route === (parts[0] || "home")));
  }
  if (parts[0] === "watch" && parts[1]) {
    const num = (key) => (/^\d+$/.test(params.get(key) || "") ? Number(params.get(key)) : null);
    const at = num("v") !== null ? { v: num("v") } : num("at") !== null ? { m: num("at") } : null;
    page = watchPage(parts[1], params.get("viewer") || "public", at, params.get("spoilers") === "1");
  } else if (parts[0] === "play" && parts[1]) page = playPage(parts[1]);
  else if (parts[0] === "lobby" && parts[1]) page = lobbyPage(parts[1]);
  else if (parts[0] === "roles") page = rolesPage();
  else if (parts[0] === "rules") page = docPage(parts[0]);
  else page = homePage();
  root.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

window.addEventListener("hashchange", route);
window.addEventListener("online", () => hook.socket && hook.socket.reconnectNow());

// ---- the lobby form's choices: modes, speeds, AI players ------------------------------

let catalogue = null;
/** GET /api/modes and GET /api/models (fallback: the backends every server knows). */
async function loadCatalogue() {
  if (catalogue) return catalogue;
  const [modes, models] = await Promise.allSettled([getJSON("/api/modes"), getJSON("/api/models")]);
  const modeList = modes.status === "fulfilled" ? modes.value : {
    modes: [{ key: "classic", name: "Classic", min_players: 7, max_players: 15, roles: [], role_names: [] }],
    speeds: [{ key: "standard", label: "Standard", humans: true }],
  };
  let ai;
  if (models.status === "fulfilled" && Array.isArray(models.value && models.value.models)) {
    ai = [{ value: "b:scripted", label: "Scripted bot", available: true },
      ...models.value.models.filter((m) => m.backend !== "scripted").map((m) => ({
        value: `m:${m.name}`, label: `${m.name}${m.backend ? ` (${m.backend})` : ""}`,
        available: m.available !== false, reason: m.reason || "",
      }))];
  } else {
    ai = [{ value: "b:scripted", label: "Scripted bot", available: true },
      { value: "b:local", label: "SmolLM2, bundled (local CPU)", available: true }];
  }
  catalogue = { modes: modeList.modes || [], speeds: modeList.speeds || [], ai };
  return catalogue;
}

/** A seat choice ("human", "b:scripted", "m:<name>") as a lobby seat spec. */
function seatSpec(slot, choice) {
  if (choice === "human") return { slot, kind: "human" };
  if (choice.startsWith("m:")) return { slot, kind: "ai", model: choice.slice(2) };
  return { slot, kind: "ai", backend: choice.slice(2) || "scripted" };
}

function seatChoices(cat) {
  return [{ value: "human", label: "Human player" },
    ...cat.ai.map((a) => ({ value: a.value, label: `AI: ${a.label}${a.available ? "" : " (unavailable)"}`, disabled: !a.available, title: a.reason }))];
}

function choiceSelect(id, testid, choices, value, label) {
  const sel = h("select", { id, testid, "aria-label": label },
    choices.map((c) => h("option", { value: c.value, disabled: c.disabled, title: c.title || null }, c.label)));
  sel.value = value;
  return sel;
}

// ---- home -------------------------------------------------------------------------

const FINISHED_PAGE = 8;

function homePage() {
  document.title = "ToSSim";
  const status = h("p", { class: "error", testid: "home-error", role: "alert", hidden: true });
  const showError = (text) => {
    setText(status, text);
    status.hidden = !text;
  };

  const nameInput = h("input", {
    id: "player-name", testid: "player-name", type: "text", maxlength: "24", value: playerName(),
    autocomplete: "nickname",
  });
  nameInput.addEventListener("change", () => {
    const v = nameInput.value.trim();
    if (v) localStorage.setItem("tossim.name", v);
  });
  const currentName = () => nameInput.value.trim() || playerName();

  const demoCard = h("a", { class: "start-card demo", testid: "demo-card", href: "#/" },
    h("span", { class: "start-kicker" }, "Live demo"),
    h("strong", null, "All-AI match — watch"),
    h("span", { class: "muted small", testid: "demo-status" }, "Looking for the demo game…"));
  const playCard = h("a", { class: "start-card", testid: "play-card", href: "#create-h" },
    h("span", { class: "start-kicker" }, "Play"),
    h("strong", null, "Create a lobby or join one"),
    h("span", { class: "muted small" }, "You against AI seats, or with friends (share the invite link)."));
  const replayCard = h("a", { class: "start-card", testid: "replay-card", href: "#finished-h" },
    h("span", { class: "start-kicker" }, "Replay"),
    h("strong", null, "Step through a finished game"),
    h("span", { class: "muted small" }, "Every role, every night, at your own pace."));
  for (const [card, target] of [[playCard, "create-h"], [replayCard, "finished-h"]]) {
    card.addEventListener("click", (ev) => {
      ev.preventDefault();
      const el = document.getElementById(target);
      if (el) {
        el.scrollIntoView({ behavior: "smooth", block: "start" });
        const focus = el.closest("section").querySelector("select, input, button, a.button");
        if (focus) focus.focus({ preventScroll: true });
      }
    });
  }

  const lobbiesEl = h("ul", { class: "cards", testid: "lobbies" });
  const liveEl = h("ul", { class: "cards", testid: "live-games" });
  const finishedEl = h("ul", { class: "cards", testid: "finished-games" });
  let finishedOffset = 0;
  const older = h("button", { type: "button", class: "ghost", testid: "finished-older", onclick: () => { finishedOffset += FINISHED_PAGE; refreshFinished(); } }, "Older games →");
  const newer = h("button", { type: "button", class: "ghost", testid: "finished-newer", onclick: () => { finishedOffset = Math.max(0, finishedOffset - FINISHED_PAGE); refreshFinished(); } }, "← Newer");
  const pager = h("div", { class: "button-row pager" }, newer, older);

  // ---- create form
  const modeSel = h("select", { id: "create-mode", testid: "create-mode" });
  const players = h("input", { id: "create-players", testid: "create-players", type: "number", min: "7", max: "15", value: "7", required: true, inputmode: "numeric" });
  const speed = h("select", { id: "create-speed", testid: "create-speed" });
  const seed = h("input", { id: "create-seed", testid: "create-seed", type: "number", min: "0", placeholder: "random", inputmode: "numeric" });
  const roleList = h("p", { class: "small muted role-list", testid: "create-roles" });
  // a custom mode's role list: one slot per player (a role, a category such as
  // "Town Investigative", "Random Mafia" or "Any"); the server checks it (422 names the slot)
  const customRoles = h("textarea", {
    id: "create-custom-roles", testid: "create-custom-roles", rows: "3", spellcheck: "false",
  });
  customRoles.value = "Jailor, Town Investigative, Town Protective, Random Town, Godfather, Random Mafia, Neutral Killing";
  const customField = field("Role list (one slot per player, comma-separated)", "create-custom-roles", customRoles);
  customField.hidden = true;
  const customSlots = () => customRoles.value.split(/[,\n]/).map((x) => x.trim()).filter(Boolean);
  const seatsEl = h("ol", { class: "seat-picker", testid: "create-seats" });
  const allAs = h("select", { id: "create-all", testid: "create-all", "aria-label": "Set every AI seat to" });
  const createBtn = h("button", { type: "submit", class: "primary", testid: "create-submit" }, "Create lobby");
  const hint = h("p", { class: "hint", testid: "create-hint" });
  const speedHint = h("p", { class: "hint", testid: "speed-hint" });
  const choices = new Map(); // slot -> choice value
  choices.set(1, "human");
  let cat = null;

  const modeOf = () => (cat && cat.modes.find((m) => m.key === modeSel.value)) || null;
  const renderSeats = () => {
    if (!cat) return;
    const n = Math.max(7, Math.min(15, Number(players.value) || 7));
    const opts = seatChoices(cat);
    setChildren(seatsEl, Array.from({ length: n }, (_, i) => {
      const slot = i + 1;
      const sel = choiceSelect(`seat-${slot}`, `create-seat-${slot}`, opts, choices.get(slot) || "b:scripted", `Seat ${slot}`);
      sel.addEventListener("change", () => {
        choices.set(slot, sel.value);
        syncForm();
      });
      return h("li", null, h("label", { for: `seat-${slot}` }, `Seat ${slot}`), sel);
    }));
  };
  const syncForm = () => {
    if (!cat) return;
    const mode = modeOf();
    if (mode) {
      players.min = String(mode.custom ? 7 : mode.min_players);
      players.max = String(mode.max_players);
    }
    customField.hidden = !(mode && mode.custom);
    players.readOnly = Boolean(mode && mode.custom);
    if (mode && mode.custom && String(customSlots().length) !== players.value) {
      players.value = String(customSlots().length);
      renderSeats();
    }
    const n = Math.max(7, Math.min(15, Number(players.value) || 7));
    const humans = Array.from({ length: n }, (_, i) => choices.get(i + 1) || "b:scripted").filter((c) => c === "human").length;
    for (const o of speed.options) {
      const s = cat.speeds.find((x) => x.key === o.value);
      o.disabled = Boolean(humans && s && !s.humans);
    }
    if (speed.selectedOptions[0] && speed.selectedOptions[0].disabled) speed.value = "standard";
    const chosen = cat.speeds.find((x) => x.key === speed.value);
    setText(speedHint, chosen ? chosen.label.split(": ").slice(1).join(": ") : "");
    if (mode && mode.custom) {
      setText(roleList, `Roles dealt (${customSlots().length}): ${customSlots().join(", ")}`);
    } else if (mode && mode.role_names && mode.role_names.length) {
      setText(roleList, `Roles dealt (${n}): ${mode.role_names.slice(0, n).join(", ")}`);
    }
    setText(hint, humans
      ? `You take the first human seat${humans > 1 ? `; ${humans - 1} more human seat${humans > 2 ? "s wait" : " waits"} for friends (invite link on the next page)` : ""}. You start the game when you are ready.`
      : "An all-AI game: it starts at once and you watch every role (omniscient view).");
  };
  players.addEventListener("input", () => {
    renderSeats();
    syncForm();
  });
  modeSel.addEventListener("change", syncForm);
  customRoles.addEventListener("input", syncForm);
  speed.addEventListener("change", syncForm);
  allAs.addEventListener("change", () => {
    if (!allAs.value) return;
    const n = Number(players.value) || 7;
    for (let slot = 1; slot <= n; slot += 1) if (choices.get(slot) !== "human") choices.set(slot, allAs.value);
    allAs.value = "";
    renderSeats();
    syncForm();
  });

  loadCatalogue().then((c) => {
    cat = c;
    syncSelect(modeSel, c.modes.map((m) => ({ value: m.key, label: `${m.name} (${m.min_players}-${m.max_players} players)` })));
    syncSelect(speed, c.speeds.map((s) => ({ value: s.key, label: s.label.split(":")[0] })));
    speed.value = "standard";
    syncSelect(allAs, c.ai.filter((a) => a.available).map((a) => ({ value: a.value, label: a.label })), "Set every AI seat to…");
    renderSeats();
    syncForm();
  });

  const form = h("form", {
    class: "create-form", testid: "create-form",
    onsubmit: async (ev) => {
      ev.preventDefault();
      showError("");
      const n = Number(players.value);
      const mode = modeOf();
      const lo = mode ? Math.max(7, mode.min_players) : 7;
      const hi = mode ? mode.max_players : 15;
      if (!(n >= lo && n <= hi)) {
        return showError(mode && mode.custom ? `A role list of ${lo} to ${hi} slots (one per player).`
          : `Players: ${lo} to ${hi}.`);
      }
      const seats = Array.from({ length: n }, (_, i) => seatSpec(i + 1, choices.get(i + 1) || "b:scripted"));
      const humans = seats.filter((s) => s.kind === "human").length;
      const body = { mode: modeSel.value || "classic", players: n, speed: speed.value || "standard", seats };
      if (mode && mode.custom) body.roles = customSlots();
      if (humans) body.name = currentName();
      if (seed.value !== "") body.seed = Number(seed.value);
      createBtn.disabled = true;
      try {
        const lobby = await createLobby(body);
        if (humans) {
          location.hash = `#/lobby/${enc(lobby.id)}`;
        } else {
          await startLobby(lobby.id);
          location.hash = `#/watch/${enc(lobby.id)}?viewer=omniscient`;
        }
      } catch (err) {
        showError(`Could not create the lobby: ${errorText(err)}`);
      } finally {
        createBtn.disabled = false;
      }
    },
  },
  h("div", { class: "form-grid" },
    field("Mode", "create-mode", modeSel),
    field("Players", "create-players", players),
    field("Phase speed", "create-speed", speed),
    field("Seed", "create-seed", seed)),
  customField, speedHint, roleList,
  h("fieldset", { class: "seats-fieldset" },
    h("legend", null, "Who plays each seat"), allAs, seatsEl),
  hint, createBtn);

  const renderLobbies = (lobbies) => {
    if (!lobbies.length) {
      setChildren(lobbiesEl, h("li", { class: "empty muted" }, "No open lobbies. Create one!"));
      return;
    }
    setChildren(lobbiesEl, lobbies.map((l) => {
      const seats = humanSeats(l);
      const free = seats.filter((s) => !s.claimed);
      const mine = loadSeat(l.id);
      return h("li", { class: "card", testid: `lobby-${l.id}` },
        h("div", { class: "card-main" },
          h("div", { class: "card-title" }, `Lobby ${shortId(l.id)}`, ownerToken(l.id) ? h("span", { class: "tag" }, "yours") : null),
          h("div", { class: "muted small" }, summaryLine(l)),
          h("div", { class: "small" }, `Human seats: ${seats.length - free.length}/${seats.length} taken`)),
        h("div", { class: "card-actions" },
          h("a", { class: `button ${mine || free.length ? "primary" : ""}`, testid: `open-lobby-${l.id}`, href: `#/lobby/${enc(l.id)}` },
            mine ? "Open" : free.length ? "Join" : "View")));
    }));
  };

  const renderGames = (el, games, finished) => {
    if (!games.length) {
      setChildren(el, h("li", { class: "empty muted" }, finished ? "No finished games yet." : "No games in progress."));
      return;
    }
    setChildren(el, games.map((g) => {
      const id = gameIdOf(g);
      const mine = loadSeat(id);
      return h("li", { class: `card${g.demo ? " demo-game" : ""}`, testid: `game-${id}` },
        h("div", { class: "card-main" },
          h("div", { class: "card-title" }, g.demo ? "Live demo: all-AI match" : `Game ${shortId(id)}`,
            mine ? h("span", { class: "tag you-tag" }, "your seat") : null),
          h("div", { class: "muted small" }, summaryLine(g))),
        h("div", { class: "card-actions" },
          mine && !finished ? h("a", { class: "button primary", href: `#/play/${enc(id)}` }, "Play") : null,
          h("a", {
            class: "button", testid: `watch-${id}`,
            href: `#/watch/${enc(id)}?viewer=public`, // a replay: no spoilers until asked
          }, finished ? "Replay" : "Watch")));
    }));
  };

  let stopped = false;
  let timer = null;
  async function refreshFinished() {
    try {
      const games = listOf(await getJSON(`/api/games?status=finished&limit=${FINISHED_PAGE + 1}&offset=${finishedOffset}`), "games");
      if (stopped) return;
      renderGames(finishedEl, games.slice(0, FINISHED_PAGE), true);
      older.hidden = games.length <= FINISHED_PAGE;
      newer.hidden = finishedOffset === 0;
      pager.hidden = older.hidden && newer.hidden;
    } catch (err) {
      showError(`Cannot load the finished games: ${errorText(err)}`);
    }
  }
  const refresh = async () => {
    const results = await Promise.allSettled([
      getJSON("/api/lobbies"),
      getJSON("/api/games?status=live"),
    ]);
    if (stopped) return;
    const [lobbies, live] = results;
    if (lobbies.status === "fulfilled") renderLobbies(listOf(lobbies.value, "lobbies").filter((l) => l.status === "lobby"));
    if (live.status === "fulfilled") {
      const games = listOf(live.value, "games");
      renderGames(liveEl, games, false);
      const demo = games.find((g) => g.demo);
      demoCard.href = demo ? `#/watch/${enc(demo.id)}?viewer=omniscient` : "#/";
      demoCard.classList.toggle("disabled", !demo);
      setText(demoCard.querySelector("[data-testid=demo-status]"), demo
        ? `${summaryLine(demo)}. Every role visible, AI seats think out loud.`
        : "No demo running right now (start the server with --demo).");
    }
    const failed = results.find((r) => r.status === "rejected");
    if (failed) showError(`Cannot load the lists: ${errorText(failed.reason)}`);
    if (finishedOffset === 0) refreshFinished();
    timer = setTimeout(refresh, 4000);
  };

  setChildren(root,
    h("div", { class: "home", testid: "home" },
      h("section", { class: "panel intro" },
        h("h1", null, "Town of Salem, with humans and AIs"),
        h("p", null, "Every seat is a person in a browser or an AI. New here? Watch the demo, then play a game against AI seats. ",
          h("a", { href: "#/rules" }, "How to play"), " · ", h("a", { href: "#/roles" }, "All roles")),
        h("div", { class: "start-cards" }, demoCard, playCard, replayCard),
        h("div", { class: "field inline" }, h("label", { for: "player-name" }, "Your name"), nameInput)),
      status,
      h("div", { class: "home-grid" },
        h("section", { class: "panel", "aria-labelledby": "create-h" },
          h("h2", { id: "create-h" }, "Create a lobby"), form),
        h("section", { class: "panel", "aria-labelledby": "lobbies-h" },
          h("h2", { id: "lobbies-h" }, "Open lobbies"), lobbiesEl),
        h("section", { class: "panel", "aria-labelledby": "live-h" },
          h("h2", { id: "live-h" }, "Live games"), liveEl),
        h("section", { class: "panel", "aria-labelledby": "finished-h" },
          h("h2", { id: "finished-h" }, "Finished games"), finishedEl, pager))));
  refresh();
  return {
    destroy() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

// ---- lobby ---------------------------------------------------------------------------

function lobbyPage(lobbyId) {
  document.title = "Lobby · ToSSim";
  const owner = Boolean(ownerToken(lobbyId));
  const error = h("p", { class: "error", role: "alert", testid: "lobby-error", hidden: true });
  const showError = (text) => {
    setText(error, text);
    error.hidden = !text;
  };
  const title = h("h2", { testid: "lobby-title" }, `Lobby ${shortId(lobbyId)}`);
  const line = h("p", { class: "muted", testid: "lobby-summary" });
  const roles = h("p", { class: "small muted role-list", testid: "lobby-roles" });
  const invite = h("input", { type: "text", readonly: true, id: "invite", testid: "invite-link", value: `${location.origin}${location.pathname}#/lobby/${lobbyId}` });
  const copy = h("button", {
    type: "button", class: "ghost", testid: "invite-copy",
    onclick: async () => {
      invite.select();
      try {
        await navigator.clipboard.writeText(invite.value);
        setText(copy, "Copied ✓");
      } catch {
        setText(copy, "Select and copy");
      }
    },
  }, "Copy");
  const seatsEl = h("ol", { class: "seat-list lobby-seats", testid: "lobby-seats" });
  const speedSel = h("select", { id: "lobby-speed", testid: "lobby-speed", "aria-label": "Phase speed" });
  const startBtn = h("button", { type: "button", class: "primary", testid: "start-game" }, "Start game");
  const ownerPanel = h("div", { class: "owner-controls", testid: "owner-controls", hidden: !owner },
    field("Phase speed", "lobby-speed", speedSel), startBtn);
  const joinBtn = h("button", { type: "button", class: "primary", testid: "lobby-join", hidden: true }, "Join this game");
  // someone who followed an invite picks the name the others will see
  const storedName = localStorage.getItem("tossim.name") || "";
  const joinName = h("input", { type: "text", id: "join-name", testid: "join-name", maxlength: "24",
    autocomplete: "nickname", value: storedName, placeholder: "Your name" });
  const joinNameField = h("label", { class: "join-name", hidden: true, for: "join-name" }, "Your name ", joinName);
  const leaveBtn = h("button", { type: "button", class: "ghost", testid: "leave-seat", hidden: true }, "Leave seat");
  const note = h("p", { class: "hint", testid: "lobby-note" });
  // shown when the server frees this browser's claim (the host removed us)
  const removed = h("div", { class: "notice removed", testid: "removed-notice", role: "alert", hidden: true });

  setChildren(root, h("section", { class: "panel lobby-page", testid: "lobby-page" },
    title, line, roles,
    h("div", { class: "field invite" }, h("label", { for: "invite" }, "Invite link"),
      h("div", { class: "button-row" }, invite, copy)),
    removed, error, seatsEl, note, h("div", { class: "button-row" }, joinNameField, joinBtn, leaveBtn), ownerPanel,
    h("p", null, h("a", { href: "#/", class: "button ghost" }, "Back to lobbies"))));

  let cat = null;
  let lobby = null;
  let stopped = false;
  let timer = null;
  let seatSocket = null; // the held seat's socket: closed 4401 when its claim is freed
  let wasRemoved = false;

  const renderRemoved = () => {
    removed.hidden = !wasRemoved || Boolean(loadSeat(lobbyId));
    if (removed.hidden || !lobby) return;
    const free = humanSeats(lobby).filter((s) => !s.claimed);
    setChildren(removed,
      h("strong", null, "You were removed from this lobby. "),
      h("span", null, free.length ? "You can join again: pick a free seat."
        : "No human seat is free now: you can watch once it starts."),
      h("div", { class: "button-row" }, free.map((s) => h("button", {
        type: "button", class: "primary", testid: `rejoin-${s.slot}`,
        onclick: async (ev) => {
          ev.currentTarget.disabled = true;
          try {
            await joinLobby(lobbyId, joinName.value.trim() || playerName(), s.slot);
            await poll(false);
          } catch (err) {
            showError(`Could not join: ${errorText(err)}`);
            await poll(false);
          }
        },
      }, `Take seat ${s.slot}`))));
  };

  /** Follow the held seat's socket: the server closes it (4401) once the claim is freed. */
  const watchSeat = () => {
    const mine = loadSeat(lobbyId);
    if (stopped || !mine || (seatSocket && seatSocket.token === mine.token)) return;
    if (seatSocket) seatSocket.close();
    const socket = new GameSocket(`/ws/games/${enc(lobbyId)}`, {
      token: mine.token,
      onHello: () => poll(false), // the game started: go to it
      onStatus: (status, detail) => {
        if (status !== "closed" || !/4401/.test(detail || "")) return;
        if (seatSocket === socket) seatSocket = null;
        const held = loadSeat(lobbyId);
        if (!held || held.token !== mine.token) return; // left on purpose (here or in another tab)
        forgetSeat(lobbyId);
        wasRemoved = true;
        poll(false);
      },
    });
    seatSocket = socket;
    socket.connect();
  };

  const patch = async (body) => {
    showError("");
    try {
      lobby = await api("PATCH", `/api/lobbies/${enc(lobbyId)}`, body, ownerHeaders(lobbyId));
      render();
    } catch (err) {
      showError(`Could not change the lobby: ${errorText(err)}`);
      render();
    }
  };

  const render = () => {
    if (!lobby) return;
    const mine = loadSeat(lobbyId);
    setText(line, summaryLine(lobby));
    const mode = cat && cat.modes.find((m) => m.key === lobby.mode);
    if (lobby.roles) setText(roles, `Roles dealt: ${lobby.roles.join(", ")}`);
    else if (mode && mode.role_names) setText(roles, `Roles dealt: ${mode.role_names.slice(0, lobby.players).join(", ")}`);
    const opts = cat ? seatChoices(cat) : [];
    setChildren(seatsEl, seatsOf(lobby).map((s) => {
      const you = mine && mine.slot === s.slot;
      const parts = [h("span", { class: "slot" }, String(s.slot))];
      if (s.kind === "human" && s.claimed) {
        parts.push(h("span", { class: "who" }, h("span", { class: "name" }, s.name), you ? h("span", { class: "tag you-tag" }, "you") : null));
        if (owner && !you) {
          parts.push(h("button", {
            type: "button", class: "ghost danger-text", testid: `kick-${s.slot}`,
            onclick: async () => {
              try {
                lobby = await api("DELETE", `/api/lobbies/${enc(lobbyId)}/seats/${s.slot}`, undefined, ownerHeaders(lobbyId));
                render();
              } catch (err) {
                showError(`Could not remove the player: ${errorText(err)}`);
              }
            },
          }, "Remove"));
        }
      } else if (owner && cat) {
        const value = s.kind === "human" ? "human" : s.model ? `m:${s.model}` : `b:${s.backend || "scripted"}`;
        const sel = choiceSelect(`lobby-seat-${s.slot}`, `lobby-seat-${s.slot}`, opts, value, `Seat ${s.slot}`);
        sel.addEventListener("change", () => patch({ seats: [seatSpec(s.slot, sel.value)] }));
        parts.push(h("span", { class: "who" }, sel));
      } else {
        parts.push(h("span", { class: "who" }, s.kind === "human" ? h("span", { class: "muted" }, "free human seat") : seatKindLabel(s)));
      }
      return h("li", { class: "lobby-seat", testid: `lobby-seat-row-${s.slot}` }, parts);
    }));
    const free = humanSeats(lobby).filter((s) => !s.claimed);
    renderRemoved();
    joinBtn.hidden = Boolean(mine) || free.length === 0;
    joinNameField.hidden = joinBtn.hidden;
    leaveBtn.hidden = !mine;
    setText(note, mine
      ? `You are ${mine.name}, seat ${mine.slot}. ${owner ? "Start when everyone is in; free human seats are played by scripted bots." : "The lobby's owner starts the game."}`
      : free.length ? "A human seat is free: join it." : "No free human seat: you can watch once it starts.");
    if (owner && cat) {
      syncSelect(speedSel, cat.speeds.map((sp) => ({ value: sp.key, label: sp.label.split(":")[0] })));
      const humans = humanSeats(lobby).length;
      for (const o of speedSel.options) {
        const sp = cat.speeds.find((x) => x.key === o.value);
        o.disabled = Boolean(humans && sp && !sp.humans);
      }
      speedSel.value = lobby.speed;
    }
  };
  speedSel.addEventListener("change", () => patch({ speed: speedSel.value }));
  startBtn.addEventListener("click", async () => {
    startBtn.disabled = true;
    showError("");
    try {
      await startLobby(lobbyId);
      goToGame();
    } catch (err) {
      showError(`Could not start: ${errorText(err)}`);
      startBtn.disabled = false;
    }
  });
  joinBtn.addEventListener("click", async () => {
    joinBtn.disabled = true;
    try {
      const chosen = joinName.value.trim();
      if (chosen) localStorage.setItem("tossim.name", chosen);
      await joinLobby(lobbyId, chosen || playerName());
      await poll(false);
    } catch (err) {
      showError(`Could not join: ${errorText(err)}`);
    } finally {
      joinBtn.disabled = false;
    }
  });
  leaveBtn.addEventListener("click", async () => {
    const mine = loadSeat(lobbyId);
    if (!mine) return;
    if (seatSocket) {
      seatSocket.close(); // leaving on purpose: its 4401 is no news
      seatSocket = null;
    }
    try {
      lobby = await api("DELETE", `/api/lobbies/${enc(lobbyId)}/seats/${mine.slot}`, undefined, { Authorization: `Bearer ${mine.token}` });
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409)) return showError(`Could not leave: ${errorText(err)}`);
    }
    forgetSeat(lobbyId);
    render();
  });

  const goToGame = () => {
    location.hash = loadSeat(lobbyId) ? `#/play/${enc(lobbyId)}` : `#/watch/${enc(lobbyId)}?viewer=public`;
  };

  async function poll(again = true) {
    if (stopped) return;
    try {
      lobby = await getJSON(`/api/lobbies/${enc(lobbyId)}`);
      if (stopped) return;
      if (lobby.status !== "lobby") return goToGame();
      render();
      watchSeat();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && !lobby) {
        stopped = true; // no such lobby: say so, stop asking
        return showMissing("lobby", lobbyId);
      }
      showError(`Cannot load the lobby: ${errorText(err)}`);
      if (err instanceof ApiError && err.status === 404) return; // gone: stop asking
    }
    if (again && !stopped) timer = setTimeout(poll, 2000);
  }
  loadCatalogue().then((c) => {
    cat = c;
    render();
  });
  poll();
  return {
    destroy() {
      stopped = true;
      clearTimeout(timer);
      if (seatSocket) seatSocket.close();
    },
  };
}

// ---- shared game-page plumbing ------------------------------------------------------

/**
 * The "Earlier days" panel of a game page: GET /api/games/{id} (its
 * `summaries`, one per finished day) when the page opens, then again only
 * when the server says a summary was written or replaced ({"type":
 * "summary"}: the extractive one at nightfall, a model's when it comes), when
 * its socket says hello (notices from before, or from while a reconnect was
 * away, never reach it), and when the socket reports the game over. A delayed
 * spectator's stream carries no notices: it fetches when its day or phase
 * changes instead. No timer: every fetch answers a message.
 * At most one request is in flight; changes meanwhile ask for one more after it.
 *
 * Only days the page has seen end are shown (a delayed spectator stream may
 * still be in a day the server has already summarised).
 */
function followSummaries(gameId, view, opts = {}) {
  const path = `/api/games/${encodeURIComponent(gameId)}`;
  const finished = Boolean(opts.finished); // a replay: nothing changes any more
  let all = [];
  let at = null; // {day, phase} the page shows; null until the first message
  let busy = false;
  let again = false;
  let stopped = false;

  const dayOver = () => at && (at.phase === "night" || at.phase === "ended");
  const shown = (s) => at && (Number(s.day) < at.day || (Number(s.day) === at.day && dayOver()));
  const show = () => view.setSummaries(all.filter(shown));

  async function refresh() {
    if (stopped) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const game = await getJSON(path);
      if (!stopped) {
        all = game && Array.isArray(game.summaries) ? game.summaries : [];
        if (game && view.setGame) view.setGame(game);
        show();
      }
    } catch {
      // keep what is shown; asked again below or at the next phase change
    } finally {
      busy = false;
      if (!stopped && again) {
        again = false;
        refresh();
      }
    }
  }

  if (opts.initial) {
    // the page fetched the summary already
    all = Array.isArray(opts.initial.summaries) ? opts.initial.summaries : [];
    if (view.setGame) view.setGame(opts.initial);
  } else {
    refresh();
  }
  return {
    refresh() {
      if (!finished) refresh();
    },
    /** The page moved to (day, phase); `fetch`: a stream without summary notices. */
    phase(day, phase, fetch = false) {
      const first = at === null;
      at = { day: Number(day) || 0, phase };
      show();
      if (finished || !fetch) return;
      if (!first) refresh(); // the first one is the page opening: fetched already
    },
    stop() {
      stopped = true;
    },
  };
}

function connectGame(path, view, extra = {}) {
  const summaries = extra.summaries || null;
  let phaseKey = "";
  const notePhase = (day, phase, delayed) => {
    if (!phase) return;
    const key = `${day}|${phase}`;
    if (key === phaseKey) return;
    phaseKey = key;
    if (summaries) summaries.phase(day, phase, delayed);
  };
  const socket = new GameSocket(path, {
    onHello: (msg) => {
      // notices come from now on: ask once for what came before (a summary
      // written since the page's first fetch, or while a reconnect was away)
      if (summaries) summaries.refresh();
      if (extra.onHello) extra.onHello(msg);
    },
    onUpdate: (events, state) => {
      if (extra.onEvents && extra.onEvents(events, state) === false) {
        if (state && state.phase === "ended") socket.finished = true;
        return; // the page shows an earlier moment (a replay of a live game)
      }
      view.update(events, state);
      if (state) {
        if (state.phase === "ended") socket.finished = true;
        extra.onState && extra.onState(state);
        document.title = `${phaseTitle(state)} · ToSSim`;
        notePhase(state.day, state.phase, false);
      } else {
        // A delayed spectator stream carries no state (nor summary notices):
        // follow the events' phase, and fetch summaries as it changes.
        const last = [...events].reverse().find((e) => e.phase);
        if (last) notePhase(last.day, last.phase, true);
      }
    },
    onError: (msg) => view.serverError ? view.serverError(msg) : null,
    onSummary: () => summaries && summaries.refresh(),
    onThinking: (msg) => extra.onThinking && extra.onThinking(msg),
    onNext: (lobby) => extra.onNext && extra.onNext(lobby),
    onStandins: (msg) => {
      view.setStandins(Array.isArray(msg.slots) ? msg.slots : []);
      if (extra.onStandins) extra.onStandins(msg);
    },
    onStatus: (status, detail) => {
      view.setConnection(status, detail);
      // The last day's summary is written as the game ends, after its last events.
      if (status === "ended" && summaries) summaries.refresh();
      extra.onStatus && extra.onStatus(status, detail);
    },
  });
  hook.view = view;
  hook.socket = socket;
  socket.connect();
  return socket;
}

// ---- watch: live games and replays in one viewer ---------------------------------------

/**
 * A game page for spectators. A live game streams (its socket), and the replay
 * bar lets the viewer jump back and return to live; a finished game loads its
 * replay (GET /api/games/{id}/replay?viewer=...) and opens at the start, or
 * at `openAt` ({v}: a moment link; {m}: the moment another view was at), with
 * spoilers hidden unless `spoilersShown`.
 */
function watchPage(gameId, viewer, openAt, spoilersShown) {
  document.title = "Watching · ToSSim";
  const select = h("select", { id: "viewer", testid: "viewer-select", "aria-label": "Point of view" });
  const options = (roster, finished) => [
    { value: "public", label: "Public view" },
    { value: "omniscient", label: finished ? "Omniscient (all roles, with spoilers)" : "Omniscient (all roles, AI thinking)" },
    ...roster.map((p) => ({ value: String(p.slot), label: `As ${p.slot}. ${p.name}` })),
  ];
  syncSelect(select, options([]));
  const ensureOption = () => {
    if (![...select.options].some((o) => o.value === viewer)) {
      select.appendChild(h("option", { value: viewer }, /^\d+$/.test(viewer) ? `As player ${viewer}` : viewer));
    }
    select.value = viewer;
  };
  ensureOption();
  select.addEventListener("change", () => {
    // the same moment of the game (event numbers differ between views)
    const at = bar && !bar.atLive ? `&at=${momentOf(events, bar.n)}` : "";
    const spoil = bar && bar.spoilers ? "&spoilers=1" : "";
    location.hash = `#/watch/${enc(gameId)}?viewer=${enc(select.value)}${at}${spoil}`;
  });
  const toolbar = h("div", { class: "toolbar" },
    h("label", { for: "viewer", class: "small muted" }, "View"), select);

  const notice = h("div", { class: "notice", testid: "watch-notice", role: "status", hidden: true });
  const endPanel = h("div", { class: "panel end-panel", testid: "end-panel", hidden: true });
  const barSlot = h("div", { class: "bar-slot" });
  const body = h("div", { class: "game-slot" });
  const thinkingSlot = h("div", { class: "thinking-slot" });
  setChildren(root, h("div", { class: "watch-page", testid: "watch-page" }, notice, endPanel, barSlot, body, thinkingSlot));
  const view = new GameView(body, { mode: "watch", send: () => false, toolbar });
  hook.view = view;
  let summaries = null; // followSummaries, once the game's summary is here
  const viewerSlot = /^\d+$/.test(viewer) ? Number(viewer) : null;
  const thinking = viewer === "omniscient" ? new ThinkingPanel(thinkingSlot) : null;

  let events = []; // every event of this view so far, in order
  let liveState = null;
  let replayData = null;
  let socket = null;
  let bar = null;
  let stopped = false;
  let rosterSig = "";
  const momentLink = (v) => `#/watch/${enc(gameId)}?viewer=${enc(viewer)}&v=${v}`;

  const show = (n, { spoilers, live }) => {
    if (live && liveState) {
      view.showEvents(events, liveState);
      view.setConnection(liveState.phase === "ended" ? "ended" : "live", "");
    } else {
      // a finished game's replay keeps every view's secrets behind the
      // spoiler switch; a live game's history shows what this view saw
      const hidden = spoilers || Boolean(socket);
      const state = derive(events, n, { spoilers, viewerSlot, hidden });
      view.showEvents(events.slice(0, n).filter((e) => hidden || isPublic(e)), state);
      view.setConnection(socket && !socket.finished ? "history" : "replay", "");
      // a replay shows the summaries of the days that ended before this moment
      if (summaries && !socket) summaries.phase(state.day, state.phase);
    }
    if (thinking) thinking.showUntil(live ? null : events[n - 1] || null);
  };
  const makeBar = (live) => {
    bar = new ReplayBar({
      live,
      spoilers: spoilersShown,
      onSeek: show,
      momentLink,
      fileName: `tossim-${shortId(gameId)}-${viewer}.json`,
      exportData: () => replayData || { format: 1, viewer, game_id: gameId, events },
    });
    hook.replay = bar;
    barSlot.classList.toggle("live", live); // a live game comes first on a phone
    setChildren(barSlot, bar.el);
  };

  let endSummary = null;
  const showEnd = (summary) => {
    endSummary = summary;
    const mine = loadSeat(gameId);
    // no result here: it would spoil the replay (the result banner shows it at the end)
    setChildren(endPanel,
      h("strong", null, "This game is over. "),
      h("span", { class: "muted" }, "Replay it below, or play another."),
      nextOffer(gameId, summary),
      h("div", { class: "button-row" },
        playAgainButton(summary, gameId),
        h("a", { class: "button", href: "#/", testid: "back-to-lobbies" }, "Back to lobbies"),
        mine ? h("a", { class: "button ghost", href: `#/play/${enc(gameId)}` }, "Your seat") : null));
    endPanel.hidden = false;
  };

  const startReplay = async (summary) => {
    try {
      replayData = await getJSON(`/api/games/${enc(gameId)}/replay?viewer=${enc(viewer)}`);
    } catch (err) {
      setChildren(notice, `Cannot load this replay (${errorText(err)}). `,
        viewer !== "public" ? h("a", { href: `#/watch/${enc(gameId)}?viewer=public` }, "Public view") : null);
      notice.hidden = false;
      return;
    }
    if (stopped) return;
    events = replayData.events || [];
    const names = (summary && summary.names) || [];
    syncSelect(select, options(names.map((name, i) => ({ slot: i + 1, name })), true));
    ensureOption();
    makeBar(false);
    bar.setEvents(events);
    if (thinking) thinking.load(gameId); // the replay was served: the view is allowed
    if (openAt && openAt.v !== undefined) bar.seekVersion(openAt.v);
    else if (openAt) bar.seekMoment(openAt.m);
    else bar.seek(0);
    if (summary) showEnd(summary);
  };

  const startLive = () => {
    makeBar(true);
    socket = connectGame(
      `/ws/games/${enc(gameId)}/watch?viewer=${enc(viewer)}`, view, {
        summaries,
        // The server says hello only once it has accepted this point of view
        // (it refuses omniscient for a live game with a human seat, and the
        // turns route would refuse it too): only then are stored turns asked for.
        onHello: () => thinking && thinking.load(gameId),
        onEvents: (fresh, state) => {
          events = events.concat(fresh).filter((e, i, all) => i === 0 || all[i - 1].v !== e.v);
          if (state) liveState = state;
          const atLive = bar.atLive;
          bar.setEvents(events);
          if (openAt !== null && fresh.length) {
            const at = openAt;
            openAt = null;
            if (at.v !== undefined) bar.seekVersion(at.v);
            else bar.seekMoment(at.m);
            return false;
          }
          if (state && state.phase === "ended") {
            getJSON(`/api/games/${enc(gameId)}`).then((s) => !stopped && showEnd(s)).catch(() => {});
          }
          return atLive;
        },
        onThinking: (msg) => thinking && thinking.add(msg),
        onNext: (lobby) => endSummary && showEnd({ ...endSummary, next_lobby: lobby }),
        onState: (state) => {
          const sig = (state.roster || []).map((p) => p.name).join("|");
          if (sig !== rosterSig) {
            rosterSig = sig;
            syncSelect(select, options(state.roster || [], false));
            ensureOption();
          }
        },
        onStatus: (status, detail) => {
          if (status === "closed") {
            const forbidden = /4403/.test(detail || "");
            setChildren(notice,
              forbidden
                ? "This point of view is not available while the game is live and has a human seat. "
                : `Cannot watch this game (${detail}). `,
              viewer !== "public" ? h("a", { href: `#/watch/${enc(gameId)}?viewer=public` }, "Watch the public view") : null);
            notice.hidden = false;
          }
        },
      });
  };

  getJSON(`/api/games/${enc(gameId)}`).then((summary) => {
    if (stopped) return;
    if (summary.status === "lobby") {
      location.hash = `#/lobby/${enc(gameId)}`;
      return;
    }
    summaries = followSummaries(gameId, view, { initial: summary, finished: summary.status === "finished" });
    if (summary.status === "finished") startReplay(summary);
    else startLive();
  }).catch((err) => {
    if (stopped) return;
    if (err instanceof ApiError && err.status === 404) {
      stopped = true; // nothing to connect to: the page says so, with no game shell
      view.destroy();
      showMissing("game", gameId);
      return;
    }
    setChildren(notice, `Cannot open this game: ${errorText(err)}. `, h("a", { href: "#/" }, "Home"));
    notice.hidden = false;
  });

  return {
    destroy() {
      stopped = true;
      if (summaries) summaries.stop();
      if (socket) socket.close();
      if (bar) bar.destroy();
      if (thinking) thinking.destroy();
      view.destroy();
    },
  };
}

/**
 * A finished game's next lobby for one of its players (POST
 * /api/games/{id}/next, this browser's seat token as the bearer): the first
 * player to ask makes it (and owns it), everyone who asks gets a seat in the
 * same lobby (docs/api.md, "Play again").
 */
async function goToNextLobby(gameId) {
  const seat = loadSeat(gameId);
  const res = await api("POST", `/api/games/${enc(gameId)}/next`, {}, { Authorization: `Bearer ${seat.token}` });
  if (res.owner_token) localStorage.setItem(OWNER_KEY(res.id), res.owner_token);
  if (res.seat) saveSeat({ ...res.seat, lobby_id: res.id, name: seat.name || playerName() });
  location.hash = `#/lobby/${enc(res.id)}`;
}

/** A played game whose next lobby exists: say so and offer it (a seat in it, for this game's players). */
function nextOffer(gameId, summary) {
  if (!summary || !summary.next_lobby) return null;
  const mine = loadSeat(gameId);
  const join = mine
    ? h("button", {
      type: "button", class: "primary", testid: "next-lobby",
      onclick: async (ev) => {
        const btn = ev.currentTarget;
        btn.disabled = true;
        try {
          await goToNextLobby(gameId);
        } catch (err) {
          btn.disabled = false;
          setText(btn, `Join the next game (failed: ${errorText(err)})`);
        }
      },
    }, "Join the next game")
    : h("a", { class: "button primary", testid: "next-lobby", href: `#/lobby/${enc(summary.next_lobby)}` }, "Open the next game");
  return h("div", { class: "next-offer", testid: "next-offer" },
    h("span", null, "A player of this game opened the next one: same settings, a new deal. "), join);
}

/**
 * "Play again": for a player of a game with human seats, the game's one next
 * lobby (shared with the other players); otherwise a new lobby with the same
 * mode, players, speed and seats, a new seed.
 */
function playAgainButton(summary, gameId) {
  if (!summary || !summary.mode) return null;
  const shared = Boolean(gameId && loadSeat(gameId) && humanSeats(summary).length);
  if (shared && summary.next_lobby) return null; // nextOffer's button joins it
  const btn = h("button", {
    type: "button", class: "primary", testid: "play-again",
    onclick: async () => {
      btn.disabled = true;
      if (shared) {
        try {
          await goToNextLobby(gameId);
        } catch (err) {
          btn.disabled = false;
          setText(btn, `Play again (failed: ${errorText(err)})`);
        }
        return;
      }
      const seats = seatsOf(summary).map((s) => (s.kind === "human" ? { slot: s.slot, kind: "human" }
        : s.model ? { slot: s.slot, kind: "ai", model: s.model } : { slot: s.slot, kind: "ai", backend: s.backend || "scripted" }));
      const humans = seats.some((s) => s.kind === "human");
      const body = { mode: summary.mode, players: summary.players, speed: summary.speed || "standard", seats };
      if (summary.roles) body.roles = summary.roles;
      if (humans) body.name = playerName();
      try {
        const lobby = await createLobby(body);
        if (humans) location.hash = `#/lobby/${enc(lobby.id)}`;
        else {
          await startLobby(lobby.id);
          location.hash = `#/watch/${enc(lobby.id)}?viewer=omniscient`;
        }
      } catch (err) {
        btn.disabled = false;
        setText(btn, `Play again (failed: ${errorText(err)})`);
      }
    },
  }, "Play again");
  return btn;
}

// ---- play -------------------------------------------------------------------------

function playPage(gameId) {
  document.title = "Playing · ToSSim";
  const seat = loadSeat(gameId);
  if (!seat) {
    setChildren(root, h("section", { class: "panel narrow", testid: "no-seat" },
      h("h2", null, "No seat in this browser"),
      h("p", null, "This browser has not joined this game (or left its seat). Join from its lobby, or watch instead."),
      h("p", { class: "button-row" },
        h("a", { class: "button primary", href: `#/watch/${enc(gameId)}?viewer=public` }, "Watch"),
        h("a", { class: "button", href: "#/" }, "Home"))));
    return null;
  }

  const endPanel = h("div", { class: "panel end-panel", testid: "end-panel", hidden: true });
  // what a stand-in did for this seat while the player was away (docs/api.md, "Stand-ins")
  const awayNote = h("div", { class: "notice away", testid: "standin-report", role: "status", hidden: true });
  const leave = h("button", { type: "button", class: "ghost small-btn", testid: "leave-seat" }, "Leave seat");
  leave.addEventListener("click", () => {
    if (leave.dataset.armed !== "1") {
      leave.dataset.armed = "1";
      setText(leave, "Click again to leave");
      return;
    }
    forgetSeat(gameId);
    location.hash = `#/watch/${enc(gameId)}?viewer=public`;
  });
  const toolbar = h("div", { class: "toolbar" }, leave);
  const body = h("div");
  setChildren(root, h("div", { class: "play-page", testid: "play-page" }, endPanel, awayNote, body));
  const view = new GameView(body, { mode: "play", send: (cmd) => hook.send(cmd), toolbar,
    notesKey: `tossim.notes.${gameId}` });
  view.setConnection("connecting", "");
  let socket = null;
  let summaries = null;
  let stopped = false;
  let ended = false;
  let endSummary = null;
  let nextLobby = null;

  const showEnd = (s) => {
    endSummary = s;
    setChildren(endPanel,
      h("strong", null, "Game over. "), h("span", null, `${resultText(s.result)} `),
      nextOffer(gameId, s),
      h("div", { class: "button-row" },
        playAgainButton(s, gameId),
        h("a", { class: "button", href: "#/", testid: "back-to-lobbies" }, "Back to lobbies"),
        h("a", { class: "button ghost", href: `#/watch/${enc(gameId)}?viewer=omniscient`, testid: "open-replay" }, "Replay with all roles")));
    endPanel.hidden = false;
  };

  const connect = () => {
    summaries = followSummaries(gameId, view);
    // the seat token goes in the socket's URL today (docs/api.md)
    socket = connectGame(`/ws/games/${enc(gameId)}?token=${enc(seat.token)}`, view, {
      summaries,
      onState: (state) => {
        if (state.phase === "ended" && !ended) {
          ended = true;
          getJSON(`/api/games/${enc(gameId)}`).then((s) => {
            if (stopped) return;
            showEnd({ ...s, next_lobby: s.next_lobby || nextLobby });
          }).catch(() => {});
        }
      },
      onStandins: (msg) => {
        const away = msg.you;
        if (!away || (msg.slots || []).includes(seat.slot)) return;
        const did = Array.isArray(away.did) ? away.did : [];
        const key = `tossim.away.${gameId}`;
        const sig = JSON.stringify(away);
        if (localStorage.getItem(key) === sig) return; // told already
        localStorage.setItem(key, sig);
        setChildren(awayNote,
          h("strong", null, "Welcome back. "),
          `You were away for a whole phase, so a stand-in (a scripted bot) played your seat from ${away.since} until you returned. `,
          did.length ? h("span", null, "It ", h("span", { class: "did" }, did.join("; ")), ".") : "It did nothing.",
          " ",
          h("button", { type: "button", class: "ghost", testid: "standin-report-close", onclick: () => { awayNote.hidden = true; } }, "OK"));
        awayNote.hidden = false;
      },
      // a player opened the next lobby: every end screen offers the same one
      onNext: (lobby) => {
        nextLobby = lobby;
        if (endSummary) showEnd({ ...endSummary, next_lobby: lobby });
      },
      onStatus: (status, detail) => {
        if (status !== "closed") return;
        if (/4401/.test(detail || "")) {
          // the server no longer knows this browser's claim: removed from the lobby, or left
          forgetSeat(gameId);
          setChildren(endPanel, h("strong", { testid: "seat-lost" }, "You no longer hold a seat in this game. "),
            h("span", null, "You were removed from its lobby or gave the seat up before it started."),
            h("div", { class: "button-row" },
              h("a", { class: "button primary", href: `#/watch/${enc(gameId)}?viewer=public` }, "Watch it"),
              h("a", { class: "button", href: "#/" }, "Home")));
          endPanel.hidden = false;
        } else view.showError(`Disconnected: ${detail}.`);
      },
    });
  };
  getJSON(`/api/games/${enc(gameId)}`).then((s) => {
    if (stopped) return;
    if (s.status === "lobby") location.hash = `#/lobby/${enc(gameId)}`;
    else connect();
  }).catch((err) => {
    if (stopped) return;
    if (err instanceof ApiError && err.status === 404) {
      stopped = true;
      view.destroy();
      showMissing("game", gameId);
    } else connect();
  });

  return {
    destroy() {
      stopped = true;
      if (summaries) summaries.stop();
      if (socket) socket.close();
      view.destroy();
    },
  };
}

// ---- rules and roles --------------------------------------------------------------------

function docPage(name) {
  document.title = `${name === "rules" ? "Rules" : "Roles"} · ToSSim`;
  const body = h("article", { class: "panel doc", testid: `doc-${name}` }, h("p", { class: "muted" }, "Loading…"));
  setChildren(root, body);
  fetch(`/api/docs/${name}`).then((r) => (r.ok ? r.text() : Promise.reject(new Error(`${r.status}`))))
    .then((text) => setChildren(body, renderMarkdown(text)))
    .catch((err) => setChildren(body, h("p", { class: "error" }, `Cannot load the ${name} (${err.message}).`)));
  return null;
}

const FACTION_TITLE = { town: "Town", mafia: "Mafia", neutral: "Neutral" };

/** The Roles page: a player's card for every role, grouped by faction. */
function rolesPage() {
  document.title = "Roles · ToSSim";
  const cards = allRoleFacts();
  if (!cards.length) return docPage("roles");  // no facts: the reference page
  const groups = new Map();
  for (const c of cards) {
    if (!groups.has(c.faction)) groups.set(c.faction, []);
    groups.get(c.faction).push(c);
  }
  setChildren(root, h("div", { class: "roles-page", testid: "roles-page" },
    h("h2", null, "Roles"),
    [...groups].map(([faction, list]) => h("section", { class: "role-group" },
      h("h3", null, FACTION_TITLE[faction] || faction),
      h("div", { class: "role-cards" }, list.map((c) => h("article", {
        class: "panel role-card", testid: `role-${c.key}`, "data-faction": c.faction },
        h("div", { class: "role-name" }, c.name),
        h("div", { class: "alignment" }, c.alignment),
        h("p", { class: "summary" }, c.summary),
        c.abilities.length ? h("p", { class: "abilities" }, c.abilities.join(" · ")) : null,
        h("p", { class: "goal" }, h("strong", null, "Goal: "), c.goal),
        roleStats(c),
        h("p", { class: "muted small" },
          `Sheriff: ${c.sheriff}. Investigator: ${c.investigator.join(", ") || "no group"}.`))))))));
  return null;
}

// Role facts first (role cards, death texts), then the page; a failed load
// leaves them empty and the pages fall back to keys and the reference text.
loadRoleFacts().then(setRoleFacts).finally(route);
