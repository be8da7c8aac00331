"""Benchmark: the fixed cost of one stage on Flink, and a 2-round demo crawl on each runner.

Runs the same small stage (inject of 100 seeds) STAGES times in one process, as `beamcrawl crawl`
runs its stages, on:
  * the local runner (FnApiRunner, no Flink);
  * embedded Flink through Beam's own FlinkRunner path: a new Java job server per pipeline
    (what beamcrawl did before it shared one);
  * embedded Flink through beamcrawl (one job server shared by the process);
  * the standalone cluster of `beamcrawl flink start` (long-lived job server, EXTERNAL workers).
Then times `beamcrawl demo --rounds 2` on the local runner and on the cluster.

    python bench/bench_flink_overhead.py [--stages 5] [--home .flink]

Needs a built .flink/ (./run_local.sh --flink start); starts and stops the cluster itself.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beamcrawl.pipelines.cli import run_command  # noqa: E402
from beamcrawl.transforms.runners import portable  # noqa: E402
from beamcrawl.transforms.runners.localflink import LocalFlink  # noqa: E402


def stage_times(work, seeds, beam_args, stages):
    times = []
    for i in range(stages):
        start = time.time()
        code = run_command('inject', [os.path.join(work, f'c{i}'), seeds, '--now', '0',
                                      *beam_args])
        assert code == 0, code
        times.append(time.time() - start)
    return times


def report(label, times):
    print(f'{label:<58} first {times[0]:5.1f} s, then median {statistics.median(times[1:]):5.1f} s'
          f' per stage', flush=True)


def demo_time(work, name, beam_args):
    start = time.time()
    subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'demo',
                    os.path.join(work, name), '--rounds', '2', '--now', '2026-11-22T00:00:00Z',
                    *beam_args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--stages', type=int, default=5)
    parser.add_argument('--home', default=os.path.join(ROOT, '.flink'))
    args = parser.parse_args()
    flink = LocalFlink(args.home)
    if not os.path.isfile(flink.jar):
        sys.exit(f'no job server jar in {args.home}: run ./run_local.sh --flink start once')
    work = tempfile.mkdtemp(prefix='bench-flink-')
    seeds = os.path.join(work, 'seeds.txt')
    with open(seeds, 'w') as f:
        f.write(''.join(f'http://h{i % 10}.test/p{i}\n' for i in range(100)))
    embedded = ['--runner', 'FlinkRunner', '--flink_master', '[local]', '--flink_version', '1.19',
                '--flink_job_server_jar', flink.jar, '--environment_type', 'LOOPBACK']
    try:
        report('local runner', stage_times(os.path.join(work, 'local'), seeds, [], args.stages))
        shared = portable.prepare_options
        portable.prepare_options = lambda options: options        # Beam's own FlinkRunner path
        try:
            report('embedded Flink, a job server per pipeline (before)',
                   stage_times(os.path.join(work, 'before'), seeds, embedded, args.stages))
        finally:
            portable.prepare_options = shared
        report('embedded Flink, one job server per process (after)',
               stage_times(os.path.join(work, 'after'), seeds, embedded, args.stages))
        flink.start()
        try:
            report('standalone cluster, EXTERNAL workers',
                   stage_times(os.path.join(work, 'cluster'), seeds, flink.options(),
                               args.stages))
            cluster_demo = demo_time(work, 'demo-cluster', flink.options())
        finally:
            flink.stop()
        local_demo = demo_time(work, 'demo-local', [])
        print(f'2-round demo crawl: local runner {local_demo:.1f} s, standalone cluster '
              f'{cluster_demo:.1f} s')
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
