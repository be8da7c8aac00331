"""import-nutch: Hadoop SequenceFiles and Nutch's Writables read in Python (tables, hostile
files), Nutch's records mapped to beamcrawl's, and the crawl Nutch 1.22 made of the demo web
(tests/nutch_crawl/, made by its make_crawl.py) imported: readdb --stats and --dump give what
Nutch's own readdb printed, the linkdb and segments read back, and the crawl continues."""

import datetime
import hashlib
import json
import os
import re
import shutil
import struct
import zlib

import pytest

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.policy import nutchrecords
from beamcrawl.transforms.storage import hadoopseq, nutchwritables
from beamcrawl.transforms.storage.hadoopseq import Cursor, FormatError
from beamcrawl.transforms.storage.records import STATUS_CODES
from tests import seqfiles as sf
from tests.conftest import read_db, read_parts, run_cli

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'nutch_crawl')
NUTCH = os.path.join(FIXTURE, 'crawl')
SEGMENTS = sorted(os.listdir(os.path.join(NUTCH, 'segments')))


# -- the formats ----------------------------------------------------------------------------

@pytest.mark.parametrize('value,encoded', [
    (0, '00'), (127, '7f'), (-112, '90'), (128, '8f80'), (300, '8e012c'), (-113, '8770'),
    (-1, 'ff'), (2 ** 31 - 1, '8c7fffffff'), (-2 ** 31, '847fffffff'),
    (2 ** 62, '88' + '40' + '00' * 7),
])
def test_vint_as_hadoop_writes_it(value, encoded):
    assert sf.vint(value).hex() == encoded
    c = Cursor(bytes.fromhex(encoded))
    assert c.vlong() == value and c.remaining() == 0


RECORDS = [(sf.text(f'http://h{i}.test/'), sf.crawl_datum(1 + i % 2, fetch_time=i))
           for i in range(7)]


@pytest.mark.parametrize('compression', ['none', 'record', 'block'])
@pytest.mark.parametrize('codec', [sf.DEFAULT_CODEC, sf.GZIP_CODEC])
@pytest.mark.parametrize('sync_every', [1, 3, 100])
def test_sequence_file_records_in_every_compression(tmp_path, compression, codec, sync_every):
    path = tmp_path / 'data'
    path.write_bytes(sf.sequence_file(RECORDS, compression=compression, codec=codec,
                                      sync_every=sync_every, metadata=[('k', 'v')]))
    header = hadoopseq.read_header(str(path))
    assert (header.key_class, header.value_class) == (sf.TEXT, sf.DATUM)
    assert header.compressed == (compression != 'none')
    assert header.block_compressed == (compression == 'block')
    assert header.codec == (codec if compression != 'none' else None)
    assert header.metadata == {'k': 'v'} and header.sync == sf.SYNC
    got = [(k, v) for k, v, _ in hadoopseq.read_pairs(str(path))]
    assert got == RECORDS


def test_an_empty_sequence_file_has_no_record(tmp_path):
    path = tmp_path / 'data'
    path.write_bytes(sf.sequence_file([]))
    assert list(hadoopseq.read_pairs(str(path))) == []


# What Nutch 1.22 wrote into the fixture (so that these are the cases that matter).
@pytest.mark.parametrize('part,value_class,compressed,block', [
    ('crawldb/current/part-r-00000/data', 'crawl.CrawlDatum', False, False),
    ('crawldb/current/part-r-00000/index', None, True, True),
    ('linkdb/current/part-r-00000/data', 'crawl.Inlinks', True, False),
    (f'segments/{SEGMENTS[0]}/crawl_generate/part-r-00000', 'crawl.CrawlDatum', False, False),
    (f'segments/{SEGMENTS[0]}/crawl_fetch/part-r-00000/data', 'crawl.CrawlDatum', True, False),
    (f'segments/{SEGMENTS[0]}/content/part-r-00000/data', 'protocol.Content', True, False),
    (f'segments/{SEGMENTS[0]}/parse_data/part-r-00000/data', 'parse.ParseData', True, False),
    (f'segments/{SEGMENTS[0]}/parse_text/part-r-00000/data', 'parse.ParseText', True, False),
    (f'segments/{SEGMENTS[0]}/crawl_parse/part-r-00000', 'crawl.CrawlDatum', True, False),
])
def test_the_files_nutch_wrote(part, value_class, compressed, block):
    header = hadoopseq.read_header(os.path.join(NUTCH, part))
    assert header.key_class == sf.TEXT
    assert header.value_class == ('org.apache.hadoop.io.LongWritable' if value_class is None
                                  else 'org.apache.nutch.' + value_class)
    assert (header.compressed, header.block_compressed) == (compressed, block)
    if compressed:
        assert header.codec == sf.DEFAULT_CODEC


