"""A local HDFS (a NameNode and one DataNode) to keep files on (./run_local.sh --hdfs ...).

beamcrawl hdfs start    build once with Maven, then start the HDFS on 127.0.0.1 and wait until
                        it works; prints what listens where, the form of a crawl directory on it
                        (hdfs://PATH), and last the Beam options to add to any command
beamcrawl hdfs stop     stop the process `start` started (the data stays in the home's data/)
beamcrawl hdfs status   running or stopped, and the options
Options: --home DIR (default: BEAMCRAWL_HDFS_HOME, else the home the last `start` used, else
.hdfs beside the source tree; the same from any directory); for `start`: --rpc-port (8020),
--http-port (9870, WebHDFS), or the config keys runner.hdfs.port.*.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('action', choices=('start', 'stop', 'status'))
    parser.add_argument('--home', metavar='DIR',
                        help='cache and data folder (default: BEAMCRAWL_HDFS_HOME, else the one '
                             'the last start used, else .hdfs beside the source tree)')
    from beamcrawl.transforms.runners.localhdfs import PORTS
    for name, (default, what) in PORTS.items():
        parser.add_argument(f'--{name}-port', type=int, metavar='PORT',
                            help=f'the port of {what} (default {default}, or the config key '
                                 f'runner.hdfs.port.{name})')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.runners.localhdfs import PORTS, LocalHdfs
    from beamcrawl.transforms.runners.services import default_home
    configured = {'rpc': cfg['runner.hdfs.port.rpc'], 'http': cfg['runner.hdfs.port.http']}
    ports = {name: getattr(args, f'{name}_port') or configured[name] for name in PORTS}
    hdfs = LocalHdfs(args.home or default_home('hdfs'), ports=ports)
    if args.action == 'start':
        hdfs.start()
        print(f'hdfs: listening on {hdfs.listening()}')
        print(f'hdfs: data in {hdfs.data_dir} (kept by stop)')
        print(f'hdfs: paths on it: {hdfs.prefix()}PATH with the options below (no host in '
              f'the URL: {hdfs.prefix()}crawl is /crawl on this HDFS)')
        print(' '.join(hdfs.options()))
        return 0
    if args.action == 'stop':
        stopped = hdfs.stop()
        print('stopped: ' + ', '.join(stopped) if stopped else 'nothing was running')
        return 0
    print(f'hdfs: {hdfs.status()}')
    if not hdfs.running():
        return 3
    print(' '.join(hdfs.options()))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('hdfs', sys.argv[1:]))
