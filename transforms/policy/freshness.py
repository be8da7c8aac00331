"""The freshness lab: how fresh does a fetch schedule keep a crawldb, per fetch it spends? Pure.

A simulated web of N pages, each changing on its own (a change model below), is crawled in
rounds (one a day by default), as `beamcrawl crawl` would: a page is due when its crawldb fetch
time has come; with a daily budget only the budget's worth of due pages is fetched, in
generate's order (longest due first; with the optimal schedule, what a fetch gains first). A
fetch sees what a real one would: a page unchanged since the last fetch answers 304 to
If-Modified-Since (`fetch_notmodified`), a changed one answers 200 with content whose signature
differs from the stored one (`fetch_success`), and a share of servers send the date of the
page's last change (Last-Modified, LAST_MODIFIED_SHARE by default). The new crawldb
record then comes from updatedb's own `merge_url`, with the configured schedule: the crawler's
schedules are not re-implemented here. (`merge_url` gives the same answer for the same inputs,
so it is called once per distinct input and the answer applied to every page that had it.)

Besides the crawler's schedules, three reference policies: `uniform` revisits every page at
the same interval, `proportional` at an interval inversely proportional to its true change
rate (both from a random first fetch within their interval), and `optimal-known` is the
optimal schedule run as the crawl runs it (plan, whole rounds, generate's ranking) with each
page's true change rate in place of its estimate from the first fetch on: what the optimal
schedule would reach if it knew the rates; all spend the budget (or, without one, what the
default 30-day interval spends).

Per schedule: average freshness (the share of pages whose stored copy is current, averaged over
time: within each round, from its fetches to the next round's; and the same after the first
WARM_UP_DAYS, the steady state), average age (days since the
stored copy became stale, 0 when fresh, averaged likewise), fetches,
fetches per day, freshness per 1,000 daily fetches, wasted fetches (the page had not changed)
and missed changes (changes overwritten by a later change before any fetch saw them).

Change models (`ChangeModel`):
  poisson   every page changes as a Poisson process; its rate is log-normal with a median of
            one change in 10 days and sigma 1.5 (from hourly to never, in practice);
  periodic  every page changes exactly every P days, P log-normal (median 10, sigma 1.5),
            at a random phase;
  mixed     (default) 20% of pages never change, 5% change every hour, the rest as poisson.
"""

import copy
import dataclasses
import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beamcrawl.transforms.policy.updatedb import UpdateRules, merge_url
from beamcrawl.transforms.storage.records import crawl_datum

__all__ = ['CHANGE_MODELS', 'REFERENCE_POLICIES', 'Population', 'make_population', 'Result',
           'simulate_schedule', 'simulate_reference', 'parse_sweep']

DAY_MS = 86400 * 1000
CHANGE_MODELS = ('mixed', 'poisson', 'periodic')
REFERENCE_POLICIES = ('uniform', 'proportional', 'optimal-known')
_MEDIAN_DAYS, _SIGMA = 10.0, 1.5
_NEVER_SHARE, _HOURLY_SHARE = 0.2, 0.05
_CREATED_DAYS = 730.0                # mean age of a page that never changes, at day 0
# The share of pages whose server sends a true Last-Modified date, by default: HTTP Archive
# counted it on 73 % of all responses (November 2014), fewer HTML pages send it (they are
# mostly generated); half is an assumption (docs/schedules.md).
LAST_MODIFIED_SHARE = 0.5
# Freshness is also reported after a warm-up: the first 90 days (the longest interval), in
# which the crawl fetches every page a first time and learns its change rate.
WARM_UP_DAYS = 90.0
LAB_URL = 'http://lab.test/'       # page i's URL: LAB_URL + str(i)
_T0 = 10 ** 12                       # a canonical "now" (ms) for the merge_url calls


@dataclasses.dataclass
class Population:
    """The true change behaviour of the simulated pages."""
    rate: np.ndarray                 # changes per day (0: never); periodic: 1 / period
    periodic: np.ndarray             # bool: changes exactly every 1/rate days
    phase: np.ndarray                # days: a periodic page changes at phase + k / rate
    seed: int
    # The server sends a true Last-Modified date (share `last_modified_share`), and for a page
    # that never changes, how many days before day 0 it was created (its Last-Modified).
    last_modified: Optional[np.ndarray] = None
    created: Optional[np.ndarray] = None

    @property
    def size(self) -> int:
        return len(self.rate)


