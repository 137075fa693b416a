"""`tossim worker`: a process that plays a server's model seats (`client.py`).

It sits beside `tossim.server`, above the seats it runs (`tossim.agents`) and
the backends it loads (`tossim.inference`), and imports nothing of the server:
the two meet only on the `/ws/workers` wire protocol (docs/architecture.md,
"Layers").
"""
