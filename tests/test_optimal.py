"""The optimal schedule (policy/changerate.py, policy/optimal.py): the change-rate estimator
against simulated Poisson pages and a brute-force oracle, the Lagrangian optimum, the schedule
in updatedb's merge, the lab, and a crawl with it end to end."""

import json
import math

import numpy as np
import pytest

from beamcrawl.transforms.policy.changerate import (HISTORY_KEY, LAST_FETCH_KEY, RATE_KEY,
                                                    estimate_rate, estimate_rates, format_history,
                                                    observe, parse_history)
from beamcrawl.transforms.policy.optimal import (NO_HISTORY_BIN, NOT_PLANNED_BIN,
                                                 OptimalFetchSchedule, freshness, multiplier_for,
                                                 optimal_frequencies, optimal_intervals, rate_bin,
                                                 record_bin, solve_multiplier, dither,
                                                 gain_per_fetch, page_key, record_gain,
                                                 whole_rounds)
from beamcrawl.transforms.policy.schedule import STATE_MODIFIED, STATE_NOTMODIFIED, STATE_UNKNOWN
from tests.conftest import read_db, run_cli, write_seeds
from tests.testweb import Page, html_page

DAY_MS = 86400 * 1000
PRIOR = dict(prior_rate=1 / 30, prior_sigma=2.0)


