"""The role table: every role is data plus, at most, one night and one day ability.

Keeping roles as data (instead of one class per role) lets the night pipeline,
the legal-action builder, the docs generator and the prompt builder all read the
same facts, so none of them can disagree about what a role can do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum


class Faction(StrEnum):
    TOWN = "town"
    MAFIA = "mafia"
    NEUTRAL = "neutral"


class Level(IntEnum):
    """Attack and defense share one scale: an attack kills only if attack > defense."""

    NONE = 0
    BASIC = 1
    POWERFUL = 2
    UNSTOPPABLE = 3  # attack; as a defense value it reads "Invincible"


class TargetRule(StrEnum):
    """Who a night or day ability may be aimed at (checked by `legal.py`)."""

    LIVING_OTHER = "living_other"  # a living player other than yourself
    LIVING_ANY = "living_any"  # any living player, yourself included
    LIVING_NON_MAFIA = "living_non_mafia"  # a living player outside the Mafia
    LIVING_NON_TEAM = "living_non_team"  # a living player outside your night-chat team
    DEAD_UNCLEANED = "dead_uncleaned"  # a dead player whose role was not cleaned
    SELF = "self"  # no choice: the action is on yourself (Veteran alert)
    PRISONER = "prisoner"  # the player you jailed tonight
    DEAD_TOWN = "dead_town"  # a dead Town member (Retributionist)
    HAUNT = "haunt"  # a living guilty (or abstaining) voter of your lynch


@dataclass(frozen=True)
class Ability:
    """One ability. Priorities follow the rules reference (A2.1); `order` breaks
    ties inside a priority the way the reference's "(highest)" rows do."""

    name: str
    priority: int
    targets: int = 1
    rule: TargetRule = TargetRule.LIVING_OTHER
    visits: bool = True
    uses: str | None = None  # key into Player.uses that this ability consumes
    not_first_night: bool = False
    order: int = 5
    verb: str = ""  # "heal", used in legal-action text: "heal a player"
    # The night handler (a function registered under this key by a module in
    # `engine/roles/`, see `handlers.py`); empty means the ability's name.
    handler: str = ""
    # What the ability does, for the queue and the docs: visits, attack,
    # protect, block, control, investigate, deceive, unblockable (a role block
    # cannot cancel it), own_block (the handler runs blocked and decides).
    labels: frozenset[str] = frozenset()
    # A rule flag whose value replaces `priority` (Retributionist 1 or 3).
    priority_flag: str = ""
    # Run every night for every holder (the dead included; the handler decides),
    # whether or not an action was chosen: Jester haunt, passive abilities.
    always: bool = False
    cause: str = ""  # death cause key of this ability's attacks (messages.CAUSE_TEXT)
    # Yourself as a target only while this use is left (Doctor self-heal, Bodyguard vest).
    self_uses: str = ""
    not_revealed_mayor: bool = False  # a revealed Mayor cannot be chosen (Doctor)
    # A predicate (handlers.AVAILABLE) saying whether the ability can be used
    # tonight at all (Werewolf full moons, the Vampires' bite nights).
    available: str = ""

    @property
    def handler_key(self) -> str:
        return self.handler or self.name


