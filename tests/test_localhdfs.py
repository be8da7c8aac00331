"""The local HDFS of `beamcrawl hdfs start|stop|status`: a real MiniDFSCluster, started once for
the module (its build, with Maven, once per test session into .hdfs/ beside the source tree),
reached through Beam's FileSystems with the options `start` prints. One xdist worker runs them
(run_local.sh --test: --dist loadgroup)."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

from beamcrawl.transforms.runners.localhdfs import LocalHdfs, minicluster_digest
from beamcrawl.transforms.storage.locks import process_alive
from tests.conftest import ROOT
from tests.test_localflink import free_ports

needs_java = pytest.mark.skipif(shutil.which('java') is None, reason='needs java on PATH')
needs_maven = pytest.mark.skipif(shutil.which('mvn') is None or shutil.which('java') is None,
                                 reason='needs java and mvn on PATH')
on_the_cluster = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900),
                  pytest.mark.xdist_group('stores'), needs_maven]


def hdfs_cli(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'hdfs', *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


@pytest.fixture(scope='session')
def hdfs_build():
    """The MiniDFSCluster built once per test session, in .hdfs/ beside the source tree (kept
    between runs; rebuilt when conf/hdfs-minicluster/ changes)."""
    built = LocalHdfs(os.path.join(ROOT, '.hdfs'))
    built.prepare()
    return built


def home_with_build(path, build):
    """A home of its own (data, pid files) that uses the session's build."""
    os.makedirs(path)
    os.symlink(build.build_dir, os.path.join(path, 'minicluster'))
    return str(path)


@pytest.fixture(scope='module')
def state(tmp_path_factory):
    """A per-user state folder of the module's own (where `start` records its home)."""
    return str(tmp_path_factory.mktemp('state'))


@pytest.fixture(scope='module')
def started(hdfs_build, state, tmp_path_factory):
    """`beamcrawl hdfs start` on free ports in a home of its own; yields (LocalHdfs, the
    completed process). Stopped at the end from another directory: no process may remain."""
    home = home_with_build(tmp_path_factory.mktemp('hdfs') / 'home', hdfs_build)
    rpc, http = free_ports(2)
    env = dict(os.environ, XDG_STATE_HOME=state)
    env.pop('BEAMCRAWL_HDFS_HOME', None)
    proc = hdfs_cli('start', '--home', home, '--rpc-port', str(rpc), '--http-port', str(http),
                    env=env)
    hdfs = LocalHdfs(home)
    yield hdfs, proc
    pid = hdfs.pid()
    stop = hdfs_cli('stop', cwd=str(tmp_path_factory.mktemp('elsewhere')), env=env)
    hdfs.stop()                         # whatever that left (nothing, if it found the HDFS)
    assert stop.stdout.startswith(f'stopped: hdfs (pid {pid})'), stop.stdout + stop.stderr
    assert pid is None or not process_alive(pid), 'stop left the HDFS running'
    assert hdfs_cli('stop', '--home', home, env=env).stdout.strip() == 'nothing was running'


def cluster_test(function):
    for mark in on_the_cluster:
        function = mark(function)
    return function


@cluster_test
def test_start_on_free_ports_prints_the_paths_and_last_the_beam_options(started):
    hdfs, proc = started
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == (f'--hdfs_host 127.0.0.1 --hdfs_port {hdfs.ports["http"]} '
                         f'--hdfs_user {_user()}')
    assert lines[-1].split() == hdfs.options()
    assert any('hdfs://PATH' in line and 'hdfs://crawl is /crawl' in line for line in lines)
    listening = next(line for line in lines if line.startswith('hdfs: listening on'))
    assert f'127.0.0.1:{hdfs.ports["rpc"]}' in listening
    assert f'127.0.0.1:{hdfs.ports["http"]}' in listening
    assert hdfs.running() and hdfs.answers()


@cluster_test
def test_status_from_another_directory_finds_the_running_hdfs(started, state, tmp_path):
    hdfs, _ = started
    env = dict(os.environ, XDG_STATE_HOME=state)
    env.pop('BEAMCRAWL_HDFS_HOME', None)
    proc = hdfs_cli('status', cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f'hdfs: running (pid {hdfs.pid()})')
    assert proc.stdout.strip().splitlines()[-1].split() == hdfs.options()
    # BEAMCRAWL_HDFS_HOME wins over the recorded home
    env['BEAMCRAWL_HDFS_HOME'] = str(tmp_path / 'other')
    other = hdfs_cli('status', cwd=str(tmp_path), env=env)
    assert (other.returncode, other.stdout.strip()) == (3, 'hdfs: stopped')


@cluster_test
def test_a_second_start_leaves_the_running_hdfs_as_it_is(started, state):
    hdfs, _ = started
    proc = hdfs_cli('start', '--home', hdfs.home, env=dict(os.environ, XDG_STATE_HOME=state))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].split() == hdfs.options()
    assert 'runs with its recorded ports' in proc.stderr


@cluster_test
def test_every_listening_socket_is_loopback(started):
    hdfs, _ = started
    listening = listening_sockets(hdfs.pid())
    ports = {port for _, port in listening}
    assert {hdfs.ports['rpc'], hdfs.ports['http']} <= ports
    assert len(listening) >= 5          # the NameNode's 2, the DataNode's 3 and its inner HTTP
    assert all(address in ('127.0.0.1', '::ffff:127.0.0.1') for address, _ in listening), \
        listening


