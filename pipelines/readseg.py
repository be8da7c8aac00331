"""Read segments (Nutch's `readseg`): a summary, a dump, one URL, and a politeness audit.

beamcrawl readseg CRAWL_DIR --list
beamcrawl readseg CRAWL_DIR --dump SEGMENT OUT
beamcrawl readseg CRAWL_DIR --get SEGMENT URL
beamcrawl readseg CRAWL_DIR --politeness SEGMENT [--tolerance-ms MS]
"""

import json
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

PARTS = ('crawl_generate', 'crawl_fetch', 'content', 'parse_data', 'parse_text', 'crawl_parse')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument('--list', action='store_true', help='one line per segment')
    what.add_argument('--dump', nargs=2, metavar=('SEGMENT', 'OUT'),
                      help='every record of SEGMENT, per URL, into file OUT (JSON lines)')
    what.add_argument('--get', nargs=2, metavar=('SEGMENT', 'URL'), help='one URL of SEGMENT')
    what.add_argument('--politeness', metavar='SEGMENT',
                      help='per queue: configured delay and measured gaps between fetches')
    parser.add_argument('--tolerance-ms', type=float, default=5.0,
                        help='--politeness: a gap shorter than delay − this is a violation')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.storage.layout import CrawlLayout
    crawl = CrawlLayout(args.crawl_dir)
    if args.list:
        return _list(crawl)
    if args.politeness:
        return _politeness(crawl, crawl.resolve_segment(args.politeness), args.tolerance_ms)
    segment, arg = args.dump or args.get
    segment = crawl.resolve_segment(segment)
    if args.get:
        return _get(crawl, segment, arg)
    return _dump(crawl, segment, arg, cfg['runner.progress.seconds'])


def _files(crawl, segment, part):
    return crawl.part_files(segment, part) if crawl.has_part(segment, part) else []


def _list(crawl):
    from beamcrawl.transforms.runners.runtime import format_time
    from beamcrawl.transforms.storage.parts import iter_records
    print('NAME\t\tGENERATED\tFETCHER START\t\tFETCHER END\t\tFETCHED\tPARSED')
    for name in crawl.segment_names():
        generated = _count(crawl, name, 'crawl_generate')
        fetch_files = _files(crawl, name, 'crawl_fetch')
        starts, ends, fetched, times = [], [], 0, []
        for record in iter_records(fetch_files):
            fetched += 1
            meta = record['metadata']
            if 'fetch.start' in meta:
                starts.append(int(meta['fetch.start']))
                ends.append(int(meta['fetch.end']))
            elif record['status'] != 'linked':
                times.append(record['fetch_time'])
        if not starts:      # a segment Nutch fetched (import-nutch): its records' fetch times
            starts = ends = times
        start = format_time(min(starts)) if starts else '?'
        end = format_time(max(ends)) if ends else '?'
        parsed = _count(crawl, name, 'parse_data')
        print(f'{name}\t{generated}\t\t{start}\t{end}\t{fetched if fetch_files else "?"}\t'
              f'{parsed}')
    return 0


def _count(crawl, name, part):
    from beamcrawl.transforms.storage.parts import count_records
    files = _files(crawl, name, part)
    return count_records(files) if files else '?'


def _printable(record):
    from beamcrawl.transforms.readdb import json_record
    if 'status' in record:
        return json_record(record)
    out = dict(record)
    if isinstance(out.get('content'), bytes):
        out['content'] = out['content'].decode('utf-8', 'replace')
    return out


def _collect(crawl, segment, url=None, shown=None):
    from beamcrawl.transforms.storage.parts import iter_records
    entries = {}
    for part in PARTS:
        for record in iter_records(_files(crawl, segment, part)):
            if shown is not None:
                shown.add()
            if url is None or record['url'] == url:
                entries.setdefault(record['url'], []).append((part, _printable(record)))
    return entries


def _get(crawl, segment, url):
    entries = _collect(crawl, segment, url)
    if not entries:
        print(f'{url}: not in segment {segment}')
        return 1
    for part, record in entries[url]:
        print(f'{part}::')
        print(json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True))
    return 0


def _dump(crawl, segment, out, progress_s):
    from beamcrawl.transforms.base.progress import Loop
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.parts import count_records
    if fs.exists(out):
        raise UserError(f'--dump {out}: already exists')
    shown = Loop('readseg --dump', sum(count_records(_files(crawl, segment, part))
                                       for part in PARTS), 'records', progress_s)
    entries = _collect(crawl, segment, shown=shown)
    shown.end()
    with fs.create(out) as f:
        for url in sorted(entries):
            line = {'url': url, 'records': [{'part': p, **r} for p, r in entries[url]]}
            f.write((json.dumps(line, ensure_ascii=False, sort_keys=True) + '\n').encode())
    print(f'dumped {len(entries)} URLs of {segment} to {out}')
    return 0


def _politeness(crawl, segment, tolerance_ms):
    """Gaps between the end of one fetch and the start of the next, per queue."""
    from beamcrawl.transforms.policy.politeness import audit_queue
    from beamcrawl.transforms.storage.parts import iter_records
    queues = {}
    for record in iter_records(_files(crawl, segment, 'crawl_fetch')):
        meta = record['metadata']
        if 'fetch.start' not in meta or 'fetch.queue' not in meta:
            continue
        queues.setdefault(meta['fetch.queue'], []).append(
            (int(meta['fetch.start']), int(meta['fetch.end']), float(meta['fetch.delay'])))
    if not queues:
        raise UserError(f'{crawl.segment(segment)}: no timed fetches (not fetched yet?)')
    print('QUEUE\tFETCHES\tDELAY ms\tMIN GAP ms\tMEDIAN GAP ms\tVIOLATIONS')
    violations = 0
    for queue in sorted(queues):
        audit = audit_queue(queues[queue], tolerance_ms)
        violations += audit['violations']
        gaps = audit['min_gap_ms'] is not None
        min_gap = f'{audit["min_gap_ms"]:.0f}' if gaps else '-'
        median = f'{audit["median_gap_ms"]:.0f}' if gaps else '-'
        print(f'{queue}\t{audit["fetches"]}\t{audit["delay_ms"]:.0f}\t\t{min_gap}\t\t{median}\t\t'
              f'{audit["violations"]}')
    print(f'{len(queues)} queues, {violations} violations')
    return 0 if violations == 0 else 3


if __name__ == '__main__':
    sys.exit(run_command('readseg', sys.argv[1:]))
