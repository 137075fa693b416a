"""The engine's entry points: `new_game(config)` and `apply(game, command)`.

Both are deterministic: the same config (with its seed) and the same command
log give the same event log, byte for byte. Nothing here does I/O or reads a
clock; the server turns phase durations into `PhaseTimeout` commands.
"""

from __future__ import annotations

import random
from typing import Any

from tossim.engine import legal, phases, role_lists
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
from tossim.engine.events import PUBLIC, Audience, Event, to
from tossim.engine.log import emit
from tossim.engine.modes import CUSTOM, get_mode
from tossim.engine.role_lists import ConfigError, RoleListError
from tossim.engine.roles import ROLES, Faction, find_role
from tossim.engine.state import Game, GameConfig, Phase, Player

# Night chats of teams other than the Mafia (whose channel has its own events).
TEAM_CHANNELS = frozenset(r.night_chat for r in ROLES.values()) - {"", "mafia"}


def role_list(config: GameConfig) -> tuple[str, ...]:
    """The slots this game deals: a custom list, or the mode's first N slots."""
    mode = get_mode(config.mode)
    if mode.custom:
        return config.role_list
    return mode.slots[: config.players]


def check_config(config: GameConfig) -> None:
    """Refuse a config whose roles cannot be dealt, naming the slot and the
    reason (RoleListError, a ConfigError) before any game is made."""
    if config.roles:
        if len(config.roles) != config.players:
            raise ConfigError(f"{len(config.roles)} roles for {config.players} players")
        for i, name in enumerate(config.roles, start=1):
            if find_role(name) is None:
                raise RoleListError(i, name, "unknown role")
        return
    try:
        mode = get_mode(config.mode)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if config.role_list and not mode.custom:
        raise ConfigError(f"a role list needs mode 'custom', not {config.mode!r}")
    if mode.custom and not config.role_list:
        raise ConfigError("mode 'custom' needs a role list")
    if not mode.custom and not mode.min_players <= config.players <= mode.max_players:
        span = str(mode.max_players) if mode.min_players == mode.max_players \
            else f"{mode.min_players}-{mode.max_players}"
        raise ConfigError(f"{mode.name} needs {span} players, not {config.players}")
    if not 1 <= config.players <= CUSTOM.max_players:
        raise ConfigError(f"games have 1-{CUSTOM.max_players} players, not {config.players}")
    flags = config.rule_flags()
    role_lists.check(role_lists.parse_role_list(role_list(config)), config.players,
                     custom=mode.custom, any_custom_only=flags.any_deals_custom_only)


def make_config(mode: str = "classic", players: int | None = None, seed: int = 0,
                roles: str | list[str] | None = None, **extra: Any) -> GameConfig:
    """A checked config from what a person types: a mode, or a custom role list
    ("Jailor, Town Investigative, Any" or a list of slots), which implies mode
    "custom" and, unless given, the player count. Raises ConfigError (a
    RoleListError names the slot) for anything that cannot be dealt."""
    role_list: tuple[str, ...] = ()
    if roles:
        role_list = tuple(role_lists.split_role_list(roles) if isinstance(roles, str)
                          else roles)
        if mode not in ("classic", "custom"):
            raise ConfigError(f"a role list is its own mode ('custom'), not {mode!r}")
        mode = "custom"
    try:
        m = get_mode(mode)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if players is None:
        players = len(role_list) if role_list else m.max_players
    config = GameConfig(mode=m.key, players=players, seed=seed, role_list=role_list, **extra)
    check_config(config)
    return config


def deal(config: GameConfig, rng: random.Random) -> list[str]:
    """Role keys in seat order: the config's fixed roles; or the role list's
    slots dealt (role_lists.deal) and shuffled over the seats."""
    check_config(config)
    if config.roles:
        return [r.key for name in config.roles if (r := find_role(name)) is not None]
    mode = get_mode(config.mode)
    slots = role_lists.parse_role_list(role_list(config))
    keys = role_lists.deal(slots, rng, custom=mode.custom,
                           any_custom_only=config.rule_flags().any_deals_custom_only,
                           caps=mode.faction_caps)
    rng.shuffle(keys)
    return keys


