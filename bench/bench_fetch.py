"""Benchmark: a politeness-bound fetch against a local web of many hosts.

300 hosts × 15 pages, fetcher.server.delay = 1.0 s; 6 hosts answer each page in 1 s, the others
at once. The shortest possible fetch takes M = max over hosts of ((n − 1) · delay + n · response)
= 29 s. Prints the fetch stage's wall time (first request start to last request end, from the
server's log) against M, the whole command's wall time, the median and minimum gap between
consecutive fetches of a host, and the fetch command's peak RSS.

The commands run as on a user's machine, where Python keeps the modules' bytecode after their
first import: PYTHONDONTWRITEBYTECODE, when set (as on this project's build machines), is left
out of their environment (else every command compiles beamcrawl's modules again: 0.05 s).

    python bench/bench_fetch.py [--hosts 300] [--pages 15] [--slow 6] [--delay 1.0] [--threads 30]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.testweb import Page, TestWeb, html_page  # noqa: E402

CLI = [sys.executable, '-m', 'beamcrawl.pipelines.cli']
ENV = {k: v for k, v in os.environ.items() if k != 'PYTHONDONTWRITEBYTECODE'}


def arguments(parser):
    parser.add_argument('--hosts', type=int, default=300)
    parser.add_argument('--pages', type=int, default=15)
    parser.add_argument('--slow', type=int, default=6)
    parser.add_argument('--slow-response', type=float, default=1.0)
    parser.add_argument('--delay', type=float, default=1.0)
    parser.add_argument('--threads', type=int, default=30)


def build_sites(args):
    """{host: {path: Page}}: the bench web."""
    sites = {}
    for h in range(args.hosts):
        wait = args.slow_response if h < args.slow else 0.0
        sites[f'h{h}.bench.test'] = {
            f'/p{i}': html_page(f'host {h} page {i}', '<p>' + 'text ' * 200 + '</p>', delay=wait)
            for i in range(args.pages)}
        sites[f'h{h}.bench.test']['/robots.txt'] = Page(body=b'User-agent: *\nAllow: /\n',
                                                       content_type='text/plain')
    return sites


def prepare(web, sites, args, crawl, seeds):
    """Injects and generates the bench's seeds into `crawl`; returns the configuration."""
    with open(seeds, 'w') as f:
        for host in sites:
            for i in range(args.pages):
                f.write(f'http://{host}/p{i}\n')
    conf = ['-D', 'http.agent.name=benchbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', f'fetcher.server.delay={args.delay}',
            '-D', 'domain.extra.suffixes=test']
    subprocess.run(CLI + ['inject', crawl, seeds] + conf, cwd=ROOT, check=True,
                   capture_output=True, env=ENV)
    subprocess.run(CLI + ['generate', crawl] + conf, cwd=ROOT, check=True, capture_output=True,
                   env=ENV)
    return conf


def fetch_figures(web, args, start, end):
    """The figures of one fetch from the server's log (start, end: the command's)."""
    robots = [r for r in web.log if r.path == '/robots.txt']
    log = [r for r in web.log if r.path != '/robots.txt']
    wall = end - start
    stage = max(r.end for r in log) - min(r.start for r in log)
    m = (args.pages - 1) * args.delay + args.pages * args.slow_response
    per_host = {}
    for r in sorted(log, key=lambda r: r.start):
        per_host.setdefault(r.host, []).append(r)
    gaps = [b.start - a.end for reqs in per_host.values() for a, b in zip(reqs, reqs[1:])]
    first = min(r.start for r in log)
    last_host = max(per_host, key=lambda h: per_host[h][-1].end)     # the one that ended last
    reqs = per_host[last_host]
    host_gaps = [b.start - a.end for a, b in zip(reqs, reqs[1:])]
    return {'last_host': last_host, 'last_host_start': reqs[0].start - first,
            'last_host_gap': statistics.mean(host_gaps) if host_gaps else 0.0,
            'last_host_response': statistics.mean(r.end - r.start for r in reqs),
            'pages': len(log), 'stage': stage, 'm': m, 'wall': wall,
            'median_gap': statistics.median(gaps), 'min_gap': min(gaps),
            'first_request': min(r.start for r in robots + log) - start,
            'first_page': first - start, 'tail': end - max(r.end for r in log)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    arguments(parser)
    args = parser.parse_args()
    sites = build_sites(args)
    work = tempfile.mkdtemp(prefix='bench-fetch-')
    crawl = os.path.join(work, 'crawl')
    with TestWeb(sites) as web:
        conf = prepare(web, sites, args, crawl, os.path.join(work, 'seeds.txt'))
        web.clear_log()
        start = time.time()
        proc = subprocess.run(CLI + ['fetch', crawl, '--threads', str(args.threads)] + conf,
                              cwd=ROOT, capture_output=True, text=True, env=ENV)
        end = time.time()
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            sys.exit(1)
        f = fetch_figures(web, args, start, end)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f'{args.hosts} hosts x {args.pages} pages, delay {args.delay} s, {args.slow} hosts '
          f'answering in {args.slow_response} s, {args.threads} threads')
    print(f'fetched {f["pages"]} pages; fetch stage {f["stage"]:.1f} s = '
          f'{f["stage"] / f["m"]:.3f} x M (M = {f["m"]:.1f} s); whole command {f["wall"]:.1f} s')
    print(f'gap between fetches of a host: median {f["median_gap"] * 1000:.0f} ms, '
          f'min {f["min_gap"] * 1000:.1f} ms (delay {args.delay * 1000:.0f} ms)')
    print(f'the host that ended last ({f["last_host"]}): its first page {f["last_host_start"]:.2f} s '
          f'after the first page, mean gap {f["last_host_gap"] * 1000:.1f} ms, mean response '
          f'{f["last_host_response"] * 1000:.1f} ms')
    print(f'pages/s during the stage {f["pages"] / f["stage"]:.0f}; peak RSS {peak:.0f} MB')
    print(f'whole command = {f["m"] / f["wall"]:.1%} of M; from the command start: first request '
          f'{f["first_request"]:.2f} s, first page {f["first_page"]:.2f} s; '
          f'from the last response to the command end {f["tail"]:.2f} s')
    shutil.rmtree(work)


if __name__ == '__main__':
    main()
