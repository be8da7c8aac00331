"""beamcrawl's local S3-compatible store, SeaweedFS (`beamcrawl s3 start|stop|status`): run for
real. The first run on a machine builds `weed` from the Go module proxy's source into the user's
cache folder (runners/s3build.py: minutes, 3.9 GB of Go caches); later runs, and other clones,
reuse it. One xdist worker runs these tests in order, against one store on ports of their own in
a home of their own, beside the other tests."""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from beamcrawl.transforms.runners.locals3 import (BUCKET, GRPC_OFFSET, PORTS, REGION, LocalS3,
                                                  pid_alive)
from beamcrawl.transforms.runners.s3build import S3Build
from tests.conftest import ROOT
from tests.stores import free_port_pairs

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.xdist_group('stores'),
              pytest.mark.skipif(shutil.which('go') is None and not S3Build().built(),
                                 reason='needs go on PATH to build SeaweedFS')]


def free_store_ports():
    """A free port for each of the store's services, with its gRPC port (port + GRPC_OFFSET)
    free too; all differ (tests/stores.py free_port_pairs)."""
    return dict(zip(PORTS, free_port_pairs(len(PORTS), GRPC_OFFSET)))


def s3_cli(*args, cwd=ROOT, env=None):
    """`beamcrawl s3 ARGS` in a subprocess (pytest's timeout guards against a hang)."""
    return subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 's3', *args],
                          capture_output=True, text=True, cwd=cwd, env=env)


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


@pytest.fixture(scope='module')
def home(tmp_path_factory):
    """A home of the tests' own (data, identity, run/ apart from the user's store), `weed` built
    (once per user)."""
    S3Build().prepare()
    return str(tmp_path_factory.mktemp('s3home'))


@pytest.fixture(scope='module')
def started(home):
    """`beamcrawl s3 start` on free ports: (the store, its stdout lines)."""
    ports = free_store_ports()
    env = {k: v for k, v in os.environ.items() if k != 'BEAMCRAWL_S3_HOME'}
    proc = s3_cli('start', '--home', home,
                  *[a for name, port in ports.items() for a in (f'--{name}-port', str(port))],
                  env=env)
    store = LocalS3(home)
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert store.ports == ports
        yield store, proc.stdout.strip().splitlines()
    finally:
        store.stop()


def test_start_prints_where_it_listens_the_prefix_and_last_the_options(started):
    store, lines = started
    assert lines[-1].split() == [
        '--s3_endpoint_url', f'http://127.0.0.1:{store.ports["s3"]}',
        '--s3_access_key_id', store.credentials()['access_key_id'],
        f'--s3_secret_access_key={store.credentials()["secret_access_key"]}',
        '--s3_region_name', REGION]
    text = '\n'.join(lines)
    assert f's3://{BUCKET}/' in text
    for name in PORTS:
        assert f'127.0.0.1:{store.ports[name]}' in text
    assert oct(os.stat(store.identity_file).st_mode & 0o777) == '0o600'


def test_status_and_a_second_start_from_another_directory_find_the_store(started,
                                                                         tmp_path):
    store, lines = started
    env = {k: v for k, v in os.environ.items() if k != 'BEAMCRAWL_S3_HOME'}
    status = s3_cli('status', cwd=str(tmp_path), env=env)
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.startswith(f'SeaweedFS: running (pid {store.pid()})')
    assert status.stdout.strip().splitlines()[-1] == lines[-1]
    again = s3_cli('start', cwd=str(tmp_path), env=env)       # default ports asked: recorded win
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip().splitlines()[-1] == lines[-1]
    assert LocalS3(store.home).pid() == store.pid()


def _listening(pid):
    """(address, port) of every TCP socket process `pid` listens on (from /proc)."""
    inodes = set()
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            continue
        if target.startswith('socket:['):
            inodes.add(target[8:-1])
    found = set()
    for table, size in (('tcp', 4), ('tcp6', 16)):
        with open(f'/proc/net/{table}', encoding='ascii') as f:
            for row in f.read().splitlines()[1:]:
                fields = row.split()
                if fields[3] != '0A' or fields[9] not in inodes:        # 0A: LISTEN
                    continue
                hex_address, hex_port = fields[1].split(':')
                raw = bytes.fromhex(hex_address)
                if size == 4:
                    address = socket.inet_ntop(socket.AF_INET, raw[::-1])
                else:
                    raw = b''.join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    address = socket.inet_ntop(socket.AF_INET6, raw)
                found.add((address, int(hex_port, 16)))
    return found


def test_every_listener_is_on_loopback_and_a_chosen_port(started):
    store, _ = started
    listening = _listening(store.pid())
    expected = {p for port in store.ports.values() for p in (port, port + GRPC_OFFSET)}
    assert {port for _, port in listening} == expected, listening
    assert {address for address, _ in listening} == {'127.0.0.1'}, listening


