"""A worker process of the local runner in parallel mode (see runtime.make_pipeline).

Beam's own `multi_processing` mode starts `python -m apache_beam.runners.worker.sdk_worker_main`;
beamcrawl starts this module instead, which runs the same SDK harness after three settings:

* SIGINT is ignored: Ctrl-C reaches the whole process group, and the driver (the beamcrawl
  command) is the one that stops the run and reports it; the workers end with it.
* Logging as the command line's, on the same stderr, warnings only (Beam's harness logs every
  start and stop at INFO). The driver drops the copies Beam also sends it ("Worker: ...").
* The harness prints the traceback of every failed bundle on stderr; the same text goes to the
  driver, which reports it once (one line for a user's error), so it is not printed here.
"""

import logging
import os
import signal
import sys


class _QuietStderr:
    """stderr without the tracebacks the harness prints (a whole traceback is one write, then a
    newline)."""

    def __init__(self, stream):
        self.stream = stream
        self._dropped = False

    def write(self, text):
        dropped, self._dropped = self._dropped, False
        if text.startswith('Traceback (most recent call last):'):
            self._dropped = True
            return len(text)
        if dropped and text == '\n':
            return len(text)
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stderr = _QuietStderr(sys.stderr)
    from beamcrawl.pipelines.cli import setup_logging
    setup_logging()
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)
    from apache_beam.runners.worker import sdk_worker_main
    sdk_worker_main.main(sys.argv)
    # The harness is done and has closed its channels: leave without the interpreter's
    # teardown, which frees every object one by one (measured: 0.3 s after a large stage,
    # which the command waits for).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == '__main__':
    main()
