// HTTP and websocket access to the ToSSim server (docs/api.md).

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.detail = detail;
  }
}

/**
 * One JSON request. Errors come back as {"detail": "..."} with a 4xx/5xx status.
 * `headers`: extra headers (the lobby owner's `Authorization: Bearer ...`).
 */
export async function api(method, path, body, headers) {
  const init = { method, headers: { Accept: "application/json", ...(headers || {}) } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, `Cannot reach the server (${err.message}).`);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    throw new ApiError(response.status, detailText(data) || `${response.status} ${response.statusText}`);
  }
  return data;
}

/** FastAPI errors: "detail" is a string, or a list of validation errors. */
function detailText(data) {
  if (!data) return "";
  if (typeof data === "string") return data;
  const d = data.detail ?? data.error;
  if (typeof d === "string") return d;
  if (Array.isArray(d)) {
    return d.map((e) => (e && e.msg ? `${(e.loc || []).slice(1).join(".")}: ${e.msg}` : JSON.stringify(e))).join("; ");
  }
  return d ? JSON.stringify(d) : "";
}

export const getJSON = (path) => api("GET", path);

/** GET /api/roles once per page load: role cards and death texts. */
let factsPromise = null;
export function loadRoleFacts() {
  if (!factsPromise) factsPromise = getJSON("/api/roles").catch(() => ({ roles: [], causes: {} }));
  return factsPromise;
}
export const postJSON = (path, body) => api("POST", path, body ?? {});

/** A list from a response that is either a bare array or {key: [...]}. */
export function listOf(data, ...keys) {
  if (Array.isArray(data)) return data;
  if (data && typeof data === "object") {
    for (const k of [...keys, "items", "results"]) if (Array.isArray(data[k])) return data[k];
  }
  return [];
}

export function wsURL(path) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  return `${proto}//${location.host}${path}`;
}

// Close codes after which reconnecting cannot help (bad token, forbidden view,
// unknown game). Anything else (network loss, server restart) is retried.
const FATAL_CLOSE_CODES = new Set([1008, 4400, 4401, 4403, 4404]);
const PING_EVERY_MS = 20000;
const SILENCE_LIMIT_MS = 50000;

/**
 * A game websocket that reconnects with backoff and resumes by version.
 *
 * - A seat's token goes in the first message, `{type: "auth", token, since}`.
 * - A reconnect asks for `?since=lastVersion`, so the server sends exactly
 *   the events after the last version it delivered (the first connection gets
 *   everything the viewer may see).
 * - Events are deduplicated by their `v`, so a server that also replays
 *   history on connect cannot show an event twice.
 * - `lastVersion` only advances on "events" messages (errors and pongs carry
 *   the game's version too, but they do not deliver events).
 *
 * handlers: onUpdate(freshEvents, stateOrNull, msg), onHello(msg),
 * onError(msg), onSummary(msg), onThinking(msg), onNext(lobbyId),
 * onStandins(msg), onStatus(status, detail) with status in
 * connecting | live | reconnecting | closed | ended.
 */
export class GameSocket {
  constructor(path, handlers) {
    // A seat token never travels in the URL (access logs, proxies, history):
    // it is taken out of the path and sent as the first message once open.
    const [base, query = ""] = path.split("?");
    const params = new URLSearchParams(query);
    this.token = params.get("token") || handlers.token || null;
    params.delete("token");
    this.path = params.toString() ? `${base}?${params}` : base;
    this.h = handlers;
    this.ws = null;
    this.lastVersion = 0;
    this.seen = new Set();
    this.attempt = 0;
    this.stopped = false;
    this.finished = false; // set when the game is over: a close is then final
    this.retryTimer = null;
    this.pingTimer = null;
    this.lastHeard = 0;
  }

