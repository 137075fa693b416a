"""Legal actions for a seat now, and the checks that reject everything else.

The same list is sent to clients with every observation, used by the scripted
bots, and turned into the grammar of an LLM turn; `check` re-validates each
command against it, so what a seat is offered and what the engine accepts can
never drift apart. Rejections carry a fault kind (seed 002's taxonomy) and the
candidates the actor could have meant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tossim.engine.commands import (
    Chat,
    Command,
    DayAction,
    Judge,
    NightAction,
    PhaseTimeout,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
)
from tossim.engine.roles import Ability, Faction, TargetRule
from tossim.engine.roles.handlers import AVAILABLE
from tossim.engine.state import (
    DAY_PHASES,
    MAX_CHAT,
    MAX_DEATH_NOTE,
    MAX_WILL,
    Game,
    Phase,
    Player,
)

VERDICTS = ("guilty", "innocent", "abstain")
TALK_PHASES = frozenset({Phase.DAY1, Phase.DISCUSSION, Phase.VOTING, Phase.JUDGEMENT})


@dataclass(frozen=True, slots=True)
class LegalAction:
    """One thing a seat may do now. `targets` are the allowed player slots;
    `n_targets` how many to name (0: none); `options` the allowed words
    (verdicts, chat channels)."""

    kind: str  # chat whisper vote judge night jail seance reveal will death_note
    targets: tuple[int, ...] = ()
    n_targets: int = 0
    ability: str = ""
    options: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "targets": list(self.targets), "n_targets": self.n_targets,
                "ability": self.ability, "options": list(self.options)}

    @classmethod
    def from_dict(cls, data: object) -> LegalAction:
        """The inverse of `to_dict`, for views that crossed a wire (an
        inference worker plays a seat from its serialized View)."""
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise ValueError("a legal action is an object with a string 'kind'")
        targets, options = data.get("targets", []), data.get("options", [])
        n_targets, ability = data.get("n_targets", 0), data.get("ability", "")
        if (not isinstance(targets, list) or not all(type(t) is int for t in targets)
                or not isinstance(options, list) or not all(isinstance(o, str) for o in options)
                or type(n_targets) is not int or not isinstance(ability, str)):
            raise ValueError(f"malformed legal action: {data!r}"[:200])
        return cls(kind=data["kind"], targets=tuple(targets), n_targets=n_targets,
                   ability=ability, options=tuple(options))


class IllegalCommand(ValueError):
    """A well-formed command the engine will not execute now.

    fault: intention (not available now), premise (target dead, jailed, not in
    the game ...), parameter (missing/extra argument, bad length) or
    expression (ambiguous name; raised by name resolvers, not the engine).
    """

    def __init__(self, reason: str, fault: str = "intention",
                 candidates: tuple[int, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fault = fault
        self.candidates = candidates


# ---- channels ----------------------------------------------------------------------

def chat_channels(game: Game, p: Player) -> tuple[str, ...]:
    """Where `p` can talk right now, most specific first."""
    phase = game.phase
    if phase is Phase.ENDED:
        return ()
    if phase in DAY_PHASES:
        if not p.alive:
            return ("dead",)
        if "blackmailed" in p.effects:
            return ()
        if phase in (Phase.DEFENSE, Phase.LAST_WORDS):
            return ("public",) if p.slot == game.accused else ()
        return ("public",)
    # night
    out: list[str] = []
    if game.seance is not None and p.slot in game.seance:
        out.append("seance")
    if not p.alive:
        out.append("dead")
        return tuple(out)
    if game.prisoner is not None and (p.slot == game.prisoner or p.role == "jailor"):
        out.insert(0, "jail")
        if p.slot == game.prisoner:
            return tuple(out)
    if p.spec.night_chat:  # the team's night chat (Mafia, Vampires)
        out.append(p.spec.night_chat)
    if p.role == "medium":
        out.append("dead")
    return tuple(out)


# ---- targets -----------------------------------------------------------------------

def ability_targets(game: Game, p: Player, ability: Ability) -> tuple[int, ...]:
    rule = ability.rule
    living = [q.slot for q in game.players if q.alive]
    if rule is TargetRule.LIVING_OTHER:
        out = [s for s in living if s != p.slot]
    elif rule is TargetRule.LIVING_ANY:
        out = list(living)
    elif rule is TargetRule.LIVING_NON_MAFIA:
        out = [s for s in living if game.player(s).faction is not Faction.MAFIA]
    elif rule is TargetRule.LIVING_NON_TEAM:
        team = p.spec.night_chat
        out = [s for s in living if not team or game.player(s).spec.night_chat != team]
    elif rule is TargetRule.DEAD_UNCLEANED:
        out = [q.slot for q in game.players if not q.alive and q.death is not None
               and not q.death.cleaned]
    elif rule is TargetRule.SELF:
        out = [p.slot]
    elif rule is TargetRule.PRISONER:
        out = [game.prisoner] if game.prisoner is not None else []
    elif rule is TargetRule.DEAD_TOWN:
        out = [q.slot for q in game.players if not q.alive and q.faction is Faction.TOWN
               and q.slot not in game.night_revived
               and not (q.death is not None and q.death.cleaned)]
    else:  # HAUNT
        out = [s for s in game.haunt_candidates if game.player(s).alive]
    # limits the ability states as data
    if ability.not_revealed_mayor:
        out = [s for s in out if not game.player(s).revealed]
    if ability.self_uses and p.uses.get(ability.self_uses, 0) <= 0:
        out = [s for s in out if s != p.slot]
    if ability.name == "seance":
        out = [s for s in out if s != p.slot]
    return tuple(out)


def night_ability(game: Game, p: Player) -> Ability | None:
    """The ability `p` may use tonight, if any."""
    if game.phase is not Phase.NIGHT:
        return None
    if not p.alive:
        return p.spec.night if p.slot == game.haunter else None
    ability = p.spec.night
    if ability is None or p.slot == game.prisoner or ability.name == "haunt":
        return None
    if ability.not_first_night and game.day == 1:
        return None
    if ability.uses is not None and p.uses.get(ability.uses, 0) <= 0:
        return None
    if ability.name == "execute" and game.prisoner is None:
        return None
    if ability.available and not AVAILABLE[ability.available](game, p):
        return None
    return ability


def day_ability(game: Game, p: Player) -> Ability | None:
    if game.phase not in DAY_PHASES:
        return None
    ability = p.spec.day
    if ability is None:
        return None
    if ability.name == "seance":
        return ability if not p.alive and p.uses.get("seance", 0) > 0 else None
    if not p.alive:
        return None
    if ability.name == "reveal" and p.revealed:
        return None
    return ability


# ---- the list ----------------------------------------------------------------------

# LegalActions are frozen values, so equal ones can be one object: a view is
# built for every seat and turn, and the same few actions (talk in public,
# vote for the living, write a will) come up again and again.
_MADE: dict[tuple[str, tuple[int, ...], int, str, tuple[str, ...]], LegalAction] = {}


def _action(kind: str, targets: tuple[int, ...] = (), n_targets: int = 0, ability: str = "",
            options: tuple[str, ...] = ()) -> LegalAction:
    key = (kind, targets, n_targets, ability, options)
    made = _MADE.get(key)
    if made is None:
        if len(_MADE) > 8192:
            _MADE.clear()
        made = _MADE[key] = LegalAction(kind, targets, n_targets, ability, options)
    return made


# the actions that never vary, and talk by the channels open (a handful)
_JUDGE = LegalAction("judge", options=VERDICTS)
_REVEAL = LegalAction("reveal", ability="reveal")
_WILL = LegalAction("will")
_DEATH_NOTE = LegalAction("death_note")
_CHAT: dict[tuple[str, ...], LegalAction] = {}


def _chat(game: Game, p: Player) -> LegalAction | None:
    channels = chat_channels(game, p)
    if not channels:
        return None
    action = _CHAT.get(channels)
    if action is None:
        action = _CHAT[channels] = LegalAction("chat", options=channels)
    return action


def _whisper(game: Game, p: Player) -> LegalAction | None:
    if not p.alive or p.revealed or game.phase not in TALK_PHASES or "blackmailed" in p.effects:
        return None
    me = p.slot
    targets = tuple([q.slot for q in game.players
                     if q.alive and q.slot != me and not q.revealed])
    return _action("whisper", targets, 1) if targets else None


def _vote(game: Game, p: Player) -> LegalAction | None:
    if not p.alive or game.phase is not Phase.VOTING:
        return None
    me = p.slot
    targets = tuple([q.slot for q in game.players if q.alive and q.slot != me])
    return _action("vote", targets, 1)


def _judge(game: Game, p: Player) -> LegalAction | None:
    if p.alive and game.phase is Phase.JUDGEMENT and p.slot != game.accused:
        return _JUDGE
    return None


def _night(game: Game, p: Player) -> LegalAction | None:
    ability = night_ability(game, p)
    if ability is None:
        return None
    targets = ability_targets(game, p, ability)
    n = 0 if ability.rule is TargetRule.SELF else ability.targets
    if not targets or len(targets) < n:
        return None
    return _action("night", targets, n, ability.name)


def _day(kind: str) -> Callable[[Game, Player], LegalAction | None]:
    def build(game: Game, p: Player) -> LegalAction | None:
        day = day_ability(game, p)
        if day is None or day.name != kind:
            return None
        if kind == "reveal":
            return _REVEAL
        targets = ability_targets(game, p, day)
        return _action(kind, targets, 1, kind) if targets else None
    return build


def _will(game: Game, p: Player) -> LegalAction | None:
    return _WILL if p.alive else None


def _death_note(game: Game, p: Player) -> LegalAction | None:
    return _DEATH_NOTE if p.alive and p.spec.death_note else None


# One builder per kind, in the order clients list them. `check` asks only the
# builder of the command's kind, so validation costs one builder, not all.
BUILDERS: dict[str, Callable[[Game, Player], LegalAction | None]] = {
    "chat": _chat, "whisper": _whisper, "vote": _vote, "judge": _judge, "night": _night,
    "jail": _day("jail"), "seance": _day("seance"), "reveal": _day("reveal"),
    "will": _will, "death_note": _death_note,
}


# The phases in which each kind can be offered at all (each builder checks its
# phase itself too); kinds not listed can be offered in any phase. A view is
# built for every seat and turn, so `legal_actions` asks only the builders
# that can answer: those of the current phase, and of the day abilities only
# the one the player's role has.
_KIND_PHASES: dict[str, frozenset[Phase]] = {
    "whisper": TALK_PHASES, "vote": frozenset({Phase.VOTING}),
    "judge": frozenset({Phase.JUDGEMENT}), "night": frozenset({Phase.NIGHT}),
    "jail": DAY_PHASES, "seance": DAY_PHASES, "reveal": DAY_PHASES,
}
_DAY_KINDS = frozenset({"jail", "seance", "reveal"})
_Builders = tuple[Callable[[Game, Player], LegalAction | None], ...]
_ASKED: dict[tuple[Phase, str], _Builders] = {}


def _builders(phase: Phase, day_ability_name: str) -> _Builders:
    key = (phase, day_ability_name)
    out = _ASKED.get(key)
    if out is None:
        out = _ASKED[key] = tuple(
            build for kind, build in BUILDERS.items()
            if phase in _KIND_PHASES.get(kind, (phase,))
            and (kind not in _DAY_KINDS or kind == day_ability_name))
    return out


def legal_actions(game: Game, slot: int) -> list[LegalAction]:
    if game.phase is Phase.ENDED:
        return []
    p = game.player(slot)
    day = p.spec.day
    return [a for build in _builders(game.phase, day.name if day is not None else "")
            if (a := build(game, p)) is not None]


def legal_action(game: Game, slot: int, kind: str) -> LegalAction | None:
    """The one legal action of this kind for `slot` now, if any."""
    if game.phase is Phase.ENDED:
        return None
    return BUILDERS[kind](game, game.player(slot))


# ---- checking ----------------------------------------------------------------------

def _target_fault(game: Game, slot: int, target: int, allowed: tuple[int, ...],
                  what: str) -> IllegalCommand:
    if not game.has_slot(target):
        return IllegalCommand(f"There is no player {target} in this game.", "premise", allowed)
    t = game.player(target)
    if target == slot:
        reason = f"You cannot {what} yourself."
    elif not t.alive and what != "revive":  # the Retributionist aims at the dead
        reason = f"{t.name} is dead."
    elif t.revealed:
        reason = f"{t.name} is the revealed Mayor."
    else:
        reason = f"You cannot {what} {t.name}."
    return IllegalCommand(reason, "premise", allowed)


def _require(game: Game, slot: int, kind: str, what: str) -> LegalAction:
    action = legal_action(game, slot, kind)
    if action is not None:
        return action
    p = game.player(slot)
    if game.phase is Phase.ENDED:
        raise IllegalCommand("The game is over.")
    if not p.alive and kind not in ("chat", "seance", "night"):
        raise IllegalCommand(f"You are dead and cannot {what}.")
    if kind in ("chat", "whisper") and p.alive and "blackmailed" in p.effects \
            and game.phase in DAY_PHASES:
        raise IllegalCommand("You are blackmailed: you cannot talk or whisper today "
                             "(you can still vote).", "premise")
    if game.prisoner == slot and kind == "night":
        raise IllegalCommand("You are in jail and cannot act tonight.")
    raise IllegalCommand(f"You cannot {what} now ({_phase_name(game)}).")


def _phase_name(game: Game) -> str:
    if game.phase is Phase.NIGHT:
        return f"Night {game.day}"
    if game.phase is Phase.DAY1:
        return "Day 1"
    return f"Day {game.day}, {game.phase.value.replace('_', ' ')}"


# Control characters (a NUL cannot even be stored in PostgreSQL) and lone
# surrogates (not encodable as UTF-8); newlines and tabs are fine. One regex
# search per text: every chat line and will is checked.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _check_text(text: str, limit: int, what: str, allow_empty: bool = False) -> None:
    if not allow_empty and not text.strip():
        raise IllegalCommand(f"Your {what} is empty.", "parameter")
    if len(text) > limit:
        raise IllegalCommand(f"Your {what} is {len(text)} characters; the limit is {limit}.",
                             "parameter")
    if _UNPRINTABLE.search(text):
        raise IllegalCommand(f"Your {what} contains a control character.", "parameter")


def check(game: Game, cmd: Command) -> None:
    """Raise IllegalCommand unless `cmd` may be applied now."""
    if isinstance(cmd, PhaseTimeout):
        if game.phase is Phase.ENDED:
            raise IllegalCommand("The game is over.")
        if cmd.phase_seq is not None and cmd.phase_seq != game.phase_seq:
            raise IllegalCommand("This timer belongs to an earlier phase.", "premise")
        return
    actor = getattr(cmd, "actor", None)
    if not game.has_slot(actor):
        raise IllegalCommand(f"There is no player {actor} in this game.", "premise")
    assert isinstance(actor, int)
    if isinstance(cmd, Chat):
        action = _require(game, actor, "chat", "talk")
        _check_text(cmd.text, MAX_CHAT, "message")
        if cmd.channel is not None and cmd.channel not in action.options:
            raise IllegalCommand(f"You cannot talk in the {cmd.channel} channel now.",
                                 "premise", ())
    elif isinstance(cmd, Whisper):
        action = _require(game, actor, "whisper", "whisper")
        _check_text(cmd.text, MAX_CHAT, "whisper")
        if cmd.target not in action.targets:
            raise _target_fault(game, actor, cmd.target, action.targets, "whisper to")
    elif isinstance(cmd, Vote):
        action = _require(game, actor, "vote", "vote")
        if cmd.target is not None and cmd.target not in action.targets:
            raise _target_fault(game, actor, cmd.target, action.targets, "vote for")
    elif isinstance(cmd, Judge):
        _require(game, actor, "judge", "vote on a verdict")
        if cmd.verdict not in VERDICTS:
            raise IllegalCommand(f"A verdict is one of {', '.join(VERDICTS)}.", "parameter")
    elif isinstance(cmd, NightAction):
        action = _require(game, actor, "night", "act tonight")
        if not cmd.targets:
            return  # cancelling is always allowed
        if len(cmd.targets) != max(action.n_targets, 1):
            raise IllegalCommand(
                f"{action.ability} takes {max(action.n_targets, 1)} target(s), "
                f"not {len(cmd.targets)}.", "parameter", action.targets)
        if len(set(cmd.targets)) != len(cmd.targets):
            raise IllegalCommand("Name two different players.", "parameter", action.targets)
        for t in cmd.targets:
            if t not in action.targets:
                raise _target_fault(game, actor, t, action.targets, action.ability)
    elif isinstance(cmd, DayAction):
        if cmd.ability not in ("jail", "seance", "reveal"):
            raise IllegalCommand(f"Unknown day ability {cmd.ability!r}.", "parameter")
        action = _require(game, actor, cmd.ability, cmd.ability)
        if cmd.ability == "reveal":
            if cmd.target is not None:
                raise IllegalCommand("Revealing takes no target.", "parameter")
        elif cmd.target is not None and cmd.target not in action.targets:
            raise _target_fault(game, actor, cmd.target, action.targets, cmd.ability)
    elif isinstance(cmd, WriteWill):
        _require(game, actor, "will", "write a will")
        _check_text(cmd.text, MAX_WILL, "will", allow_empty=True)
    elif isinstance(cmd, WriteDeathNote):
        _require(game, actor, "death_note", "write a death note")
        _check_text(cmd.text, MAX_DEATH_NOTE, "death note", allow_empty=True)
    else:  # pragma: no cover - every command type is listed above
        raise IllegalCommand(f"Unknown command {cmd!r}.", "intention")
