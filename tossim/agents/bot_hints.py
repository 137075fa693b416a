"""Night choices of the scripted bots for roles the core bot does not script.

Keyed by the registry's ability name, so a new role's bot behaviour lives
here (or in its own entry) and `scripted.py` only asks `choose(bot, action)`
when it has no handler of its own. A hint sees the bot (its seat, its RNG
and, when present, its memory of claims and suspicions, read with fallbacks
so a rewrite of the bot does not break the hints) and the legal action, and
returns the targets, or None to do nothing. Everything is deterministic
given the bot's RNG.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tossim.engine.commands import Chat, Command, WriteDeathNote
from tossim.engine.legal import LegalAction
from tossim.engine.view import SelfView

INVESTIGATIVE = ("sheriff", "investigator", "lookout", "spy")
DANGEROUS = ("jailor", "vigilante", "veteran", "doctor", "bodyguard", "escort", "sheriff",
             "investigator")

Hint = Callable[[Any, LegalAction], tuple[int, ...] | None]


def _others(bot: Any, action: LegalAction) -> list[int]:
    return [t for t in action.targets if t != bot.slot]


def _claims(bot: Any) -> dict[int, str]:
    claims = getattr(bot, "claims", None)
    return claims if isinstance(claims, dict) else {}


def _sus(bot: Any) -> dict[int, float]:
    sus = getattr(bot, "sus", None)
    return sus() if callable(sus) else {}


def _memo(bot: Any) -> dict[str, Any]:
    memo = getattr(bot, "hint_memory", None)
    if memo is None:
        memo = {}
        bot.hint_memory = memo
    return memo


def _pick(bot: Any, cands: list[int]) -> tuple[int, ...] | None:
    return (bot.rng.choice(cands),) if cands else None


def _claimed(bot: Any, action: LegalAction, roles: tuple[str, ...]) -> list[int]:
    claims = _claims(bot)
    return [t for t in _others(bot, action) if claims.get(t) in roles]


def _team_target(bot: Any, action: LegalAction) -> int | None:
    t = getattr(bot, "team_target", None)
    return t if t in action.targets and t != bot.slot else None


def silence(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Blackmailer: a claimed investigator first, then anyone who claimed."""
    key = _claimed(bot, action, INVESTIGATIVE) or list(_claims(bot)) and [
        t for t in _others(bot, action) if t in _claims(bot)]
    return _pick(bot, key or _others(bot, action))


def consult(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Consigliere: someone not yet checked, claimed players last."""
    checked: set[int] = _memo(bot).setdefault("checked", set())
    claims = _claims(bot)
    fresh = [t for t in _others(bot, action) if t not in checked]
    unclaimed = [t for t in fresh if t not in claims]
    choice = _pick(bot, unclaimed or fresh or _others(bot, action))
    if choice:
        checked.add(choice[0])
    return choice


def at_the_kill(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Janitor, Forger, Disguiser: the Mafia's likely victim tonight (the
    team's pick, else a claimed key role, the Mafia's usual first kill)."""
    t = _team_target(bot, action)
    if t is not None:
        return (t,)
    return _pick(bot, _claimed(bot, action, DANGEROUS) or _others(bot, action))


def vest(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Survivor: vest when threatened (accused or claimed), else sometimes."""
    threatened = bool(getattr(bot, "accused_me", False) or getattr(bot, "claimed", ""))
    return (bot.slot,) if bot.rng.random() < (0.8 if threatened else 0.35) else None


def remember(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Amnesiac: the most useful dead Town role, else any."""
    dead_role = getattr(bot, "dead_role", {}) or {}
    order = ("jailor", "sheriff", "investigator", "doctor", "vigilante", "lookout",
             "godfather", "serial_killer")
    for role in order:
        for t in action.targets:
            if dead_role.get(t) == role:
                return (t,)
    return _pick(bot, list(action.targets)) if bot.rng.random() < 0.5 else None


def control(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Witch: the most suspicious player (likely a killer) onto a claimed Town member."""
    others = _others(bot, action)
    if len(others) < 2:
        return None
    sus = _sus(bot)
    killer = max(others, key=lambda t: (sus.get(t, 0.0), bot.rng.random()))
    town = [t for t in _claimed(bot, action, DANGEROUS + ("mayor", "medium")) if t != killer]
    victim = bot.rng.choice(town or [t for t in others if t != killer])
    return (killer, victim)


def douse(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Arsonist: douse someone new each night; ignite once a third of the
    living (or at least two) are doused, or every other living player is (a
    lone doused opponent is a win waiting to be taken), or when nobody died
    lately and a draw by time comes closer."""
    doused: set[int] = _memo(bot).setdefault("doused", set())
    alive = set(action.targets)
    doused &= alive
    everyone = bool(doused) and doused >= alive - {bot.slot}
    near = getattr(bot, "_draw_near", None)
    draw_near = bool(doused) and callable(near) and bool(near())  # no death lately
    if (everyone or draw_near or len(doused) >= max(2, (len(alive) - 1) // 3)) \
            and bot.slot in action.targets:
        doused.clear()
        return (bot.slot,)
    fresh = [t for t in _others(bot, action) if t not in doused]
    choice = _pick(bot, fresh)
    if choice:
        doused.add(choice[0])
    return choice


def kill_like(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Werewolf maul, Vampire bite: the bot's own kill choice, else a claimed key role."""
    pick = getattr(bot, "_kill_pick", None)
    targets = _others(bot, action)
    if callable(pick):
        best = pick(targets)
        if best is not None:
            return (best,)
    return _pick(bot, _claimed(bot, action, DANGEROUS) or targets)


def stake(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    """Vampire Hunter: the most suspicious player."""
    sus = _sus(bot)
    others = _others(bot, action)
    if not others:
        return None
    return (max(others, key=lambda t: (sus.get(t, 0.0), bot.rng.random())),)


HINTS: dict[str, Hint] = {
    "blackmail": silence,
    "check": consult,
    "disguise": at_the_kill,
    "forge": at_the_kill,
    "clean": at_the_kill,
    "vest": vest,
    "remember": remember,
    "control": control,
    "douse": douse,
    "maul": kill_like,
    "bite": kill_like,
    "stake": stake,
}

# A Forger's pad (its death note) holds the will it plants: written once.
FORGERY = "I was the Jester. Do not trust what the Sheriff says about me."


def choose(bot: Any, action: LegalAction) -> tuple[int, ...] | None:
    hint = HINTS.get(action.ability)
    return hint(bot, action) if hint is not None else None


def pad(slot: int, role: str, you: SelfView,
        legal: dict[str, LegalAction]) -> list[Command]:
    """Night extras: the death-note pad a role keeps filled (the Forger's
    forgery, once) and a word in a non-Mafia team chat (the Vampires)."""
    out: list[Command] = []
    if role == "forger" and "death_note" in legal and you.death_note != FORGERY:
        out.append(WriteDeathNote(slot, FORGERY))
    chat = legal.get("chat")
    if chat is not None and "vampire" in chat.options and "night" in legal:
        out.append(Chat(slot, "I will bite tonight. Stay quiet tomorrow.", "vampire"))
    return out
