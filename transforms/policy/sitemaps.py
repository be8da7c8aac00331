"""Sitemaps: reading one fetched sitemap, and what its entries mean for the crawldb. Pure, no Beam.

`parse_sitemap(body, url, limits, scopes)` reads an XML sitemap (`<urlset>`), a sitemap index
(`<sitemapindex>`), a text sitemap (one URL per line), an RSS 2.0 / RSS 1.0 feed or an Atom
feed, gzip-compressed or not, and returns its URLs (with lastmod, changefreq and priority) or the
sitemaps an index names. Everything it reads is bounded: the decompressed size, the URLs per
sitemap, and lxml parses without entities, DTDs or network access. A malformed sitemap gives
what was read before the fault and says so; it never raises.

The scope rule (docs/sitemaps.md): a sitemap vouches only for URLs under its own directory
(same scheme, host and port; path under the sitemap's path up to its last `/`), and, when a
site's robots.txt names it, for every URL of that site. URLs out of scope are dropped when
`strict` (Nutch's sitemap.strict.parsing).

`fetch_interval(changefreq, ...)` and `SitemapEntry` give the crawldb values: changefreq → fetch
interval (Nutch's table, bounded by the schedule's limits), lastmod → modified time, priority →
score (the protocol's default 0.5 when absent), and the sitemap that listed the URL →
SITEMAP_KEY in its metadata (the hostdb counts them per host).

`SitemapBounds` says how much one run may fetch, per run and per host (sitemap.count.max,
sitemap.host.count.max, sitemap.host.time.max, sitemap.time.max): `refuse_count` when a sitemap
is named, `refuse_time` when it is about to be requested. Each answer is a counter name.
"""

import dataclasses
import datetime
import email.utils
import io
import re
import urllib.parse
import zlib
from typing import Dict, List, Optional, Sequence


__all__ = ['SitemapLimits', 'SitemapBounds', 'SitemapSettings', 'SitemapEntry', 'ParsedSitemap',
           'parse_sitemap', 'sitemap_scope', 'site_scope', 'sitemap_host', 'in_scope',
           'fetch_interval', 'parse_lastmod', 'CHANGEFREQ_SECONDS', 'DEFAULT_PRIORITY',
           'SITEMAP_KEY']

# Nutch's SitemapProcessor table (seconds); "never" is the largest interval an int holds.
CHANGEFREQ_SECONDS = {'always': 1, 'hourly': 3600, 'daily': 86400, 'weekly': 604800,
                      'monthly': 2592000, 'yearly': 31536000, 'never': 2 ** 31 - 1}
DEFAULT_PRIORITY = 0.5                 # the sitemaps protocol's default priority
# The crawldb metadata key naming the sitemap a URL was injected from (not a Nutch key).
SITEMAP_KEY = '_sitemap_'
_GZIP_MAGIC = b'\x1f\x8b'


@dataclasses.dataclass(frozen=True)
class SitemapLimits:
    max_bytes: int           # sitemap.size.max: bytes of a sitemap, after gunzip
    max_urls: int            # sitemap.urls.max: URLs (or child sitemaps) read per sitemap
    strict: bool             # sitemap.strict.parsing: drop URLs out of the sitemap's scope


@dataclasses.dataclass(frozen=True)
class SitemapBounds:
    """How much one `sitemap` run fetches, so that no host can take the run."""
    count_max: int                 # sitemap.count.max: sitemaps per run
    host_count_max: int            # sitemap.host.count.max: sitemaps per host
    host_time_max: float           # sitemap.host.time.max: s from a host's first request; < 0: none
    time_max: float                # sitemap.time.max: s from the run's start; < 0: none

    def refuse_count(self, run_taken: int, host_taken: int) -> Optional[str]:
        """Why one more sitemap may not be taken, with `run_taken` sitemaps taken by the run
        and `host_taken` from its host so far: 'over_count', 'over_host_count', or None."""
        if run_taken >= self.count_max:
            return 'over_count'
        if host_taken >= self.host_count_max:
            return 'over_host_count'
        return None

    def refuse_time(self, now: float, run_started: float, host_started: Optional[float]
                    ) -> Optional[str]:
        """Why a taken sitemap may not be requested at `now` (s), the run having started at
        `run_started` and its host's first request at `host_started` (None: this is its
        first): 'over_time', 'over_host_time', or None."""
        if 0 <= self.time_max <= now - run_started:
            return 'over_time'
        if host_started is not None and 0 <= self.host_time_max <= now - host_started:
            return 'over_host_time'
        return None


