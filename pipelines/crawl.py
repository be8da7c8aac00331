"""Inject seeds, then crawl N rounds (Nutch's `bin/crawl`).

beamcrawl crawl CRAWL_DIR --seeds SEEDS --rounds N [--top-n N] [--threads N] [--num-fetchers K]
                [--time-limit-fetch MIN] [--round-interval S] [--index]
                [--hostdb | --hostdb-update | --hostdb-generate] [--conf FILE]
                [-D key=value] [--now T] [beam options]
Each round: generate → fetch → parse (unless fetcher.parse) → updatedb (→ updatehostdb, with
--hostdb-update) → invertlinks (→ dedup and index, with --index). With --hostdb-generate,
generate uses the hostdb once there is one (--hostdb: both; Nutch's --hostdbupdate and
--hostdbgenerate). A round an earlier run left unfinished is finished first. Stops early
when nothing is due, or when a file .STOP appears in CRAWL_DIR. With --now, round k runs at
now + k × --round-interval, so a simulation is reproducible.
"""

import collections
import sys
import time

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('--seeds', metavar='SEEDS', help='seed file or directory to inject first')
    parser.add_argument('--rounds', type=int, required=True, metavar='N')
    parser.add_argument('--top-n', metavar='N', help='URLs per round (generate --top-n)')
    parser.add_argument('--threads', metavar='N', help='fetcher threads')
    parser.add_argument('--num-fetchers', metavar='K', help='fetch-list parts per segment')
    parser.add_argument('--time-limit-fetch', metavar='MIN',
                        help='fetch time limit per round in minutes (fetcher.timelimit.mins)')
    parser.add_argument('--round-interval', type=float, default=0.0, metavar='S',
                        help='with --now: seconds between rounds (default 0)')
    parser.add_argument('--index', action='store_true',
                        help='index each round\'s segment at the end of the round')
    parser.add_argument('--hostdb-update', action='store_true',
                        help='update the hostdb after each updatedb (updatehostdb)')
    parser.add_argument('--hostdb-generate', action='store_true',
                        help='generate --hostdb once the crawl has a hostdb')
    parser.add_argument('--hostdb', action='store_true',
                        help='both --hostdb-update and --hostdb-generate')


def _common(args, beam_args):
    out = ['--conf', args.conf] if args.conf else []
    for define in args.defines:
        out += ['-D', define]
    return out + list(beam_args)


def _step(name, argv):
    print(f'== {name} {" ".join(argv)}', file=sys.stderr, flush=True)
    return run_command(name, argv)


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import count_records
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_PARSE
    if args.rounds < 1:
        raise UserError(f'--rounds {args.rounds}: expected at least 1')
    crawl = CrawlLayout(args.crawl_dir)
    common = _common(args, beam_args)
    if args.now is None:
        clock = lambda k: []  # noqa: E731  (every step reads the wall clock)
    else:
        clock = lambda k: ['--now', str(now + int(k * args.round_interval * 1000))]  # noqa: E731
    if args.seeds:
        code = _step('inject', [args.crawl_dir, args.seeds, *clock(0), *common])
        if code != 0:
            return code
    generate_opts = []
    for option, value in (('--top-n', args.top_n), ('--num-fetchers', args.num_fetchers)):
        if value is not None:
            generate_opts += [option, value]
    fetch_opts = ['--threads', args.threads] if args.threads else []
    if args.time_limit_fetch is not None:
        fetch_opts += ['-D', f'fetcher.timelimit.mins={args.time_limit_fetch}']
    for k in range(args.rounds):
        if fs.exists(fs.join(args.crawl_dir, '.STOP')):
            print(f'crawl: {args.crawl_dir}/.STOP found, stopping before round {k + 1}')
            break
        started = time.time()
        before = count_records(crawl.crawldb.part_files())
        segment = _unfinished(crawl)
        if segment is not None:
            print(f'crawl: continuing segment {segment}, left unfinished by an earlier run',
                  file=sys.stderr, flush=True)
        else:
            existing = set(crawl.segment_names())
            with_hostdb = (['--hostdb'] if (args.hostdb or args.hostdb_generate)
                           and crawl.hostdb.readable_dir() is not None else [])
            code = _step('generate', [args.crawl_dir, *generate_opts, *with_hostdb, *clock(k),
                                      *common])
            if code == 1:
                print(f'round {k + 1}/{args.rounds}: nothing due, stopping')
                break
            if code != 0:
                return code
            (segment,) = sorted(set(crawl.segment_names()) - existing)[-1:]
        steps = []
        if not crawl.has_part(segment, CRAWL_FETCH):
            steps.append(('fetch', [segment, *fetch_opts]))
        if not crawl.has_part(segment, CRAWL_PARSE) and not (
                cfg['fetcher.parse'] and steps):
            steps.append(('parse', [segment]))
        if segment not in crawl.crawldb.applied_segments():
            steps.append(('updatedb', [segment]))
        if (args.hostdb or args.hostdb_update) and \
                segment not in crawl.hostdb.applied_segments():
            steps.append(('updatehostdb', []))     # every fetched segment not folded in yet
        if segment not in crawl.linkdb.applied_segments():
            steps.append(('invertlinks', [segment]))
        if args.index:
            steps.append(('index', [segment]))
        for name, extra in steps:
            code = _step(name, [args.crawl_dir, *extra, *clock(k), *common])
            if code != 0:
                return code
        print(_summary(crawl, segment, k, args.rounds, before, time.time() - started),
              flush=True)
    return 0


def _unfinished(crawl):
    """The oldest segment an earlier run left half done (generated but not fetched, or fetched
    but not applied to the crawldb), or None."""
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_GENERATE
    applied = set(crawl.crawldb.applied_segments())
    for name in crawl.segment_names():
        if not crawl.has_part(name, CRAWL_GENERATE):
            continue
        if not crawl.has_part(name, CRAWL_FETCH) or name not in applied:
            return name
    return None


def _summary(crawl, segment, k, rounds, before, seconds):
    from beamcrawl.transforms.storage.parts import count_records, iter_records
    from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_GENERATE
    generated = count_records(crawl.part_files(segment, CRAWL_GENERATE))
    statuses = collections.Counter(
        r['status'] for r in iter_records(crawl.part_files(segment, CRAWL_FETCH))
        if r['status'] != 'linked')
    new = count_records(crawl.crawldb.part_files()) - before
    fetched = ', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))
    return (f'round {k + 1}/{rounds}: segment {segment}: generated {generated}; fetched '
            f'{fetched}; {new} new URLs; {seconds:.1f} s')


if __name__ == '__main__':
    sys.exit(run_command('crawl', sys.argv[1:]))
