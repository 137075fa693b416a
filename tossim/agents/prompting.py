"""Prompts for AI seats (seed 003): a static system prompt and the dynamic
turn context, rendered from Jinja2 templates in `prompts/`.

Both are built only from a SeatMemory (the seat's own Views). The system
prompt puts what every seat shares first (objective, rules digest, tools,
action format, the game's role list) and the seat's identity, role card and
persona after it, so seats share the longest possible prefix. Every piece of
text a player wrote (chat, wills, names) and every engine event text is
escaped with `escape.escape_text` before it is placed in a prompt.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from tossim.agents import moves
from tossim.agents.escape import escape_text, quote
from tossim.agents.grammar import turn_choices
from tossim.agents.memory import CHAT_KEYS, SeatMemory
from tossim.agents.personas import Persona
from tossim.agents.tools import TOOLS, ToolSpec, format_chat
from tossim.engine.roles import ROLES, find_role
from tossim.engine.view import RosterEntry, role_card

PROTOCOLS = ("xml", "json")
CATEGORY_NAMES = {"town_killing": "Town Killing", "random_town": "Random Town"}
_TEMPLATES = Path(__file__).with_name("prompts")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)), autoescape=False,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined)


def render_template(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context).strip() + "\n"


def tool_call(spec: ToolSpec, protocol: str) -> str:
    """How a tool is called in this protocol, with an example argument."""
    if protocol == "json":
        args = "{}" if spec.arg == "none" else f'{{"{spec.arg}": "{spec.example}"}}'
        return f'{{"action": "{spec.name}", "args": {args}}}'
    return f"<{spec.name}>{spec.example}</{spec.name}>"


def role_list(memory: SeatMemory) -> list[str]:
    """The game's role list (public, from the game.start event)."""
    for e in memory.events:
        if e["key"] == "game.start":
            out = []
            for key in e["data"].get("role_list", ()):
                r = ROLES.get(key)
                out.append(r.name if r else CATEGORY_NAMES.get(key, key.replace("_", " ").title()))
            return out
    return []


def _identity_extra(memory: SeatMemory) -> list[str]:
    you = memory.you
    out = []
    if you.uses:
        out.append("Uses left: " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                             for k, v in sorted(you.uses.items())) + ".")
    mates = you.teammates or ()
    if mates:
        listed = []
        for s in mates:
            p = memory.player(s)
            listed.append(f"{escape_text(memory.name(s))} ({(p and p.role) or 'Mafia'})")
        out.append("Your fellow Mafia members: " + ", ".join(listed) + ".")
    if you.target is not None:
        out.append(f"Your target is {escape_text(memory.name(you.target))}. "
                   "Get them lynched.")
    return out


