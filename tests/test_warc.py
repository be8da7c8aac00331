"""WARC output: the records of one exchange (transforms/storage/warc.py), the fetch with
fetcher.store.warc on the test web, and `beamcrawl warc-export`. Every file is checked with both
FastWARC's and warcio's digest checkers."""

import glob
import gzip
import io
import os
import re
import subprocess
import sys
import zlib

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from warcio.archiveiterator import ArchiveIterator as WarcioIterator

from beamcrawl.transforms.storage import warc
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.records import content as content_record
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH, WARC
from tests.conftest import kill_when, run_cli, start_command, write_seeds
from tests.testweb import Page, Raw, html_page, redirect

NOW = '2026-11-22T00:00:00Z'
BIG = ('<p>' + 'archived words ' * 400 + '</p>')


def _exchange(status='HTTP/1.1 200 OK', headers=(('Content-Type', 'text/html'),), body=b'<p>x',
              **kw):
    return warc.RawExchange('http://a.test/p', b'GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n',
                            status, list(headers), body, 1_700_000_000_000, **kw)


def _checked(data: bytes):
    """The records of WARC bytes, after both libraries verified every digest; also that each
    record is its own gzip member."""
    fast = 0
    for record in FastIterator(io.BytesIO(data), parse_http=False):
        assert record.verify_block_digest(), record.headers.get('WARC-Record-ID')
        fast += 1
    for record in FastIterator(io.BytesIO(data)):
        if record.headers.get('WARC-Payload-Digest'):
            assert record.verify_payload_digest(), record.headers.get('WARC-Record-ID')
    # FastWARC's verify_digests passes only records whose block and payload digests hold
    assert fast == len(list(FastIterator(io.BytesIO(data), verify_digests=True)))
    records = []
    for record in WarcioIterator(io.BytesIO(data), check_digests='raise'):
        records.append((record.rec_type, dict(record.rec_headers.headers),
                        record.http_headers, record.raw_stream.read()))
    members, rest = 0, data
    while rest:                               # one gzip member per record
        d = zlib.decompressobj(31)
        d.decompress(rest)
        rest = d.unused_data
        members += 1
    assert members == len(records) == fast
    return records


def test_an_exchange_is_a_request_and_a_response_concurrent_to_it():
    body = gzip.compress(b'<html>hello</html>')
    records = _checked(warc.exchange_records(_exchange(
        headers=[('Content-Type', 'text/html'), ('Content-Encoding', 'gzip'),
                 ('Transfer-Encoding', 'chunked'), ('Set-Cookie', 'a=1'), ('Set-Cookie', 'b=2')],
        body=body, ip='192.0.2.7')))
    (req_type, req_headers, req_http, _), (type_, headers, http, payload) = records
    assert (req_type, type_) == ('request', 'response')
    assert req_headers['WARC-Concurrent-To'] == headers['WARC-Record-ID']
    assert (req_http.protocol, req_http.get_header('Host')) == ('GET', 'a.test')
    assert headers['WARC-Target-URI'] == 'http://a.test/p'
    assert headers['WARC-IP-Address'] == '192.0.2.7'
    assert headers['WARC-Date'] == '2023-11-14T22:13:20Z'
    assert headers['WARC-Payload-Digest'] == warc.sha1_digest(body)
    # The body as received (still gzip); the chunked framing is gone, so is the header saying so.
    assert gzip.decompress(payload) == b'<html>hello</html>'
    assert http.get_header('Content-Encoding') == 'gzip'
    assert http.get_header('Transfer-Encoding') is None
    assert http.get_header('X-Crawler-Transfer-Encoding') == 'chunked'
    assert [v for k, v in http.headers if k == 'Set-Cookie'] == ['a=1', 'b=2']


def test_a_304_is_a_revisit_and_a_cut_body_says_truncated():
    request, (kind, headers, _, payload) = _checked(warc.exchange_records(
        _exchange('HTTP/1.1 304 Not Modified', body=b'')))
    assert request[0] == 'request'
    assert kind == 'revisit' and headers['WARC-Profile'] == warc.NOT_MODIFIED_PROFILE
    assert 'WARC-Payload-Digest' not in headers and payload == b''
    truncated = _checked(warc.exchange_records(_exchange(body=b'x' * 100, truncated=True)))[1]
    assert truncated[1]['WARC-Truncated'] == 'length'


def test_reconstructed_response_is_marked_and_carries_the_stored_body():
    record = content_record('http://a.test/x', content_bytes=b'<p>stored</p>',
                            content_type='text/html', fetch_time=1_700_000_000_000,
                            http_code=200, headers={'Content-Encoding': 'gzip',
                                                    'Content-Length': '99', 'Server': 's'})
    ((kind, headers, http, payload),) = _checked(warc.reconstructed_records(record))
    assert kind == 'response' and headers[warc.RECONSTRUCTED_HEADER]
    assert payload == b'<p>stored</p>'
    assert http.get_header('Content-Length') == str(len(b'<p>stored</p>'))
    assert http.get_header('X-Crawler-Content-Encoding') == 'gzip'
    assert http.get_header('Content-Encoding') is None


