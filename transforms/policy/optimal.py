"""The optimal re-fetch schedule: the revisit rate of each page that keeps the most pages fresh
for a budget of fetches. Pure (numpy, no Beam).

Cho and Garcia-Molina ("Synchronizing a database to improve freshness", SIGMOD 2000): a page
that changes at rate λ (Poisson) and is fetched every 1/f days is fresh for a share
F(λ, f) = (f/λ)(1 − e^(−λ/f)) of the time. Spending a budget of B fetches a day to maximize
Σ F(λ_i, f_i) with Σ f_i = B, the Lagrange conditions give every page the same marginal gain
μ: ∂F/∂f = g(λ/f)/λ = μ, with g(x) = 1 − (1 + x)·e^(−x) rising from 0 to 1. So x = g⁻¹(μλ)
and f = λ/x; a page with μλ ≥ 1 changes too fast to be worth the fetches (f = 0: it is
fetched at the longest interval only), and a page that never changes needs none either. The
one multiplier μ is set so that the frequencies add up to the budget; it needs every page's
rate, so it is solved on a histogram of the rates (RATE_BINS, counted over the whole crawldb)
by bisection on log μ (docs/schedules.md).

`OptimalFetchSchedule` is `db.fetch.schedule.class=optimal`: at each fetch it records what the
fetch saw in the page's history (policy/changerate.py), estimates its change rate and sets its
interval 1/f from the multiplier, bounded by its min and max intervals, in whole rounds
(`whole_rounds`); a page without history keeps the default interval, and so does every page
while no multiplier is known yet (the first updatedb with the schedule). The intervals are
planned for `due_factor` times the budget, and generate ranks the due pages by what a fetch
now gains (`gain_per_fetch`, `record_gain`; docs/schedules.md).
"""

import copy
import datetime
import email.utils
import math
import zlib
from typing import Mapping, Optional

import numpy as np

from beamcrawl.transforms.policy.changerate import (HISTORY_KEY, LAST_FETCH_KEY, RATE_KEY,
                                                    estimate_rate, observe, parse_history)
from beamcrawl.transforms.policy.schedule import (MS_PER_S, STATE_MODIFIED, STATE_NOTMODIFIED,
                                                  FetchSchedule)

__all__ = ['freshness', 'optimal_frequencies', 'solve_multiplier', 'optimal_intervals',
           'rate_bin', 'rate_bins', 'bin_rate', 'NO_HISTORY_BIN', 'NOT_PLANNED_BIN', 'RATE_BINS', 'OptimalFetchSchedule',
           'histogram_rates', 'multiplier_for', 'record_bin', 'gain_per_fetch', 'record_gain',
           'whole_rounds', 'dither', 'page_key']

DAY_S = 86400.0
# The histogram of change rates: bins of equal width in log rate, from one change in 10^5 days
# to 10^4 changes a day, a hundred bins to a factor of 10 (a bin's rate is within 1.2 % of its
# pages': with ten, the pages near the cut-off rate 1/μ were placed so roughly that the
# schedule spent 22 % less than its budget in the lab); bin NO_HISTORY_BIN counts pages without
# an estimate (at the default interval).
_LOG_MIN, _LOG_MAX, _PER_DECADE = -5.0, 4.0, 100
RATE_BINS = int((_LOG_MAX - _LOG_MIN) * _PER_DECADE)
NO_HISTORY_BIN = -1
# Pages the schedule does not plan for: gone, redirected, duplicate (their intervals are the
# gone page's, growing to the longest); they are counted apart and spend none of the budget.
NOT_PLANNED_BIN = -2
_NOT_PLANNED = frozenset({'db_gone', 'db_redir_temp', 'db_redir_perm', 'db_duplicate',
                          'db_orphan'})

# g(x) = 1 − (1 + x)e^(−x) tabulated on a log grid, to invert it by interpolation (up to
# x = 35, where g is still below 1 in double precision: the table must rise strictly).
_X = np.logspace(-8, math.log10(35.0), 4000)
_G = -np.expm1(-_X) - _X * np.exp(-_X)


