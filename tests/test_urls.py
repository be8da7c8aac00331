"""UrlPolicy: the configured chain as one picklable object."""

import pickle

from beamcrawl.transforms import settings


def test_policy_pickles_and_works_after(cfg):
    policy = pickle.loads(pickle.dumps(settings.url_policy(cfg)))
    assert policy.clean('HTTP://WWW.A.TEST:80/x/../y') == ('http://www.a.test/y', '')
    assert policy.clean('http://a.test/logo.png') == (None, 'filtered')
    assert policy.clean('http://a.test:x/') == (None, 'malformed')
    assert policy.domains.domain('www.a.test') == 'a.test'


def _old_outlinks(source, links, policy, denied):
    """filter_outlinks' steps without the verdict cache (the oracle): normalize, drop empty and
    self links, filter, refuse by the address policy, de-duplicate."""
    from beamcrawl.transforms.policy.urlparts import MalformedUrl
    out, pairs = [], set()
    for target, anchor in links:
        try:
            target = policy.normalize(target)
        except MalformedUrl:
            continue
        if not target or target == source or not policy.accept(target):
            continue
        if policy.denied(target):
            denied.append(target)
            continue
        if (target, anchor) not in pairs:
            pairs.add((target, anchor))
            out.append((target, anchor))
    return out


def test_outlink_verdicts_from_the_cache_equal_the_steps(cfg):
    from beamcrawl.transforms.policy.outlinks import OutlinkRules, filter_outlinks
    rules = OutlinkRules(max_outlinks=-1, max_length=4096, ignore_internal=False,
                         ignore_external=False, by_domain=False)
    source = 'http://a.test/page'
    links = [('http://a.test/x', 'x'), ('HTTP://A.TEST:80/x', 'x'), ('http://a.test/x', 'y'),
             ('http://a.test/img.jpg', 'img'), ('http://127.0.0.1/admin', 'local'),
             ('http://localhost/', 'local'), ('http://a.test/page', 'self'),
             ('http://A.test/./page', 'self'), ('no scheme', 'bad'), ('', 'empty'),
             ('http://bad host/', 'bad'), ('mailto:me@a.test', 'mail'),
             ('http://b.test/a/../b?q=1#frag', 'b'), ('http://[::1/', 'bad')]
    shared = settings.url_policy(cfg)
    for round_ in range(3):
        denied, expected_denied = [], []
        got = filter_outlinks(source, links, rules, shared, denied=denied)
        expected = _old_outlinks(source, links, settings.url_policy(cfg), expected_denied)
        assert got == expected and denied == expected_denied, round_
    assert ('http://b.test/b?q=1', 'b') in got and denied == ['http://127.0.0.1/admin',
                                                               'http://localhost/']
    assert shared.__dict__['_verdicts']
    assert '_verdicts' not in pickle.loads(pickle.dumps(shared)).__dict__


def test_remembered_is_bounded_and_forgets_errors():
    import pytest
    from beamcrawl.transforms.policy.memo import remembered
    calls = []

    def compute(key):
        calls.append(key)
        if key < 0:
            raise ValueError(key)
        return key * 2

    cache = {}
    assert [remembered(cache, k, compute, 3) for k in (1, 2, 1, 3, 2)] == [2, 4, 2, 6, 4]
    assert calls == [1, 2, 3] and len(cache) == 3
    assert remembered(cache, 4, compute, 3) == 8 and cache == {4: 8}    # full: emptied first
    for _ in range(2):
        with pytest.raises(ValueError):
            remembered(cache, -1, compute, 3)
    assert calls == [1, 2, 3, 4, -1, -1] and -1 not in cache


