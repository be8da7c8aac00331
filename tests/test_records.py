"""Record schemas round-trip through real Avro files: Beam writes, fastavro reads, and back."""

import glob
import os

import apache_beam as beam
import fastavro
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage import records as R
from beamcrawl.transforms.storage.parts import ReadParts, WriteParts, check_avro_files

SAMPLES = {
    'crawldb': [
        R.crawl_datum('http://a.test/', 'db_unfetched', fetch_time=1, fetch_interval=2592000,
                      score=1.5, metadata={'k': 'v'}),
        R.crawl_datum('http://b.test/é', 'fetch_success', fetch_time=2**40, fetch_interval=60,
                      modified_time=5, retries=2, signature=b'\x00\xff' * 8,
                      protocol_status='success', http_code=200),
    ],
    'content': [R.content('http://a.test/', content_bytes=b'<html>\x00</html>',
                          content_type='text/html', fetch_time=3, http_code=200,
                          headers={'Server': 'x'}, truncated=True)],
    'parse_text': [R.parse_text('http://a.test/', 'hello wörld')],
    'parse_data': [R.parse_data('http://a.test/', title='A', parse_status='success',
                                outlinks=[('http://b.test/', 'bee'), ('http://c.test/', '')],
                                metadata={'lang': 'en'})],
    'linkdb': [R.inlinks('http://b.test/', [('http://a.test/', 'bee')])],
}


def test_status_enum_has_contract_names_in_code_order():
    assert R.CRAWL_DATUM_SCHEMA['fields'][1]['type']['symbols'][:3] == [
        'db_unfetched', 'db_fetched', 'db_gone']
    assert set(R.STATUSES) == {
        'db_unfetched', 'db_fetched', 'db_gone', 'db_redir_temp', 'db_redir_perm',
        'db_notmodified', 'db_duplicate', 'db_orphan', 'fetch_success', 'fetch_retry',
        'fetch_redir_temp', 'fetch_redir_perm', 'fetch_gone', 'fetch_notmodified', 'signature',
        'injected', 'linked'}
    assert R.status_code('fetch_success') == 0x21


@pytest.mark.parametrize('kind', sorted(SAMPLES))
def test_beam_writes_fastavro_reads(tmp_path, runner, kind):
    out = str(tmp_path / kind)
    with TestPipeline(runner=runner) as p:
        _ = p | beam.Create(SAMPLES[kind]) | WriteParts(out, R.SCHEMAS[kind])
    files = glob.glob(os.path.join(out, 'part-*.avro'))
    assert files and all(os.path.basename(f).startswith('part-0000') for f in files)
    got = []
    for path in files:
        with open(path, 'rb') as f:
            got += list(fastavro.reader(f))
    assert sorted(got, key=repr) == sorted(SAMPLES[kind], key=repr)


@pytest.mark.parametrize('kind', sorted(SAMPLES))
def test_fastavro_writes_beam_reads(tmp_path, runner, kind):
    path = str(tmp_path / 'part-00000.avro')
    with open(path, 'wb') as f:
        fastavro.writer(f, fastavro.parse_schema(R.SCHEMAS[kind]), SAMPLES[kind],
                        codec='deflate')
    with TestPipeline(runner=runner) as p:
        assert_that(p | ReadParts([path]), equal_to(SAMPLES[kind]))


def test_complete_datum_fills_fields_an_older_writer_lacked():
    old = {'url': 'http://a.test/', 'status': 'db_fetched', 'fetch_time': 1,
           'fetch_interval': 10}
    d = R.complete_datum(old)
    assert d['metadata'] == {} and d['signature'] is None and d['retries'] == 0
    assert d['protocol_status'] is None


def test_corrupt_avro_fails_fast_naming_the_file(tmp_path):
    bad = tmp_path / 'part-00000.avro'
    bad.write_bytes(b'this is not avro')
    with pytest.raises(InputError, match='part-00000.avro: not a readable Avro file'):
        check_avro_files([str(bad)])
