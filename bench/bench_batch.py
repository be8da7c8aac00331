"""Benchmark: the four batch stages on a 1M-URL workload, each best of N runs, one line per stage
with wall time, CPU time and the peak RSS of the command's process tree.

    python bench/bench_batch.py [--runs 3] [--stages inject,generate,updatedb,invertlinks]
                                [--urls 1000000] [--markdown] [--against REV]
                                [-- extra command arguments]

The workloads (built once, copied afresh before every run):
  inject       1M seed URLs over 10k hosts into an empty crawldb
  generate     1M-URL crawldb over 10k hosts with Zipf-like sizes, half unfetched;
               --top-n 100000 (a tenth of --urls) -D generate.max.count=50
  updatedb     1M-URL crawldb as beamcrawl writes it (8 parts by URL hash, sorted) + one
               segment of 100k fetch records, 100k signatures and 500k outlinks, half of
               them to new URLs
  updatedb-foreign  the same with the crawldb in 4 parts in URL order, no partitioning note
               (a crawldb converted from elsewhere: its first update maps all of it)
  generate-contract, updatedb-contract  the generate and updatedb-foreign workloads with
               every CrawlDatum file rewritten in another writer's schema: only the contract's
               fields (docs/crawl-dir.md, "Records"), no namespace, crawl_fetch's
               protocol_status a plain string (as files written by another tool are)
  invertlinks  100k parse_data records with 5 outlinks each, no linkdb yet (no normalize or
               filter, as a crawl script runs it)
  dedup        the updatedb crawldb (2/3 of it db_fetched) with a signature per page but that
               record i shares i + 900k's: 66k pages marked db_duplicate, in every part
  index        the dedup crawldb, a linkdb of 100k pages with 5 inlinks each, and the
               updatedb segment parsed: 100k pages with about 1.5 kB of text each, into the
               default tantivy index (dedup first, as the command runs it)
--markdown also prints the rows for bench/README.md's history table. --against REV measures
the code of git revision REV too, in the same run: each stage's runs alternate between REV and
the working tree (this machine's speed drifts over minutes: only figures measured side by side
compare), and a line per stage gives the ratio of the best walls and CPU times.
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_generate  # noqa: E402
import bench_linkdb  # noqa: E402
import bench_updatedb  # noqa: E402
from measure import ROOT, beamcrawl, measure  # noqa: E402

NOW = str(bench_updatedb.NOW)
STAGES = ('inject', 'generate', 'updatedb', 'updatedb-foreign', 'invertlinks', 'dedup', 'index',
          'generate-contract', 'updatedb-contract')
WORDS = ('crawler search index page web link anchor text politeness fetch schedule host '
         'domain robots segment shard query score boost signature parse content title '
         'freshness adaptive interval budget').split()


def build_inject(work, urls):
    with open(os.path.join(work, 'seeds.txt'), 'w') as f:
        for i in range(urls):
            f.write(f'http://www.h{i % 10000}.example.com/p/{i}.html\tscore={i % 7}\n')
    return urls


def build_generate(work, urls):
    bench_generate.build(os.path.join(work, 'crawl'), urls, 10000)
    return urls


def build_updatedb(work, urls):
    return bench_updatedb.build(os.path.join(work, 'crawl'), urls, urls // 10, urls // 2)


def build_updatedb_foreign(work, urls):
    return bench_updatedb.build(os.path.join(work, 'crawl'), urls, urls // 10, urls // 2,
                                native=False)


def _contract_schema(fetch):
    """CrawlDatum as another tool writes it: the contract's fields only (docs/crawl-dir.md),
    no namespace, no defaults but the signature's; crawl_fetch adds protocol_status (a plain
    string) and http_code."""
    from beamcrawl.transforms.storage.records import STATUSES
    fields = [
        {'name': 'url', 'type': 'string'},
        {'name': 'status', 'type': {'type': 'enum', 'name': 'CrawlStatus',
                                    'symbols': list(STATUSES)}},
        {'name': 'fetch_time', 'type': 'long'}, {'name': 'modified_time', 'type': 'long'},
        {'name': 'fetch_interval', 'type': 'int'}, {'name': 'retries', 'type': 'int'},
        {'name': 'score', 'type': 'float'},
        {'name': 'signature', 'type': ['null', 'bytes'], 'default': None},
        {'name': 'metadata', 'type': {'type': 'map', 'values': 'string'}}]
    if fetch:
        fields += [{'name': 'protocol_status', 'type': 'string'},
                   {'name': 'http_code', 'type': ['null', 'int'], 'default': None}]
    return {'type': 'record', 'name': 'FetchDatum' if fetch else 'CrawlDatum', 'fields': fields}


def to_contract(crawl):
    """Rewrites every CrawlDatum part under `crawl` in _contract_schema (deflate, as
    fastavro writes by default)."""
    import fastavro
    for directory, _, files in os.walk(crawl):
        for name in files:
            if not name.endswith('.avro'):
                continue
            path = os.path.join(directory, name)
            with open(path, 'rb') as f:
                reader = fastavro.reader(f)
                if reader.writer_schema.get('name') != 'org.beamcrawl.CrawlDatum':
                    continue
                fetch = os.path.basename(directory) == 'crawl_fetch'
                schema = fastavro.parse_schema(_contract_schema(fetch))
                names = [f['name'] for f in schema['fields']]
                records = [{n: r[n] for n in names} for r in reader]
            if fetch:
                for r in records:
                    r['protocol_status'] = r['protocol_status'] or ''
            with open(path, 'wb') as f:
                fastavro.writer(f, schema, records, codec='deflate')


def build_generate_contract(work, urls):
    records = build_generate(work, urls)
    to_contract(os.path.join(work, 'crawl'))
    return records


def build_updatedb_contract(work, urls):
    records = build_updatedb_foreign(work, urls)
    to_contract(os.path.join(work, 'crawl'))
    return records


def build_invertlinks(work, urls):
    pages = urls // 10
    bench_linkdb.build(os.path.join(work, 'crawl'), pages, 5, 0, 8)
    return pages * 5


def build_dedup(work, urls):
    bench_updatedb.build(os.path.join(work, 'crawl'), urls, urls // 10, urls // 2,
                         signatures=urls * 9 // 10)
    return urls


def build_index(work, urls):
    import random
    from beamcrawl.transforms.storage.fs import part_file
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import (INLINKS_SCHEMA, PARSE_DATA_SCHEMA,
                                                      PARSE_TEXT_SCHEMA, inlinks, parse_data,
                                                      parse_text)
    crawl = os.path.join(work, 'crawl')
    build_dedup(work, urls)
    rng = random.Random(7)
    layout = CrawlLayout(crawl)
    pages = [bench_updatedb.url(i) for i in range(1, urls, 10)][:urls // 10]
    write_avro_file(part_file(layout.linkdb.current, 0), INLINKS_SCHEMA, (
        inlinks(u, [(bench_updatedb.url(rng.randrange(urls)), ' '.join(rng.choices(WORDS, k=3)))
                    for _ in range(5)]) for u in sorted(pages)))
    segment = '20261122000000'
    write_avro_file(part_file(layout.segment_part(segment, 'parse_text'), 0), PARSE_TEXT_SCHEMA, (
        parse_text(u, ' '.join(rng.choices(WORDS, k=200))) for u in pages))
    write_avro_file(part_file(layout.segment_part(segment, 'parse_data'), 0), PARSE_DATA_SCHEMA, (
        parse_data(u, title=' '.join(rng.choices(WORDS, k=5)), parse_status='success',
                   outlinks=[(bench_updatedb.url(rng.randrange(urls)), 'next')
                             for _ in range(5)], metadata={})
        for u in pages))
    return urls + len(pages)


def command(stage, work, extra, urls=1000000):
    """The command of a stage; generate's --top-n is a tenth of the URLs."""
    crawl = os.path.join(work, 'crawl')
    return beamcrawl(*{
        'inject': ['inject', crawl, os.path.join(work, 'seeds.txt')],
        'generate': ['generate', crawl, '--top-n', str(urls // 10), '-D', 'generate.max.count=50',
                     '--num-fetchers', '2', '--now', NOW],
        'updatedb': ['updatedb', crawl, '--now', NOW],
        'updatedb-foreign': ['updatedb', crawl, '--now', NOW],
        'updatedb-contract': ['updatedb', crawl, '--now', NOW],
        'generate-contract': ['generate', crawl, '--top-n', str(urls // 10), '-D',
                              'generate.max.count=50', '--num-fetchers', '2', '--now', NOW],
        'invertlinks': ['invertlinks', crawl],
        'dedup': ['dedup', crawl],
        'index': ['index', crawl],
    }[stage], *extra)


def _tree_of(rev: str, work: str) -> str:
    """A PYTHONPATH under which `beamcrawl` is revision `rev` of this repository: a worktree of
    it, with its folders under the one import name (as setup.py maps them)."""
    tree = os.path.join(work, 'against')
    subprocess.run(['git', 'worktree', 'add', '--detach', tree, rev], cwd=ROOT, check=True,
                   capture_output=True)
    if os.path.exists(os.path.join(tree, 'transforms', 'storage', '_datums.c')):
        # The revision's C codec, built as its install builds it: this tree's build is not in
        # git, and without one the revision would run the Python loops (storage/native.py).
        subprocess.run([sys.executable, 'setup.py', '-q', 'build_ext', '--inplace'], cwd=tree,
                       capture_output=True)
    package = os.path.join(work, 'against-path', 'beamcrawl')
    os.makedirs(package)
    for folder in ('pipelines', 'transforms', 'conf'):
        os.symlink(os.path.join(tree, folder), os.path.join(package, folder))
    return os.path.dirname(package)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    argv = argv[:argv.index('--')] if '--' in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--stages', default=','.join(STAGES))
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--against', metavar='REV', help='also measure git revision REV')
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(',') if s]
    unknown = set(stages) - set(STAGES)
    if unknown:
        parser.error(f'unknown stages {sorted(unknown)}; expected some of {STAGES}')
    work = tempfile.mkdtemp(prefix='bench-batch-')
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or '?'
    print(f'{os.cpu_count()} cores, commit {commit}, best of {args.runs}'
          + (f', extra arguments {" ".join(extra)}' if extra else ''))
    rows = []
    trees = {'': None}              # label suffix → PYTHONPATH of the code measured (None: ours)
    if args.against:
        trees = {f' @{args.against}': _tree_of(args.against, work), ' (this tree)': None}
    try:
        for stage in stages:
            pristine = os.path.join(work, stage, 'pristine')
            os.makedirs(pristine)
            start = time.time()
            records = globals()[f'build_{stage.replace("-", "_")}'](pristine, args.urls)
            print(f'  (built the {stage} workload in {time.time() - start:.0f} s)')
            best = {}
            for _ in range(args.runs):
                for suffix, path in trees.items():       # interleaved: the same machine state
                    run = os.path.join(work, stage, 'run')
                    shutil.rmtree(run, ignore_errors=True)
                    shutil.copytree(pristine, run)
                    env = dict(os.environ, PYTHONPATH=path) if path else None
                    argv = command(stage, run, extra, args.urls)
                    result = measure(stage + suffix, argv, records, env=env)
                    if suffix not in best or result.wall < best[suffix].wall:
                        best[suffix] = result
                    shutil.rmtree(run)
            for result in best.values():
                print(result.line(), flush=True)
                summary = [l for l in result.stdout.splitlines() if l.strip()]
                if summary:
                    print('    ' + summary[-1][:200])
                rows.append(result)
            if len(best) == 2:
                old, new = best.values()
                print(f'  {stage}: this tree / {args.against}: wall {new.wall / old.wall:.2f}, '
                      f'CPU {new.cpu / old.cpu:.2f}')
    finally:
        if args.against:
            subprocess.run(['git', 'worktree', 'remove', '--force',
                            os.path.join(work, 'against')], cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    if args.markdown:
        today = datetime.date.today().isoformat()
        for r in rows:
            print(f'| {today} | {commit} | {r.label} | {r.wall:.1f} s | {r.cpu:.1f} s | '
                  f'{r.peak / 2 ** 30:.2f} GB |')


if __name__ == '__main__':
    main()
