"""UrlPolicy: the configured chain as one picklable object."""

import pickle

from beamcrawl.transforms import settings


def test_policy_pickles_and_works_after(cfg):
    policy = pickle.loads(pickle.dumps(settings.url_policy(cfg)))
    assert policy.clean('HTTP://WWW.A.TEST:80/x/../y') == ('http://www.a.test/y', '')
    assert policy.clean('http://a.test/logo.png') == (None, 'filtered')
    assert policy.clean('http://a.test:x/') == (None, 'malformed')
    assert policy.domains.domain('www.a.test') == 'a.test'
