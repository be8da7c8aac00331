"""mergedb, mergelinkdb, mergesegs, freegen: the merge rules as tables, and the commands on
crawls of the loopback test web (docs/merging.md)."""

import hashlib
import math
import os
import shutil

import pytest

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms.policy.merging import (is_newer, last_fetch_time, merge_datums,
                                                 merge_inlinks, merge_segment_url, slice_of)
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import INLINKS_SCHEMA, crawl_datum, inlinks
from tests.conftest import read_db, run_cli, write_seeds
from tests.test_foreign import _nutch_crawl, _snapshot

DAY = 86400000
NOW = 1795305600000
H = 3600


def datum(status, fetch_time, interval=H, **meta):
    return crawl_datum('http://x.test/', status, fetch_time=fetch_time, fetch_interval=interval,
                       metadata=meta)


# -- the rules ------------------------------------------------------------------------------

@pytest.mark.parametrize('record, expected', [
    (datum('db_unfetched', NOW), 0),                      # never fetched: 0, whatever its time
    (datum('db_fetched', NOW), NOW - H * 1000),
    (datum('db_gone', NOW, interval=2 * H), NOW - 2 * H * 1000),
    (datum('db_notmodified', 5000, interval=10), -5000),
])
def test_last_fetch_time(record, expected):
    assert last_fetch_time(record) == expected


@pytest.mark.parametrize('candidate, kept, newer', [
    (datum('db_fetched', NOW), datum('db_unfetched', NOW + DAY), True),    # fetched beats due
    (datum('db_fetched', NOW), datum('db_fetched', NOW + 1000), False),
    (datum('db_fetched', NOW + 1000), datum('db_fetched', NOW), True),
    # the same last fetch time: the greater fetch time wins
    (datum('db_fetched', NOW + H * 1000, interval=2 * H), datum('db_fetched', NOW), True),
    (datum('db_unfetched', NOW + 1), datum('db_unfetched', NOW), True),
    (datum('db_unfetched', NOW), datum('db_unfetched', NOW), False),        # equal: kept stays
])
def test_is_newer(candidate, kept, newer):
    assert is_newer(candidate, kept) is newer


@pytest.mark.parametrize('records, status, metadata', [
    # newest wins; the metadata of all, the newer value winning, whatever the order
    ([datum('db_unfetched', NOW, a='old', only_old='1'), datum('db_fetched', NOW, a='new')],
     'db_fetched', {'a': 'new', 'only_old': '1'}),
    ([datum('db_fetched', NOW, a='new'), datum('db_unfetched', NOW, a='old', only_old='1')],
     'db_fetched', {'a': 'new', 'only_old': '1'}),
    # three records, the newest in the middle
    ([datum('db_gone', NOW - DAY, a='1', b='1'), datum('db_fetched', NOW, a='2'),
      datum('db_notmodified', NOW - 2 * DAY, b='3', c='3')],
     'db_fetched', {'a': '2', 'b': '1', 'c': '3'}),
    # equally new: the first in input order stays (its metadata wins too)
    ([datum('db_fetched', NOW, a='first'), datum('db_gone', NOW, a='second')],
     'db_fetched', {'a': 'first'}),
    ([datum('db_redir_perm', NOW)], 'db_redir_perm', {}),
])
def test_merge_datums(records, status, metadata):
    merged = merge_datums(records)
    assert merged['status'] == status and merged['metadata'] == metadata


def test_merge_datums_leaves_its_inputs_alone():
    a, b = datum('db_unfetched', NOW, k='a'), datum('db_fetched', NOW, k='b')
    merge_datums([a, b])
    assert a['metadata'] == {'k': 'a'} and b['metadata'] == {'k': 'b'}


@pytest.mark.parametrize('lists, cap, expected', [
    ([[('http://b/', 'x')], [('http://a/', 'y')]], 10, [('http://a/', 'y'), ('http://b/', 'x')]),
    ([[('http://a/', 'y')], [('http://a/', 'y')]], 10, [('http://a/', 'y')]),      # a set
    ([[('http://c/', '')], [('http://a/', ''), ('http://b/', '')]], 2,
     [('http://a/', ''), ('http://b/', '')]),                      # capped as invertlinks caps
    ([[('http://a/', '1'), ('http://a/', '2')]], -1, [('http://a/', '1'), ('http://a/', '2')]),
    ([[], []], 10, []),
])
def test_merge_inlinks(lists, cap, expected):
    assert merge_inlinks(lists, cap) == expected