  connect() {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    this.status(this.attempt === 0 ? "connecting" : "reconnecting");
    let ws;
    try {
      ws = new WebSocket(wsURL(this.urlPath()));
    } catch (err) {
      this.scheduleReconnect(String(err));
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      if (this.token) {
        ws.send(JSON.stringify({ type: "auth", token: this.token, since: this.lastVersion }));
      }
      this.lastHeard = Date.now();
      this.startPing();
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      this.lastHeard = Date.now();
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      this.handle(msg);
    };
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.stopPing();
      if (this.stopped) return;
      if (FATAL_CLOSE_CODES.has(ev.code)) {
        this.stopped = true;
        this.status("closed", closeText(ev));
        return;
      }
      if (this.finished) {
        this.status("ended");
        return;
      }
      this.scheduleReconnect(closeText(ev));
    };
    ws.onerror = () => {
      /* onclose follows and decides */
    };
  }

  /**
   * One server message, by its `type`: every message type the server sends
   * (`ServerMessage` in /wire-schema.json, docs/api.md "Websocket") has its
   * case here, and a test fails when one is missing. A type this client does
   * not know (a newer server) is ignored.
   */
  handle(msg) {
    switch (msg.type) {
      case "hello":
        this.attempt = 0;
        this.status("live");
        this.h.onHello?.(msg);
        break;
      case "events": {
        this.attempt = 0;
        this.status("live");
        const fresh = [];
        for (const e of msg.events || []) {
          if (typeof e.v === "number") {
            if (this.seen.has(e.v)) continue;
            this.seen.add(e.v);
          }
          fresh.push(e);
        }
        const stale = typeof msg.version === "number" && msg.version < this.lastVersion;
        if (typeof msg.version === "number" && msg.version > this.lastVersion) {
          this.lastVersion = msg.version;
        }
        this.h.onUpdate?.(fresh, msg.state && !stale ? msg.state : null, msg);
        break;
      }
      case "error":
        this.h.onError?.(msg);
        break;
      case "pong": // alive: lastHeard is set already
        break;
      case "summary": // a day's summary was written or replaced
        this.h.onSummary?.(msg);
        break;
      case "thinking":
        this.h.onThinking?.(msg);
        break;
      case "next":
        if (typeof msg.lobby === "string") this.h.onNext?.(msg.lobby);
        break;
      case "standins":
        this.h.onStandins?.(msg);
        break;
      default:
        break;
    }
  }

  /**
   * The path to connect to: after a reconnect it carries `since`, the last
   * version we hold, so the server's first push is exactly the missing tail
   * (a {"type": "resume"} message after opening would race with that first
   * push, which otherwise replays the whole history).
   */
  urlPath() {
    if (this.lastVersion <= 0) return this.path;
    const sep = this.path.includes("?") ? "&" : "?";
    return `${this.path}${sep}since=${this.lastVersion}`;
  }

  /** Ask again for everything after `lastVersion` on the open connection. */
  resume() {
    return this.send({ type: "resume", since: this.lastVersion });
  }

  /** Send a JSON message; false when not connected. */
  send(obj) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(obj));
    return true;
  }

  command(command) {
    return this.send({ type: "command", command });
  }

  scheduleReconnect(detail) {
    if (this.stopped) return;
    const base = Math.min(10000, 500 * 2 ** this.attempt);
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    this.attempt += 1;
    this.status("reconnecting", detail ? `${detail}; retrying in ${Math.ceil(delay / 1000)} s` : "");
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  /** Reconnect now (e.g. after the browser comes back online). */
  reconnectNow() {
    if (this.stopped) return;
    this.attempt = 0;
    if (this.ws) {
      this.ws.close(4000, "reconnect");
    } else {
      this.connect();
    }
  }

  startPing() {
    this.stopPing();
    this.pingTimer = setInterval(() => {
      if (Date.now() - this.lastHeard > SILENCE_LIMIT_MS && this.ws) {
        // Half-open connection: nothing heard, not even pongs. Start over.
        this.ws.close(4000, "silent");
        return;
      }
      this.send({ type: "ping" });
    }, PING_EVERY_MS);
  }

  stopPing() {
    clearInterval(this.pingTimer);
    this.pingTimer = null;
  }

  status(status, detail = "") {
    if (this.lastStatus === status && this.lastDetail === detail) return;
    this.lastStatus = status;
    this.lastDetail = detail;
    this.h.onStatus?.(status, detail);
  }

  /** Stop for good (page change). */
  close() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.stopPing();
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000, "bye");
    }
  }
}

function closeText(ev) {
  const reason = ev.reason ? `: ${ev.reason}` : "";
  return `connection closed (${ev.code}${reason})`;
}
