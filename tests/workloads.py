"""Workloads of the batch stages on real files, shared by their tests: crawldbs partitioned the
engine's way (or not), segments, linkdbs; and the stages run on them through the command."""

import glob
import os
import random

from beamcrawl.transforms.policy.partition import partition
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import PartWriter, write_avro_file
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, INLINKS_SCHEMA,
                                                  PARSE_DATA_SCHEMA, STATUSES, crawl_datum,
                                                  inlinks, parse_data)
from tests.conftest import run_cli

NOW = 1795305600000
DAY = 86400000
PARALLEL = ['-D', 'runner.local.parallel.records=0', '-D', 'runner.local.workers=2']
IN_PROCESS = ['-D', 'runner.local.workers=1']


def datums(n, seed=1):
    rnd = random.Random(seed)
    return [crawl_datum(f'http://h{i % 7}.test/p/{i}', rnd.choice(['db_fetched', 'db_unfetched']),
                        fetch_time=NOW - rnd.randint(0, 30) * DAY, fetch_interval=86400,
                        score=rnd.randint(0, 64) / 8,      # exact in the schema's 32-bit float
                        metadata={'k': str(i)} if i % 5 == 0 else {})
            for i in range(n)]


def write_partitioned_db(directory, records, n, keys=False):
    """A crawldb partitioned as bulk writes it; `keys`: with keys files, as PartWriter writes
    them (unchanged records are then copied a run at a time, joins.join_keyed)."""
    parts = [[] for _ in range(n)]
    for r in records:
        parts[partition(r['url'], n)].append(r)
    for i, part in enumerate(parts):
        path = os.path.join(directory, f'part-{i:05d}.avro')
        part = sorted(part, key=lambda r: r['url'])
        if keys:
            os.makedirs(directory, exist_ok=True)
            with PartWriter(path, CRAWL_DATUM_SCHEMA, keys=True) as out:
                for record in part:
                    out.write(record)
        else:
            write_avro_file(path, CRAWL_DATUM_SCHEMA, part)
    with open(os.path.join(directory, '_partitions'), 'w') as f:
        f.write(str(n))


def write_segment(crawl, records_by_part):
    segment = os.path.join(crawl, 'segments', '20261122000000')
    for part, records in records_by_part.items():
        write_avro_file(os.path.join(segment, part, 'part-00000.avro'), CRAWL_DATUM_SCHEMA,
                        records)
    return segment


# A crawldb written by another program: the contract's fields, in another schema (no field
# with a default beyond score, signature and metadata; a schema of its own name).
OTHER_SCHEMA = dict(CRAWL_DATUM_SCHEMA, name='OtherDatum', fields=[
    f for f in CRAWL_DATUM_SCHEMA['fields']
    if f['name'] not in ('protocol_status', 'http_code', 'modified_time')])


# Another writer's CrawlDatum-shaped schema (datumcodec.datums_converter): the contract's first 9
# fields, its status symbols in another order.
CONTRACT_SCHEMA = {'type': 'record', 'name': 'CrawlDatum', 'fields': [
    dict(f, type=dict(f['type'], symbols=list(STATUSES)[::-1])) if f['name'] == 'status' else f
    for f in CRAWL_DATUM_SCHEMA['fields'][:9]]}