def rec(status, fetch_time=NOW, protocol_status=None, **meta):
    return crawl_datum('http://x.test/', status, fetch_time=fetch_time, fetch_interval=H,
                       metadata=meta, protocol_status=protocol_status)


S1, S2, S3 = '20261101000000', '20261102000000', '20261103000000'
CONTENT = {'url': 'http://x.test/', 'content': b''}


@pytest.mark.parametrize('items, expected', [
    # the newest segment's record per part, whatever the input order
    ([(S2, 'crawl_generate', rec('db_unfetched', g='2')),
      (S1, 'crawl_generate', rec('db_unfetched', g='1')),
      (S3, 'content', dict(CONTENT, n=3)), (S1, 'content', dict(CONTENT, n=1))],
     {'crawl_generate': [rec('db_unfetched', g='2')], 'content': [dict(CONTENT, n=3)]}),
    # crawl_fetch: the fetch updatedb would pick (the newest fetch; of equal times an attempt)
    ([(S1, 'crawl_fetch', rec('fetch_success', NOW)),
      (S2, 'crawl_fetch', rec('fetch_retry', NOW + 1))],
     {'crawl_fetch': [rec('fetch_retry', NOW + 1)]}),
    ([(S2, 'crawl_fetch', rec('fetch_retry', NOW, 'notfetching')),
      (S1, 'crawl_fetch', rec('fetch_success', NOW))],
     {'crawl_fetch': [rec('fetch_success', NOW)]}),
    # linked records: every one of every segment kept (two alike are two links, each adding
    # its score); the newest signature
    ([(S1, 'crawl_parse', rec('linked', a='1')), (S2, 'crawl_parse', rec('linked', a='2')),
      (S2, 'crawl_parse', rec('linked', a='2')), (S1, 'crawl_parse', rec('signature', s='1')),
      (S2, 'crawl_parse', rec('signature', s='2')), (S1, 'crawl_fetch', rec('linked', r='1'))],
     {'crawl_parse': [rec('signature', s='2'), rec('linked', a='1'), rec('linked', a='2'),
                      rec('linked', a='2')],
      'crawl_fetch': [rec('linked', r='1')]}),
    ([], {}),
])
def test_merge_segment_url(items, expected):
    assert merge_segment_url(items) == expected


@pytest.mark.parametrize('rank, size, expected', [
    (0, 0, 0), (99, 0, 0), (0, 2, 0), (1, 2, 0), (2, 2, 1), (5, 2, 2), (7, 1, 7)])
def test_slice_of(rank, size, expected):
    assert slice_of(rank, size) == expected


# -- crawls of the test web -----------------------------------------------------------------

def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.0',
            '-D', 'domain.extra.suffixes=test']


SEEDS = ['http://www.a.test/', 'http://b.test/', 'http://www.a.test/page1.html',
         'http://b.test/old', 'http://b.test/gone']


@pytest.fixture(scope='module')
def crawls(testweb, tmp_path_factory):
    """`one`: one round (inject, generate, fetch, parse, updatedb, invertlinks); `two`: the
    same crawl one round later, with one more seed; `split`: the seeds generated into two
    segments (3 and 2 URLs), both fetched and parsed, neither applied."""
    root = tmp_path_factory.mktemp('merge')
    conf = _conf(testweb)
    seeds = write_seeds(root / 'seeds', SEEDS)
    one = str(root / 'one')
    assert main(['inject', one, seeds, '--now', str(NOW), *conf]) == 0
    for step in ('generate', 'fetch', 'parse', 'updatedb', 'invertlinks'):
        assert main([step, one, '--now', str(NOW), *conf]) == 0
    two = str(root / 'two')
    shutil.copytree(one, two)
    later = str(NOW + 40 * DAY)
    assert main(['inject', two, write_seeds(root / 'more', ['http://b.test/error']),
                 '--now', later, *conf]) == 0
    for step in ('generate', 'fetch', 'parse', 'updatedb', 'invertlinks'):
        assert main([step, two, '--now', later, *conf]) == 0
    split = str(root / 'split')
    assert main(['inject', split, seeds, '--now', str(NOW), *conf]) == 0
    assert main(['generate', split, '--now', str(NOW), '--top-n', '3', '--max-num-segments',
                 '2', *conf]) == 0
    for _ in range(2):
        for step in ('fetch', 'parse'):
            assert main([step, split, '--now', str(NOW), *conf]) == 0
    return {'one': one, 'two': two, 'split': split, 'root': root, 'conf': conf}


