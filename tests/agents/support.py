"""Shared game builders for the agent tests."""

from __future__ import annotations

from tossim.agents.memory import SeatMemory
from tossim.engine import (
    Chat,
    Game,
    GameConfig,
    NightAction,
    PhaseTimeout,
    Viewer,
    WriteWill,
    apply,
    new_game,
    view,
)

# Seed 003's example: Player 7 is the Investigator; the Doctor (Player 3) dies
# on Night 2 and Player 4 claims to be the real Doctor on Day 3.
DAY3_ROLES = ("sheriff", "godfather", "doctor", "mafioso", "lookout", "escort",
              "investigator", "jester", "vigilante")


class Tracker:
    """A game and the memories of some seats, fed with incremental views."""

    def __init__(self, game: Game, slots: list[int]) -> None:
        self.game = game
        self.memories = {s: SeatMemory(s) for s in slots}
        self.seen = dict.fromkeys(slots, 0)

    def observe(self, *slots: int) -> None:
        for s in slots or tuple(self.memories):
            obs = view(self.game, Viewer.player(s), since=self.seen[s])
            self.seen[s] = obs.version
            self.memories[s].update(obs)

    def turn(self, *slots: int) -> None:
        """Observe, then mark a turn as taken (the next event log starts here)."""
        self.observe(*slots)
        for s in slots or tuple(self.memories):
            self.memories[s].end_turn()

    def timeout(self) -> None:
        apply(self.game, PhaseTimeout(self.game.phase_seq))


def day3_investigator(extra_chat: tuple[tuple[int, str], ...] = (), *,
                      fake_doctor: bool = True,
                      day2_chat: tuple[tuple[int, str], ...] = ()) -> Tracker:
    """Day 3, Voting, seen by every seat; Player 7 (Investigator) took turns
    on Night 1 and Night 2. `extra_chat` is said on Day 3, `day2_chat` on
    Day 2."""
    g = new_game(GameConfig(players=9, seed=3, roles=DAY3_ROLES))
    t = Tracker(g, list(range(1, 10)))
    t.observe()
    apply(g, WriteWill(3, "I am the Doctor.\nN1 heal Player 5.\nN2 heal Player 1."))
    apply(g, Chat(1, "Hello town, let's find the Mafia."))
    t.timeout()  # Night 1
    apply(g, NightAction(7, (4,)))
    apply(g, NightAction(3, (5,)))
    apply(g, NightAction(2, (9,)))
    apply(g, Chat(2, "Let's kill Player 9."))
    t.turn(7)
    t.timeout()  # Day 2
    apply(g, Chat(5, "I am the Lookout."))
    for slot, text in day2_chat:
        apply(g, Chat(slot, text))
    t.timeout()  # Voting
    t.timeout()  # Night 2
    apply(g, NightAction(7, (2,)))
    apply(g, NightAction(2, (3,)))
    apply(g, NightAction(3, (1,)))
    t.turn(7)
    t.timeout()  # Day 3
    apply(g, Chat(5, "We need to vote someone. Player 4 has been acting weird."))
    # the Mafioso's Doctor claim after the Doctor's death shows every Town
    # seat an enemy (`moves.exposed`: their vote goes to Player 4 alone);
    # `fake_doctor=False` keeps Player 4 silent, so no Town seat's vote is bound
    if fake_doctor:
        apply(g, Chat(4, "I'm the real Doctor! I healed Player 1 last night. "
                         "Player 3's will is probably fake."))
    for slot, text in extra_chat:
        apply(g, Chat(slot, text))
    t.timeout()  # Voting
    t.observe()
    return t