def _observed(rate, visits, pages, seed):
    """Pages changing as Poisson processes at `rate` a day, visited at irregular intervals
    (uniform between 0.2 and 2 mean change intervals): (intervals, changed)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.2 / rate, 2.0 / rate, (pages, visits))
    changed = rng.random(t.shape) < -np.expm1(-rate * t)
    return t, changed


@pytest.mark.parametrize('rate', [0.01, 0.1, 1.0, 10.0])
def test_the_estimate_converges_to_the_true_rate(rate):
    """After 50 visits the estimate is within 10 % of the true rate in the median of 1,000
    pages (one page's estimate from 50 yes/no answers has about 18 % standard error, a limit
    of the information, not of the estimator); after 500 visits 85 % of the pages are."""
    for visits, median_within, share_within in ((50, 0.10, 0.30), (500, 0.03, 0.85)):
        t, changed = _observed(rate, visits, 1000, seed=visits)
        est = estimate_rates(t, changed, np.ones_like(changed), **PRIOR)
        assert abs(np.median(est) / rate - 1) < median_within
        assert np.mean(np.abs(est / rate - 1) < 0.10) > share_within


@pytest.mark.parametrize('rate', [0.01, 0.1, 1.0, 10.0])
def test_last_modified_dates_make_the_estimate_better(rate):
    """With the date of each change (Last-Modified), the same 50 visits place more pages
    within 10 % and 30 % of their rate, and the median stays within 5 % (the prior, centred
    on one change in 30 days, pulls 10 changes a day down by about 4 %)."""
    t, changed = _observed(rate, 50, 2000, seed=7)
    rng = np.random.default_rng(8)
    # the last change of a changed interval: an exponential time back, within the interval
    age = np.where(changed, -np.log1p(-rng.random(t.shape) * -np.expm1(-rate * t)) / rate,
                   np.nan)
    plain = estimate_rates(t, changed, np.ones_like(changed), **PRIOR)
    dated = estimate_rates(t, changed, np.ones_like(changed), age=age, **PRIOR)
    assert abs(np.median(dated) / rate - 1) < 0.05
    for within in (0.1, 0.3):
        assert np.mean(np.abs(dated / rate - 1) < within) > \
            np.mean(np.abs(plain / rate - 1) < within)


def _log_posterior(lam, history, prior_rate, prior_sigma):
    out = -(math.log(lam) - math.log(prior_rate)) ** 2 / (2 * prior_sigma ** 2)
    for obs in history:
        days, changed = obs[0], obs[1]
        if len(obs) > 2:                       # a dated change: λ·e^(−λ·age)
            out += math.log(lam) - lam * obs[2]
        else:
            out += math.log(-math.expm1(-lam * days)) if changed else -lam * days
    return out


@pytest.mark.parametrize('history', [
    [(30.0, True)], [(30.0, False)], [(1.0, True)] * 5, [(3.0, False), (10.0, True)],
    [(0.5, True), (0.5, False), (2.0, True), (7.0, False), (1.0, True)],
    [(90.0, False)] * 10, [(0.01, True)] * 20,
    [(30.0, True, 2.0)], [(30.0, True, 29.0), (10.0, False), (5.0, True)],
    [(3.0, True, 0.001)] * 5, [(1.0, True, 0.5)] * 30 + [(2.0, False)] * 3,
])
def test_the_estimate_is_the_posterior_mode(history):
    """Against a brute-force search of the log posterior on a fine grid of log λ."""
    grid = np.exp(np.linspace(math.log(1e-6), math.log(1e5), 200001))
    values = [_log_posterior(lam, history, **PRIOR) for lam in grid[::100]]
    coarse = grid[::100][int(np.argmax(values))]
    fine = grid[(grid > coarse / 1.02) & (grid < coarse * 1.02)]
    best = fine[int(np.argmax([_log_posterior(lam, history, **PRIOR) for lam in fine]))]
    assert estimate_rate(history, **PRIOR) == pytest.approx(best, rel=2e-4)


def test_the_estimate_without_history_and_at_the_extremes():
    assert estimate_rate([], **PRIOR) == pytest.approx(1 / 30)
    quiet = [estimate_rate([(30.0, False)] * n, **PRIOR) for n in (1, 5, 20)]
    assert quiet[0] > quiet[1] > quiet[2] > 0
    busy = [estimate_rate([(days, True)] * 5, **PRIOR) for days in (30.0, 3.0, 0.3)]
    assert busy[0] < busy[1] < busy[2] < math.inf


def test_histories_are_kept_as_short_text():
    text = observe(None, 2.0, True, keep=3)
    assert text == '+280'                                      # 2880 minutes in base 36
    for days, changed in ((0.5, False), (30.0, True), (1.0, False)):
        text = observe(text, days, changed, keep=3)
    assert parse_history(text) == [(0.5, False), (30.0, True), (1.0, False)]
    assert parse_history('+280.junk.-.?zz.-1') == [(2.0, True), (1 / 1440, False)]
    assert format_history(parse_history(text)) == text
    # a change dated by Last-Modified: `~` and the minutes from that date to the fetch
    dated = observe(text, 2.0, True, keep=3, age=0.5)
    assert dated.endswith('.+280~k0')
    assert parse_history(dated)[-1] == (2.0, True, 0.5)
    assert observe(None, 2.0, False, keep=3, age=0.5) == '-280'    # only a change is dated
    assert format_history(parse_history(dated)) == dated
    assert parse_history('+280~zz?.-1') == [(1 / 1440, False)]


def test_the_optimum_meets_the_lagrange_conditions():
    rates = np.array([0.001, 0.05, 0.2, 1.0, 5.0, 0.0])
    mu = 2.0
    f = optimal_frequencies(rates, mu)
    for rate, freq in zip(rates, f):
        if rate == 0 or mu * rate >= 1:
            assert freq == 0
        else:
            x = rate / freq
            assert 1 - (1 + x) * math.exp(-x) == pytest.approx(mu * rate, rel=1e-4)
    assert optimal_intervals(rates, mu, 1.0, 90.0).tolist()[3:] == [90.0, 90.0, 90.0]


def test_freshness_matches_a_simulated_page():
    rng = np.random.default_rng(3)
    for rate, every in ((0.1, 5.0), (1.0, 1.0), (0.02, 60.0)):
        changes = np.cumsum(rng.exponential(1 / rate, 200000))
        fetches = np.arange(0, changes[-1], every)
        # fresh from each fetch until the first change after it
        first = changes[np.searchsorted(changes, fetches)]
        fresh = np.minimum(first - fetches, every).sum() / (len(fetches) * every)
        assert freshness(rate, 1 / every) == pytest.approx(fresh, rel=0.01)


def test_the_multiplier_spends_the_budget_and_beats_uniform():
    """Cho and Garcia-Molina's result on a log-normal population: the optimum keeps more pages
    fresh than visiting all alike with the same fetches."""
    rng = np.random.default_rng(5)
    rates = 1 / rng.lognormal(math.log(10), 1.5, 20000)
    budget = len(rates) / 30
    mu = solve_multiplier(rates, np.ones(len(rates)), budget, 1.0, 90.0)
    f = 1 / optimal_intervals(rates, mu, 1.0, 90.0)
    assert f.sum() == pytest.approx(budget, rel=1e-6)
    uniform = freshness(rates, np.full(len(rates), budget / len(rates))).mean()
    assert freshness(rates, f).mean() > 1.05 * uniform       # 1.086 here
    # on a histogram of the rates (as updatedb solves it), the same multiplier within 1 %
    histogram = {}
    for rate in rates:
        histogram[rate_bin(rate)] = histogram.get(rate_bin(rate), 0) + 1
    assert multiplier_for(histogram, budget, 30.0, 1.0, 90.0) == pytest.approx(mu, rel=0.01)
    histogram[NO_HISTORY_BIN] = 30 * budget           # pages without history take it all
    assert multiplier_for(histogram, budget, 30.0, 1.0, 90.0) is None


def _schedule(multiplier=None):
    return OptimalFetchSchedule(default_interval=30 * 86400, max_interval=90 * 86400,
                                min_interval_s=86400, max_interval_s=90 * 86400, history=4,
                                prior_sigma=2.0, multiplier=multiplier)


def _record(**meta):
    return {'url': 'http://a.test/', 'fetch_interval': 30 * 86400, 'metadata': meta,
            'retries': 0, 'modified_time': 0}


def test_the_schedule_records_what_each_fetch_saw():
    schedule = _schedule()
    t0 = 10 ** 12
    first = schedule.set_fetch_schedule(_record(), prev_fetch=0, prev_mod=0, fetch_time=t0,
                                        mod_time=0, state=STATE_UNKNOWN)
    # Due at a whole round: half a round before the 30th day.
    assert HISTORY_KEY not in first['metadata'] and first['fetch_interval'] == 29.5 * 86400
    assert first['metadata'][LAST_FETCH_KEY] == str(t0)
    second = schedule.set_fetch_schedule(first, prev_fetch=t0, prev_mod=0,
                                         fetch_time=t0 + 30 * DAY_MS, mod_time=0,
                                         state=STATE_MODIFIED)
    assert parse_history(second['metadata'][HISTORY_KEY]) == [(30.0, True)]
    rate = float(second['metadata'][RATE_KEY])
    assert rate == pytest.approx(estimate_rate([(30.0, True)], **PRIOR), rel=1e-5)
    assert second['fetch_interval'] == 29.5 * 86400        # no multiplier yet: the default
    planned = _schedule(multiplier=3.0).set_fetch_schedule(
        second, prev_fetch=0, prev_mod=0, fetch_time=t0 + 40 * DAY_MS, mod_time=0,
        state=STATE_NOTMODIFIED)
    history = [(30.0, True), (10.0, False)]
    days = optimal_intervals([estimate_rate(history, **PRIOR)], 3.0, 1.0, 90.0)[0]
    days = whole_rounds(days, 1.0, dither(page_key('http://a.test/'), t0 + 40 * DAY_MS))
    assert planned['fetch_interval'] == round(float(days) * 86400)
    assert planned['fetch_time'] == t0 + 40 * DAY_MS + planned['fetch_interval'] * 1000
    assert record_bin(planned) == rate_bin(float(planned['metadata'][RATE_KEY]))
    assert record_bin(_record()) == NO_HISTORY_BIN
    assert record_bin(dict(planned, status='db_gone')) == NOT_PLANNED_BIN


@pytest.mark.parametrize('days, u, offset', [
    (1.0, 0.0, 0.5), (1.0, 0.99, 0.5),          # one round: due at the next round
    (1.3, 0.29, 1.5), (1.3, 0.31, 0.5),         # 2 rounds with probability 0.3, else 1
    (6.0, 0.5, 5.5), (0.2, 0.9, 0.5),           # never less than one round
])
def test_whole_rounds(days, u, offset):
    assert float(whole_rounds(days, 1.0, u)) == pytest.approx(offset)
    assert float(whole_rounds(days * 24, 24.0, u)) == pytest.approx(offset * 24)


def test_whole_rounds_keep_the_planned_interval_on_average():
    """The dither is spread evenly, so a page's rounds average its planned interval."""
    times = np.arange(20000, dtype=np.int64) * 86400 * 1000 + 10 ** 12
    u = dither(np.full(len(times), page_key('http://a.test/x')), times)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    rounds = whole_rounds(3.7, 1.0, u) + 0.5
    assert rounds.mean() == pytest.approx(3.7, abs=0.02)
    assert set(np.unique(rounds)) == {3.0, 4.0}