def _copy(crawls, name, tmp_path):
    target = str(tmp_path / name)
    shutil.copytree(crawls[name], target)
    return target


def _stats(crawl, capsys):
    capsys.readouterr()
    assert main(['readdb', crawl, '--stats']) == 0
    return capsys.readouterr().out


def _tree(root):
    """Every file under root with a digest of its bytes (to show nothing was changed)."""
    out = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            out[os.path.relpath(path, root)] = hashlib.sha1(open(path, 'rb').read()).hexdigest()
    return out


def _expected_merge(older, newer):
    """What mergedb must give for two crawldbs of which `newer` is the later state of the same
    crawl: its record for each URL (each is at least as new), the older's metadata keys kept."""
    out = {}
    for url in set(older) | set(newer):
        if url not in newer:
            out[url] = older[url]
        elif url not in older:
            out[url] = newer[url]
        else:
            out[url] = dict(newer[url], metadata={**older[url]['metadata'],
                                                  **newer[url]['metadata']})
    return out


def test_mergedb_keeps_the_newer_record_per_url(crawls, tmp_path, capsys):
    one, two = crawls['one'], crawls['two']
    old, new = read_db(one), read_db(two)
    assert any(old[u] != new[u] for u in old)          # round two changed records
    assert set(new) - set(old)                          # and added URLs
    target = _copy(crawls, 'one', tmp_path)
    inputs_before = _tree(two)
    assert main(['mergedb', target, two]) == 0
    assert read_db(target) == _expected_merge(old, new)
    assert _stats(target, capsys) == _stats(two, capsys).replace(two, target)
    assert _tree(two) == inputs_before                 # the input is only read
    # the other way round, naming the crawldb directory itself, into a new crawl directory
    out = str(tmp_path / 'merged')
    assert main(['mergedb', two, os.path.join(one, 'crawldb'), '--out', out]) == 0
    assert read_db(out) == _expected_merge(old, new)
    assert _tree(two) == inputs_before


def test_mergedb_filters_and_purges(crawls, tmp_path):
    target = _copy(crawls, 'one', tmp_path)
    rules = tmp_path / 'only-a.txt'
    rules.write_text('-^http://b\\.test/\n+.\n')
    assert main(['mergedb', target, crawls['two'], '--filter', '-D',
                 f'urlfilter.regex.file={rules}', '-D', 'db.update.purge.404=true']) == 0
    # each input's records are filtered and purged before the merge, as Nutch's CrawlDbFilter
    # does: a URL gone in one crawl may come back from the other
    kept = lambda db: {u: r for u, r in db.items()  # noqa: E731
                       if not u.startswith('http://b.test/') and r['status'] != 'db_gone'}
    merged = read_db(target)
    assert merged == _expected_merge(kept(read_db(crawls['one'])), kept(read_db(crawls['two'])))
    assert merged and all(not u.startswith('http://b.test/') for u in merged)


def _write_linkdb(directory, records):
    write_avro_file(os.path.join(directory, 'current', 'part-00000.avro'), INLINKS_SCHEMA,
                    records)


def _linkdb(crawl):
    return {r['url']: [(i['from_url'], i['anchor']) for i in r['inlinks']]
            for r in iter_records(CrawlLayout(crawl).linkdb.part_files())}