METADATA_CASES = [
    (sf.t('plain'), 'plain'),
    (('org.apache.hadoop.io.IntWritable', struct.pack('>i', -7)), '-7'),
    (('org.apache.hadoop.io.LongWritable', struct.pack('>q', 1795601509175)), '1795601509175'),
    (('org.apache.hadoop.io.FloatWritable', struct.pack('>f', 2.4095237)), '2.4095237'),
    (('org.apache.hadoop.io.FloatWritable', struct.pack('>f', 0.1)), '0.1'),
    (('org.apache.hadoop.io.DoubleWritable', struct.pack('>d', 0.1)), '0.1'),
    (('org.apache.hadoop.io.ByteWritable', b'\xfe'), '-2'),
    (('org.apache.hadoop.io.BooleanWritable', b'\1'), 'true'),
    (('org.apache.hadoop.io.BytesWritable', struct.pack('>i', 2) + b'\xab\xcd'), 'abcd'),
    (('org.apache.hadoop.io.NullWritable', b''), ''),
    (('org.apache.hadoop.io.VIntWritable', sf.vint(300)), '300'),
    (('org.apache.hadoop.io.VLongWritable', sf.vint(-113)), '-113'),
    (('org.apache.hadoop.io.MD5Hash', bytes(range(16))), bytes(range(16)).hex()),
    (('org.apache.hadoop.io.MapWritable', sf.map_writable([(sf.t('a'), sf.t('b'))])),
     '{"a": "b"}'),
    (sf.protocol_status(1), 'success'),
    (sf.protocol_status(10), 'failed'),
    (sf.protocol_status(12, 0, ['http://x.test/']), 'moved'),
    (sf.protocol_status(18), 'robots_denied'),
    (sf.protocol_status(22), 'would_block'),
]


@pytest.mark.parametrize('value,expected', METADATA_CASES)
def test_crawl_datum_metadata_of_every_value_type(value, expected):
    raw = sf.crawl_datum(2, fetch_time=5, retries=1, interval=86400, score=0.5, modified=4,
                         signature=b'\x01\x02', metadata=[(sf.t('key'), value)])
    datum = nutchwritables.decode(nutchwritables.crawl_datum, raw)
    assert (datum['status'], datum['fetch_time'], datum['retries'], datum['fetch_interval'],
            datum['score'], datum['modified_time'], datum['signature']) == \
        (2, 5, 1, 86400, 0.5, 4, b'\x01\x02')
    record = nutchrecords.datum('http://a.test/', datum)
    assert record['metadata'] == {'key': expected}


@pytest.mark.parametrize('code,name', [
    (1, 'db_unfetched'), (2, 'db_fetched'), (3, 'db_gone'), (4, 'db_redir_temp'),
    (5, 'db_redir_perm'), (6, 'db_notmodified'), (7, 'db_duplicate'), (8, 'db_orphan'),
    (33, 'fetch_success'), (34, 'fetch_retry'), (35, 'fetch_redir_temp'),
    (36, 'fetch_redir_perm'), (37, 'fetch_gone'), (38, 'fetch_notmodified'), (65, 'signature'),
    (66, 'injected'), (67, 'linked'),
])
def test_status_bytes_are_beamcrawls_status_names(code, name):
    datum = nutchwritables.decode(nutchwritables.crawl_datum, sf.crawl_datum(code))
    assert nutchrecords.datum('http://a.test/', datum)['status'] == name


def test_an_unknown_status_byte_is_an_error():
    datum = nutchwritables.decode(nutchwritables.crawl_datum, sf.crawl_datum(9))
    with pytest.raises(ValueError, match='status byte 9'):
        nutchrecords.datum('http://a.test/', datum)


def test_a_crawl_fetch_record_gets_its_protocol_status_and_http_code():
    raw = sf.crawl_datum(37, metadata=[(sf.t('_pst_'), sf.protocol_status(14)),
                                       (sf.t('nutch.protocol.code'), sf.t('404'))])
    datum = nutchwritables.decode(nutchwritables.crawl_datum, raw)
    record = nutchrecords.datum('http://a.test/x', datum, fetch_part=True)
    assert (record['protocol_status'], record['http_code']) == ('notfound', 404)
    assert nutchrecords.datum('http://a.test/x', datum)['protocol_status'] is None


@pytest.mark.parametrize('version', [5, 6, 7])
def test_crawl_datum_versions_read(version):
    datum = nutchwritables.decode(nutchwritables.crawl_datum,
                                  sf.crawl_datum(2, interval=60, version=version))
    assert datum['fetch_interval'] == 60


def test_an_old_crawl_datum_is_refused():
    with pytest.raises(FormatError, match='CrawlDatum version 4'):
        nutchwritables.decode(nutchwritables.crawl_datum, sf.crawl_datum(2, version=4))


