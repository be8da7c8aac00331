"""Progress of long work on stderr: what is done of the total, the rate and the time left.

On a terminal it is one line rewritten in place; when stderr is not a terminal (CI logs, a
file) it is a plain log line every `runner.progress.seconds` (0: at every step). A stage says
what it will count when its pipeline is built (`stage(pipeline, name, total, unit)` gives a
`Reporter`); its DoFns report what they finished (`Reporter.add`, `Ticker` for one record at a
time); `run_pipeline` shows the progress while the pipeline runs, and each stage's last line
when it ends.

Worker processes of the local runner report by appending short lines to a file the command
made (one `write` with O_APPEND each: lines never interleave); the command reads it. On a
cluster whose workers cannot see that file, reporting does nothing (docs/report.md).
"""

import logging
import os
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, TextIO

__all__ = ['progress_text', 'format_duration', 'Line', 'Loop', 'Reporter', 'Ticker', 'Tracker',
           'attach', 'stage']

log = logging.getLogger('beamcrawl')
_POLL_S = 0.05         # how often the command reads the workers' reports (with interval 0)
_TICK_EVERY = 1000     # records a Ticker counts before it reports them


def format_duration(seconds: float) -> str:
    """4 s, 2 min 05 s, 3 h 07 min."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f'{seconds} s'
    if seconds < 3600:
        return f'{seconds // 60} min {seconds % 60:02d} s'
    return f'{seconds // 3600} h {seconds % 3600 // 60:02d} min'


def progress_text(what: str, done: int, total: int, unit: str, elapsed: float,
                  final: bool = False) -> str:
    """`what: done/total unit (p%), rate unit/s, time left` (the total and the share when it
    is known, the time left once there is a rate; `done in T` for the last line)."""
    elapsed = max(elapsed, 1e-6)
    rate = done / elapsed
    parts = [f'{what}: {done:,}' + (f'/{total:,} {unit} ({100.0 * done / total:.0f}%)'
                                     if total > 0 else f' {unit}')]
    parts.append(f'{rate:,.0f} {unit}/s' if rate >= 10 else f'{rate:,.1f} {unit}/s')
    if final:
        parts.append(f'done in {format_duration(elapsed)}')
    elif total > done and rate > 0:
        parts.append(f'{format_duration((total - done) / rate)} left')
    return ', '.join(parts)


class Line:
    """Where progress goes: on a terminal one line rewritten in place (the last one ends with a
    newline), otherwise a log line at most every `interval_s` (each final line always)."""

    def __init__(self, interval_s: float, stream: Optional[TextIO] = None,
                 tty: Optional[bool] = None):
        self.interval_s = interval_s
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.last = -1e18
        self.open = False            # a terminal line without its newline yet

    def show(self, text: str, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.interval_s:
            return
        self.last = now
        if self.tty:
            self.stream.write('\r' + text + '\x1b[K' + ('\n' if final else ''))
            self.stream.flush()
            self.open = not final
        else:
            log.info('%s', text)

    def close(self) -> None:
        if self.open:
            self.stream.write('\n')
            self.stream.flush()
            self.open = False


class Loop:
    """Progress of work the command does itself, record by record (warc-export, dump): `add`
    as it goes, `end` once (its final line)."""

    def __init__(self, what: str, total: int, unit: str, interval_s: float,
                 line: Optional[Line] = None):
        self.what, self.total, self.unit = what, total, unit
        self.line = line or Line(interval_s)
        self.done = 0
        self._since = time.monotonic()

    def add(self, n: int = 1) -> None:
        self.done += n
        self.line.show(progress_text(self.what, self.done, self.total, self.unit,
                                     time.monotonic() - self._since))

    def end(self) -> None:
        self.line.show(progress_text(self.what, self.done, self.total, self.unit,
                                     time.monotonic() - self._since, final=True), final=True)


class Reporter:
    """A stage's handle for its DoFns (pickled to the workers): `add(n)` reports n more done."""

    def __init__(self, path: Optional[str], name: str):
        self.path, self.name = path, name

    def add(self, n: int) -> None:
        if self.path is None or n <= 0:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError:
            return            # a worker that cannot see the command's file (a cluster)
        try:
            os.write(fd, f'{self.name}\t{n}\n'.encode('utf-8'))
        except OSError:
            pass
        finally:
            os.close(fd)


