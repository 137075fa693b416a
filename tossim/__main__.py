"""`python -m tossim ...`: the same command line as the `tossim` script
(tossim/cli.py), for an environment whose scripts folder is not on PATH."""

from tossim.cli import app

app(prog_name="tossim")
