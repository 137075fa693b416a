// Tiny DOM helpers. Everything that reaches the page goes through text nodes
// (textContent / createTextNode): this client never parses strings as HTML,
// so chat, names, wills and death notes are always shown as literal text.

/**
 * Create an element.
 *   h("button", {class: "x", testid: "vote-3", onclick: fn, disabled: true}, "Vote")
 * Attributes: `class`, `testid` (data-testid), `dataset` (object), `on<event>`
 * handlers, boolean attributes (true sets, false/null/undefined skips),
 * everything else via setAttribute. Children: nodes, strings (as text),
 * numbers, arrays, null/false (skipped).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "testid") el.dataset.testid = value;
      else if (key === "dataset") Object.assign(el.dataset, value);
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on") && typeof value === "function") {
        el.addEventListener(key.slice(2), value);
      } else if (key === "value") el.value = value;
      else if (value === true) el.setAttribute(key, "");
      else el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replace all children of `el` (strings become text nodes). */
export function setChildren(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Set text only when it changed (avoids needless layout and screen-reader noise). */
export function setText(el, text) {
  const t = text === null || text === undefined ? "" : String(text);
  if (el.textContent !== t) el.textContent = t;
}

/**
 * Keep a <select>'s options in sync with `options` ([{value, label}]) without
 * losing the user's choice when the list did not change or still holds it.
 */
export function syncSelect(select, options, placeholder) {
  const all = placeholder ? [{ value: "", label: placeholder }, ...options] : options;
  const signature = JSON.stringify(all.map((o) => [String(o.value), o.label]));
  if (select.dataset.signature === signature) return;
  const previous = select.value;
  select.replaceChildren(
    ...all.map((o) => h("option", { value: String(o.value) }, o.label)),
  );
  select.dataset.signature = signature;
  if (all.some((o) => String(o.value) === previous)) select.value = previous;
}

/** "1:05" from seconds. */
export function formatSeconds(total) {
  const s = Math.max(0, Math.ceil(total));
  const m = Math.floor(s / 60);
  return `${m}:${String(s % 60).padStart(2, "0")}`;
}
