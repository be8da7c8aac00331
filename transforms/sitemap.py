"""Fetching sitemaps through the fetch engine, and the URLs they give (the `sitemap` command).

`SitemapCollector` runs one `Fetcher` (transforms/fetcher/engine.py) for the whole run, so
every sitemap request goes through the same politeness queues, robots.txt rules, deadlines,
address policy and redirect handling as a page fetch. With `--from-robots` it first reads the
robots.txt of every site (through the fetcher's robots cache, so a site's robots.txt is
requested once) and takes its `Sitemap:` lines. Each sitemap is read as it arrives
(transforms/policy/sitemaps.py); the sitemaps an index names are taken too, down to
sitemap.index.depth.max.

No host can take the run. Sitemap URLs are normalized, and each is fetched once (an index that
names itself, in any spelling, is read once). A host's sitemaps wait in a list of their own and
go to the fetcher one at a time (fetcher.threads.per.queue), so that the bounds of
`SitemapBounds` are checked when a sitemap is named (sitemap.count.max, sitemap.host.count.max)
and again just before it is requested (sitemap.host.time.max, sitemap.time.max); what they
refuse is counted, and a host cut short is logged once. On SIGINT or SIGTERM (INTERRUPTED, under
`interrupts.graceful()`) no more requests start, the requests in flight end, and the run returns
the URLs of the sitemaps read so far, for the command to inject.

`CollectSitemaps` is the Beam wrapper: one DoFn call runs the collector, writes the URLs found
as a seed file (transforms/policy/inject.py's format) and counts into Beam counters; the
`sitemap` command then injects that file (pipelines/sitemap.py).
"""

import collections
import concurrent.futures
import dataclasses
import logging
import threading
import time
import urllib.parse
from typing import Callable, Deque, Dict, Iterable, List, Optional, Sequence, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.fetcher import Fetcher, FetcherSettings, HttpSettings
from beamcrawl.transforms.fetcher.journal.paths import SOURCE_KEY
from beamcrawl.transforms.policy.sitemaps import (DEFAULT_PRIORITY, SITEMAP_KEY, SitemapEntry,
                                                  SitemapSettings, fetch_interval, parse_sitemap,
                                                  site_scope, sitemap_host)
from beamcrawl.transforms.policy.urlparts import MalformedUrl
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.runners.interrupts import INTERRUPTED
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.records import crawl_datum
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH

__all__ = ['SitemapCollector', 'CollectSitemaps', 'seed_line', 'sites_of', 'sites_of_hosts']

log = logging.getLogger('beamcrawl')


@dataclasses.dataclass(frozen=True)
class _Job:
    url: str
    depth: int                     # 0: named on the command line or by robots.txt
    scopes: Tuple[str, ...]        # what it vouches for besides its own directory


class _Host:
    """A host's sitemaps in this run."""

    __slots__ = ('taken', 'waiting', 'in_fetch', 'started', 'limited')

    def __init__(self):
        self.taken = 0                     # sitemaps taken (fetched, in fetch or waiting)
        self.waiting: Deque[_Job] = collections.deque()
        self.in_fetch = 0                  # given to the fetcher, not done
        self.started: Optional[float] = None   # when its first sitemap went to the fetcher
        self.limited = False               # cut short by sitemap.host.*.max (logged once)


# What SitemapBounds refuses: its counter, and the key when it is a bound of one host.
_REFUSED = {'over_count': (metrics.SITEMAP_OVER_COUNT, None),
            'over_time': (metrics.SITEMAP_OVER_TIME, None),
            'over_host_count': (metrics.SITEMAP_OVER_HOST_COUNT, 'sitemap.host.count.max'),
            'over_host_time': (metrics.SITEMAP_OVER_HOST_TIME, 'sitemap.host.time.max')}


