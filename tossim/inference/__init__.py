"""Model backends behind one async interface over token IDs (`base.Backend`):
llama.cpp, torch, vLLM, OpenAI-compatible completion and chat servers, and the
model catalogue (`catalogue.py`) that names them. Below the seats: nothing
here knows a game, a seat or a prompt (docs/architecture.md, "Layers").
"""
