"""URL normalizer, filters and domain helpers: table tests from the cases of Nutch's own
normalizer and filter tests."""

import re
import pickle

import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.policy.urls import (BasicNormalizer, DomainHelper, MalformedUrl,
                                              RegexFilter, RegexNormalizer, RuleError, host_of)

F = 'http://foo.com'
W = 'http://www.example.com/a/c/../b/search?q=foobar'

BASIC_CASES = [
    # percent-encoding
    (f'{F}/%66oo.html', f'{F}/foo.html'),
    (f'{F}/%66oo.htm%6c', f'{F}/foo.html'),
    (f'{F}/%66oo.ht%6dl', f'{F}/foo.html'),
    (f'{F}/%66oo.ht%6d%6c', f'{F}/foo.html'),
    (f'{F}/%66oo.htm%C0', f'{F}/foo.htm%C0'),
    (f'{F}/%66oo.htm%1A', f'{F}/foo.htm%1A'),
    (f'{F}/%66oo.htm%c0', f'{F}/foo.htm%C0'),
    (f'{F}/you%20too.html', f'{F}/you%20too.html'),
    (f'{F}/you too.html', f'{F}/you%20too.html'),
    (f'{F}/file.html%23cz', f'{F}/file.html%23cz'),
    (f'{F}/fast/dir%2fcz', f'{F}/fast/dir%2Fcz'),
    (f'{F}/\u001a!', f'{F}/%1A!'),
    (f'{F}/\u0001!', f'{F}/%01!'),
    ('http://mydomain.com/en Español.aspx', 'http://mydomain.com/en%20Espa%C3%B1ol.aspx'),
    ('http://x.com/s?q=a%26b&m=10', 'http://x.com/s?q=a%26b&m=10'),
    ('http://x.com/show?http%3A%2F%2Fx.com%2Fb', 'http://x.com/show?http%3A%2F%2Fx.com%2Fb'),
    ('http://google.com/search?q=c%2B%2B', 'http://google.com/search?q=c%2B%2B'),
    ('http://x.com/s?q=a+b', 'http://x.com/s?q=a+b'),
    ('http://bücher.de/', 'http://bücher.de/'),
    ('http://x.com/./a/../%66.html', 'http://x.com/f.html'),
    ('http://x.com/?x[y]=1', 'http://x.com/?x%5By%5D=1'),
    ('http://x.com/foo\u0080', 'http://x.com/foo%C2%80'),
    ('http://x.com/foo%c2%80', 'http://x.com/foo%C2%80'),
    (f'{F}/{{{{stuff}}}} ', f'{F}/%7B%7Bstuff%7D%7D'),
    # general rules
    (' http://foo.com/ ', 'http://foo.com/'),
    ('HTTP://foo.com/', 'http://foo.com/'),
    ('http://Foo.Com/index.html', 'http://foo.com/index.html'),
    ('https://example%2Ecom/', 'https://example.com/'),
    ('https://www.0251-sachverst%c3%a4ndiger.de/', 'https://www.0251-sachverständiger.de/'),
    ('http://foo.com:80/index.html', 'http://foo.com/index.html'),
    ('https://foo.com:443/index.html', 'https://foo.com/index.html'),
    ('http://foo.com:81/', 'http://foo.com:81/'),
    ('http://example.com:/', 'http://example.com/'),
    ('https://example.com:/foobar.html', 'https://example.com/foobar.html'),
    ('http://foo.com', 'http://foo.com/'),
    ('http://foo.com/foo.html#ref', 'http://foo.com/foo.html'),
    # dot segments and duplicate slashes
    (f'{F}/..', f'{F}/'),
    (f'{F}/aa/./foo.html', f'{F}/aa/foo.html'),
    (f'{F}/aa/../', f'{F}/'),
    (f'{F}/aa/bb/../', f'{F}/aa/'),
    (f'{F}/aa/..', f'{F}/'),
    (f'{F}/aa/bb/cc/../../foo.html', f'{F}/aa/foo.html'),
    (f'{F}/aa/bb/../cc/dd/../ee/foo.html', f'{F}/aa/cc/ee/foo.html'),
    (f'{F}/../foo.html', f'{F}/foo.html'),
    (f'{F}/../../foo.html', f'{F}/foo.html'),
    (f'{F}/../aa/../foo.html', f'{F}/foo.html'),
    (f'{F}/aa/../../foo.html', f'{F}/foo.html'),
    (f'{F}/aa/../bb/../foo.html/../../', f'{F}/'),
    (f'{F}/../aa/foo.html', f'{F}/aa/foo.html'),
    (f'{F}/a..a/foo.html', f'{F}/a..a/foo.html'),
    (f'{F}/a..a/../foo.html', f'{F}/foo.html'),
    (f'{F}/foo.foo/../foo.html', f'{F}/foo.html'),
    (f'{F}//aa/bb/foo.html', f'{F}/aa/bb/foo.html'),
    (f'{F}/aa//bb/foo.html', f'{F}/aa/bb/foo.html'),
    (f'{F}/aa/bb//foo.html', f'{F}/aa/bb/foo.html'),
    (f'{F}//aa//bb//foo.html', f'{F}/aa/bb/foo.html'),
    (f'{F}////aa////bb////foo.html', f'{F}/aa/bb/foo.html'),
    (f'{F}/aa?referer=http://bar.com', f'{F}/aa?referer=http://bar.com'),
    # edge cases
    ('file:///foo/bar.txt', 'file:///foo/bar.txt'),
    ('ftp:/', 'ftp:/'),
    ('http:', 'http:/'),
    ('http:////', 'http:/'),
    ('http:///////', 'http:/'),
    ('http://example.com?a=1', 'http://example.com/?a=1'),
    (W + '|', 'http://www.example.com/a/b/search?q=foobar%7C'),
    (W + '%', 'http://www.example.com/a/b/search?q=foobar%25'),
    (W + '"', 'http://www.example.com/a/b/search?q=foobar%22'),
    (W + '^', 'http://www.example.com/a/b/search?q=foobar%5E'),
    (W + '<', 'http://www.example.com/a/b/search?q=foobar%3C'),
    (W + '>', 'http://www.example.com/a/b/search?q=foobar%3E'),
    (W + '`', 'http://www.example.com/a/b/search?q=foobar%60'),
    ('http://www.example.com/p%zz%77%v', 'http://www.example.com/p%25zzw%25v'),
    (W + '%2', 'http://www.example.com/a/b/search?q=foobar%252'),
    (W + '%25', 'http://www.example.com/a/b/search?q=foobar%25'),
    (W + '%252', 'http://www.example.com/a/b/search?q=foobar%252'),
    ('file:/var/www/html/foo/../bar/index.html', 'file:/var/www/html/bar/index.html'),
    ('file:/var/www/html/////./bar/index.html', 'file:/var/www/html/bar/index.html'),
    # userinfo (NUTCH-3087)
    ('ftp://user@ftp.example.org/path/file.txt', 'ftp://user@ftp.example.org/path/file.txt'),
    ('ftp://john.doe@ftp.example.org/', 'ftp://john.doe@ftp.example.org/'),
    ('ftp://user:password@ftp.example.org/path/file.txt',
     'ftp://user:password@ftp.example.org/path/file.txt'),
    ('https://john.doe@www.example.com:1234/forum/questions/?tag=networking&order=newest#top',
     'https://www.example.com:1234/forum/questions/?tag=networking&order=newest'),
    ('ftp://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/../path/file.txt',
     'ftp://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/path/file.txt'),
    ('https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/',
     'https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/'),
    ('https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]:443/',
     'https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/'),
    ('https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/path/../to/index.html',
     'https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/to/index.html'),
    ('', ''),
]


