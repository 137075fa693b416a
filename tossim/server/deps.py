"""Small helpers shared by the routes."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError

from tossim.server.service import ServiceError

T = TypeVar("T")


async def call(work: Awaitable[T]) -> T:
    """Run a service call, turning its errors into HTTP errors."""
    try:
        return await work
    except ServiceError as exc:
        if exc.status == 422:  # the same form as FastAPI's own validation errors
            raise RequestValidationError([{"type": "value_error", "loc": exc.loc,
                                           "msg": exc.detail, "input": None}]) from None
        raise HTTPException(status_code=exc.status, detail=exc.detail) from None