@pytest.mark.parametrize('major,minor,name', [
    (0, 0, 'notparsed'), (1, 0, 'success'), (1, 100, 'success_redirect'), (2, 200, 'failed'),
])
def test_parse_data(major, minor, name):
    raw = sf.parse_data('T', [('http://b.test/', 'B')], major=major, minor=minor,
                        content_meta=[('nutch.content.digest', ['ab']), ('Server', ['x'])],
                        parse_meta=[('OriginalCharEncoding', ['utf-8'])])
    record = nutchrecords.parse_data('http://a.test/',
                                     nutchwritables.decode(nutchwritables.parse_data, raw))
    assert record == {'url': 'http://a.test/', 'title': 'T', 'parse_status': name,
                      'outlinks': [{'to_url': 'http://b.test/', 'anchor': 'B'}],
                      'metadata': {'OriginalCharEncoding': 'utf-8', 'nutch.content.digest': 'ab'}}


def test_content_headers_apart_from_nutchs_notes():
    raw = sf.content('http://a.test/', b'<p>hi', 'text/html',
                     [('Content-Type', ['text/html']), ('Set-Cookie', ['a=1', 'b=2']),
                      ('nutch.segment.name', ['20260101000000']), ('_fst_', ['33'])])
    record = nutchrecords.content_record(
        'http://a.test/', nutchwritables.decode(nutchwritables.content, raw),
        fetch_time=7, http_code=200)
    assert record['headers'] == {'Content-Type': 'text/html', 'Set-Cookie': 'a=1, b=2'}
    assert record['metadata'] == {'nutch.segment.name': '20260101000000', '_fst_': '33'}
    assert (record['content'], record['fetch_time'], record['http_code']) == (b'<p>hi', 7, 200)


def test_inlinks_and_parse_text():
    links = nutchwritables.decode(nutchwritables.inlinks,
                                  sf.inlinks([('http://a.test/', 'A'), ('http://b.test/', '')]))
    assert nutchrecords.inlinks_record('http://c.test/', links)['inlinks'] == [
        {'from_url': 'http://a.test/', 'anchor': 'A'}, {'from_url': 'http://b.test/', 'anchor': ''}]
    assert nutchwritables.decode(nutchwritables.parse_text, sf.parse_text('é' * 200)) == 'é' * 200


@pytest.mark.parametrize('kind', ['block', 'record'])
def test_snappy_files_nutch_wrote_read_as_the_plain_one(kind):
    """The fixture's crawldb rewritten by Nutch's mergedb with SnappyCodec (make_crawl.py)."""
    from beamcrawl.transforms.importnutch import nutch_records
    snappy = os.path.join(FIXTURE, f'snappy-{kind}', 'crawldb', 'current', 'part-r-00000',
                          'data')
    header = hadoopseq.read_header(snappy)
    assert (header.codec, header.block_compressed) == (hadoopseq.SNAPPY_CODEC, kind == 'block')
    plain = os.path.join(NUTCH, 'crawldb', 'current', 'part-r-00000', 'data')
    got = list(nutch_records(snappy, 'crawldb'))
    assert len(got) == 17 and got == list(nutch_records(plain, 'crawldb'))


def _framed(*blocks):
    """Hadoop's block framing: (uncompressed length, [raw chunks]) per block."""
    import cramjam
    out = b''
    for length, chunks in blocks:
        out += struct.pack('>i', length)
        for chunk in chunks:
            packed = bytes(cramjam.snappy.compress_raw(chunk))
            out += struct.pack('>i', len(packed)) + packed
    return out


@pytest.mark.parametrize('data,expected', [
    (_framed((5, [b'hello'])), b'hello'),
    (_framed((8, [b'ab', b'cdefgh']), (3, [b'xyz'])), b'abcdefghxyz'),
    (b'', b''),
    (_framed((5, [b'hell'])), 'a block of 5 bytes, 0 left|4 bytes wanted'),
    (_framed((3, [b'hello'])), 'a block of 3 bytes decompressed to 5'),
    (struct.pack('>i', -1), 'a block of -1 bytes'),
    (struct.pack('>ii', 5, 5) + b'\xff' * 5, 'bad compressed data'),
])
def test_hadoop_block_framing_of_snappy(data, expected):
    snappy = hadoopseq.decompressor(hadoopseq.SNAPPY_CODEC)
    if isinstance(expected, bytes):
        assert snappy(data) == expected
    else:
        with pytest.raises(FormatError, match=expected):
            snappy(data)


# -- hostile and broken files -----------------------------------------------------------------

