"""The day/night flow (rules reference A1): phase changes, trials, the lynch,
dawn announcements and the victory checks that follow deaths."""

from __future__ import annotations

from typing import Any

from tossim.engine import victory
from tossim.engine.events import PUBLIC, Audience, to
from tossim.engine.log import emit
from tossim.engine.messages import CAUSE_TEXT
from tossim.engine.night import resolve_night, shown_role
from tossim.engine.roles import ROLES, Faction
from tossim.engine.roles.handlers import CONDITIONS
from tossim.engine.state import EFFECTS, Death, Game, Phase


def set_phase(game: Game, phase: Phase) -> None:
    game.phase = phase
    game.phase_seq += 1


def votes_needed(game: Game) -> int:
    return len(game.living()) // 2 + 1


def weight(game: Game, slot: int) -> int:
    """A revealed Mayor counts 3, in Voting and in Judgement."""
    return 3 if game.player(slot).revealed else 1


def mafia_audience(game: Game) -> Audience:
    members = frozenset(p.slot for p in game.living() if p.faction is Faction.MAFIA)
    return Audience("mafia", members)


def team_audience(game: Game, team: str) -> Audience:
    """The living members of a night-chat team (Mafia, Vampires)."""
    if team == "mafia":
        return mafia_audience(game)
    return Audience(team, frozenset(p.slot for p in game.living()
                                    if p.spec.night_chat == team))


def dead_audience(game: Game) -> Audience:
    """The dead, and a living Medium (who reads the dead chat at night)."""
    return Audience("dead", frozenset(p.slot for p in game.players
                                      if not p.alive or (p.role == "medium"
                                                         and game.phase is Phase.NIGHT)))


# ---- timer -------------------------------------------------------------------------

def advance(game: Game) -> None:
    """The current phase's time is up."""
    phase = game.phase
    if phase is Phase.DAY1:
        begin_night(game)
    elif phase is Phase.DISCUSSION:
        begin_voting(game)
    elif phase is Phase.VOTING:
        begin_night(game)
    elif phase is Phase.DEFENSE:
        set_phase(game, Phase.JUDGEMENT)
        game.verdicts = {}
        emit(game, "phase.judgement", PUBLIC, data={"accused": game.accused},
             accused=game.name(_accused(game)))
    elif phase is Phase.JUDGEMENT:
        end_judgement(game)
    elif phase is Phase.LAST_WORDS:
        lynch(game)
    elif phase is Phase.NIGHT:
        end_night(game)


def _accused(game: Game) -> int:
    assert game.accused is not None
    return game.accused


def begin_voting(game: Game) -> None:
    set_phase(game, Phase.VOTING)
    game.votes = {}
    game.accused = None
    emit(game, "phase.voting", PUBLIC, needed=votes_needed(game))


# ---- voting and trials ---------------------------------------------------------------

def cast_vote(game: Game, voter: int, target: int | None) -> None:
    before = game.votes.get(voter)
    if target is None:
        if before is None:
            return
        del game.votes[voter]
        emit(game, "vote.cancel", PUBLIC, data={"voter": voter}, voter=game.name(voter))
        return
    if before == target:
        return
    game.votes[voter] = target
    key = "vote.cast" if before is None else "vote.changed"
    emit(game, key, PUBLIC, data={"voter": voter, "target": target},
         voter=game.name(voter), target=game.name(target))
    trial_if_majority(game, target)


def tally(game: Game) -> dict[int, int]:
    """Weighted votes per target (a revealed Mayor counts 3)."""
    out: dict[int, int] = {}
    for voter, target in game.votes.items():
        out[target] = out.get(target, 0) + weight(game, voter)
    return out


def trial_if_majority(game: Game, target: int) -> None:
    if tally(game).get(target, 0) >= votes_needed(game):
        start_trial(game, target)


def start_trial(game: Game, accused: int) -> None:
    game.trials += 1
    game.accused = accused
    emit(game, "trial.start", PUBLIC, data={"accused": accused, "trial": game.trials},
         accused=game.name(accused))
    set_phase(game, Phase.DEFENSE)
    emit(game, "phase.defense", PUBLIC, data={"accused": accused}, accused=game.name(accused))


def cast_verdict(game: Game, voter: int, verdict: str) -> None:
    before = game.verdicts.get(voter)
    if before == verdict:
        return
    game.verdicts[voter] = verdict
    emit(game, "judge.private", to(voter), verdict=verdict)
    emit(game, "judge.cast" if before is None else "judge.changed", PUBLIC,
         data={"voter": voter}, voter=game.name(voter))