@pytest.mark.parametrize('url,expected', BASIC_CASES)
def test_basic_normalizer(url, expected):
    assert BasicNormalizer()(url) == expected


def test_enough_normalizer_cases():
    assert len(BASIC_CASES) >= 40


@pytest.mark.parametrize('idn,trim,url,expected', [
    ('toAscii', False, 'https://нэб.рф/', 'https://xn--90ax2c.xn--p1ai/'),
    ('toAscii', False, 'https://нЭб.РФ/', 'https://xn--90ax2c.xn--p1ai/'),
    ('toAscii', False, 'https://www.0251-sachverst%c3%a4ndiger.de/',
     'https://www.xn--0251-sachverstndiger-ozb.de/'),
    ('toUnicode', False, 'https://xn--90ax2c.xn--p1ai/', 'https://нэб.рф/'),
    ('toUnicode', False, 'https://Xn--90Ax2c.xN--P1ai/', 'https://нэб.рф/'),
    ('', True, 'https://www.example.org./', 'https://www.example.org/'),
    ('', False, 'https://www.example.org./', 'https://www.example.org./'),
])
def test_host_options(idn, trim, url, expected):
    assert BasicNormalizer(idn, trim)(url) == expected


@pytest.mark.parametrize('idn,url', [
    ('', 'https://example%2Xcom/'),
    ('toAscii', 'https://abc%FEdef.org/'),
    ('', 'http://foo.com:abc/'),
    ('', 'http://foo.com:99999/'),
    ('', 'no scheme at all'),
    ('', 'http://[::1/'),
])
def test_malformed(idn, url):
    with pytest.raises(MalformedUrl):
        BasicNormalizer(idn)(url)