def make_population(n: int, model: str, seed: int,
                    last_modified_share: float = 0.0) -> Population:
    """N pages with change rates drawn for `model` (one of CHANGE_MODELS), a share of them
    on servers that send Last-Modified (drawn apart: the change rates do not depend on it)."""
    if model not in CHANGE_MODELS:
        raise ValueError(f'change model {model!r}: expected one of {CHANGE_MODELS}')
    rng = np.random.default_rng(seed)
    rate = 1.0 / rng.lognormal(math.log(_MEDIAN_DAYS), _SIGMA, n)
    periodic = np.zeros(n, dtype=bool)
    if model == 'periodic':
        periodic[:] = True
    elif model == 'mixed':
        kind = rng.random(n)
        rate[kind < _NEVER_SHARE] = 0.0
        hourly = (kind >= _NEVER_SHARE) & (kind < _NEVER_SHARE + _HOURLY_SHARE)
        rate[hourly] = 24.0
        periodic[hourly] = True
    phase = rng.random(n) / np.where(rate > 0, rate, 1.0)
    other = np.random.default_rng(seed + 2)
    last_modified = other.random(n) < last_modified_share
    created = other.exponential(_CREATED_DAYS, n)
    return Population(rate=rate, periodic=periodic, phase=phase, seed=seed,
                      last_modified=last_modified, created=created)


@dataclasses.dataclass
class Result:
    name: str
    freshness: float = 0.0           # share of current pages, averaged over time
    steady: float = 0.0              # the same after the first WARM_UP_DAYS (0: none left)
    age_days: float = 0.0            # days a stale copy has been stale, averaged likewise
    fetches: int = 0
    fetches_per_day: float = 0.0
    freshness_per_1k: float = 0.0    # freshness per 1,000 fetches a day
    wasted: int = 0                  # fetches of pages that had not changed
    missed: int = 0                  # changes never seen (overwritten before a fetch)
    days: int = 0
    daily_freshness: List[float] = dataclasses.field(default_factory=list)
    final_intervals_days: Optional[np.ndarray] = None

    def row(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items()
                if k not in ('daily_freshness', 'final_intervals_days')}