def end_judgement(game: Game) -> None:
    accused = _accused(game)
    guilty = innocent = 0
    for p in game.living():
        if p.slot == accused:
            continue
        verdict = game.verdicts.get(p.slot, "abstain")
        if verdict == "guilty":
            guilty += weight(game, p.slot)
        elif verdict == "innocent":
            innocent += weight(game, p.slot)
        emit(game, "judge.vote", PUBLIC, data={"voter": p.slot, "verdict": verdict},
             voter=p.name, verdict=verdict)
    params: dict[str, Any] = {"accused": game.name(accused), "guilty": guilty,
                              "innocent": innocent}
    data = {"accused": accused, "guilty": guilty, "innocent": innocent}
    if guilty > innocent:
        emit(game, "judge.lynch", PUBLIC, data=data, **params)
        set_phase(game, Phase.LAST_WORDS)
        emit(game, "phase.last_words", PUBLIC, data={"accused": accused},
             accused=game.name(accused))
        return
    emit(game, "judge.pardon", PUBLIC, data=data, **params)
    if game.trials >= game.flags.max_trials_per_day:
        emit(game, "trial.limit", PUBLIC, count=game.trials)
        begin_night(game)
    else:
        begin_voting(game)


def lynch(game: Game) -> None:
    accused = _accused(game)
    p = game.player(accused)
    p.alive = False
    p.lynched = True
    shown = shown_role(p)
    p.death = Death(day=game.day, at_night=False, causes=["lynch"], will=p.will,
                    death_notes=[], role_shown=shown)
    game.last_death_day = game.day
    emit(game, "lynch.death", PUBLIC, data={"player": accused, "role": shown},
         name=p.name, role=shown)
    if p.will:
        emit(game, "lynch.will", PUBLIC, data={"player": accused, "will": p.will},
             name=p.name, will=p.will)
    if p.role == "jester":
        p.won_early = True
        game.haunter = accused
        voted = ("guilty",) if game.flags.haunt_voters == "guilty" else ("guilty", "abstain")
        game.haunt_candidates = tuple(
            q.slot for q in game.living()
            if game.verdicts.get(q.slot, "abstain") in voted)
        emit(game, "lynch.jester", PUBLIC)
        emit(game, "haunt.choose", to(accused), data={"candidates": list(game.haunt_candidates)})
    for exe in game.players:
        if exe.role == "executioner" and exe.target == accused and not exe.won_early and (
                exe.alive or not game.flags.executioner_must_survive):
            exe.won_early = True
            emit(game, "lynch.executioner_won", to(exe.slot))
    after_deaths(game, [accused], at_night=False)
    if not finish_if_over(game):
        begin_night(game)


# ---- night -------------------------------------------------------------------------

def begin_night(game: Game) -> None:
    set_phase(game, Phase.NIGHT)
    game.votes = {}
    game.accused = None
    game.night_actions = {}
    game.night_deaths = []
    game.night_revived = []
    for p in game.players:  # effects that last "the next day" end now (state.EFFECTS)
        if p.effects:
            for key in [k for k in p.effects if EFFECTS[k] == "next_day"]:
                del p.effects[key]
    emit(game, "phase.night", PUBLIC)
    if game.day % 2 == 0:  # full moons are even nights; everyone is told (docs/rules.md, Night)
        emit(game, "night.full_moon", PUBLIC)
    jailor = next((p for p in game.living() if p.role == "jailor"), None)
    choice = game.jail_choice
    game.jail_choice = None
    if jailor is not None and choice is not None and game.player(choice).alive:
        game.prisoner = choice
        emit(game, "night.jailed", to(choice), data={})
        emit(game, "night.jailor_prisoner", to(jailor.slot), data={"target": choice},
             target=game.name(choice))
    choice, chooser = game.seance_choice, game.seance_medium
    game.seance_choice = game.seance_medium = None
    if choice is not None and chooser is not None and game.player(choice).alive:
        medium = game.player(chooser)  # the dead Medium who chose, not just any
        medium.uses["seance"] -= 1
        game.seance = (medium.slot, choice)
        emit(game, "night.seance_target", to(choice), data={})