def test_mergelinkdb_unions_the_inlinks(crawls, tmp_path):
    target = _copy(crawls, 'one', tmp_path)
    own = _linkdb(target)
    assert own                                          # the crawl's own links
    other = str(tmp_path / 'other-linkdb')
    some_url = sorted(own)[0]
    _write_linkdb(other, [inlinks(some_url, [('http://z.test/', 'zed'), ('http://0.test/', '')]),
                          inlinks('http://new.test/', [('http://z.test/', 'new')])])
    assert main(['mergelinkdb', target, other]) == 0
    merged = _linkdb(target)
    expected = dict(own)
    expected[some_url] = sorted(set(own[some_url]) | {('http://z.test/', 'zed'),
                                                      ('http://0.test/', '')})
    expected['http://new.test/'] = [('http://z.test/', 'new')]
    assert merged == expected
    # capped at linkdb.max.inlinks: the smallest pairs stay, as invertlinks keeps them
    again = _copy(crawls, 'one', tmp_path / 'b')
    assert main(['mergelinkdb', again, other, '-D', 'linkdb.max.inlinks=1']) == 0
    assert _linkdb(again)[some_url] == [min(expected[some_url])]


def _segments_urls(crawl, names):
    layout = CrawlLayout(crawl)
    return {r['url'] for n in names for part in ('crawl_generate', 'crawl_fetch', 'content',
                                                 'parse_text', 'parse_data', 'crawl_parse')
            for r in iter_records(layout.part_files(n, part))}


def test_mergesegs_gives_updatedb_and_invertlinks_the_same_results(crawls, tmp_path, capsys):
    both = _copy(crawls, 'split', tmp_path)
    merged = str(tmp_path / 'merged')
    shutil.copytree(crawls['split'], merged)
    names = CrawlLayout(merged).segment_names()
    assert len(names) == 2
    before = _tree(os.path.join(merged, 'segments'))
    capsys.readouterr()
    assert main(['mergesegs', merged, *names, '--now', str(NOW + DAY)]) == 0
    (path,) = capsys.readouterr().out.split()
    new = os.path.basename(path)
    assert new not in names and sorted(CrawlLayout(merged).segment_names()) == sorted(names + [new])
    after = _tree(os.path.join(merged, 'segments'))
    assert {k: v for k, v in after.items() if not k.startswith(new)} == before   # inputs kept
    # readseg lists it: what its inputs list, together (their URLs are distinct)
    assert main(['readseg', merged, '--list']) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    counts = lambda row: (int(row[1]), int(row[4]), int(row[5]))  # noqa: E731
    assert counts(rows[new]) == tuple(map(sum, zip(*(counts(rows[n]) for n in names))))
    assert counts(rows[new])[0] == len(SEEDS)
    conf = crawls['conf']
    assert main(['updatedb', both, *names, '--now', str(NOW + DAY), *conf]) == 0
    assert main(['invertlinks', both, *names, *conf]) == 0
    assert main(['updatedb', merged, new, '--now', str(NOW + DAY), *conf]) == 0
    assert main(['invertlinks', merged, new, *conf]) == 0
    assert read_db(merged) == read_db(both)
    assert _linkdb(merged) == _linkdb(both) and _linkdb(both)
    assert _stats(merged, capsys) == _stats(both, capsys).replace(both, merged)


@pytest.mark.parametrize('size', [1, 2, 4])
def test_mergesegs_slices(crawls, tmp_path, capsys, size):
    crawl = _copy(crawls, 'split', tmp_path)
    names = CrawlLayout(crawl).segment_names()
    urls = _segments_urls(crawl, names)
    capsys.readouterr()
    assert main(['mergesegs', crawl, '--slice', str(size), '--now', str(NOW + DAY)]) == 0
    made = [os.path.basename(p) for p in capsys.readouterr().out.split()]
    assert len(made) == math.ceil(len(urls) / size)
    per_slice = [_segments_urls(crawl, [n]) for n in made]
    assert [len(s) for s in per_slice[:-1]] == [size] * (len(made) - 1)
    assert 0 < len(per_slice[-1]) <= size
    assert set().union(*per_slice) == urls and sum(map(len, per_slice)) == len(urls)
    assert sorted(made) == made and made[0] > names[-1]         # named as generate names them


def test_mergesegs_normalizes_and_filters(crawls, tmp_path, capsys):
    crawl = _copy(crawls, 'split', tmp_path)
    names = CrawlLayout(crawl).segment_names()
    rules = tmp_path / 'no-b.txt'
    rules.write_text('-^http://b\\.test/\n+.\n')
    capsys.readouterr()
    assert main(['mergesegs', crawl, *names, '--filter', '--normalize', '--now',
                 str(NOW + DAY), '-D', f'urlfilter.regex.file={rules}']) == 0
    (path,) = capsys.readouterr().out.split()
    urls = _segments_urls(crawl, [os.path.basename(path)])
    assert urls == {u for u in _segments_urls(crawl, names) if not u.startswith('http://b.test/')}


