"""The fetch journal (transforms/fetcher/journal/): results written as they complete and read back
after a kill, the URLs done, queue times, and publishing (every URL's records once)."""

import glob
import os

import pytest

from beamcrawl.transforms.fetcher.journal.paths import SOURCE_KEY, new_run_id, tolerant_records
from beamcrawl.transforms.fetcher.journal.publishing import publish_attempts, publish_journals
from beamcrawl.transforms.fetcher.journal.queuetimes import queue_times_of, run_queue_times
from beamcrawl.transforms.fetcher.journal.reading import read_journals
from beamcrawl.transforms.fetcher.journal.writing import JournalWriter, commit_run
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.records import content, crawl_datum
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH

pytestmark = pytest.mark.unit


def _fetched(url, source=None, status='fetch_success', end=1000, queue='a.test', delay='1.0'):
    return crawl_datum(url, status, fetch_time=5, fetch_interval=60, metadata={
        SOURCE_KEY: source or url, 'fetch.end': str(end), 'fetch.queue': queue,
        'fetch.delay': delay})


def _content(url, source=None):
    record = content(url, content_bytes=b'body of ' + url.encode(), content_type='text/html',
                     fetch_time=5, http_code=200)
    record['metadata'][SOURCE_KEY] = source or url
    return record


def _results(url, end=1000):
    """A URL's records in the journal's order: its content, then its own crawl_fetch record."""
    return [(CONTENT, _content(url)), (CRAWL_FETCH, _fetched(url, end=end))]


def test_a_done_url_has_its_own_fetch_record_and_everything_before_it(tmp_path):
    journal = str(tmp_path / 'journal')
    writer = JournalWriter(journal, 'r1')
    writer.write(_results('http://a.test/1'))
    redirect = [(CRAWL_FETCH, dict(_fetched('http://a.test/new', source='http://a.test/2'),
                                   status='linked'))]
    writer.write(redirect)              # a redirect's target, before its source's own record
    writer.close()
    state = read_journals(journal)
    assert list(state.done) == ['http://a.test/1']          # /2 is not done: no own record
    assert state.queue_times == {'a.test': 1000 / 1000.0 + 1.0}


def test_a_journal_cut_in_its_last_block_is_read_up_to_it(tmp_path):
    journal = str(tmp_path / 'journal')
    writer = JournalWriter(journal, 'r1')
    writer.write(_results('http://a.test/1'))
    writer.write(_results('http://a.test/2'))
    path = writer.path(CRAWL_FETCH)
    writer.close()
    size = os.path.getsize(path)
    with open(path, 'r+b') as f:        # a writer killed in the middle of its last block
        f.truncate(size - 20)
    assert [r['url'] for r in tolerant_records(path)] == ['http://a.test/1']
    assert list(read_journals(journal).done) == ['http://a.test/1']


def test_queue_times_are_the_end_of_the_last_request_plus_its_delay():
    records = [_fetched('http://a.test/1', end=2000), _fetched('http://a.test/2', end=1000),
               _fetched('http://b.test/', end=500, queue='b.test', delay='3.5'),
               crawl_datum('http://c.test/', 'fetch_retry', fetch_time=5, fetch_interval=60)]
    assert queue_times_of(records) == {'a.test': 3.0, 'b.test': 4.0}


def test_publishing_takes_the_committed_files_and_the_earlier_runs_done_urls(tmp_path):
    journal = str(tmp_path / 'journal')
    earlier = JournalWriter(journal, 'r0')                  # a run killed after one URL
    earlier.write(_results('http://a.test/1'))
    earlier.write([(CONTENT, _content('http://a.test/2'))])   # /2 not done in that run
    before = read_journals(journal)
    earlier.close()
    run = new_run_id()
    writer = JournalWriter(journal, run)
    writer.write(_results('http://a.test/2', end=3000))
    paths = writer.close()
    stray = JournalWriter(journal, run)                     # a bundle the runner did not commit
    stray.write(_results('http://a.test/3'))
    stray.close()
    commit_run(journal, run, paths)
    assert run_queue_times(journal, run, before.queue_times) == {'a.test': 4.0}
    out = {part: str(tmp_path / part) for part in (CRAWL_FETCH, CONTENT)}
    publish_journals(journal, run, out, before.done)
    fetched = sorted(r['url'] for p in glob.glob(f'{out[CRAWL_FETCH]}/*.avro')
                     for r in iter_records([p]))
    contents = sorted(r['url'] for p in glob.glob(f'{out[CONTENT]}/*.avro')
                      for r in iter_records([p]))
    assert fetched == contents == ['http://a.test/1', 'http://a.test/2']   # each once, no /3


def test_a_url_fetched_twice_is_published_from_its_first_complete_attempt(tmp_path):
    """A streaming job restored from a checkpoint may fetch a URL again: one attempt is kept."""
    journal = str(tmp_path / 'journal')
    for run in ('r1', 'r2'):
        writer = JournalWriter(journal, run)
        writer.write(_results('http://a.test/1', end=1000 if run == 'r1' else 9000))
        writer.close()
    state = read_journals(journal)
    out = {CRAWL_FETCH: str(tmp_path / 'fetch'), CONTENT: str(tmp_path / 'content')}
    publish_attempts(journal, out, state.done)
    (record,) = iter_records(glob.glob(f'{out[CRAWL_FETCH]}/*.avro'))
    assert record['metadata']['fetch.end'] == '1000'
    assert len(list(iter_records(glob.glob(f'{out[CONTENT]}/*.avro')))) == 1
