"""When each of many keys last happened, oldest first, so forgetting the old ones costs only what is forgotten."""

from __future__ import annotations

from collections import OrderedDict
from typing import overload


class Recency:
    """key → the (loop) time it last happened, kept in the order of those times. `note` moves a key to the
    end, so with times that never go back the oldest is always first and `forget_before` stops at the
    first key young enough (a pacer asked this of 256+ keys at every post and edit, all of them each time:
    ~3 % of a busy front's CPU)."""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        self._at: OrderedDict[str, float] = OrderedDict()

    def note(self, key: str, at: float) -> None:
        self._at[key] = at
        self._at.move_to_end(key)

    @overload
    def get(self, key: str) -> float | None: ...
    @overload
    def get(self, key: str, default: float) -> float: ...
    def get(self, key: str, default: float | None = None) -> float | None:
        return self._at.get(key, default)

    def forget_before(self, horizon: float) -> None:
        """Forget every key last noted before `horizon`."""
        at = self._at
        while at and next(iter(at.values())) < horizon:
            at.popitem(last=False)

    def __len__(self) -> int:
        return len(self._at)