def test_mergesegs_of_segments_without_common_parts_merges_what_they_share(crawls, tmp_path,
                                                                           capsys):
    crawl = _copy(crawls, 'one', tmp_path)
    assert main(['generate', crawl, '--now', str(NOW + 40 * DAY), *crawls['conf']]) == 0
    names = CrawlLayout(crawl).segment_names()
    capsys.readouterr()
    assert main(['mergesegs', crawl, '--now', str(NOW + 41 * DAY)]) == 0
    (path,) = capsys.readouterr().out.split()
    assert sorted(os.listdir(path)) == ['_merged_from', 'crawl_generate']   # Nutch's rule
    assert open(os.path.join(path, '_merged_from')).read().split() == names
    generated = {r['url'] for n in names
                 for r in iter_records(CrawlLayout(crawl).part_files(n, 'crawl_generate'))}
    assert {r['url'] for r in iter_records(CrawlLayout(crawl).part_files(
        os.path.basename(path), 'crawl_generate'))} == generated


def test_freegen_fetch_parse_updatedb(testweb, tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    urls = tmp_path / 'urls'
    urls.mkdir()
    write_seeds(urls / 'a.txt', ['http://www.a.test/', 'http://b.test/', 'not a url'])
    write_seeds(urls / 'b.txt', ['http://b.test/', '# a comment', 'http://c.test/skipped'])
    rules = tmp_path / 'no-c.txt'
    rules.write_text('-^http://c\\.test/\n+.\n')
    conf = _conf(testweb)
    capsys.readouterr()
    assert main(['freegen', crawl, str(urls), '--filter', '--num-fetchers', '2', '--now',
                 str(NOW), '-D', f'urlfilter.regex.file={rules}', *conf]) == 0
    (path,) = capsys.readouterr().out.split()
    layout = CrawlLayout(crawl)
    segment = os.path.basename(path)
    assert layout.crawldb.readable_dir() is None                 # no crawldb was needed
    parts = layout.part_files(segment, 'crawl_generate')
    assert len(parts) == 2
    generated = list(iter_records(parts))
    assert sorted(r['url'] for r in generated) == ['http://b.test/', 'http://www.a.test/']
    assert all(r['status'] == 'db_unfetched' and r['metadata']['_ngt_'] == str(NOW)
               for r in generated)
    for step in ('fetch', 'parse', 'updatedb'):
        assert main([step, crawl, '--now', str(NOW), *conf]) == 0
    db = read_db(crawl)
    assert db['http://www.a.test/']['status'] == 'db_fetched'
    assert db['http://b.test/']['status'] == 'db_fetched'
    assert db['http://www.a.test/page1.html']['status'] == 'db_unfetched'    # an outlink


def test_freegen_with_no_url_left_makes_no_segment(tmp_path):
    crawl = str(tmp_path / 'crawl')
    urls = write_seeds(tmp_path / 'urls', ['# nothing', ''])
    proc = run_cli('freegen', crawl, urls, check=False)
    assert proc.returncode == 1 and 'no segment made' in proc.stderr
    assert not CrawlLayout(crawl).segment_names()


# -- foreign and wrong input ----------------------------------------------------------------

def _one_line_exit_2(proc):
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize('command', ['mergedb', 'mergelinkdb'])
def test_a_nutch_crawl_as_input_is_refused_and_left_alone(crawls, tmp_path, command):
    nutch = _nutch_crawl(str(tmp_path / 'nutch'))
    target = _copy(crawls, 'one', tmp_path)
    before, ours = _snapshot(nutch), _tree(target)
    for given in (nutch, os.path.join(nutch, 'crawldb' if command == 'mergedb' else 'linkdb')):
        line = _one_line_exit_2(run_cli(command, target, given, check=False))
        assert "in Nutch's (Hadoop) format" in line
    assert _snapshot(nutch) == before and _tree(target) == ours


@pytest.mark.parametrize('args, message', [
    (['mergedb', 'CRAWL', 'FILE'], 'is a file, not a crawl directory or a crawldb'),
    (['mergedb', 'CRAWL', 'MISSING'], 'no such crawl directory or crawldb'),
    (['mergelinkdb', 'CRAWL', 'EMPTY'], 'has no linkdb'),
    (['mergedb', 'CRAWL', 'CRAWL', '--out', 'CRAWL'], 'already has a crawldb'),
    (['mergesegs', 'CRAWL', '--slice', '0'], '--slice: expected a positive number'),
    (['mergesegs', 'CRAWL', '20200101000000'], 'no such segment'),
    (['mergesegs', 'CRAWL', '--out', 'NUTCH'], "in Nutch's (Hadoop) format"),
    (['mergesegs', 'NUTCH'], "in Nutch's (Hadoop) format"),
    (['freegen', 'CRAWL', 'FILE'], 'not a text file of seed URLs'),
    (['freegen', 'NUTCH', 'URLS'], "in Nutch's (Hadoop) format"),
])
def test_wrong_input_is_one_line_and_changes_nothing(crawls, tmp_path, args, message):
    crawl = _copy(crawls, 'one', tmp_path)
    nutch = _nutch_crawl(str(tmp_path / 'nutch'))
    binary = tmp_path / 'file'
    binary.write_bytes(b'SEQ\x06\x00\x01')
    empty = tmp_path / 'empty'
    empty.mkdir()
    names = {'CRAWL': crawl, 'FILE': str(binary), 'MISSING': str(tmp_path / 'missing'),
             'EMPTY': str(empty), 'NUTCH': nutch,
             'URLS': write_seeds(tmp_path / 'urls', ['http://x.test/'])}
    before, nutch_before = _tree(crawl), _snapshot(nutch)
    line = _one_line_exit_2(run_cli(*[names.get(a, a) for a in args], check=False))
    assert message in line
    assert _tree(crawl) == before and _snapshot(nutch) == nutch_before


def test_updatedb_applies_a_merged_segment_or_its_inputs_never_both(crawls, tmp_path, capsys):
    conf = crawls['conf']
    crawl = _copy(crawls, 'split', tmp_path)
    names = CrawlLayout(crawl).segment_names()
    capsys.readouterr()
    assert main(['mergesegs', crawl, '--now', str(NOW + DAY)]) == 0
    merged = os.path.basename(capsys.readouterr().out.strip())
    # its inputs are here, not applied: updatedb applies them, not the merged segment
    assert main(['updatedb', crawl, '--now', str(NOW + DAY), *conf]) == 0
    assert f'applied {", ".join(names)};' in capsys.readouterr().out
    # every input applied: nothing left to do
    assert run_cli('updatedb', crawl, '--now', str(NOW + DAY), check=False).returncode == 1
    # the inputs removed before they were applied: the merged segment is applied
    other = _copy(crawls, 'split', tmp_path / 'b')
    assert main(['mergesegs', other, '--now', str(NOW + DAY)]) == 0
    for name in names:
        shutil.rmtree(os.path.join(other, 'segments', name))
    capsys.readouterr()
    assert main(['updatedb', other, '--now', str(NOW + DAY), *conf]) == 0
    assert f'applied {merged};' in capsys.readouterr().out
    assert read_db(other) == read_db(crawl)


def test_with_out_the_crawl_dir_is_only_read_and_the_settings_go_to_the_new_one(crawls,
                                                                               tmp_path):
    source = _copy(crawls, 'one', tmp_path)
    os.remove(os.path.join(source, 'crawl-conf.yaml'))     # nothing recorded: -D would be
    before = _tree(source)
    out = str(tmp_path / 'new')
    assert main(['mergedb', source, crawls['two'], '--out', out, '-D',
                 'db.preserve.backup=true']) == 0
    assert _tree(source) == before
    assert 'db.preserve.backup: true' in open(os.path.join(out, 'crawl-conf.yaml')).read()
    assert main(['mergesegs', source, '--out', out, '-D', 'db.preserve.backup=true',
                 '--now', str(NOW + DAY)]) == 0
    assert _tree(source) == before and CrawlLayout(out).segment_names()