def test_regex_normalizer_chain_with_bundled_rules(cfg):
    policy = settings.url_policy(cfg)
    cases = {
        'http://www.example.com//path/to//somewhere.html':
            'http://www.example.com/path/to/somewhere.html',
        'http://a.test/page;jsessionid=ABC123?x=1': 'http://a.test/page?x=1',
        'http://a.test/page?PHPSESSID=ab12&x=1': 'http://a.test/page?x=1',
        'http://a.test/page?x=1&sid=77&y=2': 'http://a.test/page?x=1&y=2',
        'http://a.test/page?x=1&&&y=2': 'http://a.test/page?x=1&y=2',
        'http://a.test/page?': 'http://a.test/page',
        'http://a.test/basid=1': 'http://a.test/basid=1',   # not a session id parameter
    }
    for url, expected in cases.items():
        assert policy.normalize(url) == expected, url


def test_regex_normalizer_xml_errors():
    with pytest.raises(RuleError, match='not valid XML'):
        RegexNormalizer.parse('<regex-normalize><regex>', 'x.xml')
    with pytest.raises(RuleError, match='rule 1'):
        RegexNormalizer.parse('<r><regex><pattern>(</pattern></regex></r>', 'x.xml')
    n = RegexNormalizer.parse('<r><regex><pattern>/(a+)/</pattern>'
                              '<substitution>/$1-$1/</substitution></regex></r>')
    assert n('http://x.test/aa/b') == 'http://x.test/aa-aa/b'


WHOLE_WEB = """# whole web
-^(?:file|ftp|mailto):
-(?i)\\.(?:gif|jpg|ico|css|sit|eps|wmf|zip|ppt|mpg|xls|gz|rpm|tgz|mov|exe)$
-[?*!@=]
-.*(/.+?)/.*?\\1/.*?\\1/
+.
"""

INTRANET = """-^(?:file|ftp|mailto):
-(?i)\\.(?:gif|jpg|png|ico|css|sit|eps|wmf|zip|ppt|mpg|xls|gz|rpm|tgz|mov|exe)$
-[?*!@=]
-.*(/.+?)/.*?\\1/.*?\\1/
+^https?://(?:[a-z0-9]*\\.)*MY.DOMAIN.NAME/
-.
"""

NUTCH1838 = """> www.example.org
-skip
<
> www.example.com
+skip
<
-.
"""


@pytest.mark.parametrize('rules,url,accepted', [
    (WHOLE_WEB, 'file://home/jc/nutch/index.html', False),
    (WHOLE_WEB, 'ftp://ftp.apache.org/nutch.html', False),
    (WHOLE_WEB, 'mailto:jerome.charron@gmail.com', False),
    (WHOLE_WEB, 'news://any.news.server/comp.lang.java', True),
    (WHOLE_WEB, 'whois:/nutch.org', True),
    (WHOLE_WEB, 'http://www.nutch.org/nutch.gif', False),
    (WHOLE_WEB, 'http://www.nutch.org/nutch.eps', False),
    (WHOLE_WEB, 'http://www.nutch.org/nutch?q=nutch', False),
    (WHOLE_WEB, 'http://www.nutch.org/', True),
    (WHOLE_WEB, 'http://www.nutch.org/abcd/foo/bar/foo/bar/foo/', False),
    (WHOLE_WEB, 'http://www.nutch.org/abcd/foo/bar/xyz/foo/bar/foo/', False),
    (INTRANET, 'news://any.news.server/comp.lang.java', False),
    (INTRANET, 'whois:/nutch.org', False),
    (INTRANET, 'http://MY.DOMAIN.NAME/', True),
    (INTRANET, 'http://MY.DOMAIN.NAME/nutch', True),
    (INTRANET, 'http://www.MY.DOMAIN.NAME/', True),
    (NUTCH1838, 'http://www.example.org/skip-me-now', False),
    (NUTCH1838, 'http://www.example.com/noone-can-skip-me', True),
    (NUTCH1838, 'http://www.example.nl/i-am-filtered', False),
])
def test_regex_filter_nutch_samples(rules, url, accepted):
    assert RegexFilter.parse(rules, DomainHelper())(url) is accepted


