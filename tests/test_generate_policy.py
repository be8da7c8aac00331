"""Generator decisions without Beam: shouldFetch, the checks, the selection walk, partitions,
names."""

import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.base.errors import ConfigError
from beamcrawl.transforms.policy.generate import (GenerateSettings, assign_segments, segment_names,
                                                  sort_key)
from beamcrawl.transforms.policy.partition import partition, scatter_key
from beamcrawl.transforms.policy.schedule import should_fetch
from beamcrawl.transforms.storage.records import crawl_datum

DAY = 86400 * 1000
MAX = 7776000          # db.fetch.interval.max, s
SETTINGS = GenerateSettings(max_interval=MAX, gen_delay=7 * DAY, restrict_status='',
                            min_score=0.0, min_interval=-1)


def rec(fetch_time, interval=2592000, status='db_unfetched', score=1.0, meta=None, url='u'):
    return crawl_datum(url, status, fetch_time=fetch_time, fetch_interval=interval, score=score,
                       metadata=meta)


@pytest.mark.parametrize('fetch_time,now,due', [
    (0, 0, True),              # due exactly now
    (1, 0, False),             # one ms in the future
    (10 * DAY, 5 * DAY, False),
    (10 * DAY, 10 * DAY, True),
    (10 * DAY, 11 * DAY, True),
    (99 * DAY, 9 * DAY, False),          # 90 days ahead: trusted, not due
    (100 * DAY, 9 * DAY, True),          # 91 days ahead: not trusted, due now
])
def test_should_fetch_matrix(fetch_time, now, due):
    assert should_fetch(rec(fetch_time), now, MAX)[0] is due


def test_should_fetch_resets_far_future_and_caps_interval():
    far = rec(200 * DAY, interval=200 * 86400)
    due, copy = should_fetch(far, 10 * DAY, MAX)
    assert due and copy['fetch_time'] == 10 * DAY
    assert copy['fetch_interval'] == int(0.9 * MAX)
    assert far['fetch_time'] == 200 * DAY           # the original is untouched
    due, copy = should_fetch(rec(200 * DAY, interval=86400), 10 * DAY, MAX)
    assert due and copy['fetch_interval'] == 86400  # below the max: kept
    due, copy = should_fetch(rec(91 * DAY), 1 * DAY, MAX)   # exactly 90 days ahead: trusted
    assert not due


@pytest.mark.parametrize('record,settings_kw,reason', [
    (rec(0), {}, ''),
    (rec(5 * DAY), {}, 'not_due'),
    (rec(0, meta={'_ngt_': str(1 * DAY)}), {}, 'generate_locked'),       # 1 d + 7 d > 3 d
    (rec(0, meta={'_ngt_': str(-5 * DAY)}), {}, ''),                      # lock expired
    (rec(0, meta={'_ngt_': 'garbage'}), {}, ''),
    (rec(0, status='db_fetched'), {'restrict_status': 'db_unfetched'}, 'status_restricted'),
    (rec(0, status='db_unfetched'), {'restrict_status': 'db_unfetched'}, ''),
    (rec(0, score=-0.5), {}, 'below_min_score'),
    (rec(0, score=0.4), {'min_score': 0.5}, 'below_min_score'),
    (rec(0, interval=100), {'min_interval': 50}, 'interval_too_long'),
    (rec(0, interval=50), {'min_interval': 50}, ''),
    (rec(0, status='db_gone'), {}, ''),             # status is never looked at otherwise
])
def test_checks_in_nutch_order(record, settings_kw, reason):
    settings = GenerateSettings(**{**SETTINGS.__dict__, **settings_kw})
    assert settings.check(record, 3 * DAY)[0] == reason


def test_restrict_status_must_be_a_status_name():
    from beamcrawl.transforms.base.config import load_config
    with pytest.raises(ConfigError, match='not a status name'):
        settings.generate_settings(load_config(defines=['generate.restrict.status=fetched']))


def test_sort_key_order():
    a = rec(5, score=2.0, url='http://z/')
    b = rec(1, score=1.0, url='http://b/')
    c = rec(2, score=1.0, url='http://a/')
    d = rec(1, score=1.0, url='http://a/')
    assert sorted([c, b, a, d], key=sort_key) == [a, d, b, c]


