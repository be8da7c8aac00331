"""The merge joins of an old sorted part with new groups, with and without keys files."""

import random

import pytest

from beamcrawl.transforms.engine import joins
from beamcrawl.transforms.storage import container, keysfile, partwriter
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from tests.workloads import NOW, datums


@pytest.mark.parametrize('old, new, expected', [
    ([], ['b', 'a'], [('a', None, 'A'), ('b', None, 'B')]),
    (['a', 'c'], [], [('a', 'a', None), ('c', 'c', None)]),
    (['b', 'd'], ['a', 'b', 'c', 'e'],
     [('a', None, 'A'), ('b', 'b', 'B'), ('c', None, 'C'), ('d', 'd', None), ('e', None, 'E')]),
])
def test_join_sorted(old, new, expected):
    joined = joins.join_sorted(((u, 's', b'raw', None) for u in old),
                              {u: u.upper() for u in new})
    assert [(u, u if raw else None, v) for u, _, raw, _, v in joined] == expected


def test_join_sorted_refuses_an_old_part_out_of_order():
    with pytest.raises(joins.Unsorted):
        list(joins.join_sorted(((u, '', b'', None) for u in ['a', 'c', 'b']), {'b': 1}))
    with pytest.raises(joins.Unsorted):
        list(joins.join_sorted(((u, '', b'', None) for u in ['a', 'a']), {}))


def _write_join(entries, path):
    """Writes what a reducer would: a touched or new URL as a fresh record, an untouched one
    as its bytes."""
    with partwriter.PartWriter(path, CRAWL_DATUM_SCHEMA, keys=True) as out:
        for url, status, raw, _, values in entries(out):
            if values is None:
                out.write_raw(raw, url, status)
            else:
                out.write(crawl_datum(url, 'db_fetched', fetch_time=NOW, fetch_interval=1,
                                      score=float(len(values)),
                                      metadata={'was': status or 'new'}))


@pytest.mark.parametrize('seed', range(12))
def test_join_keyed_writes_what_the_record_by_record_join_writes(tmp_path, seed):
    rnd = random.Random(seed)
    records = sorted(datums(rnd.choice([0, 1, 5, 900, 3000]), seed), key=lambda r: r['url'])
    old = str(tmp_path / 'part-00000.avro')
    with partwriter.PartWriter(old, CRAWL_DATUM_SCHEMA, keys=True) as out:
        for record in records:
            out.write(record)
    urls = [r['url'] for r in records]
    touched = rnd.sample(urls, rnd.randint(0, len(urls)))
    news = [f'http://h{j % 7}.test/{rnd.choice("aqz")}/{j}' for j in range(rnd.randint(0, 200))]
    groups = {url: ['v'] * rnd.randint(1, 3) for url in touched + news}
    part = keysfile.open_keyed(old)
    copied = bytearray()
    _write_join(lambda out: joins.join_keyed(part, groups, out, copied),
                str(tmp_path / 'keyed.avro'))
    _write_join(lambda out: joins.join_sorted(
        ((u, s, raw, None) for u, s, raw in keysfile.read_keyed(old)), groups),
        str(tmp_path / 'sorted.avro'))
    keyed, by_record = (list(container.read_records(str(tmp_path / name)))
                        for name in ('keyed.avro', 'sorted.avro'))
    assert keyed == by_record
    assert len(keyed) == len(set(urls) | set(groups))
    assert list(keysfile.read_keyed(str(tmp_path / 'keyed.avro'))) == \
        list(keysfile.read_keyed(str(tmp_path / 'sorted.avro')))
    untouched = [r['status'] for r in records if r['url'] not in groups]
    assert sorted(part.keys.statuses[i] for i in copied) == sorted(untouched)