@dataclass(frozen=True)
class Role:
    key: str
    name: str
    faction: Faction
    alignment: str
    summary: str
    goal: str
    attack: Level = Level.NONE
    defense: Level = Level.NONE
    unique: bool = False
    night: Ability | None = None
    day: Ability | None = None
    uses: dict[str, int] = field(default_factory=dict)
    roleblock_immune: bool = False
    control_immune: bool = False
    detection_immune: bool = False
    death_note: bool = False
    flavour: str = ""  # Consigliere text: "Your target <flavour>."
    win: str = ""  # win condition key, see victory.WIN_CONDITIONS
    # Abilities that run every night without a choice (Spy feed, Veteran shots,
    # Vigilante guilt, Serial Killer counterattacks), queued like chosen ones.
    passives: tuple[Ability, ...] = ()
    # Handler run when a role blocker visits this role while it is immune.
    on_block: str = ""
    night_chat: str = ""  # the team chat this role talks in at night ("mafia", "vampire")
    hears_chat: str = ""  # a team chat this role reads anonymously (Vampire Hunter)
    # Sheriff result key when not framed: "" not suspicious, "mafia",
    # "serial_killer", "werewolf"; see roles/investigation.py.
    suspicious: str = ""
    # Detection immune except on full moons (the Werewolf).
    detected_on_full_moon: bool = False
    # Dealt only from custom role lists (Vampire, Vampire Hunter); read by modes.
    custom_only: bool = False
    # A role change stated as data: become `becomes` (with `becomes_uses`, or
    # that role's own uses) when the condition `becomes_when` holds after deaths.
    becomes: str = ""
    becomes_when: str = ""
    becomes_uses: dict[str, int] = field(default_factory=dict)
    # Use counters whose starting value is a rule flag ({"forges": "forger_uses"}).
    uses_flags: dict[str, str] = field(default_factory=dict)
    # How much the Town gains by lynching this role, when its win condition
    # does not say it well enough (None: derived, see `threat`).
    threat_level: float | None = None
    # A Town role its holder keeps to itself until it stands accused: once
    # known it is the killers' first target, and the Town loses the most
    # when it dies (the Jailor, the Veteran). Bots and model seats read it.
    keeps_hidden: bool = False

    def starting_uses(self, flags: object) -> dict[str, int]:
        uses = dict(self.uses)
        for use, flag in self.uses_flags.items():
            uses[use] = int(getattr(flags, flag))
        return uses


TOWN_GOAL = "Lynch every criminal and evildoer."
MAFIA_GOAL = "Kill anyone that will not submit to the Mafia."

# Abilities several roles share.
MAFIA_KILL = Ability("kill", 5, rule=TargetRule.LIVING_NON_MAFIA, verb="kill", order=3,
                     handler="mafia_kill", cause="mafia",
                     labels=frozenset({"visits", "attack", "own_block"}))
MAFIA_ORDER = Ability("mafia_order", 5, order=0, visits=False,
                      labels=frozenset({"attack", "unblockable"}))
ROLEBLOCK = Ability("distract", 2, order=1, verb="role block", handler="roleblock",
                    labels=frozenset({"visits", "block"}))