class _Truth:
    """The pages' change events, drawn as the simulation needs them (memoryless for Poisson).
    A page never fetched has no stored copy: it counts as stale since day 0."""

    def __init__(self, population: Population, rng: np.random.Generator):
        self.p = population
        self.rng = rng
        self.known = np.zeros(population.size, dtype=bool)    # a copy is stored
        self.next_change = np.zeros(population.size)          # days; the copy is current before
        self.dates = np.random.default_rng(population.seed + 3)   # Last-Modified dates

    def _ages(self, idx: np.ndarray, changed: np.ndarray, t: float) -> np.ndarray:
        """Days from the Last-Modified date to day t of pages `idx` fetched at t, for those
        whose server sends it and that are fetched for the first time or found changed
        (NaN for the others): the last change before t."""
        age = np.full(len(idx), np.nan)
        lm = self.p.last_modified
        if lm is None:
            return age
        want = lm[idx] & (changed | ~self.known[idx])
        if not want.any():
            return age
        sel = idx[want]
        rate = self.p.rate[sel]
        out = np.full(len(sel), np.nan)
        never = rate <= 0
        out[never] = t + self.p.created[sel][never]
        periodic = ~never & self.p.periodic[sel]
        if periodic.any():
            period = 1.0 / rate[periodic]
            phase = self.p.phase[sel][periodic]
            k = np.floor((t - phase) / period + 1e-9)
            last = phase + period * k
            # a page before its first change: created a period before its phase
            out[periodic] = t - np.where(k >= 0, last, phase - period)
        poisson = ~never & ~self.p.periodic[sel]
        if poisson.any():
            back = self.dates.exponential(1.0 / rate[poisson])
            first = np.where(self.known[sel][poisson], self.next_change[sel][poisson], -np.inf)
            # the last change after the first one since the previous fetch, else that one
            out[poisson] = np.minimum(back, t - first)
        age[want] = out
        return age

    def _next_after(self, idx: np.ndarray, t: float) -> np.ndarray:
        rate = self.p.rate[idx]
        out = np.full(len(idx), np.inf)
        live = rate > 0
        periodic = live & self.p.periodic[idx]
        poisson = live & ~self.p.periodic[idx]
        if periodic.any():
            period = 1.0 / rate[periodic]
            phase = self.p.phase[idx][periodic]
            out[periodic] = phase + period * (np.floor((t - phase) / period) + 1)
        if poisson.any():
            out[poisson] = t + self.rng.exponential(1.0 / rate[poisson])
        return out

    def fetch(self, idx: np.ndarray, t: float) -> Tuple[np.ndarray, int, np.ndarray]:
        """Pages `idx` fetched at day t: (changed since the last fetch, False for a first
        fetch; changes missed; days since the Last-Modified date, _ages); the stored copies
        become current."""
        changed = self.known[idx] & (self.next_change[idx] <= t)
        ages = self._ages(idx, changed, t)
        missed = 0
        seen = idx[changed]
        if len(seen):
            first = self.next_change[seen]
            rate = self.p.rate[seen]
            periodic = self.p.periodic[seen]
            extra = np.zeros(len(seen))
            pois = ~periodic
            if pois.any():
                extra[pois] = self.rng.poisson(rate[pois] * (t - first[pois]))
            if periodic.any():
                period = 1.0 / rate[periodic]
                extra[periodic] = np.floor((t - first[periodic]) / period + 1e-9)
            missed = int(extra.sum())
        self.next_change[idx] = self._next_after(idx, t)
        self.known[idx] = True
        return changed, missed, ages

    def measure(self, t: float, span: float) -> Tuple[float, float]:
        """(share of current copies, mean days since copies became stale), averaged over the
        time from day t (just after the round's fetches) to t + span (the next round): a copy
        is current until the page's next change."""
        end = np.where(self.known, np.minimum(self.next_change, t + span), t - 1e9)
        fresh = np.clip((end - t) / span, 0.0, 1.0)
        stale_from = np.maximum(end, t)          # the copy is stale from here to t + span
        stale = t + span - stale_from
        # mean over the span of (τ − end) for τ from stale_from to t + span
        ages = np.where(self.known, stale * ((stale_from - end) + stale / 2) / span,
                        t + span / 2)
        return float(fresh.mean()), float(ages.mean())


def _round_days(hours: float) -> float:
    return hours / 24.0


def _finish(result: Result, freshness: List[float], ages: List[float], days: float,
            n: int) -> Result:
    result.daily_freshness = freshness
    result.freshness = float(np.mean(freshness)) if freshness else 0.0
    skip = int(round(WARM_UP_DAYS * len(freshness) / days)) if days else 0
    result.steady = float(np.mean(freshness[skip:])) if freshness[skip:] else 0.0
    result.age_days = float(np.mean(ages)) if ages else 0.0
    result.days = int(round(days))
    result.fetches_per_day = result.fetches / days if days else 0.0
    result.freshness_per_1k = (result.freshness / (result.fetches_per_day / 1000.0)
                               if result.fetches_per_day else 0.0)
    return result


def _select(due: np.ndarray, fetch_time: np.ndarray, budget: Optional[int]) -> np.ndarray:
    """Generate's choice among due pages: all of them, or the budget's worth due longest."""
    idx = np.flatnonzero(due)
    if budget is None or len(idx) <= budget:
        return idx
    order = np.lexsort((idx, fetch_time[idx]))
    return idx[order[:budget]]


