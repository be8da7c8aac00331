"""A local S3-compatible store (SeaweedFS) for s3:// crawl directories (./run_local.sh --s3 ...).

beamcrawl s3 start    build once per user (Go, 4 to 6 minutes), then start SeaweedFS on
                      127.0.0.1 with the bucket `crawl`; the last line printed is the Beam
                      options that point Beam's S3 filesystem (s3://crawl/...) at it
beamcrawl s3 stop     stop the process `start` started (the objects stay, in the home's data/)
beamcrawl s3 status   running or stopped, and the Beam options
Options: --home DIR (default: BEAMCRAWL_S3_HOME, else the home the last `start` used, else .s3
beside the source tree; the same from any directory); for `start`, the HTTP ports: --s3-port
(8333), --master-port (9333), --volume-port (8080), --filer-port (8888), or the config keys
runner.s3.port.*; each part also listens for gRPC on its port + 10000.
"""

import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('action', choices=('start', 'stop', 'status'))
    parser.add_argument('--home', metavar='DIR',
                        help='cache and data folder (default: BEAMCRAWL_S3_HOME, else the one the '
                             'last start used, else .s3 beside the source tree)')
    from beamcrawl.transforms.runners.locals3 import GRPC_OFFSET, PORTS
    for name, (default, what) in PORTS.items():
        parser.add_argument(f'--{name}-port', type=int, metavar='PORT',
                            help=f'the HTTP port of {what} (default {default}, or the config key '
                                 f'runner.s3.port.{name}); its gRPC port is PORT + {GRPC_OFFSET}')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.runners.locals3 import PORTS, LocalS3
    from beamcrawl.transforms.runners.services import default_home
    configured = {'s3': cfg['runner.s3.port.s3'], 'master': cfg['runner.s3.port.master'],
                  'volume': cfg['runner.s3.port.volume'], 'filer': cfg['runner.s3.port.filer']}
    ports = {name: getattr(args, f'{name}_port') or configured[name] for name in PORTS}
    store = LocalS3(args.home or default_home('s3'), ports=ports)
    if args.action == 'start':
        store.start()
        print(f'SeaweedFS (pid {store.pid()}) listens on 127.0.0.1 only: {store.listening()}')
        print(f'data: {store.data_dir}')
        print(f'crawl directories: {store.prefix()}NAME (Beam\'s S3 filesystem, configured by '
              f'the options below)')
        print(' '.join(store.options()))
        return 0
    if args.action == 'stop':
        stopped = store.stop()
        print('stopped: ' + ', '.join(stopped) if stopped else 'nothing was running')
        return 0
    print(f'SeaweedFS: {store.status()}')
    if not store.running():
        return 3
    print(f'crawl directories: {store.prefix()}NAME')
    print(' '.join(store.options()))
    return 0


if __name__ == '__main__':
    sys.exit(run_command('s3', sys.argv[1:]))
