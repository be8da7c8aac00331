"""fetch: FetchSegment on TestPipeline, and the command end to end."""

import glob
import os

from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.pipelines.cli import main
from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.fetch import FetchSegment
from beamcrawl.transforms.fetcher.journal import publishing, queuetimes, reading
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.storage.segments import CONTENT, CRAWL_FETCH
from tests.conftest import read_parts, run_cli, write_seeds

NOW = '2026-11-22T00:00:00Z'


def _agent(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0.1',
            '-D', 'domain.extra.suffixes=test']


def test_fetch_segment_transform_journals_every_result(web, runner, tmp_path):
    cfg = load_config(overrides={'http.agent.name': 'testbot', 'http.proxy.host': '127.0.0.1',
                                 'http.proxy.port': web.port, 'fetcher.server.delay': 0.0})
    fetch = settings.fetcher_settings(cfg)
    records = [crawl_datum(u, 'db_unfetched', fetch_time=0, fetch_interval=60)
               for u in ('http://www.a.test/', 'http://b.test/', 'http://b.test/gone',
                         'http://b.test/skipped')]
    journal_dir = str(tmp_path / 'journal')
    fetch_lists = [str(tmp_path / f'part-0000{i}.avro') for i in range(2)]   # two fetch slots
    write_avro_file(fetch_lists[0], CRAWL_DATUM_SCHEMA, records[:2])
    write_avro_file(fetch_lists[1], CRAWL_DATUM_SCHEMA, records[2:])
    with TestPipeline(runner=runner) as p:
        out = p | FetchSegment(
            generate_files=fetch_lists, settings=fetch,
            http=settings.http_settings(cfg, fetch.threads), policy=settings.url_policy(cfg),
            now=5, journal_dir=journal_dir, run_id='r1',
            done=frozenset({'http://b.test/skipped'}))
        assert_that(out, equal_to([f'{journal_dir}/run-r1.committed']))
    state = reading.read_journals(journal_dir)
    assert {u: (r['status'], r['fetch_time']) for u, r in state.done.items()} == {
        'http://www.a.test/': ('fetch_success', 5), 'http://b.test/': ('fetch_success', 5),
        'http://b.test/gone': ('fetch_gone', 5)}
    assert not [r for r in web.log if r.path == '/skipped']          # done before: skipped
    # each writer noted its queue times: the same as read from the journals
    assert state.queue_times and set(state.queue_times) == {'www.a.test', 'b.test'}
    assert queuetimes.run_queue_times(journal_dir, 'r1', {}) == state.queue_times
    assert queuetimes.run_queue_times(journal_dir, 'r1', {'b.test': 1e12, 'c.test': 1.0}) == \
        dict(state.queue_times, **{'b.test': 1e12, 'c.test': 1.0})
    for path in glob.glob(f'{journal_dir}/run-r1/*.queues.json'):   # a writer cut short
        os.remove(path)
    assert queuetimes.run_queue_times(journal_dir, 'r1', {}) == state.queue_times
    parts = {part: str(tmp_path / part) for part in (CRAWL_FETCH, CONTENT)}
    publishing.publish_journals(journal_dir, 'r1', parts, {})
    contents = read_parts(glob.glob(f'{parts[CONTENT]}/*.avro'))
    assert sorted(r['url'] for r in contents) == ['http://b.test/', 'http://www.a.test/']
    assert len(read_parts(glob.glob(f'{parts[CRAWL_FETCH]}/*.avro'))) == 3


