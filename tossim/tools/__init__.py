"""What the command line's tools run, above everything they measure or
generate: the benchmarks (`bench_engine`, `bench_agents`, `bench_server`), a
model-catalogue entry's game (`play_entry`), the roles page (`docs_gen`), a
viewer's transcript (`transcript`) and a saved game's file (`game_log`)
(docs/architecture.md, "Layers").
"""
