"""The host database's arithmetic (Nutch's HostDb: UpdateHostDbReducer, ResolverThread, and the
Generator's use of it). Pure, no Beam; docs/hostdb.md.

* `HostFacts`: what the crawldb says about one host (URL counts by status, URLs with retries,
  robots denials, the politeness delay, URLs injected from sitemaps and those sitemaps, numeric
  and string metadata aggregates), built one record at a time and merged (a combiner's
  accumulator).
* `fetch_outcome` and `fold_fetches`: the fetch attempts of new segments, in time order, give
  the failures in a row, the last success and the last failure.
* `host_datum`: the new HostDatum from the old one, the facts and the fetches.
* `should_check` / `resolved`: which hosts a resolution run looks up and what its answer does.
* `expression_env`: the names an expression sees (Nutch's and ours).
* `HostRules` / `host_plan`: generate's per-host decisions (skip, max count, fetch delay).
"""

import dataclasses
import math
import re
from typing import Dict, Iterable, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.expressions import Expression
from beamcrawl.transforms.policy.sitemaps import SITEMAP_KEY

__all__ = ['HostDbSettings', 'HostFacts', 'fetch_outcome', 'fold_fetches', 'FetchFold',
           'host_datum', 'new_datum', 'should_check', 'resolved', 'expression_env',
           'is_field_name', 'HostRules', 'HostPlan', 'host_plan', 'skip_reason', 'percentile',
           'STATUS_FIELDS', 'VARIABLE_FETCH_DELAY', 'FAILED', 'ANSWERED', 'take_variable_delay',
           'COUNT_FIELDS', 'start_fold']

# crawldb status → the HostDatum count it adds to (Nutch counts the first six).
STATUS_FIELDS = {'db_unfetched': 'unfetched', 'db_fetched': 'fetched', 'db_gone': 'gone',
                 'db_redir_temp': 'redir_temp', 'db_redir_perm': 'redir_perm',
                 'db_notmodified': 'not_modified', 'db_duplicate': 'duplicate',
                 'db_orphan': 'orphan'}
COUNT_FIELDS = tuple(STATUS_FIELDS.values())

# The generated record's metadata that carries a per-host fetch delay to the fetcher (ms), as
# Nutch's Generator writes it.
VARIABLE_FETCH_DELAY = '_variableFetchDelay_'

# Protocol statuses of a fetch attempt that failed because of the host or the way to it (no
# usable answer: connection errors, timeouts, 5xx, an unresolvable name); every other attempt
# that was made got an answer. Attempts never made (notfetching, blocked) count as neither.
FAILED = frozenset({'exception', 'failed', 'retry'})
NOT_MADE = frozenset({'notfetching', 'blocked'})
ANSWERED = 'answered'

_NAME_CHARS = re.compile(r'[^A-Za-z0-9_.]')


@dataclasses.dataclass(frozen=True)
class HostDbSettings:
    numeric_fields: Tuple[str, ...]    # hostdb.numeric.fields (crawldb metadata keys)
    string_fields: Tuple[str, ...]     # hostdb.string.fields
    percentiles: Tuple[int, ...]       # hostdb.percentiles
    recheck_interval: int              # hostdb.recheck.interval, ms
    sitemaps_max: int                  # hostdb.sitemaps.max: sitemap URLs kept per host
    check_new: bool = False
    check_known: bool = False
    check_failed: bool = False
    force: bool = False

    @property
    def checks(self) -> bool:
        return self.check_new or self.check_known or self.check_failed


