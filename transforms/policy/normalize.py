"""URL normalization as Nutch's urlnormalizer-basic does it, by the standards (RFC 3986, the
WHATWG URL standard for hosts, IDNA / UTS #46 for internationalized names). Pure Python."""

import ipaddress
import re
import urllib.parse
from typing import List, Optional, Tuple

import idna

from beamcrawl.transforms.policy.addresses import parse_ipv4
from beamcrawl.transforms.policy.memo import remembered
from beamcrawl.transforms.policy.urlparts import MalformedUrl, split_url

__all__ = ['BasicNormalizer', 'HIER_SCHEMES']

_DEFAULT_PORTS = {'http': 80, 'https': 443, 'ftp': 21}
HIER_SCHEMES = ('http', 'https', 'ftp')
_UNRESERVED = frozenset('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~')
_ESCAPED = frozenset(' "<>[]^`{|}\x7f') | frozenset(chr(c) for c in range(0x20))
_HEX = frozenset('0123456789abcdefABCDEF')
_HOST_CACHE_SIZE = 65536


def _escape_char(ch: str) -> str:
    return ''.join(f'%{b:02X}' for b in ch.encode('utf-8'))


_PLAIN = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")


def _normalize_escapes(text: str) -> str:
    """Percent-encoding normalization of a path+query (BasicURLNormalizer's 'file' part)."""
    if _PLAIN.fullmatch(text):
        return text                    # nothing to decode or escape
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '%':
            if i + 2 < n and text[i + 1] in _HEX and text[i + 2] in _HEX:
                decoded = chr(int(text[i + 1:i + 3], 16))
                out.append(decoded if decoded in _UNRESERVED else '%' + text[i + 1:i + 3].upper())
                i += 3
                continue
            out.append('%25')
        elif ch in _ESCAPED or ord(ch) > 0x7e:
            out.append(_escape_char(ch))
        else:
            out.append(ch)
        i += 1
    return ''.join(out)


def _remove_dot_segments(path: str) -> str:
    """Resolves `.` and `..`, drops empty segments (duplicate slashes) and leading `..`."""
    if not path:
        return '/'
    if path[0] == '/' and '/.' not in path and '//' not in path:
        return path
    parts = path.split('/')
    segments: List[str] = []
    for part in parts:
        if part in ('', '.'):
            continue
        if part == '..':
            if segments:
                segments.pop()
            continue
        segments.append(part)
    trailing = parts[-1] in ('', '.', '..')
    if not segments:
        return '/'
    return '/' + '/'.join(segments) + ('/' if trailing else '')


def _normalize_path_query(rest: str) -> str:
    path, sep, query = rest.partition('?')
    path = _remove_dot_segments(_normalize_escapes(path))
    return path + (sep + _normalize_escapes(query) if sep else '')