def render_system(memory: SeatMemory, protocol: str = "xml",
                  persona: Persona | str | None = None, max_tools: int = 4,
                  speech: str = "free") -> str:
    """The seat's system prompt. It changes only when the seat's role does
    (a Mafioso promoted to Godfather, an Executioner turned Jester)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}")
    you = memory.you
    r = find_role(you.role_key or you.role)
    card = role_card(r.key) if r else {"name": you.role or "?", "alignment": "",
                                       "summary": you.summary,
                                       "goal": you.goal, "attack": "None",
                                       "defense": "None"}
    tools = [{"call": tool_call(t, protocol), "description": t.description}
             for t in TOOLS.values()]
    text = persona.text if isinstance(persona, Persona) else persona
    out = render_template("system.j2", protocol=protocol, tools=tools, role_list=role_list(memory),
                   max_tools=max_tools, moves=speech == "moves",
                   name=escape_text(you.name or f"Player {memory.slot}"), role=card,
                   identity_extra=_identity_extra(memory), persona=text)
    head, marker, rest = out.partition("## Who you are")
    return _game_names(memory, head) + marker + rest


_EXAMPLE_PLAYER = re.compile(r"\bPlayer ([1-9])\b")


def _game_names(memory: SeatMemory, text: str) -> str:
    """The shared head's examples ("Player 4 claimed Doctor") in this game's
    names (the name of seat 4), so a game whose players have names never
    shows a model a "Player 4" it could copy into the chat. The same for
    every seat of a game: the shared prefix stays shared."""
    names = [escape_text(p.name) for p in sorted(memory.roster, key=lambda p: p.slot)]
    if not names:
        return text
    return _EXAMPLE_PLAYER.sub(lambda m: names[(int(m.group(1)) - 1) % len(names)], text)


def shared_prefix(system_prompt: str) -> str:
    """The part of a system prompt every seat of the game shares."""
    return system_prompt.split("## Who you are", 1)[0]


def roster_lines(memory: SeatMemory) -> list[str]:
    you = memory.you
    mates = set(you.teammates or ())
    target = you.target
    out = []
    for p in memory.roster:
        line = escape_text(p.name)
        tags = []
        if p.slot == memory.slot:
            tags.append("(you)")
        if not p.alive:
            tags.append("[DEAD]")
        if p.revealed_mayor:
            tags.append("[REVEALED MAYOR]")
        if p.slot in mates:
            tags.append("(Mafia teammate)")
        if p.slot == target:
            tags.append("(your target)")
        if tags:
            line += " " + " ".join(tags)
        if p.role:
            line += f" - Role: {escape_text(p.role)}"
        out.append(line)
    return out


def _event_line(e: dict[str, Any]) -> str:
    when = f"Night {e['day']}" if e["phase"] == "night" else f"Day {e['day']}"
    return f"[{when}] {escape_text(e['text'])}"


def _state_lines(memory: SeatMemory) -> list[str]:
    you, names = memory.you, memory.names
    out = []
    if not you.alive:
        out.append("You are dead: you can only talk in the dead chat.")
    if you.jailed:
        out.append("You are in jail tonight.")
    will = you.will
    out.append(f"Your last will: {quote(will)}" if will else "Your last will is empty.")
    if you.death_note:
        out.append(f"Your death note: {quote(you.death_note)}")
    chosen = you.night_action
    if chosen:
        out.append("Your night action: " + " and ".join(escape_text(names.get(s, str(s)))
                                                       for s in chosen) + ".")
    if you.vote is not None:
        out.append(f"You voted against {escape_text(memory.name(you.vote))}.")
    if you.verdict:
        out.append(f"Your verdict: {you.verdict}.")
    if memory.trial.get("accused") is not None:
        out.append(f"On trial: {escape_text(memory.name(memory.trial['accused']))}.")
    if memory.trial.get("votes") is not None:
        tally = ", ".join(f"{escape_text(memory.name(int(s)))} {n}"
                          for s, n in memory.trial["votes"].items()) or "no votes yet"
        out.append(f"Votes so far: {tally}; {memory.trial.get('needed')} needed for a trial.")
    return out


def _example_name(memory: SeatMemory, options: Sequence[str], rng: random.Random) -> str:
    """A real name for an example: one of the action's options, else a living
    player, never the seat itself, drawn per turn (docs/agents.md, "Prompt"),
    so a seat that copies an example names someone else each turn and a copy
    is visible."""
    me = escape_text(memory.name(memory.slot))
    pool = [o for o in options if o != me]
    if not pool:
        pool = [escape_text(p.name) for p in memory.roster
                if p.alive and p.slot != memory.slot]
    return rng.choice(pool) if pool else ""


SPEECH_EXAMPLES = (
    "{name}, what is your role? Tell us before we vote.",
    "I do not trust {name} yet. Who can confirm their claim?",
    "Has anyone checked {name}? Share your results with the town.",
    "{name} has been quiet all day. What did you do last night?",
    "Why did {name} vote so late? Explain yourself.",
    "If {name} is town, they can name someone to clear them.",
)


def example_texts(names: Mapping[int, str]) -> list[str]:
    """Every example text a seat of a game with these names can be shown:
    the shared head of the system prompt (both protocols, in the game's
    names) and each speech example with each name. The play-quality figures
    do not credit a seat for copying them (docs/agents.md, "Metrics")."""
    memory = SeatMemory(0)
    memory.roster = [RosterEntry(s, n, True, None) for s, n in names.items()]
    out = [shared_prefix(render_system(memory, protocol)) for protocol in PROTOCOLS]
    out += [t.format(name=escape_text(n)) for t in SPEECH_EXAMPLES for n in names.values()]
    return out


def _speech_example(name: str, rng: random.Random) -> str:
    """A real sentence for the speech example (never a placeholder word that
    a small model would copy into the chat), drawn per turn."""
    if not name:
        return "Who here has a result to share with the town?"
    return rng.choice(SPEECH_EXAMPLES).format(name=name)


def will_example(memory: SeatMemory) -> str:
    """The will example: the seat's role and its last two results, in the
    words a player writes down ("I am the Investigator. Night 1 investigate
    Player 4: Your target could be ...")."""
    role = escape_text(memory.you.role or "Townie")
    return " ".join([f"I am the {role}.", *(line.replace(" - you chose to", "")
                                            for line in results_lines(memory)[-2:])])


def action_lines(memory: SeatMemory, protocol: str = "xml", *, speech: str = "free",
                 seed: int = 0, wait: bool = True) -> list[str]:
    """The final actions available now, each with an example in real words
    (a real name, a real sentence) and its allowed arguments; `seed` (the
    turn's) draws the example names and sentences. With speech "moves",
    speeches, wills and death notes are listed as the moves allowed now
    (`moves.action_lines`) and whispers are left out."""
    channel = next((a.options[0] for a in memory.legal if a.kind == "chat" and a.options), "")
    ability = next((a.ability for a in memory.legal if a.kind == "night"), "")
    out = []
    table = moves.move_table(memory) if speech == "moves" else None
    rng = random.Random(f"{seed}:{memory.slot}:{memory.day}:{memory.phase}")
    for c in turn_choices(memory.legal, memory.names, allow_tools=False, wait=wait):
        if table is not None and c.tag in (*moves.SPEECH_TAGS, "whisper"):
            if c.tag != "whisper":
                out += moves.action_lines(memory, c.tag, protocol, table)
            continue
        if table is not None:  # the names and verdicts the grammar allows
            c = moves.held_choice(memory, c)
        opts = [escape_text(o) for o in (c.attr_options or c.options)]
        # the vote example names whom the seat's vote is held to (the player it
        # said it would vote for, else a shown enemy, else anyone it does not
        # stand by: `moves.vote_choice`, which a structured seat's grammar
        # applies already): a small model copies its example, so a free-text
        # seat's vote keeps its word too
        pool = ([escape_text(o) for o in moves.vote_choice(memory, c).options]
                if c.tag == "vote" and table is None else opts)
        name = pool[0] if c.tag == "vote" and len(pool) == 1 else _example_name(memory, pool, rng)
        said = _speech_example(name, rng)
        will = will_example(memory)
        if c.tag == "whisper":
            args: dict[str, Any] = {"target": name, "text": said}
            call = f'<whisper to="{name}">{said}</whisper>'
        elif c.arg == "none":
            args, call = {}, f"<{c.tag}></{c.tag}>"
        elif c.arg == "names2":
            two = rng.sample(opts, 2) if len(opts) > 1 else [name, name]
            args = {"targets": two}
            call = f"<{c.tag}>{two[0]} and {two[1]}</{c.tag}>"
        elif c.arg in ("names", "self"):
            who = "yourself" if c.arg == "self" else name
            args = {"targets": [who]} if c.tag == "night" else {"target": who}
            call = f"<{c.tag}>{who}</{c.tag}>"
        elif c.tag == "judge":
            args, call = {"verdict": opts[0]}, f"<judge>{opts[0]}</judge>"
        else:
            text = said if c.tag == "speak" else will
            if c.tag == "death_note":
                text = "We know your secret."
            args, call = {"text": text}, f"<{c.tag}>{text}</{c.tag}>"
        if protocol == "json":
            call = json.dumps({"action": c.tag, "args": args}, ensure_ascii=False)
        what = {
            "speak": f"talk ({channel} chat, at least 3 words)", "whisper": "whisper to",
            "wait": "do nothing", "vote": "put on trial", "judge": "your verdict",
            "night": ability or "night ability",
            "will": "replace your last will", "death_note": "replace your death note",
            "reveal": "reveal yourself as the Mayor", "jail": "jail tonight",
            "seance": "hold a seance tonight with",
        }[c.tag]
        if opts and c.arg != "self":
            what += ": " + ", ".join(opts)
        out.append(f"{call} - {what}")
    return out


CHOICE_KEYS = frozenset({"night.chosen", "night.cancel", "night.mafia_chosen", "jail.chosen",
                         "jail.cancel"})
_CHOSEN = re.compile(r"(?:decided to|will) (.+?) tonight\.$")


def results_lines(memory: SeatMemory) -> list[str]:
    """Every private result of the game so far, oldest first, each with its
    night and the target this seat chose that night ("Night 2 - you chose to
    investigate Player 5: Your target could be ..."). Built only from the
    seat's own events (its Views)."""
    choices = memory.own_choices()
    out = []
    for e in memory.private_results():
        if e["key"] in CHOICE_KEYS:
            continue
        text = escape_text(e["text"])
        if e["phase"] != "night":
            out.append(f"Day {e['day']}: {text}")
            continue
        chosen = choices.get(e["day"])
        m = _CHOSEN.search(chosen["text"]) if chosen is not None else None
        if m is not None:
            out.append(f"Night {e['day']} - you chose to {escape_text(m.group(1))}: {text}")
        else:
            out.append(f"Night {e['day']}: {text}")
    return out


def render_turn(memory: SeatMemory, summaries: Mapping[int, str] | None = None,
                protocol: str = "xml", speech: str = "free", seed: int = 0,
                wait: bool = True) -> str:
    """The dynamic context for this turn. `summaries` maps earlier days to
    their summary (escaped here: model-written text quotes players); `seed`
    (the turn's) draws the examples; `wait=False`: `wait` is not offered."""
    new = [e for e in memory.new_events() if e["key"] not in CHAT_KEYS]
    public = [_event_line(e) for e in new if e["audience"] == "public"]
    shown = {id(e) for e in memory.private_results() if e["key"] not in CHOICE_KEYS}
    private = [_event_line(e) for e in new if e["audience"] != "public" and id(e) not in shown]
    chat = [format_chat(memory, e) for e in memory.chat(memory.day)]
    tool_results = [f"{t.tool}({escape_text(t.arg)}): {escape_text(t.observation)}"
                    for t in memory.tool_results_today()]
    earlier: Sequence[tuple[int, str]] = sorted(
        (d, escape_text(s)) for d, s in (summaries or {}).items() if d < memory.day)
    return render_template("turn.j2", phase_label=memory.phase_label, roster=roster_lines(memory),
                   summaries=earlier, public_events=public, private_events=private, chat=chat,
                   results=results_lines(memory),
                   tool_results=tool_results, state=_state_lines(memory),
                   actions=action_lines(memory, protocol, speech=speech, seed=seed,
                                                        wait=wait))


def build_messages(memory: SeatMemory, summaries: Mapping[int, str] | None = None,
                   protocol: str = "xml", persona: Persona | str | None = None,
                   max_tools: int = 4, speech: str = "free",
                   seed: int = 0, wait: bool = True) -> list[dict[str, str]]:
    """Chat messages for a turn: the system prompt and the turn context
    (`speech`: "free" text or structured "moves", docs/agents.md#speech-moves;
    `seed`: the turn's, which draws the examples)."""
    return [{"role": "system",
             "content": render_system(memory, protocol, persona, max_tools, speech)},
            {"role": "user", "content": render_turn(memory, summaries, protocol, speech,
                                                         seed, wait)}]
