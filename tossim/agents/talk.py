"""How scripted bots phrase what they say in public: many wordings per intent.

The facts a message carries stay in the claim vocabulary's fixed sentences
(`claims.py`: "I am the Sheriff.", "Vote Player 4!", "Player 4 is
suspicious!"), so every bot still understands every other bot; what this
module adds around them is the talk a Town of Salem player wraps them in:
why they accuse, how they defend themselves, what they make of a death or a
will. Each function picks a wording with the bot's own seeded RNG, so games
stay deterministic, and nothing here reads the game: the caller passes only
what its View showed it.

No wording may contain a vocabulary sentence by accident ("I am the ..." is
reserved for role claims, "Vote X!" for accusations).
"""

from __future__ import annotations

import random
import re

from tossim.agents import claims as cv


def pick(rng: random.Random, options: tuple[str, ...]) -> str:
    return options[rng.randrange(len(options))]


# ---- reasons: each names something that happened ---------------------------------------

def reason_claimed_dead_role(role: str) -> tuple[str, ...]:
    return (f"they claimed {role}, but the {role} is already dead.",
            f"the {role} already died, yet they claimed {role}.",
            f"their {role} claim is impossible, we saw the {role} flip.")


def reason_counterclaim(role: str, other: str) -> tuple[str, ...]:
    return (f"they and {other} both claimed {role}, and only one of them is telling the truth.",
            f"{other} claimed {role} too; one of them is lying.",
            f"two {role} claims, theirs and {other}'s, that is a fake claim.")


def reason_my_role(role: str) -> tuple[str, ...]:
    return (f"they claimed {role}, and I know the real {role}.",
            f"their {role} claim is fake, I can prove it.")


def reason_must_lynch() -> tuple[str, ...]:
    return ("a killer is still among us and we cannot skip another day.",
            "we have to lynch someone today, and they are my best guess.",
            "if we do not lynch today the killer wins; I trust them least.")


def reason_changed(before: str, after: str) -> tuple[str, ...]:
    return (f"they claimed {before} earlier and now they say {after}.",
            f"they changed their claim from {before} to {after}.",
            f"first {before}, now {after}? They are lying.")


def reason_no_claim() -> tuple[str, ...]:
    return ("they still have not claimed a role.",
            "everyone claimed but them.",
            "they keep dodging the claim question.")


def reason_doubt_claim(role: str) -> tuple[str, ...]:
    return (f"their {role} claim does not add up.",
            f"I do not buy their {role} claim.",
            f"nothing they said fits the {role} they claimed.")


def reason_refused() -> tuple[str, ...]:
    return ("they refused to say their role.",
            "they would not claim when asked.")


def reason_voted_town(dead: str, role: str) -> tuple[str, ...]:
    return (f"they voted guilty on {dead}, who flipped {role}.",
            f"they helped lynch {dead}, and {dead} was the {role}.",
            f"they were on the wagon that killed {dead} ({role}).")


def reason_defended_evil(dead: str, role: str) -> tuple[str, ...]:
    return (f"they voted innocent on {dead}, who was the {role}.",
            f"they defended {dead}, and {dead} flipped {role}.")


def reason_reported(source: str) -> tuple[str, ...]:
    return (f"{source} said they are suspicious and nobody disproved it.",
            f"{source}'s result points at them.",
            f"I believe {source}'s result on them.")


def reason_will(dead: str) -> tuple[str, ...]:
    return (f"{dead}'s will names them.",
            f"read {dead}'s will, it points at them.",
            f"{dead} wrote them down in their will before dying.")


def reason_visit(source: str, victim: str) -> tuple[str, ...]:
    return (f"{source} saw them visit {victim}, and {victim} died that night.",
            f"they visited {victim} the night {victim} was killed, says {source}.")


def reason_group(roles: tuple[str, ...]) -> tuple[str, ...]:
    listed = ", ".join(roles)
    return (f"I checked them and the result was {listed}.",
            f"my result on them was {listed}, and their story does not fit.")


def reason_own_check() -> tuple[str, ...]:
    return ("I checked them myself last night.",
            "my own result says so.",
            "I investigated them and they came up suspicious.")


def reason_wagon(target: str) -> tuple[str, ...]:
    return (f"they pushed the wagon on {target} and gave no reason.",
            f"they voted {target} first and never explained it.")