def _metadata_number(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _bucket(value: float) -> float:
    """Percentiles are kept as a histogram of values to three significant digits, so that a
    host's memory is bounded by the spread of its values, not their number."""
    return float(f'{value:.3g}')


class HostFacts:
    """The crawldb's facts about one host (an accumulator: add records, merge partials)."""

    __slots__ = ('counts', 'retried', 'robots_denied', 'delay', 'sites', 'numeric', 'strings',
                 'sitemaps')

    def __init__(self):
        self.counts: Dict[str, int] = {}
        self.retried = 0                 # URLs with retries > 0 (Nutch's connectionFailures)
        self.robots_denied = 0           # URLs whose last fetch robots.txt refused
        self.delay: Tuple[int, float] = (-1, -1.0)  # (fetch.end, fetch.delay s) of the newest
        self.sites: Dict[str, int] = {}   # scheme://host[:port] → URLs
        # numeric field → [count, sum, min, max, {bucket: count}]
        self.numeric: Dict[str, list] = {}
        self.strings: Dict[str, int] = {}  # 'field.value' → URLs
        # sitemap → URLs injected from it (SITEMAP_KEY): one entry per sitemap, not per URL
        self.sitemaps: Dict[str, int] = {}

    def add(self, record: dict, site: str, settings: HostDbSettings) -> 'HostFacts':
        status = record['status']
        field = STATUS_FIELDS.get(status)
        if field is not None:
            self.counts[field] = self.counts.get(field, 0) + 1
        if record['retries']:
            self.retried += 1
        self.sites[site] = self.sites.get(site, 0) + 1
        meta = record['metadata']
        if meta.get('_pst_') == 'robots_denied':
            self.robots_denied += 1
        sitemap = meta.get(SITEMAP_KEY)
        if sitemap:
            self.sitemaps[sitemap] = self.sitemaps.get(sitemap, 0) + 1
        delay = _metadata_number(meta.get('fetch.delay'))
        end = _metadata_number(meta.get('fetch.end'))
        if delay is not None and end is not None and (int(end), delay) > self.delay:
            self.delay = (int(end), delay)
        if status not in ('db_fetched', 'db_notmodified'):
            return self        # Nutch aggregates metadata over fetched pages only
        for name in settings.numeric_fields:
            value = _metadata_number(meta.get(name))
            if value is None:
                continue
            agg = self.numeric.get(name)
            if agg is None:
                agg = self.numeric[name] = [0, 0.0, value, value, {}]
            agg[0] += 1
            agg[1] += value
            agg[2] = min(agg[2], value)
            agg[3] = max(agg[3], value)
            bucket = _bucket(value)
            agg[4][bucket] = agg[4].get(bucket, 0) + 1
        for name in settings.string_fields:
            value = meta.get(name)
            if value is not None:
                key = f'{name}.{value}'
                self.strings[key] = self.strings.get(key, 0) + 1
        return self

    def merge(self, other: 'HostFacts') -> 'HostFacts':
        for key, n in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + n
        self.retried += other.retried
        self.robots_denied += other.robots_denied
        self.delay = max(self.delay, other.delay)
        for key, n in other.sites.items():
            self.sites[key] = self.sites.get(key, 0) + n
        for key, n in other.strings.items():
            self.strings[key] = self.strings.get(key, 0) + n
        for key, n in other.sitemaps.items():
            self.sitemaps[key] = self.sitemaps.get(key, 0) + n
        for name, agg in other.numeric.items():
            mine = self.numeric.get(name)
            if mine is None:
                self.numeric[name] = [agg[0], agg[1], agg[2], agg[3], dict(agg[4])]
                continue
            mine[0] += agg[0]
            mine[1] += agg[1]
            mine[2] = min(mine[2], agg[2])
            mine[3] = max(mine[3], agg[3])
            for bucket, n in agg[4].items():
                mine[4][bucket] = mine[4].get(bucket, 0) + n
        return self

    def homepage(self) -> str:
        """The host's root URL on the site (scheme and port) most of its URLs are on."""
        if not self.sites:
            return ''
        site = min(self.sites.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        return site + '/'

    def sitemap_facts(self, kept: int) -> Dict[str, object]:
        """sitemap_urls (URLs injected from a sitemap), sitemap_count (the distinct sitemaps
        they came from) and sitemaps: at most `kept` of those, the ones that gave the most URLs
        first (ties: by URL)."""
        ranked = sorted(self.sitemaps.items(), key=lambda kv: (-kv[1], kv[0]))
        return {'sitemap_urls': sum(self.sitemaps.values()), 'sitemap_count': len(ranked),
                'sitemaps': [url for url, _ in ranked[:max(0, kept)]]}

    def metadata(self, percentiles: Sequence[int]) -> Dict[str, float]:
        """Nutch's aggregate names: avg./min./max./pctN.<field>, and <field>.<value> counts."""
        out: Dict[str, float] = {key: float(n) for key, n in self.strings.items()}
        for name, (count, total, low, high, hist) in self.numeric.items():
            out[f'avg.{name}'] = total / count
            out[f'min.{name}'] = low
            out[f'max.{name}'] = high
            for p in percentiles:
                out[f'pct{p}.{name}'] = percentile(hist, p)
        return out


def percentile(hist: Dict[float, int], p: float) -> float:
    """The nearest-rank p-th percentile of a histogram {value: count} (Nutch 1.22 writes the
    median under every pctN name, docs/nutch-differences.md D93)."""
    total = sum(hist.values())
    if not total:
        return math.nan
    rank = max(1, math.ceil(p / 100.0 * total))
    seen = 0
    for value in sorted(hist):
        seen += hist[value]
        if seen >= rank:
            return value
    return max(hist)


def fetch_outcome(record: dict) -> Optional[str]:
    """A crawl_fetch record of a fetch attempt → 'failed', ANSWERED, or None (not an attempt:
    a `linked` record, or a URL never requested)."""
    if record['status'] == 'linked':
        return None
    protocol = record.get('protocol_status') or record['metadata'].get('_pst_') or ''
    if protocol in NOT_MADE:
        return None
    return 'failed' if protocol in FAILED else ANSWERED


@dataclasses.dataclass
class FetchFold:
    failures: int = 0          # failed attempts since the last answered one
    last_success: int = 0      # fetch time (the fetch's --now) of the newest answered attempt
    last_failure: int = 0      # fetch time of the newest failed attempt
    attempts: int = 0          # attempts folded in


def fold_fetches(start: FetchFold, events: Iterable[Tuple[tuple, str, int]]) -> FetchFold:
    """Folds a host's fetch attempts into its failure run. events: (order key, outcome, fetch
    time), in any order: they are taken in order-key order (segment, then the request's end):
    an answered attempt ends the run, a failed one lengthens it."""
    out = dataclasses.replace(start)
    for _, outcome, when in sorted(events, key=lambda e: e[0]):
        out.attempts += 1
        if outcome == ANSWERED:
            out.failures = 0
            out.last_success = max(out.last_success, when)
        else:
            out.failures += 1
            out.last_failure = max(out.last_failure, when)
    return out


def new_datum(host: str) -> dict:
    """An empty HostDatum (a host the hostdb did not know)."""
    return {'host': host, 'homepage_url': '', **{f: 0 for f in COUNT_FIELDS},
            'connection_failures': 0, 'fetch_failures': 0, 'dns_failures': 0, 'last_check': 0,
            'last_success': 0, 'last_failure': 0, 'robots_denied': 0, 'crawl_delay': -1.0,
            'metadata': {}, 'sitemap_urls': 0, 'sitemap_count': 0, 'sitemaps': []}


def host_datum(host: str, old: Optional[dict], facts: Optional[HostFacts],
               fetched: FetchFold, settings: HostDbSettings) -> dict:
    """The host's new HostDatum: counts and aggregates from the crawldb's facts (all zero when
    the crawldb has no URL of the host any more), failures and times carried over from the old
    datum and folded with the new fetches (`fetched`, which started from the old datum's)."""
    datum = new_datum(host)
    if old is not None:
        datum.update({k: old[k] for k in ('homepage_url', 'dns_failures', 'last_check',
                                          'crawl_delay') if k in old})
    datum.update(fetch_failures=fetched.failures, last_success=fetched.last_success,
                 last_failure=fetched.last_failure)
    if facts is not None:
        datum.update(facts.counts)
        datum.update(connection_failures=facts.retried, robots_denied=facts.robots_denied,
                     metadata=facts.metadata(settings.percentiles),
                     **facts.sitemap_facts(settings.sitemaps_max))
        datum['homepage_url'] = facts.homepage() or datum['homepage_url']
        if facts.delay[1] >= 0:
            datum['crawl_delay'] = facts.delay[1]
    return datum


def start_fold(old: Optional[dict]) -> FetchFold:
    if old is None:
        return FetchFold()
    return FetchFold(failures=old.get('fetch_failures', 0),
                     last_success=old.get('last_success', 0),
                     last_failure=old.get('last_failure', 0))


# -- resolution ---------------------------------------------------------------------------------

def should_check(datum: dict, settings: HostDbSettings, now: int) -> bool:
    """Whether a resolution run looks the host up (Nutch's shouldCheck): a never-checked host
    with check_new; a known one (no failures) with check_known, a failing one with
    check_failed, each when its recheck is due: `hostdb.recheck.interval` × (DNS failures + 1)
    after its last check, or always with force (docs/nutch-differences.md D93)."""
    if datum['last_check'] == 0:
        return settings.check_new
    failing = datum['dns_failures'] > 0
    if not (settings.check_failed if failing else settings.check_known):
        return False
    due = datum['last_check'] + settings.recheck_interval * (datum['dns_failures'] + 1)
    return settings.force or now >= due


def resolved(datum: dict, ok: bool, now: int) -> Tuple[dict, str]:
    """A lookup's answer applied: (new datum, its outcome name for a counter: new_known_host,
    rediscovered_host, existing_known_host, new_unknown_host, existing_unknown_host)."""
    new = datum['last_check'] == 0
    failing = datum['dns_failures'] > 0
    out = dict(datum, last_check=now)
    if ok:
        out['dns_failures'] = 0
        return out, ('new_known_host' if new else
                     'rediscovered_host' if failing else 'existing_known_host')
    out['dns_failures'] = datum['dns_failures'] + 1
    return out, 'new_unknown_host' if new else 'existing_unknown_host'


# -- expressions --------------------------------------------------------------------------------

# Names an expression may use: the HostDatum's numeric fields, Nutch's names for them, `now`.
_NUTCH_NAMES = {'unfetched': 'unfetched', 'fetched': 'fetched', 'gone': 'gone',
                'redirTemp': 'redir_temp', 'redirPerm': 'redir_perm',
                'notModified': 'not_modified', 'dnsFailures': 'dns_failures',
                'connectionFailures': 'connection_failures'}
_FIELDS = (*COUNT_FIELDS, 'connection_failures', 'fetch_failures', 'dns_failures', 'last_check',
           'last_success', 'last_failure', 'robots_denied', 'crawl_delay', 'sitemap_urls',
           'sitemap_count')
_DERIVED = ('num_records', 'numRecords', 'ok', 'redirs', 'now')
_KNOWN = frozenset((*_FIELDS, *_NUTCH_NAMES, *_DERIVED))


def is_field_name(name: str) -> bool:
    """Whether an expression may use `name`: a field, Nutch's name of one, a derived total, or a
    metadata name (one with a dot, e.g. avg._rs_: absent on some hosts)."""
    return name in _KNOWN or '.' in name


def expression_env(datum: dict, now: int) -> Dict[str, float]:
    """The names an expression sees for a HostDatum. Metadata names keep letters, digits, `_`
    and `.`; other characters become `_` (Content-Type.text/html → Content_Type.text_html)."""
    env = {name: datum[name] for name in _FIELDS}
    for nutch, ours in _NUTCH_NAMES.items():
        env[nutch] = datum[ours]
    env['num_records'] = env['numRecords'] = sum(datum[f] for f in COUNT_FIELDS)
    env['ok'] = datum['fetched'] + datum['not_modified']
    env['redirs'] = datum['redir_temp'] + datum['redir_perm']
    env['now'] = now
    for key, value in (datum.get('metadata') or {}).items():
        env[_NAME_CHARS.sub('_', key)] = value
    return env


# -- generate -----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class HostRules:
    skip_failures: int                   # generate.hostdb.skip.failures (-1: never skip)
    recheck_interval: int                # hostdb.recheck.interval, ms
    max_count: Optional[Expression] = None    # generate.max.count.expr
    fetch_delay: Optional[Expression] = None  # generate.fetch.delay.expr (ms)


@dataclasses.dataclass
class HostPlan:
    """generate's per-host decisions: hosts skipped (host → why), max counts and delays (ms)."""
    skip: Dict[str, str] = dataclasses.field(default_factory=dict)
    max_count: Dict[str, int] = dataclasses.field(default_factory=dict)
    delay_ms: Dict[str, int] = dataclasses.field(default_factory=dict)
    undefined: int = 0          # hosts where an expression named a value they do not have

    @property
    def empty(self) -> bool:
        return not (self.skip or self.max_count or self.delay_ms)


def take_variable_delay(record: dict) -> Tuple[dict, Optional[float]]:
    """A fetch-list record → (the record without VARIABLE_FETCH_DELAY, that delay in seconds or
    None). The fetcher takes the delay off, as Nutch's does, so that it does not travel on into
    crawl_fetch and the crawldb; an unreadable or negative value is ignored."""
    meta = record['metadata']
    if VARIABLE_FETCH_DELAY not in meta:
        return record, None
    text = meta[VARIABLE_FETCH_DELAY]
    record = dict(record, metadata={k: v for k, v in meta.items() if k != VARIABLE_FETCH_DELAY})
    value = _metadata_number(text)
    return record, (value / 1000.0 if value is not None and value >= 0 else None)


def skip_reason(datum: dict, rules: HostRules, now: int) -> str:
    """Why generate leaves a host out ('' = it does not): its name did not resolve more than
    skip_failures times in a row ('dns_failures'), or its last more than skip_failures fetch
    attempts failed and the last of them is less than hostdb.recheck.interval ago
    ('fetch_failures'; after that, one generate lets it be tried again)."""
    limit = rules.skip_failures
    if limit < 0:
        return ''
    if datum['dns_failures'] > limit:
        return 'dns_failures'
    if datum['fetch_failures'] > limit and now < datum['last_failure'] + rules.recheck_interval:
        return 'fetch_failures'
    return ''


def host_plan(datums: Iterable[dict], rules: HostRules, now: int) -> HostPlan:
    """Each host's decisions, from its own datum only: a host absent from the hostdb, or whose
    expression cannot be evaluated, gets the defaults (Nutch's leak, docs/nutch-differences.md
    D92, is not copied)."""
    plan = HostPlan()
    for datum in datums:
        host = datum['host']
        why = skip_reason(datum, rules, now)
        if why:
            plan.skip[host] = why
            continue
        if rules.max_count is None and rules.fetch_delay is None:
            continue
        env = expression_env(datum, now)
        undefined = False
        if rules.max_count is not None:
            value = rules.max_count.number(env)
            if value is None:
                undefined = True
            else:
                plan.max_count[host] = int(round(value))
        if rules.fetch_delay is not None:
            value = rules.fetch_delay.number(env)
            if value is None:
                undefined = True
            elif value >= 0:
                plan.delay_ms[host] = int(round(value))
        plan.undefined += undefined
    return plan
