"""A local S3-compatible store for beamcrawl: SeaweedFS (Apache-2.0), `beamcrawl s3
start|stop|status` (./run_local.sh --s3 ...).

Everything lives in one folder, the home (`--home DIR`; else BEAMCRAWL_S3_HOME; else the home the
last `start` used, recorded per user, so that `status` and `stop` find a running store from any
directory; else `.s3/` beside the source tree):

  s3.json          the store's one identity (an access key and its secret, made at the first
                   `start`, readable by the user only): SeaweedFS's -s3.config
  data/            the objects (SeaweedFS's master, volume and filer data): kept by `stop`
  run/             the pid file, the ports `start` chose (server.json), the logs

The `weed` binary is built once per user, outside the home (runners/s3build.py: the user's cache
folder, shared by every checkout and home).

`start` runs one `weed server` process (master, volume server, filer, S3 gateway), every
listener of it on 127.0.0.1 only (HTTP and gRPC ports, the embedded Iceberg and Lance
catalogs turned off), with SeaweedFS's telemetry off; creates the bucket `crawl`; and returns
once an object can be written and read back. The Beam options `options()` gives configure
Beam's S3 filesystem (apache-beam[aws]) for it: a crawl directory `s3://crawl/NAME` then works
with any beamcrawl command. `stop` stops exactly the process whose pid `start` recorded. Both
are idempotent.
"""

import json
import logging
import os
import secrets
import subprocess
import time
from typing import Dict, List, Optional

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners.s3build import S3Build
from beamcrawl.transforms.runners.services import (default_home, host_port, port_open, port_taken,
                                                   remember_home, terminate)
from beamcrawl.transforms.storage.locks import process_alive as pid_alive

__all__ = ['LocalS3', 'PORTS', 'DEFAULT_PORTS', 'GRPC_OFFSET', 'BIND', 'BUCKET', 'REGION',
           'pid_alive']

log = logging.getLogger('beamcrawl')

# The HTTP port of each part of `weed server`, name -> (default, what listens there): SeaweedFS's
# own defaults. Each part also listens for gRPC on its port + GRPC_OFFSET (SeaweedFS's
# convention, set explicitly here). `beamcrawl s3 start --NAME-port N` or the config key
# runner.s3.port.NAME chooses another.
PORTS = {'s3': (8333, 'the S3 API'),
         'master': (9333, "SeaweedFS's master"),
         'volume': (8080, "SeaweedFS's volume server"),
         'filer': (8888, "SeaweedFS's filer")}
DEFAULT_PORTS = {name: port for name, (port, _) in PORTS.items()}
GRPC_OFFSET = 10000
# Loopback only: the store has one identity, but its master, volume server and filer answer
# anyone who reaches them, without credentials.
BIND = '127.0.0.1'
BUCKET = 'crawl'
REGION = 'us-east-1'        # SeaweedFS ignores it; boto3 signs with it
# A safety net against a process that neither answers nor exits (not a measure of speed: start
# returns as soon as the store answers).
_READY_TIMEOUT_S = 180.0
_PROBE_KEY = '.beamcrawl-s3-ready'
_STOP_GRACE_S = 60.0        # SIGTERM, then SIGKILL if still running after this


