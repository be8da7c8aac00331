"""A local Flink cluster for beamcrawl: `beamcrawl flink start|stop|status` (./run_local.sh
--flink ...).

Everything lives in one cache folder, the home (`--home DIR`; else BEAMCRAWL_FLINK_HOME; else
the home the last `start` used, recorded per user, so that `status` and `stop` find a running
cluster from any directory; else `.flink/` beside the source tree):

  job-server/, flink-1.19.3/, downloads/   what runners/flinkbuild.py builds, once
  run/             pid files and logs of the processes `start` started, lib/ (the class path
                   of its JVMs: Flink's lib/ and the Beam runner's classes, runners/flinkbuild.py
                   LIB_JAR_NOTE), sdk-worker (the
                   executable that starts an SDK worker: runners/sdkboot.py); run/tmp/ is the
                   JobManager's io.tmp.dirs, run/taskmanager-K/ TaskManager K's working
                   directory and run/taskmanager-K/tmp/ its io.tmp.dirs (it keeps each job's
                   files there until a few seconds after the job: BLOB_CLEANUP_S); `stop` removes them, so that no run leaves files in /tmp

`start` runs a JobManager and a TaskManager (2 slots), the job server (its jobs carry no jar:
the cluster's class path has the runner's classes) and a Beam worker pool from this Python's
environment (forking its workers: runners/workerpool.py), waits until all answer, runs the
worker probe once and records it in run/cluster.json (commands on this cluster then run none:
`probed_by_start`), and returns the Beam options that submit a pipeline to them. With
`--taskmanagers N` (N > 1) it runs N TaskManagers of 2 / N slots (at least 1) each, and no worker pool: each TaskManager starts its own SDK workers
(Beam's PROCESS environment). With `--isolate` each TaskManager, and so each of its workers,
runs in a mount namespace of its own (`unshare --mount`) with a private, empty /tmp and its
own working directory: like the hosts of a real cluster, the workers share nothing with the
driver or with each other but the crawl directory. Every worker is started by
runners/sdkboot.py, which gives it the pipeline's options (its filesystems: HDFS, S3). All of
them listen on one address, loopback (localhost) unless chosen otherwise: whoever reaches the
job server or the worker pool can run code. The ports it
binds (PORTS) can be chosen too; it records address and ports in run/cluster.json, where
`status`, `stop` and a later `start` find them while the cluster runs. `stop` stops exactly
the processes whose pids `start` recorded. Both are idempotent.

"""

import glob
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Dict, List, Optional, Tuple

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners import sdkboot
from beamcrawl.transforms.runners.flinkbuild import TASK_SLOTS, FlinkBuild
from beamcrawl.transforms.runners.services import (connect_host, default_home, host_port,
                                                   is_loopback, port_open, port_taken,
                                                   remember_home, terminate)
from beamcrawl.transforms.storage.locks import process_alive as pid_alive

__all__ = ['LocalFlink', 'PORTS', 'DEFAULT_PORTS', 'DEFAULT_BIND', 'pid_alive', 'probed_by_start']

log = logging.getLogger('beamcrawl')

# The ports `start` binds, name -> (default, what listens there); the JobManager's and the
# TaskManager's other ports are chosen at random. `beamcrawl flink start --NAME-port N` or the
# config key runner.flink.port.NAME chooses another (a busy 8081 must not block a start).
PORTS = {'rest': (8081, "Flink's REST API and web UI"),
         'rpc': (6123, "the JobManager's RPC"),
         'job': (8099, 'the Beam job server'),
         'artifact': (8098, "the Beam job server's artifact service"),
         'pool': (50000, 'the Beam worker pool')}
DEFAULT_PORTS = {name: port for name, (port, _) in PORTS.items()}
# The ports each process binds (checked free before it starts).
_PROCESS_PORTS = {'jobmanager': ('rest', 'rpc'), 'taskmanager': (),
                  'job server': ('job', 'artifact'), 'worker pool': ('pool',)}
