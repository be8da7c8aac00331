"""beamcrawl on a real Flink: the local standalone cluster (`beamcrawl flink start`) and the
embedded `[local]` Flink of the job server. Marked `flink`; CI runs them (the first run builds the
job server and assembles Flink into .flink/, later runs reuse it)."""

import glob
import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from beamcrawl.transforms.fetcher.journal import reading
from beamcrawl.transforms.runners.localflink import LocalFlink, pid_alive
from beamcrawl.transforms.storage.crawl_diff import crawl_differences
from tests.conftest import ROOT, read_db, read_parts, run_cli, write_seeds
from tests.test_localflink import free_ports
from tests.testweb import Page, html_page, redirect

# The first run builds the job server and downloads Flink (about 420 MB): allow for it.
# One xdist worker runs them all, in order, beside the others (run_local.sh --test).
pytestmark = [pytest.mark.flink, pytest.mark.slow, pytest.mark.timeout(1800),
              pytest.mark.xdist_group('flink')]

NOW = '2026-11-22T00:00:00Z'
DELAY = 0.4
HOSTS = ('f1.test', 'f2.test', 'f3.test')


@pytest.fixture(scope='module', autouse=True)
def own_state(tmp_path_factory):
    """`start` records its home in the user's state folder: these tests use one of their own."""
    saved = os.environ.get('XDG_STATE_HOME')
    os.environ['XDG_STATE_HOME'] = str(tmp_path_factory.mktemp('state'))
    yield os.environ['XDG_STATE_HOME']
    if saved is None:
        del os.environ['XDG_STATE_HOME']
    else:
        os.environ['XDG_STATE_HOME'] = saved


def _elsewhere(tmp_path_factory, *args):
    """`beamcrawl flink ARGS` run from another directory, without --home or
    BEAMCRAWL_FLINK_HOME: the home must be found all the same."""
    env = {k: v for k, v in os.environ.items() if k != 'BEAMCRAWL_FLINK_HOME'}
    return subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'flink', *args],
                          capture_output=True, text=True, env=env, timeout=300,
                          cwd=str(tmp_path_factory.mktemp('elsewhere')))


@pytest.fixture(scope='module')
def built():
    flink = LocalFlink(os.path.join(ROOT, '.flink'))
    flink.prepare()
    return flink


@pytest.fixture(scope='module')
def cluster(built, tmp_path_factory):
    # Ports other than the defaults: the tests must not meet (or stop) a cluster of the user's.
    flink = LocalFlink(built.home, ports=dict(zip(('rest', 'rpc', 'job', 'artifact', 'pool'),
                                                  free_ports(5))))
    flink.start()
    yield flink
    pids = [p for ps in flink.pids().values() for p in ps]
    proc = _elsewhere(tmp_path_factory, 'stop')
    flink.stop()                        # whatever that left (nothing, if it found the cluster)
    assert proc.stdout.startswith('stopped: jobmanager'), proc.stdout + proc.stderr
    assert not [p for p in pids if pid_alive(p)], 'stop left processes behind'
    assert not os.path.exists(flink.tmp_dir), 'stop left the jobs\' files behind'
    assert not glob.glob(os.path.join(flink.run_dir, 'taskmanager-*', 'tmp')), \
        'stop left the TaskManager\'s files behind'


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
    # readdb --stats on the cluster (a batch job that deploys all its stages at once: it needs
    # the TaskManager's network buffers that `flink start` gives it) says what it says locally
    stats = [run_cli('readdb', crawl, '--stats', *options, timeout=900).stdout
             for crawl, options in ((on_flink, [*cluster.options(), '--parallelism', '2']),
                                    (local, []))]
    assert stats[0] == stats[1] and 'status 2 (db_fetched)' in stats[0]


def test_one_stage_on_the_embedded_flink(built, tmp_path):
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://e{i}.test/p' for i in range(50)])
    run_cli('inject', str(tmp_path / 'local'), seeds, '--now', NOW)
    run_cli('inject', str(tmp_path / 'embedded'), seeds, '--now', NOW, '--runner', 'FlinkRunner',
            '--flink_master', '[local]', '--flink_job_server_jar', built.jar, timeout=600)
    assert read_db(tmp_path / 'embedded') == read_db(tmp_path / 'local')
    assert len(read_db(tmp_path / 'local')) == 50


