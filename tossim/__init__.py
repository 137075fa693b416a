"""ToSSim: a Town of Salem game server whose seats can be humans or LLM players."""

__version__ = "0.1.0"
