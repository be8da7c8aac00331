"""Seed lines and the Injector's merge rules (Nutch's Injector). Pure, no Beam.

Seed line: `URL[<TAB>key=value]...`. Blank lines and lines starting with `#` are skipped.
Reserved keys: `score` / `nutch.score` (float), `fetch_interval` / `nutch.fetchInterval`
(int seconds), `fixed_interval` (true/false: keep the interval fixed), Nutch's
`nutch.fetchInterval.fixed=<seconds>` (sets the interval and keeps it fixed when > -1) and
`modified_time` (epoch ms: the page's last modification, e.g. a sitemap's lastmod; not a Nutch
key). Other keys become metadata. A bad value is reported and ignored; the URL is still injected (as Nutch).

docs/nutch-differences.md D6: a URL followed by `key=value` tokens separated by spaces instead of
TABs is reported as malformed with a hint, instead of becoming part of the URL.
"""

import dataclasses
import math
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from beamcrawl.transforms.storage.records import METADATA_FIXED_INTERVAL

__all__ = ['SeedLine', 'SeedError', 'parse_seed_line', 'InjectRules', 'injected_datum',
           'merge_injected', 'pick_last']


class SeedError(ValueError):
    """A seed line that cannot be used."""


class SeedLine(NamedTuple):
    url: str
    score: Optional[float] = None
    fetch_interval: Optional[int] = None
    fixed: bool = False
    modified_time: Optional[int] = None
    metadata: Tuple[Tuple[str, str], ...] = ()
    problems: Tuple[str, ...] = ()     # ignored metadata values, for the log


_SPACED_META = re.compile(r'\s+\S+=\S*')
_TRUE = ('true', 'yes', '1')
_FALSE = ('false', 'no', '0')
_SCORE_KEYS = ('score', 'nutch.score')
_INTERVAL_KEYS = ('fetch_interval', 'nutch.fetchInterval')


def parse_seed_line(line: str) -> Optional[SeedLine]:
    """A SeedLine, or None for a blank/comment line; raises SeedError for a malformed one."""
    text = line.strip()
    if not text or text[0] == '#':
        return None
    tab = line.find('\t')
    if tab < 0:
        url, tokens = text, ()
    else:
        url = line[:tab].strip()
        if not url:
            raise SeedError('no URL before the first TAB')
        meta_text = line[tab + 1:].strip()
        tokens = meta_text.split('\t') if meta_text else ()
    # str.split() splits at the str.isspace() characters: more than one piece, a space inside
    if len(url.split(None, 1)) > 1 and _SPACED_META.search(url):
        raise SeedError(f'metadata must be separated by TAB, not spaces: {url!r}')
    if not tokens:
        return SeedLine(url)
    score = interval = modified = fixed_interval = None
    fixed = False
    metadata: Dict[str, str] = {}
    problems: List[str] = []
    for token in tokens:
        name, sep, value = token.strip().partition('=')
        if not sep or not name:
            continue
        try:
            if name in _SCORE_KEYS:
                score = _score(value)
            elif name in _INTERVAL_KEYS:
                interval = _seconds(value)
            elif name == 'fixed_interval':
                if value.lower() not in _TRUE + _FALSE:
                    raise ValueError(value)
                fixed = value.lower() in _TRUE
            elif name == 'modified_time':
                if not 0 <= int(value) < 2 ** 63:
                    raise ValueError(value)
                modified = int(value)
            elif name == 'nutch.fetchInterval.fixed':
                seconds = int(value)
                if seconds > -1:
                    fixed_interval = _seconds(value)
            else:
                metadata[name] = value
        except ValueError:
            problems.append(f'{name}={value!r} is not valid; ignored')
    if fixed_interval is not None:
        interval, fixed = fixed_interval, True
    return SeedLine(url, score, interval, fixed, modified,
                    tuple(sorted(metadata.items())) if metadata else (), tuple(problems))


# A score is stored as an Avro float (32 bits), an interval as an Avro int (seconds).
_MAX_SCORE = 3.4e38
_MAX_INTERVAL = 2 ** 31 - 1


def _score(value: str) -> float:
    """A finite score that a float32 holds (nan, inf and 1e308 are refused)."""
    score = float(value)
    if not math.isfinite(score) or abs(score) > _MAX_SCORE:
        raise ValueError(value)
    return score


def _seconds(value: str) -> int:
    seconds = int(value)
    if not 0 <= seconds <= _MAX_INTERVAL:
        raise ValueError(value)
    return seconds


@dataclasses.dataclass(frozen=True)
class InjectRules:
    """The settings the Injector's reducer needs."""
    score_injected: float
    interval_default: int
    overwrite: bool
    update: bool
    purge_gone: bool



def injected_datum(url: str, seed: SeedLine, rules: InjectRules, now: int) -> dict:
    """The crawldb record of a new seed: db_unfetched, due now."""
    interval = seed.fetch_interval if seed.fetch_interval is not None else rules.interval_default
    metadata = dict(seed.metadata)
    if seed.fixed:
        metadata[METADATA_FIXED_INTERVAL] = str(float(interval))
    score = seed.score if seed.score is not None else rules.score_injected
    # crawl_datum(url, 'db_unfetched', fetch_time=now, fetch_interval=interval, score=score,
    # metadata=metadata, modified_time=seed.modified_time or 0), written out: once per seed,
    # the keyword call cost half as much again as the record (tests/test_inject_policy.py)
    return {'url': url, 'status': 'db_unfetched', 'fetch_time': int(now),
            'modified_time': int(seed.modified_time or 0), 'fetch_interval': int(interval),
            'retries': 0, 'score': float(score), 'signature': None, 'metadata': metadata,
            'protocol_status': None, 'http_code': None}


def merge_injected(injected: Optional[dict], old: Optional[dict], rules: InjectRules
                   ) -> Tuple[Optional[dict], str]:
    """Nutch's Injector reducer for one URL: (record to write or None, outcome).

    outcome: 'new', 'already_known', 'merged', 'purged' or 'kept' (old record, no seed).
    """
    if old is not None and rules.purge_gone and old['status'] == 'db_gone':
        if injected is None:
            return None, 'purged'
        old = None
    if injected is None:
        return old, 'kept'
    if old is None:
        return injected, 'new'
    if rules.overwrite:
        return injected, 'merged'
    if not rules.update:
        return old, 'already_known'
    merged = dict(old)
    merged['metadata'] = {**old['metadata'], **injected['metadata']}
    if injected['score'] != rules.score_injected:
        merged['score'] = injected['score']
    if injected['fetch_interval'] != rules.interval_default:
        merged['fetch_interval'] = injected['fetch_interval']
    if injected['modified_time'] > 0:
        merged['modified_time'] = injected['modified_time']
    return merged, 'merged'


def pick_last(seeds: Sequence[Tuple[tuple, dict]]) -> dict:
    """Of several seeds for one URL, the last in input order (file name, line number) wins.

    Nutch leaves this to the reducer's iteration order (D5); beamcrawl makes it
    deterministic, the way a later line overrides an earlier one in a config file.
    """
    return max(seeds, key=lambda s: s[0])[1]