def reason_quiet(said: int) -> tuple[str, ...]:
    if said == 0:
        return ("they have not said a word, and we have no claim from them.",
                "not one message from them so far; let them claim on the stand.",
                "they have been silent all game; I want to hear their claim.")
    return ("they have said almost nothing and never claimed a role.",
            "they stay quiet and have not claimed; let them claim on the stand.",
            "we have no claim from them and barely a word.")


# ---- accusations, defences, reactions ------------------------------------------------

ACCUSE_OPENERS = ("", "Listen, ", "Town, ", "Hear me out: ", "Okay. ", "Honestly, ",
                  "Let's not waste the day. ")


def accuse(rng: random.Random, name: str, reason: str) -> str:
    """A call to vote `name`, with the reason (a vocabulary sentence first)."""
    forms = (f"{cv.say_accuse(name)} {_cap(reason)}",
             f"{pick(rng, ACCUSE_OPENERS)}{cv.say_accuse(name)} Because {reason}",
             f"{cv.say_accuse(name)} I say this because {reason}",
             f"{cv.say_accuse(name)} Think about it: {reason}",
             f"{pick(rng, ACCUSE_OPENERS)}{cv.say_accuse(name)} Why? {_cap(reason)}")
    return pick(rng, forms)


def suspect_aside(rng: random.Random, name: str, reason: str) -> str:
    """A softer word about someone (no call to vote yet)."""
    return pick(rng, (f"I am watching {name}: {reason}",
                      f"{name} has some explaining to do. {_cap(reason)}",
                      f"Something is off about {name}; {reason}"))


def defence(rng: random.Random) -> str:
    return pick(rng, (
        "You are lynching a Town member.",
        "Please, I am Town. Vote innocent.",
        "Check my will when I die, you will feel bad.",
        "If you lynch me you lose a Town role for nothing.",
        "I have done nothing but help the town.",
        "This is a mislynch, think before you vote.",
        "Whoever started this wagon is the one to look at.",
    ))


def plea_with_vote(rng: random.Random, voted: str) -> str:
    return pick(rng, (f"I voted {voted}; why would the Mafia do that?",
                      f"Remember, I was the one pushing {voted}."))


def jester_defence(rng: random.Random) -> str:
    return pick(rng, ("Maybe I am, maybe I am not. Go ahead.",
                      "Lynch me then, see what happens.",
                      "You have no proof of anything. Go ahead, vote me."))


def death_reaction(rng: random.Random, name: str, role: str, side: str) -> str:
    """A line on a night death, as the Town sees the role shown: `side` is
    "town" (a loss), "enemy" (one less evil) or "neither" (a Jester or a
    Survivor is neither: seen in the demo, "They got Player 6, our
    Jester.")."""
    if side == "town":
        return pick(rng, (f"RIP {name}. Losing the {role} hurts.",
                          f"They got {name}, our {role}. Let's find who did it.",
                          f"{name} flipped {role}. That is a big loss for us."))
    if side == "enemy":
        return pick(rng, (f"RIP {name}, the {role}.",
                          f"{name} was the {role}. Good riddance.",
                          f"{name} flipped {role}, one less evil."))
    return pick(rng, (f"RIP {name}, the {role}.", f"{name} was the {role}. Who killed them?",
                      f"{name} flipped {role}. Someone still kills at night."))


def will_reaction(rng: random.Random, name: str) -> str:
    return pick(rng, (f"Read {name}'s will, everyone.",
                      f"{name} left a will; take it seriously.",
                      f"{name}'s will matters here."))


def will_names(rng: random.Random, dead: str, target: str) -> str:
    return pick(rng, (f"{dead}'s will points at {target}. {target}, explain that.",
                      f"Look at {dead}'s will: it names {target}.",
                      f"{dead} wrote {target} down before dying. Why, {target}?"))


def lynch_reaction(rng: random.Random, name: str, role: str, good: bool) -> str:
    if good:
        return pick(rng, (f"Good lynch on {name} yesterday, they were the {role}.",
                          f"{name} flipped {role}. Who defended them?",
                          f"Nice work on {name}, town."))
    return pick(rng, (f"We lynched {name} and they were the {role}. Who pushed that?",
                      f"{name} was a {role}. That wagon was a Mafia play.",
                      f"Mislynch on {name}. The people who voted guilty owe us answers."))