@dataclasses.dataclass(frozen=True)
class SitemapSettings:
    """What a `sitemap` run reads sitemaps with (built by transforms/settings.py)."""
    limits: SitemapLimits
    depth_max: int                 # sitemap.index.depth.max
    bounds: SitemapBounds
    normalize: bool                # sitemap.url.normalize (sitemap URLs too: one URL, one fetch)
    default_xml: bool              # sitemap.url.default.sitemap.xml
    interval_default: int          # db.fetch.interval.default
    interval_min: float            # db.fetch.schedule.adaptive.min_interval
    interval_max: int              # db.fetch.interval.max


@dataclasses.dataclass(frozen=True)
class SitemapEntry:
    url: str
    lastmod_ms: Optional[int] = None
    changefreq: Optional[str] = None
    priority: Optional[float] = None
    sitemap: str = ''     # the sitemap that listed it, where it was read (set by the collector)


@dataclasses.dataclass
class ParsedSitemap:
    kind: str                                   # urlset, index, text, rss, atom, empty, unknown
    urls: List[SitemapEntry] = dataclasses.field(default_factory=list)
    sitemaps: List[str] = dataclasses.field(default_factory=list)   # an index's children
    dropped: Dict[str, int] = dataclasses.field(default_factory=dict)
    error: str = ''                             # why it was not read to its end ('': it was)

    def drop(self, why: str, n: int = 1) -> None:
        self.dropped[why] = self.dropped.get(why, 0) + n


def sitemap_scope(sitemap_url: str) -> str:
    """The prefix a sitemap vouches for: its URL up to the last `/` of its path."""
    parts = urllib.parse.urlsplit(sitemap_url)
    path = parts.path[:parts.path.rfind('/') + 1] or '/'
    return f'{parts.scheme.lower()}://{parts.netloc.lower()}{path}'


def site_scope(url: str) -> str:
    """The prefix of a whole site (for sitemaps its robots.txt names)."""
    parts = urllib.parse.urlsplit(url)
    return f'{parts.scheme.lower()}://{parts.netloc.lower()}/'


def sitemap_host(url: str) -> str:
    """The host a sitemap counts against (sitemap.host.*.max): its URL's host, lowercased."""
    try:
        return (urllib.parse.urlsplit(url).hostname or '').lower()
    except ValueError:
        return ''


def in_scope(url: str, scopes: Sequence[str]) -> bool:
    parts = urllib.parse.urlsplit(url)
    key = f'{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path or "/"}'
    return any(key.startswith(scope) for scope in scopes)


def fetch_interval(changefreq: Optional[str], default: int, shortest: float, longest: int) -> int:
    """The fetch interval (s) of a sitemap entry: Nutch's table for its changefreq, within
    [shortest, longest]; `default` without one."""
    if changefreq is None:
        return default
    return int(min(max(CHANGEFREQ_SECONDS[changefreq], shortest), longest))


_W3C = re.compile(r'^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?'
                  r'\s*(Z|[+-]\d{2}:?\d{2})?)?)?)?$')


def parse_lastmod(text: str) -> Optional[int]:
    """Epoch ms of a W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, with time and zone) or an RFC 822
    date (RSS); None when it is neither. A time without a zone is read as UTC."""
    text = text.strip()
    match = _W3C.match(text)
    try:
        if match:
            year, month, day, hour, minute, second, fraction, zone = match.groups()
            tz = datetime.timezone.utc
            if zone and zone != 'Z':
                sign = -1 if zone[0] == '-' else 1
                digits = zone[1:].replace(':', '')
                tz = datetime.timezone(sign * datetime.timedelta(hours=int(digits[:2]),
                                                                 minutes=int(digits[2:])))
            moment = datetime.datetime(int(year), int(month or 1), int(day or 1), int(hour or 0),
                                       int(minute or 0), int(second or 0),
                                       int(float(fraction or 0) * 1e6), tzinfo=tz)
        else:
            moment = email.utils.parsedate_to_datetime(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.timezone.utc)
        return int(moment.timestamp() * 1000)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


def _gunzip(body: bytes, max_bytes: int) -> bytes:
    """Decompresses gzip, never more than max_bytes + 1 bytes (a bomb stops there)."""
    return zlib.decompressobj(31).decompress(body, max_bytes + 1)


def _local(tag) -> str:
    if not isinstance(tag, str):
        return ''                                # comments, processing instructions
    return tag.rsplit('}', 1)[-1].lower()


def _child_text(element, name: str) -> Optional[str]:
    for child in element:
        if _local(child.tag) == name:
            return (child.text or '').strip()
    return None


