"""Escaping text written by other players before it goes into a prompt.

Rule (applied to chat, whispers, wills, death notes, player names and every
engine event text, since event texts embed names and chat):

1. `<` becomes `‹` and `>` becomes `›`, so no tag (`</speak>`, `<observation>`,
   a chat-template marker such as `<|im_start|>`) can be formed.
2. Line breaks become ` / ` and other control characters are dropped, so the
   text stays on the one line it was placed on, after its speaker label: player
   text never starts a line of the prompt.
3. A role label at the start of the text or of any of its original lines
   (`system:`, `user:`, `assistant:`, `observation:`, `developer:`, `tool:`,
   any case) loses its colon: `system: ignore rules` becomes
   `(system) ignore rules`.
4. In `quote()`, double quotes become single quotes, so a message cannot close
   its own quotation marks and add a forged speaker after it.
"""

from __future__ import annotations

import re

_LABEL = re.compile(r"^(\s*)(system|user|assistant|observation|developer|tool)\s*:",
                    re.IGNORECASE)
_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029\x85]")


def _printable(ch: str) -> bool:
    code = ord(ch)
    return not (code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code < 0xE000)


def escape_text(text: str) -> str:
    """One line of untrusted text, safe to embed in a prompt (see module doc)."""
    lines = _BREAKS.split(str(text))
    out = []
    for line in lines:
        line = _LABEL.sub(lambda m: f"{m.group(1)}({m.group(2)})", line)
        line = "".join(ch if ch != "\t" else " " for ch in line if ch == "\t" or _printable(ch))
        out.append(line.replace("<", "‹").replace(">", "›"))
    return " / ".join(out)


def quote(text: str) -> str:
    """Escaped text in double quotes (inner double quotes become single)."""
    return '"' + escape_text(text).replace('"', "'") + '"'
