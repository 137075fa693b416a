"""The model catalogue: named model entries that the lobby, `tossim play
--model-entry`, the arena and `GET /api/models` refer to.

A catalogue is a TOML file (`models.toml`; path: setting `TOSSIM_MODELS` or
`--models`, default `./models.toml` when it exists) with one table per entry:

    [models.gpt-4o-mini]
    backend = "chat"
    model = "gpt-4o-mini"
    api_key_env = "OPENAI_API_KEY"

Keys are never in the file: an entry names the environment variable that
holds its key (`api_key_env`), read only when a request is sent, so a key
cannot reach the database, logs, replays or the web client (everything that
leaves a process is built from `ModelEntry.public()`, which has no URL and no
key name's value). Two entries are built in: `scripted` (the rule-based bots)
and `smollm2` (the bundled SmolLM2 on the local backend). A lobby seat that
names only a `backend` plays that backend's built-in entry (`backend_entry`).

Contract used by the arena and the web client:
`ModelEntry` (frozen), `load_catalogue(path) -> Catalogue`,
`Catalogue.get(name)` (KeyError naming the known entries), `Catalogue.names()`,
`Catalogue.entries` (a tuple of `ModelEntry`, built-ins first). The seat an
entry plays is built in `tossim.agents.entry_seat` (`make_seat_for_entry`): the
catalogue is data that the backends read, so it knows no seats
(docs/architecture.md, "Layers").
"""

from __future__ import annotations

import importlib.util
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

BACKENDS = ("scripted", "local", "vllm", "openai", "chat")
CONSTRAINTS = ("auto", "json_schema", "tools", "text")
DEFAULT_CHAT_URL = "https://api.openai.com/v1"
DEFAULT_PATH = Path("models.toml")
BUILTIN_NAMES = ("scripted", "smollm2")
_SAMPLING_KEYS = {"temperature", "top_p", "max_tokens", "seed", "presence_penalty",
                  "frequency_penalty", "stop"}


class CatalogueError(ValueError):
    """The catalogue file cannot be used (unreadable, not TOML, invalid entry)."""


