"""Analysis of played games: play-quality metrics (`quality`) and robustness of
seats under faulty context (`drift`). Both read games with the engine's full
knowledge (every event, every role), never through a model judge."""