def claim_intro(rng: random.Random, accused: bool) -> str:
    if accused:
        return pick(rng, ("Fine, I will claim. ", "Since you ask: ", "Before you vote: ",
                          "Okay, here it is. ", ""))
    return pick(rng, ("", "Time to claim. ", "For the record: ", "My claim: ",
                      "Here is mine. "))


COVER_PLANS = ("Tomorrow I will claim {role}.", "My cover tomorrow: {role}.",
               "I will pose as the {role} tomorrow.")


def cover_plan(rng: random.Random, role: str) -> str:
    """A false claim told to the seat's own team at night: the cover it
    will give the town, not a claim to teammates who know its role."""
    return pick(rng, tuple(p.format(role=role) for p in COVER_PLANS))


_COVER_PLAN = re.compile("|".join(
    re.escape(p).replace(re.escape("{role}"), rf"(?P<r{i}>{cv.ROLE_WORD})")
    for i, p in enumerate(COVER_PLANS)))


def read_cover_plan(text: str) -> str | None:
    """The role a teammate said it will claim (`cover_plan`'s wordings), so
    the team's other liars pick another cover."""
    m = _COVER_PLAN.search(text)
    return next((v for v in m.groupdict().values() if v), None) if m else None


def claim_again(rng: random.Random) -> str:
    """The opening of a claim the player made on an earlier day already."""
    return pick(rng, ("As I said before: ", "Again: ", "I stand by my claim: ",
                      "Same as before: "))


def results_intro(rng: random.Random) -> str:
    return pick(rng, ("My results:", "What I found:", "Here is what I have:", "Results:"))


def results_update(rng: random.Random, role: str) -> str:
    """The opening of a result told after the claim, the day after the night."""
    return pick(rng, (f"{role} update.", "New result.", "Last night's result:",
                      f"As {role}, my latest:", "Another night, another check:"))


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# ---- more of a day: openers, votes, trials ---------------------------------------------

def day1_openers(me: str, other: str) -> tuple[str, ...]:
    """Day 1 words (nobody knows anything yet), each naming a player; a bot
    says one nobody has said in this game yet, names aside."""
    return (f"Hi all. {other}, how is your night looking?",
            f"Good luck everyone. {other}, I will keep notes on who claims what.",
            f"Morning, town. Let's keep it calm today, {other} included.",
            f"{me} here. I will share what I learn when it matters.",
            f"Hello {other}. Let's watch the votes closely this game.",
            f"Quiet start. {other}, anything on your mind?",
            f"First day, {other}. No claims yet, please.",
            f"{other}, let's not lynch blind today.")


def vote_reason(rng: random.Random, name: str, reason: str | None) -> str:
    """What a player says as they vote: the reason when it has one."""
    if reason:
        return pick(rng, (f"My vote is on {name}: {reason}",
                          f"Voting {name}. {_cap(reason)}",
                          f"{name} gets my vote, since {reason}"))
    return pick(rng, (f"I am on {name} for now. Claim on the stand, {name}.",
                      f"Putting {name} up to hear a claim.",
                      f"Voting {name}; let's hear the defence."))


def verdict_comment(rng: random.Random, name: str, verdict: str, claim: str | None) -> str:
    """A word on the accused's defence, matching the speaker's verdict."""
    if verdict == "innocent":
        if claim:
            return pick(rng, (f"I believe {name}'s {claim} claim. Innocent from me.",
                              f"Nothing contradicts {name} as {claim}. Let them live.",
                              f"{name} claimed {claim} and nothing speaks against it."))
        return pick(rng, (f"{name} is begging for it. Do not give a Jester the win.",
                          f"Too eager to hang, {name}. Innocent."))
    if claim:
        return pick(rng, (f"{name}'s {claim} claim does not add up. Guilty.",
                          f"I do not buy {name} as {claim}.",
                          f"Guilty on {name}; the {claim} story has holes."))
    return pick(rng, (f"{name} gave us nothing. Guilty.",
                      f"No claim from {name} on the stand? Guilty.",
                      f"Silence will not save you, {name}."))