def new_game(config: GameConfig) -> Game:
    flags = config.rule_flags()
    if config.names and len(config.names) != config.players:
        raise ConfigError(f"{len(config.names)} names for {config.players} players")
    if len(set(config.names)) != len(config.names):
        raise ConfigError("player names must be unique")
    rng = random.Random(config.seed)
    keys = deal(config, rng)
    names = config.names or tuple(f"Player {i}" for i in range(1, config.players + 1))
    players = [
        Player(slot=i, name=names[i - 1], role=k, original_role=k,
               uses=ROLES[k].starting_uses(flags))
        for i, k in enumerate(keys, start=1)
    ]
    game = Game(config=config, flags=flags, players=players, rng=rng)
    for p in players:
        if p.role == "executioner":
            pool = [q.slot for q in players
                    if q.faction is Faction.TOWN and q.role not in ("jailor", "mayor")]
            if pool:
                p.target = rng.choice(pool)
            else:
                p.role = "jester"
    mode = get_mode(config.mode)
    emit(game, "game.start", PUBLIC,
         data={"mode": config.mode, "players": [{"slot": p.slot, "name": p.name}
                                                for p in players],
               "role_list": list(role_list(config)) if not config.roles else []},
         mode=mode.name, count=config.players)
    for p in players:
        emit(game, "game.role", to(p.slot), data={"role": p.spec.name},
             role=p.spec.name, summary=p.spec.summary)
    mafia = [p for p in players if p.faction is Faction.MAFIA]
    if mafia:
        emit(game, "game.mafia_team", Audience("mafia", frozenset(p.slot for p in mafia)),
             data={"members": [{"slot": p.slot, "role": p.spec.name} for p in mafia]},
             members=", ".join(f"{p.name} ({p.spec.name})" for p in mafia))
    teams = sorted({p.spec.night_chat for p in players} - {"", "mafia"})
    for team in teams:  # other night-chat teams (Vampires) learn each other too
        members = [p for p in players if p.spec.night_chat == team]
        emit(game, "game.team", Audience(team, frozenset(p.slot for p in members)),
             data={"team": team, "members": [{"slot": p.slot, "role": p.spec.name}
                                             for p in members]},
             members=", ".join(f"{p.name} ({p.spec.name})" for p in members))
    for p in players:
        if p.role == "executioner" and p.target is not None:
            emit(game, "game.executioner_target", to(p.slot), data={"target": p.target},
                 target=game.name(p.target))
    emit(game, "phase.day1", PUBLIC)
    return game


def apply(game: Game, cmd: Command) -> list[Event]:
    """Validate and apply one command; return the events it produced.
    Raises legal.IllegalCommand (and changes nothing) if it is not allowed now."""
    legal.check(game, cmd)
    start = len(game.events)
    game.commands.append(cmd.to_dict())
    _dispatch(game, cmd)
    return game.events[start:]


def _dispatch(game: Game, cmd: Command) -> None:
    if isinstance(cmd, PhaseTimeout):
        phases.advance(game)
    elif isinstance(cmd, Chat):
        _chat(game, cmd)
    elif isinstance(cmd, Whisper):
        _whisper(game, cmd)
    elif isinstance(cmd, Vote):
        phases.cast_vote(game, cmd.actor, cmd.target)
    elif isinstance(cmd, Judge):
        phases.cast_verdict(game, cmd.actor, cmd.verdict)
    elif isinstance(cmd, NightAction):
        _night_action(game, cmd)
    elif isinstance(cmd, DayAction):
        _day_action(game, cmd)
    elif isinstance(cmd, WriteWill):
        game.player(cmd.actor).will = cmd.text
        emit(game, "will.saved", to(cmd.actor), data={"will": cmd.text})
    elif isinstance(cmd, WriteDeathNote):
        game.player(cmd.actor).death_note = cmd.text
        emit(game, "death_note.saved", to(cmd.actor), data={"death_note": cmd.text})


