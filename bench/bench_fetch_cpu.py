"""Benchmark: a CPU-bound fetch (no politeness delay) with parsing and every output written,
beside Scrapy fetching the same URLs through the same local web with link extraction.

100 hosts × 100 pages on loopback (one proxy port), each page about 20 kB of HTML with 50
links, fetcher.server.delay = 0. beamcrawl runs `fetch -D fetcher.parse=true` (crawl_fetch,
content, parse_text, parse_data, crawl_parse); Scrapy (a bench-only dependency: pip install
'scrapy==2.19.*') runs a spider that extracts the links, the title and the text and yields
them, with the same concurrency. Prints pages/s of each over the whole command (and over the
fetch stage alone, from the server's request log), CPU seconds and peak RSS.

    python bench/bench_fetch_cpu.py [--hosts 100] [--pages 100] [--threads 20] [--page-kb 20]
                                    [--links 50]
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beamcrawl.transforms.testing.web import Page, TestWeb, html_page  # noqa: E402

SPIDER = '''
import sys, scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor

urls, proxy, threads = open(sys.argv[1]).read().split(), sys.argv[2], int(sys.argv[3])
with_text = sys.argv[5] == 'text'

class Bench(scrapy.Spider):
    name = 'bench'
    extractor = LinkExtractor()
    async def start(self):
        for url in urls:
            yield scrapy.Request(url, dont_filter=True)     # proxy: from http_proxy
    def parse(self, response):
        yield {'url': response.url, 'title': response.css('title::text').get(),
               'text': ' '.join(response.css('body ::text').getall()) if with_text else None,
               'links': [l.url for l in self.extractor.extract_links(response)]}

process = CrawlerProcess(settings={
    'LOG_LEVEL': 'WARNING', 'CONCURRENT_REQUESTS': threads, 'CONCURRENT_REQUESTS_PER_DOMAIN': 1,
    'DOWNLOAD_DELAY': 0, 'ROBOTSTXT_OBEY': True, 'FEEDS': {sys.argv[4]: {'format': 'jsonlines'}},
    'TELNETCONSOLE_ENABLED': False, 'COOKIES_ENABLED': False, 'RETRY_ENABLED': False})
process.crawl(Bench)
process.start()
'''


def _cpu():
    """CPU seconds of the finished child processes so far (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stage(log):
    log = [r for r in log if r.path != '/robots.txt']
    return len(log), max(r.end for r in log) - min(r.start for r in log)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=100)
    parser.add_argument('--pages', type=int, default=100)
    parser.add_argument('--threads', type=int, default=20)
    parser.add_argument('--page-kb', type=float, default=20)
    parser.add_argument('--links', type=int, default=50)
    parser.add_argument('--no-scrapy', action='store_true', help='beamcrawl alone')
    parser.add_argument('--keep', action='store_true', help='keep the crawl directory')
    parser.add_argument('--scrapy-links-only', action='store_true',
                        help='the spider extracts the title and links, not the text')
    parser.add_argument('--profile', metavar='FILE',
                        help='record the beamcrawl command with py-spy (raw format) into FILE')
    args = parser.parse_args()
    paragraph = '<p>' + 'Some words of text on the page. ' * 8 + '</p>\n'
    body = paragraph * max(1, int(args.page_kb * 1024 - 60 * args.links) // len(paragraph))
    local = args.links - args.links // 10
    sites = {}
    for h in range(args.hosts):
        host = f'h{h}.cpu.test'
        sites[host] = {'/robots.txt': Page(body=b'User-agent: *\nAllow: /\n',
                                           content_type='text/plain')}
        for i in range(args.pages):
            links = [f'/p{(i + k) % args.pages}' for k in range(1, local + 1)] + \
                    [f'http://h{(h + k) % args.hosts}.cpu.test/p{i}'
                     for k in range(1, args.links - local + 1)]
            sites[host][f'/p{i}'] = html_page(f'{host} page {i}', body, links=links)
    work = tempfile.mkdtemp(prefix='bench-fetch-cpu-')
    urls = [f'http://{host}/p{i}' for host in sites for i in range(args.pages)]
    seeds = os.path.join(work, 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write('\n'.join(urls) + '\n')
    crawl = os.path.join(work, 'crawl')
    results = {}
    with TestWeb(sites) as web:
        conf = ['-D', 'http.agent.name=benchbot', '-D', 'http.proxy.host=127.0.0.1',
                '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
                '-D', 'fetcher.parse=true', '-D', 'domain.extra.suffixes=test']
        cli = [sys.executable, '-m', 'beamcrawl.pipelines.cli']
        subprocess.run(cli + ['inject', crawl, seeds] + conf, cwd=ROOT, check=True,
                       capture_output=True)
        subprocess.run(cli + ['generate', crawl] + conf, cwd=ROOT, check=True,
                       capture_output=True)
        web.clear_log()
        start, cpu0 = time.time(), _cpu()
        spy = [os.path.join(os.path.dirname(sys.executable), 'py-spy'), 'record', '-s', '-r',
               '200', '-f', 'raw', '-o', args.profile, '--'] if args.profile else []
        proc = subprocess.run(spy + cli + ['fetch', crawl, '--threads', str(args.threads)] + conf,
                              cwd=ROOT, capture_output=True, text=True)
        print(proc.stderr[-1500:] if args.profile else '', end='')
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            sys.exit(1)
        results['beamcrawl fetch + parse'] = (*stage(web.log), time.time() - start,
                                              resource.getrusage(resource.RUSAGE_CHILDREN),
                                              _cpu() - cpu0)
        try:
            import scrapy  # noqa: F401
        except ImportError:
            print("Scrapy is not installed: pip install 'scrapy==2.19.*' to compare")
            args.no_scrapy = True
        if not args.no_scrapy:
            spider = os.path.join(work, 'spider.py')
            with open(spider, 'w') as f:
                f.write(textwrap.dedent(SPIDER))
            urls_file = os.path.join(work, 'urls.txt')
            with open(urls_file, 'w') as f:
                f.write('\n'.join(urls))
            web.clear_log()
            start, cpu0 = time.time(), _cpu()
            env = dict(os.environ, http_proxy=web.proxy_url, https_proxy=web.proxy_url)
            subprocess.run([sys.executable, spider, urls_file, web.proxy_url, str(args.threads),
                            os.path.join(work, 'items.jsonl'),
                            'links' if args.scrapy_links_only else 'text'],
                           check=True, cwd=work, env=env)
            what = 'title, links' if args.scrapy_links_only else 'title, links, text'
            results[f'Scrapy {scrapy.__version__} ({what})'] = (
                *stage(web.log), time.time() - start,
                resource.getrusage(resource.RUSAGE_CHILDREN), _cpu() - cpu0)
    size = len(html_page('x', body, links=links).body)
    print(f'{args.hosts} hosts x {args.pages} pages of {size / 1024:.1f} kB with {args.links} '
          f'links, delay 0, {args.threads} concurrent requests')
    for label, (pages, seconds, wall, usage, cpu) in results.items():
        print(f'{label:<40} {pages} pages: whole command {wall:.1f} s = {pages / wall:.0f} '
              f'pages/s, CPU {cpu:.1f} s; fetch stage {seconds:.1f} s = '
              f'{pages / seconds:.0f} pages/s; peak RSS so far {usage.ru_maxrss / 1024:.0f} MB')
    if len(results) == 2:
        (a, b) = results.values()
        print(f'beamcrawl / Scrapy pages/s, whole command: {(a[0] / a[2]) / (b[0] / b[2]):.2f}; '
              f'fetch stage: {(a[0] / a[1]) / (b[0] / b[1]):.2f}')
    if args.keep:
        print(f'kept {crawl}')
    else:
        shutil.rmtree(work)


if __name__ == '__main__':
    main()
