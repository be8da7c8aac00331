"""storage/_datums.c against its Python oracles: records cut into partitions and sorted as runs
(storage/datumruns.py), a part merged with its replacements (engine/reducers.py), a keys file's
URLs, a URL's scheme and host; and hostile input, which gives None or an exception, never a
wrong answer or a crash. (The block decoders and encoders are tested on both codecs in
tests/test_datumcodec.py.)"""

import bisect
import os
import random
import zlib

import pytest

from beamcrawl.transforms.policy import urlparts
from beamcrawl.transforms.storage import datumcodec, datumruns, native
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.records import DB_STATUSES, STATUSES, crawl_datum
from tests import workloads
from tests.conftest import logged_counters, run_cli

pytestmark = pytest.mark.unit

C = native.codec
NOW = 1795305600000


def test_the_c_loops_are_built():
    assert C is not None, f'the C codec is {native.missing()}'


def _records(rnd, n, dup=0.0):
    out = []
    for i in range(n):
        url = f'http://h{rnd.randrange(50)}.test/{rnd.choice("abcé")}{rnd.randrange(10**6)}'
        if out and rnd.random() < dup:
            url = rnd.choice(out)['url']
        record = crawl_datum(url, rnd.choice(STATUSES), fetch_time=NOW - rnd.randrange(10**9),
                             fetch_interval=rnd.randrange(1, 10**7), score=rnd.randrange(64) / 8)
        if rnd.random() < 0.2:
            record['metadata'] = {f'k{j}': 'v' * j for j in range(rnd.randrange(1, 4))}
        if rnd.random() < 0.3:
            record['signature'] = rnd.randbytes(16)
        out.append(record)
    return out


def _runs_oracle(records, keep, n):
    """partition() in Python: records whose status is kept, by crc32(url) mod n, framed."""
    runs = [bytearray() for _ in range(n)]
    counts = [0] * n
    for record in records:
        if record['status'] not in keep:
            continue
        raw = datumcodec.encode_datum(record)
        p = zlib.crc32(record['url'].encode('utf-8')) % n
        runs[p] += len(raw).to_bytes(4, 'little') + raw
        counts[p] += 1
    return [bytes(r) for r in runs], counts


@pytest.mark.parametrize('seed', range(4))
def test_partition_cuts_a_block_as_the_python_oracle(seed):
    rnd = random.Random(seed)
    records = _records(rnd, 300)
    data = b''.join(datumcodec.encode_datum(r) for r in records)
    keep = set(rnd.sample(sorted(STATUSES), 9))
    n = rnd.choice([1, 2, 7, 8])
    conv = datumruns.conversion(datumcodec.parsed_datum_schema())
    runs, counts = C.partition(data, len(records), conv, datumruns.keep_mask(keep), n)
    assert (runs, counts) == _runs_oracle(records, keep, n)
    assert C.partition(data, len(records) + 1, conv, datumruns.keep_mask(keep), n) is None
    assert C.partition(data[:-1], len(records), conv, datumruns.keep_mask(keep), n) is None


@pytest.mark.parametrize('seed', range(4))
def test_sorted_run_sorts_as_python_does(seed):
    rnd = random.Random(seed)
    records = _records(rnd, 500, dup=0.05 if seed % 2 else 0.0)
    keep = set(STATUSES)
    runs = []
    for start in range(0, 500, 125):                # four runs, as four units give
        runs += [r for r in _runs_oracle(records[start:start + 125], keep, 1)[0] if r]
    run = datumruns.sorted_run(runs)
    expected = sorted(((r['url'], i, r) for i, r in enumerate(records)),
                      key=lambda t: (t[0].encode('utf-8'), t[1]))
    assert run.keys.urls == [t[0] for t in expected]
    assert [datumcodec.decode_datum(raw) for _, _, raw in run.records()] == \
        [t[2] for t in expected]
    assert [status for _, status, _ in run.records()] == [t[2]['status'] for t in expected]
    assert run.once == (len({r['url'] for r in records}) == len(records))
    assert sum(run.keys.lengths) == len(run.data)


def _merge_oracle(old, new, decisions):
    """merge() in Python: old [(url, status index, raw)] sorted, new sorted URLs with their
    decisions (raw, status index) or None."""
    replaced = dict(zip(new, decisions))
    out, copied = [], [0] * 256
    for url in sorted({u for u, _, _ in old} | set(new)):
        if url in replaced:
            if replaced[url] is not None:
                out.append((url, replaced[url][1], replaced[url][0]))
        else:
            entry = next(e for e in old if e[0] == url)
            out.append(entry)
            copied[entry[1]] += 1
    return out, copied


