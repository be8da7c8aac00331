"""Logs for humans: our progress lines on stderr, only warnings from Beam, and none of Beam's
harmless noise (the command and the local runner's worker processes set them up alike)."""

import logging
import os
import sys
import threading

# Messages of Apache Beam that are harmless here and would only alarm a user:
NOISE = (
    'apitools not found',           # at import: optional Google Cloud libraries, not used
    'compatible bson package',      # at import: Beam's MongoDB connector, skipped (cli.py)
    'beam:metrics:bounded_trie',    # Flink's 2.62 job server does not know this 2.77 metric type
    'Multiplexer hanging up',       # a LOOPBACK worker's data channel closing after its job ended
    # The local runner with beamcrawl's worker processes (runners/runtime.py): Beam warns that
    # its own multi-process mode is not selected, and each worker that it has no session file.
    'If direct_num_workers is not equal to 1',
    'No semi_persistent_directory found',
    # Beam's S3 filesystem logs every listing on the root logger, at INFO
    'Finished listing ',
    # Beam's HDFS filesystem, for every text file written (readdb --stats's scratch output)
    'Mime types are not supported',
)


_WORKER_LOGS = 'apache_beam.runners.portability.local_job_service'


class DropBeamNoise(logging.Filter):
    """Drops the NOISE messages (and tracebacks that carry them), and Beam's own report of an
    error in a pipeline: the error reaches the command, which reports it once (one line for an
    input, disk or permission problem, with its traceback otherwise)."""

    def filter(self, record):
        if record.name == _WORKER_LOGS and str(record.msg).startswith('Worker: '):
            return False        # local workers log on stderr themselves (localworker.py)
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += str(record.exc_info[1])
        if record.levelno >= logging.ERROR and record.name.startswith('apache_beam') and (
                record.exc_info or 'Traceback' in text):
            return False
        return not any(noise in text for noise in NOISE)




_default_excepthook = threading.excepthook


def _quiet_excepthook(args):
    """A LOOPBACK worker's gRPC threads end with an uncaught `CANCELLED: Multiplexer hanging up`
    when the job is over; that traceback is not shown. Any other one is."""
    if args.exc_value is not None and any(n in str(args.exc_value) for n in NOISE):
        return
    _default_excepthook(args)


def setup_logging() -> None:
    """Human logs on stderr: our INFO progress lines, only warnings from Beam."""
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(message)s',
                        datefmt='%H:%M:%S', stream=sys.stderr, force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(DropBeamNoise())
    for noisy in ('apache_beam', 'absl', 'matplotlib'):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # urllib3 warns, with a traceback, about every malformed response a hostile server sends;
    # the fetcher records those as statuses and counters instead.
    logging.getLogger('urllib3').setLevel(logging.ERROR)
    quiet_grpc_core()


def quiet_grpc_core() -> None:
    """gRPC's C core logs through absl, which writes every INFO line to stderr unless told
    otherwise; its `GRPC_VERBOSITY` is read once, when gRPC starts. The local runner's channels
    to its worker processes close with a GOAWAY when a worker fails, and the core logs that at
    INFO (`... Got goaway [2] err=UNAVAILABLE ...`) beside the command's one-line error. Its
    errors are still shown; a user who sets GRPC_VERBOSITY keeps theirs. Set before Beam (and
    so gRPC) is imported, it reaches the forked worker processes too."""
    os.environ.setdefault('GRPC_VERBOSITY', 'ERROR')


def install_filters() -> None:
    """The filters that must be in place before Beam is imported (it warns while importing)."""
    logging.getLogger().addFilter(DropBeamNoise())
    threading.excepthook = _quiet_excepthook
    quiet_grpc_core()
