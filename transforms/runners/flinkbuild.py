"""Building a local Flink for beamcrawl, once, in its cache folder (runners/localflink.py):

  job-server/      a Maven project (conf/flink-job-server/) whose shaded jar is Beam's Flink
                   job server, built from the runner library Maven Central serves (again when
                   conf/flink-job-server/ changes), with a main class of our own that makes it
                   listen only on the address it is given
  job-server/target/beamcrawl-flink-lib.jar
                   the job server's jar without what Flink's own distribution jar holds: the
                   classes a cluster's JVMs load once, from their class path (LIB_JAR_NOTE)
  flink-1.19.3/    Flink assembled from two PyPI downloads, without installing PyFlink: bin/
                   and conf/ from the apache-flink wheel, lib/ opt/ plugins/ and the bin/ helper
                   jar from the apache-flink-libraries sdist

Versions: Flink 1.19 because it is the newest Flink for which Maven Central serves Beam's runner
library with all its dependencies (beam-runners-flink-1.19 at 2.62.0); the Python SDK stays at
apache-beam 2.77, which talks to the 2.62 job server through the portable API.
"""

import logging
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

from beamcrawl.transforms.base.config import bundled_conf_dir
from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners.services import building, folder_digest, need_java, read_text

__all__ = ['FlinkBuild', 'FLINK_VERSION', 'BEAM_RUNNER_VERSION', 'TASK_SLOTS',
           'job_server_digest']

log = logging.getLogger('beamcrawl')

FLINK_VERSION = '1.19.3'
BEAM_RUNNER_VERSION = '2.62.0'
TASK_SLOTS = 2
_JAR = f'beamcrawl-flink-job-server-{BEAM_RUNNER_VERSION}.jar'
_LIB_JAR = 'beamcrawl-flink-lib.jar'
# LIB_JAR_NOTE. Every Beam stage is a Flink job whose jar is the job server's, and Flink loads
# a job's classes with a class loader of its own (child-first): every job loaded Beam's runner
# classes anew in the JobManager and the TaskManager, and their JIT compilers compiled them
# anew: measured, 7 s of the 11-13 s of CPU that the three JVMs spent on an `inject` of two
# seeds (two jobs: the worker probe and the stage) went to their compiler threads. The cluster
# runs with this jar in its class path (the lib folder of its start: localflink.py) and
# resolves classes parent-first, so a job's classes are those the JVM loaded, and compiled,
# for the jobs before. Left out: every entry Flink's distribution jar has (it stays the one
# Flink runs: the job server's jar carries Flink's client classes of the runner's Flink
# version), the logging bindings (Flink's lib/ has log4j's) and Flink's service files.
_LIB_LEFT_OUT = ('org/slf4j/', 'org/apache/logging/', 'META-INF/services/org.apache.flink.',
                 'META-INF/MANIFEST.MF')


