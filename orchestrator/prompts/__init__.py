"""Prompt templates live as text files beside this module; `$name` placeholders are filled in."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from string import Template


@cache
def _template(name: str) -> Template:
    return Template(files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8"))


def render(name: str, **values: object) -> str:
    """Fill prompt `name`; a missing value is an error here, not a silent `$gap` sent to a model."""
    return _template(name).substitute({k: str(v) for k, v in values.items()}).strip()