_ROLES: tuple[Role, ...] = (
    Role(
        "sheriff", "Sheriff", Faction.TOWN, "Town Investigative",
        "Interrogate one person each night to learn whether they are suspicious.",
        TOWN_GOAL,
        night=Ability("interrogate", 4, verb="interrogate",
                      labels=frozenset({"visits", "investigate"})),
        flavour="is a protector of the Town", win="town",
    ),
    Role(
        "doctor", "Doctor", Faction.TOWN, "Town Protective",
        "Heal one person each night, giving them Powerful defense. You may heal "
        "yourself once. You cannot heal a revealed Mayor.",
        TOWN_GOAL,
        night=Ability("heal", 3, rule=TargetRule.LIVING_ANY, verb="heal",
                      self_uses="self_heal", not_revealed_mayor=True,
                      labels=frozenset({"visits", "protect"})),
        uses={"self_heal": 1}, flavour="is a professional surgeon", win="town",
    ),
    Role(
        "investigator", "Investigator", Faction.TOWN, "Town Investigative",
        "Investigate one person each night for a list of roles they could be.",
        TOWN_GOAL,
        night=Ability("investigate", 4, verb="investigate",
                      labels=frozenset({"visits", "investigate"})),
        flavour="gathers information about people", win="town",
    ),
    Role(
        "jailor", "Jailor", Faction.TOWN, "Town Killing",
        "During the day choose someone to jail that night. You talk with your "
        "prisoner anonymously and may execute them (3 executions, never on Night 1). "
        "Executing a Town member costs you every execution left.",
        TOWN_GOAL, attack=Level.UNSTOPPABLE, unique=True,
        night=Ability("execute", 5, rule=TargetRule.PRISONER, visits=False,
                      uses="executions", not_first_night=True, verb="execute", order=1,
                      cause="jailor", labels=frozenset({"attack"})),
        day=Ability("jail", 0, visits=False, verb="jail"),
        uses={"executions": 3}, flavour="detains people at night", win="town",
        keeps_hidden=True,
    ),
    Role(
        "medium", "Medium", Faction.TOWN, "Town Support",
        "Speak with the dead at night, anonymously. Once dead, you may choose one "
        "living player during a day to talk to that night (a seance).",
        TOWN_GOAL,
        day=Ability("seance", 0, rule=TargetRule.LIVING_ANY, visits=False,
                    uses="seance", verb="seance"),
        uses={"seance": 1}, flavour="speaks with the dead", win="town",
    ),
    Role(
        "godfather", "Godfather", Faction.MAFIA, "Mafia Killing",
        "Choose the Mafia's target each night. The Mafioso carries out your order; "
        "without one you attack in person. You appear innocent to the Sheriff.",
        MAFIA_GOAL, attack=Level.BASIC, defense=Level.BASIC, unique=True,
        night=MAFIA_KILL, passives=(MAFIA_ORDER,),
        detection_immune=True, death_note=True, suspicious="mafia", night_chat="mafia",
        flavour="is the leader of the Mafia", win="mafia",
    ),
    Role(
        "framer", "Framer", Faction.MAFIA, "Mafia Deception",
        "Frame one person each night so that they look guilty to investigators.",
        MAFIA_GOAL,
        night=Ability("frame", 3, rule=TargetRule.LIVING_NON_MAFIA, verb="frame",
                      labels=frozenset({"visits", "deceive"})),
        suspicious="mafia", night_chat="mafia",
        flavour="has a desire to deceive", win="mafia",
    ),
    Role(
        "executioner", "Executioner", Faction.NEUTRAL, "Neutral Evil",
        "Trick the Town into lynching your target. If your target dies at night "
        "you become a Jester.",
        "Get your target lynched at any cost.", defense=Level.BASIC,
        flavour="wants someone to be lynched at any cost", win="executioner",
    ),
    Role(
        "escort", "Escort", Faction.TOWN, "Town Support",
        "Distract one person each night, role blocking them. You cannot be role "
        "blocked. A Serial Killer you visit will attack you.",
        TOWN_GOAL,
        night=ROLEBLOCK,
        roleblock_immune=True, flavour="is a beautiful person working for the Town",
        win="town",
    ),
    Role(
        "mafioso", "Mafioso", Faction.MAFIA, "Mafia Killing",
        "Carry out the Godfather's orders. If the Godfather dies you become the Godfather.",
        MAFIA_GOAL, attack=Level.BASIC, unique=True,
        night=MAFIA_KILL, passives=(MAFIA_ORDER,), suspicious="mafia", night_chat="mafia",
        death_note=True, flavour="does the Godfather's dirty work", win="mafia",
    ),
    Role(
        "lookout", "Lookout", Faction.TOWN, "Town Investigative",
        "Watch one person's house each night to see who visits them.",
        TOWN_GOAL,
        night=Ability("watch", 4, verb="watch", labels=frozenset({"visits", "investigate"})),
        flavour="watches who visits people at night", win="town",
    ),
    Role(
        "serial_killer", "Serial Killer", Faction.NEUTRAL, "Neutral Killing",
        "Kill one person each night. Role blockers who visit you are attacked.",
        "Kill everyone who would oppose you.", attack=Level.BASIC, defense=Level.BASIC,
        night=Ability("kill", 5, verb="kill", order=4, handler="sk_kill",
                      cause="serial_killer",
                      labels=frozenset({"visits", "attack", "own_block"})),
        passives=(Ability("sk_counter", 5, order=5, visits=False, cause="sk_blocker",
                          labels=frozenset({"attack"})),
                  Ability("sk_jailed", 5, order=6, visits=False, cause="sk_jailed",
                          labels=frozenset({"attack"}))),
        on_block="sk_on_block", suspicious="serial_killer",
        roleblock_immune=True, death_note=True,
        flavour="wants to kill everyone", win="serial_killer",
    ),
    Role(
        "veteran", "Veteran", Faction.TOWN, "Town Killing",
        "Go on alert (3 times): you gain Basic defense and shoot everyone who visits you.",
        TOWN_GOAL, attack=Level.POWERFUL, unique=True,
        night=Ability("alert", 1, rule=TargetRule.SELF, visits=False, uses="alerts",
                      order=2, verb="go on alert", labels=frozenset({"protect"})),
        passives=(Ability("veteran_shots", 5, order=9, visits=False, cause="veteran",
                          labels=frozenset({"attack"})),),
        uses={"alerts": 3}, roleblock_immune=True, control_immune=True,
        flavour="is a paranoid war hero", win="town", keeps_hidden=True,
    ),
    Role(
        "vigilante", "Vigilante", Faction.TOWN, "Town Killing",
        "Shoot one person at night (3 bullets, not on Night 1). If you kill a Town "
        "member you will shoot yourself over the guilt the next night.",
        TOWN_GOAL, attack=Level.BASIC,
        night=Ability("shoot", 5, uses="bullets", not_first_night=True, verb="shoot",
                      order=2, cause="vigilante",
                      labels=frozenset({"visits", "attack", "own_block"})),
        passives=(Ability("guilt", 1, order=3, visits=False, cause="guilt",
                          labels=frozenset({"attack", "unblockable"})),),
        uses={"bullets": 3}, flavour="will bend the law to enact justice", win="town",
    ),
    Role(
        "jester", "Jester", Faction.NEUTRAL, "Neutral Evil",
        "Trick the Town into lynching you. If you are lynched, you haunt one of "
        "the players who voted guilty or abstained the next night.",
        "Get yourself lynched by any means necessary.",
        attack=Level.UNSTOPPABLE,
        night=Ability("haunt", 1, rule=TargetRule.HAUNT, visits=False, order=4,
                      verb="haunt", always=True, cause="haunt",
                      labels=frozenset({"attack", "unblockable"})),
        flavour="wants to be lynched", win="jester",
    ),
    Role(
        "bodyguard", "Bodyguard", Faction.TOWN, "Town Protective",
        "Guard one person each night: you fight off the first attacker who visits "
        "them and die in their place. Once you may guard yourself with a vest.",
        TOWN_GOAL, attack=Level.POWERFUL,
        night=Ability("guard", 3, rule=TargetRule.LIVING_ANY, verb="guard", self_uses="vest",
                      labels=frozenset({"visits", "protect"})),
        uses={"vest": 1}, flavour="is a trained protector", win="town",
    ),
    Role(
        "mayor", "Mayor", Faction.TOWN, "Town Support",
        "Reveal yourself during the day to gain 3 votes. A revealed Mayor cannot be "
        "healed by a Doctor and cannot whisper or be whispered to.",
        TOWN_GOAL, unique=True,
        day=Ability("reveal", 0, targets=0, rule=TargetRule.SELF, visits=False,
                    verb="reveal"),
        flavour="is the leader of the Town", win="town",
    ),
    Role(
        "retributionist", "Retributionist", Faction.TOWN, "Town Support",
        "Once per game, bring a dead Town member back to life.",
        TOWN_GOAL, unique=True,
        night=Ability("revive", 1, rule=TargetRule.DEAD_TOWN, visits=False,
                      uses="revive", order=6, verb="revive",
                      priority_flag="retributionist_priority"),
        uses={"revive": 1}, flavour="wields mystical power", win="town",
    ),
    Role(
        "spy", "Spy", Faction.TOWN, "Town Investigative",
        "You see whom the Mafia visit each night and you read every whisper.",
        TOWN_GOAL, flavour="secretly watches who someone visits", win="town",
        passives=(Ability("spy_feed", 6, visits=False,
                          labels=frozenset({"investigate"})),),
    ),
    Role(
        "transporter", "Transporter", Faction.TOWN, "Town Support",
        "Swap two people at night: every action aimed at one hits the other. You "
        "cannot be role blocked or controlled.",
        TOWN_GOAL,
        night=Ability("transport", 1, targets=2, rule=TargetRule.LIVING_ANY, order=1,
                      verb="transport", labels=frozenset({"visits", "control"})),
        roleblock_immune=True, control_immune=True,
        flavour="specializes in transportation", win="town",
    ),
)