class _Transitions:
    """merge_url's answer for each distinct (what the fetch saw, stored interval, days since the
    last change was seen, content type), computed once."""

    FIRST, NOT_MODIFIED, CHANGED = 0, 1, 2

    def __init__(self, rules: UpdateRules, content_type: str):
        self.rules = rules
        self.content_type = content_type
        self.cache: Dict[Tuple[int, int, int], Tuple[int, int, int, bool]] = {}
        self.sync = bool(getattr(rules.schedule, 'sync_delta', False))

    def __call__(self, kind: int, interval: int, since_mod_ms: int
                 ) -> Tuple[int, int, int, bool]:
        """(new interval s, next fetch time − now in ms, modified time − now in ms, whether a
        signature is stored)."""
        key = (kind, interval, since_mod_ms if self.sync else 0)
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = self._compute(kind, interval, since_mod_ms)
        return hit

    def _compute(self, kind, interval, since_mod_ms):
        meta = {'Content-Type': self.content_type}
        url = 'http://lab.test/page'
        mod = 0 if kind == self.FIRST else _T0 - since_mod_ms
        old = crawl_datum(url, 'db_unfetched' if kind == self.FIRST else 'db_fetched',
                          fetch_time=_T0, fetch_interval=interval, modified_time=mod,
                          score=1.0, signature=None if kind == self.FIRST else b'old',
                          metadata=meta)
        if kind == self.NOT_MODIFIED:                 # If-Modified-Since → 304
            fetch = dict(old, status='fetch_notmodified', protocol_status='notmodified',
                         signature=b'old', modified_time=0)
            signatures = []
        else:                                          # 200, new content
            fetch = dict(old, status='fetch_success', protocol_status='success',
                         signature=None, modified_time=0)
            signatures = [crawl_datum(url, 'signature', fetch_time=_T0, fetch_interval=0,
                                      signature=b'new')]
        new, _ = merge_url([old], [fetch], [], signatures, _T0, self.rules)
        return (new['fetch_interval'], new['fetch_time'] - _T0,
                (new['modified_time'] - _T0) if new['modified_time'] else -10 ** 15,
                new['signature'] is not None)


class _ChangeRates:
    """The optimal schedule's side of the lab (policy/optimal.py, policy/changerate.py): each
    page's history of observations, its estimated change rate, and the multiplier solved
    before each round on the histogram of the estimates, as updatedb solves it on the
    crawldb's; the interval of each fetched page comes from the schedule's own functions,
    vectorized over the pages fetched in a round."""

    def __init__(self, schedule, n: int, plan_budget: float, round_days: float,
                 known: Optional[np.ndarray] = None):
        # An interval shorter than a round is a round: the schedule's shortest interval is
        # the round's length here (as a crawl's db.fetch.schedule.optimal.min_interval should
        # be; docs/schedules.md).
        schedule = copy.copy(schedule)
        schedule.min_days = max(schedule.min_days, round_days)
        self.s, self.budget = schedule, plan_budget
        self.t = np.zeros((n, schedule.history), dtype=np.float64)
        self.changed = np.zeros((n, schedule.history), dtype=bool)
        self.age = np.full((n, schedule.history), np.nan)
        self.count = np.zeros(n, dtype=np.int64)
        self.last = np.full(n, np.nan)
        self.rate = np.full(n, np.nan)
        self.known = known                # the true rates (optimal-known), else estimated
        self.multiplier = None
        # The pages' URLs are http://lab.test/<index>; their keys start whole_rounds' dither.
        from beamcrawl.transforms.policy.optimal import page_key
        self.keys = np.array([page_key(f'{LAB_URL}{i}') for i in range(n)], dtype=np.uint64)

    def start_round(self) -> None:
        from beamcrawl.transforms.policy.optimal import NO_HISTORY_BIN, rate_bins
        known = ~np.isnan(self.rate)
        counts = np.bincount(rate_bins(self.rate[known]))
        histogram = {k: int(c) for k, c in enumerate(counts) if c}
        histogram[NO_HISTORY_BIN] = int(np.count_nonzero(~known))
        self.multiplier = self.s.solve(histogram, self.budget)

    def select(self, due: np.ndarray, fetch_time: np.ndarray, budget: Optional[int], t: float
               ) -> np.ndarray:
        """Generate's choice with this schedule: the due pages, or the budget's worth of
        them that gain most from a fetch now (policy/generate.py; pages never fetched or
        not for the longest interval first), ties to the longest due."""
        from beamcrawl.transforms.policy.optimal import gain_per_fetch
        idx = np.flatnonzero(due)
        if budget is None or len(idx) <= budget:
            return idx
        rate = np.where(np.isnan(self.rate[idx]), self.s.prior_rate, self.rate[idx])
        last = self.last[idx]
        since = t - last
        gain = np.where(np.isnan(last) | (since >= self.s.max_days - 1e-9), np.inf,
                        gain_per_fetch(rate, since))
        order = np.lexsort((idx, fetch_time[idx], -gain))
        return idx[order[:budget]]

    def fetched(self, idx: np.ndarray, changed: np.ndarray, first: np.ndarray, t: float,
                age: Optional[np.ndarray] = None) -> np.ndarray:
        """The new interval (days) of pages `idx` fetched at day t (`age`: days since the
        Last-Modified date, NaN where the server sends none; as OptimalFetchSchedule records
        it: for a change, and at the first fetch)."""
        from beamcrawl.transforms.policy.changerate import estimate_rates
        from beamcrawl.transforms.policy.optimal import optimal_intervals
        age = np.full(len(idx), np.nan) if age is None else age
        again = ~first & ~np.isnan(self.last[idx])
        fresh_start = np.isnan(self.last[idx]) & ~np.isnan(age)
        record = again | fresh_start
        rec = idx[record]
        if len(rec):
            slot = self.count[rec] % self.s.history
            self.t[rec, slot] = np.where(again[record], t - self.last[rec], age[record])
            self.changed[rec, slot] = np.where(again[record], changed[record], True)
            self.age[rec, slot] = np.where(self.changed[rec, slot], age[record], np.nan)
            self.count[rec] += 1
        self.last[idx] = t
        rows = idx[self.count[idx] > 0]
        if self.known is not None:        # knowing the rates from the first fetch on
            self.rate[idx] = self.known[idx]
        elif len(rows):
            valid = np.arange(self.s.history)[None, :] < self.count[rows][:, None]
            self.rate[rows] = estimate_rates(self.t[rows], self.changed[rows], valid,
                                             prior_rate=self.s.prior_rate,
                                             prior_sigma=self.s.prior_sigma,
                                             age=self.age[rows])
        days = np.full(len(idx), self.s.default_interval / 86400.0)
        if self.multiplier is not None:
            known = ~np.isnan(self.rate[idx])
            days[known] = optimal_intervals(self.rate[idx][known], self.multiplier,
                                            self.s.min_days, self.s.max_days)
        from beamcrawl.transforms.policy.optimal import dither, whole_rounds
        offset = whole_rounds(days, self.s.min_days,
                              dither(self.keys[idx], np.rint(t * DAY_MS).astype(np.int64)))
        return np.maximum(1.0, np.rint(offset * 86400.0)) / 86400.0