@cluster_test
def test_a_file_written_and_read_back_through_beams_filesystems(started):
    from apache_beam.io.filesystem import BeamIOError
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions
    hdfs, proc = started
    options = proc.stdout.strip().splitlines()[-1].split()
    saved = FileSystems._pipeline_options
    FileSystems.set_options(PipelineOptions(options))
    try:
        base = hdfs.prefix() + 'test-beam'
        data = os.urandom(3 << 20)
        FileSystems.mkdirs(base + '/a')
        with FileSystems.create(base + '/a/part-00000.avro') as f:
            f.write(data)
        with FileSystems.open(base + '/a/part-00000.avro') as f:
            assert f.read(len(data)) == data
        assert FileSystems.exists(base + '/a/part-00000.avro')
        assert [m.path for m in FileSystems.match([base + '/a/*'])[0].metadata_list] == \
            [base + '/a/part-00000.avro']
        with pytest.raises(BeamIOError):            # an existing file is not overwritten
            FileSystems.create(base + '/a/part-00000.avro')
        FileSystems.rename([base + '/a'], [base + '/b'])       # a directory, whole
        assert not FileSystems.exists(base + '/a')
        with FileSystems.open(base + '/b/part-00000.avro') as f:
            assert f.read(len(data)) == data
        FileSystems.delete([base])
        assert not FileSystems.exists(base)
    finally:
        FileSystems._pipeline_options = saved


@cluster_test
def test_what_webhdfs_guarantees_exclusive_create_and_rename(started):
    """The facts a crawl directory on HDFS can build on, through the `hdfs` package's WebHDFS
    client (the one Beam uses): a create that fails on an existing file, a plain rename that
    fails onto an existing file and moves into an existing directory, and WebHDFS's
    renameoptions=OVERWRITE, a rename that replaces a file."""
    import hdfs as webhdfs
    local, _ = started
    client = webhdfs.InsecureClient(f'http://127.0.0.1:{local.ports["http"]}', user=_user())
    client.makedirs('/facts/dir')
    client.write('/facts/one', data=b'one', overwrite=False)
    with pytest.raises(webhdfs.HdfsError, match='already exists'):
        client.write('/facts/one', data=b'two', overwrite=False)
    client.write('/facts/new', data=b'new', overwrite=False)
    with pytest.raises(webhdfs.HdfsError, match='Unable to rename'):
        client.rename('/facts/new', '/facts/one')
    client._rename('/facts/new', destination='/facts/one', renameoptions='OVERWRITE')
    with client.read('/facts/one') as reader:
        assert reader.read() == b'new'
    client.rename('/facts/one', '/facts/dir')                # into the directory
    assert client.list('/facts') == ['dir'] and client.list('/facts/dir') == ['one']
    client.delete('/facts', recursive=True)


def listening_sockets(pid):
    """(address, port) of every TCP socket that process `pid` listens on (from /proc)."""
    inodes = set()
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            continue
        if target.startswith('socket:['):
            inodes.add(target[len('socket:['):-1])
    found = []
    for table, family in (('/proc/net/tcp', socket.AF_INET), ('/proc/net/tcp6', socket.AF_INET6)):
        with open(table, encoding='ascii') as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] != '0A' or fields[9] not in inodes:        # 0A: LISTEN
                    continue
                address, port = fields[1].split(':')
                raw = bytes.fromhex(address)
                # /proc prints each 32-bit word in host (little-endian) order
                raw = b''.join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.append((socket.inet_ntop(family, raw), int(port, 16)))
    return found


def _user():
    import getpass
    return getpass.getuser()


# -- without a cluster -----------------------------------------------------------------------

def prepared_home(path):
    """A home in which `prepare` finds the MiniDFSCluster built: empty stand-ins, enough for
    what `start` checks before it starts anything."""
    build = os.path.join(str(path), 'minicluster')
    for folder in (os.path.join(build, 'target', 'classes'), os.path.join(build, 'target', 'lib')):
        os.makedirs(folder)
    with open(os.path.join(build, 'project.sha256'), 'w', encoding='ascii') as f:
        f.write(minicluster_digest())
    return str(path)


def test_the_beam_options_name_the_chosen_webhdfs_port(tmp_path):
    hdfs = LocalHdfs(str(tmp_path), ports={'http': 19870})
    assert hdfs.options() == ['--hdfs_host', '127.0.0.1', '--hdfs_port', '19870',
                              '--hdfs_user', _user()]
    assert hdfs.ports['rpc'] == 8020                                    # the default
    assert hdfs.status() == 'stopped' and not hdfs.running()


@needs_java
@pytest.mark.parametrize('name,how', [('rpc', 'option'), ('http', 'config')])
def test_a_busy_port_gives_one_line_naming_it_and_the_option(tmp_path, name, how):
    home = prepared_home(tmp_path / 'home')
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen()
        # The free ports are chosen while the busy one is held: none of them can be it.
        ports = dict(zip(('rpc', 'http'), free_ports(2)))
        ports[name] = busy.getsockname()[1]
        choices = []
        for other, port in ports.items():
            choices += ([f'--{other}-port', str(port)] if how == 'option' or other != name
                        else ['-D', f'runner.hdfs.port.{other}={port}'])
        proc = hdfs_cli('start', '--home', home, *choices,
                        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / 'state')))
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f'beamcrawl hdfs: port {ports[name]} (')
    assert line.endswith(f'is in use by another program: choose another with `beamcrawl hdfs '
                         f'start --{name}-port PORT` (or the config key runner.hdfs.port.{name})')
    assert 'Traceback' not in proc.stderr
    assert not os.path.exists(os.path.join(home, 'run', 'hdfs.pid'))
