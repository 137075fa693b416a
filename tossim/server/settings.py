"""Server settings, from the environment (prefix TOSSIM_) or the CLI."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url


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
    # A model seat's turn in a fast or paced game (no phase clock) must act
    # within this many seconds; in timed games the phase's end bounds it
    # (docs/agents.md#deadlines).
    model_turn_s: float = Field(default=45.0, gt=0)
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
    # Run live games nobody runs: at start-up and then every lease_s/3, take
    # over each live game whose lease has expired (its process died or was
    # stopped) and resume it from the stored log. Several server processes
    # on one database may all have it on: a lease lets only one run a game.
    # Off: this process runs only the games it starts (and serves the rest).
    resume: bool = True
    # Seconds a process's lease on a game lasts; the process renews its
    # leases every lease_s/3, so another takes a game over about lease_s after
    # its process died. Also how long a process's workers stay listed for
    # the others without news from it. Keep it well above the clock skew
    # between the machines and the longest stall of a process.
    lease_s: float = Field(default=10.0, gt=0)
    # Prefix of every Redis channel and key this server uses, so several
    # deployments (or test runs) can share one Redis without hearing each other.
    redis_prefix: str = ""
    # Websocket limits.
    max_message_bytes: int = 8192
    rate_limit_messages: int = 20
    rate_limit_seconds: float = 5.0
    # Per seat, across all of its sockets: chat and whisper messages per
    # window, and sockets open at once. Counted in Redis when `redis_url` is
    # set (so they hold across server processes), else in this process.
    chat_limit_messages: int = 8
    chat_limit_seconds: float = 10.0
    max_sockets_per_seat: int = 4
    # permessage-deflate on websockets. Off by default: a message is
    # serialised once for all its spectators, but compressed once per socket
    # (each has its own compression context), which was most of the server's
    # CPU with 1,000 spectators of one game; the messages are small.
    ws_compression: bool = False
    # HTTP request bodies over this many bytes are answered 413 unread.
    max_body_bytes: int = 16384
    # Phase lengths are multiplied by this (tests use small values).
    time_scale: float = 1.0
    # Standard-speed games with a living human seat: for this many seconds
    # after Voting opens (times time_scale) no AI vote completes a majority;
    # such votes are held and cast when the time is up (docs/rules.md).
    min_human_vote_s: float = 15.0
    # The server's secret for fair deals: the seed of a game with a human seat
    # is HMAC(secret, game id + the creator's seed), so nobody can compute the
    # deal offline. Absent: read from `secret_file`, or generated there once
    # (mode 0600; default: next to a SQLite database, else
    # ~/.local/state/tossim/server-secret). Never logged.
    deal_secret: SecretStr | None = None
    secret_file: str | None = None

    def default_secret_file(self) -> Path:
        url = make_url(self.database_url)
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
            return Path(str(url.database)).resolve().with_name("tossim-server-secret")
        return Path.home() / ".local" / "state" / "tossim" / "server-secret"

    def server_secret(self) -> bytes:
        """The deal secret: set, or read from (or generated into) its file."""
        if self.deal_secret is not None and self.deal_secret.get_secret_value():
            return self.deal_secret.get_secret_value().encode()
        path = Path(self.secret_file) if self.secret_file else self.default_secret_file()
        secret = load_or_create_secret(path)
        self.deal_secret = SecretStr(secret)  # once per process
        return secret.encode()


def load_or_create_secret(path: Path) -> str:
    """The secret in `path`, creating the file (0600, exclusively, so two
    processes starting together agree) with a new random secret if absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process may be writing it right now
            text = path.read_text().strip()
            if text:
                return text
            time.sleep(0.02)
        raise RuntimeError(f"the server secret file {path} is empty") from None
    secret = secrets.token_hex(32)
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    return secret
