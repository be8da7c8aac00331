"""Benchmark: the batch stages on the local Flink cluster against the local runner, with every
process's CPU counted and the fixed cost per stage.

    python bench/bench_flink_batch.py [--stages inject,generate,updatedb,invertlinks]
                                      [--urls 1000000] [--tiny 1000] [--runs 1]
                                      [--parallelism 2] [--markdown] [--against REV]
                                      [-- extra arguments]

The workloads are bench_batch.py's (built once per stage, copied afresh before every run). For
each stage, the runs alternate: the local runner, then the cluster (--parallelism 2: its two
task slots), so that both see the same machine. The same stage on a workload of --tiny URLs,
run the same way, is its fixed cost: what a stage costs with almost nothing to do.

On the cluster most of the work is done outside the command's process tree, so CPU is counted
per process group from /proc (utime + stime + cutime + cstime of each process and its
descendants, before and after the command):
  command     the beamcrawl command and its children (from wait4, as bench_batch.py counts it)
  jobmanager  Flink's JobManager JVM
  taskmanager Flink's TaskManager JVM (the operators, the shuffle, the gRPC data plane)
  jobserver   Beam's job server JVM (translates the pipeline, submits the Flink job)
  harness     the Beam worker pool and the Python SDK workers it starts (the DoFns)
The cluster is started by the bench on free ports in a home of its own under .flink/bench/
(the build in .flink/ is reused: `beamcrawl flink start` once builds it) and stopped at its end.
One job runs before the measured ones: the first job of a fresh cluster warms its JVMs.

--against REV also starts a cluster with the code of git revision REV (a worktree of it, as
bench_batch.py --against does) and runs each Flink run on both, interleaved (local, REV, this
tree), with REV's code for REV's commands: how a change to the cluster compares, side by side.
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_batch  # noqa: E402
from bench_scale import free_ports, tree_cpu  # noqa: E402
from measure import ROOT, beamcrawl, measure  # noqa: E402

STAGES = ('inject', 'generate', 'updatedb', 'invertlinks')
GROUPS = ('command', 'jobmanager', 'taskmanager', 'jobserver', 'harness')
_GROUP_OF = {'jobmanager': 'jobmanager', 'taskmanager': 'taskmanager',
             'job server': 'jobserver', 'worker pool': 'harness'}


class Cluster:
    """A local Flink cluster of one TaskManager with 2 slots, in a home of its own, started by
    `beamcrawl flink start` with the code on `path` (a PYTHONPATH; None: this tree's)."""

    def __init__(self, path=None):
        from beamcrawl.transforms.runners.localflink import PORTS, LocalFlink
        built = LocalFlink(os.path.join(ROOT, '.flink'))
        built.prepare()
        self.path = path
        self.home = os.path.join(ROOT, '.flink', 'bench', uuid.uuid4().hex[:6])
        os.makedirs(self.home)
        for part in (built.build.build_dir, built.flink_home, built.build.downloads):
            target = part
            if part == built.build.build_dir and path:
                target = self._job_server_of(path)
            os.symlink(target, os.path.join(self.home, os.path.basename(part)))
        ports = dict(zip(PORTS, free_ports(len(PORTS))))
        self._cli('start', *[a for name, port in ports.items()
                             for a in (f'--{name}-port', str(port))])
        self.flink = LocalFlink(self.home)          # the recorded cluster: its pids, options

    def _job_server_of(self, path):
        """The job server's build folder for the code on `path`: this tree's when its Maven
        project is the same, else one of its own (.flink/bench-builds/DIGEST, built by its
        `start` once and kept)."""
        from beamcrawl.transforms.runners.flinkbuild import job_server_digest
        theirs = subprocess.run(
            [sys.executable, '-c', 'from beamcrawl.transforms.runners.flinkbuild import '
             'job_server_digest; print(job_server_digest())'],
            env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True,
            check=True).stdout.strip().splitlines()[-1]
        if theirs == job_server_digest():
            return os.path.join(ROOT, '.flink', 'job-server')
        folder = os.path.join(ROOT, '.flink', 'bench-builds', theirs[:16])
        os.makedirs(folder, exist_ok=True)
        return folder

    def env(self):
        # the home: where a command finds the record of the probe this cluster's start ran
        env = dict(os.environ, BEAMCRAWL_FLINK_HOME=self.home)
        if self.path:
            env['PYTHONPATH'] = self.path
        return env

    def _cli(self, *args):
        subprocess.run(beamcrawl('flink', *args, '--home', self.home), cwd=ROOT, env=self.env(),
                       check=True, capture_output=True)

    def cpu(self):
        """CPU seconds so far of each group of the cluster's processes."""
        out = dict.fromkeys(GROUPS[1:], 0.0)
        for name, pids in self.flink.pids().items():
            out[_GROUP_OF[name]] += tree_cpu(pids)
        return out

    def stop(self):
        self._cli('stop')
        shutil.rmtree(self.home, ignore_errors=True)


class Run:
    """One measured command: wall, CPU per group."""

    def __init__(self, result, cluster=None):
        self.wall = result.wall
        self.groups = dict.fromkeys(GROUPS, 0.0)
        self.groups['command'] = result.cpu
        self.groups.update(cluster or {})
        self.summary = next((l for l in reversed(result.stdout.splitlines()) if l.strip()), '')

    @property
    def cpu(self):
        return sum(self.groups.values())


def _copy_extensions(rev, work):
    """Copies this tree's compiled C extensions into REV's worktree where REV's C source is the
    same (a worktree has none built: its stages would run the Python fallbacks)."""
    tree = os.path.join(work, 'against')
    for folder, _, names in os.walk(os.path.join(ROOT, 'transforms')):
        for name in names:
            if not name.endswith('.so'):
                continue
            source = os.path.join(folder, name.split('.')[0] + '.c')
            relative = os.path.relpath(source, ROOT)
            same = subprocess.run(['git', 'diff', '--quiet', rev, '--', relative], cwd=ROOT)
            if os.path.isfile(source) and same.returncode == 0:
                shutil.copy2(os.path.join(folder, name),
                             os.path.join(tree, os.path.relpath(folder, ROOT), name))
            else:
                print(f'  ({relative} differs at {rev}: its stages run without it)', flush=True)


def run_once(stage, pristine, work, urls, extra, cluster=None, options=()):
    run = os.path.join(work, 'run')
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(pristine, run)
    before = cluster.cpu() if cluster else None
    result = measure(stage, bench_batch.command(stage, run, [*extra, *options], urls),
                     env=cluster.env() if cluster else None)
    spent = None
    if cluster:
        after = cluster.cpu()
        spent = {g: after[g] - before[g] for g in after}
    shutil.rmtree(run)
    return Run(result, spent)


def best(runs):
    return min(runs, key=lambda r: r.wall)


def line(label, r):
    parts = ', '.join(f'{g} {r.groups[g]:.1f}' for g in GROUPS if r.groups[g] or g == 'command')
    return f'  {label:<22} {r.wall:6.1f} s wall {r.cpu:6.1f} s CPU  ({parts})'


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    argv = argv[:argv.index('--')] if '--' in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--stages', default=','.join(STAGES))
    parser.add_argument('--urls', type=int, default=1000000)
    parser.add_argument('--tiny', type=int, default=1000,
                        help='URLs of the workload that measures the fixed cost')
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--parallelism', type=int, default=2)
    parser.add_argument('--markdown', action='store_true')
    parser.add_argument('--against', metavar='REV', help='also a cluster of git revision REV')
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(',') if s]
    unknown = set(stages) - set(bench_batch.STAGES)
    if unknown:
        parser.error(f'unknown stages {sorted(unknown)}; expected some of {bench_batch.STAGES}')
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or '?'
    print(f'{os.cpu_count()} cores, commit {commit}, {args.urls} URLs, fixed cost at '
          f'{args.tiny}, best of {args.runs}, Flink --parallelism {args.parallelism}'
          + (f', against {args.against}' if args.against else '')
          + (f', extra arguments {" ".join(extra)}' if extra else ''), flush=True)
    work = tempfile.mkdtemp(prefix='bench-flink-batch-')
    clusters = {}                   # runner label -> Cluster
    table = []
    try:
        paths = {'flink': None}
        if args.against:
            paths = {f'flink@{args.against}': bench_batch._tree_of(args.against, work),  # noqa: SLF001
                     'flink': None}
            _copy_extensions(args.against, work)
        seeds = os.path.join(work, 'warm', 'seeds.txt')
        os.makedirs(os.path.dirname(seeds))
        with open(seeds, 'w') as f:
            f.write(''.join(f'http://h{i}.example.com/\n' for i in range(10)))
        for label, path in paths.items():
            start = time.time()
            cluster = clusters[label] = Cluster(path)
            cluster.options = [*cluster.flink.options(), '--parallelism', str(args.parallelism)]
            print(f'  ({label}: started the cluster in {time.time() - start:.0f} s)', flush=True)
            warm = measure('warm-up', beamcrawl('inject', os.path.join(work, 'warm', label),
                                                seeds, '--now', bench_batch.NOW,
                                                *cluster.options), env=cluster.env())
            print(f'  ({label}: warm-up job {warm.wall:.1f} s wall)', flush=True)
        runners = ['local', *clusters]
        for stage in stages:
            built = {}
            start = time.time()
            for size, urls in (('big', args.urls), ('tiny', args.tiny)):
                pristine = os.path.join(work, stage, size)
                os.makedirs(pristine)
                getattr(bench_batch, f'build_{stage.replace("-", "_")}')(pristine, urls)
                built[size] = (pristine, urls)
            print(f'{stage}: (built the workloads in {time.time() - start:.0f} s)', flush=True)
            found = {}
            for size in ('big', 'tiny'):
                pristine, urls = built[size]
                for _ in range(args.runs):
                    for runner in runners:          # interleaved: the same machine state
                        cluster = clusters.get(runner)
                        r = run_once(stage, pristine, work, urls, extra, cluster,
                                     cluster.options if cluster else ())
                        found.setdefault((size, runner), []).append(r)
            rows = {key: best(runs) for key, runs in found.items()}
            for (size, runner), r in rows.items():
                print(line(f'{runner} {args.urls if size == "big" else args.tiny}', r),
                      flush=True)
            local, fixed_local = rows['big', 'local'], rows['tiny', 'local']
            for runner in clusters:
                flink, fixed_flink = rows['big', runner], rows['tiny', runner]
                beyond = ((flink.cpu - fixed_flink.cpu) /
                          max(local.cpu - fixed_local.cpu, 1e-9))
                print(f'  {runner} / local: wall {flink.wall / local.wall:.2f}, CPU '
                      f'{flink.cpu / local.cpu:.2f}; beyond the fixed cost: CPU {beyond:.2f}',
                      flush=True)
                table.append((stage, runner, local, flink, fixed_local, fixed_flink))
    finally:
        for cluster in clusters.values():
            cluster.stop()
        if args.against:
            subprocess.run(['git', 'worktree', 'remove', '--force',
                            os.path.join(work, 'against')], cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    if args.markdown:
        today = datetime.date.today().isoformat()
        print(f'\n{today}, commit {commit}, {args.urls} URLs, Flink --parallelism '
              f'{args.parallelism}, fixed cost = the same stage at {args.tiny} URLs\n')
        print('| stage | runner | local wall / CPU | Flink wall / CPU | CPU ratio | '
              'fixed cost local | fixed cost Flink | CPU ratio beyond the fixed cost |')
        print('|---|---|---|---|---|---|---|---|')
        for stage, runner, local, flink, fl, ff in table:
            beyond = (flink.cpu - ff.cpu) / max(local.cpu - fl.cpu, 1e-9)
            print(f'| {stage} | {runner} | {local.wall:.1f} s / {local.cpu:.1f} s | '
                  f'{flink.wall:.1f} s / {flink.cpu:.1f} s | {flink.cpu / local.cpu:.2f} | '
                  f'{fl.wall:.1f} s / {fl.cpu:.1f} s | {ff.wall:.1f} s / {ff.cpu:.1f} s | '
                  f'{beyond:.2f} |')
        print('\nWhere the Flink runs\' CPU went (s):\n')
        print('| stage | runner | input | ' + ' | '.join(GROUPS) + ' |')
        print('|---|---|---|' + '---|' * len(GROUPS))
        for stage, runner, _, flink, _, ff in table:
            for urls, r in ((args.urls, flink), (args.tiny, ff)):
                print(f'| {stage} | {runner} | {urls} | ' +
                      ' | '.join(f'{r.groups[g]:.1f}' for g in GROUPS) + ' |')


if __name__ == '__main__':
    main()
