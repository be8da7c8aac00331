"""dedup as a bulk join (transforms/dedup.py) through the command: the marks equal a plain
Python oracle's whatever the crawldb's layout and the workers; parts without a duplicate are
copied byte for byte, the others keep their order, keys files and partitioning, so the update
after dedup still merges part by part; on a local disk, HDFS and S3."""

import collections
import glob
import itertools
import os
import random

import pytest

from beamcrawl.transforms.engine.partitions import aligned_parts
from beamcrawl.transforms.policy.indexing import INDEXABLE, original_key
from beamcrawl.transforms.policy.simhash import (SIMHASH_KEY, from_hex, groups_of_pairs, hamming,
                                                 to_hex)
from beamcrawl.transforms.storage import fs, keysfile
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.storage.segments import CRAWL_FETCH, CRAWL_PARSE
from tests.conftest import logged_counters, read_db, run_cli, write_seeds
from tests.stores import hdfs_store, s3_store, store  # noqa: F401
from tests.workloads import (IN_PROCESS, NOW, OTHER_SCHEMA, PARALLEL, crawldb_parts,
                             run_updatedb, write_partitioned_db, write_segment)

PARTS = 4
NOW_TEXT = '2026-11-22T00:00:00Z'


def dedup_records(n=600, seed=3):
    """A crawldb whose fetched pages share signatures in groups of 1 to 5 (equal scores too,
    so URL length and fetch time decide), with pages of other statuses carrying the same
    signatures (never grouped) and pages without a signature."""
    rnd = random.Random(seed)
    statuses = ['db_fetched', 'db_notmodified', 'db_unfetched', 'db_gone', 'db_redir_perm']
    records = []
    for i in range(n):
        status = rnd.choices(statuses, weights=[6, 2, 3, 1, 1])[0]
        signature = None if i % 17 == 0 else b'sig-%d' % rnd.randint(0, n // 3)
        records.append(crawl_datum(
            f'http://h{i % 9}.test/{"p" * (i % 4)}/{i}', status,
            fetch_time=NOW - rnd.randint(0, 3) * 86400000, fetch_interval=86400,
            score=rnd.choice([1.0, 1.0, 2.5, 0.5]), signature=signature,
            metadata={'k': str(i)} if i % 5 == 0 else {}))
    return records


def oracle(records):
    """url → status after dedup, by the definition (groups of fetched pages by signature)."""
    groups = collections.defaultdict(list)
    for r in records:
        if r['status'] in INDEXABLE and r['signature']:
            groups[r['signature']].append(r)
    out = {r['url']: r['status'] for r in records}
    for group in groups.values():
        for r in sorted(group, key=original_key)[1:]:
            out[r['url']] = 'db_duplicate'
    return out


def write_layout(crawl, layout, records):
    db = os.path.join(crawl, 'crawldb', 'current')
    if layout in ('partitioned', 'partitioned-keys'):
        write_partitioned_db(db, records, PARTS, keys=layout == 'partitioned-keys')
    elif layout == 'other-schema':
        write_avro_file(os.path.join(db, 'part-00000.avro'), OTHER_SCHEMA,
                        [{f['name']: r[f['name']] for f in OTHER_SCHEMA['fields']}
                         for r in records])
    else:
        write_avro_file(os.path.join(db, 'part-00000.avro'), CRAWL_DATUM_SCHEMA, records)


def _files(crawl):
    directory = os.path.join(crawl, 'crawldb', 'current')
    return {name: open(os.path.join(directory, name), 'rb').read()
            for name in sorted(os.listdir(directory)) if not name.startswith('_')}


@pytest.mark.parametrize('layout', ['partitioned-keys', 'partitioned', 'one-part',
                                    'other-schema'])
@pytest.mark.parametrize('workers', ['in-process', 'parallel'])
def test_dedup_marks_what_the_oracle_marks_and_copies_what_it_does_not_change(
        tmp_path, layout, workers):
    records = dedup_records()
    expected = oracle(records)
    marked = sum(s == 'db_duplicate' for s in expected.values())
    assert 40 < marked < 300
    crawl = str(tmp_path / 'crawl')
    write_layout(crawl, layout, records)
    before = _files(crawl)
    proc = run_cli('dedup', crawl, *(IN_PROCESS if workers == 'in-process' else PARALLEL))
    assert 'Traceback' not in proc.stderr and 'INFO:apache_beam' not in proc.stderr
    assert f'dedup: {marked} pages marked db_duplicate' in proc.stdout
    after = read_db(crawl)
    assert {u: r['status'] for u, r in after.items()} == expected
    by_url = {r['url']: r for r in records}
    for url, record in after.items():        # nothing but the status changes
        assert dict(record, status=by_url[url]['status']) == dict(
            by_url[url], **({} if layout != 'other-schema' else {
                'modified_time': 0, 'protocol_status': None, 'http_code': None}))
    files = _files(crawl)
    assert sorted(n for n in files if n.endswith('.avro')) == \
        sorted(n for n in before if n.endswith('.avro'))
    for path in crawldb_parts(crawl):        # each part keeps its order
        urls = [r['url'] for r in iter_records([path])]
        original = [r['url'] for r in iter_records([os.path.join(
            str(tmp_path), 'crawl', 'crawldb', 'old', os.path.basename(path))])] \
            if os.path.isdir(os.path.join(crawl, 'crawldb', 'old')) else None
        if original is not None:
            assert urls == original
    if layout.startswith('partitioned'):
        db = CrawlLayout(crawl).crawldb
        assert db.read_note('_partitions') == str(PARTS)
        assert aligned_parts(db, PARTS) is not None
        unchanged = [n for n in files if n.endswith('.avro') and not any(
            expected[r['url']] == 'db_duplicate' != by_url[r['url']]['status']
            for r in iter_records([os.path.join(crawl, 'crawldb', 'current', n)]))]
        assert unchanged or marked > PARTS * 10
        for name in unchanged:
            assert files[name] == before[name]
        for path in crawldb_parts(crawl):      # every part (rewritten or copied) has its keys
            keyed = keysfile.read_keyed(path)
            if layout == 'partitioned-keys' or path not in unchanged:
                assert keyed is not None
                assert [(u, s) for u, s, _ in keyed] == [
                    (r['url'], r['status']) for r in iter_records([path])]


def test_dedup_with_nothing_to_mark_keeps_the_version(tmp_path):
    records = [crawl_datum(f'http://a.test/{i}', 'db_fetched', fetch_time=NOW,
                           fetch_interval=86400, signature=b'%d' % i) for i in range(50)]
    crawl = str(tmp_path / 'crawl')
    write_partitioned_db(os.path.join(crawl, 'crawldb', 'current'), records, 2, keys=True)
    before = _files(crawl)
    proc = run_cli('dedup', crawl, *IN_PROCESS)
    assert 'dedup: 0 pages marked db_duplicate' in proc.stdout
    assert _files(crawl) == before
    assert not os.path.exists(os.path.join(crawl, 'crawldb', 'old'))


def test_the_update_after_dedup_merges_part_by_part(tmp_path):
    """After dedup the crawldb is still partitioned as updatedb writes it: the next update
    merges it part by part and equals the update of the same crawldb marked by the oracle."""
    records = dedup_records(n=300)
    expected = oracle(records)
    deduped, marked = str(tmp_path / 'deduped'), str(tmp_path / 'marked')
    write_partitioned_db(os.path.join(deduped, 'crawldb', 'current'), records, 3, keys=True)
    write_partitioned_db(os.path.join(marked, 'crawldb', 'current'),
                         [dict(r, status=expected[r['url']]) for r in records], 3, keys=True)
    run_cli('dedup', deduped, *IN_PROCESS)
    fetch = [crawl_datum(r['url'], 'fetch_success', fetch_time=NOW, fetch_interval=86400,
                         score=1.0, protocol_status='success') for r in records[:40]]
    links = [crawl_datum(f'http://new.test/{k}', 'linked', fetch_time=NOW, fetch_interval=86400,
                         score=0.1) for k in range(30)]
    for crawl in (deduped, marked):
        write_segment(crawl, {'crawl_fetch': fetch, 'crawl_parse': links})
        proc = run_updatedb(crawl, *IN_PROCESS)
        assert 'Traceback' not in proc.stderr
        # part by part: only the segment's two files went through the map side, not the
        # crawldb's 3 parts
        assert logged_counters(proc.stderr)['store.spill_files'] == 2
    assert read_db(deduped) == read_db(marked)


@pytest.mark.e2e
@pytest.mark.xdist_group('stores')
def test_dedup_on_every_store(store, tmp_path):
    """A crawl directory on a local disk, HDFS and S3: URLs injected, a segment fetching them
    with signatures in groups, updatedb, then dedup marks what the oracle marks and the
    crawldb keeps its partitioning."""
    urls = [f'http://h{i % 5}.test/{"p" * (i % 3)}{i}' for i in range(120)]
    seeds = write_seeds(tmp_path / 'seeds.txt', urls)
    run_cli('inject', store.root, seeds, '--now', NOW_TEXT, *store.options)
    crawl = CrawlLayout(store.root)
    with crawl.segment_update('20261122000000', [CRAWL_FETCH, CRAWL_PARSE], 'test') as update:
        write_avro_file(fs.part_file(update.tmp[CRAWL_FETCH], 0), CRAWL_DATUM_SCHEMA, [
            crawl_datum(u, 'fetch_success', fetch_time=NOW, fetch_interval=86400,
                        protocol_status='success') for u in urls])
        write_avro_file(fs.part_file(update.tmp[CRAWL_PARSE], 0), CRAWL_DATUM_SCHEMA, [
            crawl_datum(u, 'signature', fetch_time=NOW, fetch_interval=0,
                        signature=b'%d' % (i % 50)) for i, u in enumerate(urls)])
    run_cli('updatedb', store.root, '--now', NOW_TEXT, *store.options)
    before = list(iter_records(crawl.crawldb.part_files()))
    partitions = crawl.crawldb.read_note('_partitions')
    proc = run_cli('dedup', store.root, *store.options)
    assert 'dedup: 70 pages marked db_duplicate' in proc.stdout
    after = {r['url']: r['status'] for r in iter_records(crawl.crawldb.part_files())}
    assert after == oracle(before)
    assert crawl.crawldb.read_note('_partitions') == partitions
    assert aligned_parts(crawl.crawldb, int(partitions)) is not None


# -- dedup --near (near-duplicates by SimHash; policy/simhash.py) -------------------------------

def near_records(n=500, seed=11, distance=3):
    """A crawldb whose fetched pages carry fingerprints in planted clusters (members a few bits
    apart, some beyond the distance) among unrelated ones, some sharing signatures too, and
    pages of other statuses with the same fingerprints (never grouped)."""
    rnd = random.Random(seed)
    statuses = ['db_fetched', 'db_notmodified', 'db_unfetched', 'db_gone']
    bases = [rnd.getrandbits(64) for _ in range(n // 6)]
    records = []
    for i in range(n):
        status = rnd.choices(statuses, weights=[6, 2, 2, 1])[0]
        value = rnd.choice(bases) if i % 3 else rnd.getrandbits(64)
        for bit in rnd.sample(range(64), rnd.randint(0, distance + 2)):
            value ^= 1 << bit
        meta = {} if i % 23 == 0 else {SIMHASH_KEY: to_hex(value)}
        records.append(crawl_datum(
            f'http://n{i % 7}.test/{"q" * (i % 3)}{i}', status,
            fetch_time=NOW - rnd.randint(0, 3) * 86400000, fetch_interval=86400,
            score=rnd.choice([1.0, 2.0]), signature=b'sig-%d' % rnd.randint(0, n),
            metadata=meta))
    return records


def near_oracle(records, distance):
    """url → status after `dedup --near`, by the definition: groups joined by a shared
    signature or by fingerprints within the distance, compared pair by pair."""
    pages = [r for r in records if r['status'] in INDEXABLE]
    pairs = []
    for a, b in itertools.combinations(pages, 2):
        fa, fb = (from_hex(r['metadata'].get(SIMHASH_KEY, '')) for r in (a, b))
        if (a['signature'] and a['signature'] == b['signature']) or \
                (fa is not None and fb is not None and hamming(fa, fb) <= distance):
            pairs.append((original_key(a), original_key(b)))
    out = {r['url']: r['status'] for r in records}
    for group in groups_of_pairs(tuple(sorted(p)) for p in pairs):
        for key in group[1:]:
            out[key[-1]] = 'db_duplicate'
    return out


@pytest.mark.parametrize('layout,workers', [('partitioned-keys', 'parallel'),
                                            ('one-part', 'in-process')])
def test_dedup_near_marks_what_comparing_every_pair_marks(tmp_path, layout, workers):
    records = near_records()
    expected = near_oracle(records, 3)
    marked = sum(s == 'db_duplicate' for s in expected.values())
    exact = sum(s == 'db_duplicate' for s in oracle(records).values())
    assert 30 < marked and exact < marked            # more than the signatures alone find
    crawl = str(tmp_path / 'crawl')
    write_layout(crawl, layout, records)
    proc = run_cli('dedup', crawl, '--near',
                   *(IN_PROCESS if workers == 'in-process' else PARALLEL))
    assert f'dedup: {marked} pages marked db_duplicate' in proc.stdout
    assert {u: r['status'] for u, r in read_db(crawl).items()} == expected
    wider = str(tmp_path / 'wider')
    write_layout(wider, layout, records)
    proc = run_cli('dedup', wider, '--near', '--distance', '5', *IN_PROCESS)
    assert {u: r['status'] for u, r in read_db(wider).items()} == near_oracle(records, 5)


@pytest.mark.parametrize('args,message', [
    (['--distance', '3'], '--distance goes with --near'),
    (['--near', '--distance', '16'], '--distance 16: expected 0 to 15 bits'),
    (['--near', '-D', 'dedup.near.distance=-1'], 'dedup.near.distance'),
])
def test_dedup_near_refuses_a_bad_distance(tmp_path, args, message):
    crawl = str(tmp_path / 'crawl')
    write_layout(crawl, 'one-part', dedup_records(20))
    proc = run_cli('dedup', crawl, *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr and 'Traceback' not in proc.stderr


def _article(seed, words=320):
    rnd = random.Random(seed)
    vocab = [f'term{i}' for i in range(4000)]
    return ' '.join(rnd.choice(vocab) for _ in range(words))


def test_dedup_near_after_a_crawl_marks_the_near_copies(tmp_path):
    """A crawl of a web with an article, its printable copy (another date line), a mirror of it
    on another host (one word changed) and a different article: parse fingerprints the texts,
    updatedb keeps the fingerprints in the crawldb, `dedup --near --distance 8` marks the copies
    but the one Nutch's order keeps, and `dedup` alone (exact signatures of the bytes) marks
    nothing."""
    from tests.testweb import Page, TestWeb, html_page
    article = _article(1)
    words = article.split()
    mirrored = ' '.join(words[:200] + ['mirrored'] + words[201:])
    robots = Page(body=b'User-agent: *\nAllow: /\n', content_type='text/plain')
    sites = {
        'news.test': {'/robots.txt': robots,
                      '/a1': html_page('Story', f'<p>Posted 2026-11-20. {article}</p>'),
                      '/a1-print': html_page('Story', f'<p>Posted 2026-11-21. {article}</p>'),
                      '/a2': html_page('Other', f'<p>Posted 2026-11-20. {_article(2)}</p>')},
        'mirror.test': {'/copy/a1': html_page('Story', f'<p>Posted 2026-11-20. {mirrored}</p>'),
                        '/robots.txt': robots}}
    urls = ['http://news.test/a1', 'http://news.test/a1-print', 'http://news.test/a2',
            'http://mirror.test/copy/a1']
    with TestWeb(sites) as web:
        crawl = str(tmp_path / 'crawl')
        seeds = write_seeds(tmp_path / 'seeds', urls)
        conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
                '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
                '-D', 'domain.extra.suffixes=test', '--now', NOW_TEXT]
        for command in (['inject', crawl, seeds], ['generate', crawl], ['fetch', crawl],
                        ['parse', crawl], ['updatedb', crawl]):
            run_cli(*command, *conf)
    db = read_db(crawl)
    fingerprints = {u: from_hex(db[u]['metadata'][SIMHASH_KEY]) for u in urls}
    # a word or two of 320 changed: a few bits (1 to 7 for most texts: docs/documents.md)
    assert hamming(fingerprints[urls[0]], fingerprints[urls[1]]) <= 8
    assert hamming(fingerprints[urls[0]], fingerprints[urls[3]]) <= 8
    assert hamming(fingerprints[urls[0]], fingerprints[urls[2]]) > 16
    assert 'dedup: 0 pages marked' in run_cli('dedup', crawl, *conf[-2:]).stdout
    assert 'dedup: 2 pages marked' in run_cli('dedup', crawl, '--near', '--distance', '8',
                                              *conf[-2:]).stdout
    statuses = {u: r['status'] for u, r in read_db(crawl).items()}
    assert statuses == {urls[0]: 'db_fetched', urls[1]: 'db_duplicate', urls[2]: 'db_fetched',
                        urls[3]: 'db_duplicate'}


def test_dedup_near_on_main_text_groups_copies_and_keeps_pages_of_one_template_apart(tmp_path):
    """Six articles of a news site and the same six on another site (other menus, ads between
    the paragraphs), crawled with main text extraction: `dedup --near` marks one page of each
    pair and none of the six articles that share the news site's template; the fingerprints of
    the whole texts would tell neither apart (docs/documents.md "Near-duplicates")."""
    from tests.test_maintext import CORPUS
    from tests.testweb import Page, TestWeb
    robots = Page(body=b'User-agent: *\nAllow: /\n', content_type='text/plain')
    sites = {'news.test': {'/robots.txt': robots}, 'copies.test': {'/robots.txt': robots}}
    articles = sorted(name[len('news_'):-len('.html')] for name in os.listdir(CORPUS)
                      if name.startswith('news_') and name.endswith('.html'))
    for article in articles:
        for host, prefix in (('news.test', 'news_'), ('copies.test', 'adsplit_')):
            with open(os.path.join(CORPUS, f'{prefix}{article}.html'), 'rb') as f:
                sites[host][f'/{article}'] = Page(body=f.read(), content_type='text/html')
    urls = [f'http://{host}/{a}' for a in articles for host in ('news.test', 'copies.test')]
    with TestWeb(sites) as web:
        conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
                '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
                '-D', 'domain.extra.suffixes=test', '--now', NOW_TEXT]
        runs = {}
        for extractor in ('none', 'trafilatura'):
            crawl = runs[extractor] = str(tmp_path / extractor)
            seeds = write_seeds(tmp_path / 'seeds', urls)
            for command in (['inject', crawl, seeds], ['generate', crawl], ['fetch', crawl],
                            ['parse', crawl], ['updatedb', crawl]):
                run_cli(*command, *conf, '-D', f'parser.main.text.extractor={extractor}')
    whole = read_db(runs['none'])
    far = [hamming(*(from_hex(whole[f'http://{h}/{a}']['metadata'][SIMHASH_KEY])
                     for h in ('news.test', 'copies.test'))) for a in articles]
    assert min(far) > 3                      # whole texts: each pair too far apart to group
    crawl = runs['trafilatura']
    assert 'dedup: 6 pages marked' in run_cli('dedup', crawl, '--near', *conf[-2:]).stdout
    statuses = {u: r['status'] for u, r in read_db(crawl).items()}
    for article in articles:
        pair = [statuses[f'http://{h}/{article}'] for h in ('news.test', 'copies.test')]
        assert sorted(pair) == ['db_duplicate', 'db_fetched'], (article, pair)
    db = read_db(crawl)
    assert {db[u]['metadata'].get('_simhash_') is not None for u in urls} == {True}
    # the readers show the new fields: main text, detected language, fingerprint
    segment = os.path.basename(sorted(glob.glob(f'{crawl}/segments/*'))[-1])
    shown = run_cli('readseg', crawl, '--get', segment, urls[0]).stdout
    for field in ('"main_text": "', '"lang.detected": "en"', '"lang.confidence": "',
                  '"_simhash_": "'):
        assert field in shown, field
