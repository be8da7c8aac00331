"""dump (Nutch's FileDumper): content to files by type, under names a hostile URL or content
type cannot move out of the output directory."""

import os

import pytest

from beamcrawl.transforms.policy.dumpnames import dump_path, mime_of
from tests.conftest import run_cli, write_seeds
from tests.testweb import Page, html_page

NOW = 1795305600000
PNG = b'\x89PNG\r\n\x1a\n' + b'\0' * 40


@pytest.mark.parametrize('content_type, mime', [
    ('text/html; charset=utf-8', 'text/html'), ('Image/SVG+XML', 'image/svg+xml'),
    ('', 'unknown/unknown'), ('../../etc', 'unknown/unknown'), ('text/ht ml', 'unknown/unknown'),
    ('a/' + 'b' * 100, 'unknown/unknown'),
])
def test_mime_of(content_type, mime):
    assert mime_of(content_type) == mime


@pytest.mark.parametrize('url, content_type, path', [
    ('http://a.test/dir/page.html', 'text/html', 'text/html/a.test/page-{}.html'),
    ('http://a.test/', 'text/html', 'text/html/a.test/index-{}.html'),
    ('http://a.test/../../etc/passwd', '../../x', 'unknown/unknown/a.test/passwd-{}.bin'),
    ('http://a.test/%2e%2e%2f%2e%2e', 'application/pdf', 'application/pdf/a.test/index-{}.pdf'),
    ('http://a.test/x' + 'y' * 300, 'text/plain', 'text/plain/a.test/x' + 'y' * 79 + '-{}.txt'),
    ('http://[::1]:80/a\x00b/', 'image/png', 'image/png/1/index-{}.png'),
])
def test_dump_paths_stay_inside_the_output(url, content_type, path):
    got = dump_path(url, content_type)
    digest = got.rsplit('-', 1)[1].split('.', 1)[0]
    assert len(digest) == 12 and got == path.format(digest)
    assert not os.path.isabs(got) and '..' not in got.split('/')
    assert dump_path(url, content_type, flat=True) == got.rsplit('/', 1)[1]
    assert dump_path(url + 'x', content_type) != got          # the hash tells URLs apart


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'domain.extra.suffixes=test',
            '-D', 'fetcher.server.delay=0', '--now', str(NOW)]


def test_dump_writes_content_by_type(web, tmp_path):
    web.add('dump.test', '/robots.txt', Page(status=404))
    web.add('dump.test', '/', html_page('Dump home', links=['/notes', '/pic']))
    web.add('dump.test', '/notes', Page(body=b'plain notes', content_type='text/plain'))
    web.add('dump.test', '/pic', Page(body=PNG, content_type='image/png'))
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://dump.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', *_conf(web))
    out = tmp_path / 'out'
    proc = run_cli('dump', crawl, str(out), '-D', 'runner.progress.seconds=0')
    assert 'dump: 3/3 records (100%)' in proc.stderr          # with its progress line
    assert proc.stdout.splitlines()[:3] == ['1\timage/png', '1\ttext/html', '1\ttext/plain']
    files = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, names in os.walk(out)
                   for f in names)
    assert len(files) == 4 and files[0] == '_urls.tsv'
    by_url = {line.split('\t')[1]: line.split('\t')[0]
              for line in (out / '_urls.tsv').read_text().splitlines()[1:]}
    assert (out / by_url['http://dump.test/pic']).read_bytes() == PNG
    assert by_url['http://dump.test/pic'].startswith('image/png/dump.test/pic-')
    assert (out / by_url['http://dump.test/notes']).read_bytes() == b'plain notes'
    flat = tmp_path / 'images'
    run_cli('dump', crawl, str(flat), '--mimetype', 'image', '--flat')
    assert sorted(os.listdir(flat)) == ['_urls.tsv', by_url['http://dump.test/pic'].split('/')[-1]]
    proc = run_cli('dump', crawl, str(flat), check=False)
    assert proc.returncode == 2 and 'exists' in proc.stderr
    assert not [n for n in os.listdir(tmp_path) if n.endswith('.partial')]
