"""Analysis of played games: play-quality metrics (`quality`), robustness of
seats under faulty context (`drift`) and an arena's figures from the store
(`arena_report`). All read games with the engine's full knowledge (every
event, every role), never through a model judge."""
