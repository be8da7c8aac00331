"""URL normalization and filtering, as Nutch's urlnormalizer-basic, urlnormalizer-regex and
urlfilter-regex plugins behave, plus host and domain helpers.

Pure Python, no Beam. `UrlPolicy` bundles the configured chain so that a pipeline can carry one
picklable object: `policy.normalize(url)` raises `MalformedUrl`, `policy.accept(url)` answers the
filters, `policy.clean(url)` does both and returns (url or None, reason).
"""

import ipaddress
import re
import urllib.parse
import xml.etree.ElementTree as ET
from typing import List, Optional, Sequence, Tuple

import idna

from beamcrawl.transforms.policy.addresses import AddressPolicy, parse_ipv4
from beamcrawl.transforms.policy.domains import DomainHelper, choose_repr  # re-exported
from beamcrawl.transforms.policy.urlparts import (MalformedUrl, host_of, scheme_host,  # re-exported
                                                  split_url)


__all__ = ['MalformedUrl', 'RuleError', 'BasicNormalizer', 'RegexNormalizer', 'RegexFilter',
           'DomainHelper', 'UrlPolicy', 'choose_repr', 'host_of', 'scheme_host', 'split_url']


class RuleError(ValueError):
    """A rule file that cannot be read; the message names the file and line."""


_DEFAULT_PORTS = {'http': 80, 'https': 443, 'ftp': 21}
_HIER_SCHEMES = ('http', 'https', 'ftp')
_UNRESERVED = frozenset('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~')
_ESCAPED = frozenset(' "<>[]^`{|}\x7f') | frozenset(chr(c) for c in range(0x20))
_HEX = frozenset('0123456789abcdefABCDEF')


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
        url = url.strip()
        if not url:
            return url
        scheme, authority, rest = split_url(url)
        if scheme == 'file':
            prefix = f'file://{authority}' if authority is not None else 'file:'
            return prefix + _remove_dot_segments(rest.split('?', 1)[0]) + (
                '?' + rest.split('?', 1)[1] if '?' in rest else '')
        if scheme not in _HIER_SCHEMES:
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


_FORBIDDEN_HOST = re.compile(r'[\x00-\x20\x7f#/:<>?@\[\\\]^|%]')


def _ends_in_number(label: str) -> bool:
    if label.isdigit() and label.isascii():
        return True
    return label[:2] in ('0x', '0X') and all(c in _HEX for c in label[2:])


def _java_regex(pattern: str) -> str:
    """Adapts the Java regex syntax used by Nutch rule files: `$1` in replacements is separate,
    here only an inline flag group placed after the start becomes a scoped group."""
    m = re.search(r'\(\?([imsx]+)\)', pattern)
    if m and m.start() > 0:
        return pattern[:m.start()] + f'(?{m.group(1)}:' + pattern[m.end():] + ')'
    return pattern


class RegexNormalizer:
    """Nutch's RegexURLNormalizer: ordered (pattern, substitution) rules, each replace-all."""

    def __init__(self, rules: Sequence[Tuple[str, str]] = ()):
        self.rules = [(re.compile(_java_regex(p)), s) for p, s in rules]
        # A URL that no rule matches is returned unchanged: one combined search decides that
        # (7 substitutions per URL cost more than all the rest of normalization). Patterns
        # with back-references would change meaning when combined, so then it is not used.
        self._any = None
        if self.rules and not any(re.search(r'\\[1-9]|\(\?P=', p) for p, _ in rules):
            self._any = re.compile('|'.join(_java_regex(f'(?:{p})') for p, _ in rules))

    @classmethod
    def parse(cls, text: str, source: str = 'regex-normalize.xml') -> 'RegexNormalizer':
        """Reads Nutch's XML format: <regex-normalize><regex><pattern/><substitution/></regex>."""
        try:
            root = ET.fromstring(text)
        except ET.ParseError as e:
            raise RuleError(f'{source}: not valid XML ({e})') from None
        rules = []
        for i, node in enumerate(root.iter('regex'), 1):
            pattern = node.findtext('pattern')
            if pattern is None:
                raise RuleError(f'{source}: rule {i} has no <pattern>')
            substitution = re.sub(r'\$(\d)', r'\\g<\1>', node.findtext('substitution') or '')
            try:
                re.compile(_java_regex(pattern))
            except re.error as e:
                raise RuleError(f'{source}: rule {i}: bad pattern {pattern!r} ({e})') from None
            rules.append((pattern, substitution))
        return cls(rules)

    def __call__(self, url: str) -> str:
        if self._any is not None and not self._any.search(url):
            return url
        for regex, substitution in self.rules:
            url = regex.sub(substitution, url)
        return url


def _search_pattern(pattern: str) -> str:
    """A rule regex for `search`: a leading `.*` (or `.*?`) only lets the match start earlier,
    which search does anyway (URLs hold no newline), but it makes Python's engine backtrack over
    every start position: Nutch's loop rule costs 12 µs per URL with it and 0.5 µs without."""
    if pattern.startswith('.*?'):
        return pattern[3:]
    if pattern.startswith('.*') and not pattern.startswith(('.*+', '.**')):
        return pattern[2:]
    return pattern