def _chunked(send, closed):
    body = b'<html><head><title>chunks</title></head><body>in pieces</body></html>'
    send(b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n'
         b'Connection: close\r\n\r\n')
    for i in range(0, len(body), 16):
        piece = body[i:i + 16]
        send(f'{len(piece):x}\r\n'.encode() + piece + b'\r\n')
    send(b'0\r\n\r\n')


def _not_modified(request):
    if request.headers.get('If-Modified-Since'):
        return Page(status=304)
    return html_page('stable', '<p>unchanged</p>',
                     headers={'Last-Modified': 'Mon, 02 Nov 2026 00:00:00 GMT'})


@pytest.fixture(scope='module')
def warc_site(testweb):
    host = 'warc.test'
    testweb.add(host, '/robots.txt', Page(status=404))
    testweb.add(host, '/', html_page('home', BIG, links=['/gz', '/chunked', '/old', '/missing',
                                                        '/stable', '/denied/x']))
    testweb.add(host, '/gz', Page(body=gzip.compress(html_page('gz', BIG).body),
                                  headers={'Content-Encoding': 'gzip'}))
    testweb.add(host, '/chunked', Raw(_chunked))
    testweb.add(host, '/old', redirect('/'))
    testweb.add(host, '/missing', Page(status=404, body=b'not here'))
    testweb.add(host, '/stable', _not_modified)
    testweb.add('warc2.test', '/robots.txt', Page(body=b'User-agent: *\nDisallow: /\n',
                                                  content_type='text/plain'))
    testweb.add('warc2.test', '/', html_page('never fetched'))
    return host


def _conf(web, *more):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.05',
            '-D', 'domain.extra.suffixes=test', '-D', 'db.fetch.interval.default=86400', *more]


