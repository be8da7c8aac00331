"""Crawls whose crawl directory is on HDFS or on an S3-compatible store, for real (issue 28,
docs/crawl-dir.md "Stores"): the 2-round demo equal to the same demo on a local disk, on the
local runner and on a Flink cluster of 2 TaskManagers whose workers have a private /tmp and
working directory; updatedb and generate killed in the middle of their installs; a second
driver refused by a lock held on the store."""

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.crawl_diff import crawl_differences
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.storage.segments import CRAWL_FETCH
from tests.conftest import ROOT, cli_env, kill_when, run_cli, write_seeds
from tests.stores import STORE_TESTS, Store, free_port_pairs, hdfs_store, s3_store  # noqa: F401

pytestmark = [*STORE_TESTS, pytest.mark.slow, pytest.mark.timeout(1800)]

NOW = '2026-11-22T00:00:00Z'
NOW_MS = 1795305600000


@pytest.fixture(params=['hdfs', 's3'])
def remote(request):
    """A fresh crawl directory on HDFS, then on S3 (and the Beam options that reach it)."""
    name = uuid.uuid4().hex[:10]
    if request.param == 'hdfs':
        found = Store('hdfs', f'hdfs://tests/{name}', request.getfixturevalue('hdfs_store'))
    else:
        found = Store('s3', f's3://crawl/tests/{name}', request.getfixturevalue('s3_store'))
    found.use()
    return found


def _stats(stdout: str) -> str:
    """The readdb --stats lines a demo prints."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('TOTAL urls'))
    end = next(i for i, line in enumerate(lines) if line.startswith('$ beamcrawl search'))
    return '\n'.join(lines[start:end]).strip()


def _demo(crawl_dir, *options):
    proc = run_cli('demo', crawl_dir, '--rounds', '2', '--now', NOW, *options, timeout=1500)
    assert 'Traceback' not in proc.stderr, proc.stderr
    return _stats(proc.stdout), proc.stdout


@pytest.fixture(scope='module')
def local_demo(tmp_path_factory):
    """The demo on a local disk: (its crawl directory, its readdb --stats)."""
    crawl = str(tmp_path_factory.mktemp('local-demo') / 'crawl')
    stats, _ = _demo(crawl)
    return crawl, stats


def test_the_demo_on_hdfs_and_s3_equals_the_demo_on_a_local_disk(remote, local_demo):
    stats, out = _demo(remote.root, *remote.options)
    assert stats == local_demo[1]
    assert 'products' in out                                   # the search found the index
    assert crawl_differences(remote.root, local_demo[0]) == []   # crawldb and linkdb
    crawl = CrawlLayout(remote.root)
    assert len(crawl.segment_names()) == 2 and crawl.linkdb.part_files()
    if remote.name == 's3':                                    # versions named by CURRENT
        assert not fs.exists(crawl.crawldb.current)
        assert fs.exists(crawl.crawldb.pointer)


# -- kills ------------------------------------------------------------------------------------

def _crawl_with_a_fetched_segment(remote, tmp_path, urls=400):
    """A crawl directory on the store: `urls` injected URLs, a segment with crawl_fetch records
    of every other one. Returns the segment's name."""
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://h{i % 7}.test/p{i}'
                                                 for i in range(urls)])
    run_cli('inject', remote.root, seeds, '--now', NOW, *remote.options)
    crawl = CrawlLayout(remote.root)
    segment = '20261122000000'
    with crawl.segment_update(segment, [CRAWL_FETCH], 'test') as update:
        write_avro_file(fs.part_file(update.tmp[CRAWL_FETCH], 0), CRAWL_DATUM_SCHEMA, [
            crawl_datum(f'http://h{i % 7}.test/p{i}', 'fetch_success', fetch_time=NOW_MS,
                        fetch_interval=86400, protocol_status='success')
            for i in range(0, urls, 2)])
    return segment


def _db(remote):
    return {r['url']: r['status'] for r in iter_records(CrawlLayout(remote.root).crawldb
                                                          .part_files())}


def _held(command, remote, point, tmp_path, *args):
    """`command` on the crawl directory, started and SIGKILLed where it holds at `point` (its
    BEAMCRAWL_HOLD_AT: observed, whatever the machine's speed)."""
    hold = str(tmp_path / f'held-{uuid.uuid4().hex[:6]}')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'beamcrawl.pipelines.cli', command, remote.root, *args,
         '--now', NOW, *remote.options], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=cli_env({'BEAMCRAWL_HOLD_AT': point, 'BEAMCRAWL_HOLD_FILE': hold}))
    return proc, hold


