"""Fetching sitemaps through the fetch engine, and the URLs they give (the `sitemap` command).

`SitemapCollector` runs one `Fetcher` (transforms/fetcher/engine.py) for the whole run, so
every sitemap request goes through the same politeness queues, robots.txt rules, deadlines,
address policy and redirect handling as a page fetch. With `--from-robots` it first reads the
robots.txt of every site (through the fetcher's robots cache, so a site's robots.txt is
requested once) and takes its `Sitemap:` lines. Each sitemap is read as it arrives
(transforms/policy/sitemaps.py); the sitemaps an index names are queued on the same fetcher, down
to sitemap.index.depth.max, up to sitemap.count.max sitemaps in all.

`CollectSitemaps` is the Beam wrapper: one DoFn call runs the collector, writes the URLs found
as a seed file (transforms/policy/inject.py's format) and counts into Beam counters; the
`sitemap` command then injects that file (pipelines/sitemap.py).
"""

import concurrent.futures
import dataclasses
import logging
import urllib.parse
from typing import Dict, Iterable, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms import metrics
from beamcrawl.transforms.fetcher import Fetcher, FetcherSettings, HttpSettings
from beamcrawl.transforms.fetcher.journal import SOURCE_KEY
from beamcrawl.transforms.layout import CONTENT, CRAWL_FETCH
from beamcrawl.transforms.policy.sitemaps import (DEFAULT_PRIORITY, SitemapEntry,
                                                  SitemapSettings, fetch_interval, parse_sitemap,
                                                  site_scope)
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.records import crawl_datum

__all__ = ['SitemapCollector', 'CollectSitemaps', 'seed_line', 'sites_of']

log = logging.getLogger('beamcrawl')


@dataclasses.dataclass(frozen=True)
class _Job:
    url: str
    depth: int                     # 0: named on the command line or by robots.txt
    scopes: Tuple[str, ...]        # what it vouches for besides its own directory


class SitemapCollector:
    """One run: `run(urls, sites)` → {URL: SitemapEntry} (the first sitemap naming a URL wins);
    `counts` holds the counter increments."""

    def __init__(self, settings: SitemapSettings, fetcher: FetcherSettings, http: HttpSettings,
                 policy: UrlPolicy, now: int):
        self.settings, self.policy, self.now = settings, policy, now
        self.fetcher = Fetcher(fetcher, http, policy, now)
        self.threads = fetcher.threads
        self.counts: Dict[str, int] = {}
        self.entries: Dict[str, SitemapEntry] = {}
        self._jobs: Dict[str, _Job] = {}

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def run(self, urls: Sequence[str] = (), sites: Sequence[str] = ()) -> Dict[str, SitemapEntry]:
        try:
            for url in urls:
                self._add(_Job(url, 0, ()))
            for job in self._from_robots(sites):
                self._add(job)
            while True:
                results = self.fetcher.take(wait=0.2)
                self._read(results)
                if not results and self.fetcher.outstanding() == 0:
                    rest = self.fetcher.take()
                    if not rest:
                        break
                    self._read(rest)
        finally:
            self._read(self.fetcher.close())
            for name, n in self.fetcher.counts.items():
                self._count(name, n)
        return self.entries

    def _from_robots(self, sites: Sequence[str]) -> List[_Job]:
        """The sitemaps the robots.txt of each site (scheme://host[:port]) names, read with
        the fetcher's threads; /sitemap.xml when it names none (sitemap.url.default.sitemap.xml).
        A site whose robots.txt forbids us everything, or cannot be had, gives none."""
        robots = self.fetcher.requester.robots
        agents = self.fetcher.settings.agents

        def read(site: str):
            parts = urllib.parse.urlsplit(site)
            return site, robots.rules(parts.scheme, parts.netloc)

        jobs = []
        with concurrent.futures.ThreadPoolExecutor(max(1, self.threads)) as pool:
            for site, rules in pool.map(read, sites):
                self._count(metrics.SITEMAP_SITES)
                named = rules.sitemaps()
                self._count(metrics.SITEMAP_FROM_ROBOTS, len(named))
                if not named and self.settings.default_xml and \
                        rules.allowed(f'{site}/sitemap.xml', agents):
                    named = [f'{site}/sitemap.xml']
                    self._count(metrics.SITEMAP_DEFAULT)
                jobs += [_Job(url, 0, (site_scope(site + '/'),)) for url in named]
        return jobs

    def _add(self, job: _Job) -> None:
        if job.url in self._jobs:
            return
        if len(self._jobs) >= self.settings.count_max:
            self._count(metrics.SITEMAP_OVER_COUNT)
            return
        self._jobs[job.url] = job
        record = crawl_datum(job.url, 'db_unfetched', fetch_time=self.now,
                             fetch_interval=self.settings.interval_default)
        self.fetcher.add(self.fetcher.queue_of(job.url), record)

    def _read(self, results: Iterable[Tuple[str, dict]]) -> None:
        for part, record in results:
            if part == CONTENT:
                self._read_sitemap(self._jobs[record['metadata'][SOURCE_KEY]], record)
            elif part == CRAWL_FETCH:
                status = 'redirect_not_followed' if record['status'] == 'linked' else \
                    record['protocol_status']
                if status not in ('success', 'moved', 'temp_moved'):
                    self._count(metrics.SITEMAP_FAILED + status)

    def _read_sitemap(self, job: _Job, content: dict) -> None:
        if content['http_code'] != 200:
            return                    # a redirect's or an error page's body: not a sitemap
        self._count(metrics.SITEMAP_FETCHED)
        url = content['url']          # after redirects: its location sets its scope
        if content['truncated']:
            parsed_kind, error = 'unknown', 'larger than sitemap.size.max'
            parsed = None
        else:
            parsed = parse_sitemap(content['content'], url, self.settings.limits, job.scopes)
            parsed_kind, error = parsed.kind, parsed.error
        self._count(metrics.SITEMAP_KIND + parsed_kind)
        if error:
            self._count(metrics.SITEMAP_MALFORMED)
            log.warning('sitemap %s: %s', url, error)
        if parsed is None:
            return
        for why, n in parsed.dropped.items():
            self._count(metrics.SITEMAP_DROPPED + why, n)
        for entry in parsed.urls:
            if entry.url in self.entries:
                self._count(metrics.SITEMAP_DUPLICATE)
            else:
                self.entries[entry.url] = entry
                self._count(metrics.SITEMAP_URLS)
        same_site = site_scope(url)
        for child in parsed.sitemaps:
            if job.depth + 1 > self.settings.depth_max:
                self._count(metrics.SITEMAP_TOO_DEEP)
                continue
            # a child on the index's own site keeps what the index vouches for
            scopes = job.scopes if site_scope(child) == same_site else ()
            self._add(_Job(child, job.depth + 1, scopes))