class RegexFilter:
    """Nutch's RegexURLFilter: the first rule whose regex is found in the URL decides (`+`
    accepts, `-` rejects); no matching rule rejects. `> host` ... `<` blocks hold rules that
    apply only to URLs of that host or registered domain."""

    def __init__(self, rules: Sequence[Tuple[bool, str, Optional[str]]], domains: 'DomainHelper'):
        self.rules = [(sign, _searcher(re.compile(_search_pattern(_java_regex(p)))), scope)
                      for sign, p, scope in rules]
        self.domains = domains

    @classmethod
    def parse(cls, text: str, domains: 'DomainHelper',
              source: str = 'regex-urlfilter.txt') -> 'RegexFilter':
        rules = []
        scope = None
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line or line[0] in '# \t':
                continue
            line = line.rstrip()
            first, body = line[0], line[1:]
            if first == '>':
                scope = body.strip().lower()
                if not scope:
                    raise RuleError(f'{source}:{lineno}: `>` needs a host or domain')
                continue
            if first == '<':
                scope = None
                continue
            if first not in '+-':
                raise RuleError(f'{source}:{lineno}: a rule starts with + or -, not {first!r}')
            try:
                re.compile(_java_regex(body))
            except re.error as e:
                raise RuleError(f'{source}:{lineno}: bad regex {body!r} ({e})') from None
            rules.append((first == '+', body, scope))
        return cls(rules, domains)

    def __call__(self, url: str) -> bool:
        host = domain = None
        for accept, regex, scope in self.rules:
            if scope is not None:
                if host is None:
                    host = host_of(url)
                    domain = self.domains.domain(host)
                if scope != host and scope != domain:
                    continue
            if regex(url):
                return accept
        return False


class _TailSearch:
    """`regex.search` for a rule anchored at the end whose matches are at most `width` long:
    only the URL's last `width` characters can hold a match, so only they are searched (Nutch's
    suffix rule costs 0.7 µs per URL searched whole, 0.15 µs this way)."""

    def __init__(self, regex, width):
        self.regex, self.width = regex, width

    def __call__(self, url):
        # one more character: `$` also matches before a final newline
        return self.regex.search(url[-self.width - 1:] if len(url) > self.width else url)


class _AnyChar:
    """`regex.search` for the rule `.` (accept the rest): found in any URL with a character
    other than a newline, without making a match object."""

    def __init__(self, regex):
        self.regex = regex

    def __call__(self, url):
        return bool(url) and (url[0] != '\n' or self.regex.search(url) is not None)


def _searcher(regex):
    """A callable equal to regex.search for a filter rule, faster for two usual shapes."""
    if regex.pattern == '.' and not regex.flags & (re.S | re.M):
        return _AnyChar(regex)
    width = _tail_width(regex)
    return _TailSearch(regex, width) if width is not None else regex.search


def _tail_width(regex) -> Optional[int]:
    """The longest possible match of a pattern that ends with `$` and has no other anchor,
    lookaround or back-reference (so a match is decided by the URL's tail alone); None
    otherwise."""
    if not regex.pattern.endswith('$') or regex.pattern.endswith('\\$') or regex.flags & re.M:
        return None
    from re import _constants as c, _parser      # the standard parser of re (Python ≥ 3.11)
    try:
        tree = _parser.parse(regex.pattern, regex.flags)
    except Exception:  # pylint: disable=broad-except  (any doubt: search whole)
        return None
    refused = {c.ASSERT, c.ASSERT_NOT, c.GROUPREF, c.GROUPREF_EXISTS, c.AT}

    def clean(items) -> bool:
        for op, arg in items:
            if op in refused:
                return False
            for sub in (arg if isinstance(arg, (list, tuple)) else (arg,)):
                if isinstance(sub, _parser.SubPattern) and not clean(sub):
                    return False
                if isinstance(sub, (list, tuple)):
                    for x in sub:
                        if isinstance(x, _parser.SubPattern) and not clean(x):
                            return False
        return True

    items = list(tree)
    if not items or items[-1] != (c.AT, c.AT_END) or not clean(items[:-1]):
        return None
    low, high = tree.getwidth()
    return high if 0 < high < 1000 else None


_HOST_CACHE_SIZE = 65536


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
        for _ in range(self.loop_count):
            before = url
            url = self.basic(url)
            if self.regex_normalizer is not None:
                url = self.regex_normalizer(url)
            if url == before:
                break
        return url

    def accept(self, url: str, parts: Optional[Tuple[str, str]] = None) -> bool:
        """The filters: scheme allow-list (with a host for hierarchical schemes), regex rules.
        `parts` is scheme_host(url) when the caller has it already."""
        scheme, host = parts or scheme_host(url)
        if scheme not in self.schemes:
            return False
        if scheme in _HIER_SCHEMES and not host:
            return False
        return self.regex_filter is None or self.regex_filter(url)

    def denied(self, url: str) -> Optional[str]:
        """Why the address policy refuses a URL's host before any lookup (an address literal
        in a denied range, a localhost name), or None. Applies whatever the filters say."""
        return self.denied_host(scheme_host(url)[1])

    def denied_host(self, host: str) -> Optional[str]:
        """`denied` for a host the caller has already taken out of its URL (decisions are
        remembered per host: a batch stage asks for the same hosts again and again)."""
        if self.address is None or not host:
            return None
        cache = self.__dict__.setdefault('_denied_hosts', {})
        try:
            return cache[host]
        except KeyError:
            pass
        if len(cache) >= _HOST_CACHE_SIZE:
            cache.clear()
        reason = cache[host] = self.address.denied_host(host)
        return reason

    def clean(self, url: str, *, normalize: bool = True, filter: bool = True
              ) -> Tuple[Optional[str], str]:
        """(clean url, '') or (None, 'malformed' | 'filtered' | 'denied'); the address policy
        applies even when filter is False."""
        if normalize:
            try:
                url = self.normalize(url)
            except MalformedUrl:
                return None, 'malformed'
            if not url:
                return None, 'malformed'
        if filter and not self.accept(url):
            return None, 'filtered'
        if self.denied(url):
            return None, 'denied'
        return url, ''
