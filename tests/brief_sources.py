"""Briefs for tests, built through the product's own reading (orchestrator/brief/gather.py)."""

from __future__ import annotations

import asyncio

from orchestrator.brief.gather import Material, gather
from orchestrator.brief.models import Brief


async def brief_of(*texts: tuple[str, str]) -> Brief:
    """A brief of Markdown texts, each (origin, text), read as a file of that name would be."""
    return await gather([Material(origin=origin, name=origin if "." in origin else f"{origin}.md",
                                  data=text.encode()) for origin, text in texts])


def brief_now(*texts: tuple[str, str]) -> Brief:
    return asyncio.run(brief_of(*texts))