class SitemapCollector:
    """One run: `run(urls, sites)` → {URL: SitemapEntry} (the first sitemap naming a URL wins,
and is the entry's `sitemap`);
    `counts` holds the counter increments. `interrupted`: set when the run must stop."""

    def __init__(self, settings: SitemapSettings, fetcher: FetcherSettings, http: HttpSettings,
                 policy: UrlPolicy, now: int, interrupted: threading.Event = INTERRUPTED,
                 on_read: Optional[Callable[[int], None]] = None):
        self.settings, self.policy, self.now = settings, policy, now
        self.on_read = on_read or (lambda n: None)     # n more sitemaps read (progress)
        self.bounds = settings.bounds
        self.interrupted = interrupted
        self.fetcher = Fetcher(fetcher, http, policy, now)
        self.threads = fetcher.threads
        self.per_host = fetcher.threads_per_queue
        self.counts: Dict[str, int] = {}
        self.entries: Dict[str, SitemapEntry] = {}
        self._jobs: Dict[str, _Job] = {}          # every sitemap taken, by its normalized URL
        self._hosts: Dict[str, _Host] = {}
        self._started = time.time()               # sitemap.time.max counts from here

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
                if results:
                    self.on_read(len(results))
                if not results and self.fetcher.outstanding() == 0:
                    rest = self.fetcher.take()
                    if not rest:
                        break
                    self._read(rest)
        finally:
            self._read(self.fetcher.close())
            for name, n in self.fetcher.counts.items():
                self._count(name, n)
            left = self.fetcher.left + sum(len(host.waiting) for host in self._hosts.values())
            if left:
                self._count(metrics.SITEMAP_INTERRUPTED, left)
        return self.entries

    def _from_robots(self, sites: Sequence[str]) -> List[_Job]:
        """The sitemaps the robots.txt of each site (scheme://host[:port]) names, read with
        the fetcher's threads; /sitemap.xml when it names none (sitemap.url.default.sitemap.xml).
        A site whose robots.txt forbids us everything, or cannot be had, gives none; once the
        run is interrupted or out of time (sitemap.time.max), the other sites are skipped."""
        robots = self.fetcher.requester.robots
        agents = self.fetcher.settings.agents

        def read(site: str):
            if self.interrupted.is_set() or \
                    self.bounds.refuse_time(time.time(), self._started, None):
                return site, None
            parts = urllib.parse.urlsplit(site)
            return site, robots.rules(parts.scheme, parts.netloc)

        jobs = []
        with concurrent.futures.ThreadPoolExecutor(max(1, self.threads)) as pool:
            for site, rules in pool.map(read, sites):
                if rules is None:
                    self._count(metrics.SITEMAP_SITES_SKIPPED)
                    continue
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
        """Takes a sitemap named on the command line, by robots.txt or by an index, unless it
        was taken before or a bound refuses it."""
        url = job.url
        if self.settings.normalize:
            try:
                url = self.policy.normalize(url)
            except MalformedUrl:
                url = ''
            if not url:
                self._count(metrics.SITEMAP_DROPPED + 'malformed')
                return
        if url in self._jobs:
            self._count(metrics.SITEMAP_SEEN)
            return
        if job.depth > self.settings.depth_max:
            self._count(metrics.SITEMAP_TOO_DEEP)
            return
        name = sitemap_host(url)
        host = self._hosts.setdefault(name, _Host())
        refused = self.bounds.refuse_count(len(self._jobs), host.taken)
        if refused:
            self._refuse(name, host, refused)
            return
        job = dataclasses.replace(job, url=url)
        self._jobs[url] = job
        host.taken += 1
        host.waiting.append(job)
        self._feed(name, host)

    def _feed(self, name: str, host: _Host) -> None:
        """Gives the host's next sitemaps to the fetcher while it has fewer than
        fetcher.threads.per.queue there, unless the run stops or a time bound refuses them."""
        while host.waiting and host.in_fetch < self.per_host and not self.interrupted.is_set():
            refused = self.bounds.refuse_time(time.time(), self._started, host.started)
            if refused:
                self._refuse(name, host, refused, len(host.waiting))
                host.waiting.clear()
                return
            job = host.waiting.popleft()
            if host.started is None:
                host.started = time.time()
            host.in_fetch += 1
            record = crawl_datum(job.url, 'db_unfetched', fetch_time=self.now,
                                 fetch_interval=self.settings.interval_default)
            self.fetcher.add(self.fetcher.queue_of(job.url), record)

    def _refuse(self, name: str, host: _Host, why: str, n: int = 1) -> None:
        counter, key = _REFUSED[why]
        self._count(counter, n)
        if key is not None and not host.limited:
            host.limited = True
            self._count(metrics.SITEMAP_HOSTS_LIMITED)
            log.warning('sitemap: %s reached %s: its other sitemaps are not fetched in this run',
                        name, key)

    def _read(self, results: Iterable[Tuple[str, dict]]) -> None:
        for part, record in results:
            if part == CONTENT:
                self._read_sitemap(self._jobs[record['metadata'][SOURCE_KEY]], record)
            elif part == CRAWL_FETCH:
                status = 'redirect_not_followed' if record['status'] == 'linked' else \
                    record['protocol_status']
                if status not in ('success', 'moved', 'temp_moved'):
                    self._count(metrics.SITEMAP_FAILED + status)
                if record['metadata'].get(SOURCE_KEY) == record['url'] and \
                        record['status'] != 'linked':       # a taken sitemap is done
                    name = sitemap_host(record['url'])
                    host = self._hosts.get(name)
                    if host is not None:
                        host.in_fetch -= 1
                        self._feed(name, host)

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
                self.entries[entry.url] = dataclasses.replace(entry, sitemap=url)
                self._count(metrics.SITEMAP_URLS)
        same_site = site_scope(url)
        for child in parsed.sitemaps:
            # a child on the index's own site keeps what the index vouches for
            scopes = job.scopes if site_scope(child) == same_site else ()
            self._add(_Job(child, job.depth + 1, scopes))


