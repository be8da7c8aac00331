"""Domains: registered domains, extra suffixes."""


import pytest

from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.urlparts import host_of


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
