// ToSSim browser client: hash routes in one page.
//   #/                         home: games, lobbies, create a lobby
//   #/watch/{id}?viewer=...    spectate (public | omniscient | seat number)
//   #/play/{id}                play the seat this tab joined (token in sessionStorage)

import { ApiError, GameSocket, getJSON, listOf, postJSON } from "./api.js";
import { h, setChildren, setText, syncSelect } from "./dom.js";
import { GameView, phaseTitle, resultText } from "./render.js";

const root = document.getElementById("app");
let page = null; // the current page: {destroy()}

// A debug/test hook: the current game's state, raw commands, the socket.
const hook = {
  view: null,
  socket: null,
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

// ---- seats held by this tab ------------------------------------------------------

const SEAT_KEY = (gameId) => `tossim.seat.${gameId}`;

function saveSeat(seat) {
  sessionStorage.setItem(SEAT_KEY(seat.game_id), JSON.stringify(seat));
}

function loadSeat(gameId) {
  try {
    return JSON.parse(sessionStorage.getItem(SEAT_KEY(gameId)) || "null");
  } catch {
    return null;
  }
}

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

function errorText(err) {
  return err instanceof ApiError ? err.message : String(err && err.message ? err.message : err);
}

function lobbyIsOpen(lobby) {
  if (!lobby) return false;
  if (typeof lobby.status === "string") return ["open", "waiting", "lobby", "pending", "created"].includes(lobby.status);
  if (typeof lobby.started === "boolean") return !lobby.started;
  return !lobby.started_at;
}

function seatsOf(obj) {
  return Array.isArray(obj && obj.seats) ? obj.seats : [];
}

function humanSeats(lobby) {
  return seatsOf(lobby).filter((s) => s.kind === "human");
}

function isClaimed(seat) {
  return typeof seat.claimed === "boolean" ? seat.claimed : Boolean(seat.name);
}

async function joinLobby(lobbyId, name) {
  const res = await postJSON(`/api/lobbies/${encodeURIComponent(lobbyId)}/join`, { name });
  const seat = { game_id: res.game_id, lobby_id: lobbyId, slot: res.slot, token: res.token, name };
  saveSeat(seat);
  return seat;
}

async function startLobby(lobbyId) {
  return postJSON(`/api/lobbies/${encodeURIComponent(lobbyId)}/start`);
}

function shortId(id) {
  const s = String(id);
  return s.length > 10 ? s.slice(0, 8) : s;
}

function summaryLine(g) {
  const bits = [];
  if (g.mode) bits.push(g.mode);
  const n = g.players || seatsOf(g).length;
  if (n) bits.push(`${n} players`);
  if (g.speed) bits.push(g.speed);
  const humans = seatsOf(g).filter((s) => s.kind === "human").length;
  if (humans) bits.push(`${humans} human${humans > 1 ? "s" : ""}`);
  if (g.phase && g.status !== "finished") bits.push(phaseTitle({ day: g.day, phase: g.phase }));
  if (g.result) bits.push(resultText(g.result));
  return bits.join(" · ");
}

// ---- router -------------------------------------------------------------------

function route() {
  if (page && page.destroy) page.destroy();
  page = null;
  hook.view = null;
  hook.socket = null;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  if (parts[0] === "watch" && parts[1]) page = watchPage(parts[1], params.get("viewer") || "public");
  else if (parts[0] === "play" && parts[1]) page = playPage(parts[1]);
  else page = homePage();
}

window.addEventListener("hashchange", route);
window.addEventListener("online", () => hook.socket && hook.socket.reconnectNow());
route();

// ---- home -------------------------------------------------------------------------

function homePage() {
  document.title = "ToSSim";
  const status = h("p", { class: "error", testid: "home-error", role: "alert", hidden: true });
  const showError = (text) => {
    setText(status, text);
    status.hidden = !text;
  };

  const nameInput = h("input", {
    id: "player-name", testid: "player-name", type: "text", maxlength: "20", value: playerName(),
    autocomplete: "nickname",
  });
  nameInput.addEventListener("change", () => {
    const v = nameInput.value.trim();
    if (v) localStorage.setItem("tossim.name", v);
  });
  const currentName = () => nameInput.value.trim() || playerName();

  const lobbiesEl = h("ul", { class: "cards", testid: "lobbies" });
  const liveEl = h("ul", { class: "cards", testid: "live-games" });
  const finishedEl = h("ul", { class: "cards", testid: "finished-games" });

  // create form
  const players = h("input", { id: "create-players", testid: "create-players", type: "number", min: "7", max: "15", value: "15", required: true });
  const humans = h("input", { id: "create-humans", testid: "create-humans", type: "number", min: "0", max: "15", value: "1", required: true });
  const speed = h("select", { id: "create-speed", testid: "create-speed" },
    h("option", { value: "standard" }, "Standard (real timers)"),
    h("option", { value: "fast" }, "Fast (all-AI only)"),
    h("option", { value: "paced" }, "Paced (all-AI, easy to watch)"));
  const seed = h("input", { id: "create-seed", testid: "create-seed", type: "number", min: "0", placeholder: "random" });
  const createBtn = h("button", { type: "submit", class: "primary", testid: "create-submit" }, "Create lobby");
  const speedHint = h("p", { class: "hint", testid: "create-hint" });
  const syncForm = () => {
    const humanCount = Number(humans.value) || 0;
    humans.max = players.value;
    for (const option of speed.querySelectorAll('option:not([value="standard"])')) {
      option.disabled = humanCount > 0; // fast and paced games are for AI seats only
    }
    if (humanCount > 0) speed.value = "standard";
    setText(speedHint, humanCount > 0
      ? `You take seat 1${humanCount > 1 ? `; seats 2-${humanCount} wait for other humans` : ""}. Other seats are scripted AIs.`
      : "An all-AI game: you will watch it.");
  };
  players.addEventListener("input", syncForm);
  humans.addEventListener("input", syncForm);
  syncForm();

  const form = h("form", {
    class: "create-form", testid: "create-form",
    onsubmit: async (ev) => {
      ev.preventDefault();
      showError("");
      const n = Number(players.value);
      const k = Number(humans.value);
      if (!(n >= 7 && n <= 15)) return showError("Players: 7 to 15.");
      if (!(k >= 0 && k <= n)) return showError("Human seats: 0 to the number of players.");
      const body = { mode: "classic", players: n, speed: speed.value };
      if (seed.value !== "") body.seed = Number(seed.value);
      if (k > 0) body.seats = Array.from({ length: k }, (_, i) => ({ slot: i + 1, kind: "human" }));
      createBtn.disabled = true;
      try {
        const lobby = await postJSON("/api/lobbies", body);
        if (k > 0) {
          const seat = await joinLobby(lobby.id, currentName());
          location.hash = `#/play/${encodeURIComponent(seat.game_id)}`;
        } else {
          const started = await startLobby(lobby.id);
          const gid = (started && started.game_id) || lobby.game_id || gameIdOf(started);
          location.hash = `#/watch/${encodeURIComponent(gid)}?viewer=omniscient`;
        }
      } catch (err) {
        showError(`Could not create the lobby: ${errorText(err)}`);
      } finally {
        createBtn.disabled = false;
      }
    },
  },
  h("div", { class: "field" }, h("label", { for: "create-players" }, "Players"), players),
  h("div", { class: "field" }, h("label", { for: "create-humans" }, "Human seats"), humans),
  h("div", { class: "field" }, h("label", { for: "create-speed" }, "Speed"), speed),
  h("div", { class: "field" }, h("label", { for: "create-seed" }, "Seed"), seed),
  speedHint, createBtn);

  const renderLobbies = (lobbies) => {
    if (!lobbies.length) {
      setChildren(lobbiesEl, h("li", { class: "empty muted" }, "No open lobbies. Create one!"));
      return;
    }
    setChildren(lobbiesEl, lobbies.map((l) => {
      const seats = humanSeats(l);
      const free = seats.filter((s) => !isClaimed(s));
      const claimed = seats.filter(isClaimed).map((s) => s.name).filter(Boolean);
      const join = h("button", {
        type: "button", class: "primary", testid: `join-${l.id}`, disabled: free.length === 0,
        onclick: async () => {
          join.disabled = true;
          try {
            const seat = await joinLobby(l.id, currentName());
            location.hash = `#/play/${encodeURIComponent(seat.game_id)}`;
          } catch (err) {
            showError(`Could not join: ${errorText(err)}`);
            join.disabled = false;
          }
        },
      }, free.length ? "Join" : "Full");
      const start = h("button", {
        type: "button", class: "ghost", testid: `start-${l.id}`,
        onclick: async () => {
          start.disabled = true;
          try {
            const res = await startLobby(l.id);
            const gid = (res && res.game_id) || l.game_id || gameIdOf(res);
            const seat = loadSeat(gid);
            location.hash = seat ? `#/play/${encodeURIComponent(gid)}` : `#/watch/${encodeURIComponent(gid)}?viewer=public`;
          } catch (err) {
            showError(`Could not start: ${errorText(err)}`);
            start.disabled = false;
          }
        },
      }, "Start");
      return h("li", { class: "card", testid: `lobby-${l.id}` },
        h("div", { class: "card-main" },
          h("div", { class: "card-title" }, `Lobby ${shortId(l.id)}`),
          h("div", { class: "muted small" }, summaryLine(l)),
          h("div", { class: "small" },
            `Human seats: ${seats.length - free.length}/${seats.length} taken`,
            claimed.length ? ` (${claimed.join(", ")})` : "")),
        h("div", { class: "card-actions" }, join, start));
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
      return h("li", { class: "card", testid: `game-${id}` },
        h("div", { class: "card-main" },
          h("div", { class: "card-title" }, `Game ${shortId(id)}`),
          h("div", { class: "muted small" }, summaryLine(g))),
        h("div", { class: "card-actions" },
          mine && !finished ? h("a", { class: "button primary", href: `#/play/${encodeURIComponent(id)}` }, "Play") : null,
          h("a", {
            class: "button", testid: `watch-${id}`,
            href: `#/watch/${encodeURIComponent(id)}?viewer=${finished ? "omniscient" : "public"}`,
          }, finished ? "Replay" : "Watch")));
    }));
  };

  let stopped = false;
  let timer = null;
  const refresh = async () => {
    const results = await Promise.allSettled([
      getJSON("/api/lobbies"),
      getJSON("/api/games?status=live"),
      getJSON("/api/games?status=finished"),
    ]);
    if (stopped) return;
    const [lobbies, live, finished] = results;
    if (lobbies.status === "fulfilled") renderLobbies(listOf(lobbies.value, "lobbies").filter(lobbyIsOpen));
    if (live.status === "fulfilled") renderGames(liveEl, listOf(live.value, "games"), false);
    if (finished.status === "fulfilled") renderGames(finishedEl, listOf(finished.value, "games"), true);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) showError(`Cannot load the lists: ${errorText(failed.reason)}`);
    timer = setTimeout(refresh, 4000);
  };

  setChildren(root,
    h("div", { class: "home", testid: "home" },
      h("section", { class: "panel intro" },
        h("h1", null, "ToSSim"),
        h("p", null, "Town of Salem where every seat is a human in a browser or an AI. Watch a game, or open a lobby and play."),
        h("div", { class: "field inline" }, h("label", { for: "player-name" }, "Your name"), nameInput)),
      status,
      h("div", { class: "home-grid" },
        h("section", { class: "panel", "aria-labelledby": "lobbies-h" },
          h("h2", { id: "lobbies-h" }, "Open lobbies"), lobbiesEl),
        h("section", { class: "panel", "aria-labelledby": "create-h" },
          h("h2", { id: "create-h" }, "Create a lobby"), form),
        h("section", { class: "panel", "aria-labelledby": "live-h" },
          h("h2", { id: "live-h" }, "Live games"), liveEl),
        h("section", { class: "panel", "aria-labelledby": "finished-h" },
          h("h2", { id: "finished-h" }, "Finished games"), finishedEl))));
  refresh();
  return {
    destroy() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

// ---- shared game-page plumbing ------------------------------------------------------

/**
 * The "Earlier days" panel of a game page: GET /api/games/{id} (its
 * `summaries`, one per finished day) when the page opens, then again only
 * when the game's day or phase changes (night falls, dawn, the end), when the
 * socket reports the game over, or on a {"type": "summary"} message should the
 * server ever forward its bus message to sockets (it does not today).
 * At most one request is in flight; changes meanwhile ask for one more after it.
 *
 * The server writes a day's summary just after night falls (a model may take a
 * while), so a fetch at nightfall can come too early. Then, and only then, it
 * asks again a few times (SUMMARY_RETRY_MS) until the summary is there or the phase
 * changes; the game's end has no later phase change to wait for. No timer
 * otherwise.
 *
 * Only days the page has seen end are shown (a delayed spectator stream may
 * still be in a day the server has already summarised).
 */
const SUMMARY_RETRY_MS = [2000, 10000, 30000];

function followSummaries(gameId, view) {
  const path = `/api/games/${encodeURIComponent(gameId)}`;
  let all = [];
  let at = null; // {day, phase} the page shows; null until the first message
  let busy = false;
  let again = false;
  let stopped = false;
  let retryTimer = null;
  let retries = 0;

  const dayOver = () => at && (at.phase === "night" || at.phase === "ended");
  const shown = (s) => at && (Number(s.day) < at.day || (Number(s.day) === at.day && dayOver()));
  const show = () => view.setSummaries(all.filter(shown));
  const maybeRetry = () => {
    clearTimeout(retryTimer);
    const missing = dayOver() && !all.some((s) => Number(s.day) === at.day);
    if (missing && retries < SUMMARY_RETRY_MS.length) {
      retryTimer = setTimeout(refresh, SUMMARY_RETRY_MS[retries++]);
    }
  };

  async function refresh() {
    if (stopped) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    clearTimeout(retryTimer);
    try {
      const game = await getJSON(path);
      if (!stopped) {
        all = game && Array.isArray(game.summaries) ? game.summaries : [];
        show();
      }
    } catch {
      // keep what is shown; asked again below or at the next phase change
    } finally {
      busy = false;
      if (stopped) {
        // the page is gone
      } else if (again) {
        again = false;
        refresh();
      } else {
        maybeRetry();
      }
    }
  }

  refresh();
  return {
    refresh,
    /** The page moved to (day, phase). */
    phase(day, phase) {
      const first = at === null;
      at = { day: Number(day) || 0, phase };
      retries = 0;
      show();
      if (!first) refresh(); // the first one is the page opening: fetched already
      else if (!busy) maybeRetry();
    },
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
    },
  };
}

function connectGame(path, view, extra = {}) {
  const summaries = extra.summaries || null;
  let phaseKey = "";
  const notePhase = (day, phase) => {
    if (!phase) return;
    const key = `${day}|${phase}`;
    if (key === phaseKey) return;
    phaseKey = key;
    if (summaries) summaries.phase(day, phase);
  };
  const socket = new GameSocket(path, {
    onHello: (msg) => extra.onHello && extra.onHello(msg),
    onUpdate: (events, state) => {
      view.update(events, state);
      if (state) {
        if (state.phase === "ended") socket.finished = true;
        extra.onState && extra.onState(state);
        document.title = `${phaseTitle(state)} · ToSSim`;
        notePhase(state.day, state.phase);
      } else {
        // A delayed spectator stream carries no state: follow the events' phase.
        const last = [...events].reverse().find((e) => e.phase);
        if (last) notePhase(last.day, last.phase);
      }
    },
    onError: (msg) => view.serverError ? view.serverError(msg) : null,
    onOther: (msg) => {
      if (msg.type === "summary" && summaries) summaries.refresh();
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

// ---- watch ------------------------------------------------------------------------

function watchPage(gameId, viewer) {
  document.title = "Watching · ToSSim";
  const select = h("select", { id: "viewer", testid: "viewer-select", "aria-label": "Point of view" });
  const options = (roster) => [
    { value: "public", label: "Public view" },
    { value: "omniscient", label: "Omniscient (all roles)" },
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
    location.hash = `#/watch/${encodeURIComponent(gameId)}?viewer=${encodeURIComponent(select.value)}`;
  });
  const toolbar = h("div", { class: "toolbar" },
    h("label", { for: "viewer", class: "small muted" }, "View"), select,
    h("a", { href: "#/", class: "button ghost small-btn" }, "All games"));

  const notice = h("div", { class: "notice", testid: "watch-notice", role: "status", hidden: true });
  const body = h("div");
  setChildren(root, h("div", { class: "watch-page", testid: "watch-page" }, notice, body));
  const view = new GameView(body, { mode: "watch", send: () => false, toolbar });
  const summaries = followSummaries(gameId, view);

  let rosterSig = "";
  const socket = connectGame(
    `/ws/games/${encodeURIComponent(gameId)}/watch?viewer=${encodeURIComponent(viewer)}`, view, {
      summaries,
      onState: (state) => {
        const sig = (state.roster || []).map((p) => p.name).join("|");
        if (sig !== rosterSig) {
          rosterSig = sig;
          syncSelect(select, options(state.roster || []));
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
            viewer !== "public" ? h("a", { href: `#/watch/${encodeURIComponent(gameId)}?viewer=public` }, "Watch the public view") : null);
          notice.hidden = false;
        }
      },
    });
  return {
    destroy() {
      summaries.stop();
      socket.close();
      view.destroy();
    },
  };
}

// ---- play -------------------------------------------------------------------------

function playPage(gameId) {
  document.title = "Playing · ToSSim";
  const seat = loadSeat(gameId);
  if (!seat || !seat.token) {
    setChildren(root, h("section", { class: "panel narrow", testid: "no-seat" },
      h("h2", null, "No seat in this tab"),
      h("p", null, "This browser tab has not joined this game. Seats are kept per tab; join from a lobby, or watch instead."),
      h("p", null,
        h("a", { class: "button primary", href: `#/watch/${encodeURIComponent(gameId)}?viewer=public` }, "Watch"), " ",
        h("a", { class: "button", href: "#/" }, "Home"))));
    return null;
  }

  const lobbyPanel = h("section", { class: "panel lobby-wait", testid: "lobby-wait", hidden: true });
  const body = h("div");
  setChildren(root, h("div", { class: "play-page", testid: "play-page" }, lobbyPanel, body));
  const view = new GameView(body, { mode: "play", send: (cmd) => hook.send(cmd) });
  view.setConnection("connecting", "");

  let socket = null;
  let summaries = null;
  let pollTimer = null;
  let stopped = false;
  const connect = () => {
    if (socket || stopped) return;
    lobbyPanel.hidden = true;
    body.hidden = false;
    summaries = followSummaries(gameId, view); // from the start: a lobby has none
    socket = connectGame(`/ws/games/${encodeURIComponent(gameId)}?token=${encodeURIComponent(seat.token)}`, view, {
      summaries,
      onStatus: (status, detail) => {
        if (status === "closed") view.showError(`Disconnected: ${detail}. Your seat token may be invalid.`);
      },
    });
  };

  const startButton = h("button", {
    type: "button", class: "primary", testid: "start-game",
    onclick: async () => {
      startButton.disabled = true;
      try {
        await startLobby(seat.lobby_id);
        connect();
      } catch (err) {
        setText(waitError, `Could not start: ${errorText(err)}`);
        waitError.hidden = false;
        startButton.disabled = false;
      }
    },
  }, "Start game");
  const waitError = h("p", { class: "error", role: "alert", hidden: true });
  const waitSeats = h("ul", { class: "seat-list", testid: "lobby-seats" });

  const pollLobby = async () => {
    if (stopped || socket) return;
    let lobby;
    try {
      lobby = await getJSON(`/api/lobbies/${encodeURIComponent(seat.lobby_id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return connect(); // gone: started
      pollTimer = setTimeout(pollLobby, 3000);
      return;
    }
    if (stopped) return;
    if (!lobbyIsOpen(lobby)) return connect();
    const humansList = humanSeats(lobby);
    setChildren(waitSeats, humansList.map((s) =>
      h("li", null, `Seat ${s.slot}: `, isClaimed(s) ? s.name || "taken" : h("span", { class: "muted" }, "free"),
        s.slot === seat.slot ? h("span", { class: "tag you-tag" }, "you") : null)));
    setChildren(lobbyPanel,
      h("h2", null, "Waiting for the game to start"),
      h("p", null, `You are ${seat.name}, seat ${seat.slot}. ${summaryLine(lobby)}.`),
      h("p", { class: "hint" },
        `Other people join lobby ${shortId(lobby.id)} from the home page. `,
        "Unclaimed human seats are played by scripted bots once the game starts."),
      waitSeats, startButton, waitError);
    lobbyPanel.hidden = false;
    pollTimer = setTimeout(pollLobby, 2000);
  };

  if (seat.lobby_id) {
    body.hidden = true; // until the game starts
    pollLobby();
  }
  else connect();

  return {
    destroy() {
      stopped = true;
      clearTimeout(pollTimer);
      if (summaries) summaries.stop();
      if (socket) socket.close();
      view.destroy();
    },
  };
}
