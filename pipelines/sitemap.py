"""Inject the URLs of sitemaps into the crawldb (Nutch's `sitemap`).

beamcrawl sitemap CRAWL_DIR (--from-robots | --from-hostdb | URL ...) [--conf FILE]
                  [-D key=value] [--now T]
URL: sitemaps to read (XML sitemaps, sitemap indexes, text sitemaps, RSS and Atom feeds, gzipped
or not). --from-robots: the sitemaps named by the robots.txt of every site in the crawldb (or
/sitemap.xml); --from-hostdb: the same for every host of the hostdb (Nutch's -hostdb).
Sitemaps are fetched politely, through the fetcher, within bounds per run and per host; lastmod
becomes the modified time, changefreq the fetch interval, priority the score (docs/sitemaps.md).
After SIGINT or SIGTERM, the URLs of the sitemaps read so far are injected and the command exits
130 or 143.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('urls', nargs='*', metavar='URL', help='sitemap URLs')
    parser.add_argument('--from-robots', action='store_true',
                        help="read the sitemaps of every site in the crawldb's robots.txt")
    parser.add_argument('--from-hostdb', action='store_true',
                        help="read the sitemaps of every host of the hostdb (updatehostdb)")
    parser.add_argument('--threads', type=int, metavar='N',
                        help='fetcher threads (fetcher.threads.fetch)')


def run(args, cfg, now, beam_args):
    import dataclasses

    import apache_beam as beam

    from beamcrawl.pipelines.inject import inject_files, print_summary
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base import metrics
    from beamcrawl.transforms.base.errors import Interrupted, UserError
    from beamcrawl.transforms.runners import interrupts
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.sitemap import CollectSitemaps, sites_of, sites_of_hosts
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    if bool(args.urls) + args.from_robots + args.from_hostdb != 1:
        raise UserError('name sitemap URLs or give --from-robots or --from-hostdb (one of them)')
    if not cfg['http.agent.name'].strip():
        raise UserError('http.agent.name is empty: name your crawler with '
                        '-D http.agent.name=NAME or in --conf before fetching sitemaps')
    if args.threads is not None and args.threads < 1:
        raise UserError(f'--threads {args.threads}: expected at least 1')
    crawl = CrawlLayout(args.crawl_dir)
    policy = settings.url_policy(cfg)
    urls, refused = [], []
    for url in args.urls:
        clean, why = policy.clean(url, normalize=cfg['sitemap.url.normalize'],
                                  filter=cfg['sitemap.url.filter'])
        (urls if clean else refused).append(clean or f'{url} ({why})')
    if refused:
        raise UserError(f'sitemap URLs refused by the URL policy: {", ".join(refused)}')
    sites = []
    if args.from_robots:
        if not crawl.crawldb.part_files():
            raise UserError(f'{crawl.crawldb.current}: no crawldb to read sites from')
        sites = sites_of(r['url'] for r in iter_records(crawl.crawldb.part_files()))
    elif args.from_hostdb:
        if crawl.hostdb.readable_dir() is None:
            raise UserError(f'{crawl.hostdb.current}: no hostdb (run updatehostdb first)')
        sites = sites_of_hosts(iter_records(crawl.hostdb.part_files()), policy)
    fetcher = dataclasses.replace(settings.fetcher_settings(cfg, args.threads),
                                  redirect_max=cfg['sitemap.redir.max'], store_content=True,
                                  store_warc=False)
    http = dataclasses.replace(settings.http_settings(cfg, fetcher.threads),
                               content_limit=cfg['sitemap.size.max'], keep_exchange=False)
    scratch = crawl.scratch_dir('sitemap')
    fs.mkdirs(scratch)
    try:
        seeds = f'{scratch}/sitemap-urls.txt'
        p = make_pipeline(beam_args, cfg)
        _ = (p
             | 'Start' >> beam.Create([(urls, sites)])
             | 'Sitemaps' >> CollectSitemaps(settings=settings.sitemap_settings(cfg),
                                             fetcher=fetcher, http=http, policy=policy, now=now,
                                             out_path=seeds))
        with interrupts.graceful():       # a first signal stops the reading, not the command
            found = run_pipeline(p, 'sitemap')
        c = lambda name: found.get(name, 0)  # noqa: E731
        print(f'sitemap: {c(metrics.SITEMAP_FETCHED)} sitemaps read '
              f'({c(metrics.SITEMAP_MALFORMED)} malformed, '
              f'{sum(v for k, v in found.items() if k.startswith(metrics.SITEMAP_FAILED))} '
              f'not fetched), {c(metrics.SITEMAP_URLS)} URLs found, '
              f'{sum(v for k, v in found.items() if k.startswith(metrics.SITEMAP_DROPPED))} '
              f'entries dropped')
        unread = not_read(found)
        if unread:
            print(f'sitemap: {unread}')
        counters = inject_files(crawl, [seeds], cfg, now, beam_args,
                                update=cfg['sitemap.url.overwrite.existing'],
                                normalize=cfg['sitemap.url.normalize'],
                                filter_urls=cfg['sitemap.url.filter'], command='sitemap')
    finally:
        fs.delete(scratch)
    print_summary('sitemap', counters)
    if interrupts.INTERRUPTED.is_set():
        skipped = c(metrics.SITEMAP_SITES_SKIPPED)
        raise Interrupted(
            f'interrupted ({interrupts.signal_name() or "SIGINT"}): '
            f'{counters.get(metrics.INJECT_INJECTED, 0)} URLs from the '
            f'{c(metrics.SITEMAP_FETCHED)} sitemaps read were injected; '
            f'{c(metrics.SITEMAP_INTERRUPTED)} sitemaps were not read' +
            (f', nor the robots.txt of {skipped} sites' if skipped else ''),
            interrupts.exit_code())
    return 0


def not_read(found) -> str:
    """The line saying which sitemaps a run did not fetch because of a bound or a stop, and
    why ('' when there are none)."""
    from beamcrawl.transforms.base import metrics
    reasons = ((metrics.SITEMAP_OVER_HOST_COUNT, 'over sitemap.host.count.max'),
               (metrics.SITEMAP_OVER_HOST_TIME, 'after sitemap.host.time.max'),
               (metrics.SITEMAP_OVER_COUNT, 'over sitemap.count.max'),
               (metrics.SITEMAP_OVER_TIME, 'after sitemap.time.max'),
               (metrics.SITEMAP_TOO_DEEP, 'deeper than sitemap.index.depth.max'),
               (metrics.SITEMAP_INTERRUPTED, 'left by the interrupt'))
    parts = [(found[name], text) for name, text in reasons if found.get(name)]
    skipped = found.get(metrics.SITEMAP_SITES_SKIPPED, 0)
    if not parts and not skipped:
        return ''
    said = []
    if parts:
        said.append(f'{sum(n for n, _ in parts)} sitemaps not fetched: ' +
                    ', '.join(f'{n} {text}' for n, text in parts))
        hosts = found.get(metrics.SITEMAP_HOSTS_LIMITED, 0)
        if hosts:
            said[-1] += f' ({hosts} host{"s" if hosts > 1 else ""} cut short)'
    if skipped:
        said.append(f"{skipped} sites' robots.txt not read (after sitemap.time.max or a stop)")
    return '; '.join(said)


if __name__ == '__main__':
    sys.exit(run_command('sitemap', sys.argv[1:]))
