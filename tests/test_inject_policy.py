"""Seed line grammar and the Injector's merge table, without Beam."""

import math
import random
import re

import pytest

from beamcrawl.transforms.policy.inject import (InjectRules, SeedError, SeedLine, injected_datum,
                                                merge_injected, parse_seed_line, pick_last)
from beamcrawl.transforms.storage.records import crawl_datum

RULES = InjectRules(score_injected=1.0, interval_default=2592000, overwrite=False, update=False,
                    purge_gone=False)


@pytest.mark.parametrize('line,expected', [
    ('', None),
    ('   ', None),
    ('# comment', None),
    ('  # indented comment', None),
    ('http://a.test/', SeedLine('http://a.test/')),
    ('  http://a.test/  \n', SeedLine('http://a.test/')),
    ('http://a.test/\tscore=2.5', SeedLine('http://a.test/', score=2.5)),
    ('http://a.test/\tnutch.score=3', SeedLine('http://a.test/', score=3.0)),
    ('http://a.test/\tfetch_interval=60', SeedLine('http://a.test/', fetch_interval=60)),
    ('http://a.test/\tnutch.fetchInterval=60', SeedLine('http://a.test/', fetch_interval=60)),
    ('http://a.test/\tfixed_interval=true', SeedLine('http://a.test/', fixed=True)),
    ('http://a.test/\tfixed_interval=false', SeedLine('http://a.test/')),
    ('http://a.test/\tnutch.fetchInterval.fixed=90',
     SeedLine('http://a.test/', fetch_interval=90, fixed=True)),
    ('http://a.test/\tnutch.fetchInterval.fixed=-1', SeedLine('http://a.test/')),
    ('http://a.test/\tk=v=w\tnoequals\tz=', SeedLine('http://a.test/',
                                                     metadata=(('k', 'v=w'), ('z', '')))),
    ('http://a.test/\tscore=abc', SeedLine('http://a.test/',
                                           problems=("score='abc' is not valid; ignored",))),
    ('http://a.test/\tfetch_interval=-5',
     SeedLine('http://a.test/', problems=("fetch_interval='-5' is not valid; ignored",))),
    ('http://a.test/\tmodified_time=1793577600000',
     SeedLine('http://a.test/', modified_time=1793577600000)),
    ('http://a.test/\tmodified_time=yesterday',
     SeedLine('http://a.test/', problems=("modified_time='yesterday' is not valid; ignored",))),
    ('http://a.test/\tmodified_time=-1',
     SeedLine('http://a.test/', problems=("modified_time='-1' is not valid; ignored",))),
])
def test_parse_seed_line(line, expected):
    assert parse_seed_line(line) == expected


@pytest.mark.parametrize('line', ['\tscore=1', 'http://a.test/ score=2', 'http://a.test/  k=v'])
def test_malformed_seed_lines(line):
    with pytest.raises(SeedError):
        parse_seed_line(line)


def _plain_parse(line):
    """The grammar written plainly (the first version of parse_seed_line): the oracle."""
    if not line.strip() or line.strip().startswith('#'):
        return None
    url, _, meta_text = line.rstrip('\r\n').partition('\t')
    url = url.strip()
    if not url:
        raise SeedError('no URL before the first TAB')
    if re.search(r'\s', url) and re.search(r'\s+\S+=\S*', url):
        raise SeedError(f'metadata must be separated by TAB, not spaces: {url!r}')
    score = interval = modified = fixed_interval = None
    fixed = False
    metadata, problems = {}, []
    for token in meta_text.strip().split('\t') if meta_text.strip() else ():
        name, sep, value = token.strip().partition('=')
        if not sep or not name:
            continue
        try:
            if name in ('score', 'nutch.score'):
                number = float(value)
                if not math.isfinite(number) or abs(number) > 3.4e38:
                    raise ValueError(value)
                score = number
            elif name in ('fetch_interval', 'nutch.fetchInterval'):
                if not 0 <= int(value) <= 2 ** 31 - 1:
                    raise ValueError(value)
                interval = int(value)
            elif name == 'fixed_interval':
                if value.lower() not in ('true', 'yes', '1', 'false', 'no', '0'):
                    raise ValueError(value)
                fixed = value.lower() in ('true', 'yes', '1')
            elif name == 'modified_time':
                if not 0 <= int(value) < 2 ** 63:
                    raise ValueError(value)
                modified = int(value)
            elif name == 'nutch.fetchInterval.fixed':
                if int(value) > -1:
                    if not 0 <= int(value) <= 2 ** 31 - 1:
                        raise ValueError(value)
                    fixed_interval = int(value)
            else:
                metadata[name] = value
        except ValueError:
            problems.append(f'{name}={value!r} is not valid; ignored')
    if fixed_interval is not None:
        interval, fixed = fixed_interval, True
    return SeedLine(url=url, score=score, fetch_interval=interval, fixed=fixed,
                    modified_time=modified, metadata=tuple(sorted(metadata.items())),
                    problems=tuple(problems))


def _outcome(parse, line):
    try:
        return parse(line)
    except SeedError as e:
        return 'SeedError', str(e)


