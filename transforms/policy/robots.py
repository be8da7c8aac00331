"""robots.txt decisions (RFC 9309). Pure, no Beam.

`rules_from_response` turns a robots.txt response into `RobotsRules`; a robots.txt that cannot
be had (5xx, 429, network error) gives UNAVAILABLE: unlike Nutch, Scrapy and Heritrix, which then
allow everything, nothing of that host is fetched this round (RFC 9309 section 2.3.1.3/4;
docs/nutch-differences.md D16).
"""

import dataclasses
from typing import List, Optional, Sequence, Tuple

from protego import Protego

__all__ = ['RobotsRules', 'ALLOW_ALL', 'DENY_ALL', 'UNAVAILABLE', 'rules_from_response',
           'agent_names', 'robots_url']


@dataclasses.dataclass(frozen=True)
class RobotsRules:
    kind: str                              # 'allow_all', 'deny_all', 'parsed', 'unavailable'
    parser: Optional[Protego] = None
    reason: str = ''

    def allowed(self, url: str, agents: Sequence[str]) -> bool:
        if self.kind == 'parsed':
            return self.parser.can_fetch(url, self._agent(agents))
        return self.kind == 'allow_all'

    def crawl_delay(self, agents: Sequence[str]) -> Optional[float]:
        """Crawl-delay in seconds for our agent, or None when robots.txt sets none."""
        if self.kind != 'parsed':
            return None
        return self.parser.crawl_delay(self._agent(agents))

    def sitemaps(self) -> List[str]:
        """The URLs of its `Sitemap:` lines."""
        if self.kind != 'parsed':
            return []
        return list(self.parser.sitemaps)

    def _agent(self, agents: Sequence[str]) -> str:
        """The first of our names that has a group of its own, else the first name (which then
        falls back to the `*` group)."""
        find = getattr(self.parser, '_get_matching_rule_set', None)
        if find is not None and len(agents) > 1:
            star = find('*')
            for name in agents:
                group = find(name)
                if group is not None and group is not star:
                    return name
        return agents[0]


ALLOW_ALL = RobotsRules('allow_all')
DENY_ALL = RobotsRules('deny_all')


def UNAVAILABLE(reason: str) -> RobotsRules:  # noqa: N802 (reads like a constant)
    return RobotsRules('unavailable', reason=reason)


def rules_from_response(http_code: Optional[int], body: bytes, *, allow_403: bool,
                        error: str = '') -> RobotsRules:
    """Rules from the final robots.txt response (redirects already followed)."""
    if http_code is None:
        return UNAVAILABLE(f'robots.txt not fetched: {error or "network error"}')
    if http_code == 200:
        return RobotsRules('parsed', Protego.parse(body.decode('utf-8', 'replace')))
    if http_code == 403:
        return ALLOW_ALL if allow_403 else DENY_ALL
    if http_code == 429 or 500 <= http_code < 600:
        return UNAVAILABLE(f'robots.txt answered {http_code}')
    return ALLOW_ALL


def agent_names(agent_name: str, robots_agents: Sequence[str]) -> Tuple[str, ...]:
    """Our names for robots.txt matching: http.agent.name, then http.robots.agents, lowercased,
    without `*` and duplicates."""
    names = []
    for name in (agent_name, *robots_agents):
        name = name.strip().lower()
        if name and name != '*' and name not in names:
            names.append(name)
    return tuple(names)


def robots_url(scheme: str, netloc: str) -> str:
    return f'{scheme}://{netloc}/robots.txt'