@pytest.mark.parametrize('seed', range(6))
def test_merge_puts_the_replacements_in_as_the_python_oracle(seed):
    rnd = random.Random(seed)
    old = sorted({f'http://a.test/{rnd.randrange(300)}' for _ in range(150)})
    old = [(u, rnd.randrange(4), rnd.randbytes(rnd.randrange(1, 30))) for u in old]
    urls = [u for u, _, _ in old]
    new = sorted(set(rnd.sample(urls, min(40, len(urls)))) |
                 {f'http://a.test/{rnd.randrange(300)}x' for _ in range(30)})
    decisions = [None if rnd.random() < 0.2 else (rnd.randbytes(rnd.randrange(1, 20)),
                                                  rnd.randrange(6)) for _ in new]
    at, matched = C.lookup(urls, new)
    assert list(at) == [bisect.bisect_left(urls, u) for u in new]
    assert list(matched) == [int(u in set(urls)) for u in new]
    lengths = b''.join(len(r).to_bytes(4, 'little') for _, _, r in old)
    got = C.merge(urls, bytes(s for _, s, _ in old), lengths, b''.join(r for _, _, r in old),
                  new, at, matched, [d and d[0] for d in decisions],
                  bytes(d[1] if d else 0 for d in decisions))
    out_urls, out_status, out_lengths, data, copied = got
    expected, expected_copied = _merge_oracle(old, new, decisions)
    assert out_urls == [u for u, _, _ in expected]
    assert list(out_status) == [s for _, s, _ in expected]
    assert data == b''.join(r for _, _, r in expected)
    assert list(datumruns.u32_array(out_lengths)) == [len(r) for _, _, r in expected]
    assert copied == expected_copied
    groups = {u: [u] for u in new}
    joined, at2, matched2 = C.join(urls, ['s0', 's1', 's2', 's3'], bytes(s for _, s, _ in old),
                                   lengths, b''.join(r for _, _, r in old), new, groups)
    assert (at2, matched2) == (at, matched)
    by_url = {u: (s, r) for u, s, r in old}
    assert joined == [(u, f's{by_url[u][0]}', by_url[u][1], None, [u]) if u in by_url
                      else (u, None, None, None, [u]) for u in new]


def test_merge_refuses_what_does_not_fit():
    urls, lengths = ['a', 'b'], (3).to_bytes(4, 'little') * 2
    with pytest.raises(ValueError):          # the data shorter than the lengths say
        C.merge(urls, b'\x00\x00', lengths, b'xyz', [], [], b'', [], b'')
    with pytest.raises(ValueError):          # positions that go back
        C.merge(urls, b'\x00\x00', lengths, b'xyzuvw', ['a', 'b'], [1, 0], b'\x00\x00',
                [None, None], b'\x00\x00')
    with pytest.raises(ValueError):
        C.join(urls, ['s'], b'\x00\x05', lengths, b'xyzuvw', ['b'], {'b': []})   # no status 5


def test_slices_cut_a_keys_files_urls():
    urls = ['http://a/', 'http://é.test/ü', '', 'x']
    lengths = b''.join(len(u).to_bytes(4, 'little') for u in urls)
    assert C.slices(''.join(urls), lengths) == urls
    with pytest.raises(ValueError):
        C.slices('short', (9).to_bytes(4, 'little'))


_PIECES = ['http', 'HTTPS', 'ftp', 'a+b', '1x', '', ':', '//', '/', '@', 'user', 'pa:ss', 'Host',
           'example.COM', '[::1]', '[', ']', '?', '#', '8080', 'é', ' ', '.', 'x' * 3, '\n']


