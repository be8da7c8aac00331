"""Link analysis rules (Nutch's WebGraph, LinkRank, NodeDumper). Pure, no Beam.

WebGraph keeps, per source page, the outlinks of its most recent parse, without links to its
own host or domain (link.ignore.internal.host/domain) and at most one link per target page and
per target domain (link.ignore.limit.page/domain), in parse order. LinkRank gives each node

    score(v) = (1 - d) + d * (rank_one + sum over counted inlinks u of score(u) / outdeg(u))

with d = link.analyze.damping.factor, rank_one = 1 / (number of nodes), every node starting at
link.analyze.initial.score; an inlink is counted unless an earlier counted inlink of v came from
the same page or domain (the link.ignore.limit keys again). Nutch takes "earlier" in whatever
order its shuffle delivers; beamcrawl takes the inlinks in source URL order, so a run is
repeatable (docs/nutch-differences.md). docs/link-analysis.md explains all of it.
"""

import dataclasses
import math
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.urlparts import MalformedUrl, scheme_host, split_url

__all__ = ['GraphRules', 'RankParams', 'page_of', 'first_outlinks', 'newest', 'select_outlinks',
           'limit_keys', 'counted_inlinks', 'linkrank_score', 'outlink_share', 'Convergence',
           'group_key', 'aggregate', 'DUMP_KINDS']

Link = Tuple[str, str]                 # (url, anchor)
DomainOf = Callable[[str], str]        # URL → registrable domain (policy/domains.py)


@dataclasses.dataclass(frozen=True)
class GraphRules:
    ignore_internal_host: bool     # link.ignore.internal.host
    ignore_internal_domain: bool   # link.ignore.internal.domain
    limit_page: bool               # link.ignore.limit.page
    limit_domain: bool             # link.ignore.limit.domain
    delete_gone: bool              # link.delete.gone


@dataclasses.dataclass(frozen=True)
class RankParams:
    damping: float                 # link.analyze.damping.factor
    initial: float                 # link.analyze.initial.score
    rank_one: float                # 1 / number of nodes
    limit_page: bool               # link.ignore.limit.page
    limit_domain: bool             # link.ignore.limit.domain

    @classmethod
    def create(cls, *, damping: float, initial: float, nodes: int, limit_page: bool,
               limit_domain: bool) -> 'RankParams':
        """ValueError for a damping factor outside [0, 1] or an empty graph."""
        if not 0.0 <= damping <= 1.0:
            raise ValueError(f'link.analyze.damping.factor={damping}: must be within 0 and 1')
        if nodes < 1:
            raise ValueError('the web graph has no node (is it empty?)')
        return cls(damping, initial, 1.0 / nodes, limit_page, limit_domain)


def page_of(url: str) -> Optional[str]:
    """Nutch's URLUtil.getPage: the URL lowercased, without its query (the fragment stays);
    None for a URL without a host."""
    lowered = url.lower()
    try:
        split_url(lowered)
    except MalformedUrl:
        return None
    head, sep, rest = lowered.partition('?')
    if not sep:
        return lowered
    _, hash_, fragment = rest.partition('#')
    return head + (hash_ + fragment)


def _host(url: str) -> Optional[str]:
    return scheme_host(url)[1] or None


def first_outlinks(links: Iterable[Link]) -> List[Link]:
    """A page's outlinks as WebGraph's map side keeps them: one per target URL, the first."""
    seen: Dict[str, str] = {}
    for url, anchor in links:
        if url and url not in seen:
            seen[url] = anchor
    return list(seen.items())


def newest(entries: Iterable[Tuple[int, Sequence[Link]]]) -> Tuple[int, List[Link]]:
    """(fetch time, links) of the most recent parse of a page: the links of every entry with the
    latest fetch time, in entry order (a newer segment's outlinks replace older ones)."""
    latest, links = None, []
    for fetch_time, entry_links in entries:
        if latest is None or fetch_time > latest:
            latest, links = fetch_time, list(entry_links)
        elif fetch_time == latest:
            links.extend(entry_links)
    return (latest if latest is not None else 0), links


