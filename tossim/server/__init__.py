"""The thin FastAPI layer: authenticate, validate, forward; the engine decides."""