class Ticker:
    """Counts records one at a time for a Reporter, reporting every thousand and at `flush`
    (call it from finish_bundle)."""

    def __init__(self, reporter: Reporter):
        self.reporter, self.count = reporter, 0

    def tick(self) -> None:
        self.count += 1
        if self.count >= _TICK_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.count:
            self.reporter.add(self.count)
            self.count = 0


class _Stage:
    def __init__(self, name: str, total: int, unit: str):
        self.name, self.total, self.unit = name, total, unit
        self.done = 0
        self.started: Optional[float] = None
        self.finished = False


class Tracker:
    """The command's side: the stages of one pipeline and the file their workers report to."""

    def __init__(self, interval_s: float, line: Optional[Line] = None):
        self.interval_s = interval_s
        self.line = line
        self.stages: List[_Stage] = []
        self.path: Optional[str] = None
        self.what = ''
        self._offset = 0
        # when the stage that reports next began: the pipeline's start, then the end of the
        # last stage that finished (its work follows)
        self._since = time.monotonic()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def stage(self, name: str, total: int, unit: str) -> Reporter:
        if self.path is None:
            fd, self.path = tempfile.mkstemp(prefix='beamcrawl-progress-')
            os.close(fd)
        taken = {s.name for s in self.stages}
        unique, n = name, 1
        while unique in taken:             # a second stage of the same kind: `map 2`
            n += 1
            unique = f'{name} {n}'
        self.stages.append(_Stage(unique, total, unit))
        return Reporter(self.path, unique)

    def start(self, what: str) -> None:
        if not self.stages:
            return
        self.what = what
        self._since = time.monotonic()
        if self.line is None:
            self.line = Line(self.interval_s)
        self._thread = threading.Thread(target=self._run, name='progress', daemon=True)
        self._thread.start()

    def stop(self, completed: bool) -> None:
        """The pipeline ended: the last line of each stage that reported (of every stage when
        it completed), and the file is removed."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._read()
            for s in self.stages:
                if not s.finished and (completed or s.done):
                    self._show(s, final=True)
            self.line.close()
        if self.path is not None:
            try:
                os.remove(self.path)
            except OSError:
                pass
            self.path = None

    def _run(self) -> None:
        while not self._stop.wait(max(_POLL_S, min(self.interval_s, 1.0))):
            current = self._read()
            if current is not None:
                self._show(current, final=current.done >= current.total > 0)

    def _read(self) -> Optional[_Stage]:
        """Reads what the workers reported since the last read; the stage last reported."""
        try:
            with open(self.path, 'rb') as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return None
        end = data.rfind(b'\n') + 1      # a line being written is read next time
        self._offset += end
        by_name: Dict[str, _Stage] = {s.name: s for s in self.stages}
        current = None
        for raw in data[:end].splitlines():
            name, _, n = raw.decode('utf-8', 'replace').partition('\t')
            s = by_name.get(name)
            if s is None or not n.isdigit():
                continue
            if s.started is None:
                s.started = self._since
            s.done += int(n)
            current = s
        return current

    def _show(self, s: _Stage, final: bool = False) -> None:
        if s.finished:
            return
        s.finished = final
        now = time.monotonic()
        elapsed = now - (s.started if s.started is not None else self._since)
        if final:
            self._since = now
        words = self.what.split()
        label = self.what if words and words[0] == s.name else f'{self.what} {s.name}'
        self.line.show(progress_text(label, s.done, s.total, s.unit, elapsed, final=final),
                       final=final)


def attach(pipeline, interval_s: float) -> Tracker:
    """Gives a pipeline (make_pipeline's) a Tracker for its stages."""
    tracker = Tracker(interval_s)
    pipeline._beamcrawl_progress = tracker        # pylint: disable=protected-access
    return tracker


def stage(pipeline, name: str, total: int, unit: str) -> Reporter:
    """A Reporter for a stage of `pipeline` that will count `total` `unit` (records,
    partitions, units); one that reports nowhere when the pipeline has no Tracker."""
    tracker = getattr(pipeline, '_beamcrawl_progress', None)
    if tracker is None:
        return Reporter(None, name)
    return tracker.stage(name, total, unit)