def freshness(rate, frequency):
    """F(λ, f): the expected share of time a page is fresh (1 for a page that never
    changes; 0 for one never fetched that changes)."""
    rate, frequency = np.asarray(rate, dtype=float), np.asarray(frequency, dtype=float)
    with np.errstate(divide='ignore', invalid='ignore'):
        x = rate / frequency
        out = -np.expm1(-x) / x
    return np.where(rate <= 0, 1.0, np.where(frequency <= 0, 0.0, out))


def optimal_frequencies(rates, mu: float) -> np.ndarray:
    """Fetches a day of each page for the multiplier μ (0 for μλ ≥ 1 and for λ = 0)."""
    rates = np.asarray(rates, dtype=float)
    target = mu * rates
    x = np.interp(target, _G, _X)
    with np.errstate(divide='ignore', invalid='ignore'):
        f = rates / x
    return np.where((rates > 0) & (target < _G[-1]), f, 0.0)


def gain_per_fetch(rates, days_since) -> np.ndarray:
    """What one fetch now adds to a page's freshness, per fetch, at the margin: g(λs)/λ for a
    page last fetched s days ago (the quantity the optimum equalizes at μ: a page is due when
    it reaches μ). It grows with s towards 1/λ: a page that changes often gains little from
    any one fetch, since it is soon stale again. Generate ranks due pages by it (highest
    first): when more are due than the budget fetches, those that gain most go first."""
    rates = np.asarray(rates, dtype=float)
    x = rates * np.asarray(days_since, dtype=float)
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        g = -np.expm1(-x) - x * np.exp(-x)
        out = g / rates
    # λ → 0: g(x)/λ → x²/(2λ) = λs²/2 → 0
    return np.where(rates > 0, np.where(np.isfinite(out), out, 0.0), 0.0)


def solve_multiplier(rates, counts, budget: float, min_days: float = 0.0,
                     max_days: float = math.inf) -> Optional[float]:
    """The μ at which the pages (`counts` of each rate) spend `budget` fetches a day, each
    fetched every min_days to max_days; the smallest μ tried when even it spends less (a
    budget beyond every useful fetch); None when there is nothing to spend it on (the longest
    intervals alone spend the budget)."""
    rates, counts = np.asarray(rates, dtype=float), np.asarray(counts, dtype=float)
    keep = counts > 0
    rates, counts = rates[keep], counts[keep]
    floor = 1.0 / max_days if max_days < math.inf else 0.0
    ceiling = 1.0 / min_days if min_days > 0 else math.inf
    if budget <= floor * counts.sum() or not len(rates) or not (rates > 0).any():
        return None

    def spent(log_mu):
        f = np.clip(optimal_frequencies(rates, math.exp(log_mu)), floor, ceiling)
        return float((f * counts).sum())
    lo, hi = -60.0, 60.0                         # spent() falls as μ grows
    if spent(lo) < budget:
        return math.exp(lo)
    for _ in range(100):
        mid = (lo + hi) / 2
        if spent(mid) > budget:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return math.exp((lo + hi) / 2)


def optimal_intervals(rates, mu: float, min_days: float, max_days: float) -> np.ndarray:
    """Each page's revisit interval in days: 1/f, within [min_days, max_days]."""
    f = optimal_frequencies(rates, mu)
    with np.errstate(divide='ignore'):
        days = np.where(f > 0, 1.0 / f, max_days)
    return np.clip(days, min_days, max_days)


def whole_rounds(days, round_days: float, u) -> np.ndarray:
    """The offset (days) of the next fetch time for planned intervals `days`, in a crawl whose
    rounds are `round_days` apart: a page is due at the first round at or after its fetch time,
    so an interval of 1.3 rounds would be 2 rounds; instead it is 1 round with probability 0.7
    and 2 with probability 0.3 (`u` uniform in [0, 1)), whose mean is the planned interval, and
    the fetch time is half a round before that round, which leaves the fetch half a round to
    happen after its round's generate."""
    k = np.asarray(days, dtype=float) / round_days
    whole = np.floor(k)
    whole = np.maximum(1.0, whole + (np.asarray(u, dtype=float) < k - whole))
    return (whole - 0.5) * round_days