def _chat(game: Game, cmd: Chat) -> None:
    p = game.player(cmd.actor)
    channel = cmd.channel or legal.chat_channels(game, p)[0]
    text = cmd.text
    if channel == "public":
        emit(game, "chat.public", PUBLIC, data={"author": p.slot, "text": text},
             author=p.name, text=text)
    elif channel == "mafia":
        audience = phases.mafia_audience(game)
        emit(game, "chat.mafia", audience, data={"author": p.slot, "text": text},
             author=p.name, text=text)
        if game.flags.spy_reads_mafia_chat:
            spies = frozenset(q.slot for q in game.living() if q.role == "spy")
            if spies:
                emit(game, "chat.spy_mafia", Audience("players", spies),
                     data={"text": text}, text=text)
    elif channel in TEAM_CHANNELS:  # another team's night chat (Vampires)
        audience = phases.team_audience(game, channel)
        emit(game, "chat.team", audience,
             data={"author": p.slot, "team": channel, "text": text},
             author=p.name, text=text)
        listeners = frozenset(q.slot for q in game.living() if q.spec.hears_chat == channel)
        if listeners:  # anonymised (the Vampire Hunter hears the Vampires)
            emit(game, "chat.overheard", Audience("players", listeners),
                 data={"team": channel, "text": text}, team=channel.title(), text=text)
    elif channel == "jail":
        assert game.prisoner is not None
        jailor = next(q.slot for q in game.living() if q.role == "jailor")
        audience = Audience("jail", frozenset({jailor, game.prisoner}))
        if p.role == "jailor" and p.slot != game.prisoner:
            emit(game, "chat.jail", audience, data={"author": None, "as": "Jailor",
                                                    "text": text},
                 secret={"author": p.slot}, author="Jailor", text=text)
        else:
            emit(game, "chat.jail", audience, data={"author": p.slot, "text": text},
                 author=p.name, text=text)
    elif channel == "seance":
        assert game.seance is not None
        audience = Audience("seance", frozenset(game.seance))
        if p.slot == game.seance[0]:
            emit(game, "chat.seance", audience, data={"author": None, "as": "Medium",
                                                      "text": text},
                 secret={"author": p.slot}, author="Medium", text=text)
        else:
            emit(game, "chat.seance", audience, data={"author": p.slot, "text": text},
                 author=p.name, text=text)
    else:  # dead chat; a living Medium speaks anonymously
        audience = phases.dead_audience(game)
        if p.alive:
            emit(game, "chat.dead", audience, data={"author": None, "as": "Medium",
                                                    "text": text},
                 secret={"author": p.slot}, author="Medium", text=text)
        else:
            emit(game, "chat.dead", audience, data={"author": p.slot, "text": text},
                 author=p.name, text=text)


def _whisper(game: Game, cmd: Whisper) -> None:
    spies = [q.slot for q in game.living() if q.role == "spy"]
    audience = Audience("players", frozenset({cmd.actor, cmd.target, *spies}))
    author, target = game.name(cmd.actor), game.name(cmd.target)
    emit(game, "chat.whisper", audience,
         data={"author": cmd.actor, "target": cmd.target, "text": cmd.text},
         author=author, target=target, text=cmd.text)
    emit(game, "chat.whisper_notice", PUBLIC, data={"author": cmd.actor, "target": cmd.target},
         author=author, target=target)


def _night_action(game: Game, cmd: NightAction) -> None:
    p = game.player(cmd.actor)
    if not cmd.targets:
        if game.night_actions.pop(cmd.actor, None) is not None:
            emit(game, "night.cancel", to(cmd.actor), data={})
        return
    game.night_actions[cmd.actor] = cmd.targets
    ability = legal.night_ability(game, p)
    assert ability is not None
    names = " and ".join(game.name(t) for t in cmd.targets)
    if ability.name == "alert":
        names = "yourself"
    team = p.spec.night_chat
    if not team:
        emit(game, "night.chosen", to(cmd.actor),
             data={"ability": ability.name, "targets": list(cmd.targets)},
             verb=ability.verb, targets=names)
    else:
        # a team sees each other's choices, as in the game's night chat
        emit(game, "night.mafia_chosen" if team == "mafia" else "night.team_chosen",
             phases.team_audience(game, team),
             data={"actor": p.slot, "ability": ability.name, "targets": list(cmd.targets)},
             actor=p.name, verb=ability.verb, targets=names)


def _day_action(game: Game, cmd: DayAction) -> None:
    p = game.player(cmd.actor)
    if cmd.ability == "reveal":
        p.revealed = True
        emit(game, "mayor.reveal", PUBLIC, data={"player": p.slot, "role": "Mayor"},
             name=p.name)
        if game.phase is Phase.VOTING and game.votes.get(p.slot) is not None:
            phases.trial_if_majority(game, game.votes[p.slot])
    elif cmd.ability == "jail":
        game.jail_choice = cmd.target
        if cmd.target is None:
            emit(game, "jail.cancel", to(p.slot), data={})
        else:
            emit(game, "jail.chosen", to(p.slot), data={"target": cmd.target},
                 target=game.name(cmd.target))
    else:
        game.seance_choice = cmd.target
        game.seance_medium = p.slot if cmd.target is not None else None
        if cmd.target is not None:
            emit(game, "seance.chosen", to(p.slot), data={"target": cmd.target},
                 target=game.name(cmd.target))
