"""Registrable domains (the public suffix list, offline) and Nutch's representative URL of a
redirect. Pure, no Beam."""

import functools
import ipaddress
from typing import Sequence

from beamcrawl.transforms.policy.urlparts import MalformedUrl, host_of, split_url

__all__ = ['DomainHelper', 'choose_repr']


class DomainHelper:
    """Registrable domain of a host, from the bundled public suffix list, offline.

    As Nutch's URLUtil.getDomainName: ICANN suffixes only; an IP address is its own domain; a
    host that is a suffix, or whose suffix is unknown, is its own domain.
    """

    def __init__(self, extra_suffixes: Sequence[str] = ()):
        self.extra_suffixes = tuple(s.strip('.').lower() for s in extra_suffixes if s.strip('.'))
        self._extract = None

    def __getstate__(self):
        return {'extra_suffixes': self.extra_suffixes, '_extract': None}

    def _extractor(self):
        if self._extract is None:
            import tldextract  # here: it imports requests (0.05 s) that most commands never use
            self._extract = tldextract.TLDExtract(
                suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False,
                extra_suffixes=list(self.extra_suffixes))
            self._domain_cached = functools.lru_cache(maxsize=65536)(self._domain)
        return self._extract

    def domain(self, host: str) -> str:
        """The registrable domain of `host` (a bare host name, possibly with a port)."""
        self._extractor()
        return self._domain_cached(host)

    def _domain(self, host: str) -> str:
        host = host.lower()
        if host.startswith('['):
            return host
        host = host.split(':', 1)[0].rstrip('.')
        if not host:
            return ''
        try:
            ipaddress.ip_address(host)
            return host
        except ValueError:
            pass
        parts = self._extract(host)
        if not parts.suffix:
            return host
        if not parts.domain:
            return host
        return f'{parts.domain}.{parts.suffix}'

    def suffix(self, host: str) -> str:
        """The public suffix of `host` ('' for an address or an unknown suffix)."""
        host = host.lower().split(':', 1)[0].rstrip('.') if not host.startswith('[') else ''
        if not host:
            return ''
        try:
            ipaddress.ip_address(host)
            return ''
        except ValueError:
            pass
        return self._extractor()(host).suffix

    def url_domain(self, url: str) -> str:
        """The registrable domain of a URL's host ('' when it has none)."""
        host = host_of(url)
        return self.domain(host) if host else ''


def choose_repr(src: str, dst: str, temp: bool, domains: 'DomainHelper') -> str:
    """The representative URL of a redirect (Nutch's URLUtil.chooseRepr)."""
    try:
        _, src_auth, src_rest = split_url(src)
        _, dst_auth, dst_rest = split_url(dst)
    except MalformedUrl:
        return dst
    src_host, dst_host = host_of(src), host_of(dst)
    if not src_host or not dst_host or src_auth is None or dst_auth is None:
        return dst
    if domains.domain(src_host) != domains.domain(dst_host):
        return dst
    src_path, dst_path = src_rest.split('?', 1)[0], dst_rest.split('?', 1)[0]
    src_root, dst_root = src_path in ('', '/'), dst_path in ('', '/')
    if not temp:
        return src if src_root else dst
    if src_root and not dst_root:
        return src
    if dst_root and not src_root:
        return dst
    if not src_root and not dst_root and src_host == dst_host:
        src_parts = len([p for p in src_path.split('/') if p])
        dst_parts = len([p for p in dst_path.split('/') if p])
        if src_parts != dst_parts:
            return src if src_parts < dst_parts else dst
        if len(src_path) != len(dst_path):
            return src if len(src_path) < len(dst_path) else dst
        return src
    return dst if dst_host.count('.') < src_host.count('.') else src


