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

A page's history is its last `db.fetch.schedule.optimal.history` observations, kept in its
crawldb metadata as text (HISTORY_KEY): `+` changed or `-` unchanged, then the interval in
minutes in base 36, separated by dots (`+1ko.-2ab`): older ones are dropped, which also lets the
estimate follow a page whose rate changes.
"""

import math
from typing import List, Optional, Sequence, Tuple

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


def parse_history(text: Optional[str]) -> List[Tuple[float, bool]]:
    """[(interval in days, changed)] of a history text; a malformed item is skipped (the
    metadata may come from elsewhere)."""
    out = []
    for item in (text or '').split('.'):
        if len(item) < 2 or item[0] not in '+-':
            continue
        try:
            minutes = int(item[1:], 36)
        except ValueError:
            continue
        if minutes > 0:
            out.append((minutes / _MINUTES_PER_DAY, item[0] == '+'))
    return out


def format_history(history: Sequence[Tuple[float, bool]]) -> str:
    return '.'.join(f'{"+" if changed else "-"}{_b36(max(1, int(round(days * _MINUTES_PER_DAY))))}'
                    for days, changed in history)


def observe(text: Optional[str], days: float, changed: bool, keep: int) -> str:
    """The history text with one more observation, the `keep` newest kept."""
    history = parse_history(text) + [(days, changed)]
    return format_history(history[-keep:])


def estimate_rates(t: np.ndarray, changed: np.ndarray, valid: np.ndarray, *,
                   prior_rate: float, prior_sigma: float) -> np.ndarray:
    """The posterior mode of each page's change rate (changes per day), for pages in rows:
    `t` (days), `changed` and `valid` (bool) are arrays of shape (pages, observations)."""
    t = np.where(valid, np.asarray(t, dtype=np.float64), 0.0)
    c = valid & np.asarray(changed, dtype=bool)
    u0, precision = math.log(prior_rate), 1.0 / (prior_sigma * prior_sigma)
    total = np.where(valid & ~c, t, 0.0).sum(axis=1)
    changed_t = np.where(c, t, 0.0)
    # The root lies within 30 standard deviations of the prior's centre, ever so wide.
    lo = np.full(len(t), u0 - 30.0 * prior_sigma)
    hi = np.full(len(t), u0 + 30.0 * prior_sigma)
    # Newton starts from Cho and Garcia-Molina's estimator for regular intervals at the mean
    # interval, −log((unchanged + ½) / (n + ½)) / mean t: near the root, where it converges
    # in a few steps (from far above the root it would only gain 1 in log λ per step).
    n = valid.sum(axis=1)
    mean_t = np.where(n > 0, t.sum(axis=1) / np.maximum(n, 1), 1.0 / prior_rate)
    unchanged = (valid & ~c).sum(axis=1)
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
        h = phi.sum(axis=1) - exposure - (ua - u0) * precision
        dh = dphi.sum(axis=1) - exposure - precision                # d h / d log λ (< 0)
        la = np.where(h > 0, ua, la)
        ha = np.where(h <= 0, ua, ha)
        with np.errstate(invalid='ignore', divide='ignore'):
            step = ua - h / dh
        outside = ~((step > la) & (step < ha))
        new = np.where(outside, (la + ha) / 2, step)
        u[active], lo[active], hi[active] = new, la, ha
        active = active[np.abs(new - ua) >= 1e-10]
        if not len(active):
            break
    return np.exp(u)


def estimate_rate(history: Sequence[Tuple[float, bool]], *, prior_rate: float,
                  prior_sigma: float) -> float:
    """estimate_rates for one page's [(days, changed)]."""
    if not history:
        return prior_rate
    t = np.array([[d for d, _ in history]])
    c = np.array([[ch for _, ch in history]])
    return float(estimate_rates(t, c, np.ones_like(c, dtype=bool), prior_rate=prior_rate,
                                prior_sigma=prior_sigma)[0])


def _check() -> None:        # pragma: no cover - a quick self-check for developers
    rng = np.random.default_rng(0)
    lam = 0.3
    t = rng.exponential(3.0, (1000, 50))
    c = rng.random(t.shape) < 1 - np.exp(-lam * t)
    est = estimate_rates(t, c, np.ones_like(c), prior_rate=1 / 30, prior_sigma=2.0)
    print(np.median(est), math.fabs(np.median(est) - lam) / lam)


if __name__ == '__main__':   # pragma: no cover
    _check()
