"""The `debate` command line (`main`) and the terminal renderer."""

from bots.cli.main import main

__all__ = ["main"]