class LocalS3:
    """The home and the process of one local S3-compatible store."""

    def __init__(self, home: Optional[str] = None, ports: Optional[Dict[str, int]] = None,
                 build_dir: Optional[str] = None):
        """`ports` (by PORTS name; the others default) are what a `start` of a stopped store
        uses. While the store runs, its recorded ones are used instead. `build_dir`: where
        `weed` is built (default: s3build.default_build_dir())."""
        self.home = os.path.abspath(home or default_home('s3'))
        self.build = S3Build(build_dir)
        self.data_dir = os.path.join(self.home, 'data')
        self.run_dir = os.path.join(self.home, 'run')
        self.log_dir = os.path.join(self.run_dir, 'log')
        self.pid_file = os.path.join(self.run_dir, 'weed.pid')
        self.record = os.path.join(self.run_dir, 'server.json')
        self.identity_file = os.path.join(self.home, 's3.json')
        self.wanted = {**DEFAULT_PORTS, **(ports or {})}
        self.ports = self._recorded() or dict(self.wanted)

    def _recorded(self) -> Optional[Dict[str, int]]:
        """The ports recorded by the `start` of the store that runs."""
        return self._read_record() if self.running() else None

    def _read_record(self) -> Optional[Dict[str, int]]:
        try:
            with open(self.record, encoding='utf-8') as f:
                recorded = json.load(f)
            return {name: int(recorded['ports'][name]) for name in PORTS}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- what clients use ---------------------------------------------------------------------
    def endpoint(self) -> str:
        return f'http://{host_port(BIND, self.ports["s3"])}'

    @staticmethod
    def prefix() -> str:
        """Where crawl directories go: s3://crawl/NAME."""
        return f's3://{BUCKET}/'

    def credentials(self) -> Dict[str, str]:
        """{'access_key_id', 'secret_access_key'} of the store's identity (made by `start`)."""
        try:
            with open(self.identity_file, encoding='utf-8') as f:
                identity = json.load(f)['identities'][0]['credentials'][0]
            return {'access_key_id': identity['accessKey'],
                    'secret_access_key': identity['secretKey']}
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            raise UserError(f'no credentials in {self.identity_file}: `beamcrawl s3 start` '
                            f'makes them') from None

    def options(self) -> List[str]:
        """The Beam options that point Beam's S3 filesystem at this store."""
        keys = self.credentials()
        # The secret joined by '=': one that begins with '-' (token_urlsafe makes one in 64)
        # would otherwise read as an option of its own.
        return ['--s3_endpoint_url', self.endpoint(),
                '--s3_access_key_id', keys['access_key_id'],
                f'--s3_secret_access_key={keys["secret_access_key"]}',
                '--s3_region_name', REGION]

    def client(self):
        """A boto3 S3 client of this store (for checks and tests; beamcrawl's commands use Beam's
        own S3 client, configured by options())."""
        import boto3
        from botocore.config import Config
        keys = self.credentials()
        return boto3.client('s3', endpoint_url=self.endpoint(), region_name=REGION,
                            aws_access_key_id=keys['access_key_id'],
                            aws_secret_access_key=keys['secret_access_key'],
                            config=Config(connect_timeout=5, read_timeout=30,
                                          retries={'max_attempts': 1}))

    def listening(self) -> str:
        """What listens where, in one line."""
        return ', '.join(f'{what} on {host_port(BIND, self.ports[name])} (gRPC '
                         f'{self.ports[name] + GRPC_OFFSET})' for name, (_, what) in PORTS.items())

    # -- the process ----------------------------------------------------------------------------
    def pid(self) -> Optional[int]:
        try:
            with open(self.pid_file, encoding='ascii') as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        pid = self.pid()
        return pid is not None and pid_alive(pid) and self._ours(pid)

    def _ours(self, pid: int) -> bool:
        """Whether process `pid` is a `weed` serving this home's data (and not another program
        that got the pid of a store that died without `stop`). True where /proc cannot tell."""
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                argv = [os.fsdecode(a) for a in f.read().split(b'\0')]
        except OSError:
            return True
        return os.path.basename(argv[0]).startswith('weed') and f'-dir={self.data_dir}' in argv

    def status(self) -> str:
        """'running (pid N): what listens where' or 'stopped'."""
        if not self.running():
            return 'stopped'
        return f'running (pid {self.pid()}): {self.listening()}'

    def prepare(self) -> None:
        """Builds the `weed` binary, once (runners/s3build.py)."""
        self.build.prepare()

    def start(self) -> None:
        """Builds what is missing, starts the store unless it runs, makes the bucket, and waits
        until an object can be written and read back."""
        self.prepare()
        os.makedirs(self.run_dir, exist_ok=True)
        if self.running():
            if self.ports != self.wanted:
                log.info('s3: the store in %s runs with its recorded ports; `beamcrawl s3 stop` '
                         'first to change them', self.home)
        else:
            self.ports = _checked(self.wanted)
            for name, port in self.ports.items():       # fail before starting anything
                for number, kind in ((port, 'HTTP'), (port + GRPC_OFFSET, 'gRPC')):
                    if port_taken(BIND, number):
                        raise UserError(
                            f'port {number} ({PORTS[name][1]}, {kind}) is in use by another '
                            f'program: choose another with `beamcrawl s3 start --{name}-port '
                            f'PORT` (or the config key runner.s3.port.{name}; gRPC listens on '
                            f'PORT + {GRPC_OFFSET})')
            self._write_identity()
            with open(self.record, 'w', encoding='utf-8') as f:
                json.dump({'ports': self.ports}, f)
            remember_home('s3', self.home)
            self._spawn()
        self._wait_ready()

    def _write_identity(self) -> None:
        """SeaweedFS's -s3.config: one identity with every right, its keys made once."""
        if os.path.exists(self.identity_file):
            self.credentials()                  # a damaged file: one line, not a traceback
            return
        config = {'identities': [{
            'name': 'beamcrawl',
            'credentials': [{'accessKey': 'BC' + secrets.token_hex(9).upper(),
                             'secretKey': 'S' + secrets.token_urlsafe(30)}],
            'actions': ['Admin', 'Read', 'Write', 'List', 'Tagging']}]}
        partial = self.identity_file + '.partial'
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            json.dump(config, f, indent=2)
        os.replace(partial, self.identity_file)

    def argv(self) -> List[str]:
        """The `weed server` command line."""
        p = self.ports
        argv = [self.build.binary, f'-logdir={self.log_dir}', '-alsologtostderr=false',
                '-log_max_size_mb=64', '-log_max_files=2', 'server',
                f'-ip={BIND}', f'-ip.bind={BIND}', f'-dir={self.data_dir}',
                '-master.telemetry=false',            # no usage reports to seaweedfs.com
                '-master.volumeSizeLimitMB=1024', '-volume.max=0',  # volumes as the disk allows
                # One master: no peer to wait for before it leads again (a restart waited 13 s
                # with the default 10 s), no load balancer to drain the volume server from.
                '-master.electionTimeout=1s', '-volume.preStopSeconds=0',
                '-filer', '-s3', f'-s3.config={self.identity_file}',
                '-s3.port.iceberg=0', '-s3.port.lance=0',           # no catalogs
                f'-filer.localSocket={os.path.join(self.run_dir, "filer.sock")}',
                f'-s3.localSocket={os.path.join(self.run_dir, "s3.sock")}']
        for name in PORTS:
            argv += [f'-{name}.port={p[name]}', f'-{name}.port.grpc={p[name] + GRPC_OFFSET}']
        return argv

    def _spawn(self) -> None:
        os.makedirs(self.data_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)
        log.info('s3: starting SeaweedFS (master, volume server, filer, S3 API) on %s', BIND)
        with open(os.path.join(self.run_dir, 'weed.out'), 'ab') as out:
            proc = subprocess.Popen(self.argv(), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=self.run_dir)
        with open(self.pid_file, 'w', encoding='ascii') as f:
            f.write(f'{proc.pid}\n')

    def _wait_ready(self) -> None:
        """Until the bucket exists and an object in it can be written, read and deleted. The S3
        API answers reads about 2 s after the process starts, but SeaweedFS's master holds the
        first write until its volume server has reported: about 10 s on a first start, and 15 s
        after the master leads again on a restart with data (its warm-up, not configurable)."""
        deadline = time.time() + _READY_TIMEOUT_S
        client, last = self.client(), 'no answer yet'
        while True:
            if not self.running():
                raise UserError(f'SeaweedFS stopped while starting; see {self.run_dir}/weed.out '
                                f'and the logs in {self.log_dir}')
            try:
                _ensure_bucket(client)
                client.put_object(Bucket=BUCKET, Key=_PROBE_KEY, Body=b'ready')
                if client.get_object(Bucket=BUCKET, Key=_PROBE_KEY)['Body'].read() == b'ready':
                    client.delete_object(Bucket=BUCKET, Key=_PROBE_KEY)
                    return
            except Exception as e:  # pylint: disable=broad-except  (botocore's many kinds)
                last = f'{type(e).__name__}: {e}'
            if time.time() > deadline:
                raise UserError(f'the S3 API did not become ready within '
                                f'{_READY_TIMEOUT_S:.0f} s ({last}); see the logs in '
                                f'{self.log_dir}')
            time.sleep(0.2)

    def stop(self) -> List[str]:
        """Stops the recorded process; returns what was stopped. The data stays."""
        stopped = []
        pid = self.pid()
        if self.running():
            # SeaweedFS stops its volume server first; its filer then waits 15 s for a volume to
            # flush its metadata change log to, and gives up: an exit (0) after about 15 s.
            terminate(pid, grace_s=_STOP_GRACE_S)
            stopped.append(f'SeaweedFS (pid {pid})')
        leftovers = [self.pid_file, self.record, os.path.join(self.run_dir, 'filer.sock'),
                     os.path.join(self.run_dir, 's3.sock')]
        recorded = self._read_record()
        # `weed server` makes a socket per gRPC port in /tmp, whatever it is told: removed unless
        # another program holds one of those ports now (its socket, then)
        if recorded and (stopped or not any(port_open(BIND, p) for p in recorded.values())):
            leftovers += [f'/tmp/seaweedfs-{name}-grpc-{recorded[name] + GRPC_OFFSET}.sock'
                          for name in PORTS]
        for path in leftovers:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
        return stopped


def _ensure_bucket(client) -> None:
    from botocore.exceptions import ClientError
    try:
        client.head_bucket(Bucket=BUCKET)
        return
    except ClientError as e:
        if e.response.get('Error', {}).get('Code') not in ('404', 'NoSuchBucket', 'NotFound'):
            raise
    try:
        client.create_bucket(Bucket=BUCKET)
    except ClientError as e:
        if e.response.get('Error', {}).get('Code') not in ('BucketAlreadyOwnedByYou',
                                                            'BucketAlreadyExists'):
            raise


def _checked(ports: Dict[str, int]) -> Dict[str, int]:
    for name, port in ports.items():
        if not 0 < port <= 65535 - GRPC_OFFSET:
            raise UserError(f'--{name}-port {port}: a port from 1 to {65535 - GRPC_OFFSET} (its '
                            f'gRPC port is {GRPC_OFFSET} above it)')
    every = list(ports.values()) + [p + GRPC_OFFSET for p in ports.values()]
    if len(set(every)) < len(every):
        raise UserError(f'the store\'s ports and their gRPC ports (+{GRPC_OFFSET}) must all '
                        f'differ: {ports}')
    return dict(ports)