def update_workload(crawl, native, n=400, partitions=3, keys=False):
    """A crawldb of n URLs (some with a generate marker) and a segment that fetches some,
    re-signs some (also unfetched ones) and links to old and new URLs (some gone, some
    redirected). `native`: partitioned as the engine writes it (True), one part in the
    crawldb's schema (False), or one part in another schema ('other', or 'contract': one whose
    records updatedb's map converts)."""
    old = datums(n, seed=2)
    old[3] = dict(old[3], status='db_gone')
    for i in range(0, n, 11):
        old[i] = dict(old[i], metadata=dict(old[i]['metadata'], _ngt_=str(NOW - DAY)))
    db = os.path.join(crawl, 'crawldb', 'current')
    if native in ('other', 'contract'):
        schema = OTHER_SCHEMA if native == 'other' else CONTRACT_SCHEMA
        write_avro_file(os.path.join(db, 'part-00000.avro'), schema,
                        [{f['name']: r[f['name']] for f in schema['fields']} for r in old])
    elif native:
        write_partitioned_db(db, old, partitions, keys)
    else:
        write_avro_file(os.path.join(db, 'part-00000.avro'), CRAWL_DATUM_SCHEMA, old)
    rnd = random.Random(4)
    fetched = [crawl_datum(r['url'], rnd.choice(['fetch_success', 'fetch_gone', 'fetch_retry',
                                                 'fetch_redir_perm', 'fetch_notmodified']),
                           fetch_time=NOW, fetch_interval=86400, score=1.0,
                           protocol_status='success') for r in old[:n // 4]]
    signatures = [crawl_datum(r['url'], 'signature', fetch_time=NOW, fetch_interval=0,
                              signature=b'%d' % (i % 3))
                  for i, r in enumerate(old[:n // 8] + old[n // 4:n // 4 + 10])]
    links = [crawl_datum(rnd.choice(old)['url'] if k % 2 else f'http://new{k % 5}.test/{k}',
                         'linked', fetch_time=NOW, fetch_interval=86400, score=0.1)
             for k in range(n)]
    write_segment(crawl, {'crawl_fetch': fetched, 'crawl_parse': signatures + links})


def crawldb_parts(crawl):
    return sorted(glob.glob(os.path.join(crawl, 'crawldb', 'current', 'part-*.avro')))


def assert_partitioned(crawl):
    """The crawldb as inject/updatedb write it: part i holds crc32 mod N == i, sorted."""
    parts = crawldb_parts(crawl)
    with open(os.path.join(crawl, 'crawldb', 'current', '_partitions')) as f:
        assert int(f.read()) == len(parts)
    for i, path in enumerate(parts):
        urls = [r['url'] for r in iter_records([path])]
        assert urls == sorted(set(urls))
        assert all(partition(u, len(parts)) == i for u in urls)


def run_updatedb(crawl, *extra):
    return run_cli('updatedb', crawl, '--now', str(NOW), '-D', 'crawldb.partitions=3', *extra)


def linkdb_workload(crawl, existing_native):
    rnd = random.Random(9)
    urls = [f'http://l{i % 6}.test/{i}' for i in range(300)]
    old = [inlinks(u, [(rnd.choice(urls), f'old {i}')]) for i, u in enumerate(urls[:150])]
    directory = os.path.join(crawl, 'linkdb', 'current')
    if existing_native:
        parts = [[] for _ in range(4)]
        for r in old:
            parts[partition(r['url'], 4)].append(r)
        for i, part in enumerate(parts):
            write_avro_file(f'{directory}/part-{i:05d}.avro', INLINKS_SCHEMA,
                            sorted(part, key=lambda r: r['url']))
        with open(f'{directory}/_partitions', 'w') as f:
            f.write('4')
    else:
        write_avro_file(f'{directory}/part-00000.avro', INLINKS_SCHEMA, old)
    segment = os.path.join(crawl, 'segments', '20261122000000')
    write_avro_file(f'{segment}/parse_data/part-00000.avro', PARSE_DATA_SCHEMA, [
        parse_data(u, title='t', parse_status='success',
                   outlinks=[(rnd.choice(urls), f'text {k}') for k in range(5)])
        for u in urls])
    write_avro_file(f'{segment}/crawl_parse/part-00000.avro', CRAWL_DATUM_SCHEMA, [])


def read_linkdb(crawl):
    out = {}
    for path in glob.glob(os.path.join(crawl, 'linkdb', 'current', 'part-*.avro')):
        for r in iter_records([path]):
            out[r['url']] = sorted((i['from_url'], i['anchor']) for i in r['inlinks'])
    return out
