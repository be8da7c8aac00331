"""beamcrawl on a real Flink: the local standalone cluster (`beamcrawl flink start`) and the
embedded `[local]` Flink of the job server. Marked `flink`; CI runs them (the first run builds the
job server and assembles Flink into .flink/, later runs reuse it)."""

import os
import subprocess
import sys

import pytest

from beamcrawl.transforms.crawl_diff import crawl_differences
from beamcrawl.transforms.localflink import LocalFlink, pid_alive
from tests.conftest import ROOT, read_db, run_cli, write_seeds
from tests.testweb import Page, html_page

# The first run builds the job server and downloads Flink (about 420 MB): allow for it.
pytestmark = [pytest.mark.flink, pytest.mark.slow, pytest.mark.timeout(1800)]

NOW = '2026-11-22T00:00:00Z'
DELAY = 0.4
HOSTS = ('f1.test', 'f2.test', 'f3.test')


@pytest.fixture(scope='module')
def built():
    flink = LocalFlink(os.path.join(ROOT, '.flink'))
    flink.prepare()
    return flink


@pytest.fixture(scope='module')
def cluster(built):
    flink = built
    flink.start()
    yield flink
    pids = [p for ps in flink.pids().values() for p in ps]
    flink.stop()
    assert not [p for p in pids if pid_alive(p)], 'stop left processes behind'


@pytest.fixture(scope='module')
def flink_site(testweb):
    for n, host in enumerate(HOSTS):
        testweb.add(host, '/robots.txt', Page(status=404))
        pages = [f'/p{i}' for i in range(5)]
        testweb.add(host, '/', html_page(f'{host} home', links=pages + [
            f'http://{HOSTS[(n + 1) % len(HOSTS)]}/']))
        for i, path in enumerate(pages):
            testweb.add(host, path, html_page(f'{host} page {i}', links=['/', pages[(i + 1) % 5]]))


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', f'fetcher.server.delay={DELAY}',
            '-D', 'domain.extra.suffixes=test', '-D', 'db.fetch.interval.default=86400']


def _crawl(crawl, seeds, web, *beam):
    return run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', NOW,
                   '--round-interval', '86400', *_conf(web), *beam, timeout=900)


def _gaps(web, host):
    log = sorted((r for r in web.requests_for(host) if r.path != '/robots.txt'),
                 key=lambda r: r.start)
    return [b.start - a.end for a, b in zip(log, log[1:])]


def test_two_round_crawl_on_the_cluster_equals_the_local_runner(cluster, web, flink_site,
                                                                tmp_path):
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://{h}/' for h in HOSTS])
    on_flink, local = str(tmp_path / 'flink'), str(tmp_path / 'local')
    _crawl(on_flink, seeds, web, *cluster.options(), '--parallelism', '2')
    for host in HOSTS:                      # per-host politeness held on the cluster
        gaps = _gaps(web, host)
        assert len(gaps) >= 5 and min(gaps) >= DELAY, (host, gaps)
    web.clear_log()
    _crawl(local, seeds, web)
    assert crawl_differences(on_flink, local) == []
    db = read_db(on_flink)
    assert sum(r['status'] in ('db_fetched', 'db_notmodified') for r in db.values()) == \
        len(HOSTS) * 6
    # the indexer on the cluster gives the index the local runner gives
    run_cli('index', on_flink, *cluster.options(), '--parallelism', '2', timeout=900)
    run_cli('index', local)
    results = [run_cli('search', crawl, 'page', '--top', '50', '--json').stdout
               for crawl in (on_flink, local)]
    assert results[0] == results[1] and len(results[0].splitlines()) == len(HOSTS) * 5


def test_one_stage_on_the_embedded_flink(built, tmp_path):
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://e{i}.test/p' for i in range(50)])
    run_cli('inject', str(tmp_path / 'local'), seeds, '--now', NOW)
    run_cli('inject', str(tmp_path / 'embedded'), seeds, '--now', NOW, '--runner', 'FlinkRunner',
            '--flink_master', '[local]', '--flink_job_server_jar', built.jar, timeout=600)
    assert read_db(tmp_path / 'embedded') == read_db(tmp_path / 'local')
    assert len(read_db(tmp_path / 'local')) == 50


def test_start_is_idempotent_and_status_says_what_runs(cluster):
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'flink', 'start',
                           '--home', cluster.home], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0
    assert proc.stdout.strip().splitlines()[-1] == ' '.join(cluster.options())
    status = run_cli('flink', 'status', '--home', cluster.home).stdout
    for name in ('jobmanager', 'taskmanager', 'job server', 'worker pool'):
        assert f'{name}: running' in status


def test_workers_without_beamcrawl_give_one_line(cluster, tmp_path):
    # A worker pool whose `python` has apache_beam but not beamcrawl (site .pth files skipped).
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    site = next(p for p in sys.path if p.endswith('site-packages'))
    (bin_dir / 'python').write_text(
        '#!/bin/sh\n'
        f'exec {sys.executable} -S -c "import sys; sys.path.append({site!r}); '
        'exec(sys.argv[1])" "$2"\n')
    (bin_dir / 'python').chmod(0o755)
    env = dict(os.environ, PATH=f'{bin_dir}:/usr/bin:/bin')
    pool = subprocess.Popen([sys.executable, '-m', 'beamcrawl.transforms.workerpool', '50007'],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert pool.stdout.readline().startswith(b'worker pool listening')
        options = cluster.options()
        options[options.index('--environment_config') + 1] = 'localhost:50007'
        proc = run_cli('inject', str(tmp_path / 'c'),
                       write_seeds(tmp_path / 's', ['http://a.test/']),
                       '-D', 'runner.probe.timeout=20', *options, check=False, timeout=600)
    finally:
        pool.terminate()
        pool.wait()
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith('beamcrawl inject: the workers')
    assert 'Traceback' not in proc.stderr
    assert not os.path.exists(tmp_path / 'c' / 'crawldb' / 'current')
