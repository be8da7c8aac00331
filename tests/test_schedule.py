"""Fetch schedules: Default, Adaptive (worked values, sync delta, fixed interval, host bounds),
MimeAdaptive, gone/retry/forceRefetch."""

import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.base.errors import ConfigError
from beamcrawl.transforms.policy.schedule import (STATE_MODIFIED, STATE_NOTMODIFIED, STATE_UNKNOWN,
                                                  AdaptiveFetchSchedule, DefaultFetchSchedule,
                                                  MimeAdaptiveFetchSchedule, parse_host_intervals,
                                                  parse_mime_rates)
from beamcrawl.transforms.storage.records import crawl_datum

DAY = 86400
MS = 1000


def rec(interval=100, url='http://www.a.test/', metadata=None, modified=0):
    return crawl_datum(url, 'db_fetched', fetch_time=0, fetch_interval=interval,
                       modified_time=modified, metadata=metadata)


def adaptive(**kw):
    args = dict(default_interval=2592000, max_interval=7776000, inc_rate=0.4, dec_rate=0.2,
                min_interval_s=60, max_interval_s=31536000, sync_delta=True, sync_delta_rate=0.3)
    args.update(kw)
    return AdaptiveFetchSchedule(**args)


def step(schedule, record, state, t_f=0, mod=0):
    return schedule.set_fetch_schedule(record, prev_fetch=0, prev_mod=0, fetch_time=t_f,
                                       mod_time=mod, state=state)


@pytest.mark.parametrize('state,interval', [(STATE_UNKNOWN, 100), (STATE_MODIFIED, 80),
                                            (STATE_NOTMODIFIED, 140)])
def test_adaptive_worked_values(state, interval):
    out = step(adaptive(), rec(100), state)
    assert out['fetch_interval'] == interval
    assert out['fetch_time'] == interval * MS and out['retries'] == 0