def seed_line(entry: SitemapEntry, settings: SitemapSettings) -> str:
    """A seed file line (transforms/policy/inject.py) carrying the entry's crawldb values."""
    score = entry.priority if entry.priority is not None else DEFAULT_PRIORITY
    interval = fetch_interval(entry.changefreq, settings.interval_default,
                              settings.interval_min, settings.interval_max)
    fields = [entry.url, f'nutch.score={score!r}', f'nutch.fetchInterval={interval}']
    if entry.lastmod_ms is not None and entry.lastmod_ms > 0:
        fields.append(f'modified_time={entry.lastmod_ms}')
    return '\t'.join(fields)


class _CollectFn(beam.DoFn):
    """(sitemap URLs, sites) → the path of the seed file written with what they give."""

    def __init__(self, settings, fetcher, http, policy, now, out_path):
        self.args = (settings, fetcher, http, policy, now)
        self.out_path = out_path

    def process(self, start):
        urls, sites = start
        collector = SitemapCollector(*self.args)
        entries = collector.run(urls, sites)
        settings = self.args[0]
        with FileSystems.create(self.out_path) as f:
            for url in sorted(entries):
                f.write((seed_line(entries[url], settings) + '\n').encode('utf-8'))
        for name, n in collector.counts.items():
            metrics.counter(name).inc(n)
        yield self.out_path


class CollectSitemaps(beam.PTransform):
    """PCollection[(sitemap URLs, sites)] (one element) → PCollection[str]: the seed file
    `out_path` holding the URLs the sitemaps give, one line each.

    Args: settings (SitemapSettings), fetcher (FetcherSettings: sitemap.redir.max as its
    redirect limit), http (HttpSettings: sitemap.size.max as its content limit), policy
    (UrlPolicy), now (epoch ms), out_path.
    """

    def __init__(self, *, settings: SitemapSettings, fetcher: FetcherSettings,
                 http: HttpSettings, policy: UrlPolicy, now: int, out_path: str):
        super().__init__()
        self.fn = _CollectFn(settings, fetcher, http, policy, now, out_path)

    def expand(self, start: beam.PCollection[Tuple[List[str], List[str]]]
               ) -> beam.PCollection[str]:
        return start | 'Collect' >> beam.ParDo(self.fn)


def sites_of(urls: Iterable[str]) -> List[str]:
    """The distinct sites (scheme://host[:port]) of http(s) URLs, sorted."""
    sites = set()
    for url in urls:
        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError:
            continue
        if parts.scheme in ('http', 'https') and parts.netloc:
            sites.add(f'{parts.scheme}://{parts.netloc.lower()}')
    return sorted(sites)