def page_key(url: str) -> int:
    """The number a page's dither (`dither`) starts from: its URL's CRC-32."""
    return zlib.crc32(url.encode('utf-8'))


def dither(keys, fetch_time_ms) -> np.ndarray:
    """A number in [0, 1) for each page key and fetch time, spread as if uniform and the same
    wherever it is computed (updatedb, the lab): `whole_rounds`' coin."""
    h = (np.asarray(keys, dtype=np.uint64) * np.uint64(0x9E3779B1)
         + (np.asarray(fetch_time_ms, dtype=np.int64) // 60000).astype(np.uint64)
         * np.uint64(0x85EBCA77)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x2C1B3C6D)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(12)
    h = (h * np.uint64(0x297A2D39)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(15)
    return h.astype(np.float64) / 4294967296.0


def rate_bins(rates) -> np.ndarray:
    """The histogram bin of each change rate (changes a day)."""
    rates = np.asarray(rates, dtype=float)
    with np.errstate(divide='ignore'):
        k = np.floor((np.log10(np.maximum(rates, 1e-300)) - _LOG_MIN) * _PER_DECADE)
    return np.clip(k, 0, RATE_BINS - 1).astype(np.int64)


def rate_bin(rate: float) -> int:
    return int(rate_bins([rate])[0])


def bin_rate(k: int) -> float:
    """The rate a bin stands for (its centre in log rate)."""
    return 10.0 ** (_LOG_MIN + (k + 0.5) / _PER_DECADE)


def histogram_rates(histogram: Mapping[int, float]):
    """(rates, counts) of the bins of a histogram {bin: pages} that hold estimates."""
    bins = [k for k, n in histogram.items() if k >= 0 and n > 0]
    return [bin_rate(k) for k in bins], [histogram[k] for k in bins]


def multiplier_for(histogram: Mapping[int, float], budget: float, default_days: float,
                   min_days: float, max_days: float) -> Optional[float]:
    """μ for a histogram {bin: pages}: the pages without history are fetched every
    `default_days` and spend their share of the budget first; the others are fetched every
    min_days to max_days."""
    rest = budget - histogram.get(NO_HISTORY_BIN, 0) / default_days
    rates, counts = histogram_rates(histogram)
    return solve_multiplier(rates, counts, rest, min_days, max_days) if rest > 0 else None


def record_bin(record: dict) -> int:
    """The histogram bin of a crawldb record: its estimated rate's, NO_HISTORY_BIN, or
    NOT_PLANNED_BIN for a page gone, redirected or duplicate."""
    if record.get('status') in _NOT_PLANNED:
        return NOT_PLANNED_BIN
    value = (record.get('metadata') or {}).get(RATE_KEY)
    if value is None:
        return NO_HISTORY_BIN
    try:
        return rate_bin(float(value))
    except ValueError:
        return NO_HISTORY_BIN


def record_gain(record: dict, now_ms: int, prior_rate: float,
                max_days: float = math.inf) -> float:
    """gain_per_fetch of a crawldb record at `now_ms`: from its estimated rate (the prior's
    without one) and its last fetch; infinite for a page never fetched (a first copy is worth
    more than any refresh) and for one last fetched `max_days` ago or more (the longest
    interval holds, else a page that changes too fast to gain much would wait for ever)."""
    meta = record.get('metadata') or {}
    try:
        last = int(meta[LAST_FETCH_KEY])
    except (KeyError, ValueError):
        return math.inf
    try:
        rate = float(meta.get(RATE_KEY, prior_rate))
    except ValueError:
        rate = prior_rate
    days = max(0.0, (now_ms - last) / (DAY_S * MS_PER_S))
    return math.inf if days >= max_days else float(gain_per_fetch(rate, days))


def _last_modified_age(header: Optional[str], fetch_time: int, previous_fetch: Optional[int]
                       ) -> Optional[float]:
    """Days from a Last-Modified date to the fetch, when it can be true: not after the fetch,
    and after the previous fetch when there was one (the page changed since; an older date is
    a header the server no longer sends, or one that does not follow the content)."""
    if not header:
        return None
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    ms = int(when.timestamp() * 1000)
    if ms > fetch_time or (previous_fetch is not None and ms <= previous_fetch):
        return None
    return (fetch_time - ms) / (DAY_S * MS_PER_S)


class OptimalFetchSchedule(FetchSchedule):
    """Intervals from estimated change rates and the multiplier of the whole crawldb."""

    kind = 'optimal'

    def __init__(self, *, default_interval: int, max_interval: int, min_interval_s: float,
                 max_interval_s: float, history: int, prior_sigma: float,
                 due_factor: float = 1.0, multiplier: Optional[float] = None):
        super().__init__(default_interval=default_interval, max_interval=max_interval)
        self.min_days, self.max_days = min_interval_s / DAY_S, max_interval_s / DAY_S
        self.history, self.prior_sigma = history, prior_sigma
        self.prior_rate = DAY_S / default_interval          # one change per default interval
        self.due_factor = due_factor
        self.multiplier = multiplier

    def solve(self, histogram: Mapping[int, float], budget: float) -> Optional[float]:
        """The multiplier for the crawldb's histogram {bin: pages}: the pages are planned to
        spend `due_factor` times the budget, so that more are due than the budget fetches and
        generate picks those that gain most (gain_per_fetch)."""
        return multiplier_for(histogram, budget * self.due_factor, self.default_interval / DAY_S,
                              self.min_days, self.max_days)

    def with_multiplier(self, multiplier: Optional[float]) -> 'OptimalFetchSchedule':
        """This schedule with the crawldb's multiplier."""
        out = copy.copy(self)
        out.multiplier = multiplier
        return out

    def interval_days(self, rate: float) -> float:
        """The revisit interval of a page with an estimated rate (default without μ)."""
        if self.multiplier is None:
            return self.default_interval / DAY_S
        return float(optimal_intervals([rate], self.multiplier, self.min_days,
                                       self.max_days)[0])

    def set_fetch_schedule(self, record, *, prev_fetch, prev_mod, fetch_time, mod_time, state):
        meta = dict(record['metadata'])
        last = meta.get(LAST_FETCH_KEY)
        try:
            since = (fetch_time - int(last)) / (DAY_S * MS_PER_S) if last else 0.0
        except ValueError:
            since = 0.0
        age = _last_modified_age(meta.get('Last-Modified'), fetch_time,
                                 int(last) if since > 0 else None)
        if since > 0 and state in (STATE_MODIFIED, STATE_NOTMODIFIED):
            meta[HISTORY_KEY] = observe(meta.get(HISTORY_KEY), since, state == STATE_MODIFIED,
                                        self.history, age=age)
        elif not last and age is not None and record.get('status') not in _NOT_PLANNED:
            # A first fetch with Last-Modified: unchanged for `age` days, changed before.
            meta[HISTORY_KEY] = observe(meta.get(HISTORY_KEY), age, True, self.history, age=age)
        meta[LAST_FETCH_KEY] = str(fetch_time)
        history = parse_history(meta.get(HISTORY_KEY))
        if history:
            rate = estimate_rate(history, prior_rate=self.prior_rate,
                                 prior_sigma=self.prior_sigma)
            meta[RATE_KEY] = f'{rate:.6g}'
            days = self.interval_days(rate)
        else:
            days = (record['fetch_interval'] or self.default_interval) / DAY_S
        # Due at a whole number of rounds (min_interval), planned days on average.
        days = float(whole_rounds(days, self.min_days,
                                  dither(page_key(record['url']), fetch_time)))
        interval = max(1, int(round(days * DAY_S)))
        modified = fetch_time if mod_time <= 0 or state == STATE_MODIFIED else mod_time
        return dict(record, retries=0, fetch_interval=interval, metadata=meta,
                    fetch_time=fetch_time + interval * MS_PER_S, modified_time=modified)
