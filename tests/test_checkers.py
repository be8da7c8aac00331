"""The checkers (Nutch's filterchecker, normalizerchecker, robotsparser, parsechecker,
indexchecker): their explanations agree with the filters and normalizers the crawl runs, and
the commands show what the fetcher, the parser and the indexer make of a URL of the test web."""

import json
import subprocess
import sys

import pytest

from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.urlrules import RegexFilter
from tests.conftest import ROOT, cli_env, run_cli, write_seeds
from tests.testweb import Page, html_page

NOW = 1795305600000

RULES = """# comment
-^ftp:
> b.test
-/secret
<
-\\.(gif|jpg)$
+^http://(www\\.)?a\\.test/
+^http://b\\.test/
+^http://127\\.
"""


@pytest.mark.parametrize('url, accepted, rule', [
    ('ftp://a.test/x', False, 'regex-urlfilter.txt:2: -^ftp:'),
    ('http://b.test/secret/1', False, 'regex-urlfilter.txt:4: -/secret (in > b.test)'),
    ('http://www.a.test/secret/1', True, 'regex-urlfilter.txt:7: +^http://(www\\.)?a\\.test/'),
    ('http://b.test/p.GIF', True, 'regex-urlfilter.txt:8: +^http://b\\.test/'),
    ('http://b.test/p.gif', False, 'regex-urlfilter.txt:6: -\\.(gif|jpg)$'),
    ('http://c.test/', False, 'no rule matched (a URL no rule accepts is rejected)'),
])
def test_the_filter_names_the_rule_that_decided(url, accepted, rule):
    rules = RegexFilter.parse(RULES, DomainHelper(['test']))
    assert rules.explain(url) == (accepted, rule)
    assert rules(url) is accepted                # the verdict the crawl uses


URLS = ['http://Example.COM:80/a/../b.html', 'http://example.com/x.gif', 'ftp://example.com/',
        'http://example.com/?a=1&PHPSESSID=0123456789abcdef0123456789abcdef',
        'http://127.0.0.1/', 'mailto:someone@example.com', 'http://example.com/a//b?',
        'HTTP://www.Example.com/%7Euser/', 'http://[bad/']


def test_explanations_agree_with_the_crawls_own_verdicts(cfg):
    """explain_filter and explain_normalize against accept/denied and normalize: the crawl's
    own functions are the oracle, on the bundled rule files."""
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.policy.urlparts import MalformedUrl
    policy = settings.url_policy(cfg)
    for url in URLS:
        accepted, why = policy.explain_filter(url)
        try:
            expected = policy.accept(url) and not policy.denied(url)
        except MalformedUrl:
            expected = False
        assert accepted == expected, (url, why)
        assert why
        try:
            normalized = policy.normalize(url)
        except MalformedUrl:
            with pytest.raises(MalformedUrl):
                policy.explain_normalize(url)
            continue
        assert policy.explain_normalize(url)[0] == normalized


def _run(*args, stdin=''):
    return subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', *args], cwd=ROOT,
                          input=stdin, capture_output=True, text=True, timeout=300,
                          env=cli_env())


def test_filterchecker_prints_nutchs_verdicts_with_the_rule(tmp_path):
    (tmp_path / 'rules.txt').write_text(RULES)
    proc = _run('filterchecker', '-D', f'urlfilter.regex.file={tmp_path / "rules.txt"}',
                '-D', 'domain.extra.suffixes=test',
                stdin='http://b.test/p.gif\nhttp://www.a.test/\n\nhttp://127.0.0.1/\n')
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('-http://b.test/p.gif\t')
    assert lines[0].endswith(':6: -\\.(gif|jpg)$')
    assert lines[1].startswith('+http://www.a.test/\t') and ':7: +^http' in lines[1]
    assert lines[2].startswith('-http://127.0.0.1/\t') and 'http.address.deny' in lines[2]
    assert len(lines) == 3


def test_normalizerchecker_names_what_changed_each_url():
    proc = _run('normalizerchecker', stdin='http://Example.COM:80/a/../b.html\n'
                'http://example.com/?a=1&PHPSESSID=0123456789abcdef0123456789abcdef\n'
                'http://example.com/b.html\nhttp://[bad/\n')
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == 'http://example.com/b.html\tbasic'
    assert lines[1].startswith('http://example.com/?a=1\tregex-normalize.xml rule 1 (')
    assert lines[2] == 'http://example.com/b.html\tunchanged'
    assert lines[3].startswith('!http://[bad/\tmalformed')


