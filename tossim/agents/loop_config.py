"""A token-ID seat's settings (`LoopConfig`): its protocol and speech mode, the
tool cap, the thinking budget per phase and the token bounds of a turn
(docs/agents.md, "The tool loop"). The loop's share of them is its
`TurnRules`; the token transport reads the rest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tossim.agents.turn import TurnRules

# thinking budget per phase, in tokens (all pieces of one thought together):
# enough to weigh claims and results before speaking; shorter where the
# choice is small (a verdict, last words)
DEFAULT_THINK_BUDGET: dict[str, int] = {
    "day1": 160, "discussion": 160, "voting": 128, "defense": 128, "judgement": 64,
    "last_words": 64, "night": 128,
}
MOVES_THINK_SHARE = 0.4
"""A structured-move seat (a small model) thinks this share of the budget:
its thought only leads into a move the grammar constrains, and on two CPU
cores each thought token of four such seats, sharing the model (decoded
together), costs a second of a phase (docs/agents.md, "The phase's action")."""


@dataclass(frozen=True)
class LoopConfig:
    protocol: str = "xml"
    max_tool_calls: int = 4  # tool calls per turn; after that tools leave the grammar
    # tool calls a thought must make before it may close (0: the model decides);
    # a spent thinking budget still closes it
    min_tool_calls: int = 0
    think_budget: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_THINK_BUDGET))
    think_tokens: int = 128  # the budget of a phase not in think_budget
    action_tokens: int = 64  # the final action (a speech is the longest)
    turn_tokens: int = 640  # everything generated in one turn
    max_retries: int = 2  # final actions refused before the seat waits
    retry_think_tokens: int = 32  # a thought after a refused action, if the budget is spent
    temperature: float = 0.6
    # "free": speeches, wills and notes are free text; "moves": the seat
    # chooses a structured move the server renders (docs/agents.md#speech-moves)
    speech: str = "free"
    # may the seat `wait` while its phase's action (a vote, a verdict, a night
    # ability) is open? Unset: free-text seats may, structured-move seats (small
    # models, which pick `wait` by default) act (docs/agents.md, "The phase's action")
    abstain: bool | None = None

    @property
    def may_abstain(self) -> bool:
        return self.abstain if self.abstain is not None else self.speech != "moves"

    def budget(self, phase: str) -> int:
        """The thinking budget (tokens) of one turn in `phase` (a share of it
        for a structured-move seat, `MOVES_THINK_SHARE`)."""
        tokens = int(self.think_budget.get(phase, self.think_tokens))
        return max(16, int(tokens * MOVES_THINK_SHARE)) if self.speech == "moves" else tokens

    def scaled(self, factor: float) -> LoopConfig:
        """The same config with every thinking budget multiplied by `factor`."""
        return replace(self, think_budget={k: max(8, int(v * factor))
                                           for k, v in self.think_budget.items()},
                       think_tokens=max(8, int(self.think_tokens * factor)))

    def rules(self) -> TurnRules:
        """The loop's rules for a turn: a repeated tool call is refused within
        one thought; the guard's second refusal falls back to moves."""
        return TurnRules(max_tool_calls=self.max_tool_calls, max_retries=self.max_retries,
                         turn_tokens=self.turn_tokens, moves=self.speech == "moves",
                         protocol=self.protocol, repeat_scope="thought",
                         second_refusal="moves")
