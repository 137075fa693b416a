"""Server settings, from the environment (prefix TOSSIM_) or the CLI."""

from __future__ import annotations

from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOSSIM_", extra="ignore")

    database_url: str = "sqlite+aiosqlite:///./tossim.db"
    redis_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    # Start a 15-seat all-AI match at once (and another when it ends).
    demo: bool = False
    # Seconds between AI decisions in "paced" games (the demo), so people can watch.
    pace: float = 0.4
    # An AI seat that has not answered within this many seconds abstains.
    ai_deadline: float = 10.0
    # The same for model seats (a turn of the bundled model on a CPU takes a while).
    model_deadline: float = 600.0
    # Model seats: the model folder (default: the bundled SmolLM2) and, for the
    # openai backend, the server's base URL.
    model: str | None = None
    openai_url: str | None = None
    # The model catalogue (models.toml): named entries lobby seats and the
    # arena refer to (`model` in a seat spec). None: ./models.toml if present.
    models: str | None = None
    # Where model seats run: "local" (in this process, on the backend the seat
    # names) or "workers" (`tossim worker` processes connected to /ws/workers;
    # this process loads no model). Workers must present `worker_token`; with
    # no token set, only workers on this machine are accepted.
    inference: Literal["local", "workers"] = "local"
    worker_token: str | None = None
    # Who plays the demo match: a model backend (local: the bundled model) or
    # scripted; `demo_model_seats` seats are the model's, the rest scripted.
    # The bundled SmolLM2-135M cannot carry a game on its own (docs/agents.md,
    # "Bundled models"), so by default 4 model seats play among scripted bots
    # that keep the game moving; every seat is labelled in the game summary.
    demo_backend: str = "local"
    demo_model_seats: int = 4
    # Omniscient spectating of a live game with human seats, this many seconds late
    # (None: refused until the game ends).
    spectator_delay: float | None = None
    # Resume live games found in the store at start-up. With several server
    # processes on one database, exactly one should resume (the others serve).
    resume: bool = True
    # Websocket limits.
    max_message_bytes: int = 8192
    rate_limit_messages: int = 20
    rate_limit_seconds: float = 5.0
    # Phase lengths are multiplied by this (tests use small values).
    time_scale: float = 1.0
    # Standard-speed games with a living human seat: for this many seconds
    # after Voting opens (times time_scale) no AI vote completes a majority;
    # such votes are held and cast when the time is up (docs/rules.md).
    min_human_vote_s: float = 15.0
