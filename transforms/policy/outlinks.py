"""Outlink post-processing (Nutch's ParseOutputFormat). Pure, no Beam.

docs/nutch-differences.md D27: outlinks are de-duplicated by (target, anchor), and
`db.max.outlinks.per.page` counts distinct accepted targets, so one target linked twice does not
use up the quota twice (and does not get two linked records).
"""

import dataclasses
from typing import List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.urlparts import host_of
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['OutlinkRules', 'filter_outlinks']


@dataclasses.dataclass(frozen=True)
class OutlinkRules:
    max_outlinks: int            # db.max.outlinks.per.page (< 0: unlimited)
    max_length: int              # db.max.outlink.length
    ignore_internal: bool        # db.ignore.internal.links
    ignore_external: bool        # db.ignore.external.links
    by_domain: bool              # db.ignore.external.links.mode == byDomain


    def ignored(self, source: str, target: str, policy: UrlPolicy) -> bool:
        """The internal/external ignore rules, on the raw target."""
        if not (self.ignore_internal or self.ignore_external):
            return False
        origin, other = host_of(source), host_of(target)
        if self.by_domain:
            origin, other = policy.domains.domain(origin), policy.domains.domain(other)
        same = origin == other
        return (self.ignore_external and not same) or (self.ignore_internal and same)


def filter_outlinks(source: str, links: Sequence[Tuple[str, str]], rules: OutlinkRules,
                    policy: UrlPolicy, *, normalize: bool = True, filter_urls: bool = True,
                    denied: Optional[List[str]] = None) -> List[Tuple[str, str]]:
    """The accepted (normalized target, anchor) pairs, in document order. Targets the address
    policy refuses are dropped whatever filter_urls says, and appended to `denied` if given."""
    limit = len(links) if rules.max_outlinks < 0 else min(rules.max_outlinks, len(links))
    out: List[Tuple[str, str]] = []
    targets, pairs = set(), set()
    for target, anchor in links:
        if len(targets) >= limit:
            break
        if len(target) > rules.max_length or target == source:
            continue
        if rules.ignored(source, target, policy):
            continue
        target, verdict = policy.outlink_verdict(target, normalize, filter_urls)
        if not target or target == source or verdict == 'filtered':
            continue
        if verdict == 'denied':
            if denied is not None:
                denied.append(target)
            continue
        if (target, anchor) in pairs:
            continue
        pairs.add((target, anchor))
        targets.add(target)
        out.append((target, anchor))
    return out
