"""Keys files: read back as written, ignored when stale or damaged."""

import os

from beamcrawl.transforms.storage import container, keysfile, partwriter
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
from tests.workloads import datums


def test_keys_files_let_unchanged_records_be_copied_undecoded(tmp_path):
    records = sorted(datums(2000), key=lambda r: r['url'])
    part = str(tmp_path / 'part-00000.avro')
    with partwriter.PartWriter(part, CRAWL_DATUM_SCHEMA, keys=True) as out:
        for r in records:
            out.write(r)
    assert os.path.exists(keysfile.keys_path(part))
    keyed = list(keysfile.read_keyed(part))
    decoded = list(container.read_records(part))
    assert [(u, s) for u, s, _ in keyed] == [(r['url'], r['status']) for r, _ in decoded]
    assert [raw for _, _, raw in keyed] == [raw for _, raw in decoded]
    write_avro_file(part, CRAWL_DATUM_SCHEMA, records)    # rewritten by another writer
    assert keysfile.read_keyed(part) is None            # the stale keys file is not used
    with open(keysfile.keys_path(part), 'wb') as f:
        f.write(b'BCKEYS1\n{not json')
    assert keysfile.read_keyed(part) is None