@pytest.mark.parametrize('point', ['install.begin', 'install.swapped'])
def test_updatedb_killed_while_installing_leaves_a_whole_crawldb(remote, tmp_path, point):
    segment = _crawl_with_a_fetched_segment(remote, tmp_path)
    before = _db(remote)
    assert set(before.values()) == {'db_unfetched'} and len(before) == 400
    proc, hold = _held('updatedb', remote, point, tmp_path)
    kill_when(proc, lambda: os.path.exists(hold), f'updatedb reached {point}')
    seen = _db(remote)                          # what a reader finds now: one whole version
    new = {u: ('db_fetched' if int(u.rsplit('p', 1)[1]) % 2 == 0 else 'db_unfetched')
           for u in before}
    assert seen in (before, new)
    if point == 'install.begin' or remote.name == 'hdfs':
        assert seen == before                   # HDFS: current/ moved aside, old/ is read
    else:
        assert seen == new                      # S3: CURRENT replaced in one step
    # The segment named: on S3 the killed run's install is complete, and applying it again
    # (the same statuses) is the next update, which removes what the killed run left.
    rerun = run_cli('updatedb', remote.root, segment, '--now', NOW, *remote.options)
    assert 'taking over the lock left by a run that no longer runs' in rerun.stderr
    assert _db(remote) == new
    crawl = CrawlLayout(remote.root)
    leftovers = [n for n in fs.entries(crawl.crawldb.path)
                 if n.startswith(('.tmp-', 'version-')) and
                 fs.join(crawl.crawldb.path, n) not in crawl.crawldb.version_dirs()]
    assert leftovers == []                      # the killed run's version is gone


@pytest.mark.parametrize('point', ['install.pending', 'install.renamed'])
def test_generate_killed_while_publishing_is_completed_by_the_next_run(remote, tmp_path,
                                                                        point):
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://h{i % 5}.test/p{i}'
                                                 for i in range(100)])
    run_cli('inject', remote.root, seeds, '--now', NOW, *remote.options)
    crawl = CrawlLayout(remote.root)
    args = ('--top-n', '30', '-D', 'generate.update.crawldb=true')
    proc, hold = _held('generate', remote, point, tmp_path, *args)
    kill_when(proc, lambda: os.path.exists(hold), f'generate reached {point}')
    published = [s for s in crawl.segment_names() if crawl.has_part(s, 'crawl_generate')]
    assert len(published) == (1 if point == 'install.renamed' else 0)
    rerun = run_cli('generate', remote.root, *args, '--now', NOW, *remote.options)
    assert 'completing the install that a killed run began' in rerun.stderr
    segments = [s for s in crawl.segment_names() if crawl.has_part(s, 'crawl_generate')]
    first, second = ({r['url'] for r in iter_records(crawl.part_files(s, 'crawl_generate'))}
                     for s in segments)
    assert len(first) == len(second) == 30 and not first & second
    db = {r['url']: r for r in iter_records(crawl.crawldb.part_files())}
    assert all(db[u]['metadata'].get('_ngt_') == str(NOW_MS) for u in first | second)
    assert not fs.exists(crawl.crawldb.pending)


def test_the_local_runners_worker_processes_reach_the_store(remote, tmp_path):
    """A stage big enough for worker processes (runner.local.parallel.records lowered to 1
    here) runs them with the pipeline's options: they read and write the crawl directory on
    the store as the driver does."""
    workers = ('-D', 'runner.local.parallel.records=1', '-D', 'runner.local.workers=2')
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://h{i % 9}.test/p{i}'
                                                 for i in range(300)])
    proc = run_cli('inject', remote.root, seeds, '--now', NOW, *workers, *remote.options)
    assert 'local runner: 2 worker processes' in proc.stderr
    generated = run_cli('generate', remote.root, '--top-n', '100', '--now', NOW, *workers,
                        *remote.options)
    assert 'Traceback' not in generated.stderr
    assert set(_db(remote).values()) == {'db_unfetched'} and len(_db(remote)) == 300
    crawl = CrawlLayout(remote.root)
    (segment,) = crawl.segment_names()
    assert len(list(iter_records(crawl.part_files(segment, 'crawl_generate')))) == 100


