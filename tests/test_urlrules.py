"""Rule files: the regex normalizer and filter, with the cases of Nutch's own tests."""


import pytest

from beamcrawl.transforms import settings
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
