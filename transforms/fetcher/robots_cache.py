"""robots.txt per site for one fetch run: fetched once per scheme://host:port, shared by the
fetch threads (one thread fetches, the others wanting the same site wait for it)."""

import threading
import urllib.parse
from typing import Callable, Dict, Optional

from beamcrawl.transforms.fetcher.http import HttpClient
from beamcrawl.transforms.policy.robots import RobotsRules, robots_url, rules_from_response

__all__ = ['RobotsCache', 'ROBOTS_LIMIT']

ROBOTS_LIMIT = 512 * 1024            # robots.txt bytes read at most (RFC 9309 asks ≥ 500 KiB)
_REDIRECT_CODES = (301, 302, 303, 307, 308)


class RobotsCache:
    """`rules(scheme, netloc)` → RobotsRules. `on_fetched(rules)` is called once per site, when
    its robots.txt has been fetched (for counters)."""

    def __init__(self, http: HttpClient, *, redirect_max: int, allow_403: bool,
                 denied: Callable[[str], Optional[str]],
                 on_fetched: Callable[[RobotsRules], None],
                 on_denied: Callable[[str], None]):
        self.http = http
        self.redirect_max = redirect_max
        self.allow_403 = allow_403
        self.denied = denied                # the address policy's verdict on a URL
        self.on_fetched = on_fetched
        self.on_denied = on_denied
        self._rules: Dict[str, RobotsRules] = {}
        self._site_locks: Dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def rules(self, scheme: str, netloc: str) -> RobotsRules:
        key = f'{scheme}://{netloc.lower()}'
        with self._lock:
            if key in self._rules:
                return self._rules[key]
            site_lock = self._site_locks.setdefault(key, threading.Lock())
        with site_lock:
            with self._lock:
                if key in self._rules:
                    return self._rules[key]
            rules = self._fetch(robots_url(scheme, netloc))
            with self._lock:
                self._rules[key] = rules
            self.on_fetched(rules)
            return rules

    def _fetch(self, url: str) -> RobotsRules:
        for _ in range(self.redirect_max + 1):
            reason = self.denied(url)
            if reason is None:
                resp = self.http.get(url, limit=ROBOTS_LIMIT)
                reason = resp.error if resp.denied else None
            if reason is not None:
                # A robots.txt (or its redirect) at a refused address is never requested; the
                # site is treated as having none, as after too many redirects.
                self.on_denied(reason)
                return rules_from_response(404, b'', allow_403=True)
            if resp.code in _REDIRECT_CODES and resp.headers.get('Location'):
                try:
                    url = urllib.parse.urljoin(url, resp.headers['Location'].strip())
                except ValueError:
                    return rules_from_response(404, b'', allow_403=True)
                continue
            return rules_from_response(resp.code, resp.body, allow_403=self.allow_403,
                                       error=resp.error)
        return rules_from_response(404, b'', allow_403=True)   # too many redirects: allow all