def test_seed_lines_parsed_as_the_plain_grammar_says():
    """parse_seed_line against the grammar written plainly, on random lines of URLs,
    whitespace of every kind and tokens valid and not."""
    rnd = random.Random(29)
    urls = ['http://a.test/', 'http://a.test/p q', 'http://a.test/ k=v', 'u', '#x', '', ' ',
            'http://a.test/\u3000k=v', 'http://a.test/\x1ck=', 'a\u00a0b', 'http://a.test/#f']
    tokens = ['score=2.5', 'nutch.score=0.779434978', 'score=nan', 'score=1e39', 'score= 3 ',
              'nutch.fetchInterval=2592000', 'fetch_interval=-5', 'fetch_interval=1_0',
              'fixed_interval=TRUE', 'fixed_interval=maybe', 'modified_time=42',
              'modified_time=-1', 'nutch.fetchInterval.fixed=7200',
              'nutch.fetchInterval.fixed=-1', 'nutch.fetchInterval.fixed=x', 'k=v=w', 'z=',
              '=x', 'noeq', ' topic = news ', 'b=2', 'a=1', 'b=3', '']
    spaces = ['', ' ', '\t', '\r', '\n', '\r\n', '\x0b', '\x0c', '\u2028', '  ']
    lines = []
    for _ in range(20000):
        line = rnd.choice(spaces) + rnd.choice(urls)
        for _ in range(rnd.randrange(4)):
            line += rnd.choice(['\t', '\t', ' ', '\t\t']) + rnd.choice(tokens)
        lines.append(line + rnd.choice(spaces))
    for line in lines:
        assert _outcome(parse_seed_line, line) == _outcome(_plain_parse, line), repr(line)


def test_injected_datum_defaults_and_fixed_interval():
    d = injected_datum('http://a.test/', parse_seed_line('http://a.test/'), RULES, now=1000)
    assert (d['status'], d['fetch_time'], d['fetch_interval'], d['score']) == \
        ('db_unfetched', 1000, 2592000, 1.0)
    d = injected_datum('u', parse_seed_line('u\tfetch_interval=60\tfixed_interval=true\ta=b'),
                       RULES, now=0)
    assert d['fetch_interval'] == 60 and d['metadata'] == {'a': 'b', 'fixedInterval': '60.0'}
    d = injected_datum('u', parse_seed_line('u\tmodified_time=42'), RULES, now=0)
    assert d['modified_time'] == 42 and d['metadata'] == {}


def _old(**kw):
    base = dict(fetch_time=5, fetch_interval=100, score=0.5, retries=1, signature=b'sig',
                metadata={'old': '1', 'k': 'old'})
    base.update(kw)
    return crawl_datum('u', kw.pop('status', 'db_fetched'), **{k: v for k, v in base.items()
                                                                  if k != 'status'})


def _seed(**kw):
    return crawl_datum('u', 'db_unfetched', **{**dict(fetch_time=9, fetch_interval=2592000,
                                                      score=1.0, metadata={'k': 'new'}), **kw})


def _rules(**kw):
    return InjectRules(**{**RULES.__dict__, **kw})


def test_injected_datum_is_crawl_datums_record():
    """injected_datum writes crawl_datum's record out: the same dict, key order and types,
    for the seeds of random lines."""
    rnd = random.Random(7)
    tokens = ['score=2.5', 'score=3', 'nutch.fetchInterval=60', 'fixed_interval=true',
              'modified_time=42', 'nutch.fetchInterval.fixed=90', 'a=b', 'z=y', 'score=x']
    for rules in (RULES, InjectRules(score_injected=2, interval_default=7, overwrite=False,
                                     update=False, purge_gone=False)):
        for _ in range(2000):
            seed = parse_seed_line('\t'.join(['http://a.test/'] + rnd.sample(tokens, 3)))
            interval = seed.fetch_interval if seed.fetch_interval is not None \
                else rules.interval_default
            metadata = dict(seed.metadata)
            if seed.fixed:
                metadata['fixedInterval'] = str(float(interval))
            expected = crawl_datum('http://a.test/', 'db_unfetched', fetch_time=5,
                                   fetch_interval=interval, metadata=metadata,
                                   score=seed.score if seed.score is not None
                                   else rules.score_injected,
                                   modified_time=seed.modified_time or 0)
            got = injected_datum('http://a.test/', seed, rules, now=5)
            assert list(got.items()) == list(expected.items())
            assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_merge_table():
    old, seed = _old(), _seed()
    assert merge_injected(seed, None, RULES) == (seed, 'new')
    assert merge_injected(None, old, RULES) == (old, 'kept')
    assert merge_injected(seed, old, RULES) == (old, 'already_known')
    assert merge_injected(seed, old, _rules(overwrite=True)) == (seed, 'merged')
    assert merge_injected(seed, old, _rules(overwrite=True, update=True)) == (seed, 'merged')


def test_merge_update_keeps_state_and_takes_non_default_values():
    old = _old()
    merged, outcome = merge_injected(_seed(), old, _rules(update=True))
    assert outcome == 'merged'
    assert merged['metadata'] == {'old': '1', 'k': 'new'}
    assert (merged['score'], merged['fetch_interval']) == (0.5, 100)    # seed had defaults
    assert (merged['status'], merged['fetch_time'], merged['retries'], merged['signature']) == \
        ('db_fetched', 5, 1, b'sig')
    merged, _ = merge_injected(_seed(score=7.0, fetch_interval=60), old, _rules(update=True))
    assert (merged['score'], merged['fetch_interval']) == (7.0, 60)
    assert merged['modified_time'] == old['modified_time']              # the seed had none
    merged, _ = merge_injected(_seed(modified_time=42), old, _rules(update=True))
    assert merged['modified_time'] == 42


def test_purge_gone():
    gone = _old(status='db_gone')
    assert merge_injected(None, gone, _rules(purge_gone=True)) == (None, 'purged')
    seed = _seed()
    assert merge_injected(seed, gone, _rules(purge_gone=True)) == (seed, 'new')
    assert merge_injected(None, gone, RULES) == (gone, 'kept')


def test_last_seed_wins_deterministically():
    seeds = [((0, 5), 'b'), ((1, 1), 'c'), ((0, 9), 'a')]
    assert pick_last(seeds) == 'c'
    assert pick_last(list(reversed(seeds))) == 'c'
