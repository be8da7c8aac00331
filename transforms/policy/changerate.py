"""How often does a page change? Estimated from what its fetches saw. Pure (numpy, no Beam).

A fetch sees whether the page changed since the previous fetch, not when or how often: a 304 or
an equal signature means unchanged, a new signature means at least one change. For a page that
changes as a Poisson process with rate λ, a fetch `t` days after the previous one finds it
changed with probability 1 − e^(−λt). Cho and Garcia-Molina ("Estimating frequency of change",
ACM TOIT 2003) estimate λ from such observations taken at irregular intervals by maximum
likelihood; a page with little history gets a prior: log λ is normal around the log of one
change per default fetch interval D, with a standard deviation of `prior_sigma` (a prior that
holds the same weight whatever the page's rate, unlike a Gamma prior, whose fixed exposure
drags fast pages down; docs/schedules.md). The estimate is the posterior's mode: the root in
u = log λ of

    Σ_changed φ(λt) − λ·Σ_unchanged t − (u − log(1/D)) / σ² = 0,   φ(s) = s / (e^s − 1),

unique because the left side decreases in u; found by Newton's method inside a bracket that
halves when a step leaves it.

When the server sends a trustworthy Last-Modified date, a changed page also tells when it
last changed: `a` days before the fetch. Cho and Garcia-Molina's estimator with last-modified
dates (same paper) uses it: the page did not change for `a` days and changed at their start,
which is worth λ·e^(−λa) in the likelihood, adding 1 − λa to the sum above (in place of
φ(λt)) — a known change time, where a yes/no answer is worth at most two thirds of one. A first
fetch with Last-Modified is such an observation too (the page's age since its last change).

A page's history is its last `db.fetch.schedule.optimal.history` observations, kept in its
crawldb metadata as text (HISTORY_KEY): `+` changed or `-` unchanged, then the interval in
minutes in base 36, and for a change dated by Last-Modified `~` and the minutes from that date
to the fetch, separated by dots (`+1ko.-2ab.+2ab~5k`): older ones are dropped, which also lets
the estimate follow a page whose rate changes.
"""

import math
from typing import List, Optional, Sequence

import numpy as np

__all__ = ['HISTORY_KEY', 'RATE_KEY', 'LAST_FETCH_KEY', 'parse_history', 'format_history',
           'observe', 'estimate_rates', 'estimate_rate']

HISTORY_KEY = '_chg_'          # the observations (see above)
RATE_KEY = '_rate_'            # the estimated change rate, changes per day
LAST_FETCH_KEY = '_lft_'       # epoch ms of the last fetch that saw the page (for the next one)
_MINUTES_PER_DAY = 1440.0
_ITERATIONS = 40               # Newton steps at most (about 8 are needed; bisection is slower)


def _b36(n: int) -> str:
    digits = '0123456789abcdefghijklmnopqrstuvwxyz'
    out = ''
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def parse_history(text: Optional[str]) -> List[tuple]:
    """[(interval in days, changed)] of a history text, (interval, True, days since the last
    modification) for a change dated by Last-Modified; a malformed item is skipped (the
    metadata may come from elsewhere)."""
    out: List[tuple] = []
    for item in (text or '').split('.'):
        if len(item) < 2 or item[0] not in '+-':
            continue
        interval, _, age = item[1:].partition('~')
        try:
            minutes = int(interval, 36)
            age_minutes = int(age, 36) if age and item[0] == '+' else None
        except ValueError:
            continue
        if minutes > 0:
            if age_minutes is None:
                out.append((minutes / _MINUTES_PER_DAY, item[0] == '+'))
            else:
                out.append((minutes / _MINUTES_PER_DAY, True, age_minutes / _MINUTES_PER_DAY))
    return out


def _minutes(days: float) -> str:
    return _b36(max(0, int(round(days * _MINUTES_PER_DAY))))


def format_history(history: Sequence[tuple]) -> str:
    items = []
    for obs in history:
        days, changed = obs[0], obs[1]
        item = f'{"+" if changed else "-"}{_b36(max(1, int(round(days * _MINUTES_PER_DAY))))}'
        if changed and len(obs) > 2 and obs[2] is not None:
            item += '~' + _minutes(obs[2])
        items.append(item)
    return '.'.join(items)


def observe(text: Optional[str], days: float, changed: bool, keep: int,
            age: Optional[float] = None) -> str:
    """The history text with one more observation (`age`: days from the Last-Modified date
    of a changed page to the fetch, when known), the `keep` newest kept."""
    history = parse_history(text) + [(days, changed) if age is None or not changed
                                     else (days, True, age)]
    return format_history(history[-keep:])


