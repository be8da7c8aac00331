"""The per-URL merge (Nutch's CrawlDbReducer) without Beam: the TestCrawlDbStates matrix for every
schedule
class and 0/1/2 inlinks, then retries, signatures, forceRefetch, notfetching, scores."""

import pytest

from beamcrawl.transforms.policy.schedule import (AdaptiveFetchSchedule, DefaultFetchSchedule,
                                                  MimeAdaptiveFetchSchedule)
from beamcrawl.transforms.policy.scoring import OpicScoring
from beamcrawl.transforms.policy.updatedb import UpdateRules, merge_links_only, merge_url, top_links
from beamcrawl.transforms.storage.records import crawl_datum

URL = 'http://www.a.test/page'
DAY = 86400000
NOW = 100 * DAY
BASE = dict(default_interval=2592000, max_interval=7776000)
ADAPTIVE = dict(BASE, inc_rate=0.4, dec_rate=0.2, min_interval_s=60, max_interval_s=31536000,
                sync_delta=True, sync_delta_rate=0.3)
SCHEDULES = {
    'default': DefaultFetchSchedule(**BASE),
    'adaptive': AdaptiveFetchSchedule(**ADAPTIVE),
    'mime-adaptive': MimeAdaptiveFetchSchedule(mime_rates={'text/html': (0.2, 0.2)}, **ADAPTIVE),
}


def rules(schedule='default', **kw):
    args = dict(schedule=SCHEDULES[schedule], scoring=OpicScoring(), retry_max=3,
                max_interval=7776000, additions_allowed=True, max_inlinks=10000)
    args.update(kw)
    return UpdateRules(**args)


def old(status, **kw):
    args = dict(fetch_time=NOW - 10 * DAY, fetch_interval=2592000, score=1.0,
                metadata={'_ngt_': str(NOW - DAY), 'k': 'old'})
    args.update(kw)
    return crawl_datum(URL, status, **args)


def fetch(status, **kw):
    args = dict(fetch_time=NOW, fetch_interval=2592000, score=1.0,
                metadata={'_ngt_': str(NOW - DAY), '_pst_': 'x'}, protocol_status='success')
    args.update(kw)
    return crawl_datum(URL, status, **args)


def link(score=0.1, **kw):
    return crawl_datum(URL, 'linked', fetch_time=NOW - DAY, fetch_interval=2592000, score=score,
                       **kw)


OLD_STATUSES = [None, 'db_unfetched', 'db_fetched', 'db_gone', 'db_redir_temp', 'db_redir_perm',
                'db_notmodified', 'db_duplicate', 'db_orphan']
FETCH_RESULTS = {'fetch_success': 'db_fetched', 'fetch_gone': 'db_gone',
                 'fetch_redir_temp': 'db_redir_temp', 'fetch_redir_perm': 'db_redir_perm',
                 'fetch_notmodified': 'db_notmodified', 'fetch_retry': 'db_unfetched'}


@pytest.mark.parametrize('schedule', sorted(SCHEDULES))
@pytest.mark.parametrize('old_status', OLD_STATUSES)
@pytest.mark.parametrize('inlinks', [0, 1, 2])
def test_state_matrix(schedule, old_status, inlinks):
    olds = [old(old_status)] if old_status else []
    links = [link() for _ in range(inlinks)]
    # only inlinks: a new URL becomes db_unfetched, a known one keeps its status
    result, outcome = merge_url(olds, [], links, [], NOW, rules(schedule))
    if inlinks == 0:
        assert result == (olds[0] if olds else None)
    else:
        assert result['status'] == (old_status or 'db_unfetched')
        assert '_ngt_' not in result['metadata']
        expected = (1.0 if olds else 0.0) + 0.1 * inlinks
        assert result['score'] == pytest.approx(expected)
    for fetch_status, expected_status in FETCH_RESULTS.items():
        result, _ = merge_url(olds, [fetch(fetch_status)], links, [], NOW, rules(schedule))
        assert result['status'] == expected_status, (old_status, fetch_status)
        assert '_ngt_' not in result['metadata'] and result['protocol_status'] is None
        assert result['score'] == pytest.approx(1.0 + 0.1 * inlinks)


def test_new_url_from_links_is_initialized():
    result, outcome = merge_url([], [], [link(0.5, metadata={'_repr_': 'r'}), link(0.25)], [],
                                NOW, rules())
    assert outcome == 'added'
    assert (result['status'], result['fetch_time'], result['fetch_interval'], result['retries'],
            result['score']) == ('db_unfetched', NOW, 2592000, 0, 0.75)
    assert result['metadata'] == {'_repr_': 'r'}           # the top link's


def test_additions_off_and_dropped():
    assert merge_url([], [fetch('fetch_success')], [link()], [], NOW,
                     rules(additions_allowed=False)) == (None, 'not_added')
    assert merge_url([], [], [], [], NOW, rules()) == (None, 'dropped')


def test_retries_then_gone():
    record = old('db_fetched', retries=0)
    for expected_retries, expected in ((1, 'db_unfetched'), (2, 'db_unfetched'), (3, 'db_gone'),
                                       (4, 'db_gone')):
        f = fetch('fetch_retry', retries=record['retries'], protocol_status='exception')
        record, _ = merge_url([record], [f], [], [], NOW, rules())
        assert (record['retries'], record['status']) == (expected_retries, expected)
    assert record['fetch_interval'] > 2592000                 # the gone schedule grows it
    ok, _ = merge_url([record], [fetch('fetch_success', retries=4)], [], [], NOW, rules())
    assert ok['retries'] == 0 and ok['status'] == 'db_fetched'