def test_adaptive_sync_delta():
    s = adaptive()
    # unchanged for 10 days, interval 1 day: the interval jumps to the time since the change,
    # and the next fetch is pulled back by 30% of that time
    t_f, mod = 10 * DAY * MS, 0
    out = step(s, rec(DAY, modified=1), STATE_NOTMODIFIED, t_f=t_f, mod=1)
    delta = t_f - 1
    assert out['fetch_interval'] == delta // 1000
    offset = int(delta * 0.30000001192092896 + 0.5)        # the float 0.3f widened, rounded
    assert out['fetch_time'] == t_f - offset + (delta // 1000) * MS
    assert out['modified_time'] == 1
    # no sync: plain ×1.4
    out = step(adaptive(sync_delta=False), rec(DAY), STATE_NOTMODIFIED, t_f=t_f, mod=mod + 1)
    assert out['fetch_interval'] == round(DAY * 1.4)
    # an offset above the maximum interval is cut to 0 by Nutch's integer division (D31)
    s = adaptive(max_interval_s=DAY)
    out = step(s, rec(DAY), STATE_NOTMODIFIED, t_f=100 * DAY * MS, mod=1)
    assert out['fetch_interval'] == DAY                    # clamped to max
    assert out['fetch_time'] == 100 * DAY * MS + DAY * MS  # offset 0


def test_adaptive_float32_interval_arithmetic():
    # 30 days × 1.4 in float32 is 3628800.0 exactly; ×0.8 of 2592001 rounds in float32
    out = step(adaptive(sync_delta=False), rec(2592001), STATE_MODIFIED)
    import struct
    f = struct.unpack('f', struct.pack('f', 2592001.0))[0]
    expected = struct.unpack('f', struct.pack('f', f * struct.unpack('f', struct.pack(
        'f', 1 - struct.unpack('f', struct.pack('f', 0.2))[0]))[0]))[0]
    assert out['fetch_interval'] == int(expected + 0.5)


def test_adaptive_bounds_and_fixed_interval():
    out = step(adaptive(sync_delta=False), rec(70), STATE_MODIFIED)
    assert out['fetch_interval'] == 60                      # min_interval
    out = step(adaptive(sync_delta=False, max_interval_s=120), rec(100), STATE_NOTMODIFIED)
    assert out['fetch_interval'] == 120
    fixed = rec(100, metadata={'fixedInterval': '5000.0'})
    out = step(adaptive(), fixed, STATE_MODIFIED, t_f=10, mod=0)
    assert out['fetch_interval'] == 5000 and out['modified_time'] == 0   # stored as received


def test_host_specific_intervals():
    text = ('# comment\nwww.a.test 3600 default\nb.test default 7200\n'
            'bad line\nneg.test -1 5\nminmax.test 500 100\nlow.test 10 100\n'
            'both.test default 0\nnum.test x 5\n')
    hosts, problems = parse_host_intervals(text, min_interval_s=60, max_interval_s=31536000)
    assert hosts == {'www.a.test': (3600.0, None), 'b.test': (None, 7200.0)}
    assert len(problems) == 6 and all('skipped' in p or 'ignored' in p for p in problems)
    s = adaptive(sync_delta=False, host_intervals=hosts)
    assert step(s, rec(100), STATE_UNKNOWN)['fetch_interval'] == 3600
    assert step(s, rec(10000, url='http://b.test/x'), STATE_NOTMODIFIED)['fetch_interval'] \
        == 7200
    assert step(s, rec(100, url='http://sub.b.test/'), STATE_UNKNOWN)['fetch_interval'] == 100


def test_mime_adaptive_rates():
    rates, problems = parse_mime_rates('# c\ntext/html\t0.5\t0.5\nbad\napplication/pdf\t0.1\t0.4\n')
    assert rates == {'text/html': (0.5, 0.5), 'application/pdf': (0.1, 0.4)} and len(problems) == 1
    s = MimeAdaptiveFetchSchedule(mime_rates=rates, default_interval=2592000,
                                  max_interval=7776000, inc_rate=0.4, dec_rate=0.2,
                                  min_interval_s=60, max_interval_s=31536000, sync_delta=False,
                                  sync_delta_rate=0.3)
    html = rec(100, metadata={'Content-Type': 'text/html; charset=utf-8'})
    assert step(s, html, STATE_NOTMODIFIED)['fetch_interval'] == 150
    assert step(s, rec(100), STATE_NOTMODIFIED)['fetch_interval'] == 140   # defaults


def test_default_schedule():
    s = DefaultFetchSchedule(default_interval=2592000, max_interval=7776000)
    out = step(s, rec(0), STATE_MODIFIED, t_f=5)
    assert out['fetch_interval'] == 2592000 and out['fetch_time'] == 5 + 2592000 * MS
    assert out['modified_time'] == 5
    out = s.set_fetch_schedule(rec(100, modified=3), prev_fetch=0, prev_mod=3, fetch_time=9,
                               mod_time=3, state=STATE_NOTMODIFIED)
    assert out['modified_time'] == 3 and out['fetch_interval'] == 100


def test_gone_retry_and_force_refetch():
    s = DefaultFetchSchedule(default_interval=2592000, max_interval=7776000)
    intervals, record = [], rec(2592000)
    for _ in range(4):
        record = s.set_page_gone(record, 0)
        intervals.append(record['fetch_interval'])
    assert intervals == [3888000, 5832000, 6998400, 6998400]    # 45, 67.5, 81, 81 days
    retried = s.set_page_retry(rec(100), 7)
    assert retried['fetch_time'] == 7 + DAY * MS and retried['retries'] == 1
    forced = s.force_refetch(dict(rec(9000000), signature=b'x', modified_time=4), asap=False,
                             now=1)
    assert (forced['status'], forced['signature'], forced['modified_time'],
            forced['fetch_interval']) == ('db_unfetched', None, 0, 6998400)


@pytest.mark.parametrize('name,cls', [
    ('org.apache.nutch.crawl.DefaultFetchSchedule', DefaultFetchSchedule),
    ('adaptive', AdaptiveFetchSchedule), ('AdaptiveFetchSchedule', AdaptiveFetchSchedule),
    ('org.apache.nutch.crawl.MimeAdaptiveFetchSchedule', MimeAdaptiveFetchSchedule)])
def test_schedule_from_config(name, cls):
    problems = []
    schedule = settings.schedule(load_config(overrides={'db.fetch.schedule.class': name}),
                                 warn=problems.append)
    assert type(schedule) is cls and problems == []
    if cls is MimeAdaptiveFetchSchedule:
        assert schedule.mime_rates['application/pdf'][1] == pytest.approx(0.4)


def test_unknown_schedule_class():
    with pytest.raises(ConfigError, match='db.fetch.schedule.class'):
        settings.schedule(load_config(overrides={'db.fetch.schedule.class': 'Weekly'}))