def test_filterchecker_refuses_a_bad_rule_file_in_one_line(tmp_path):
    (tmp_path / 'rules.txt').write_text('+(unclosed\n')
    proc = _run('filterchecker', '-D', f'urlfilter.regex.file={tmp_path / "rules.txt"}',
                stdin='http://a.test/\n')
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and 'rules.txt:1' in proc.stderr


ROBOTS = b'User-agent: *\nDisallow: /private\nCrawl-delay: 2\n\nUser-agent: mybot\n' \
         b'Disallow: /\n\nSitemap: http://x.test/sm.xml\n'


def test_robotsparser_tests_urls_and_paths_for_an_agent(tmp_path):
    (tmp_path / 'robots.txt').write_bytes(ROBOTS)
    urls = write_seeds(tmp_path / 'urls', ['/a.html', '/private/x', 'http://x.test/private'])
    out = run_cli('robotsparser', str(tmp_path / 'robots.txt'), urls).stdout.splitlines()
    assert out == ['Testing robots.txt for agent names: * (any other agent)', 'Crawl-delay: 2',
                   'Sitemap: http://x.test/sm.xml', 'allowed:\t/a.html',
                   'not allowed:\t/private/x', 'not allowed:\thttp://x.test/private']
    out = run_cli('robotsparser', str(tmp_path / 'robots.txt'), urls, 'MyBot,other'
                  ).stdout.splitlines()
    assert out[0] == 'Testing robots.txt for agent names: mybot,other'
    assert [line.split('\t')[0] for line in out[2:]] == ['not allowed:'] * 3
    proc = run_cli('robotsparser', str(tmp_path / 'none.txt'), urls, check=False)
    assert proc.returncode == 2 and 'none.txt: cannot read' in proc.stderr


def test_the_checkers_read_a_compressed_url_file_decompressed(tmp_path):
    """filterchecker, normalizerchecker and robotsparser read `--urls u.gz` (or the robotsparser's
    URL file) as they read it plain; a damaged one is a one-line error."""
    import gzip
    import lzma
    urls = ['http://www.a.test/', 'http://B.test/x/../private/y']
    plain = write_seeds(tmp_path / 'urls.txt', urls)
    (tmp_path / 'urls.txt.gz').write_bytes(gzip.compress(open(plain, 'rb').read()))
    (tmp_path / 'urls.xz').write_bytes(lzma.compress(open(plain, 'rb').read()))
    (tmp_path / 'cut.gz').write_bytes(gzip.compress(open(plain, 'rb').read())[:-5])
    (tmp_path / 'robots.txt').write_bytes(ROBOTS)
    for command in (['filterchecker', '-D', 'domain.extra.suffixes=test'],
                    ['normalizerchecker']):
        want = run_cli(*command, '--urls', plain).stdout
        assert want.count('\n') == 2
        for name in ('urls.txt.gz', 'urls.xz'):
            assert run_cli(*command, '--urls', str(tmp_path / name)).stdout == want
        proc = run_cli(*command, '--urls', str(tmp_path / 'cut.gz'), check=False)
        assert proc.returncode == 2 and 'Traceback' not in proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f'beamcrawl {command[0]}: {tmp_path / "cut.gz"}: not a readable gzip file (it ends '
            'in the middle of a stream: cut short?)']
    robots = str(tmp_path / 'robots.txt')
    want = run_cli('robotsparser', robots, plain).stdout
    assert 'allowed:\thttp://www.a.test/' in want and want.count('allowed:') == 2
    assert run_cli('robotsparser', robots, str(tmp_path / 'urls.txt.gz')).stdout == want
    proc = run_cli('robotsparser', robots, str(tmp_path / 'cut.gz'), check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert 'cut.gz: not a readable gzip file' in proc.stderr


def _conf(web, *extra):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'domain.extra.suffixes=test',
            '-D', 'fetcher.server.delay=0', '--now', str(NOW), *extra]


