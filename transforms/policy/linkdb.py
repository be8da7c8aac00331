"""Link inversion rules (Nutch's LinkDb). Pure, no Beam.

Every accepted outlink (target, anchor) of a page becomes an inlink (from_url, anchor) of its
target. Inlinks of a target are a set of (from_url, anchor) pairs; over `linkdb.max.inlinks` the
smallest pairs in (from_url, anchor) order are kept. That choice is deterministic and makes
inverting segments one at a time give exactly the linkdb of inverting them all at once (Nutch
keeps whatever arrived first).
"""

import dataclasses
from typing import Iterable, Iterator, List, Optional, Tuple

from beamcrawl.transforms.policy.urlparts import scheme_host
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['LinkRules', 'invert', 'cap_inlinks', 'truncate_anchor']

Pair = Tuple[str, str]


@dataclasses.dataclass(frozen=True)
class LinkRules:
    ignore_internal: bool        # linkdb.ignore.internal.links
    ignore_external: bool        # linkdb.ignore.external.links
    max_anchor_length: int       # linkdb.max.anchor.length, characters
    max_inlinks: int             # linkdb.max.inlinks

    @classmethod
    def create(cls, **fields) -> 'LinkRules':
        """The rules, checked: ValueError when they would keep no link at all."""
        rules = cls(**fields)
        if rules.ignore_internal and rules.ignore_external:
            raise ValueError('linkdb.ignore.internal.links and linkdb.ignore.external.links are '
                             'both true: no link would be kept; set one of them to false')
        return rules


def truncate_anchor(anchor: str, length: int) -> str:
    """At most `length` characters (code points, so a multi-byte character is never split)."""
    return anchor if len(anchor) <= length else anchor[:length]


def invert(source: str, outlinks: Iterable[Pair], rules: LinkRules,
           policy: Optional[UrlPolicy] = None, *, normalize: bool = False,
           filter_urls: bool = False) -> Iterator[Tuple[str, Pair]]:
    """(target, (from_url, anchor)) for each outlink kept; nothing when the source is rejected."""
    origin = scheme_host(source)[1]           # the host of the URL as it is, as Nutch
    if normalize or filter_urls:
        source, _ = policy.clean(source, normalize=normalize, filter=filter_urls)
        if source is None:
            return
    limit = rules.max_anchor_length
    for target, anchor in outlinks:
        host = scheme_host(target)[1]
        if rules.ignore_internal and (not host or host == origin):
            continue
        if rules.ignore_external and host != origin:
            continue
        if normalize or filter_urls:
            target, _ = policy.clean(target, normalize=normalize, filter=filter_urls)
            if target is None:
                continue
        yield target, (source, anchor if len(anchor) <= limit else anchor[:limit])


def cap_inlinks(pairs: Iterable[Pair], max_inlinks: int) -> List[Pair]:
    """The distinct pairs, sorted, at most max_inlinks of them (< 0: no cap)."""
    if type(pairs) is list and len(pairs) == 1:     # pylint: disable=unidiomatic-typecheck
        return pairs[:] if max_inlinks else []     # most targets have one new inlink
    ordered = sorted(set(pairs))
    return ordered if max_inlinks < 0 else ordered[:max_inlinks]