def _file(tmp_path, data: bytes) -> str:
    path = tmp_path / 'data'
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize('compression', ['none', 'record', 'block'])
def test_a_file_cut_anywhere_is_an_input_error_naming_it(tmp_path, compression):
    """Cut at each byte, a file gives an InputError naming it and an offset, or (cut between
    records) the records before the cut: never another error, never a record that was not
    written."""
    records = RECORDS[:3]
    whole = sf.sequence_file(records, compression=compression)
    errors = 0
    for end in range(len(whole) - 1, 0, -1):
        path = _file(tmp_path, whole[:end])
        try:
            got = [(k, v) for k, v, _ in hadoopseq.read_pairs(path)]
        except InputError as e:
            assert str(e).startswith(path + ':') and 'byte' in str(e), e
            errors += 1
        else:
            assert len(got) < len(records) and got == records[:len(got)], end
    assert errors >= len(whole) - 2 * len(records)


@pytest.mark.parametrize('data,message', [
    (b'PAR1xxxx', 'not a Hadoop SequenceFile'),
    (b'SEQ\x05' + sf.text(sf.TEXT) * 2, 'SequenceFile version 5'),
    (b'SEQ\x06' + b'\x8c\x7f\xff\xff\xff', 'bad SequenceFile header at byte 4'),
])
def test_not_a_sequence_file(tmp_path, data, message):
    with pytest.raises(InputError, match=message):
        list(hadoopseq.read_pairs(_file(tmp_path, data)))


def test_a_codec_we_do_not_read_is_named(tmp_path):
    data = sf.sequence_file(RECORDS, compression='record',
                            codec='org.apache.hadoop.io.compress.Lz4Codec')
    with pytest.raises(InputError, match='compressed with org.apache.hadoop.io.compress.'
                                         'Lz4Codec, which beamcrawl does not read'):
        list(hadoopseq.read_pairs(_file(tmp_path, data)))


def test_a_huge_record_length_is_refused_without_allocating(tmp_path):
    header = sf.sequence_file([])
    path = _file(tmp_path, header + struct.pack('>ii', 2 ** 31 - 1, 4) + b'abcd')
    at = len(header) + 12           # after the two lengths and the key
    with pytest.raises(InputError, match=f'truncated or corrupt at byte {at}: value of '):
        list(hadoopseq.read_pairs(path))


def test_a_wrong_sync_marker(tmp_path):
    data = sf.sequence_file(RECORDS, sync_every=2)
    at = data.index(b'\xff\xff\xff\xff' + sf.SYNC) + 4
    broken = data[:at] + b'x' * 16 + data[at + 16:]
    with pytest.raises(InputError, match=f'corrupt at byte {at}: the sync marker'):
        list(hadoopseq.read_pairs(_file(tmp_path, broken)))


def test_a_compression_bomb_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(hadoopseq, 'MAX_INFLATED', 1 << 20)
    data = sf.sequence_file([(sf.text('k'), b'\0' * (2 << 20))], compression='record')
    with pytest.raises(InputError, match='inflates to more than 1048576 bytes'):
        list(hadoopseq.read_pairs(_file(tmp_path, data)))


@pytest.mark.parametrize('decoder,raw,message', [
    (nutchwritables.crawl_datum, sf.crawl_datum(2)[:-3], 'bytes wanted'),
    (nutchwritables.inlinks, struct.pack('>i', 2 ** 30), '1073741824 inlinks'),
    (nutchwritables.content,
     struct.pack('>i', -1) + sf.text('u') * 2 + struct.pack('>i', 10 ** 9),
     '1000000000 bytes wanted'),
    (nutchwritables.crawl_datum, sf.crawl_datum(2)[:-1] + b'\1\0' + struct.pack('>i', 1)
     + b'\x7f' + b'\0' * 4, 'class id 127 not declared'),
    (nutchwritables.parse_text, b'\3', 'ParseText version 3'),
])
def test_hostile_values(decoder, raw, message):
    with pytest.raises(FormatError, match=message):
        nutchwritables.decode(decoder, raw)


def test_metadata_nested_thousands_deep_is_an_input_error(tmp_path):
    from beamcrawl.transforms.importnutch import nutch_records
    nested = sf.t('leaf')
    for _ in range(3000):
        nested = ('org.apache.hadoop.io.MapWritable', sf.map_writable([(sf.t('k'), nested)]))
    raw = sf.crawl_datum(2, metadata=[(sf.t('k'), nested)])
    path = _file(tmp_path, sf.sequence_file([(sf.text('http://a.test/'), raw)]))
    first = len(sf.sequence_file([]))       # the record right after the header
    with pytest.raises(InputError, match=f'at byte {first}: metadata nested too deep'):
        list(nutch_records(path, 'crawldb'))


# -- the fixture imported ---------------------------------------------------------------------

def _tree_digest(root):
    digest = hashlib.sha256()
    for directory, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            digest.update(path.encode() + open(path, 'rb').read())
    return digest.hexdigest()


