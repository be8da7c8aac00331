"""Bounded memos for pure per-key decisions (a host's normal form, its address verdict, an
outlink's verdict): a batch stage asks for the same keys again and again. Pure, no Beam."""

from typing import Callable, Dict, Hashable, TypeVar

__all__ = ['remembered']

V = TypeVar('V')


def remembered(cache: Dict[Hashable, V], key: Hashable, compute: Callable[[Hashable], V],
               limit: int) -> V:
    """cache[key], computed by `compute(key)` on a miss; the cache is emptied when it holds
    `limit` keys. An exception from `compute` is not remembered: it is raised again next
    time."""
    try:
        return cache[key]
    except KeyError:
        pass
    if len(cache) >= limit:
        cache.clear()
    value = cache[key] = compute(key)
    return value