class ModelEntry(BaseModel):
    """One named model. Prices are USD per million tokens (0 for local
    models); `max_concurrency` bounds this entry's requests in flight and
    `rpm` its requests per minute (None: no limit) across all games of a
    process. `constraint` forces a chat entry's output constraint instead of
    probing for it; `turn_seconds` is a chat seat's deadline per turn and
    `thought_chars` the schema's bound on one thought."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@/+-]{0,63}$")
    backend: Literal["scripted", "local", "vllm", "openai", "chat"]
    # chat: the provider's model id; local, vllm: a model folder; openai: the
    # served model's tokenizer folder (None: the bundled model)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    protocol: Literal["xml", "json"] = "xml"
    sampling: dict[str, Any] = Field(default_factory=dict)
    context_limit: int | None = Field(default=None, ge=256)
    price_prompt: float = Field(default=0.0, ge=0)
    price_completion: float = Field(default=0.0, ge=0)
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    rpm: int | None = Field(default=None, ge=1)
    constraint: Literal["auto", "json_schema", "tools", "text"] = "auto"
    turn_seconds: float = Field(default=60.0, gt=0, le=3600)
    thought_chars: int = Field(default=300, ge=20, le=4000)
    # how its seats speak: "free" text (the seed's <speak>) or structured
    # "moves" the server renders (docs/agents.md#speech-moves); unset: moves
    # for a bundled model (too small for free text), free text otherwise
    speech: Literal["free", "moves"] | None = None
    builtin: bool = False

    @field_validator("base_url")
    @classmethod
    def _plain_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be an http(s) URL")
        if parts.username or parts.password:
            raise ValueError("base_url must not hold credentials: name the key's "
                             "environment variable in api_key_env")
        if parts.query:
            raise ValueError("base_url must not have a query string (keys do not go in URLs)")
        return v.rstrip("/")

    @field_validator("sampling")
    @classmethod
    def _sampling(cls, v: dict[str, Any]) -> dict[str, Any]:
        unknown = set(v) - _SAMPLING_KEYS
        if unknown:
            raise ValueError(f"unknown sampling setting(s) {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(sorted(_SAMPLING_KEYS))}")
        for k in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
            if k in v and (not isinstance(v[k], int | float) or isinstance(v[k], bool)
                           or not math.isfinite(v[k])):
                raise ValueError(f"sampling.{k} must be a number")
        if "max_tokens" in v and (type(v["max_tokens"]) is not int or v["max_tokens"] < 1):
            raise ValueError("sampling.max_tokens must be a positive integer")
        return v

    @model_validator(mode="after")
    def _backend_fields(self) -> ModelEntry:
        if self.backend == "chat":
            if self.protocol != "json":
                # the chat seat speaks seed 001's JSON protocol (schema, tools or text)
                object.__setattr__(self, "protocol", "json")
            if self.model is None:
                raise ValueError("a chat entry needs `model` (the provider's model id)")
            if self.base_url is None:
                object.__setattr__(self, "base_url", DEFAULT_CHAT_URL)
            if self.speech == "moves":
                raise ValueError("a chat entry writes free text: speech = \"moves\" needs "
                                 "a local, vllm or openai entry (guided decoding)")
        elif self.backend == "scripted":
            for f in ("model", "base_url", "api_key_env", "speech"):
                if getattr(self, f) is not None:
                    raise ValueError(f"a scripted entry takes no {f}")
        elif self.backend in ("local", "vllm") and (
                self.base_url is not None or self.api_key_env is not None):
            raise ValueError(f"a {self.backend} entry runs in-process: no base_url "
                                 "or api_key_env")
        if self.speech is None and self.backend != "scripted":
            object.__setattr__(self, "speech", "moves" if self.bundled else "free")
        return self

    # ---- what may leave the process --------------------------------------------------
    def public(self) -> dict[str, Any]:
        """Names and capabilities only: no URL, no key (for /api/models, the
        database and replays)."""
        return {"name": self.name, "backend": self.backend, "model": self.public_model,
                "protocol": self.protocol, "speech": self.speech, "builtin": self.builtin}

    @property
    def bundled(self) -> bool:
        """A model shipped with the package (the local backend's default or a
        bundled model's name), run in-process."""
        if self.backend not in ("local", "vllm"):
            return False
        from tossim.inference.bundled import BUNDLED
        return self.model is None or self.model in BUNDLED

    @property
    def public_model(self) -> str | None:
        """The model id, or for an in-process model folder only its last part."""
        if self.model is None:
            return None
        if self.backend in ("local", "vllm", "openai") and os.sep in self.model:
            return Path(self.model).name
        return self.model

    def capabilities(self) -> dict[str, Any]:
        return {"tools": self.backend != "scripted", "constraint": self.constraint,
                "context_limit": self.context_limit, "price_prompt": self.price_prompt,
                "price_completion": self.price_completion,
                "max_concurrency": self.max_concurrency, "rpm": self.rpm,
                "hosted": self.backend in ("chat", "openai")}

    def api_key(self) -> str | None:
        """The key from the environment (read when needed, never stored)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    @property
    def priced(self) -> bool:
        """Does the catalogue give this entry a price? A price of 0 is a price;
        none at all is not, and its cost is shown as "-" (docs/agents.md, "Metrics")."""
        return bool({"price_prompt", "price_completion"} & self.model_fields_set)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for that many tokens at this entry's prices."""
        return (prompt_tokens * self.price_prompt
                + completion_tokens * self.price_completion) / 1_000_000

    def unavailable_reason(self, *, openai_url: str | None = None,
                           inference: str = "local") -> str | None:
        """Why this process cannot play this entry (None: it can), without
        loading a model or sending a request."""
        if self.backend == "scripted":
            return None
        if self.backend == "chat":
            if importlib.util.find_spec("openai") is None:
                return "the openai package is not installed (pip install 'tossim[chat]')"
            if self.api_key_env and not os.environ.get(self.api_key_env):
                return f"the environment variable {self.api_key_env} (its API key) is not set"
            return None
        if inference == "workers":
            return None  # a worker that offers the backend plays it
        from tossim.inference.registry import unavailable_reason
        if self.backend == "openai" and self.base_url:
            openai_url = self.base_url
        return unavailable_reason(self.backend, openai_url)


def _builtins() -> dict[str, ModelEntry]:
    return {"scripted": ModelEntry(name="scripted", backend="scripted", builtin=True),
            "smollm2": ModelEntry(name="smollm2", backend="local", builtin=True)}


def backend_entry(backend: str, *, model: str | None = None,
                  protocol: str | None = None) -> ModelEntry:
    """The built-in entry a seat spec with only `backend` plays (scripted ->
    `scripted`, local -> `smollm2`; vllm and openai -> the server's configured
    model on that backend)."""
    if backend not in BACKENDS or backend == "chat":
        raise KeyError(f"no built-in entry for backend {backend!r}")
    base = _builtins()["scripted" if backend == "scripted" else "smollm2"]
    fields: dict[str, Any] = {"name": base.name if backend in ("scripted", "local")
                              else backend, "backend": backend, "builtin": True}
    if model is not None:
        fields["model"] = model
    if protocol is not None and backend != "scripted":
        fields["protocol"] = protocol
    return ModelEntry(**fields)


@dataclass(frozen=True)
class Catalogue:
    """Entries by name (built-ins first, then the file's in file order)."""

    entries: tuple[ModelEntry, ...]
    path: Path | None = None

    def get(self, name: str) -> ModelEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(f"no model entry {name!r} in the catalogue; known: "
                       f"{', '.join(self.names())}")

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def __contains__(self, name: object) -> bool:
        return any(e.name == name for e in self.entries)


def _format_error(exc: ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "entry"
        parts.append(f"{loc}: {err['msg']}")
    return f"{where}: " + "; ".join(parts)


def parse_catalogue(data: Mapping[str, Any], path: Path | None = None) -> Catalogue:
    """A catalogue from parsed TOML (`{"models": {name: {...}}}`)."""
    where = str(path) if path else "catalogue"
    unknown = set(data) - {"models"}
    if unknown:
        raise CatalogueError(f"{where}: unknown top-level key(s) {', '.join(sorted(unknown))};"
                             " entries go in [models.NAME] tables")
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise CatalogueError(f"{where}: `models` must be a table of [models.NAME] tables")
    entries = dict(_builtins())
    for name, fields in models.items():
        if name in BUILTIN_NAMES:
            raise CatalogueError(f"{where}: [models.{name}] redefines a built-in entry; "
                                 "choose another name")
        if not isinstance(fields, dict):
            raise CatalogueError(f"{where}: [models.{name}] must be a table")
        if "name" in fields or "builtin" in fields:
            raise CatalogueError(f"{where}: [models.{name}]: the table's name is the entry's "
                                 "name (no `name` or `builtin` key)")
        try:
            entries[name] = ModelEntry(name=name, **fields)
        except ValidationError as exc:
            raise CatalogueError(_format_error(exc, f"{where}: [models.{name}]")) from None
    return Catalogue(tuple(entries.values()), path)


def default_path() -> Path | None:
    """$TOSSIM_MODELS, else ./models.toml when it exists, else None (built-ins only)."""
    env = os.environ.get("TOSSIM_MODELS")
    if env:
        return Path(env)
    return DEFAULT_PATH if DEFAULT_PATH.is_file() else None


def load_catalogue(path: Path | str | None = None) -> Catalogue:
    """The catalogue at `path` (default: `default_path()`); CatalogueError
    with the file and the entry when it cannot be used."""
    p = Path(path) if path is not None else default_path()
    if p is None:
        return Catalogue(tuple(_builtins().values()))
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogueError(f"cannot read the model catalogue {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{p} is not valid TOML: {exc}") from None
    return parse_catalogue(data, p)


_cache: dict[tuple[str, float], Catalogue] = {}


def cached_catalogue(path: Path | str | None = None) -> Catalogue:
    """`load_catalogue`, re-read only when the file changes (the server calls
    this per request)."""
    p = Path(path) if path is not None else default_path()
    if p is None:
        return load_catalogue(None)
    try:
        key = (str(p.resolve()), p.stat().st_mtime)
    except OSError:
        return load_catalogue(p)  # raises the clear error
    if key not in _cache:
        _cache.clear()
        _cache[key] = load_catalogue(p)
    return _cache[key]