@pytest.fixture(scope='module')
def imported(tmp_path_factory):
    """The fixture crawl imported once (a copy of it: the import must not change it)."""
    nutch = str(tmp_path_factory.mktemp('nutch') / 'crawl')
    shutil.copytree(NUTCH, nutch)
    before = _tree_digest(nutch)
    crawl = str(tmp_path_factory.mktemp('imported') / 'crawl')
    proc = run_cli('import-nutch', nutch, crawl)
    assert _tree_digest(nutch) == before
    return crawl, proc.stdout


def test_import_summary(imported):
    _, out = imported
    assert 'crawldb 17 URLs, linkdb 5 URLs, 2 segments' in out
    assert '0 content records without crawl_fetch' in out


def _nutch_stats():
    stats = {}
    with open(os.path.join(FIXTURE, 'readdb-stats.txt'), encoding='utf-8') as f:
        for line in f:
            m = re.search(r'CrawlDbReader \[main\] ([^\t]+):\t(.*)$', line)
            if m:
                stats[m.group(1)] = m.group(2)
    return stats


def _seconds(duration: str) -> int:
    days, hms = re.fullmatch(r'(\d+) days, (\d\d:\d\d:\d\d)', duration).groups()
    h, m, s = map(int, hms.split(':'))
    return int(days) * 86400 + h * 3600 + m * 60 + s


def _minute(ms: float) -> str:
    when = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return when.strftime('%Y-%m-%dT%H:%M:00.000+0000')


def test_readdb_stats_equal_nutchs(imported):
    crawl, _ = imported
    ours = json.loads(run_cli('readdb', crawl, '--stats', '--json').stdout)
    nutch = _nutch_stats()
    assert ours['total'] == int(nutch['TOTAL urls'])
    by_status = {k: int(v) for k, v in nutch.items() if k.startswith('status ')}
    assert {f'status {_code(s)} ({s})': n for s, n in ours['status'].items()} == by_status
    assert len(by_status) == 4
    assert {f'retry {k}': v for k, v in ours['retries'].items()} == \
        {k: int(v) for k, v in nutch.items() if k.startswith('retry ')}
    for ours_key, nutch_key in (('min', 'min score'), ('max', 'max score')):
        assert struct.pack('>f', ours['score'][ours_key]) == \
            struct.pack('>f', float(nutch[nutch_key]))
    # Nutch sums the scores in 32-bit floats (CrawlDbReader's FloatWritable), beamcrawl in
    # doubles: the averages agree to a 32-bit float's precision.
    assert ours['score']['avg'] == pytest.approx(float(nutch['avg score']), rel=1e-6)
    for ours_key, nutch_key in (('min', 'shortest fetch interval'),
                                ('avg', 'avg fetch interval'),
                                ('max', 'longest fetch interval')):
        assert round(ours['fetch_interval'][ours_key]) == _seconds(nutch[nutch_key])
    # Nutch sums fetch times in minutes.
    assert _minute(ours['fetch_time']['min']) == nutch['earliest fetch time']
    assert _minute(ours['fetch_time']['max']) == nutch['latest fetch time']
    for q, value in ours['score']['quantiles'].items():
        assert value == pytest.approx(float(nutch[f'score quantile {q}']), rel=1e-6)


def _code(status: str) -> int:
    return STATUS_CODES[status]


def _nutch_dump():
    """Nutch's readdb -dump: {url: {field: value, 'metadata': {k: v}}}."""
    records, current = {}, None
    with open(os.path.join(FIXTURE, 'readdb-dump.txt'), encoding='utf-8') as f:
        for line in f.read().splitlines():
            m = re.fullmatch(r'(\S+)\tVersion: 7', line)
            if m:
                current = records[m.group(1)] = {'metadata': {}}
            elif line.startswith(('\t', ' \t')):
                key, _, value = line.strip().partition('=')
                current['metadata'][key] = value
            elif ': ' in line:
                key, _, value = line.partition(': ')
                current[key] = value
    return records


def _java_date(text: str) -> int:
    """Epoch seconds of Java's Date.toString in UTC."""
    when = datetime.datetime.strptime(text.replace(' UTC ', ' '), '%a %b %d %H:%M:%S %Y')
    return int(when.replace(tzinfo=datetime.timezone.utc).timestamp())