MAFIA_ROLES: tuple[Role, ...] = (
    Role(
        "blackmailer", "Blackmailer", Faction.MAFIA, "Mafia Support",
        "Blackmail one person each night: they cannot talk or whisper the next day "
        "(they can still vote).",
        MAFIA_GOAL,
        night=Ability("blackmail", 3, rule=TargetRule.LIVING_NON_MAFIA, verb="blackmail",
                      labels=frozenset({"visits", "deceive"})),
        suspicious="mafia", night_chat="mafia",
        flavour="uses information to silence people", win="mafia",
    ),
    Role(
        "consigliere", "Consigliere", Faction.MAFIA, "Mafia Support",
        "Investigate one person each night for their exact role.",
        MAFIA_GOAL,
        night=Ability("check", 4, rule=TargetRule.LIVING_NON_MAFIA, verb="investigate",
                      handler="consigliere", labels=frozenset({"visits", "investigate"})),
        suspicious="mafia", night_chat="mafia",
        flavour="gathers information for the Mafia", win="mafia",
    ),
    Role(
        "consort", "Consort", Faction.MAFIA, "Mafia Support",
        "Distract one person each night, role blocking them. You cannot be role blocked.",
        MAFIA_GOAL,
        night=Ability("distract", 2, order=1, rule=TargetRule.LIVING_NON_MAFIA,
                      verb="role block", handler="roleblock",
                      labels=frozenset({"visits", "block"})),
        roleblock_immune=True, suspicious="mafia", night_chat="mafia",
        flavour="is a beautiful person working for the Mafia", win="mafia",
    ),
    Role(
        "disguiser", "Disguiser", Faction.MAFIA, "Mafia Deception",
        "Disguise yourself as a living player each night: Investigators see their "
        "group, and if you die that night or the next day your body shows their role.",
        MAFIA_GOAL,
        night=Ability("disguise", 3, rule=TargetRule.LIVING_NON_MAFIA, verb="disguise as",
                      labels=frozenset({"visits", "deceive"})),
        suspicious="mafia", night_chat="mafia",
        flavour="pretends to be other people", win="mafia",
    ),
    Role(
        "forger", "Forger", Faction.MAFIA, "Mafia Deception",
        "Forge one person's last will at night (3 times): if they die that night, the "
        "town reads your forgery (write it as your death note) instead of their will.",
        MAFIA_GOAL,
        night=Ability("forge", 3, rule=TargetRule.LIVING_NON_MAFIA, uses="forges",
                      verb="forge the will of", labels=frozenset({"visits", "deceive"})),
        uses={"forges": 3}, uses_flags={"forges": "forger_uses"}, death_note=True,
        suspicious="mafia", night_chat="mafia",
        flavour="is good at forging documents", win="mafia",
    ),
    Role(
        "janitor", "Janitor", Faction.MAFIA, "Mafia Deception",
        "Clean one person's body at night (3 times): if they die that night, the town "
        "cannot see their role or last will; you learn both.",
        MAFIA_GOAL,
        night=Ability("clean", 3, rule=TargetRule.LIVING_NON_MAFIA, uses="cleans",
                      verb="clean", labels=frozenset({"visits", "deceive"})),
        uses={"cleans": 3}, suspicious="mafia", night_chat="mafia",
        flavour="cleans up dead bodies", win="mafia",
    ),
)

