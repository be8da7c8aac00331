"""Rule files: the regex normalizer and filter, with the cases of Nutch's own tests."""

import random
import re

import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.policy import urlrules
from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.urlrules import RegexFilter, RegexNormalizer, RuleError


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


# Rule sets for the normalizer's oracle test: the bundled file's patterns, and patterns whose
# guard (the characters every match holds), tail search or plain search decides (refast).
NORMALIZER_RULES = [
    None,                                                   # conf/regex-normalize.xml
    [(r'(?i)(?:;|(?<=[?&]))_?(?:l|j|bv_)?(?:sid|phpsessid|sessionid)=[^?&#;]*', ''),
     (r'&{2,}', '&'), (r'=(\w*)=', r'=\g<1>'), (r'(/[^/]+)/\1/', r'\g<1>/'), (r'(?i)X$', 'y')],
    [(r'x*', '-'), (r'^http://', 'https://'), (r'(?<!:)//+', '/'), (r'[?&.]$', ''),
     (r'\?&+', '?'), (r'(?m)a$', 'b'), (r'//', '/'), (r'(?:/a){3}', '/b'), (r'\.\.', '.')],
]


def _plain_normalizer(rules):
    """The rules applied one after the other, each everywhere (Nutch's loop), no shortcut."""
    compiled = [(re.compile(urlrules._java_regex(p)), s) for p, s in rules]

    def normalize(url):
        for regex, substitution in compiled:
            url = regex.sub(substitution, url)
        return url
    return normalize


def _random_urls(n, seed):
    rnd = random.Random(seed)
    pieces = ['a', 'A', 'x', 'X', '/', '//', '///', '.', '..', '?', '&', '&&', '=', ';', '#',
              'sid=1', 'PHPSESSID=z', 'jsessionid=', ':', '://', 'http://', 'file://', '\n',
              'b', 'a/a/', '/a/a/a', ' ']
    urls = []
    for _ in range(n):
        url = 'http://www.h.test/' if rnd.random() < 0.5 else ''
        urls.append(url + ''.join(rnd.choice(pieces) for _ in range(rnd.randrange(9))))
    return urls


@pytest.mark.parametrize('number', range(len(NORMALIZER_RULES)))
def test_regex_normalizer_gives_what_every_substitution_gives(cfg, number):
    """The normalizer applies a rule only where its guard and search find it can match: on
    random URLs and the cases of the bundled file, the same URLs as every substitution done."""
    rules = NORMALIZER_RULES[number]
    if rules is None:
        normalizer = settings.url_policy(cfg).regex_normalizer
        rules = list(zip(normalizer.patterns, [s for _, s in normalizer.rules]))
    else:
        normalizer = RegexNormalizer(rules)
    plain = _plain_normalizer(rules)
    urls = _random_urls(20000, number) + [
        'http://www.example.com//path/to//somewhere.html', 'http://a.test/page;jsessionid=A?x=1',
        'http://a.test/page?PHPSESSID=ab12&x=1', 'http://a.test/page?x=1&&&y=2', 'file:///x']
    changed = 0
    for url in urls:
        assert normalizer(url) == plain(url), url
        changed += plain(url) != url
    assert changed > 1000


def test_rule_guards():
    from beamcrawl.transforms.policy.refast import guard
    assert guard(re.compile(r'(?i)(?:;|(?<=[?&]))_?(?:sid|phpsessid)=[^?&#;]*')) == ('=', 1)
    assert guard(re.compile(r'&{2,}')) == ('&', 2)
    assert guard(re.compile(r'(?<!:)//+')) is None            # `http://`: every URL has two
    assert guard(re.compile(r'(/[^/]+)/[^/]+\1/[^/]+\1/')) == ('/', 6)
    assert guard(re.compile(r'\.\.')) == ('.', 2)
    assert guard(re.compile(r'x\.y')) is None                 # one `.`: in every URL
    assert guard(re.compile(r'[?&.]$')) is None               # a class: nothing certain