def _plain_clean(policy, filter_rules, url, normalize=True, filter_urls=True):
    """clean() without its shortcuts (the oracle): the basic normalizer's every step, every
    regex substitution, scheme_host, the filter rules searched whole in order, the address
    policy."""
    from beamcrawl.transforms.policy.normalize import HIER_SCHEMES
    from beamcrawl.transforms.policy.urlparts import MalformedUrl, scheme_host
    if normalize:
        try:
            for _ in range(policy.loop_count):
                before = url
                url = policy.basic._full(url)
                for regex, substitution in policy.regex_normalizer.rules:
                    url = regex.sub(substitution, url)
                if url == before:
                    break
        except MalformedUrl:
            return None, 'malformed'
        if not url:
            return None, 'malformed'
    scheme, host = scheme_host(url)
    if filter_urls:
        if scheme not in policy.schemes or (scheme in HIER_SCHEMES and not host):
            return None, 'filtered'
        decided = next((sign for sign, regex in filter_rules if regex.search(url)), False)
        if not decided:
            return None, 'filtered'
    if host and policy.address.denied_host(host):
        return None, 'denied'
    return url, ''


def _random_seed_urls(n, seed):
    import random
    rnd = random.Random(seed)
    hosts = ['www.a.test', 'WWW.B.Test', 'c.test:80', 'c.test:8080', 'xn--mnchen-3ya.test',
             'münchen.test', '127.0.0.1', '10.1.2.3', '[::1]', '0x7f.1', 'e.test.',
             'u:p@f.test', 'g%41.test', 'localhost', 'a..b.test', '1.2.3.999', 'k.test:']
    pieces = ['p', '..', '.', '', 'index.html', 'a b', '%7e', 'x;jsessionid=1', 'img.GIF',
              'x.js', 'ü', '!', '*', '@', 'a', 'b', 'a/b/a/c/a', '%2F', 'q.css']
    tails = ['', '?', '?a=1', '?a=1&&b=2', '?&a', '?PHPSESSID=x&b=1', '?s=1&sid=2', '#f',
             '?a=1&', '?x=y.', '?u=http://x.test//y']
    urls = []
    for i in range(n):
        if rnd.random() < 0.4:
            urls.append(f'http://www{i % 3}.site{rnd.randrange(50)}.test/p/{i}.html')
            continue
        path = '/'.join(rnd.choice(pieces) for _ in range(rnd.randrange(5)))
        urls.append(f'{rnd.choice(["http", "https", "HTTP", "ftp", "file", "mailto"])}://'
                    f'{rnd.choice(hosts)}/{path}{rnd.choice(tails)}')
    return urls


def test_clean_gives_what_its_steps_give_without_shortcuts(cfg):
    """clean() (the normalizers' usual way and rule guards, the scheme and host handed on,
    the filter's searches) against the oracle, on random seed-like URLs, with the loop run
    once and three times, normalizing and filtering or not."""
    import re

    from beamcrawl.transforms.base.config import load_config
    from beamcrawl.transforms.policy import urlrules
    rules = []
    for line in cfg.resource_text('urlfilter.regex.file').splitlines():
        if line and line[0] in '+-':
            rules.append((line[0] == '+', re.compile(urlrules._java_regex(line[1:].rstrip()))))
        assert not line or line[0] in '+-# \t'       # no `>` blocks in the bundled file
    from beamcrawl.transforms.policy.urlrules import RegexNormalizer
    urls = _random_seed_urls(6000, 1)
    for loops, idn, host_rule in ((1, 'toAscii', False), (3, 'toUnicode', False),
                                  (1, 'toAscii', True)):
        policy = settings.url_policy(load_config(defines=[
            'domain.extra.suffixes=test', f'urlnormalizer.loop.count={loops}',
            f'urlnormalizer.basic.host.idn={idn}']))
        if host_rule:     # a rule that changes the host after the basic normalizer
            bundled = policy.regex_normalizer
            policy.regex_normalizer = RegexNormalizer(
                list(zip(bundled.patterns, [s for _, s in bundled.rules]))
                + [(r'^http://www0\.', 'https://a0.'), (r'^https://www\.', 'http://127.0.0.1/')])
        verdicts = set()
        for normalize, filter_urls in ((True, True), (False, True), (True, False)):
            for url in urls:
                got = policy.clean(url, normalize=normalize, filter=filter_urls)
                assert got == _plain_clean(policy, rules, url, normalize, filter_urls), url
                verdicts.add(got[1])
        assert verdicts == {'', 'filtered', 'denied', 'malformed'}
