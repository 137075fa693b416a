// A small Markdown reader for the rules and roles pages (docs/*.md): headings,
// paragraphs, lists, tables, code blocks, **bold** and `code`. It builds DOM
// nodes with text only (never innerHTML), like the rest of the client.

import { h } from "./dom.js";

function inline(text) {
  const out = [];
  const re = /(\*\*[^*]+\*\*|`[^`]+`|\[[^\]]+\]\([^)]+\))/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const t = m[0];
    if (t.startsWith("**")) out.push(h("strong", null, t.slice(2, -2)));
    else if (t.startsWith("`")) out.push(h("code", null, t.slice(1, -1)));
    else out.push(t.slice(1, t.indexOf("]"))); // links to repository files: their text
    last = m.index + t.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const cells = (line) => line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());

/** Markdown text -> a list of block elements. */
export function renderMarkdown(text) {
  const lines = String(text).replace(/\r\n/g, "\n").split("\n");
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
    } else if (line.startsWith("```")) {
      const code = [];
      i += 1;
      while (i < lines.length && !lines[i].startsWith("```")) code.push(lines[i++]);
      i += 1;
      blocks.push(h("pre", null, code.join("\n")));
    } else if (/^#{1,6} /.test(line)) {
      const level = Math.min(6, line.indexOf(" "));
      blocks.push(h(`h${level}`, null, inline(line.replace(/^#+ /, ""))));
      i += 1;
    } else if (line.trim().startsWith("|")) {
      const rows = [];
      while (i < lines.length && lines[i].trim().startsWith("|")) rows.push(lines[i++]);
      const head = cells(rows[0]);
      const bodyRows = rows.slice(1).filter((r) => !/^\s*\|?\s*:?-{2,}/.test(r));
      blocks.push(h("div", { class: "table-wrap", tabindex: "0" }, h("table", null,
        h("thead", null, h("tr", null, head.map((c) => h("th", null, inline(c))))),
        h("tbody", null, bodyRows.map((r) => h("tr", null, cells(r).map((c) => h("td", null, inline(c)))))))));
    } else if (/^\s*([-*]|\d+\.) /.test(line)) {
      const ordered = /^\s*\d+\. /.test(line);
      const items = [];
      while (i < lines.length && /^\s*([-*]|\d+\.) /.test(lines[i])) {
        let item = lines[i++].replace(/^\s*([-*]|\d+\.) /, "");
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*]|\d+\.) /.test(lines[i])) item += ` ${lines[i++].trim()}`;
        items.push(h("li", null, inline(item)));
      }
      blocks.push(h(ordered ? "ol" : "ul", null, items));
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() && !/^(#|```|\s*\||\s*([-*]|\d+\.) )/.test(lines[i])) para.push(lines[i++].trim());
      blocks.push(h("p", null, inline(para.join(" "))));
    }
  }
  return blocks;
}