# A private /tmp of an isolated TaskManager: a tmpfs of this size.
_PRIVATE_TMP_SIZE = '2g'
# Every Beam stage is a Flink job whose files the TaskManager keeps in
# run/tmp/tm_*/blobStorage/job_<id>/ until its blob cache's cleanup task finds the job unused for
# one cleanup interval. A job of Beam's own job server ships that server's jar (about 150 MB):
# with Flink's default interval, an hour, the folder grew by 150 MB a stage (3.6 GB after 20
# stages). The job server `start` runs ships no jar (--classes-on-cluster), and with a few
# seconds a finished job's files are gone within twice the interval. (The JobManager deletes
# its copy when the job ends.)
BLOB_CLEANUP_S = 5
_READY_TIMEOUT_S = 180.0
DEFAULT_BIND = 'localhost'




# The TaskManager's network buffers: Flink's default (a tenth of its memory, 128 MB: 4096
# buffers) is too few for readdb --stats, whose batch job deploys all its stages at once and
# asked for 512 buffers with 483 free ("Insufficient number of network buffers"); twice that is
# enough (tests/test_flink.py).
_NETWORK_MEMORY = ('-D', 'taskmanager.memory.network.min=256mb',
                   '-D', 'taskmanager.memory.network.max=256mb')

# The JobManager and the job server handle no records (the TaskManagers and the SDK workers do):
# only Beam's and Flink's control code, of which every job runs a little more. HotSpot's
# optimizing compiler (C2) kept compiling it job after job (measured per thread: 0.2-1.1 s of
# CPU per job in each of the two JVMs' compiler threads, still 0.2-0.3 s at the seventh job);
# its quick compiler alone (C1) compiles it for 0.05-0.1 s. The TaskManagers keep both: they
# carry every record.
_CONTROL_JVM_OPTIONS = ('-XX:TieredStopAtLevel=1',)


