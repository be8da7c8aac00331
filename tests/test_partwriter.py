"""PartWriter: encoded and raw records in one valid part, published whole."""

import glob
import os

import fastavro
import pytest

from beamcrawl.transforms.storage import container, partwriter
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
from tests.workloads import datums


def test_part_writer_mixes_encoded_and_raw_records_into_a_valid_file(tmp_path):
    records = datums(3000)
    source = str(tmp_path / 'source.avro')
    write_avro_file(source, CRAWL_DATUM_SCHEMA, records)
    out = str(tmp_path / 'part-00000.avro')
    with partwriter.PartWriter(out, CRAWL_DATUM_SCHEMA) as writer:
        assert not os.path.exists(out)               # appears only when complete
        for i, (record, raw) in enumerate(container.read_records(source)):
            if i % 2:
                writer.write_raw(raw)
            else:
                writer.write(record)
    assert os.path.exists(out) and not glob.glob(str(tmp_path / '.*inprogress'))
    with open(out, 'rb') as f:
        assert list(fastavro.reader(f)) == records
    header, blocks = container.scan_blocks(out)
    assert len(blocks) > 1 and sum(b.count for b in blocks) == len(records)


def test_part_writer_discards_the_file_on_error(tmp_path):
    out = str(tmp_path / 'part-00000.avro')
    with pytest.raises(RuntimeError):
        with partwriter.PartWriter(out, CRAWL_DATUM_SCHEMA) as writer:
            writer.write(datums(1)[0])
            raise RuntimeError('stop')
    assert os.listdir(tmp_path) == []
