"""A local HDFS for beamcrawl: `beamcrawl hdfs start|stop|status` (./run_local.sh --hdfs ...).

One JVM runs Hadoop's MiniDFSCluster, a NameNode and one DataNode, through a main class of our
own (conf/hdfs-minicluster/: MiniHdfs.java) that binds every port to 127.0.0.1: permissions are
off, so whoever reaches it can read and delete everything in it. Everything lives in one folder,
the home (`--home DIR`; else BEAMCRAWL_HDFS_HOME; else the home the last `start` used, recorded
per user, so that `status` and `stop` find it from any directory; else `.hdfs/` beside the source
tree):

  minicluster/   the Maven project, built once (again when conf/hdfs-minicluster/ changes):
                 target/classes and target/lib/ (hadoop-client-minicluster 3.5.0 and its
                 dependencies, about 105 MB)
  data/          the cluster's storage (NameNode metadata, DataNode blocks): kept by `stop`,
                 found again by the next `start` (delete the folder to start empty)
  run/           hdfs.pid, hdfs.log, hdfs.json (the ports `start` chose), ready.json (written
                 by the JVM once the cluster works); run/tmp/ is the JVM's temporary folder,
                 removed by `stop`

`start` returns once the NameNode is out of safe mode, the DataNode has registered and WebHDFS
answers. Beam's HadoopFileSystem (apache-beam[hadoop]: the `hdfs` package, a WebHDFS client)
reaches it with the options of `options()`; its paths are `hdfs://PATH`, where the first
component is part of the path, not a host (`hdfs://crawl` is /crawl: the options name the
NameNode; --hdfs_full_urls is not needed).
"""

import getpass
import json
import logging
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Dict, List, Optional

from beamcrawl.transforms.base.config import bundled_conf_dir
from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners.services import (building, default_home, folder_digest,
                                                   host_port, need_java, port_taken, read_text,
                                                   remember_home, terminate)
from beamcrawl.transforms.storage.locks import process_alive

__all__ = ['LocalHdfs', 'PORTS', 'DEFAULT_PORTS', 'BIND', 'HADOOP_VERSION', 'PREFIX',
           'minicluster_digest']

log = logging.getLogger('beamcrawl')

HADOOP_VERSION = '3.5.0'
# Every port of the cluster listens here: permissions are off (dfs.permissions.enabled=false).
BIND = '127.0.0.1'
# The ports `start` chooses, name -> (default, what listens there); the DataNode's are chosen at
# random. `beamcrawl hdfs start --NAME-port N` or the config key runner.hdfs.port.NAME.
PORTS = {'rpc': (8020, "the NameNode's RPC"),
         'http': (9870, "the NameNode's HTTP server (WebHDFS)")}
DEFAULT_PORTS = {name: port for name, (port, _) in PORTS.items()}
# Beam's HadoopFileSystem paths: hdfs://PATH, PATH on this HDFS (no host: the options name it).
PREFIX = 'hdfs://'
_MAIN = 'org.beamcrawl.hdfs.MiniHdfs'
_READY_TIMEOUT_S = 180.0


