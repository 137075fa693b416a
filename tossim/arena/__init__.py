"""Arenas: tournaments among model-catalogue entries (plan, runner, report)."""
