"""The local Flink cluster's settings, without running Flink: ports, where its home is found,
and the one-line errors of `beamcrawl flink start`. (tests/test_flink.py runs the cluster.)"""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from beamcrawl.transforms.runners.flinkbuild import (_JAR, _LIB_JAR, FLINK_VERSION,
                                                    job_server_digest)
from beamcrawl.transforms.runners.localflink import LocalFlink, _kept_in_tmp, probed_by_start
from beamcrawl.transforms.runners.services import default_home, remember_home
from tests.conftest import ROOT

needs_java = pytest.mark.skipif(shutil.which('java') is None, reason='needs java on PATH')


def free_ports(count):
    """Ports free at the time of the call (each held until all are chosen: all differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(('127.0.0.1', 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def prepared_home(path):
    """A home in which `prepare` finds the job server and Flink built: empty stand-ins, enough
    for what `start` checks before it starts anything."""
    for stand_in in (os.path.join('job-server', 'target', _JAR),
                     os.path.join('job-server', 'target', _LIB_JAR),   # made from the jar
                     os.path.join(f'flink-{FLINK_VERSION}', 'bin', 'start-cluster.sh')):
        os.makedirs(os.path.dirname(os.path.join(path, stand_in)), exist_ok=True)
        open(os.path.join(path, stand_in), 'wb').close()
    with open(os.path.join(path, 'job-server', 'project.sha256'), 'w', encoding='ascii') as f:
        f.write(job_server_digest())
    return str(path)


def flink_cli(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'flink', *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A per-user state folder of the test's own, and no BEAMCRAWL_FLINK_HOME."""
    monkeypatch.setenv('XDG_STATE_HOME', str(tmp_path / 'state'))
    monkeypatch.delenv('BEAMCRAWL_FLINK_HOME', raising=False)
    return tmp_path / 'state'


def test_the_beam_options_name_the_chosen_ports(tmp_path):
    flink = LocalFlink(str(tmp_path), ports={'job': 18099, 'pool': 15000, 'rest': 18081})
    options = flink.options()
    assert options[options.index('--job_endpoint') + 1] == 'localhost:18099'
    assert options[options.index('--environment_config') + 1] == 'localhost:15000'
    assert options[options.index('--flink_master') + 1] == 'localhost:18081'
    assert flink.ports['rpc'] == 6123 and flink.ports['artifact'] == 8098   # the defaults


@needs_java
@pytest.mark.parametrize('name,how', [('rest', 'option'), ('job', 'option'), ('pool', 'config'),
                                      ('rpc', 'config'), ('artifact', 'option')])
def test_a_busy_port_gives_one_line_naming_it_and_the_option(state, tmp_path, name, how):
    home = prepared_home(tmp_path / 'home')
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen()
        # The free ports are chosen while the busy one is held: none of them can be it.
        ports = dict(zip(('rest', 'rpc', 'job', 'artifact', 'pool'), free_ports(5)))
        ports[name] = busy.getsockname()[1]
        choices = []
        for other, port in ports.items():
            choices += ([f'--{other}-port', str(port)] if how == 'option' or other != name
                        else ['-D', f'runner.flink.port.{other}={port}'])
        proc = flink_cli('start', '--home', home, *choices)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f'beamcrawl flink: port {ports[name]} (')
    assert line.endswith(f'is in use by another program: choose another with `beamcrawl flink '
                         f'start --{name}-port PORT` (or the config key '
                         f'runner.flink.port.{name})')
    assert 'Traceback' not in proc.stderr
    assert not [n for n in os.listdir(os.path.join(home, 'run')) if n.endswith('.pid')]


def test_the_default_home_is_beside_the_source_tree_not_the_working_directory(state,
                                                                              monkeypatch,
                                                                              tmp_path):
    monkeypatch.chdir(tmp_path)
    assert default_home('flink') == os.path.join(ROOT, '.flink')
    monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', 'relative/home')
    assert default_home('flink') == str(tmp_path / 'relative' / 'home')


def test_status_from_another_directory_finds_the_home_start_used(state, tmp_path):
    home = prepared_home(tmp_path / 'home')
    remember_home('flink', home)                       # what `start` does before it starts anything
    os.makedirs(os.path.join(home, 'run'))
    with open(os.path.join(home, 'run', 'workerpool.pid'), 'w', encoding='ascii') as f:
        f.write(f'{os.getpid()}\n')           # a live process stands in for the worker pool
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    proc = flink_cli('status', cwd=str(elsewhere), env=env)
    assert f'worker pool: running (pid {os.getpid()})' in proc.stdout, proc.stdout + proc.stderr
    assert 'jobmanager: stopped' in proc.stdout
    # BEAMCRAWL_FLINK_HOME wins over the recorded home
    env['BEAMCRAWL_FLINK_HOME'] = str(tmp_path / 'other')
    assert 'worker pool: stopped' in flink_cli('status', cwd=str(elsewhere), env=env).stdout