def test_every_record_field_for_field_as_nutch_dumped_it(imported, tmp_path):
    crawl, _ = imported
    run_cli('readdb', crawl, '--dump', str(tmp_path / 'dump'))
    ours = {}
    for path in sorted((tmp_path / 'dump').iterdir()):
        for line in path.read_text(encoding='utf-8').splitlines():
            record = json.loads(line)
            ours[record['url']] = record
    nutch = _nutch_dump()
    assert sorted(ours) == sorted(nutch)
    for url, n in nutch.items():
        r = ours[url]
        code, name = re.fullmatch(r'(\d+) \((\w+)\)', n['Status']).groups()
        assert (r['status_code'], r['status']) == (int(code), name), url
        assert r['fetch_time'] // 1000 == _java_date(n['Fetch time']), url
        assert r['modified_time'] // 1000 == _java_date(n['Modified time']), url
        assert r['retries'] == int(n['Retries since fetch'])
        assert r['fetch_interval'] == int(n['Retry interval'].split()[0])
        assert struct.pack('>f', r['score']) == struct.pack('>f', float(n['Score'])), url
        assert (r['signature'] or 'null') == n['Signature']
        expected = dict(n['metadata'])
        if '_pst_' in expected:     # ProtocolStatus.toString: name(code), lastModified=...
            expected['_pst_'] = expected['_pst_'].split('(')[0]
        assert r['metadata'] == expected, url
    # and readdb --url prints one of them as Nutch's fields
    out = run_cli('readdb', crawl, '--url', 'http://www.demo.test/private/secret.html').stdout
    assert 'Status: 3 (db_gone)' in out and '_pst_=robots_denied' in out
    assert 'Retry interval: 3888000 seconds (45 days)' in out


def test_readlinkdb_shows_nutchs_inlinks(imported, tmp_path):
    crawl, _ = imported
    run_cli('readlinkdb', crawl, '--dump', str(tmp_path / 'out'), '--format', 'text')
    ours = ''.join(open(p, encoding='utf-8').read() + '\n'
                   for p in sorted((tmp_path / 'out').iterdir()))
    with open(os.path.join(FIXTURE, 'readlinkdb-dump.txt'), encoding='utf-8') as f:
        nutch = f.read()

    def entries(text):
        found, links = {}, None
        for line in text.splitlines():
            if line.endswith('\tInlinks:'):
                links = found[line.split('\t')[0]] = []
            elif line.strip():
                links.append(re.sub(r' metadata: ?$', '', line.strip()))
        return {url: sorted(links) for url, links in found.items()}
    assert entries(ours) == entries(nutch)
    assert len(entries(ours)) == 5


def test_segments_hold_what_the_web_served(imported):
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.testing.demosite import demo_sites
    crawl = CrawlLayout(imported[0])
    assert crawl.segment_names() == SEGMENTS
    second = SEGMENTS[1]
    content = {r['url']: r for r in read_parts(crawl.part_files(second, 'content'))}
    about = content['http://www.demo.test/about.html']
    assert about['content'] == demo_sites()['www.demo.test']['/about.html'].body
    assert (about['http_code'], about['headers']['Content-Type']) == \
        (200, 'text/html; charset=utf-8')
    fetch = {r['url']: r for r in read_parts(crawl.part_files(second, 'crawl_fetch'))
             if r['status'] != 'linked'}
    assert about['fetch_time'] == fetch['http://www.demo.test/about.html']['fetch_time']
    assert {(u, r['status'], r['protocol_status'], r['http_code']) for u, r in fetch.items()
            if r['status'] != 'fetch_success'} == {
        ('http://www.demo.test/missing.html', 'fetch_gone', 'notfound', 404),
        ('http://www.demo.test/old-page', 'fetch_redir_perm', 'moved', 301),
        ('http://www.demo.test/private/secret.html', 'fetch_gone', 'robots_denied', None)}
    text = {r['url']: r['text'] for r in read_parts(crawl.part_files(second, 'parse_text'))}
    assert 'This page is about us.' in text['http://www.demo.test/about.html']
    data = {r['url']: r for r in read_parts(crawl.part_files(second, 'parse_data'))}
    assert data['http://www.demo.test/about.html']['title'] == 'About'
    assert {o['to_url'] for o in data['http://www.demo.test/about.html']['outlinks']} == \
        {'http://www.demo.test/', 'http://www.demo.test/team.html'}
    got = run_cli('readseg', imported[0], '--get', second,
                  'http://www.demo.test/about.html').stdout
    for part in ('crawl_generate::', 'crawl_fetch::', 'content::', 'parse_data::',
                 'parse_text::', 'crawl_parse::'):
        assert part in got
    assert '<title>About</title>' in got and '"protocol_status": "success"' in got
    listed = run_cli('readseg', imported[0], '--list').stdout
    assert re.search(rf'{second}\t11\t\t2026-\S+\t2026-\S+\t12\t8', listed), listed


def test_databases_are_partitioned_as_beamcrawl_writes_them(imported):
    from beamcrawl.transforms.storage.layout import CrawlLayout
    crawl = CrawlLayout(imported[0])
    assert crawl.crawldb.applied_segments() == SEGMENTS
    assert crawl.linkdb.applied_segments() == SEGMENTS
    for db in (crawl.crawldb, crawl.linkdb):
        n = int(db.read_note('_partitions'))
        files = db.part_files()
        assert len(files) == n
        for index, path in enumerate(files):
            urls = [r['url'] for r in read_parts([path])]
            assert urls == sorted(urls)
            assert all(zlib.crc32(u.encode()) % n == index for u in urls)
            assert os.path.exists(path[:-len('.avro')] + '.keys')