def test_the_cluster_runs_jobs_with_the_beam_runner_of_its_class_path(built, cluster):
    """Flink loads each job's classes anew unless its JVMs have them (flinkbuild.py
    LIB_JAR_NOTE): the lib jar holds the runner's classes and none of Flink's distribution,
    both JVMs run with it in their class path, and resolve a job's classes parent-first."""
    import zipfile
    with zipfile.ZipFile(built.build.lib_jar) as z:
        lib = set(z.namelist())
    dist = glob.glob(os.path.join(built.flink_home, 'lib', 'flink-dist-*.jar'))
    with zipfile.ZipFile(dist[0]) as z:
        assert not lib & set(z.namelist())
    assert 'org/apache/beam/runners/flink/FlinkPipelineRunner.class' in lib
    assert not [n for n in lib if n.startswith(('org/slf4j/', 'org/apache/logging/'))]
    pids = cluster.pids()
    for pid in pids['jobmanager'] + pids['taskmanager']:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            argv = f.read().split(b'\0')
        if b'java' not in argv[0]:          # taskmanager.sh's shell: its java child
            with open(f'/proc/{pid}/task/{pid}/children') as f:
                child = int(f.read().split()[0])
            with open(f'/proc/{child}/cmdline', 'rb') as f:
                argv = f.read().split(b'\0')
        classpath = argv[argv.index(b'-classpath') + 1].decode()
        assert os.path.join(cluster.run_dir, 'lib', 'beamcrawl-flink-lib.jar') in \
            classpath.split(':'), classpath
    with urllib.request.urlopen(f'http://{cluster.rest()}/jobmanager/config') as resp:
        config = {e['key']: e['value'] for e in json.load(resp)}
    assert config['classloader.resolve-order'] == 'parent-first'


def _command_line(pid):
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
        return f.read().split(b'\0')


def test_only_the_taskmanagers_jvm_runs_the_optimizing_compiler(cluster):
    # the JobManager and the job server run control code only (localflink._CONTROL_JVM_OPTIONS)
    pids = cluster.pids()
    for name in ('jobmanager', 'job server'):
        assert b'-XX:TieredStopAtLevel=1' in _command_line(pids[name][0]), name
    assert b'-XX:TieredStopAtLevel=1' not in _command_line(pids['taskmanager'][0])


def test_start_is_idempotent_and_status_says_what_runs(cluster):
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'flink', 'start',
                           '--home', cluster.home], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0
    assert proc.stdout.strip().splitlines()[-1] == ' '.join(cluster.options())
    assert f'localhost:{cluster.ports["job"]}' in proc.stdout     # the ports it runs on
    status = run_cli('flink', 'status', '--home', cluster.home).stdout
    for name in ('jobmanager', 'taskmanager', 'job server', 'worker pool'):
        assert f'{name}: running' in status
    for port in cluster.ports.values():
        assert f'localhost:{port}' in status
    # the TaskManager works in the cluster's own folder (stop removes it), not in /tmp
    assert glob.glob(os.path.join(cluster.run_dir, 'taskmanager-1', 'tmp', 'tm_*'))