class LocalFlink:
    """The cache folder and the processes of one local cluster."""

    def __init__(self, home: Optional[str] = None, python: str = sys.executable,
                 ports: Optional[Dict[str, int]] = None, bind: Optional[str] = None,
                 taskmanagers: int = 1, isolate: bool = False):
        """`ports` (by PORTS name; the others default), `bind` (the address every process
        listens on), `taskmanagers` and `isolate` (see the module) are what a `start` of a
        stopped cluster uses. While a cluster runs, its recorded ones are used instead."""
        self.home = os.path.abspath(home or default_home('flink'))
        self.python = python
        self.build = FlinkBuild(self.home, python)
        self.jar, self.flink_home = self.build.jar, self.build.flink_home
        self.run_dir = os.path.join(self.home, 'run')
        self.tmp_dir = os.path.join(self.run_dir, 'tmp')
        self.record = os.path.join(self.run_dir, 'cluster.json')
        self.boot = os.path.join(self.run_dir, 'sdk-worker')
        if taskmanagers < 1:
            raise UserError(f'--taskmanagers {taskmanagers}: expected at least 1')
        self.wanted = ({**DEFAULT_PORTS, **(ports or {})}, bind or DEFAULT_BIND,
                       taskmanagers, isolate)
        self.taskmanagers, self.isolate = taskmanagers, isolate
        recorded = self._recorded()
        if recorded:
            self.ports, self.bind, self.taskmanagers, self.isolate = recorded
        else:
            self.ports, self.bind = self.wanted[:2]

    def _recorded(self) -> Optional[Tuple[Dict[str, int], str, int, bool]]:
        """The ports, address, TaskManagers and isolation recorded by the `start` of a cluster
        of which something still runs."""
        if not any(pid_alive(p) for pids in self.pids().values() for p in pids):
            return None
        try:
            with open(self.record, encoding='utf-8') as f:
                recorded = json.load(f)
            return ({name: int(recorded['ports'][name]) for name in PORTS}, recorded['bind'],
                    int(recorded.get('taskmanagers', 1)), bool(recorded.get('isolate')))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def own_workers(self) -> bool:
        """Whether each TaskManager starts its own SDK workers (PROCESS environment) instead
        of asking the worker pool (EXTERNAL)."""
        return self.taskmanagers > 1 or self.isolate

    @property
    def slots(self) -> int:
        """Task slots per TaskManager."""
        return max(1, TASK_SLOTS // self.taskmanagers)

    def _address(self, port_name: str) -> str:
        """host:port where clients on this machine reach one of the cluster's ports."""
        return host_port(connect_host(self.bind), self.ports[port_name])

    # -- the Beam options -------------------------------------------------------------------
    def options(self) -> List[str]:
        """The Beam options that run a pipeline on this cluster. --flink_master names Flink's
        REST address, where beamcrawl cancels jobs (runner.flink.rest otherwise)."""
        if self.own_workers:
            environment = ['--environment_type', 'PROCESS', '--environment_options',
                           f'process_command={self.boot}']
        else:
            environment = ['--environment_type', 'EXTERNAL', '--environment_config',
                           self._address('pool')]
        return ['--runner', 'PortableRunner', '--job_endpoint', self._address('job'),
                *environment, '--flink_master', self.rest()]

    def rest(self) -> str:
        """Flink's REST address (host:port)."""
        return self._address('rest')

    def listening(self) -> str:
        """What listens where, in one line."""
        ports = ', '.join(f'{what} {host_port(self.bind, self.ports[name])}'
                          for name, (_, what) in PORTS.items()
                          if name != 'pool' or not self.own_workers)
        return (f'{ports}; Flink\'s other ports at random on {self.bind}' +
                ('' if is_loopback(self.bind) else
                 ' (not loopback only: whoever reaches the job server or the worker pool can '
                 'run code on this machine)'))

    def _installed(self) -> List[str]:
        """What an isolated TaskManager must still see: its home, the Flink build, this Python
        (the venv and the interpreter it links to) and the beamcrawl package."""
        return [self.home, self.build.build_dir, self.flink_home, self.build.downloads,
                self.python, sys.prefix, sys.base_prefix,
                os.path.dirname(os.path.abspath(__file__))]

    def prepare(self) -> None:
        """Builds what the cluster runs, each part once (runners/flinkbuild.py)."""
        self.build.prepare()

    # -- processes ----------------------------------------------------------------------------
    # Flink's scripts name their pid files flink-<user>-<daemon>.pid in FLINK_PID_DIR.
    _PID_PATTERNS = {'jobmanager': 'flink-*-standalonesession.pid',
                     'taskmanager': 'taskmanager-*.pid',
                     'job server': 'jobserver.pid', 'worker pool': 'workerpool.pid'}

    def _names(self) -> List[str]:
        """The processes of this cluster."""
        return [n for n in self._PID_PATTERNS if n != 'worker pool' or not self.own_workers]

    def _taskmanager_pid(self, number: int) -> Optional[int]:
        try:
            with open(os.path.join(self.run_dir, f'taskmanager-{number}.pid'),
                      encoding='ascii') as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def _pid_paths(self, name: str) -> List[str]:
        return glob.glob(os.path.join(self.run_dir, self._PID_PATTERNS[name]))

    def pids(self) -> Dict[str, List[int]]:
        """Recorded pids per process name (a Flink pid file may hold several)."""
        out = {}
        for name in self._PID_PATTERNS:
            out[name] = []
            for path in self._pid_paths(name):
                try:
                    with open(path, encoding='ascii') as f:
                        out[name] += [int(x) for x in f.read().split() if x.isdigit()]
                except OSError:
                    pass
        return out

    def status(self) -> Dict[str, str]:
        """name → 'running (pid N)[ on PORTS]' or 'stopped'."""
        out = {}
        for name, pids in self.pids().items():
            if name not in self._names():
                continue
            alive = [p for p in pids if pid_alive(p)]
            if name == 'taskmanager' and len(alive) < self.taskmanagers:
                alive = []              # not all of them
            ports = ', '.join(f'{PORTS[p][1]} on {host_port(self.bind, self.ports[p])}'
                              for p in _PROCESS_PORTS[name])
            out[name] = (f'running (pid {", ".join(map(str, alive))})' +
                         (f': {ports}' if ports else '')) if alive else 'stopped'
        return out

    def running(self) -> bool:
        return all(s.startswith('running') for s in self.status().values())

    def start(self, probe_timeout: Optional[float] = None) -> None:
        """Prepares what is missing, starts what is not running, waits until all answer, then
        probes the workers (`_probe`; `probe_timeout` seconds, else runner.probe.timeout)."""
        self.prepare()
        os.makedirs(self.run_dir, exist_ok=True)
        status = self.status()
        missing = [name for name, state in status.items() if not state.startswith('running')]
        if len(missing) == len(status):
            self.ports, self.bind = self._checked(*self.wanted[:2])
            self.taskmanagers, self.isolate = self.wanted[2:]
            missing = self._names()
        else:
            recorded = self._recorded()
            if recorded:
                self.ports, self.bind, self.taskmanagers, self.isolate = recorded
            if (self.ports, self.bind, self.taskmanagers, self.isolate) != self.wanted:
                log.info('flink: the cluster in %s runs with its recorded ports, address and '
                         'TaskManagers; `beamcrawl flink stop` first to change them', self.home)
        for name in missing:            # fail before starting anything
            for port_name in _PROCESS_PORTS[name]:
                _check_free(port_name, self.ports[port_name], self.bind)
        prefix = []
        if self.isolate and 'taskmanager' in missing:
            prefix = _isolation_prefix(self._installed())
        record = {'ports': self.ports, 'bind': self.bind, 'taskmanagers': self.taskmanagers,
                  'isolate': self.isolate}
        if len(missing) < len(status) and 'probed' in self._read_record():
            record['probed'] = self._read_record()['probed']      # still true of what runs
        self._write_record(record)
        remember_home('flink', self.home)
        sdkboot.boot_script(self.boot, self.python)
        env = self._env()
        if 'jobmanager' in missing or 'taskmanager' in missing:
            self._lib_folder()
        os.makedirs(self.tmp_dir, exist_ok=True)
        if 'jobmanager' in missing:
            log.info('flink: starting a JobManager')
            code = subprocess.call([os.path.join(self.flink_home, 'bin', 'jobmanager.sh'),
                                    'start', *self._flink_properties()],
                                   env=dict(env, FLINK_ENV_JAVA_OPTS_JM=' '.join(
                                       _CONTROL_JVM_OPTIONS)), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
            if code != 0:
                raise UserError(f'starting the Flink jobmanager failed; see '
                                f'{os.path.join(self.flink_home, "log")}')
        if 'taskmanager' in missing:
            self._start_taskmanagers(env, prefix)
        if 'job server' in missing:
            log.info('flink: starting the Beam job server on port %d', self.ports['job'])
            self._spawn('job server', 'jobserver', [
                # the jobs carry no jar: the cluster's class path has the runner's classes
                # (run/lib/), docs/performance.md "Flink's fixed cost"
                shutil.which('java') or 'java', *_CONTROL_JVM_OPTIONS, '-jar', self.jar,
                '--classes-on-cluster',
                '--job-host', self.bind,
                '--job-port', str(self.ports['job']),
                '--artifact-port', str(self.ports['artifact']), '--expansion-port', '0',
                '--flink-master', self.rest()], env)
        if 'worker pool' in missing:
            log.info('flink: starting a Beam worker pool on port %d (%s)', self.ports['pool'],
                     self.python)
            self._spawn('worker pool', 'workerpool', [
                self.python, '-m', 'beamcrawl.transforms.runners.workerpool',
                str(self.ports['pool']), self.bind, self.boot, '--fork'], env)
        self._wait_ready()
        log.info('flink: listening on %s', self.listening())
        if not self.probed(self._address('job'), _environment(self.options())):
            self._probe(probe_timeout)

    def _probe(self, timeout_s: Optional[float]) -> None:
        """Runs the worker probe (runners/workerprobe.py probe_workers) on the running cluster, and
        records that it passed, with the pids of the job server and the worker pool it passed
        with: a command whose options name this cluster's job server and workers trusts that
        record instead of running a probe job of its own (`probed_by_start`). A probe that fails
        stops `start` with its one line."""
        from apache_beam.options.pipeline_options import PipelineOptions

        from beamcrawl.transforms.runners import workerprobe
        if timeout_s is None:
            from beamcrawl.transforms.base.config import load_config
            timeout_s = load_config()['runner.probe.timeout']
        record = self._read_record()
        record.pop('probed', None)
        self._write_record(record)
        options = self.options()
        log.info('flink: running the worker probe (a one-element job)')
        beam_options = PipelineOptions(options)
        workerprobe.skip_submission_environment(beam_options)
        workerprobe.probe_workers(beam_options, timeout_s, self.rest())
        record['probed'] = {'job': self._address('job'), 'environment': _environment(options),
                            'pids': self._probed_pids()}
        self._write_record(record)

    def _read_record(self) -> dict:
        try:
            with open(self.record, encoding='utf-8') as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def _write_record(self, record: dict) -> None:
        aside = f'{self.record}.{os.getpid()}'
        with open(aside, 'w', encoding='utf-8') as f:
            json.dump(record, f)
        os.replace(aside, self.record)

    def _probed_pids(self) -> List[int]:
        """What a probe vouches for: the job server and the worker pool that ran it (the
        workers of a PROCESS environment are started by the same boot program from any
        TaskManager, a new one included)."""
        pids = self.pids()
        return sorted(pids['job server'] + pids['worker pool'])

    def probed(self, job_endpoint: str, environment: List[str]) -> bool:
        """Whether this home's `start` probed the workers of `environment` ([type, config])
        behind the job server at `job_endpoint` with the job server and worker pool that run now,
        and every process of the cluster runs (and the worker pool, if any, answers)."""
        probed = self._read_record().get('probed')
        if not isinstance(probed, dict) or probed.get('job') != job_endpoint or \
                probed.get('environment') != environment:
            return False
        pids = probed.get('pids') or []
        if not pids or sorted(pids) != self._probed_pids() or not self.running():
            return False
        if environment[0] == 'EXTERNAL':
            host, _, port = environment[1].rpartition(':')
            return port.isdigit() and port_open(host.strip('[]'), int(port))
        return True

    def _start_taskmanagers(self, env: Dict[str, str], prefix: List[str]) -> None:
        """Starts each TaskManager that does not run, in the foreground of a process of its own
        (its pid recorded as taskmanager-K.pid), isolated behind `prefix` (_isolation_prefix)."""
        log.info('flink: starting %d TaskManager%s (%d slot%s each)%s', self.taskmanagers,
                 's' if self.taskmanagers > 1 else '', self.slots,
                 's' if self.slots > 1 else '',
                 ', each with a private /tmp and working directory' if self.isolate else '')
        for number in range(1, self.taskmanagers + 1):
            pid = self._taskmanager_pid(number)
            if pid is not None and pid_alive(pid):
                continue
            work = os.path.join(self.run_dir, f'taskmanager-{number}')
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(os.path.join(work, 'tmp'))
            command = [os.path.join(self.flink_home, 'bin', 'taskmanager.sh'),
                       'start-foreground', *self._flink_properties(),
                       '-D', f'taskmanager.numberOfTaskSlots={self.slots}',
                       *_NETWORK_MEMORY,
                       '-D', f'io.tmp.dirs={os.path.join(work, "tmp")}']
            self._spawn('taskmanager', f'taskmanager-{number}', prefix + [work] + command
                        if prefix else command, env, pid_file=f'taskmanager-{number}.pid',
                        cwd=work)

    @staticmethod
    def _checked(ports: Dict[str, int], bind: str) -> Tuple[Dict[str, int], str]:
        for name, port in ports.items():
            if not 0 < port < 65536:
                raise UserError(f'--{name}-port {port}: a port is a number from 1 to 65535')
        if len(set(ports.values())) < len(ports):
            raise UserError(f'the cluster\'s ports must differ: {ports}')
        if not bind or any(c.isspace() for c in bind):
            raise UserError(f'--bind {bind!r}: expected a host name or an IP address')
        return dict(ports), bind

    def _flink_properties(self) -> List[str]:
        """Flink settings of this cluster, given to both of Flink's start scripts: every
        Flink port is bound on self.bind (the JobManager's blob server and the TaskManager's
        RPC and data ports included), and advertised where this machine reaches it."""
        here = connect_host(self.bind)
        return ['-D', f'io.tmp.dirs={self.tmp_dir}',
                '-D', f'rest.port={self.ports["rest"]}',
                '-D', f'rest.bind-address={self.bind}', '-D', f'rest.address={here}',
                '-D', f'jobmanager.rpc.port={self.ports["rpc"]}',
                '-D', f'jobmanager.bind-host={self.bind}',
                '-D', f'jobmanager.rpc.address={here}',
                '-D', f'taskmanager.bind-host={self.bind}', '-D', f'taskmanager.host={here}',
                '-D', f'blob.service.cleanup.interval={BLOB_CLEANUP_S}',
                # a job's classes are those of the class path, loaded and compiled once
                # (runners/flinkbuild.py LIB_JAR_NOTE)
                '-D', 'classloader.resolve-order=parent-first']

    def _lib_folder(self) -> None:
        """run/lib/: Flink's lib/ and the Beam runner's classes (flinkbuild.py LIB_JAR_NOTE),
        the class path of the JobManager and the TaskManagers (FLINK_LIB_DIR)."""
        lib = os.path.join(self.run_dir, 'lib')
        shutil.rmtree(lib, ignore_errors=True)
        os.makedirs(lib)
        flink_lib = os.path.join(self.flink_home, 'lib')
        for name in os.listdir(flink_lib):
            os.symlink(os.path.join(flink_lib, name), os.path.join(lib, name))
        os.symlink(self.build.lib_jar, os.path.join(lib, os.path.basename(self.build.lib_jar)))

    def _env(self) -> Dict[str, str]:
        # The worker pool starts SDK workers as plain `python` from PATH: this environment's
        # bin/ must come first, or the workers lack apache_beam and every job hangs.
        env = dict(os.environ, FLINK_PID_DIR=self.run_dir, FLINK_HOME=self.flink_home,
                   FLINK_LIB_DIR=os.path.join(self.run_dir, 'lib'))
        env['PATH'] = os.path.dirname(self.python) + os.pathsep + env.get('PATH', '')
        return env

    def _spawn(self, name: str, stem: str, argv: List[str], env: Dict[str, str],
               pid_file: Optional[str] = None, cwd: Optional[str] = None) -> None:
        with open(os.path.join(self.run_dir, f'{stem}.log'), 'ab') as out:
            proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=cwd or self.run_dir)
        with open(os.path.join(self.run_dir, pid_file or self._PID_PATTERNS[name]), 'w',
                  encoding='ascii') as f:
            f.write(f'{proc.pid}\n')

    def _wait_ready(self) -> None:
        deadline = time.time() + _READY_TIMEOUT_S
        here = connect_host(self.bind)
        checks = {'Flink REST API': self._flink_ready,
                  'job server': lambda: port_open(here, self.ports['job'])}
        if not self.own_workers:
            checks['worker pool'] = lambda: port_open(here, self.ports['pool'])
        for what, ready in checks.items():
            while not ready():
                dead = [n for n, s in self.status().items() if s == 'stopped']
                if dead:
                    raise UserError(f'the {dead[0]} stopped while starting; see the logs in '
                                    f'{self.run_dir} and {self.flink_home}/log')
                # (a TaskManager that stops shows as 'stopped' too: all N must run)
                if time.time() > deadline:
                    raise UserError(f'the {what} did not become ready within '
                                    f'{_READY_TIMEOUT_S:.0f} s; see the logs in {self.run_dir}')
                time.sleep(0.5)

    def _flink_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f'http://{self.rest()}/overview', timeout=2) as resp:
                overview = json.load(resp)
        except (OSError, ValueError, urllib.error.URLError):
            return False
        return (overview.get('taskmanagers', 0) >= self.taskmanagers
                and overview.get('slots-total', 0) >= self.taskmanagers * self.slots)

    def stop(self) -> List[str]:
        """Stops every recorded process (and its children); returns what was stopped."""
        stopped = []
        for name, pids in self.pids().items():
            for pid in pids:
                if pid_alive(pid):
                    terminate(pid)
                    stopped.append(f'{name} (pid {pid})')
            for path in self._pid_paths(name):
                os.remove(path)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        shutil.rmtree(os.path.join(self.run_dir, 'lib'), ignore_errors=True)
        # flink-console.sh notes each TaskManager's pid (the same as taskmanager-K.pid) there
        for path in glob.glob(os.path.join(self.run_dir, 'flink-*-taskexecutor.pid')):
            os.remove(path)
        for work in glob.glob(os.path.join(self.run_dir, 'taskmanager-*')):
            if os.path.isdir(work):
                shutil.rmtree(work, ignore_errors=True)
        if os.path.exists(self.record):
            os.remove(self.record)
        return stopped