def _warc_records(paths):
    records = []
    for path in paths:
        with open(path, 'rb') as f:
            data = f.read()
        kinds = [r[0] for r in _checked(data)]
        assert kinds[0] == 'warcinfo' and 'warcinfo' not in kinds[1:], path
        proc = subprocess.run([sys.executable, '-m', 'warcio.cli', 'check', path],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        records += _checked(data)
    return records


def _payload(record):
    """A response's payload with its content coding undone (as the content record has it)."""
    _, _, http, payload = record
    if (http.get_header('Content-Encoding') or '').lower() == 'gzip':
        return gzip.decompress(payload)
    return payload


def test_a_crawl_with_store_warc_archives_every_exchange(web, warc_site, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://warc.test/', 'http://warc2.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '3', '--now', NOW,
            '--round-interval', '172800', *_conf(web, '-D', 'fetcher.store.warc=true'))
    layout = CrawlLayout(crawl)
    fetched_pages = exchanges = 0
    revisits = []
    for segment in layout.segment_names():
        files = layout.part_files(segment, WARC)
        assert files and all(f.endswith('.warc.gz') for f in files)
        records = _warc_records(files)
        info = records[0]
        assert f'isPartOf: {segment}' in info[3].decode()
        fetch = [r for r in iter_records(layout.part_files(segment, CRAWL_FETCH))
                 if r['status'] != 'linked']
        with_response = [r for r in fetch if r['http_code'] is not None]
        responses = {r[1]['WARC-Target-URI']: r for r in records if r[0] == 'response'}
        revisits += [r[1]['WARC-Target-URI'] for r in records if r[0] == 'revisit']
        requests = [r for r in records if r[0] == 'request']
        # one response (or revisit) per page that answered, one request per response
        assert len(responses) + len([r for r in records if r[0] == 'revisit']) == \
            len(with_response) == len(requests)
        assert {r['url'] for r in with_response if r['http_code'] != 304} == set(responses)
        # round trip: each content record is the response's payload, decoded
        for content in iter_records(layout.part_files(segment, CONTENT)):
            record = responses[content['url']]
            assert _payload(record) == content['content'], content['url']
            assert record[2].get_statuscode() == str(content['http_code'])
        fetched_pages += len(with_response)
        exchanges += len(requests)
    assert fetched_pages == exchanges >= 8
    assert revisits == ['http://warc.test/stable']
    assert not [r for r in web.log if r.host == 'warc2.test' and r.path != '/robots.txt']


def test_a_crawl_without_the_flag_has_no_warc_and_warc_export_builds_them(web, warc_site,
                                                                          tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://warc.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', NOW,
            '--round-interval', '172800', *_conf(web))
    layout = CrawlLayout(crawl)
    segments = layout.segment_names()
    assert not [s for s in segments if layout.has_part(s, WARC)]
    out = str(tmp_path / 'export')
    proc = run_cli('warc-export', crawl, out, '-D', 'runner.progress.seconds=0')
    assert re.search(r'warc-export: (\d+)/\1 records \(100%\), .*done in', proc.stderr)
    files = sorted(glob.glob(f'{out}/*.warc.gz'))
    assert len(files) == len(segments)
    contents = {}
    for segment in segments:
        for record in iter_records(layout.part_files(segment, CONTENT)):
            contents[(segment, record['url'])] = record['content']
    exported = {}
    for path in files:
        records = _warc_records([path])
        segment = os.path.basename(path).split('.', 1)[0]
        for kind, headers, _, payload in records[1:]:
            assert kind == 'response' and headers[warc.RECONSTRUCTED_HEADER]
            exported[(segment, headers['WARC-Target-URI'])] = payload
    assert exported == contents
    assert f'{len(contents)} response records' in proc.stdout
    # one named segment only; an output that exists is refused without touching it
    one = str(tmp_path / 'one')
    run_cli('warc-export', crawl, segments[0], one)
    assert len(glob.glob(f'{one}/*.warc.gz')) == 1
    again = run_cli('warc-export', crawl, one, check=False)
    assert again.returncode == 2 and 'exists' in again.stderr and 'Traceback' not in again.stderr


def test_a_killed_fetch_resumes_and_its_warc_has_each_page_once(web, testweb, tmp_path):
    hosts = [f'w{i}.test' for i in range(3)]
    for host in hosts:
        testweb.add(host, '/robots.txt', Page(status=404))
        for i in range(6):
            testweb.add(host, f'/p{i}', html_page(f'{host} {i}', BIG))
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', [f'http://{h}/p{i}' for h in hosts for i in range(6)])
    conf = _conf(web, '-D', 'fetcher.store.warc=true', '-D', 'fetcher.server.delay=0.3')
    run_cli('inject', crawl, seeds, '--now', NOW, *conf)
    run_cli('generate', crawl, '--now', NOW, *conf)
    layout = CrawlLayout(crawl)
    (segment,) = layout.segment_names()
    from beamcrawl.transforms.fetcher.journal.reading import read_journals
    proc = start_command('fetch', crawl, '--now', NOW, *conf)
    kill_when(proc, lambda: len(read_journals(layout.fetch_journal(segment)).done) >= 5,
              '5 URLs were journaled')
    assert not layout.has_part(segment, WARC)
    run_cli('fetch', crawl, '--now', NOW, *conf)
    records = _warc_records(layout.part_files(segment, WARC))
    responses = [r[1]['WARC-Target-URI'] for r in records if r[0] == 'response']
    assert sorted(responses) == sorted(f'http://{h}/p{i}' for h in hosts for i in range(6))
    assert len([r for r in records if r[0] == 'request']) == 18


def test_publishing_keeps_the_first_complete_attempt_of_each_url(tmp_path):
    """Two attempts of a URL (a streaming job restored from a checkpoint fetched it again) and
    one that never completed: the WARC part holds each done URL's records once."""
    from beamcrawl.transforms.fetcher.journal import paths, publishing, reading, writing
    from beamcrawl.transforms.fetcher.request import fetch_record, warc_record
    from beamcrawl.transforms.storage.records import crawl_datum
    journal_dir = str(tmp_path / 'journal')

    def attempt(writer, url, body, complete=True):
        data = warc.exchange_records(_exchange(body=body))
        results = [(WARC, warc_record(url, url, data))]
        if complete:
            own = fetch_record(crawl_datum(url, 'db_unfetched', fetch_time=0, fetch_interval=1),
                               'success', 200, 5)
            own['metadata'][paths.SOURCE_KEY] = url
            results.append((CRAWL_FETCH, own))
        writer.write(results)

    first, second = writing.JournalWriter(journal_dir, 'a'), writing.JournalWriter(journal_dir, 'b')
    attempt(first, 'http://a.test/1', b'first')
    attempt(first, 'http://a.test/2', b'cut short', complete=False)
    attempt(second, 'http://a.test/1', b'again')
    attempt(second, 'http://a.test/2', b'second')
    first.close(), second.close()
    done = reading.read_journals(journal_dir).done
    out = str(tmp_path / 'warc')
    info = publishing.WarcInfo((('isPartOf', 'seg'),), 1_700_000_000_000)
    publishing.publish_attempts(journal_dir, {WARC: out}, done, info)
    (path,) = glob.glob(f'{out}/*.warc.gz')
    records = _warc_records([path])
    # runs are read in path order (run-a, then run-b); a URL's first complete attempt wins
    assert sorted(r[3] for r in records if r[0] == 'response') == [b'first', b'second']
    assert len([r for r in records if r[0] == 'request']) == 2


def test_a_direct_connection_records_the_peer_address(web):
    """Without a proxy the client knows the address it connected to (WARC-IP-Address)."""
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.base.config import load_config
    from beamcrawl.transforms.fetcher.http import HttpClient
    cfg = load_config(overrides={'http.agent.name': 'testbot', 'fetcher.store.warc': True,
                                 'http.address.allow': '127.0.0.1/32'})
    client = HttpClient(settings.http_settings(cfg, 1))
    try:
        response = client.get(f'http://127.0.0.1:{web.port}/')
    finally:
        client.close()
    exchange = response.exchange
    assert exchange is not None and exchange.ip == '127.0.0.1'
    assert exchange.code == response.code and exchange.body == response.body
    (_, request, _, _), (_, headers, _, _) = _checked(warc.exchange_records(exchange))
    assert headers['WARC-IP-Address'] == '127.0.0.1'
    assert request['WARC-IP-Address'] == '127.0.0.1'