def _descendants(pids):
    """The processes and all their children (the worker pool's SDK workers)."""
    children = {}
    for entry in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{entry}/stat', encoding='ascii') as f:
                ppid = int(f.read().rsplit(') ', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def _decode(address_hex):
    """An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(address_hex)
    return ipaddress.ip_address(b''.join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))


def listening_sockets(pids):
    """(address, port) of every TCP socket the processes listen on."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f'/proc/{pid}/fd'):
                link = os.readlink(f'/proc/{pid}/fd/{fd}')
                if link.startswith('socket:['):
                    inodes.add(int(link[8:-1]))
        except OSError:                  # a worker that ended meanwhile
            continue
    found = []
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table, encoding='ascii') as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == '0A' and int(fields[9]) in inodes:      # 0A: LISTEN
                    address, port = fields[1].split(':')
                    found.append((_decode(address), int(port, 16)))
    return found


def _loopback(address):
    mapped = getattr(address, 'ipv4_mapped', None)          # ::ffff:127.0.0.1
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def test_everything_start_started_listens_on_loopback_only(cluster):
    pids = _descendants([p for ps in cluster.pids().values() for p in ps if pid_alive(p)])
    sockets = listening_sockets(pids)
    assert set(cluster.ports.values()) <= {port for _, port in sockets}, sockets
    assert [(str(a), port) for a, port in sockets if not _loopback(a)] == []


def test_status_from_another_directory_finds_the_running_cluster(cluster, tmp_path_factory):
    proc = _elsewhere(tmp_path_factory, 'status')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ('jobmanager', 'taskmanager', 'job server', 'worker pool'):
        assert f'{name}: running' in proc.stdout
    assert f'localhost:{cluster.ports["rest"]}' in proc.stdout     # and its ports


def test_workers_without_beamcrawl_give_one_line(cluster, tmp_path):
    # A worker pool whose workers' Python has apache_beam but not beamcrawl (site .pth files
    # skipped): its boot program cannot even start.
    boot = tmp_path / 'sdk-worker'
    site = next(p for p in sys.path if p.endswith('site-packages'))
    boot.write_text(
        '#!/bin/sh\n'
        f'exec {sys.executable} -S -c "import sys, runpy; sys.path.append({site!r}); '
        'runpy.run_module(\'beamcrawl.transforms.runners.sdkboot\', run_name=\'__main__\')" '
        '"$@"\n')
    boot.chmod(0o755)
    (pool_port,) = free_ports(1)
    pool = subprocess.Popen([sys.executable, '-m', 'beamcrawl.transforms.runners.workerpool',
                             str(pool_port), 'localhost', str(boot)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        assert pool.stdout.readline().startswith(b'worker pool listening')
        options = cluster.options()
        options[options.index('--environment_config') + 1] = f'localhost:{pool_port}'
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
    # the probe job was cancelled on the cluster, not left holding its slots
    assert not _running_jobs(cluster), proc.stderr


def test_a_worker_pool_gone_since_start_gives_one_line(cluster, tmp_path):
    # `start` probed the pool; a command trusts that only while the same pool runs
    pools = cluster.pids()['worker pool']
    for pid in pools:
        os.kill(pid, signal.SIGTERM)
    while any(pid_alive(pid) for pid in pools):
        time.sleep(0.05)
    try:
        proc = run_cli('inject', str(tmp_path / 'c'),
                       write_seeds(tmp_path / 's', ['http://a.test/']),
                       '-D', 'runner.probe.timeout=60', *cluster.options(), check=False,
                       timeout=600)
    finally:
        cluster.start()                     # a new pool, probed
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith('beamcrawl inject: ') and 'probe job' in line, line
    assert 'Traceback' not in proc.stderr
    assert not os.path.exists(tmp_path / 'c' / 'crawldb' / 'current')
    assert not _running_jobs(cluster), proc.stderr


def _jobs(cluster):
    with urllib.request.urlopen(f'http://{cluster.rest()}/jobs/overview',
                                timeout=10) as response:
        return json.loads(response.read().decode('utf-8'))['jobs']


def _running_jobs(cluster):
    return [job for job in _jobs(cluster)
            if job['state'] not in ('FINISHED', 'CANCELED', 'FAILED')]


def _job_folders(cluster):
    """The TaskManager's folders of jobs' files (each holds the job server's jar, 150 MB)."""
    return glob.glob(os.path.join(cluster.run_dir, 'taskmanager-*', 'tmp', 'tm_*', 'blobStorage',
                                  'job_*'))


def _size(folder):
    total = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:                 # removed meanwhile by Flink's cleanup
                pass
    return total


@pytest.mark.timeout(900)
def test_the_cluster_folder_does_not_grow_with_every_stage(cluster, tmp_path):
    seeds = write_seeds(tmp_path / 'seeds.txt', [f'http://d{i}.test/p' for i in range(20)])
    sizes = []
    jobs = len(_jobs(cluster))
    for i in range(4):
        # one Flink job: the inject stage (`start` probed the workers: no probe job)
        run_cli('inject', str(tmp_path / f'crawl{i}'), seeds, '--now', NOW, *cluster.options(),
                timeout=600)
        assert len(_jobs(cluster)) == jobs + i + 1
        # Finished jobs' files go when the TaskManager's blob cache cleans up (a few seconds
        # after the job; an hour with Flink's default settings): await it by observation.
        while _job_folders(cluster):
            time.sleep(0.2)
        sizes.append(_size(cluster.run_dir))
    # what stays is Flink's own (logs, RPC jars): far less than one job's jar
    assert max(sizes) - min(sizes) < 50_000_000, sizes


def _statuses(crawl):
    segment = sorted(glob.glob(os.path.join(crawl, 'segments', '*')))[-1]
    records = read_parts(glob.glob(os.path.join(segment, 'crawl_fetch', 'part-*')))
    return sorted((r['url'], r['status'], r['protocol_status']) for r in records)


def test_streaming_fetch_on_the_cluster_is_polite_and_equals_the_batch_fetch(
        cluster, web, flink_site, tmp_path):
    hosts = ('s1.test', 's2.test')
    for host in hosts:
        web.add(host, '/robots.txt', Page(body=b'User-agent: *\nDisallow: /private\n',
                                          content_type='text/plain'))
        web.add(host, '/', html_page(f'{host} home'))
        for i in range(6):
            web.add(host, f'/p{i}', html_page(f'{host} page {i}'))
    web.add('s2.test', '/moved', redirect('http://s2.test/p0'))
    urls = [f'http://{h}/p{i}' for h in hosts for i in range(6)] + [
        'http://s1.test/private/x', 'http://s2.test/moved', 'http://s2.test/missing']
    seeds = write_seeds(tmp_path / 'seeds.txt', urls)
    streaming, batch = str(tmp_path / 'streaming'), str(tmp_path / 'batch')
    for crawl in (streaming, batch):
        run_cli('inject', crawl, seeds, '--now', NOW, *_conf(web))
        run_cli('generate', crawl, '--now', NOW, *_conf(web))
    web.clear_log()
    proc = run_cli('fetch', streaming, '--streaming', '--now', NOW, *_conf(web),
                   *cluster.options(), '--parallelism', '2', '--checkpointing_interval', '1000',
                   timeout=900)
    assert 'Traceback' not in proc.stderr
    assert not _running_jobs(cluster), 'the streaming job was left running on the cluster'
    for host, requests in (('s1.test', 6), ('s2.test', 8)):   # the server's log: each page
        gaps = _gaps(web, host)                                 # once, every gap ≥ the delay
        assert len(gaps) == requests - 1 and min(gaps) >= DELAY, (host, gaps)
    assert ', 0 violations' in run_cli('readseg', streaming, '--politeness',
                                     sorted(os.listdir(os.path.join(streaming, 'segments')))[-1]
                                     ).stdout
    run_cli('fetch', batch, '--now', NOW, *_conf(web))
    got = _statuses(streaming)
    assert got == _statuses(batch)
    assert len([u for u, status, _ in got if status != 'linked']) == len(urls)   # each once
    assert ('http://s1.test/private/x', 'fetch_gone', 'robots_denied') in got
    assert ('http://s2.test/p0', 'linked', None) in got


def test_streaming_fetch_survives_a_killed_taskmanager(cluster, web, tmp_path):
    """SIGKILL the TaskManager once the journal holds some URLs (an observed point, before the
    last); bring a new one up; Flink restores the job from its last checkpoint. The published
    segment has every generated URL exactly once, all fetched."""
    hosts = [f'k{i}.test' for i in range(3)]
    for host in hosts:
        web.add(host, '/robots.txt', Page(status=404))
        for i in range(8):
            web.add(host, f'/p{i}', html_page(f'{host} page {i}'))
    urls = [f'http://{h}/p{i}' for h in hosts for i in range(8)]
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds.txt', urls), '--now', NOW,
            *_conf(web))
    run_cli('generate', crawl, '--now', NOW, *_conf(web))
    segment = sorted(glob.glob(os.path.join(crawl, 'segments', '*')))[-1]
    proc = subprocess.Popen(
        [sys.executable, '-m', 'beamcrawl.pipelines.cli', 'fetch', crawl, '--streaming',
         '--now', NOW, *_conf(web), *cluster.options(), '--checkpointing_interval', '500'],
        cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        journal_dir = os.path.join(segment, '.fetch')
        while reading.read_journals(journal_dir).fetched < 6:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        killed_at = reading.read_journals(journal_dir).fetched
        killed = [pid for pid in cluster.pids()['taskmanager'] if pid_alive(pid)]
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        assert killed_at < len(urls), 'the fetch ended before the kill'
        while any(pid_alive(pid) for pid in killed):   # a JVM takes a while to die
            time.sleep(0.01)
        cluster.start()                        # a new TaskManager; Flink restarts the job
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert not _running_jobs(cluster)
    own = [r for r in read_parts(glob.glob(os.path.join(segment, 'crawl_fetch', 'part-*')))
           if r['metadata'].get('_src_') == r['url']]
    assert sorted(r['url'] for r in own) == sorted(urls)          # each once
    assert {r['status'] for r in own} == {'fetch_success'}
    contents = read_parts(glob.glob(os.path.join(segment, 'content', 'part-*')))
    assert sorted(r['url'] for r in contents) == sorted(urls)