@pytest.mark.parametrize('paths, kept', [
    (['/work/main/.flink', '/root/.pyenv/versions/3.11.7'], []),
    (['/tmp/ci/.flink/tests/ab12', '/tmp/ci/.venv', '/tmp/ci/transforms/runners'], ['ci']),
    (['/tmp/a/x', '/tmp/b', '/var/tmp/c', '/tmpfoo/d'], ['a', 'b']),
    (['/tmp'], []),
])
def test_an_isolated_taskmanager_keeps_the_entries_of_tmp_that_hold_the_installation(paths,
                                                                                     kept):
    assert _kept_in_tmp(paths) == kept


def _probed_home(tmp_path, job, environment, pids, pool=None):
    """A home whose cluster.json records a probe by `start` (LocalFlink._probe) and whose pid
    files name live processes (this one; the worker pool's: `pool`, else this one)."""
    home = tmp_path / 'home'
    shutil.rmtree(home, ignore_errors=True)
    (home / 'run').mkdir(parents=True)
    (home / 'run' / 'cluster.json').write_text(json.dumps(
        {'ports': {}, 'bind': 'localhost', 'probed': {'job': job, 'environment': environment,
                                                       'pids': pids}}))
    for name in ('flink-root-standalonesession.pid', 'taskmanager-1.pid', 'jobserver.pid'):
        (home / 'run' / name).write_text(f'{os.getpid()}\n')
    (home / 'run' / 'workerpool.pid').write_text(f'{pool or os.getpid()}\n')
    return str(home)


def test_a_command_trusts_the_probe_of_start_only_while_its_cluster_runs(state, tmp_path,
                                                                         monkeypatch):
    ended = int(subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'],
                               capture_output=True, text=True, check=True).stdout)
    me = os.getpid()
    with socket.socket() as pool:
        pool.bind(('127.0.0.1', 0))
        pool.listen()
        (job,) = free_ports(1)
        job, where = f'localhost:{job}', f'localhost:{pool.getsockname()[1]}'
        external = ['EXTERNAL', where]
        monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', _probed_home(tmp_path, job, external,
                                                                [me, me]))
        assert probed_by_start(job, external)
        assert not probed_by_start('localhost:1', external)           # another job server
        assert not probed_by_start(job, ['EXTERNAL', 'localhost:1'])  # another pool
        assert not probed_by_start(job, ['PROCESS', where])
        monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', str(tmp_path / 'nothing'))
        assert not probed_by_start(job, external)                     # no cluster there
        # the pool that start probed has ended (another one runs, or none)
        other = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])
        try:
            monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', _probed_home(tmp_path, job, external,
                                                                    [me, me], pool=other.pid))
            assert not probed_by_start(job, external)
        finally:
            other.kill()
            other.wait()
        monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', _probed_home(tmp_path, job, external,
                                                                [me, ended], pool=ended))
        assert not probed_by_start(job, external)
        home = _probed_home(tmp_path, job, external, [me, me])
        monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', home)
        os.remove(os.path.join(home, 'run', 'taskmanager-1.pid'))     # no TaskManager runs
        assert not probed_by_start(job, external)
        _probed_home(tmp_path, job, external, [me, me])
    assert not probed_by_start(job, external)                 # the pool no longer answers
    process = ['PROCESS', 'process_command=/x/sdk-worker']
    monkeypatch.setenv('BEAMCRAWL_FLINK_HOME', _probed_home(tmp_path, job, process, [me, me]))
    assert probed_by_start(job, process)


_FORKED = '''
import os, sys, threading
from beamcrawl.transforms.runners import workerpool

def run(argv):
    if argv == ['wait']:
        threading.Event().wait()
    with open(argv[0], 'w') as f:
        f.write(' '.join([*argv[1:], str(os.getppid()),
                          str('apache_beam.runners.worker.sdk_worker_main' in sys.modules)]))
    return 0

forker = workerpool._Forker(run)
worker = forker.start([sys.argv[1], '--id=1', '--x=y'])
assert worker.wait(60) == 0
waiting = forker.start(['wait'])
try:
    waiting.wait(0.2)
    raise SystemExit('a waiting worker ended by itself')
except workerpool.subprocess.TimeoutExpired:
    pass
waiting.terminate()
waiting.wait(60)                                # it ends when terminated
print(forker.pid)
forker.close()
'''


def test_the_pools_workers_are_forked_from_a_process_with_beams_harness_imported(tmp_path):
    out = tmp_path / 'worker'
    proc = subprocess.run([sys.executable, '-c', _FORKED, str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    forker = proc.stdout.strip().splitlines()[-1]
    assert out.read_text() == f'--id=1 --x=y {forker} True'