def seed_line(entry: SitemapEntry, settings: SitemapSettings) -> str:
    """A seed file line (transforms/policy/inject.py) carrying the entry's crawldb values and,
as metadata, the sitemap that listed it (SITEMAP_KEY)."""
    score = entry.priority if entry.priority is not None else DEFAULT_PRIORITY
    interval = fetch_interval(entry.changefreq, settings.interval_default,
                              settings.interval_min, settings.interval_max)
    fields = [entry.url, f'nutch.score={score!r}', f'nutch.fetchInterval={interval}']
    if entry.lastmod_ms is not None and entry.lastmod_ms > 0:
        fields.append(f'modified_time={entry.lastmod_ms}')
    if entry.sitemap and not any(c.isspace() for c in entry.sitemap):   # one seed-line token
        fields.append(f'{SITEMAP_KEY}={entry.sitemap}')
    return '\t'.join(fields)


class _CollectFn(beam.DoFn):
    """(sitemap URLs, sites) → the path of the seed file written with what they give."""

    def __init__(self, settings, fetcher, http, policy, now, out_path):
        self.args = (settings, fetcher, http, policy, now)
        self.out_path = out_path
        self.done = progress.Reporter(None, 'read')

    def process(self, start):
        urls, sites = start
        collector = SitemapCollector(*self.args, on_read=self.done.add)
        entries = collector.run(urls, sites)
        settings = self.args[0]
        with fs.create(self.out_path) as f:
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
        # progress: the sitemaps read (their number grows as indexes name more)
        self.fn.done = progress.stage(start.pipeline, 'read', 0, 'sitemaps')
        return start | 'Collect' >> beam.ParDo(self.fn)


def sites_of_hosts(datums: Iterable[dict], policy: UrlPolicy) -> List[str]:
    """The sites of the hostdb's hosts (`sitemap --from-hostdb`): the site its crawldb URLs are
    mostly on (the HostDatum's homepage_url), or else, as Nutch's -hostdb, the first of
    http://host/ and https://host/ that the URL policy accepts; hosts with neither are left
    out."""
    urls = []
    for datum in datums:
        home = datum.get('homepage_url') or ''
        candidates = [home] if home else [f'{s}://{datum["host"]}/' for s in ('http', 'https')]
        for url in candidates:
            if policy.clean(url, normalize=False, filter=True)[0] is not None:
                urls.append(url)
                break
    return sites_of(urls)


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

