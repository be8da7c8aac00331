"""The basic URL normalizer: table tests from the cases of Nutch's own normalizer tests."""


import random

import pytest

from beamcrawl.transforms.policy import normalize as normalize_module
from beamcrawl.transforms.policy.normalize import BasicNormalizer
from beamcrawl.transforms.policy.urlparts import MalformedUrl, scheme_host

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


def test_one_normalizer_gives_each_case_again_from_its_host_cache():
    """Hosts are remembered per normalizer: every case, asked twice of one normalizer (after
    all the others filled its cache), equals a fresh normalizer's answer, malformed hosts
    included, and a pickled normalizer carries no cache."""
    import pickle
    shared = BasicNormalizer()
    urls = [url for url, _ in BASIC_CASES] + ['https://example%2Xcom/', 'http://[::1/',
                                                'http://EXAMPLE.com/a', 'http://example.com/b']
    for _ in range(2):
        for url in urls:
            try:
                expected = BasicNormalizer()(url)
            except MalformedUrl:
                with pytest.raises(MalformedUrl):
                    shared(url)
                continue
            assert shared(url) == expected
    assert shared._hosts and '_hosts' not in pickle.loads(pickle.dumps(shared)).__dict__


def _outcome(fn, url):
    try:
        return fn(url)
    except MalformedUrl as e:
        return ('MalformedUrl', str(e))


# Pieces that take a URL off the usual way, or just to its edge (normalize.py `_USUAL`).
_SCHEMES = ['http', 'https', 'ftp', 'HTTP', 'Http', 'file', 'mailto', 'gopher', 'http:', 'h']
_HOSTS = ['a.test', 'WWW.B.Test', 'c.test:80', 'c.test:8080', 'c.test:', 'xn--mnchen-3ya.test',
          'münchen.test', '127.0.0.1', '0x7f.1', '1.2.3.999', '[::1]', '[::1', 'e.test.', '.',
          'u@f.test', 'u:p@f.test', 'g%41.test', 'h_i.test', 'a..b.test', '-x.test', '',
          'x' * 64 + '.test', 'a b.test', 'a\tb', '123']
_PIECES = ['p', '..', '.', '', 'index.html', 'a b', '%7e', '%zz', '%41', 'x;jsessionid=1', '!',
           '*', '@', ':', "'", '~', 'ü', '\x01', '|', '"', '{', '[', '.hidden', 'a..b', '...']
_TAILS = ['', '?', '?a=1', '?a=1&&b=2', '?a//b', '?a/./b', '?x=%20', '?a b', '?%41', '#', '#f',
          '#a?b', '?q#f', ' ', '\n', '\t', '\r\n', '\x0c', '\u3000', '\u00a0']


@pytest.mark.parametrize('idn,trim', [('', False), ('toAscii', False), ('toUnicode', True)])
def test_usual_way_gives_what_every_step_gives(idn, trim):
    """__call__'s shorter way for the usual URL against _full (every step) on random URLs
    built of pieces that fall on both sides of its pattern, and on the cases above: the same
    URL or the same error."""
    rnd = random.Random(46)
    urls = [url for url, _ in BASIC_CASES]
    for _ in range(20000):
        if rnd.random() < 0.5:      # anything
            path = '/'.join(rnd.choice(_PIECES) for _ in range(rnd.randrange(4)))
            url = (rnd.choice(['', ' ', '\t']) + rnd.choice(_SCHEMES)
                   + rnd.choice(['://', ':/', ':']) + rnd.choice(_HOSTS)
                   + rnd.choice(['/', '//', '', '/./']) + path + rnd.choice(_TAILS))
        else:                       # a usual URL, then perhaps one character changed
            url = (f'{rnd.choice(["http", "https", "ftp"])}://{rnd.choice(_HOSTS[:2])}/'
                   + '/'.join(rnd.choice(['p', 'index.html', '~u', "a!$&'()*+,;=:@b"])
                              for _ in range(rnd.randrange(3))) + rnd.choice(['', '?a=1&b']))
            if rnd.random() < 0.7:
                at = rnd.randrange(len(url) + 1)
                url = url[:at] + rnd.choice('./:@?#%[] \t\nAü\x00-_') + url[at + 1:]
        urls.append(url)
    short, full = BasicNormalizer(idn, trim), BasicNormalizer(idn, trim)
    usual = known = 0
    for url in urls:
        assert _outcome(short, url) == _outcome(full._full, url), url
        usual += normalize_module._USUAL.match(url) is not None
        try:
            normalized, parts = short.with_parts(url)
        except MalformedUrl:
            continue
        if parts is not None:      # the scheme and host, when given, are scheme_host's
            assert parts == scheme_host(normalized), url
            known += 1
    assert usual > 2000 and known > 2000      # the shorter way was taken often
