"""A local Flink 1.19 cluster to run beamcrawl on (./run_local.sh --flink ...).

beamcrawl flink start    build once, then start Flink, the Beam job server and a worker pool;
                         the last line printed is the Beam options to add to any command;
                         --taskmanagers N: N TaskManagers; --isolate: each with a private /tmp
                         and working directory (runners/localflink.py)
beamcrawl flink stop     stop every process `start` started
beamcrawl flink status   what runs
beamcrawl flink demo     start, crawl the demo web 2 rounds on the cluster and on the local
                         runner with the same --now, compare the two, stop
Options: --home DIR (default: BEAMCRAWL_FLINK_HOME, else the home the last `start` used,
else .flink beside the source tree; the same from any directory); for `start` and `demo`, where
the cluster listens: --bind ADDRESS (default localhost: loopback only), --rest-port (8081),
--rpc-port (6123), --job-port (8099), --artifact-port (8098), --pool-port (50000), or the config
keys runner.flink.bind and runner.flink.port.*.
"""

import os
import shutil
import sys

from beamcrawl.pipelines.cli import run_command

DEMO_NOW = '2026-11-22T00:00:00Z'


def add_arguments(parser):
    parser.add_argument('action', choices=('start', 'stop', 'status', 'demo'))
    parser.add_argument('--home', metavar='DIR',
                        help='cache folder (default: BEAMCRAWL_FLINK_HOME, else the one the last '
                             'start used, else .flink beside the source tree)')
    parser.add_argument('--bind', metavar='ADDRESS',
                        help='the address every process of the cluster listens on (default '
                             'localhost: loopback only; or the config key runner.flink.bind)')
    parser.add_argument('--taskmanagers', type=int, default=1, metavar='N',
                        help='start: N TaskManagers (default 1), each starting its own SDK '
                             'workers')
    parser.add_argument('--isolate', action='store_true',
                        help='start: run each TaskManager and its workers with a private /tmp '
                             'and working directory (unshare --mount), as on separate hosts')
    from beamcrawl.transforms.runners.localflink import PORTS
    for name, (default, what) in PORTS.items():
        parser.add_argument(f'--{name}-port', type=int, metavar='PORT',
                            help=f'the port of {what} (default {default}, or the config key '
                                 f'runner.flink.port.{name})')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.runners.localflink import LocalFlink
    from beamcrawl.transforms.runners.services import default_home
    configured = {'rest': cfg['runner.flink.port.rest'], 'rpc': cfg['runner.flink.port.rpc'],
                  'job': cfg['runner.flink.port.job'],
                  'artifact': cfg['runner.flink.port.artifact'],
                  'pool': cfg['runner.flink.port.pool']}
    ports = {name: getattr(args, f'{name}_port') or port for name, port in configured.items()}
    flink = LocalFlink(args.home or default_home('flink'), ports=ports,
                       bind=args.bind or cfg['runner.flink.bind'],
                       taskmanagers=args.taskmanagers, isolate=args.isolate)
    if args.action == 'start':
        flink.start(probe_timeout=cfg['runner.probe.timeout'])
        print(' '.join(flink.options()))
        return 0
    if args.action == 'stop':
        stopped = flink.stop()
        print('stopped: ' + ', '.join(stopped) if stopped else 'nothing was running')
        return 0
    if args.action == 'status':
        for name, state in flink.status().items():
            print(f'{name}: {state}')
        return 0 if flink.running() else 3
    return _demo(flink, args, cfg)


def _demo(flink, args, cfg):
    from beamcrawl.transforms.storage.crawl_diff import crawl_differences
    when = args.now or DEMO_NOW
    base = os.path.join(flink.home, 'demo')
    shutil.rmtree(base, ignore_errors=True)
    cluster, local = os.path.join(base, 'cluster'), os.path.join(base, 'local')
    flink.start(probe_timeout=cfg['runner.probe.timeout'])
    try:
        code = run_command('demo', [cluster, '--rounds', '2', '--now', when, *flink.options()])
    finally:
        flink.stop()
    if code != 0:
        return code
    code = run_command('demo', [local, '--rounds', '2', '--now', when])
    if code != 0:
        return code
    differences = crawl_differences(cluster, local)
    if differences:
        print('the cluster and the local runner differ:\n  ' + '\n  '.join(differences))
        return 1
    print('same results as the local runner (crawldb and linkdb, wall-clock fetch times aside)')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('flink', sys.argv[1:]))
