"""Server settings, from the environment (prefix TOSSIM_) or the CLI."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
import subprocess
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
    # A day's model-written summary must come within this share of the Night
    # that follows (timed games); until then, and if it is late, fails or is
    # degenerate, the extractive summary stands (docs/architecture.md, "Day summaries").
    summary_share: float = Field(default=0.5, gt=0.0, le=1.0)
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
    # Load the embedded model (the `local` backend) at start-up, in a thread,
    # so the first game's model seats do not wait for it and the event loop
    # never does (tossim.server.preload). `tossim serve` turns it on; tests'
    # apps leave it off (each would load the model again).
    preload_models: bool = False
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
    # Slow clients (docs/api.md, "Limits"): a request's headers must arrive
    # within header_timeout_s of its first byte (or of the connection), its
    # body within body_timeout_s of its headers, else 408 and the connection
    # closes; one address holds at most max_connections_per_client
    # connections at once, websockets included (0: no limit; behind a reverse
    # proxy every client has the proxy's address: limit there instead).
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=30.0, gt=0)
    max_connections_per_client: int = Field(default=64, ge=0)
    # Lobbies one client address may create per lobby_rate_seconds (429 beyond).
    lobby_rate_limit: int = Field(default=10, ge=1)
    lobby_rate_seconds: float = Field(default=60.0, gt=0)
    # Phase lengths are multiplied by this (tests use small values).
    time_scale: float = 1.0
    # Standard-speed games with a living human seat: for this many seconds
    # after Voting opens (times time_scale) no AI vote completes a majority;
    # such votes are held and cast when the time is up (docs/rules.md).
    min_human_vote_s: float = 15.0
    # The server's secret for fair deals: the seed of a game with a human seat
    # is HMAC(secret, game id + the creator's seed), so nobody can compute the
    # deal offline. Absent: read from `secret_file`, or generated there once
    # (mode 0600; default: $XDG_DATA_HOME/tossim/server-secret, i.e.
    # ~/.local/share/tossim/server-secret). Never logged, never in a git work
    # tree: the server refuses a file that is (docs/api.md, "Fair deals").
    deal_secret: SecretStr | None = None
    secret_file: str | None = None

    def default_secret_file(self) -> Path:
        return default_secret_path()

    def secret_path(self) -> Path:
        return Path(self.secret_file).expanduser() if self.secret_file \
            else self.default_secret_file()

    def server_secret(self) -> bytes:
        """The deal secret: set, or read from (or generated into) its file.
        Raises StartRefused when the file is in a git work tree (tracked or
        not) or other users may read it."""
        if self.deal_secret is not None and self.deal_secret.get_secret_value():
            given = self.deal_secret.get_secret_value()
            if published(given):
                raise StartRefused("refusing to start: TOSSIM_DEAL_SECRET is the deal secret "
                                   "the repository once published: set a new one, e.g. "
                                   "`python3 -c 'import secrets; print(secrets.token_hex(32))'`")
            return given.encode()
        path = self.secret_path()
        if (problem := secret_file_problem(path)) is not None:
            raise StartRefused(problem)
        secret = load_or_create_secret(path)
        if (problem := secret_file_problem(path)) is not None:  # its mode, now it exists
            raise StartRefused(problem)
        if published(secret):  # a copy of the one the repository held
            raise StartRefused(f"refusing to start: {path} holds the deal secret the "
                               f"repository once published. Make a new one: "
                               f"`tossim new-secret --file {path}`")
        self.deal_secret = SecretStr(secret)  # once per process
        return secret.encode()

    def worker_token_problem(self) -> str | None:
        """Why this server must not accept workers as configured, or None.
        Workers receive model seats' private views, so a server listening on
        a non-loopback address takes only a token nobody can guess; without
        a token set it accepts workers from this machine only, which is
        enough for a loopback server (docs/api.md, "Inference workers")."""
        if is_loopback(self.host):
            return None
        token = self.worker_token or ""
        fix = ("set TOSSIM_WORKER_TOKEN to a random secret of 32 bytes or more, e.g. "
               "`export TOSSIM_WORKER_TOKEN=$(python3 -c 'import secrets; "
               "print(secrets.token_urlsafe(32))')`, and give the workers the same")
        if not token:
            if self.inference != "workers":
                return None  # no worker is accepted from another machine
            return (f"refusing to start: model seats run on workers, and this server "
                    f"listens on {self.host} with no worker token: {fix}")
        if token.lower() in DEFAULT_TOKENS:
            return f"refusing to start: the worker token is a published default: {fix}"
        if len(token.encode()) < MIN_WORKER_TOKEN_BYTES:
            return (f"refusing to start: the worker token is {len(token.encode())} bytes, "
                    f"too short for a server listening on {self.host}: {fix}")
        return None

    def old_secret_file(self) -> Path | None:
        """A deal secret left beside a SQLite database by an older version
        (which kept it there, and the repository once committed one): it is
        no longer read, and must not be reused."""
        url = make_url(self.database_url)
        if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
            return None
        path = Path(str(url.database)).resolve().with_name("tossim-server-secret")
        return path if path.exists() else None

    def check_start(self) -> None:
        """Refuse to start (StartRefused, with the reason and the fix) with a
        deal secret others can read, or a worker token others can guess."""
        if (problem := self.worker_token_problem()) is not None:
            raise StartRefused(problem)
        self.server_secret()


# Worker tokens below this many bytes (or published ones) are refused on a
# server listening beyond loopback.
MIN_WORKER_TOKEN_BYTES = 32
DEFAULT_TOKENS = frozenset({"change-me", "changeme", "secret", "token", "password"})


# SHA-256 of deal secrets that were published (the repository committed one
# until issue 24): refused wherever they come from.
PUBLISHED_SECRETS = frozenset({
    "c4689a19b780a84da2eb5167b084b1f637ee2ceb0d3117fbae39c8d0ec63c111",
})


def published(secret: str) -> bool:
    return hashlib.sha256(secret.strip().encode()).hexdigest() in PUBLISHED_SECRETS


class StartRefused(RuntimeError):
    """The server must not start as configured; the message says why and how
    to fix it."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_secret_path() -> Path:
    """$XDG_DATA_HOME/tossim/server-secret (~/.local/share/...): the user's
    data, never beside the database (which defaults to the current folder,
    often a clone of the repository)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tossim" / "server-secret"


def work_tree_of(path: Path) -> Path | None:
    """The git work tree `path` lies in (a folder above it with `.git`), or None."""
    for folder in path.resolve().parents:
        if (folder / ".git").exists():
            return folder
    return None


def tracked_by_git(tree: Path, path: Path) -> bool:
    """Whether git tracks `path` in `tree` (False when git cannot tell)."""
    try:
        done = subprocess.run(["git", "-C", str(tree), "ls-files", "--error-unmatch", "--",
                               str(path.resolve())],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def secret_file_problem(path: Path) -> str | None:
    """Why the deal secret must not be kept in `path`, with the command that
    makes a new one; None if it may. Anyone with a copy of the secret computes
    every deal from the public game id."""
    remake = "tossim new-secret" if path == default_secret_path() \
        else f"tossim new-secret --file {default_secret_path()} (and unset TOSSIM_SECRET_FILE)"
    tree = work_tree_of(path)
    if tree is not None:
        if path.exists() and tracked_by_git(tree, path):
            return (f"refusing to start: the deal secret file {path} is tracked by git "
                    f"(work tree {tree}), so anyone with the repository can compute every "
                    f"deal. Remove it (`git rm --cached {path.name}` and delete it; it "
                    f"stays in the history, never use it again) and make a new one "
                    f"outside any work tree: `{remake}`, or set TOSSIM_DEAL_SECRET")
        return (f"refusing to start: the deal secret file {path} is inside the git work "
                f"tree {tree}, where a commit would publish it. Make one outside any "
                f"work tree: `{remake}`, or set TOSSIM_DEAL_SECRET")
    if path.exists() and path.stat().st_mode & 0o077:
        return (f"refusing to start: the deal secret file {path} can be read by other "
                f"users (mode {path.stat().st_mode & 0o777:04o}), who could compute every "
                f"deal. Make a new one (the old one may have been read): "
                f"`tossim new-secret --file {path}`")
    return None


def write_new_secret(path: Path) -> None:
    """Replace (or create) the secret in `path` with a new random one, mode
    0600 from the start (written beside it, then renamed over it). Games
    already dealt keep their stored seeds."""
    if (tree := work_tree_of(path)) is not None:
        raise StartRefused(f"{path} is inside the git work tree {tree}: keep the deal "
                           f"secret outside any work tree (default {default_secret_path()})")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = path.with_name(path.name + ".new")
    fresh.unlink(missing_ok=True)
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.replace(fresh, path)


def load_or_create_secret(path: Path) -> str:
    """The secret in `path`, creating the file (0600, exclusively, so two
    processes starting together agree) with a new random secret if absent."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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