def test_a_compressed_seed_file_on_the_store_is_injected_by_the_workers(remote):
    """A .gz seed file on the store is read raw through the store, decompressed into a plain
    copy among the update's working files on the store, and shared between the workers; the
    copy goes with the update. A cut-short one is a one-line error that writes nothing."""
    import gzip
    workers = ('-D', 'runner.local.parallel.records=1', '-D', 'runner.local.workers=2')
    packed = gzip.compress(''.join(f'http://h{i % 9}.test/p{i}\n' for i in range(5000)).encode())
    seeds = remote.path('in', 'seeds.txt.gz')
    with fs.create(seeds) as f:
        f.write(packed)
    crawl = remote.path('crawl')
    proc = run_cli('inject', crawl, seeds, '--now', NOW, *workers, *remote.options)
    assert '5000 injected' in proc.stdout and '0 malformed' in proc.stdout, proc.stdout
    assert 'local runner: 2 worker processes' in proc.stderr
    assert len(_db(Store(remote.name, crawl, remote.options))) == 5000
    assert [p for p in fs.children(remote.path('crawl', 'crawldb'))
            if 'scratch' in p] == []
    cut = remote.path('in', 'cut.txt.gz')
    with fs.create(cut) as f:
        f.write(packed[:len(packed) // 2])
    proc = run_cli('inject', remote.path('other'), cut, '--now', NOW, *remote.options,
                   check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert 'cut.txt.gz: not a readable gzip file' in proc.stderr
    assert not fs.exists(remote.path('other', 'crawldb', 'current'))


def test_a_lock_held_on_the_store_refuses_a_second_driver(remote, tmp_path):
    _crawl_with_a_fetched_segment(remote, tmp_path, urls=50)
    proc, hold = _held('updatedb', remote, 'install.begin', tmp_path)
    try:
        while not os.path.exists(hold):         # the first driver holds the lock now
            assert proc.poll() is None, 'the first updatedb ended before its install'
            time.sleep(0.01)
        second = run_cli('updatedb', remote.root, '--now', NOW, *remote.options, check=False)
        assert second.returncode == 2
        lock = fs.join(CrawlLayout(remote.root).crawldb.path, '.locked')
        assert f'lock {lock} is held: another update of the crawldb is running' in \
            second.stderr
        assert f'pid={proc.pid}' in second.stderr
    finally:
        proc.kill()
        proc.wait()


# -- a cluster of 2 TaskManagers, each on its own /tmp -------------------------------------------

@pytest.fixture(scope='module')
def two_taskmanagers(tmp_path_factory):
    """A Flink cluster of 2 TaskManagers, isolated (`flink start --taskmanagers 2 --isolate`),
    on free ports, in a home of its own that uses the build in .flink/."""
    from beamcrawl.transforms.runners.localflink import PORTS, LocalFlink
    built = LocalFlink(os.path.join(ROOT, '.flink'))
    built.prepare()
    # Under /tmp when the checkout is (CI's clone may be): an isolated TaskManager still sees
    # what is installed there (localflink._isolation_prefix), not the rest of /tmp.
    home = os.path.join(ROOT, '.flink', 'tests', uuid.uuid4().hex[:8])
    os.makedirs(home)
    for part in (built.build.build_dir, built.flink_home, built.build.downloads):
        os.symlink(part, os.path.join(home, os.path.basename(part)))
    state = os.environ.get('XDG_STATE_HOME')
    os.environ['XDG_STATE_HOME'] = str(tmp_path_factory.mktemp('state'))
    cluster = LocalFlink(home, ports=dict(zip(PORTS, free_port_pairs(len(PORTS)))),
                         taskmanagers=2, isolate=True)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(home, ignore_errors=True)
        if state is None:
            os.environ.pop('XDG_STATE_HOME', None)
        else:
            os.environ['XDG_STATE_HOME'] = state


@pytest.mark.flink
def test_the_workers_of_each_taskmanager_have_a_private_tmp(two_taskmanagers, s3_store):
    """A stage's workers see neither the driver's /tmp nor each other's: what a stage wrote to
    a local path would be lost (so none does: test below)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from beamcrawl.transforms.runners.runtime import use_filesystem_options
    options = [*two_taskmanagers.options(), *s3_store, '--parallelism', '2']
    use_filesystem_options(options)
    mark = f'/tmp/driver-{uuid.uuid4().hex}'
    open(mark, 'w').close()
    out = f's3://crawl/tests/where-{uuid.uuid4().hex[:8]}'
    try:
        with beam.Pipeline(options=PipelineOptions(options)) as p:
            _ = (p
                 | beam.Create(list(range(8)))
                 | beam.Reshuffle()
                 | beam.Map(lambda i, m=mark, o=out: fs.write_file(
                     f'{o}/part-{i}', ('%s %s %s' % (
                         os.getcwd(), int(os.path.exists(m)),
                         open(f'/tmp/w-{os.getpid()}', 'w').close() or os.getpid())).encode(),
                     replace=True)))
    finally:
        os.remove(mark)
    lines = [line.split() for path in fs.list_files(out + '/part*')
             for line in fs.read_file(path).decode().split('\n') if line]
    assert len(lines) == 8
    workdirs = {cwd for cwd, _, _ in lines}
    assert all(os.path.basename(d).startswith('taskmanager-') for d in workdirs)
    assert {seen for _, seen, _ in lines} == {'0'}           # not the driver's /tmp
    assert not any(os.path.exists(f'/tmp/w-{pid}') for _, _, pid in lines)   # nor theirs here


@pytest.mark.flink
def test_the_demo_on_two_isolated_taskmanagers_equals_the_local_one(two_taskmanagers, remote,
                                                                     local_demo):
    stats, _ = _demo(remote.root, *remote.options, *two_taskmanagers.options())
    assert stats == local_demo[1]
    assert crawl_differences(remote.root, local_demo[0]) == []
