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