@pytest.mark.parametrize('rate, days, gain', [
    (0.1, 10.0, 1 - 2 / math.e),                # g(1)/1: at one mean change interval
    (0.1, 0.0, 0.0),                            # just fetched: nothing to gain
    (1.0, 1000.0, 1.0),                         # long stale: 1/λ
    (0.0, 50.0, 0.0),                           # never changes: nothing to gain
])
def test_gain_per_fetch(rate, days, gain):
    value = float(gain_per_fetch(rate, days))
    assert value == pytest.approx(gain / rate if rate else 0.0, abs=1e-12)


def test_record_gain_ranks_never_fetched_pages_first():
    t0 = 10 ** 12
    assert record_gain(_record(), t0, 1 / 30) == math.inf
    slow = _record(**{LAST_FETCH_KEY: str(t0), RATE_KEY: '0.01'})
    fast = _record(**{LAST_FETCH_KEY: str(t0), RATE_KEY: '10'})
    no_rate = _record(**{LAST_FETCH_KEY: str(t0)})
    now = t0 + 20 * DAY_MS
    assert record_gain(slow, now, 1 / 30) == pytest.approx(float(gain_per_fetch(0.01, 20)))
    assert record_gain(no_rate, now, 1 / 30) == pytest.approx(float(gain_per_fetch(1 / 30, 20)))
    # the page that changes 10 times a day gains at most 1/10 of a day of freshness per fetch
    assert record_gain(fast, now, 1 / 30) < record_gain(slow, now, 1 / 30)
    # ... until its longest interval has passed: then it goes first, as a page never fetched
    assert record_gain(fast, now, 1 / 30, max_days=20.0) == math.inf
    assert record_gain(fast, now, 1 / 30, max_days=20.5) <= 0.1