NEUTRAL_ROLES: tuple[Role, ...] = (
    Role(
        "survivor", "Survivor", Faction.NEUTRAL, "Neutral Benign",
        "Put on a bulletproof vest at night (4 times) for Basic defense.",
        "Live until the end of the game.",
        night=Ability("vest", 3, rule=TargetRule.SELF, visits=False, uses="vests",
                      verb="put on a vest", labels=frozenset({"protect", "own_block"})),
        uses={"vests": 4}, flavour="simply wants to live", win="survivor",
    ),
    Role(
        "amnesiac", "Amnesiac", Faction.NEUTRAL, "Neutral Benign",
        "Once, remember that you were like a dead player whose body was not cleaned: "
        "you take their role, announced the next day.",
        "Remember who you were and complete that role's goal.",
        night=Ability("remember", 6, rule=TargetRule.DEAD_UNCLEANED, visits=False,
                      uses="remember", verb="remember", labels=frozenset()),
        uses={"remember": 1}, flavour="does not remember their role", win="amnesiac",
    ),
    Role(
        "witch", "Witch", Faction.NEUTRAL, "Neutral Evil",
        "Control someone each night: they use their ability on a second target of your "
        "choice, and you learn their role. A one-time barrier saves you from one attack.",
        "Survive to see the Town lose the game.",
        night=Ability("control", 2, targets=2, verb="control",
                      labels=frozenset({"visits", "control"})),
        uses={"barrier": 1}, roleblock_immune=True,
        flavour="casts spells on people", win="witch",
    ),
    Role(
        "arsonist", "Arsonist", Faction.NEUTRAL, "Neutral Killing",
        "Douse someone in gas each night, or choose yourself to ignite every doused "
        "player (an Unstoppable attack). Do nothing to clean the gas off yourself.",
        "Live to see everyone burn.", attack=Level.UNSTOPPABLE, defense=Level.BASIC,
        night=Ability("douse", 3, rule=TargetRule.LIVING_ANY, verb="douse (or ignite)",
                      cause="arsonist", labels=frozenset({"visits", "deceive", "attack"})),
        passives=(Ability("wash", 3, visits=False),),
        detection_immune=True, death_note=True,
        flavour="likes to watch things burn", win="arsonist",
    ),
    Role(
        "werewolf", "Werewolf", Faction.NEUTRAL, "Neutral Killing",
        "On full moons (even nights) maul someone: a Powerful attack on them and on "
        "everyone who visits them. Choose yourself to stay home and maul your visitors.",
        "Kill everyone who would oppose you.", attack=Level.POWERFUL, defense=Level.BASIC,
        unique=True,
        night=Ability("maul", 5, order=7, rule=TargetRule.LIVING_ANY, verb="maul",
                      available="full_moon", cause="werewolf",
                      labels=frozenset({"visits", "attack", "own_block"})),
        passives=(Ability("werewolf_home", 5, order=7, visits=False, cause="werewolf",
                          labels=frozenset({"attack", "unblockable"})),),
        on_block="werewolf_on_block", roleblock_immune=True, detection_immune=True,
        detected_on_full_moon=True,
        suspicious="werewolf", death_note=True,
        flavour="howls at the moon", win="werewolf",
    ),
)