def test_the_crawl_continues(imported, tmp_path):
    from beamcrawl.transforms.testing.demosite import demo_sites
    from tests.testweb import TestWeb
    crawl = str(tmp_path / 'crawl')
    shutil.copytree(imported[0], crawl)
    unfetched = {u for u, r in read_db(crawl).items() if r['status'] == 'db_unfetched'}
    assert len(unfetched) == 3
    with TestWeb(demo_sites()) as web:
        opts = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
                '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.0',
                '--now', '2026-11-26T00:00:00Z']
        for step in ('generate', 'fetch', 'parse', 'updatedb'):
            run_cli(step, crawl, *opts)
        fetched = {f'http://{r.host}{r.path}' for r in web.log if r.path != '/robots.txt'}
    assert fetched == unfetched        # only what Nutch had not fetched
    db = read_db(crawl)
    assert all(db[u]['status'] == 'db_fetched' for u in unfetched)
    assert db['http://blog.demo.test/']['metadata']['topic'] == 'news'   # Nutch's metadata kept


def test_a_corrupt_nutch_file_exits_2_with_one_line(tmp_path):
    nutch = tmp_path / 'nutch'
    shutil.copytree(NUTCH, nutch)
    data = nutch / 'crawldb' / 'current' / 'part-r-00000' / 'data'
    data.write_bytes(data.read_bytes()[:-40])
    proc = run_cli('import-nutch', str(nutch), str(tmp_path / 'crawl'), check=False)
    assert proc.returncode == 2
    line, = proc.stderr.strip().splitlines()[-1:]
    assert re.fullmatch(rf'beamcrawl import-nutch: {re.escape(str(data))}: (truncated or corrupt'
                        rf'|cut short) at byte \d+.*', line), proc.stderr
    assert 'Traceback' not in proc.stderr
    assert not (tmp_path / 'crawl' / 'crawldb' / 'current').exists()
    assert not (tmp_path / 'crawl' / 'segments').exists() or \
        not os.listdir(tmp_path / 'crawl' / 'segments')
    # the same command, once the file is whole again, imports into what the failure left
    shutil.copyfile(os.path.join(NUTCH, 'crawldb', 'current', 'part-r-00000', 'data'), data)
    run_cli('import-nutch', str(nutch), str(tmp_path / 'crawl'))
    assert len(read_db(tmp_path / 'crawl')) == 17


@pytest.mark.parametrize('case', ['not_empty', 'not_nutch', 'inside'])
def test_refusals(tmp_path, case):
    target = tmp_path / 'crawl'
    source = NUTCH
    if case == 'not_empty':
        target.mkdir()
        (target / 'notes.txt').write_text('mine')
    elif case == 'not_nutch':
        source = str(tmp_path / 'empty')
        os.mkdir(source)
    else:
        target = os.path.join(NUTCH, 'beamcrawl')
    proc = run_cli('import-nutch', source, str(target), check=False)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert {'not_empty': 'not empty', 'not_nutch': 'not a Nutch crawl directory',
            'inside': 'inside the Nutch crawl'}[case] in proc.stderr
    assert not os.path.exists(os.path.join(NUTCH, 'beamcrawl'))


def _synthetic_nutch(root, compression, codec):
    """A small Nutch crawl written by tests/seqfiles.py, with `compression` and `codec`."""
    def write(rel, records, value_class):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(sf.sequence_file(records, value_class=value_class,
                                          compression=compression, codec=codec, sync_every=2))
    urls = [f'http://h{i}.test/' for i in range(5)]
    write('crawldb/current/part-r-00000/data',
          [(sf.text(u), sf.crawl_datum(2, fetch_time=1000 + i, score=0.25 * i,
                                       signature=bytes([i]) * 16,
                                       metadata=[(sf.t('_pst_'), sf.protocol_status(1))]))
           for i, u in enumerate(urls)], sf.DATUM)
    write('linkdb/current/part-r-00000/data',
          [(sf.text(urls[0]), sf.inlinks([(urls[1], 'one'), (urls[2], 'two')]))],
          'org.apache.nutch.crawl.Inlinks')
    segment = 'segments/20260101000000/'
    write(segment + 'crawl_fetch/part-r-00000/data',
          [(sf.text(u), sf.crawl_datum(33, fetch_time=500 + i, metadata=[
              (sf.t('_pst_'), sf.protocol_status(1)),
              (sf.t('nutch.protocol.code'), sf.t('200'))])) for i, u in enumerate(urls)],
          sf.DATUM)
    write(segment + 'content/part-r-00000/data',
          [(sf.text(u), sf.content(u, f'page {i}'.encode(), 'text/html',
                                   [('Content-Type', ['text/html'])]))
           for i, u in enumerate(urls) if i % 2 == 0],
          'org.apache.nutch.protocol.Content')
    return urls