def end_night(game: Game) -> None:
    resolve_night(game)
    deaths, revived = game.night_deaths, game.night_revived
    game.prisoner = None
    game.seance = None
    game.haunter = None
    game.haunt_candidates = ()
    game.night_actions = {}
    game.day += 1
    set_phase(game, Phase.DISCUSSION)
    game.trials = 0
    emit(game, "phase.discussion", PUBLIC)
    for slot in deaths:
        p = game.player(slot)
        assert p.death is not None
        cause = CAUSE_TEXT[p.death.causes[0]]
        emit(game, "dawn.death", PUBLIC, data={"player": slot, "causes": p.death.causes},
             name=p.name, cause=cause)
        if p.death.cleaned:
            emit(game, "dawn.cleaned", PUBLIC, data={"player": slot, "role": None},
                 name=p.name)
        else:
            emit(game, "dawn.role", PUBLIC, data={"player": slot, "role": p.death.role_shown},
                 name=p.name, role=p.death.role_shown)
        if p.death.will:
            emit(game, "dawn.will", PUBLIC, data={"player": slot, "will": p.death.will},
                 name=p.name, will=p.death.will)
        elif not p.death.cleaned:
            emit(game, "dawn.no_will", PUBLIC, data={"player": slot})
        for note in p.death.death_notes:
            emit(game, "dawn.death_note", PUBLIC, data={"player": slot, "note": note},
                 name=p.name, note=note)
    for slot in revived:
        emit(game, "dawn.revived", PUBLIC, data={"player": slot}, name=game.name(slot))
    for key, data, params in game.memo.pop("dawn", ()):  # the night's announcements
        emit(game, key, PUBLIC, data=data, **params)
    if not deaths and not revived:
        emit(game, "dawn.quiet", PUBLIC)
    after_deaths(game, deaths, at_night=True)
    if finish_if_over(game):
        return
    if victory.timeout_draw(game):
        end_game(game, "draw")
    elif victory.draw_tomorrow(game):
        emit(game, "dawn.draw_warning", PUBLIC)


def after_deaths(game: Game, deaths: list[int], at_night: bool) -> None:
    """Promotions and role changes that follow deaths (A2.8, A3 Executioner)."""
    if not deaths:
        return
    living = game.living()
    # A2.8: the Godfather dies -> the Mafioso becomes Godfather; with no Mafia
    # Killing role left (whatever the cause of death, a lynch included),
    # another Mafia member (first joined) becomes Mafioso, never Godfather.
    # A game dealt without a Godfather keeps its Mafioso a Mafioso.
    died = {game.player(s).role for s in deaths}
    if not any(p.spec.alignment == "Mafia Killing" for p in living):
        heir = next((p for p in living if p.faction is Faction.MAFIA), None)
        if heir is not None:
            _promote(game, heir.slot, "mafioso")
    elif "godfather" in died and not any(p.role == "godfather" for p in living):
        mafioso = next(p for p in living if p.role == "mafioso")
        _promote(game, mafioso.slot, "godfather")
    change_roles(game)
    if at_night:
        for exe in living:
            if exe.role == "executioner" and exe.target in deaths:
                exe.role = "jester"
                emit(game, "night.became_jester", to(exe.slot), data={})


def change_roles(game: Game) -> None:
    """Role changes stated as data (`Role.becomes` when `Role.becomes_when`):
    a Vampire Hunter with no Vampire left becomes a Vigilante."""
    for p in game.living():
        spec = p.spec
        if spec.becomes and CONDITIONS[spec.becomes_when](game, p):
            p.role = spec.becomes
            p.uses = dict(spec.becomes_uses or ROLES[spec.becomes].uses)
            emit(game, "role.changed", to(p.slot), data={"role": p.spec.name},
                 role=p.spec.name)


def _promote(game: Game, slot: int, role_key: str) -> None:
    p = game.player(slot)
    p.role = role_key
    name = "Godfather" if role_key == "godfather" else "Mafioso"
    emit(game, "night.promoted", mafia_audience(game), data={"player": slot, "role": name},
         name=p.name, role=name)


# ---- the end -----------------------------------------------------------------------

def finish_if_over(game: Game) -> bool:
    result = victory.check(game)
    if result is None:
        return False
    end_game(game, result)
    return True


def end_game(game: Game, result: str) -> None:
    game.result = result
    game.winners = victory.winners(game, result)
    set_phase(game, Phase.ENDED)
    emit(game, "game.end", PUBLIC,
         data={"result": result, "winners": list(game.winners)},
         result=victory.describe(game, result))
    for p in game.players:
        emit(game, "game.roles", PUBLIC, data={"player": p.slot, "role": p.spec.name},
             name=p.name, role=p.spec.name)