def test_signatures_decide_notmodified():
    known = old('db_fetched', signature=b'A', modified_time=NOW - 20 * DAY)
    same, _ = merge_url([known], [fetch('fetch_success')], [], [
        crawl_datum(URL, 'signature', fetch_time=NOW, fetch_interval=0, signature=b'A')], NOW,
        rules())
    assert same['status'] == 'db_notmodified' and same['modified_time'] == NOW - 20 * DAY
    changed, _ = merge_url([known], [fetch('fetch_success')], [], [
        crawl_datum(URL, 'signature', fetch_time=NOW, fetch_interval=0, signature=b'B')], NOW,
        rules())
    assert changed['status'] == 'db_fetched' and changed['signature'] == b'B'
    assert changed['modified_time'] == NOW
    # no signature from parse (D20): re-downloaded means fetched, not notmodified
    unknown, _ = merge_url([known], [fetch('fetch_success')], [], [], NOW, rules())
    assert unknown['status'] == 'db_fetched'


def test_http_304_keeps_old_signature_and_modified_time():
    known = old('db_fetched', signature=b'A', modified_time=NOW - 20 * DAY)
    result, _ = merge_url([known], [fetch('fetch_notmodified')], [], [], NOW, rules('adaptive'))
    assert result['status'] == 'db_notmodified' and result['signature'] == b'A'
    assert result['modified_time'] == NOW - 20 * DAY


def test_redirect_keeps_old_signature():
    known = old('db_fetched', signature=b'A')
    result, _ = merge_url([known], [fetch('fetch_redir_perm')], [], [], NOW, rules())
    assert result['status'] == 'db_redir_perm' and result['signature'] == b'A'


def test_force_refetch_when_interval_too_long():
    known = old('db_fetched', fetch_interval=9000000, signature=b'A')
    result, _ = merge_url([known], [fetch('fetch_success', fetch_interval=9000000)], [], [], NOW,
                          rules())
    assert (result['status'], result['signature'], result['fetch_interval']) == \
        ('db_unfetched', None, 6998400)


def test_notfetching_leaves_the_record_but_makes_it_due():
    known = old('db_fetched', retries=1, signature=b'A')
    f = fetch('fetch_retry', protocol_status='notfetching', retries=1)
    result, outcome = merge_url([known], [f], [link(0.2)], [], NOW, rules())
    assert outcome == 'notfetching'
    expected = dict(known, score=1.2, metadata={'k': 'old'})
    assert result == expected


def test_newest_fetch_wins_and_metadata_merges():
    older = fetch('fetch_gone', fetch_time=NOW - DAY)
    newer = fetch('fetch_success', metadata={'k': 'new', '_ngt_': '1'})
    result, _ = merge_url([old('db_fetched')], [older, newer], [], [], NOW, rules())
    assert result['status'] == 'db_fetched' and result['metadata'] == {'k': 'new'}


def test_inlink_cap_keeps_the_highest():
    links = [link(s) for s in (0.1, 0.9, 0.5, 0.3)]
    assert [l['score'] for l in top_links(links, 2)] == [0.9, 0.5]
    result, _ = merge_url([], [], links, [], NOW, rules(max_inlinks=2))
    assert result['score'] == pytest.approx(1.4)


def test_opic_worked_example():
    """Seed A (1.0) links to B, C and A#frag (→ A): each gets 1/3; A ends at 4/3."""
    scoring = OpicScoring()
    shares = scoring.distribute('http://a.test/', 1.0,
                                ['http://b.test/', 'http://c.test/', 'http://a.test/'], 3)
    assert shares == pytest.approx([1 / 3] * 3)
    a, _ = merge_url([old('db_fetched', score=1.0)], [fetch('fetch_success')],
                     [link(shares[2])], [], NOW, rules())
    assert a['score'] == pytest.approx(4 / 3)
    assert OpicScoring(link_internal=0.5).distribute('http://a.test/x', 1.0,
                                                     ['http://a.test/y', 'http://b.test/'], 2) \
        == [0.25, 0.5]
    assert OpicScoring(count_filtered=True).distribute('http://a/', 1.0, ['http://b/'], 4) == \
        [0.25]


def _sig(value):
    return crawl_datum(URL, 'signature', fetch_time=NOW, fetch_interval=0, signature=value)


@pytest.mark.parametrize('links, signatures, bound', [
    ([], [_sig(b'a')], 10000),
    ([link(0.25)], [], 10000),
    ([link(0.25), link(0.5), link(0.125, metadata={'a': 'b'})], [], 10000),
    ([link(0.25), link(0.5), link(0.125)], [], 2),
    ([link(0.25), link(0.5)], [], 0),
    ([link(0.25), link(0.5)], [_sig(b'a'), _sig(b'b')], 1),
    ([link(0.25, protocol_status='notfetching'), link(0.125)], [], 10000),
    ([link(0.125), link(0.25, protocol_status='notfetching')], [], 1),
])
@pytest.mark.parametrize('old_status', OLD_STATUSES[1:])
def test_merge_links_only_is_merge_url_with_no_fetch(links, signatures, bound, old_status):
    """What updatedb patches into a record's bytes (its score) is all merge_url changes, but
    for the generate marker, which the reducer's fast path never meets (docs/performance.md)."""
    r = rules(max_inlinks=bound)
    record = old(old_status, metadata={}, score=0.75)
    expected, outcome = merge_url([record], [], links, signatures, NOW, r)
    score, fast_outcome = merge_links_only(record['score'], links, r)
    assert (dict(record, score=score), fast_outcome) == (expected, outcome)