@pytest.mark.parametrize('compression,codec', [('block', sf.GZIP_CODEC),
                                               ('block', sf.DEFAULT_CODEC),
                                               ('record', sf.GZIP_CODEC)])
def test_import_nutch_stage_on_other_compressions(tmp_path, runner, compression, codec):
    """The ImportNutch stage itself, on a crawl written with codecs Nutch 1.22 did not use in
    the fixture (Hadoop with native libraries writes these)."""
    import apache_beam as beam

    from beamcrawl.transforms.importnutch import SEGMENT_ORDER, ImportNutch, find_nutch_crawl
    from beamcrawl.transforms.storage.layout import CrawlLayout
    urls = _synthetic_nutch(tmp_path / 'nutch', compression, codec)
    nutch = find_nutch_crawl(str(tmp_path / 'nutch'))
    crawl = CrawlLayout(str(tmp_path / 'crawl'))
    name, = nutch.segments
    with crawl.crawldb.update(keep_backup=False, command='test') as crawldb, \
            crawl.linkdb.update(keep_backup=False, command='test') as linkdb, \
            crawl.segment_update(name, [p for p in SEGMENT_ORDER if p in nutch.segments[name]],
                                 'test') as segment:
        with beam.Pipeline(runner=runner) as p:
            _ = p | ImportNutch(nutch=nutch, crawldb=crawldb, linkdb=linkdb,
                                segments={name: segment.tmp}, crawldb_partitions=2,
                                linkdb_partitions=1)
    db = read_db(crawl.root)
    assert sorted(db) == urls
    assert [db[u]['fetch_time'] for u in urls] == [1000, 1001, 1002, 1003, 1004]
    assert [db[u]['score'] for u in urls] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert db[urls[3]]['signature'] == bytes([3]) * 16
    assert db[urls[3]]['metadata'] == {'_pst_': 'success'}
    assert crawl.crawldb.read_note('_partitions') == '2'
    links, = read_parts(crawl.linkdb.part_files())
    assert links['inlinks'] == [{'from_url': urls[1], 'anchor': 'one'},
                                {'from_url': urls[2], 'anchor': 'two'}]
    content = read_parts(crawl.part_files(name, 'content'))
    assert [(c['url'], c['content'], c['fetch_time'], c['http_code']) for c in content] == \
        [(u, f'page {i}'.encode(), 500 + i, 200) for i, u in enumerate(urls) if i % 2 == 0]


def test_index_search_and_warc_export_run_on_the_imported_crawl(imported, tmp_path):
    crawl = str(tmp_path / 'crawl')
    shutil.copytree(imported[0], crawl)
    assert '11 documents' in run_cli('index', crawl).stdout
    top = run_cli('search', crawl, 'about us', '--top', '1').stdout
    assert 'http://www.demo.test/about.html' in top.splitlines()[0]
    exported = run_cli('warc-export', crawl, str(tmp_path / 'warc')).stdout
    assert 'exported 12 response records from 2 segments' in exported


@pytest.mark.parametrize('order', ['sorted', 'reversed'])
def test_content_gets_fetch_time_and_code_of_its_crawl_fetch_record(tmp_path, order):
    """Matched in one pass when both parts are sorted (as Nutch writes them), by a table when
    they are not; a URL without a crawl_fetch record gets fetch time 0 and no code."""
    from beamcrawl.transforms.importnutch import nutch_records
    urls = [f'http://h.test/{c}' for c in 'abcde']
    fetch = [(sf.text(u), sf.crawl_datum(33, fetch_time=100 + i, metadata=[
        (sf.t('nutch.protocol.code'), sf.t(str(200 + i)))])) for i, u in enumerate(urls)
        if u != urls[2]]
    fetch.insert(1, (sf.text(urls[1]), sf.crawl_datum(67, fetch_time=1)))   # a linked record
    (tmp_path / 'fetch').write_bytes(sf.sequence_file(fetch))
    content = [(sf.text(u), sf.content(u, b'x', 'text/plain')) for u in urls]
    if order == 'reversed':
        content.reverse()
    (tmp_path / 'content').write_bytes(sf.sequence_file(
        content, value_class='org.apache.nutch.protocol.Content'))
    got = {u: (r['fetch_time'], r['http_code']) for u, r in
           nutch_records(str(tmp_path / 'content'), 'content', str(tmp_path / 'fetch'))}
    assert got == {urls[0]: (100, 200), urls[1]: (101, 201), urls[2]: (0, None),
                   urls[3]: (103, 203), urls[4]: (104, 204)}