def test_fetch_command_end_to_end(web, tmp_path, capsys):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://www.a.test/', 'http://www.a.test/page1.html',
                                             'http://www.a.test/private/x', 'http://b.test/',
                                             'http://b.test/old', 'http://b.test/error'])
    agent = _agent(web)
    assert main(['inject', crawl, seeds, '--now', NOW, *agent]) == 0
    assert main(['generate', crawl, '--num-fetchers', '2', '--now', NOW, *agent]) == 0
    segment = capsys.readouterr().out.split()[-1]
    assert main(['fetch', crawl, '--now', NOW, *agent]) == 0
    out = capsys.readouterr().out
    assert 'fetch_success' in out
    fetched = read_parts(glob.glob(f'{segment}/crawl_fetch/*.avro'))
    status = {r['url']: r['status'] for r in fetched if r['status'] != 'linked'}
    assert status == {'http://www.a.test/': 'fetch_success',
                      'http://www.a.test/page1.html': 'fetch_success',
                      'http://www.a.test/private/x': 'fetch_gone',
                      'http://b.test/': 'fetch_success', 'http://b.test/old': 'fetch_redir_perm',
                      'http://b.test/error': 'fetch_retry'}
    assert [r['url'] for r in fetched if r['status'] == 'linked'] == ['http://b.test/']
    contents = read_parts(glob.glob(f'{segment}/content/*.avro'))
    assert {r['url'] for r in contents} == {'http://www.a.test/', 'http://www.a.test/page1.html',
                                            'http://b.test/', 'http://b.test/old'}
    assert not [n for n in os.listdir(segment) if n.startswith('.tmp')]
    # the segment is now fetched: fetching it again is refused
    proc = run_cli('fetch', crawl, os.path.basename(segment), *agent, check=False)
    assert proc.returncode == 2 and 'already has crawl_fetch' in proc.stderr
    proc = run_cli('fetch', crawl, *agent, check=False)
    assert proc.returncode == 2 and 'no segment with crawl_generate and without crawl_fetch' \
        in proc.stderr


def test_fetch_refuses_without_agent_name(tmp_path):
    proc = run_cli('fetch', str(tmp_path), check=False)
    assert proc.returncode == 2 and 'http.agent.name is empty' in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _coders(pipeline):
    """{PCollection name: its coder, spelled out} of a pipeline."""
    import re
    proto = pipeline.to_runner_api()
    coders = proto.components.coders

    def spell(coder_id):
        coder = coders[coder_id]
        return (coder.spec.urn, coder.spec.payload,
                tuple(spell(c) for c in coder.component_coder_ids))

    return {re.sub(r'^[0-9]+', '', pc.unique_name): spell(pc.coder_id)
            for pc in proto.components.pcollections.values()}


def test_the_fetch_pipeline_is_built_without_type_inference_and_its_data_coders_stay(
        tmp_path, cfg):
    """On the local runner the fetch's pipeline skips Beam's type inference
    (BatchFetch.pipeline_args). The records are read and keyed in one step, then grouped and
    fetched: the keyed, grouped and fetched PCollections keep the coders they have with the
    inference; only the few paths (of the fetch list, of the journals) lose their string
    coders."""
    from apache_beam.options.pipeline_options import TypeOptions

    from beamcrawl.transforms.fetch import BatchFetch
    from beamcrawl.transforms.runners.runtime import make_pipeline
    mode = BatchFetch()
    assert mode.pipeline_args(['--x=1']) == ['--x=1', '--no_pipeline_type_check']
    for given in (['--runner', 'FlinkRunner'], ['--runner=FlinkRunner'],
                  ['--no_pipeline_type_check'], ['--runtime_type_check']):
        assert mode.pipeline_args(given) == given       # a cluster, or the user's own choice
    fetch = settings.fetcher_settings(cfg)
    fetch_list = str(tmp_path / 'part-00000.avro')
    write_avro_file(fetch_list, CRAWL_DATUM_SCHEMA,
                    [crawl_datum('http://a.test/', 'db_unfetched', fetch_time=0,
                                 fetch_interval=60)])
    coders = {}
    for args in ([], mode.pipeline_args([])):
        p = make_pipeline(args, cfg)
        _ = p | 'Fetch' >> FetchSegment(
            generate_files=[fetch_list], settings=fetch,
            http=settings.http_settings(cfg, fetch.threads), policy=settings.url_policy(cfg),
            now=5, journal_dir=str(tmp_path / 'journal'), run_id='r1')
        coders[p.options.view_as(TypeOptions).pipeline_type_check] = _coders(p)
    inferred, generic = coders[True], coders[False]
    assert set(inferred) == set(generic)
    data = ('Fetch/KeyBySlot/QueueOf.None', 'Fetch/GroupSlots.None', 'Fetch/Fetch.None')
    assert all(inferred[name] == generic[name] for name in data)
    changed = {name for name in inferred if inferred[name] != generic[name]}
    assert changed and all(name.startswith(('Fetch/ReadFetchList/', 'Fetch/Journals/',
                                            'Fetch/Commit')) for name in changed)