class FlinkBuild:
    """The built parts of a local Flink under `home`: the job server's jar, Flink itself."""

    def __init__(self, home: str, python: str = sys.executable):
        self.home, self.python = home, python
        self.build_dir = os.path.join(home, 'job-server')
        self.jar = os.path.join(self.build_dir, 'target', _JAR)
        self.lib_jar = os.path.join(self.build_dir, 'target', _LIB_JAR)
        self.flink_home = os.path.join(home, f'flink-{FLINK_VERSION}')
        self.downloads = os.path.join(home, 'downloads')
        self.digest = os.path.join(self.build_dir, 'project.sha256')

    def prepare(self) -> None:
        """Builds the job server and assembles Flink, each once (the job server again when its
        Maven project changed)."""
        _need_java()
        with building(self.home):
            if not os.path.isfile(self.jar) or read_text(self.digest) != job_server_digest():
                self._build_job_server()
            if not os.path.isfile(os.path.join(self.flink_home, 'bin', 'start-cluster.sh')):
                self._assemble_flink()
            if not os.path.isfile(self.lib_jar) or \
                    os.path.getmtime(self.lib_jar) < os.path.getmtime(self.jar):
                self._make_lib_jar()

    def _make_lib_jar(self) -> None:
        """The job server's jar less Flink's distribution jar's entries (LIB_JAR_NOTE)."""
        dist = [os.path.join(self.flink_home, 'lib', n)
                for n in os.listdir(os.path.join(self.flink_home, 'lib'))
                if n.startswith('flink-dist')]
        with zipfile.ZipFile(dist[0]) as z:
            flink_has = set(z.namelist())
        staging = f'{self.lib_jar}.{os.getpid()}.partial'
        with zipfile.ZipFile(self.jar) as src, \
                zipfile.ZipFile(staging, 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as dst:
            for info in src.infolist():
                if info.filename in flink_has or info.filename.startswith(_LIB_LEFT_OUT):
                    continue
                dst.writestr(info, src.read(info), compresslevel=1)
        os.replace(staging, self.lib_jar)

    def _build_job_server(self) -> None:
        mvn = shutil.which('mvn')
        if mvn is None:
            raise UserError('Maven is needed once to build the Beam job server: `mvn` is not on '
                            'PATH (Debian: apt-get install maven)')
        os.makedirs(self.build_dir, exist_ok=True)
        for old in (self.jar, self.digest):
            if os.path.exists(old):
                os.remove(old)
        shutil.rmtree(os.path.join(self.build_dir, 'src'), ignore_errors=True)
        shutil.copytree(_job_server_project(), self.build_dir, dirs_exist_ok=True)
        build_log = os.path.join(self.build_dir, 'build.log')
        log.info('flink: building the Beam %s job server for Flink 1.19 with Maven (once; '
                 'about 190 MB of downloads, log in %s)', BEAM_RUNNER_VERSION, build_log)
        with open(build_log, 'wb') as out:
            code = subprocess.call([mvn, '-B', '-q', 'package', '-DskipTests'],
                                   cwd=self.build_dir, stdout=out, stderr=subprocess.STDOUT)
        if code != 0 or not os.path.isfile(self.jar):
            raise UserError(f'building the Beam job server with Maven failed (exit {code}); '
                            f'see {build_log}')
        with open(self.digest, 'w', encoding='ascii') as f:
            f.write(job_server_digest())

    def _assemble_flink(self) -> None:
        os.makedirs(self.downloads, exist_ok=True)
        wheel = self._download(f'apache-flink=={FLINK_VERSION}', 'apache_flink-', '.whl')
        sdist = self._download(f'apache-flink-libraries=={FLINK_VERSION}',
                               'apache-flink-libraries-', '.tar.gz')
        log.info('flink: assembling Flink %s in %s', FLINK_VERSION, self.flink_home)
        staging = self.flink_home + '.partial'
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        with zipfile.ZipFile(wheel) as z:           # bin/ and conf/ of the distribution
            for info in z.infolist():
                for folder in ('bin', 'conf'):
                    prefix = f'pyflink/{folder}/'
                    if info.filename.startswith(prefix) and not info.is_dir():
                        target = os.path.join(staging, folder, info.filename[len(prefix):])
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        with z.open(info) as src, open(target, 'wb') as dst:
                            shutil.copyfileobj(src, dst)
                        os.chmod(target, 0o755 if folder == 'bin' else 0o644)
        with tarfile.open(sdist) as tar:            # lib/, opt/, plugins/, bin/*.jar
            for member in tar.getmembers():
                parts = member.name.split('/')
                if len(parts) < 4 or parts[1] != 'deps' or not member.isfile() or \
                        parts[2] not in ('lib', 'opt', 'plugins', 'bin'):
                    continue
                target = os.path.join(staging, *parts[2:])
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with tar.extractfile(member) as src, open(target, 'wb') as dst:
                    shutil.copyfileobj(src, dst)
        os.makedirs(os.path.join(staging, 'log'), exist_ok=True)   # the scripts need it
        _set_task_slots(os.path.join(staging, 'conf', 'config.yaml'), TASK_SLOTS)
        shutil.rmtree(self.flink_home, ignore_errors=True)
        os.rename(staging, self.flink_home)

    def _download(self, requirement: str, prefix: str, suffix: str) -> str:
        def found():
            return [os.path.join(self.downloads, n) for n in os.listdir(self.downloads)
                    if n.startswith(prefix) and n.endswith(suffix)]
        if not found():
            log.info('flink: downloading %s from PyPI (once)', requirement)
            proc = subprocess.run([self.python, '-m', 'pip', 'download', '--no-deps', '-q',
                                   '-d', self.downloads, requirement],
                                  capture_output=True, text=True)
            if proc.returncode != 0 or not found():
                last = (proc.stderr.strip().splitlines() or ['no output'])[-1]
                raise UserError(f'downloading {requirement} from PyPI failed: {last}')
        return found()[0]


def _job_server_project() -> str:
    return os.path.join(bundled_conf_dir(), 'flink-job-server')


def job_server_digest() -> str:
    """A digest of the job server's Maven project: a jar built from another one is rebuilt."""
    return folder_digest(_job_server_project())


def _need_java() -> None:
    need_java(11, f'Flink {FLINK_VERSION}')


def _set_task_slots(config_yaml: str, slots: int) -> None:
    """Sets taskmanager.numberOfTaskSlots in Flink's conf/config.yaml (a nested YAML file that
    Flink's own shell scripts parse: edited in place, its layout kept)."""
    with open(config_yaml, encoding='utf-8') as f:
        lines = f.read().split('\n')
    for i, line in enumerate(lines):
        if line.strip().startswith('numberOfTaskSlots:'):
            lines[i] = line[:line.index('numberOfTaskSlots:')] + f'numberOfTaskSlots: {slots}'
            break
    else:
        raise UserError(f'{config_yaml}: no taskmanager.numberOfTaskSlots line to set')
    with open(config_yaml, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines))
