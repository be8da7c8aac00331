"""beamcrawl's pipelines: one thin module per command (see pipelines/cli.py).

A command module imports what its pipeline needs (Beam, transforms) inside its functions, not at
the top: `beamcrawl <command> --help` then answers in 0.03 s instead of paying Beam's import
(0.4 s) first.
"""

import logging
import threading

# Messages of Apache Beam that are harmless here and would only alarm a user:
NOISE = (
    'apitools not found',           # at import: optional Google Cloud libraries, not used
    'compatible bson package',      # at import: Beam's MongoDB connector, skipped (cli.py)
    'beam:metrics:bounded_trie',    # Flink's 2.62 job server does not know this 2.77 metric type
    'Multiplexer hanging up',       # a LOOPBACK worker's data channel closing after its job ended
    # The local runner with beamcrawl's worker processes (transforms/runners/runtime.py): Beam warns that
    # its own multi-process mode is not selected, and each worker that it has no session file.
    'If direct_num_workers is not equal to 1',
    'No semi_persistent_directory found',
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


logging.getLogger().addFilter(DropBeamNoise())     # before Beam is imported and warns


_default_excepthook = threading.excepthook


def _quiet_excepthook(args):
    """A LOOPBACK worker's gRPC threads end with an uncaught `CANCELLED: Multiplexer hanging up`
    when the job is over; that traceback is not shown. Any other one is."""
    if args.exc_value is not None and any(n in str(args.exc_value) for n in NOISE):
        return
    _default_excepthook(args)


threading.excepthook = _quiet_excepthook
