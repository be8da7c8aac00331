"""The multi-host test web: many hosts through one loopback proxy port, with a request log."""

import requests

from tests.testweb import Page


def test_serves_several_hosts_through_one_port(web):
    s = requests.Session()
    a = s.get('http://www.a.test/', proxies=web.proxies, timeout=30)
    b = s.get('http://b.test/', proxies=web.proxies, timeout=30)
    assert a.status_code == 200 and 'A home' in a.text
    assert b.status_code == 200 and 'B home' in b.text
    assert s.get('http://b.test/nope', proxies=web.proxies, timeout=30).status_code == 404
    assert s.get('http://b.test/gone', proxies=web.proxies, timeout=30).status_code == 410
    r = s.get('http://b.test/old', proxies=web.proxies, timeout=30, allow_redirects=False)
    assert r.status_code == 301 and r.headers['Location'] == 'http://b.test/'
    unknown = s.get('http://nowhere.test/', proxies=web.proxies, timeout=30)
    assert unknown.status_code == 502 and unknown.headers['X-TestWeb'] == 'unknown-host'
    assert [r.path for r in web.requests_for('b.test')] == ['/', '/nope', '/gone', '/old']
    assert all(r.end >= r.start for r in web.log)


def test_dynamic_pages_and_delays(web):
    hits = []

    def counter(request):
        hits.append(request.headers.get('If-Modified-Since'))
        return Page(body=str(len(hits)).encode(), content_type='text/plain', delay=0.05)

    web.add('dyn.test', '/count', counter)
    p = web.proxies
    assert requests.get('http://dyn.test/count', proxies=p, timeout=30).text == '1'
    r = requests.get('http://dyn.test/count?x=1', proxies=p, timeout=30,
                     headers={'If-Modified-Since': 'yesterday'})
    assert r.text == '2' and hits[-1] == 'yesterday'
    (first, second) = web.requests_for('dyn.test')
    assert first.end - first.start >= 0.05 and second.path == '/count?x=1'