def simulate_schedule(name: str, rules: UpdateRules, population: Population, *, days: int,
                      budget: Optional[int], round_hours: float = 24.0,
                      content_type: str = 'text/html', plan_budget: Optional[float] = None,
                      progress: Optional[Callable[[str], None]] = None,
                      known_rates: bool = False) -> Result:
    """Runs a crawler schedule (through merge_url with `rules`) over the population. The
    optimal schedule plans for `plan_budget` fetches a day (_ChangeRates); with `known_rates`
    it uses the pages' true change rates instead of estimates (`optimal-known`)."""
    n = population.size
    rng = np.random.default_rng(population.seed + 1)
    truth = _Truth(population, rng)
    transitions = _Transitions(rules, content_type)
    step = _round_days(round_hours)
    default = rules.schedule.default_interval
    fetch_time = np.zeros(n)                          # days (crawldb fetch time)
    interval = np.full(n, default, dtype=np.int64)    # s
    modified = np.full(n, -np.inf)                    # days of the last seen change
    has_sig = np.zeros(n, dtype=bool)
    result = Result(name)
    freshness, ages = [], []
    rounds = int(round(days / step))
    rates = None
    if rules.schedule.kind == 'optimal':
        rates = _ChangeRates(rules.schedule, n, plan_budget or n * 86400.0 / default, step,
                             known=population.rate if known_rates else None)
    for r in range(rounds):
        t = r * step
        if rates is not None:
            rates.start_round()
        due = fetch_time <= t + 1e-9
        chosen = (_select(due, fetch_time, budget) if rates is None else
                  rates.select(due, fetch_time, budget, t))
        if len(chosen):
            first = ~has_sig[chosen]
            changed, missed, dated = truth.fetch(chosen, t)
            result.missed += missed
            kinds = np.where(~has_sig[chosen], _Transitions.FIRST,
                             np.where(changed, _Transitions.CHANGED,
                                      _Transitions.NOT_MODIFIED))
            result.wasted += int(np.count_nonzero(~changed & has_sig[chosen]))
            since = np.where(np.isfinite(modified[chosen]),
                             np.rint((t - modified[chosen]) * DAY_MS), 0).astype(np.int64)
            keys = np.stack([kinds, interval[chosen], since if transitions.sync else
                             np.zeros_like(since)], axis=1)
            unique, inverse = np.unique(keys, axis=0, return_inverse=True)
            answers = np.array([transitions(int(k), int(i), int(s)) for k, i, s in unique],
                               dtype=np.float64)
            got = answers[inverse.ravel()]
            interval[chosen] = got[:, 0].astype(np.int64)
            fetch_time[chosen] = t + got[:, 1] / DAY_MS
            modified[chosen] = np.where(got[:, 2] > -10 ** 14, t + got[:, 2] / DAY_MS, -np.inf)
            has_sig[chosen] = got[:, 3] > 0
            if rates is not None:
                planned = rates.fetched(chosen, changed, first, t, dated)
                interval[chosen] = np.rint(planned * 86400.0).astype(np.int64)
                fetch_time[chosen] = t + planned
            result.fetches += len(chosen)
        fresh, age = truth.measure(t, step)
        freshness.append(fresh)
        ages.append(age)
        if progress and r and r % 100 == 0:
            progress(f'{name}: round {r}/{rounds}')
    result.final_intervals_days = interval / 86400.0
    return _finish(result, freshness, ages, rounds * step, n)