def estimate_rates(t: np.ndarray, changed: np.ndarray, valid: np.ndarray, *,
                   prior_rate: float, prior_sigma: float,
                   age: Optional[np.ndarray] = None) -> np.ndarray:
    """The posterior mode of each page's change rate (changes per day), for pages in rows:
    `t` (days), `changed` and `valid` (bool) are arrays of shape (pages, observations); `age`
    (days from a changed page's Last-Modified date to the fetch, NaN where unknown), the same
    shape, or None."""
    t = np.where(valid, np.asarray(t, dtype=np.float64), 0.0)
    c = valid & np.asarray(changed, dtype=bool)
    u0, precision = math.log(prior_rate), 1.0 / (prior_sigma * prior_sigma)
    total = np.where(valid & ~c, t, 0.0).sum(axis=1)
    events = np.zeros(len(t))
    if age is not None:
        # A dated change: one event and `age` days without one (1 − λ·age in the sum).
        dated = c & ~np.isnan(np.asarray(age, dtype=np.float64))
        total = total + np.where(dated, age, 0.0).sum(axis=1)
        events = dated.sum(axis=1).astype(np.float64)
        c = c & ~dated
        t = np.where(dated, np.maximum(np.asarray(age, dtype=np.float64), 1e-6), t)
    changed_t = np.where(c, t, 0.0)
    # The root lies within 30 standard deviations of the prior's centre, ever so wide.
    lo = np.full(len(t), u0 - 30.0 * prior_sigma)
    hi = np.full(len(t), u0 + 30.0 * prior_sigma)
    # Newton starts from Cho and Garcia-Molina's estimator for regular intervals at the mean
    # interval, −log((unchanged + ½) / (n + ½)) / mean t: near the root, where it converges
    # in a few steps (from far above the root it would only gain 1 in log λ per step).
    n = valid.sum(axis=1)
    mean_t = np.where(n > 0, t.sum(axis=1) / np.maximum(n, 1), 1.0 / prior_rate)
    unchanged = (valid & ~np.asarray(changed, dtype=bool)).sum(axis=1)
    u = np.where(n > 0, np.log(np.maximum(-np.log((unchanged + 0.5) / (n + 0.5)), 1e-300)
                               / mean_t), u0)
    u = np.clip(u, lo, hi)
    active = np.arange(len(t))                   # pages whose root is not found yet
    for _ in range(_ITERATIONS):
        ua, la, ha = u[active], lo[active], hi[active]
        ct, ca = changed_t[active], c[active]
        lam = np.exp(ua)
        s = lam[:, None] * ct
        with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
            em1 = np.expm1(s)
            phi = s / em1                                           # s / (e^s − 1)
            dphi = s * (em1 - s * (em1 + 1.0)) / (em1 * em1)        # s · dφ/ds
        phi = np.where(ca & np.isfinite(phi), phi, 0.0)
        dphi = np.where(ca & np.isfinite(dphi), dphi, 0.0)
        exposure = lam * total[active]
        h = phi.sum(axis=1) + events[active] - exposure - (ua - u0) * precision
        dh = dphi.sum(axis=1) - exposure - precision                # d h / d log λ (< 0)
        la = np.where(h > 0, ua, la)
        ha = np.where(h <= 0, ua, ha)
        with np.errstate(invalid='ignore', divide='ignore'):
            step = ua - h / dh
        # A Newton step from far off the root is poor (from far above it gains only about 1
        # in log λ a step): a step longer than 2 bisects instead.
        outside = ~((step > la) & (step < ha)) | (np.abs(step - ua) > 2.0)
        new = np.where(outside, (la + ha) / 2, step)
        u[active], lo[active], hi[active] = new, la, ha
        active = active[np.abs(new - ua) >= 1e-10]
        if not len(active):
            break
    return np.exp(u)


def estimate_rate(history: Sequence[tuple], *, prior_rate: float,
                  prior_sigma: float) -> float:
    """estimate_rates for one page's parse_history."""
    if not history:
        return prior_rate
    t = np.array([[obs[0] for obs in history]])
    c = np.array([[obs[1] for obs in history]])
    age = np.array([[obs[2] if len(obs) > 2 and obs[2] is not None else np.nan
                     for obs in history]])
    return float(estimate_rates(t, c, np.ones_like(c, dtype=bool), prior_rate=prior_rate,
                                prior_sigma=prior_sigma, age=age)[0])


def _check() -> None:        # pragma: no cover - a quick self-check for developers
    rng = np.random.default_rng(0)
    lam = 0.3
    t = rng.exponential(3.0, (1000, 50))
    c = rng.random(t.shape) < 1 - np.exp(-lam * t)
    est = estimate_rates(t, c, np.ones_like(c), prior_rate=1 / 30, prior_sigma=2.0)
    print(np.median(est), math.fabs(np.median(est) - lam) / lam)


if __name__ == '__main__':   # pragma: no cover
    _check()