def test_scheme_host_is_the_regex_fast_path():
    rnd = random.Random(5)
    fast = urlparts._FAST_AUTHORITY
    seen = 0
    for _ in range(20000):
        url = ''.join(rnd.choice(_PIECES) for _ in range(rnd.randrange(1, 9))) \
            if rnd.random() < 0.3 else ''.join((
                rnd.choice(['http', 'HTTPS', 'a+b.c-d', '1x', '', 'é']),
                rnd.choice(['://', '://', ':/', '//']),
                rnd.choice(['', '', 'user@', 'u:p@', '@', 'a@b@']),
                rnd.choice(['example.COM', 'Host', '', '[::1]', 'é.test', 'a b', 'h\n']),
                rnd.choice(['', ':80', '/p', '?q', '#f', '@x', '[', ']', '/a@b', ':'])))
        got = C.scheme_host(url)
        m = fast.match(url)
        ok = m is not None and (m.end() == len(url) or url[m.end()] in ':/?#')
        if got is not None:
            seen += 1
            assert ok and got == (m.group(1).lower(), m.group(2).lower()), url
        else:
            assert not ok or not url.isascii(), url
        assert urlparts.scheme_host(url) == _python_scheme_host(url), url
    assert seen > 1000


def _python_scheme_host(url):
    c, urlparts._c = urlparts._c, None
    try:
        return urlparts.scheme_host(url)
    finally:
        urlparts._c = c


def test_hostile_blocks_give_none_or_an_error_never_a_crash():
    rnd = random.Random(11)
    records = _records(rnd, 40)
    data = b''.join(datumcodec.encode_datum(r) for r in records)
    conv = datumruns.conversion(datumcodec.parsed_datum_schema())
    layout = datumcodec._c_layout(datumcodec._OWN_LAYOUT)
    keep = datumruns.keep_mask(DB_STATUSES)
    for _ in range(3000):
        garbled = bytearray(data)
        for _ in range(rnd.randrange(1, 6)):
            garbled[rnd.randrange(len(garbled))] = rnd.randrange(256)
        garbled = bytes(garbled[:rnd.randrange(len(garbled) + 1)])
        for call in (lambda: C.split(garbled, 40, conv),
                     lambda: C.decode(garbled, 40, layout, True),
                     lambda: C.partition(garbled, 40, conv, keep, 3),
                     lambda: C.decode_own(garbled),
                     lambda: C.score_offset(garbled)):
            try:
                call()
            except (ValueError, TypeError, OverflowError):
                pass
        framed = len(garbled).to_bytes(4, 'little') + garbled
        try:
            C.sorted_run([framed, garbled])
        except ValueError:
            pass


@pytest.mark.parametrize('native_db', [True, False, 'contract'])
def test_the_c_and_python_loops_write_the_same_crawldbs(tmp_path, native_db):
    """updatedb with the C loops (the runs, the merge: the default) and without them
    (BEAMCRAWL_NATIVE=0), on a crawldb partitioned the engine's way with keys files, one mapped
    whole, and one in another writer's schema, in two worker processes: the same records, the
    same counters, the same part sizes (the blocks end at the same records); then the same
    segment once more, on the crawldbs each wrote."""
    out = {}
    for mode in ('c', 'python'):
        crawl = str(tmp_path / mode)
        workloads.update_workload(crawl, native_db, n=3000, keys=True)
        env = {'BEAMCRAWL_NATIVE': '0'} if mode == 'python' else None
        runs = []
        for _ in range(2):
            proc = run_cli('updatedb', crawl, '20261122000000', '--now', str(workloads.NOW), '-D',
                           'crawldb.partitions=3', *workloads.PARALLEL, env=env)
            parts = workloads.crawldb_parts(crawl)
            runs.append(([list(iter_records([p])) for p in parts],
                         [os.path.getsize(p) for p in parts],
                         {k: v for k, v in logged_counters(proc.stderr).items()
                          if k.startswith('updatedb.')}))
        out[mode] = runs
    assert out['c'] == out['python']
    assert out['c'][0][2]['updatedb.added'] > 0 and out['c'][1][2]['updatedb.updated'] > 0


def test_a_keyed_parts_present_statuses_are_those_its_records_have():
    """A part merged from runs keeps their table of every status; whether the join may copy
    its untouched records (copies_unchanged) is asked of the statuses its records have."""
    from beamcrawl.transforms.engine.reducers import _present
    from beamcrawl.transforms.storage.keysfile import Keys
    table = ['db_unfetched', 'db_fetched', 'fetch_success', 'linked']
    for index, present in ((b'\x00\x01\x01', ['db_unfetched', 'db_fetched']),
                           (b'\x03', ['linked']), (b'', []),
                           (b'\x02\x00', ['db_unfetched', 'fetch_success'])):
        keys = Keys(['u'] * len(index), index, table, [1] * len(index), [len(index)])
        assert _present(keys) == present