def test_the_optimal_schedule_ranks_by_what_a_fetch_gains():
    """With db.fetch.schedule.class=optimal, generate takes first the pages never fetched,
    then those a fetch now gains most (policy/optimal.py gain_per_fetch), then sort_key."""
    from beamcrawl.transforms.base.config import load_config
    from beamcrawl.transforms.policy.changerate import LAST_FETCH_KEY, RATE_KEY
    optimal = settings.generate_settings(load_config(defines=[
        'db.fetch.schedule.class=optimal']))
    assert settings.generate_settings(load_config()).gain_prior_rate == 0.0
    now = 10 ** 12
    last = str(now - 10 * DAY)
    new = rec(0, score=0.5, url='http://new/')
    slow = rec(0, score=1.0, url='http://slow/', meta={LAST_FETCH_KEY: last, RATE_KEY: '0.1'})
    hourly = rec(0, score=9.0, url='http://hourly/',
                 meta={LAST_FETCH_KEY: last, RATE_KEY: '24'})
    rare = rec(0, score=1.0, url='http://rare/', meta={LAST_FETCH_KEY: last, RATE_KEY: '0.001'})
    ranked = sorted([rare, hourly, slow, new], key=lambda r: optimal.sort_key(r, now))
    # gains: 0.1 changes a day after 10 days: 2.6 days of freshness; 24 a day: 1/24 day;
    # one in 1,000 days: 0.05 day
    assert [r['url'] for r in ranked] == ['http://new/', 'http://slow/', 'http://rare/',
                                         'http://hourly/']
    # a page not fetched for the longest interval (90 days) goes first as well
    stale = rec(0, score=0.1, url='http://stale/',
                meta={LAST_FETCH_KEY: str(now - 90 * DAY), RATE_KEY: '24'})
    assert optimal.sort_key(stale, now) < optimal.sort_key(slow, now)
    assert sorted([rare, hourly, slow, new], key=lambda r: SETTINGS.sort_key(r, now)) == \
        sorted([rare, hourly, slow, new], key=sort_key)


def test_assign_hand_computed_overflow_example():
    """topN 3, max 2 per host, 3 segments: overflow per host and per segment (worked by hand in
    the comments of this test, following Nutch's walk with the caps of D11)."""
    items = [('a', 'a1'), ('a', 'a2'), ('a', 'a3'), ('b', 'b1'), ('a', 'a4'), ('c', 'c1'),
             ('a', 'a5'), ('b', 'b2'), ('b', 'b3')]
    # a1,a2 → seg 1 (a full there); a3 → seg 2; b1 → seg 1 (now full);
    # a4 → seg 2 (a full there); c1 → seg 1 full → seg 2 (now full);
    # a5 → seg 3; b2 → segs 1 and 2 full → seg 3; b3 → seg 3 (full, and b at 2)
    result = assign_segments(items, top_n=3, max_count=2, max_segments=3)
    assert result.segments == {'a1': 1, 'a2': 1, 'b1': 1, 'a3': 2, 'a4': 2, 'c1': 2,
                               'a5': 3, 'b2': 3, 'b3': 3}
    assert (result.over_limit, result.host_capped) == (0, 0)


def test_assign_cap_and_limit_leftovers():
    items = [('a', 'a1'), ('a', 'a2'), ('b', 'b1'), ('c', 'c1'), ('d', 'd1'), ('e', 'e1')]
    result = assign_segments(items, top_n=3, max_count=1, max_segments=1)
    assert result.segments == {'a1': 1, 'b1': 1, 'c1': 1}
    assert result.host_capped == 1 and result.hosts_affected == 1   # a2
    assert result.over_limit == 2                                   # d1, e1 stay due


def test_assign_never_exceeds_caps():
    """Nutch resets a moved host's count to 0 and can place max+1 of its URLs in a segment."""
    items = [('x', 'x1'), ('y', 'y1'), ('x', 'x2'), ('x', 'x3'), ('x', 'x4'), ('x', 'x5')]
    result = assign_segments(items, top_n=2, max_count=2, max_segments=3)
    per_seg = {}
    for url, seg in result.segments.items():
        per_seg.setdefault(seg, []).append(url)
    assert all(len(urls) <= 2 for urls in per_seg.values())
    assert all(sum(u.startswith('x') for u in urls) <= 2 for urls in per_seg.values())
    assert per_seg == {1: ['x1', 'y1'], 2: ['x2', 'x3'], 3: ['x4', 'x5']}


def test_assign_without_limits():
    items = [(k, f'{k}{i}') for i in range(5) for k in 'ab']
    assert set(assign_segments(items, top_n=None, max_count=-1, max_segments=1)
               .segments.values()) == {1}
    result = assign_segments(items, top_n=4, max_count=-1, max_segments=2)
    assert sorted(result.segments.values()) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert result.over_limit == 2


def test_partition_is_stable_and_in_range():
    parts = {partition(f'h{i}.test', 4) for i in range(100)}
    assert parts == {0, 1, 2, 3}
    assert partition('www.a.test', 7) == partition('www.a.test', 7)
    assert partition('www.a.test', 1) == 0


def test_scatter_key_is_nutchs_reverse_hash():
    # h = 31*h + b over the bytes, last first, as a Java int
    h = 0
    for b in reversed(b'ab'):
        h = (31 * h + b) & 0xffffffff
    assert scatter_key('ab') == h
    assert scatter_key('http://a/') != scatter_key('http://b/')
    assert -2**31 <= scatter_key('x' * 100) < 2**31


def test_segment_names_unique_and_increasing():
    now = 1795305600000      # 2026-11-22T00:00:00Z
    assert segment_names([], now, 2) == ['20261122000000', '20261122000001']
    assert segment_names(['20261122000001'], now, 1) == ['20261122000002']
    assert segment_names(['20261121000000', 'junk'], now + 999, 1) == ['20261122000000']