@pytest.mark.parametrize('ages', [
    [None, None, None, None],               # a server without Last-Modified
    [40.0, 3.0, None, 0.5],                 # with it (a first fetch is dated too)
])
def test_the_lab_plans_as_the_schedule_does(ages):
    """The lab's vectorized side (freshness._ChangeRates) gives a fetched page the interval
    that OptimalFetchSchedule gives it in updatedb, for the same history and multiplier,
    with and without Last-Modified dates."""
    from beamcrawl.transforms.fetcher.http import http_date
    from beamcrawl.transforms.policy.freshness import _ChangeRates
    schedule = _schedule(multiplier=2.5)
    lab = _ChangeRates(schedule, 3, plan_budget=1.0, round_days=1.0)
    lab.multiplier = 2.5
    record = dict(_record(), url='http://lab.test/1')     # the lab's page 1
    visits = [(400.0, False, True), (412.0, True, False), (415.0, False, False),
              (435.0, True, False)]
    for (day, changed, first), age in zip(visits, ages):
        planned = lab.fetched(np.array([1]), np.array([changed]), np.array([first]), day,
                              np.array([np.nan if age is None else age]))[0]
        meta = dict(record['metadata'])
        if age is not None:
            meta['Last-Modified'] = http_date(int((day - age) * DAY_MS))
        record = schedule.set_fetch_schedule(
            dict(record, metadata=meta), prev_fetch=0, prev_mod=0,
            fetch_time=int(day * DAY_MS), mod_time=0,
            state=STATE_UNKNOWN if first else (STATE_MODIFIED if changed else STATE_NOTMODIFIED))
    assert planned * 86400 == pytest.approx(record['fetch_interval'], abs=1)
    dated = [obs for obs in parse_history(record['metadata'][HISTORY_KEY]) if len(obs) > 2]
    assert len(dated) == (3 if ages[0] else 0)


def test_the_schedule_trusts_a_last_modified_date_only_when_it_can_be_true():
    """A date after the fetch, or not after the previous fetch of a changed page (the server
    stopped sending it, or it does not follow the content), dates nothing."""
    from beamcrawl.transforms.fetcher.http import http_date
    schedule = _schedule()
    t0 = 10 ** 12
    first = schedule.set_fetch_schedule(
        _record(**{'Last-Modified': http_date(t0 - 5 * DAY_MS)}), prev_fetch=0, prev_mod=0,
        fetch_time=t0, mod_time=0, state=STATE_UNKNOWN)
    assert parse_history(first['metadata'][HISTORY_KEY]) == [(5.0, True, 5.0)]
    for lm, dated in ((t0 + 8 * DAY_MS, (10.0, True, 2.0)), (t0 - DAY_MS, (10.0, True)),
                      (t0 + 11 * DAY_MS, (10.0, True)), (None, (10.0, True))):
        meta = dict(first['metadata'])
        meta.pop('Last-Modified')
        if lm is not None:
            meta['Last-Modified'] = http_date(lm)
        second = schedule.set_fetch_schedule(
            dict(first, metadata=meta), prev_fetch=t0, prev_mod=0, fetch_time=t0 + 10 * DAY_MS,
            mod_time=0, state=STATE_MODIFIED)
        assert parse_history(second['metadata'][HISTORY_KEY])[-1] == dated