def select_outlinks(source: str, links: Iterable[Link], rules: GraphRules,
                    domain_of: DomainOf) -> List[Link]:
    """The outlinks WebGraph stores for `source` (Nutch's OutlinkDb reducer), in order."""
    host = _host(source)
    domain = domain_of(source) if host else ''
    pages, domains, kept = set(), set(), []
    for url, anchor in links:
        to_host = _host(url)
        if to_host is None:
            continue                       # no host: Nutch's URL parsing fails on it too
        to_domain, to_page = domain_of(url), page_of(url)
        if rules.limit_page and to_page in pages:
            continue
        if rules.limit_domain and to_domain in domains:
            continue
        if rules.ignore_internal_host and to_host == host:
            continue
        if rules.ignore_internal_domain and to_domain.lower() == domain.lower():
            continue
        kept.append((url, anchor))
        pages.add(to_page)
        domains.add(to_domain)
    return kept


def limit_keys(source: str, params: RankParams, domain_of: DomainOf
               ) -> Tuple[Optional[str], Optional[str]]:
    """(page, domain) of an inlink's source as LinkRank's limits compare them (None for a limit
    that is off)."""
    return (page_of(source) if params.limit_page else None,
            domain_of(source) if params.limit_domain else None)


def counted_inlinks(inlinks: Iterable[Tuple[str, float]], params: RankParams,
                    keys_of: Callable[[str], Tuple[Optional[str], Optional[str]]]
                    ) -> List[Tuple[str, float]]:
    """The (source, share) inlinks LinkRank counts for one node: in source URL order, each
    unless a counted one came from the same page or domain (as the params limit; `keys_of`:
    `limit_keys` of a source, perhaps remembered)."""
    inlinks = sorted(inlinks)
    if len(inlinks) < 2 or not (params.limit_page or params.limit_domain):
        return inlinks
    pages, domains, counted = set(), set(), []
    for source, share in inlinks:
        page, domain = keys_of(source)
        if params.limit_page and page in pages:
            continue
        if params.limit_domain and domain in domains:
            continue
        counted.append((source, share))
        pages.add(page)
        domains.add(domain)
    return counted


def linkrank_score(inlink_total: float, params: RankParams) -> float:
    """Nutch's LinkRank formula: (1 - d) + d * (rank_one + the counted inlinks' shares)."""
    return (1.0 - params.damping) + params.damping * (params.rank_one + inlink_total)


def outlink_share(score: float, num_outlinks: int) -> float:
    """What a node gives each outlink (Nutch's Node.getOutlinkScore)."""
    return score / num_outlinks if num_outlinks > 0 else score


class Convergence:
    """How much the scores changed in an iteration: the L1 norm and the largest change."""

    def __init__(self, l1: float = 0.0, largest: float = 0.0, nodes: int = 0,
                 total: float = 0.0):
        self.l1, self.largest, self.nodes, self.total = l1, largest, nodes, total

    def add(self, old: float, new: float) -> None:
        change = abs(new - old)
        self.l1 += change
        self.largest = max(self.largest, change)
        self.nodes += 1
        self.total += new

    def merge(self, other: 'Convergence') -> 'Convergence':
        return Convergence(self.l1 + other.l1, max(self.largest, other.largest),
                           self.nodes + other.nodes, self.total + other.total)

    def as_dict(self) -> dict:
        return {'l1': self.l1, 'max': self.largest, 'nodes': self.nodes, 'total': self.total}

    @classmethod
    def from_dict(cls, d: dict) -> 'Convergence':
        return cls(d['l1'], d['max'], d['nodes'], d['total'])

    def line(self, iteration: int, of: int) -> str:
        mean = self.total / self.nodes if self.nodes else math.nan
        return (f'iteration {iteration}/{of}: L1 change {self.l1:.6g}, max change '
                f'{self.largest:.6g}, mean score {mean:.6g} ({self.nodes} nodes)')


# nodedumper: what a node's value is, by --scores / --inlinks / --outlinks.
DUMP_KINDS = {'scores': 'inlink_score', 'inlinks': 'num_inlinks', 'outlinks': 'num_outlinks'}


def group_key(url: str, by: str, domain_of: DomainOf) -> Optional[str]:
    """The host (lowercased) or the domain of a node's URL, for nodedumper's grouping."""
    return _host(url) if by == 'host' else (domain_of(url) or None)


def aggregate(values: Iterable[float], how: str) -> float:
    """nodedumper's aggregate of a group: 'sum' or 'max' (0 for no value, as Nutch)."""
    values = list(values)
    if how == 'sum':
        return float(sum(values))
    return float(max([0.0] + values))