def test_an_object_written_and_read_back_through_beams_filesystems(started):
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions
    store, lines = started
    saved = getattr(FileSystems, '_pipeline_options', None)
    FileSystems.set_options(PipelineOptions(lines[-1].split()))
    try:
        root = f'{store.prefix()}test-beam'
        FileSystems.delete([root + '/'])
        for name, data in (('a/part-00000.avro', b'A' * 1000), ('a/b/part-00001.avro', b'B')):
            with FileSystems.create(f'{root}/{name}') as f:
                f.write(data)
        with FileSystems.open(f'{root}/a/part-00000.avro') as f:
            assert f.read() == b'A' * 1000
        found = FileSystems.match([f'{root}/**'])[0].metadata_list
        assert sorted((m.path, m.size_in_bytes) for m in found) == [
            (f'{root}/a/b/part-00001.avro', 1), (f'{root}/a/part-00000.avro', 1000)]
        FileSystems.rename([f'{root}/a/b/part-00001.avro'], [f'{root}/c.avro'])
        assert not FileSystems.exists(f'{root}/a/b/part-00001.avro')
        assert FileSystems.exists(f'{root}/c.avro')
        FileSystems.delete([root + '/'])
        assert FileSystems.match([f'{root}/**'])[0].metadata_list == []
    finally:
        FileSystems.set_options(saved)


def test_conditional_writes_through_boto3(started):
    from botocore.exceptions import ClientError
    store, _ = started
    client, key = store.client(), 'test-conditional/marker'
    client.delete_object(Bucket=BUCKET, Key=key)

    def refused(**kwargs):
        with pytest.raises(ClientError) as e:
            client.put_object(Bucket=BUCKET, Key=key, **kwargs)
        return e.value.response['ResponseMetadata']['HTTPStatusCode']

    first = client.put_object(Bucket=BUCKET, Key=key, Body=b'one', IfNoneMatch='*')['ETag']
    assert refused(Body=b'two', IfNoneMatch='*') == 412            # an exclusive create
    second = client.put_object(Bucket=BUCKET, Key=key, Body=b'three', IfMatch=first)['ETag']
    assert refused(Body=b'four', IfMatch=first) == 412             # compare-and-swap
    assert client.get_object(Bucket=BUCKET, Key=key)['Body'].read() == b'three'
    assert client.head_object(Bucket=BUCKET, Key=key)['ETag'] == second
    client.delete_object(Bucket=BUCKET, Key=key)


def test_a_busy_port_gives_one_line_naming_it_before_anything_starts(home, tmp_path):
    other = str(tmp_path / 'home')
    ports = free_store_ports()
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', ports['filer'] + GRPC_OFFSET))
        busy.listen()
        proc = s3_cli('start', '--home', other,
                      *[a for name, port in ports.items() for a in (f'--{name}-port', str(port))])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"beamcrawl s3: port {ports['filer'] + GRPC_OFFSET} (SeaweedFS's filer, gRPC) is in use "
        f"by another program: choose another with `beamcrawl s3 start --filer-port PORT` (or "
        f"the config key runner.s3.port.filer; gRPC listens on PORT + {GRPC_OFFSET})")
    assert not LocalS3(other).running() and not os.path.exists(LocalS3(other).pid_file)


def test_stop_stops_exactly_what_start_started_and_then_nothing(started, tmp_path):
    store, _ = started
    pid, ports = store.pid(), dict(store.ports)
    env = {k: v for k, v in os.environ.items() if k != 'BEAMCRAWL_S3_HOME'}
    proc = s3_cli('stop', cwd=str(tmp_path), env=env)          # the home found from elsewhere
    assert proc.stdout.strip() == f'stopped: SeaweedFS (pid {pid})', proc.stdout + proc.stderr
    assert not pid_alive(pid)
    assert not [n for n in os.listdir('/tmp')
                if n.startswith('seaweedfs-') and
                any(n.endswith(f'-{p + GRPC_OFFSET}.sock') for p in ports.values())]
    assert s3_cli('stop', cwd=str(tmp_path), env=env).stdout.strip() == 'nothing was running'
    status = s3_cli('status', cwd=str(tmp_path), env=env)
    assert (status.returncode, status.stdout.strip()) == (3, 'SeaweedFS: stopped')
    assert os.listdir(store.data_dir)                       # the objects stay


def test_a_pid_file_naming_another_program_is_not_the_store(tmp_path):
    store = LocalS3(str(tmp_path))
    os.makedirs(store.run_dir)
    with open(store.pid_file, 'w', encoding='ascii') as f:
        f.write(f'{os.getpid()}\n')           # a live process, but not this home's weed
    assert not store.running() and store.status() == 'stopped'
    assert store.stop() == [] and pid_alive(os.getpid())
    assert not os.path.exists(store.pid_file)



def test_the_options_carry_a_secret_that_begins_with_a_dash(tmp_path):
    """A store whose secret begins with '-' (token_urlsafe makes one in 64, and earlier homes
    keep theirs): the options still give it to Beam."""
    from apache_beam.options.pipeline_options import PipelineOptions, S3Options
    store = LocalS3(str(tmp_path))
    with open(store.identity_file, 'w', encoding='utf-8') as f:
        json.dump({'identities': [{'name': 'beamcrawl', 'credentials': [
            {'accessKey': 'BCKEY', 'secretKey': '-dash_first-key'}]}]}, f)
    options = PipelineOptions(store.options()).view_as(S3Options)
    assert options.s3_secret_access_key == '-dash_first-key'
    assert options.s3_access_key_id == 'BCKEY'