@pytest.fixture(scope='module', autouse=True)
def check_site(testweb):
    testweb.add('check.test', '/robots.txt', Page(
        body=b'User-agent: *\nDisallow: /no/\nSitemap: http://check.test/sitemap.xml\n',
        content_type='text/plain'))
    testweb.add('check.test', '/', html_page('Check home', links=['/a', '/no/x', 'mailto:x@y'],
                                             body_html='<p>Some words about checking pages.</p>'))
    testweb.add('check.test', '/a', html_page('Page A', links=['/']))
    testweb.add('check.test', '/old', Page(status=301, headers={'Location': '/a'}))
    testweb.add('check.test', '/gone', Page(status=410, body=b'gone'))
    testweb.add('linker.test', '/robots.txt', Page(status=404))
    testweb.add('linker.test', '/', html_page('Linker', links=['http://check.test/']))


def test_robotsparser_fetches_a_robots_url_as_the_fetcher_does(web, tmp_path):
    urls = write_seeds(tmp_path / 'urls', ['http://check.test/no/x', 'http://check.test/a'])
    out = run_cli('robotsparser', 'http://check.test/robots.txt', urls, *_conf(web)
                  ).stdout.splitlines()
    assert out[1:] == ['Sitemap: http://check.test/sitemap.xml',
                       'not allowed:\thttp://check.test/no/x', 'allowed:\thttp://check.test/a']
    assert [r.path for r in web.requests_for('check.test')] == ['/robots.txt']


def test_parsechecker_shows_the_fetch_and_the_parse(web):
    proc = run_cli('parsechecker', 'http://check.test/', '--dump-text', *_conf(web))
    out = proc.stdout
    assert 'fetch status: fetch_success (protocol success, HTTP 200)' in out
    assert 'contentType: text/html' in out and 'Title: Check home' in out
    # outlinks after normalizing and filtering: the mailto link is filtered out, as in parse
    assert 'Outlinks: 2' in out
    assert '  outlink: toUrl: http://check.test/a anchor: link 0' in out
    assert 'Some words about checking pages.' in out.split('ParseText')[1]
    assert 'lang.detected=en' in out
    as_json = json.loads(run_cli('parsechecker', 'http://check.test/a', '--json',
                                 *_conf(web)).stdout)
    assert as_json['parse_data']['title'] == 'Page A'
    assert as_json['fetch']['http_code'] == 200 and as_json['parse_text'] is None


def test_parsechecker_follows_redirects_only_when_asked(web):
    proc = run_cli('parsechecker', 'http://check.test/old', *_conf(web), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        'beamcrawl parsechecker: http://check.test/old: fetch status fetch_redir_perm (protocol '
        'moved, HTTP 301); redirect to http://check.test/a not followed (--follow-redirects)')
    proc = run_cli('parsechecker', 'http://check.test/old', '--follow-redirects', *_conf(web))
    assert 'Title: Page A' in proc.stdout
    assert 'redirect: http://check.test/old -> http://check.test/a' in proc.stderr


@pytest.mark.parametrize('path, why', [
    ('/gone', 'fetch status fetch_gone (protocol gone, HTTP 410)'),
    ('/no/x', 'fetch status fetch_gone (protocol robots_denied)'),
])
def test_parsechecker_fails_in_one_line_when_there_is_nothing_to_parse(web, path, why):
    proc = run_cli('parsechecker', f'http://check.test{path}', *_conf(web), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == \
        f'beamcrawl parsechecker: http://check.test{path}: {why}'
    assert 'Traceback' not in proc.stderr


def test_indexchecker_shows_the_document_the_indexer_would_write(web, tmp_path):
    out = run_cli('indexchecker', 'http://check.test/', *_conf(web)).stdout
    fields = dict(line.split(' :\t', 1) for line in out.splitlines() if ' :\t' in line)
    assert fields['url'] == 'http://check.test/' and fields['title'] == 'Check home'
    assert fields['host'] == 'check.test' and fields['lang'] == 'en'
    assert fields['outlinks'] == '2' and fields['content_type'] == 'text/html'
    # With a crawl directory: its crawldb's score and its linkdb's anchors count.
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://linker.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', *_conf(web))
    out = run_cli('indexchecker', crawl, 'http://check.test/', '--json', *_conf(web)).stdout
    doc = json.loads(out)['document']
    assert doc['anchors'] == ['link 0']            # linker.test's link to it (other host)
    # merged into the crawl's record as updatedb would: the same signature, so not modified
    assert json.loads(out)['crawldb_status'] == 'db_notmodified'


def test_indexchecker_names_the_deletion(web):
    proc = run_cli('indexchecker', 'http://check.test/gone', *_conf(web), check=False)
    assert proc.returncode == 2
    assert 'http://check.test/gone: deleted from the index: db_gone' in proc.stderr