VAMPIRE_ROLES: tuple[Role, ...] = (
    Role(
        "vampire", "Vampire", Faction.NEUTRAL, "Neutral Chaos",
        "With the other Vampires, bite someone every other night (the youngest Vampire "
        "goes): they become a Vampire, or are attacked if they cannot be converted or "
        "if there are 4 or more Vampires.",
        "Convert or kill everyone who would not become a Vampire.",
        attack=Level.BASIC,
        night=Ability("bite", 5, order=6, rule=TargetRule.LIVING_NON_TEAM, verb="bite",
                      available="vampire_bite", cause="vampire",
                      labels=frozenset({"visits", "attack"})),
        detection_immune=True, night_chat="vampire", custom_only=True, death_note=True,
        flavour="drinks blood", win="vampire",
    ),
    Role(
        "vampire_hunter", "Vampire Hunter", Faction.TOWN, "Town Killing",
        "Stake a player each night: a Vampire dies (Basic attack). Vampires who bite you "
        "are staked. You hear the Vampires talk at night. With no Vampire left you "
        "become a Vigilante with one bullet.",
        TOWN_GOAL, attack=Level.BASIC,
        night=Ability("stake", 5, order=2, verb="stake", cause="vampire_hunter",
                      labels=frozenset({"visits", "attack"})),
        hears_chat="vampire", custom_only=True,
        becomes="vigilante", becomes_when="no_vampires", becomes_uses={"bullets": 1},
        flavour="tracks Vampires", win="town",
    ),
)

