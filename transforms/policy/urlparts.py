"""Parsing URLs into their parts: scheme, authority, host. Pure, no Beam."""

import re
from typing import Optional, Tuple

from beamcrawl.transforms.storage.native import codec as _c

__all__ = ['MalformedUrl', 'split_url', 'scheme_host', 'host_of']


class MalformedUrl(ValueError):
    """A URL that cannot be parsed or normalized."""


_SCHEME_RE = re.compile(r'^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$', re.S)

def split_url(url: str) -> Tuple[str, Optional[str], str]:
    """(scheme lowercased, authority or None, path+query) of a URL, without its fragment."""
    m = _SCHEME_RE.match(url)
    if not m:
        raise MalformedUrl(f'no scheme: {url!r}')
    scheme, rest = m.group(1).lower(), m.group(2)
    rest = rest.split('#', 1)[0]
    if rest.startswith('//'):
        end = len(rest)
        for sep in '/?':
            i = rest.find(sep, 2)
            if i != -1:
                end = min(end, i)
        return scheme, rest[2:end], rest[end:]
    return scheme, None, rest


# The usual `scheme://[userinfo@]host` followed by the end or one of `:/?#`, in one match: the
# userinfo is taken when a host character follows it, and then for good (an atomic group), and
# the host is as long as it goes (possessive), so that the end is checked only where the plain
# match `scheme://(userinfo@)?host` ends, as it once was by hand after that match; a URL this
# does not match takes split_url's way (tests/test_urlparts.py holds the plain version).
_FAST_AUTHORITY = re.compile(r'([A-Za-z][A-Za-z0-9+.\-]*)://'
                             r'(?>(?:[^@/?#]*@(?=[^:/?#\[\]@]))?)([^:/?#\[\]@]++)(?=[:/?#]|\Z)')
_fast_authority = _FAST_AUTHORITY.match


def scheme_host(url: str) -> Tuple[str, str]:
    """(lowercased scheme, lowercased host) of a URL; host '' when it has none or is malformed.
    A fast path for the usual `scheme://host...` form (in C where it is built: the same regex's
    answer, storage/_datums.c), with split_url for the rest."""
    if _c is not None:
        parts = _c.scheme_host(url)
        if parts is not None:
            return parts
    m = _fast_authority(url)
    if m is not None:
        scheme, host = m.groups()
        return scheme.lower(), host.lower()
    try:
        scheme = split_url(url)[0]
    except MalformedUrl:
        return '', ''
    return scheme, host_of(url)


def host_of(url: str) -> str:
    """The lowercased host of an http(s)/ftp URL ('' when it has none or is malformed)."""
    try:
        _, authority, _ = split_url(url)
    except MalformedUrl:
        return ''
    if not authority:
        return ''
    hostport = authority.rsplit('@', 1)[-1]
    if hostport.startswith('['):
        return hostport[:hostport.find(']') + 1].lower()
    return hostport.split(':', 1)[0].lower()