def simulate_reference(name: str, population: Population, *, days: int, budget: float,
                       round_hours: float = 24.0, max_days: float = 90.0) -> Result:
    """A reference policy that knows the change rates, `uniform` or `proportional`
    (`optimal-known` is simulate_schedule with known_rates), spending `budget` fetches a day."""
    if name not in ('uniform', 'proportional'):
        raise ValueError(name)
    n = population.size
    rng = np.random.default_rng(population.seed + 1)
    truth = _Truth(population, rng)
    step = _round_days(round_hours)
    if name == 'uniform':
        period = np.full(n, max(step, n / budget))
    else:
        total = population.rate.sum()
        frequency = budget * population.rate / total if total else np.zeros(n)
        period = np.where(frequency > 0, 1.0 / np.maximum(frequency, 1e-12), np.inf)
        period = np.maximum(period, step)
    first = np.where(np.isfinite(period), rng.random(n) * np.where(np.isfinite(period),
                                                                   period, 0), np.inf)
    fetch_time = first
    result = Result(name)
    freshness, ages = [], []
    rounds = int(round(days / step))
    cap = int(math.ceil(budget * step))
    for r in range(rounds):
        t = r * step
        chosen = _select(fetch_time <= t + 1e-9, fetch_time, cap)
        if len(chosen):
            first_time = ~truth.known[chosen]
            changed, missed, _ = truth.fetch(chosen, t)
            result.missed += missed
            result.wasted += int(np.count_nonzero(~changed & ~first_time))
            fetch_time[chosen] = fetch_time[chosen] + period[chosen]
            result.fetches += len(chosen)
        fresh, age = truth.measure(t, step)
        freshness.append(fresh)
        ages.append(age)
    result.final_intervals_days = np.where(np.isfinite(period), period, np.nan)
    return _finish(result, freshness, ages, rounds * step, n)


def parse_sweep(text: str) -> Dict[str, Sequence[float]]:
    """`inc_rate=0.1:0.5:0.1,dec_rate=0.2:0.4:0.1` → {'inc_rate': [0.1, ...], ...}: values from
    start to stop inclusive, by step."""
    out = {}
    for item in text.split(','):
        name, sep, spec = item.strip().partition('=')
        parts = spec.split(':')
        if not sep or len(parts) != 3:
            raise ValueError(f'--sweep {item!r}: expected name=start:stop:step')
        start, stop, step = (float(x) for x in parts)
        if step <= 0 or stop < start:
            raise ValueError(f'--sweep {item!r}: need start <= stop and a positive step')
        count = int(math.floor((stop - start) / step + 1e-9)) + 1
        out[name] = [round(start + i * step, 10) for i in range(count)]
    return out