_ROLES = _ROLES + MAFIA_ROLES + NEUTRAL_ROLES + VAMPIRE_ROLES

ROLES: dict[str, Role] = {r.key: r for r in _ROLES}
ROLE_BY_NAME: dict[str, Role] = {r.name.lower(): r for r in _ROLES}

# Investigator groups (rules reference A4, Classic, 11 groups). The full sets are
# kept, roles this engine does not deal included, so results read like the game's.
INVESTIGATOR_GROUPS: tuple[tuple[str, ...], ...] = (
    ("Vigilante", "Veteran", "Mafioso"),
    ("Medium", "Janitor", "Retributionist"),
    ("Survivor", "Vampire Hunter", "Amnesiac"),
    ("Spy", "Blackmailer", "Jailor"),
    ("Sheriff", "Executioner", "Werewolf"),
    ("Framer", "Vampire", "Jester"),
    ("Lookout", "Forger", "Witch"),
    ("Escort", "Transporter", "Consort"),
    ("Doctor", "Disguiser", "Serial Killer"),
    ("Investigator", "Consigliere", "Mayor"),
    ("Bodyguard", "Godfather", "Arsonist"),
)
GROUP_OF: dict[str, tuple[str, ...]] = {
    name: group for group in INVESTIGATOR_GROUPS for name in group
}
FRAMER_GROUP = GROUP_OF["Framer"]

# The Town's view of each win condition (docs/rules.md#role-facts): 1.0 an
# enemy that kills the Town if left alive, between 0 and 1 an evildoer that
# wins beside the Town's enemies, 0 harmless, below 0 a role that wins when
# the Town lynches it ("don't lynch").
_THREAT_BY_WIN = {"town": 0.0, "mafia": 1.0, "serial_killer": 1.0, "arsonist": 1.0,
                  "werewolf": 1.0, "vampire": 1.0, "witch": 0.7, "executioner": 0.3,
                  "survivor": 0.0, "amnesiac": 0.0, "jester": -1.0}


def threat(role: Role) -> float:
    """How much the Town gains by lynching `role` (the scripted bots weigh
    suspicions with it, the client shows it): its `threat_level`, else the
    value of its win condition; an unknown win condition counts as an enemy
    unless the role is Town."""
    if role.threat_level is not None:
        return role.threat_level
    default = 0.0 if role.faction is Faction.TOWN else 1.0
    return _THREAT_BY_WIN.get(role.win, default)


def cover_claims(role: Role) -> tuple[str, ...]:
    """Town roles a non-Town `role` can claim that an Investigator cannot
    catch (its own Investigator group), non-unique ones first; empty for a
    Town role or a group with no Town role in it."""
    if role.faction is Faction.TOWN:
        return ()
    mates = [ROLE_BY_NAME[n.lower()] for n in GROUP_OF.get(role.name, ())
             if n.lower() in ROLE_BY_NAME]
    town = [r for r in mates if r.faction is Faction.TOWN and not r.custom_only]
    return tuple(r.key for r in sorted(town, key=lambda r: r.unique))


def role(key: str) -> Role:
    return ROLES[key]


def find_role(name: str) -> Role | None:
    """Look a role up by key ("serial_killer") or display name ("Serial Killer")."""
    key = name.strip().lower()
    return ROLES.get(key.replace(" ", "_")) or ROLE_BY_NAME.get(key)


def town_roles() -> list[Role]:
    return [r for r in _ROLES if r.faction is Faction.TOWN and not r.custom_only]