def test_the_lab_runs_the_optimal_schedule():
    proc = run_cli('schedule-sim', '--population', '3000', '--days', '120', '--budget', '100',
                   '--change-model', 'mixed', '--schedules', 'default,optimal,uniform', '--json')
    rows = {r['name']: r for r in json.loads(proc.stdout)['results']}
    assert set(rows) == {'default', 'optimal', 'uniform'}
    assert rows['optimal']['fetches_per_day'] <= 100 * 1.001
    assert rows['optimal']['fetches_per_day'] > 90        # it spends the budget


NOW = 1795305600000


def test_a_crawl_with_the_optimal_schedule(web, tmp_path):
    """Three rounds an hour apart on pages that do not change: each updatedb records what the
    fetch saw, estimates the rate and, from the second on, solves the multiplier; the
    histogram it keeps matches a count of the crawldb."""
    conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'domain.extra.suffixes=test',
            '-D', 'fetcher.server.delay=0', '-D', 'db.fetch.schedule.class=optimal',
            '-D', 'db.fetch.interval.default=3600', '-D', 'db.fetch.schedule.optimal.budget=48',
            '-D', 'db.fetch.schedule.optimal.min_interval=600']
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://www.a.test/', 'http://b.test/'])
    logs = []
    for k in range(4):
        args = ['crawl', crawl, '--rounds', '1', '--now', str(NOW + k * 3600 * 1000), *conf]
        logs.append(run_cli(*(args + (['--seeds', seeds] if k == 0 else []))).stderr)
    assert 'multiplier none yet' in logs[0]
    assert 'multiplier none yet' not in logs[-1] and 'budget 48 fetches a day' in logs[-1]
    db = read_db(crawl)
    home = db['http://www.a.test/']
    history = parse_history(home['metadata'][HISTORY_KEY])
    assert len(history) >= 2 and history == [(1 / 24, False)] * len(history)
    rate = float(home['metadata'][RATE_KEY])
    assert rate < 1 / (3600 / 86400)                      # less than the prior: never changed
    assert home['fetch_interval'] > 3600                  # so fetched less often than default
    out = run_cli('readdb', crawl, '--url', 'http://www.a.test/', *conf).stdout
    assert f'Retry interval: {home["fetch_interval"]} seconds' in out and '_rate_=' in out
    from beamcrawl.transforms.storage.layout import CrawlLayout
    note = json.loads(CrawlLayout(crawl).crawldb.read_note('_rate_histogram.json'))
    counted = {}
    for record in db.values():
        counted[str(record_bin(record))] = counted.get(str(record_bin(record)), 0) + 1
    assert note == {'records': len(db), 'bins': dict(sorted(counted.items(),
                                                             key=lambda kv: int(kv[0])))}


def test_a_crawl_dates_changes_with_last_modified(web, tmp_path):
    """A server that sends Last-Modified: the first fetch already records the page's age
    since its last change (a dated observation), and the estimate follows from it."""
    from beamcrawl.transforms.fetcher.http import http_date
    web.add('dated.test', '/robots.txt', Page(status=404))
    web.add('dated.test', '/', html_page('dated', headers={
        'Last-Modified': http_date(NOW - 10 * DAY_MS)}))
    conf = ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'domain.extra.suffixes=test',
            '-D', 'fetcher.server.delay=0', '-D', 'db.fetch.schedule.class=optimal',
            '-D', 'db.fetch.schedule.optimal.min_interval=600']
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://dated.test/'])
    run_cli('crawl', crawl, '--rounds', '1', '--now', str(NOW), '--seeds', seeds, *conf)
    page = read_db(crawl)['http://dated.test/']
    history = parse_history(page['metadata'][HISTORY_KEY])
    assert len(history) == 1 and history[0][1] is True
    assert history[0][2] == pytest.approx(10.0, abs=0.01)  # the fetch ran at --now
    assert float(page['metadata'][RATE_KEY]) == pytest.approx(
        estimate_rate(history, **PRIOR), rel=1e-5)