class LocalHdfs:
    """The home folder and the process of one local HDFS."""

    def __init__(self, home: Optional[str] = None, ports: Optional[Dict[str, int]] = None):
        """`ports` (by PORTS name; the others default) are what a `start` of a stopped HDFS
        uses; while it runs, its recorded ones are used instead."""
        self.home = os.path.abspath(home or default_home('hdfs'))
        self.build_dir = os.path.join(self.home, 'minicluster')
        self.classes = os.path.join(self.build_dir, 'target', 'classes')
        self.lib = os.path.join(self.build_dir, 'target', 'lib')
        self.digest = os.path.join(self.build_dir, 'project.sha256')
        self.data_dir = os.path.join(self.home, 'data')
        self.run_dir = os.path.join(self.home, 'run')
        self.tmp_dir = os.path.join(self.run_dir, 'tmp')
        self.pid_file = os.path.join(self.run_dir, 'hdfs.pid')
        self.log_file = os.path.join(self.run_dir, 'hdfs.log')
        self.record = os.path.join(self.run_dir, 'hdfs.json')
        self.ready_file = os.path.join(self.run_dir, 'ready.json')
        self.wanted = {**DEFAULT_PORTS, **(ports or {})}
        self.ports = self._recorded() or self.wanted

    # -- what clients use ----------------------------------------------------------------------
    def options(self) -> List[str]:
        """The Beam options that reach this HDFS (Beam's HadoopFileSystem talks WebHDFS)."""
        return ['--hdfs_host', BIND, '--hdfs_port', str(self.ports['http']),
                '--hdfs_user', getpass.getuser()]

    @staticmethod
    def prefix() -> str:
        """What a crawl directory on this HDFS starts with: hdfs://PATH."""
        return PREFIX

    def listening(self) -> str:
        """What listens where, in one line."""
        here = ', '.join(f'{what} on {host_port(BIND, self.ports[name])}'
                         for name, (_, what) in PORTS.items())
        ready = self._ready()
        if ready:
            here += ', the DataNode\'s ' + ', '.join(
                f'{what} on {host_port(BIND, ready["datanode"][key])}'
                for key, what in (('data', 'data transfer'), ('http', 'HTTP'), ('ipc', 'IPC')))
        return here + f' (and its internal HTTP server on a random port): {BIND} only'

    # -- the build -----------------------------------------------------------------------------
    def prepare(self) -> None:
        """Builds the MiniDFSCluster with Maven, once (again when its Maven project changed)."""
        _need_java()
        with building(self.build_dir):
            if not os.path.isdir(self.lib) or not os.path.isdir(self.classes) or \
                    read_text(self.digest) != minicluster_digest():
                self._build()

    def _build(self) -> None:
        mvn = shutil.which('mvn')
        if mvn is None:
            raise UserError('Maven is needed once to build the local HDFS: `mvn` is not on PATH '
                            '(Debian: apt-get install maven)')
        os.makedirs(self.build_dir, exist_ok=True)
        if os.path.exists(self.digest):
            os.remove(self.digest)
        for old in ('src', 'target'):
            shutil.rmtree(os.path.join(self.build_dir, old), ignore_errors=True)
        shutil.copytree(_project(), self.build_dir, dirs_exist_ok=True)
        build_log = os.path.join(self.build_dir, 'build.log')
        log.info('hdfs: building a MiniDFSCluster of Hadoop %s with Maven (once; about 110 MB '
                 'of downloads, log in %s)', HADOOP_VERSION, build_log)
        with open(build_log, 'wb') as out:
            code = subprocess.call([mvn, '-B', '-q', 'package', '-DskipTests'],
                                   cwd=self.build_dir, stdout=out, stderr=subprocess.STDOUT)
        if code != 0 or not os.path.isdir(self.lib):
            raise UserError(f'building the local HDFS with Maven failed (exit {code}); see '
                            f'{build_log}')
        with open(self.digest, 'w', encoding='ascii') as f:
            f.write(minicluster_digest())

    # -- the process ---------------------------------------------------------------------------
    def pid(self) -> Optional[int]:
        text = read_text(self.pid_file)
        return int(text) if text and text.isdigit() else None

    def running(self) -> bool:
        pid = self.pid()
        return pid is not None and process_alive(pid)

    def status(self) -> str:
        """'running (pid N): ...ports' or 'stopped'."""
        if not self.running():
            return 'stopped'
        return f'running (pid {self.pid()}): {self.listening()}'

    def _recorded(self) -> Optional[Dict[str, int]]:
        """The ports recorded by the `start` of an HDFS that still runs."""
        if not self.running():
            return None
        try:
            with open(self.record, encoding='utf-8') as f:
                recorded = json.load(f)
            return {name: int(recorded['ports'][name]) for name in PORTS}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _ready(self) -> Optional[dict]:
        try:
            with open(self.ready_file, encoding='utf-8') as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def start(self) -> None:
        """Builds what is missing, starts the HDFS unless it runs, waits until it works. A
        running HDFS is left as it is (not rebuilt under it)."""
        os.makedirs(self.run_dir, exist_ok=True)
        remember_home('hdfs', self.home)
        if self.running():
            self.ports = self._recorded() or self.ports
            if self.ports != self.wanted:
                log.info('hdfs: the HDFS in %s runs with its recorded ports; `beamcrawl hdfs '
                         'stop` first to change them', self.home)
            self._wait_ready()
            return
        self.prepare()
        self.ports = _checked(self.wanted)
        for name, port in self.ports.items():        # fail before starting anything
            if port_taken(BIND, port):
                raise UserError(f'port {port} ({PORTS[name][1]}) is in use by another program: '
                                f'choose another with `beamcrawl hdfs start --{name}-port PORT` '
                                f'(or the config key runner.hdfs.port.{name})')
        with open(self.record, 'w', encoding='utf-8') as f:
            json.dump({'ports': self.ports}, f)
        for stale in (self.ready_file, self.pid_file):
            if os.path.exists(stale):
                os.remove(stale)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        os.makedirs(self.tmp_dir)
        os.makedirs(self.data_dir, exist_ok=True)
        log.info('hdfs: starting a NameNode and a DataNode (Hadoop %s) in %s', HADOOP_VERSION,
                 self.data_dir)
        argv = [shutil.which('java') or 'java', f'-Djava.io.tmpdir={self.tmp_dir}',
                '-cp', os.pathsep.join([self.classes, os.path.join(self.lib, '*')]), _MAIN,
                '--base', self.data_dir, '--rpc-port', str(self.ports['rpc']),
                '--http-port', str(self.ports['http']), '--ready', self.ready_file]
        with open(self.log_file, 'ab') as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=self.run_dir)
        with open(self.pid_file, 'w', encoding='ascii') as f:
            f.write(f'{proc.pid}\n')
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Until the JVM says the cluster is up and WebHDFS answers for the user of options()."""
        deadline = time.time() + _READY_TIMEOUT_S
        while not (self._ready() and self.answers()):
            if not self.running():
                raise UserError(f'the local HDFS stopped while starting; see {self.log_file}')
            if time.time() > deadline:
                raise UserError(f'the local HDFS did not become ready within '
                                f'{_READY_TIMEOUT_S:.0f} s; see {self.log_file}')
            time.sleep(0.2)

    def answers(self) -> bool:
        """Whether WebHDFS lists the root directory."""
        query = urllib.parse.urlencode({'op': 'LISTSTATUS', 'user.name': getpass.getuser()})
        url = f'http://{host_port(BIND, self.ports["http"])}/webhdfs/v1/?{query}'
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status == 200 and 'FileStatuses' in json.load(resp)
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def stop(self) -> List[str]:
        """Stops the recorded process (the cluster shuts down on SIGTERM); returns what was
        stopped. The data stays."""
        stopped = []
        pid = self.pid()
        if pid is not None and process_alive(pid):
            terminate(pid)
            stopped.append(f'hdfs (pid {pid})')
        for path in (self.pid_file, self.ready_file, self.record):
            if os.path.exists(path):
                os.remove(path)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        return stopped


def _checked(ports: Dict[str, int]) -> Dict[str, int]:
    for name, port in ports.items():
        if not 0 < port < 65536:
            raise UserError(f'--{name}-port {port}: a port is a number from 1 to 65535')
    if len(set(ports.values())) < len(ports):
        raise UserError(f'the HDFS ports must differ: {ports}')
    return dict(ports)


def _project() -> str:
    return os.path.join(bundled_conf_dir(), 'hdfs-minicluster')


def minicluster_digest() -> str:
    """A digest of the Maven project: a build of another one is rebuilt."""
    return folder_digest(_project())


def _need_java() -> None:
    need_java(17, f'the local HDFS (Hadoop {HADOOP_VERSION})')
