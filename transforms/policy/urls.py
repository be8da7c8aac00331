"""UrlPolicy: the configured URL normalizers (policy/normalize.py, policy/urlrules.py), filters
(policy/urlrules.py) and address policy (policy/addresses.py), as one object.

Pure Python, no Beam. `UrlPolicy` bundles the configured chain so that a pipeline can carry one
picklable object: `policy.normalize(url)` raises `MalformedUrl`, `policy.accept(url)` answers the
filters, `policy.clean(url)` does both and returns (url or None, reason).
"""

from typing import List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.addresses import AddressPolicy
from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.memo import remembered
from beamcrawl.transforms.policy.normalize import HIER_SCHEMES, BasicNormalizer
from beamcrawl.transforms.policy.urlparts import MalformedUrl, scheme_host
from beamcrawl.transforms.policy.urlrules import RegexFilter, RegexNormalizer

__all__ = ['UrlPolicy']


_HOST_CACHE_SIZE = 65536
_UNKNOWN = object()          # not in a cache (None is a verdict: not denied)
# Outlink verdicts remembered per policy object: a site's menus and footers link the same URLs
# from every page (measured: a page of 50 links costs 0.5 ms in normalize and filter without).
_OUTLINK_CACHE_SIZE = 65536


class UrlPolicy:
    """The configured normalizer chain, filters and address policy, as one picklable object."""

    def __init__(self, *, basic: BasicNormalizer, regex_normalizer: Optional[RegexNormalizer],
                 loop_count: int, regex_filter: Optional[RegexFilter],
                 schemes: Sequence[str], domains: DomainHelper,
                 address: Optional[AddressPolicy] = None):
        self.basic = basic
        self.regex_normalizer = regex_normalizer
        self.loop_count = loop_count
        self.regex_filter = regex_filter
        self.schemes = frozenset(s.lower() for s in schemes)
        self.domains = domains
        self.address = address

    def normalize(self, url: str) -> str:
        """Runs the normalizer chain; raises MalformedUrl."""
        return self._normalized(url)[0]

    def _normalized(self, url: str) -> Tuple[str, Optional[Tuple[str, str]]]:
        """(normalize(url), its scheme_host when the basic normalizer gave it and no regex
        rule changed the URL after it, else None)."""
        parts = None
        for _ in range(self.loop_count):
            before = url
            url, parts = self.basic.with_parts(url)
            if self.regex_normalizer is not None:
                changed = self.regex_normalizer(url)
                if changed != url:
                    url, parts = changed, None
            if url == before:
                break
        return url, parts

    def accept(self, url: str, parts: Optional[Tuple[str, str]] = None) -> bool:
        """The filters: scheme allow-list (with a host for hierarchical schemes), regex rules.
        `parts` is scheme_host(url) when the caller has it already."""
        scheme, host = parts or scheme_host(url)
        if scheme not in self.schemes:
            return False
        if scheme in HIER_SCHEMES and not host:
            return False
        return self.regex_filter is None or self.regex_filter(url)

    def explain_normalize(self, url: str) -> Tuple[str, List[str]]:
        """(the URL normalized, what changed it: `basic` and the regex rules, in order), by
        the same steps as normalize(), for normalizerchecker; raises MalformedUrl."""
        steps: List[str] = []
        for _ in range(self.loop_count):
            before = url
            url = self.basic(url)
            if url != before and 'basic' not in steps:
                steps.append('basic')
            if self.regex_normalizer is not None:
                url, rules = self.regex_normalizer.explain(url)
                steps.extend(rule for rule in rules if rule not in steps)
            if url == before:
                break
        return url, steps

    def explain_filter(self, url: str) -> Tuple[bool, str]:
        """(accepted, why) by the same filters as accept(), then the address policy, for
        filterchecker: the scheme list, a missing host, or the regex rule that decided."""
        scheme, host = scheme_host(url)
        if scheme not in self.schemes:
            return False, f'scheme {scheme or "(none)"!r} not in urlfilter.scheme.allowed'
        if scheme in HIER_SCHEMES and not host:
            return False, 'no host'
        if self.regex_filter is not None:
            accepted, why = self.regex_filter.explain(url)
            if not accepted:
                return False, why
        else:
            why = 'no urlfilter.regex.file'
        denied = self.denied_host(host)
        if denied:
            return False, f'address policy (http.address.deny): {denied}'
        return True, why

    def denied(self, url: str) -> Optional[str]:
        """Why the address policy refuses a URL's host before any lookup (an address literal
        in a denied range, a localhost name), or None. Applies whatever the filters say."""
        return self.denied_host(scheme_host(url)[1])

    def denied_host(self, host: str) -> Optional[str]:
        """`denied` for a host the caller has already taken out of its URL (decisions are
        remembered per host: a batch stage asks for the same hosts again and again)."""
        if self.address is None or not host:
            return None
        known = self.__dict__.get('_denied_hosts')
        if known is not None and host in known:     # remembered()'s hit, without its call
            return known[host]
        return remembered(self.__dict__.setdefault('_denied_hosts', {}), host,
                          self.address.denied_host, _HOST_CACHE_SIZE)

    def outlink_verdict(self, url: str, normalize: bool, filter_urls: bool
                        ) -> Tuple[Optional[str], str]:
        """clean()'s steps for an outlink, remembered per URL: (the URL normalized, or None;
        'malformed', 'filtered', 'denied' or '' for accepted). The URL comes back also when it
        is filtered or denied: outlinks.filter_outlinks decides in Nutch's order what each
        means."""
        cache = self.__dict__.setdefault('_verdicts', {}).setdefault((normalize, filter_urls), {})
        return remembered(cache, url, lambda u: self._verdict(u, normalize, filter_urls),
                          _OUTLINK_CACHE_SIZE)

    def _verdict(self, url: str, normalize: bool, filter_urls: bool
                 ) -> Tuple[Optional[str], str]:
        """(url normalized, or None when normalizing fails or gives nothing; then 'malformed',
        else 'filtered', 'denied' or '' for accepted): the steps of clean()."""
        parts = None
        if normalize:
            try:
                url, parts = self._normalized(url)
            except MalformedUrl:
                return None, 'malformed'
            if not url:
                return None, 'malformed'
        if parts is None:
            parts = scheme_host(url)
        if filter_urls and not self.accept(url, parts):
            return url, 'filtered'
        if self.denied_host(parts[1]):
            return url, 'denied'
        return url, ''

    def __getstate__(self):
        # the caches stay in the process that filled them
        return {k: v for k, v in self.__dict__.items() if k not in ('_verdicts', '_denied_hosts')}

    def clean(self, url: str, *, normalize: bool = True, filter: bool = True
              ) -> Tuple[Optional[str], str]:
        """(clean url, '') or (None, 'malformed' | 'filtered' | 'denied'); the address policy
        applies even when filter is False."""
        url, verdict = self._verdict(url, normalize, filter)
        return (url, '') if not verdict else (None, verdict)