@pytest.mark.parametrize('url,accepted', [
    ('http://www.nutch.org/', True),
    ('http://example.com/page.html', True),
    ('http://example.com/~user/', True),
    ('http://www.nutch.org/abcd/foo/bar/xyz/foo/bar/foo/', True),
    ('http://www.nutch.org/nutch.gif', False),
    ('http://example.com/style.CSS', False),
    ('https://example.com/index.php?id=1', True),     # beamcrawl allows query strings
    ('http://example.com/a@b', False),
    ('http://www.nutch.org/abcd/foo/bar/foo/bar/foo/', False),
    ('http://example.com/a/b/a/b/a/b/', False),
    ('http://example.com/x/a/y/a/z/a/', False),
    ('mailto:someone@example.com', False),
    ('ftp://example.com/', False),
    ('http:/', False),                                 # no host
    ('news://any.news.server/comp.lang.java', False),  # scheme not allowed
])
def test_bundled_filter(cfg, url, accepted):
    assert settings.url_policy(cfg).accept(url) is accepted


def test_filter_rule_errors():
    with pytest.raises(RuleError, match=r'f.txt:2'):
        RegexFilter.parse('+.\n*bad\n', DomainHelper(), 'f.txt')
    with pytest.raises(RuleError, match=r'f.txt:1: bad regex'):
        RegexFilter.parse('+(\n', DomainHelper(), 'f.txt')


def test_domain_scoped_block_matches_registered_domain():
    f = RegexFilter.parse('> example.org\n-private\n<\n+.\n', DomainHelper())
    assert not f('http://www.example.org/private/1')
    assert f('http://www.example.com/private/1')


@pytest.mark.parametrize('host,domain', [
    ('lucene.apache.org', 'apache.org'),
    ('lucene.apache.org.', 'apache.org'),
    ('en.wikipedia.org', 'wikipedia.org'),
    ('140.211.11.130', '140.211.11.130'),
    ('www.example.co.uk:8080', 'example.co.uk'),
    ('com', 'com'),
    ('www.example.co.uk.com', 'uk.com'),
    ('example.com.nn', 'example.com.nn'),
    ('www.edu.tr.xyz', 'tr.xyz'),
    ('www.example.c.se', 'example.c.se'),
    ('www.example.plc.co.im', 'example.plc.co.im'),
    ('www.example.2000.hu', 'example.2000.hu'),
    ('www.example.flå.no', 'example.flå.no'),
    ('www.example.栃木.jp', 'example.栃木.jp'),
    ('', ''),
])
def test_domain_names(host, domain):
    assert DomainHelper().domain(host) == domain


def test_url_domain_and_extra_suffixes():
    assert DomainHelper().url_domain('http://') == ''
    assert DomainHelper().url_domain('file:/path/index.html') == ''
    assert DomainHelper().domain('a.b.example.test') == 'a.b.example.test'  # unknown suffix
    assert DomainHelper(['test']).domain('a.b.example.test') == 'example.test'
    assert host_of('http://User@WWW.A.test:8080/x') == 'www.a.test'


def test_policy_pickles_and_works_after(cfg):
    policy = pickle.loads(pickle.dumps(settings.url_policy(cfg)))
    assert policy.clean('HTTP://WWW.A.TEST:80/x/../y') == ('http://www.a.test/y', '')
    assert policy.clean('http://a.test/logo.png') == (None, 'filtered')
    assert policy.clean('http://a.test:x/') == (None, 'malformed')
    assert policy.domains.domain('www.a.test') == 'a.test'


@pytest.mark.parametrize('pattern', [
    r'(?i)\.(?:gif|jpg|png|ico|css|js)$',     # Nutch's suffix rule: searched in the tail
    r'\.html?$', r'[0-9]{3}$', '.',           # a tail rule; `.`: any character
    r'(?<=/)x$', r'\bx$', r'a|b$', r'(?m)x$', r'(x)\1$', r'^http://a\.test/$',   # searched whole
    r'x+$', r'\$',
])
def test_filter_searchers_find_what_the_regex_finds(pattern):
    from beamcrawl.transforms.policy.urls import _searcher
    regex = re.compile(pattern)
    fast = _searcher(regex)
    urls = ['', '\n', '\nx', 'x', 'xx\n', 'http://a.test/', 'http://a.test/p.GIF', 'a.gif\n',
            'http://a.test/x', 'http://a.test/xx', 'http://a.test/a x', 'b', 'http://a.test/123',
            'http://a.test/index.htm', 'q.html\n', 'cost$', '/x']
    for url in urls:
        assert bool(fast(url)) == bool(regex.search(url)), (pattern, url)