class BasicNormalizer:
    """Nutch's BasicURLNormalizer.

    idn: '' (leave host as is), 'toAscii' (punycode, IDNA 2003) or 'toUnicode'.
    """

    def __init__(self, idn: str = '', trim_trailing_dot: bool = False):
        if idn not in ('', 'toAscii', 'toUnicode'):
            raise ValueError(f'idn mode {idn!r}')
        self.idn = idn
        self.trim_trailing_dot = trim_trailing_dot

    def __call__(self, url: str) -> str:
        return self.with_parts(url)[0]

    def with_parts(self, url: str) -> Tuple[str, Optional[Tuple[str, str]]]:
        """(the URL normalized, its (scheme, host) as urlparts.scheme_host gives them, or None
        when they are not known without asking scheme_host); raises MalformedUrl.

        The usual URL, `http://host/path` in plain characters, takes a shorter way to the
        same result as _full: no whitespace to strip (the pattern holds none), a lowercase
        scheme, no userinfo or port, a path without dot segments or empty segments whose
        characters need no escape normalization (_PLAIN), no fragment. The host goes through
        the same remembered _normalize_host (tests/test_normalize.py compares both ways). An
        ASCII host it gives back is made of `a-z0-9._-` only (lowercased letters of the
        pattern's host, or an IPv4 address), so scheme_host would give (scheme, host)."""
        m = _USUAL.match(url)
        if m is not None:
            rest = m.group(3)
            if rest is None:
                rest = '/'
            elif '/.' in rest or '//' in rest:
                return self._full(url), None
            host = m.group(2)
            known = self.__dict__.get('_hosts')     # _normalize_host's hit, without its calls
            host = known[host] if known is not None and host in known \
                else self._normalize_host(host)
            scheme = m.group(1)
            return f'{scheme}://{host}{rest}', ((scheme, host) if host.isascii() else None)
        return self._full(url), None

    def _full(self, url: str) -> str:
        """Every step of the normalization (the oracle of __call__'s shorter way)."""
        url = url.strip()
        if not url:
            return url
        scheme, authority, rest = split_url(url)
        if scheme == 'file':
            prefix = f'file://{authority}' if authority is not None else 'file:'
            return prefix + _remove_dot_segments(rest.split('?', 1)[0]) + (
                '?' + rest.split('?', 1)[1] if '?' in rest else '')
        if scheme not in HIER_SCHEMES:
            return f'{scheme}:{url.split(":", 1)[1]}'
        if authority is None or authority == '':
            return f'{scheme}:' + _normalize_path_query(rest)
        userinfo, _, hostport = authority.rpartition('@')
        host, port = self._split_hostport(hostport)
        host = self._normalize_host(host)
        if port is not None and port == _DEFAULT_PORTS[scheme]:
            port = None
        netloc = host + (f':{port}' if port is not None else '')
        if userinfo and scheme == 'ftp':
            netloc = f'{userinfo}@{netloc}'
        return f'{scheme}://{netloc}' + _normalize_path_query(rest or '/')

    @staticmethod
    def _split_hostport(hostport: str) -> Tuple[str, Optional[int]]:
        if hostport.startswith('['):
            end = hostport.find(']')
            if end == -1:
                raise MalformedUrl(f'bad IPv6 host {hostport!r}')
            host, tail = hostport[:end + 1], hostport[end + 1:]
            if tail and not tail.startswith(':'):
                raise MalformedUrl(f'bad host {hostport!r}')
            port_text = tail[1:] if tail else ''
        else:
            host, _, port_text = hostport.partition(':')
        if not port_text:
            return host, None
        if not port_text.isdigit() or int(port_text) > 65535:
            raise MalformedUrl(f'bad port {port_text!r}')
        return host, int(port_text)

    def _normalize_host(self, host: str) -> str:
        """_host_normalized, remembered per host (a batch stage meets the same hosts again and
        again; an error is not remembered: it is raised again)."""
        return remembered(self.__dict__.setdefault('_hosts', {}), host, self._host_normalized,
                          _HOST_CACHE_SIZE)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != '_hosts'}

    def _host_normalized(self, host: str) -> str:
        """The host, percent-decoded, then validated: an IP literal in canonical form (any
        spelling browsers read as IPv4 becomes dotted decimal), or a name of valid DNS labels,
        with Unicode labels in punycode (IDNA UTS #46) unless idn is '' or toUnicode."""
        if '%' in host:
            if re.search(r'%(?![0-9A-Fa-f]{2})', host):
                raise MalformedUrl(f'bad escape in host {host!r}')
            try:
                host = urllib.parse.unquote_to_bytes(host).decode('utf-8')
            except UnicodeError:
                raise MalformedUrl(f'bad escape in host {host!r}') from None
        if host.startswith('['):
            try:
                return f'[{ipaddress.IPv6Address(host[1:-1]).compressed}]'
            except ValueError:
                raise MalformedUrl(f'bad IPv6 host {host!r}') from None
        if _FORBIDDEN_HOST.search(host):
            raise MalformedUrl(f'forbidden character in host {host!r}')
        if self.trim_trailing_dot and host.endswith('.') and len(host) > 1:
            host = host[:-1]
        if not host.isascii():
            if self.idn in ('toAscii', 'toUnicode'):
                try:
                    host = idna.encode(host, uts46=True).decode('ascii')
                except (idna.IDNAError, UnicodeError):
                    raise MalformedUrl(f'bad internationalized host {host!r}') from None
            else:
                host = host.lower()
        else:
            host = host.lower()
        labels = host[:-1].split('.') if host.endswith('.') else host.split('.')
        if _ends_in_number(labels[-1]):            # WHATWG: then it must be an IPv4 address
            address = parse_ipv4(host)
            if address is None:
                raise MalformedUrl(f'host {host!r} ends in a number but is no IPv4 address')
            return str(address)
        if '' in labels or len(host) > 253 or any(len(label) > 63 for label in labels):
            raise MalformedUrl(f'bad host name {host!r}')
        if self.idn == 'toUnicode' and any(label.startswith('xn--') for label in labels):
            try:
                host = idna.decode(host)
            except (idna.IDNAError, UnicodeError):
                raise MalformedUrl(f'bad internationalized host {host!r}') from None
        return host


# A URL whose normalization is its host's and nothing else (BasicNormalizer.__call__): scheme,
# host, then nothing or a path of _PLAIN characters (a query too, `?` is one of them).
_USUAL = re.compile(r"(https?|ftp)://([A-Za-z0-9._\-]+)(/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*)?\Z")

_FORBIDDEN_HOST = re.compile(r'[\x00-\x20\x7f#/:<>?@\[\\\]^|%]')


def _ends_in_number(label: str) -> bool:
    if label.isdigit() and label.isascii():
        return True
    return label[:2] in ('0x', '0X') and all(c in _HEX for c in label[2:])