def _absolute_http(url: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ('http', 'https') and bool(parts.netloc) and \
        not any(c.isspace() for c in url)


class _Reader:
    """Collects the entries of one sitemap under its limits and scope."""

    def __init__(self, result: ParsedSitemap, base: str, limits: SitemapLimits,
                 scopes: Sequence[str]):
        self.result, self.base, self.limits, self.scopes = result, base, limits, scopes

    def full(self) -> bool:
        return len(self.result.urls) + len(self.result.sitemaps) >= self.limits.max_urls

    def url(self, loc: Optional[str], lastmod=None, changefreq=None, priority=None,
            resolve: bool = False) -> None:
        result = self.result
        if not loc:
            result.drop('no_url')
            return
        if resolve:                 # feeds may use relative links; sitemaps may not
            loc = urllib.parse.urljoin(self.base, loc)
        if not _absolute_http(loc):
            result.drop('invalid_url')
            return
        if self.limits.strict and not in_scope(loc, self.scopes):
            result.drop('out_of_scope')
            return
        if self.full():
            result.drop('over_limit')
            return
        lastmod_ms = None
        if lastmod:
            lastmod_ms = parse_lastmod(lastmod)
            if lastmod_ms is None:
                result.drop('bad_lastmod')          # the URL is kept, without it
        if changefreq is not None:
            changefreq = changefreq.strip().lower()
            if changefreq not in CHANGEFREQ_SECONDS:
                result.drop('bad_changefreq')
                changefreq = None
        value = None
        if priority is not None:
            try:
                value = float(priority)
                if not 0.0 <= value <= 1.0:
                    raise ValueError(priority)
            except ValueError:
                result.drop('bad_priority')
                value = None
        result.urls.append(SitemapEntry(loc, lastmod_ms, changefreq, value))

    def sitemap(self, loc: Optional[str]) -> None:
        if not loc or not _absolute_http(loc):
            self.result.drop('invalid_url')
        elif self.full():
            self.result.drop('over_limit')
        else:
            self.result.sitemaps.append(loc)


def _parse_xml(data: bytes, reader: _Reader) -> None:
    from lxml import etree       # here: the fetcher imports this module's constants only
    result = reader.result
    events = etree.iterparse(io.BytesIO(data), events=('start', 'end'), resolve_entities=False,
                             no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True, remove_pis=True)
    root = None
    for event, element in events:
        name = _local(element.tag)
        if root is None:
            root = element
            result.kind = {'urlset': 'urlset', 'sitemapindex': 'index', 'rss': 'rss',
                           'rdf': 'rss', 'feed': 'atom'}.get(name, 'unknown')
            if result.kind == 'unknown':
                result.error = f'not a sitemap: <{name}>'
                return
            continue
        if event != 'end':
            continue
        kind = result.kind
        if kind == 'urlset' and name == 'url':
            reader.url(_child_text(element, 'loc'), _child_text(element, 'lastmod'),
                       _child_text(element, 'changefreq'), _child_text(element, 'priority'))
        elif kind == 'index' and name == 'sitemap':
            reader.sitemap(_child_text(element, 'loc'))
        elif kind == 'rss' and name == 'item':
            reader.url(_child_text(element, 'link'),
                       _child_text(element, 'pubdate') or _child_text(element, 'date'),
                       resolve=True)
        elif kind == 'atom' and name == 'entry':
            href = None
            for child in element:
                if _local(child.tag) == 'link' and child.get('rel', 'alternate') == 'alternate':
                    href = child.get('href')
                    break
            reader.url(href, _child_text(element, 'updated') or _child_text(element, 'published'),
                       resolve=True)
        else:
            continue
        element.clear()                          # memory stays bounded by one entry
        while element.getprevious() is not None:
            del element.getparent()[0]


def _parse_text(data: bytes, reader: _Reader) -> None:
    reader.result.kind = 'text'
    text = data.decode('utf-8-sig', 'replace')
    for line in text.splitlines():
        line = line.strip()
        if line:
            reader.url(line)


def parse_sitemap(body: bytes, url: str, limits: SitemapLimits,
                  scopes: Sequence[str] = ()) -> ParsedSitemap:
    """The entries of one fetched sitemap (`url`: where it was fetched from, after redirects;
    `scopes`: prefixes it vouches for besides its own directory)."""
    result = ParsedSitemap(kind='empty')
    data = body
    if data[:2] == _GZIP_MAGIC:
        try:
            data = _gunzip(data, limits.max_bytes)
        except zlib.error as e:
            result.kind, result.error = 'unknown', f'bad gzip: {e}'
            return result
    if len(data) > limits.max_bytes:
        result.kind = 'unknown'
        result.error = f'larger than sitemap.size.max ({limits.max_bytes} bytes)'
        return result
    reader = _Reader(result, url, limits, [sitemap_scope(url), *scopes])
    start = data.lstrip()[:64].lstrip(b'\xef\xbb\xbf').lstrip()
    if not start:
        return result
    if start.startswith(b'<'):
        from lxml import etree
        try:
            _parse_xml(data, reader)
        except etree.LxmlError as e:
            if result.kind == 'empty':
                result.kind = 'unknown'
            result.error = f'malformed XML: {str(e)[:200]}'
        return result
    _parse_text(data, reader)
    return result