def _environment(options: List[str]) -> List[str]:
    """[environment type, environment config or options] of a cluster's Beam options."""
    kind = options[options.index('--environment_type') + 1]
    flag = '--environment_config' if '--environment_config' in options else \
        '--environment_options'
    return [kind, options[options.index(flag) + 1]]


def probed_by_start(job_endpoint: str, environment: List[str]) -> bool:
    """Whether the local cluster in the flink home (BEAMCRAWL_FLINK_HOME, else the last
    `start`'s, else .flink beside the source tree) runs the job server at `job_endpoint` and the
    workers of `environment`, which its `start` probed (LocalFlink.probed)."""
    home = default_home('flink')
    if not os.path.isfile(os.path.join(home, 'run', 'cluster.json')):
        return False
    return LocalFlink(home).probed(job_endpoint, environment)


def _kept_in_tmp(paths: List[str]) -> List[str]:
    """The entries of /tmp that hold `paths` (those of them under /tmp), sorted."""
    kept = set()
    for path in paths:
        real = os.path.realpath(path)
        if real.startswith('/tmp/'):
            kept.add(real[len('/tmp/'):].split('/', 1)[0])
    return sorted(kept)


def _isolation_prefix(installed: List[str]) -> List[str]:
    """The command prefix that runs a command (after a working directory argument) in a mount
    namespace of its own with a private, empty /tmp (a tmpfs) and that working directory:
    `unshare --mount` as root, else in a user namespace (`--user --map-root-user`). The
    `installed` paths (Flink, Python, beamcrawl, the home: what a cluster host has installed)
    stay visible: the entries of /tmp that hold them are bound into the private /tmp from the
    one it covers (reached through the working directory, which still is the old /tmp).
    UserError when this system allows neither."""
    binds = ''.join(f' && mkdir -p /tmp/{shlex.quote(name)} && mount --no-canonicalize --bind '
                    f'{shlex.quote(name)} /tmp/{shlex.quote(name)}'
                    for name in _kept_in_tmp(installed))
    script = (f'cd /tmp && mount -t tmpfs -o size={_PRIVATE_TMP_SIZE} tmpfs /tmp{binds} && '
              f'cd "$1" && shift && exec "$@"')
    unshare = shutil.which('unshare')
    if unshare is None:
        raise UserError('--isolate needs unshare (util-linux): not found')
    for flags in (['--mount', '--propagation', 'private'],
                  ['--user', '--map-root-user', '--mount', '--propagation', 'private']):
        prefix = [unshare, *flags, 'sh', '-c', script, 'isolated']
        probe = subprocess.run(prefix + ['/', 'true'], capture_output=True, text=True)
        if probe.returncode == 0:
            return prefix
    raise UserError(f'--isolate: this system lets this user make no mount namespace '
                    f'(unshare: {probe.stderr.strip() or probe.returncode})')


def _check_free(name: str, port: int, bind: str) -> None:
    if port_taken(bind, port):
        raise UserError(f'port {port} ({PORTS[name][1]}) is in use by another program: choose '
                        f'another with `beamcrawl flink start --{name}-port PORT` (or the '
                        f'config key runner.flink.port.{name})')


