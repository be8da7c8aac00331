"""A child process for calls that may hang, crash or take too much memory: the parse of a
document by readers in native code (PDFium) or of formats made to hurt (docs/documents.md
"Hostile documents").

`Sandbox(memory_bytes).call('module:function', args, timeout)` runs the function in a child
process (started at the first call, kept for the next ones) whose address space is limited to
`memory_bytes`, and returns (outcome, value):

* ('ok', the function's result),
* ('error', 'Type: message') when it raised (a MemoryError at the limit among them),
* ('timeout', '') when it had not answered after `timeout` seconds: the child is killed,
* ('crashed', 'exit N' or 'signal N') when the child died (a segfault, an abort): the next call
  starts another.

Arguments and results travel pickled, length-prefixed, over the child's stdin and stdout. The
child is started with fork and exec (`python -m beamcrawl.transforms.base.sandbox`), never
forked from a process with threads; it ignores SIGINT (the command that owns it stops it).
"""

import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from typing import Any, Optional, Tuple

__all__ = ['Sandbox']

_HEADER = struct.Struct('<Q')


class Sandbox:
    def __init__(self, memory_bytes: int):
        self.memory_bytes = memory_bytes
        self._child: Optional[subprocess.Popen] = None

    def call(self, function: str, args: tuple, timeout: Optional[float],
             kwargs: Optional[dict] = None) -> Tuple[str, Any]:
        """Runs `function` ('module:name') on `args` and `kwargs` in the child (timeout None or
        < 0: no bound)."""
        child = self._start()
        try:
            _write(child.stdin, pickle.dumps((function, args, kwargs or {}),
                                             protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, OSError):
            return self._crashed()
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        try:
            data = _read(child.stdout.fileno(), deadline)
        except TimeoutError:
            self.close()
            return 'timeout', ''
        if data is None:
            return self._crashed()
        return pickle.loads(data)

    def close(self) -> None:
        """Stops the child (the next call starts another)."""
        child, self._child = self._child, None
        if child is not None:
            if child.poll() is None:
                child.kill()
            child.wait()
            for stream in (child.stdin, child.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

    def _start(self) -> subprocess.Popen:
        if self._child is None or self._child.poll() is not None:
            self.close()
            path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
            self._child = subprocess.Popen(
                [sys.executable, '-m', 'beamcrawl.transforms.base.sandbox',
                 str(self.memory_bytes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                env={**os.environ, 'PYTHONPATH': path})
        return self._child

    def _crashed(self) -> Tuple[str, str]:
        child = self._child
        code = child.wait() if child is not None else None
        self.close()
        if code is not None and code < 0:
            return 'crashed', f'signal {-code}'
        return 'crashed', f'exit {code}'


def _write(stream, data: bytes) -> None:
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read(fd: int, deadline: Optional[float]) -> Optional[bytes]:
    """One message from `fd`; None at end of file; TimeoutError after `deadline`."""
    header = _read_exactly(fd, _HEADER.size, deadline)
    if header is None:
        return None
    return _read_exactly(fd, _HEADER.unpack(header)[0], deadline)


def _read_exactly(fd: int, size: int, deadline: Optional[float]) -> Optional[bytes]:
    parts, left = [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b''.join(parts)


def _serve(memory_bytes: int) -> None:
    """The child: limits its address space, then answers calls until its stdin ends."""
    import resource
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    stdin, stdout = sys.stdin.buffer.fileno(), sys.stdout.buffer
    sys.stdout = sys.stderr                     # what the callee prints never reaches the pipe
    while True:
        data = _read(stdin, None)
        if data is None:
            return
        try:
            function, args, kwargs = pickle.loads(data)
            module, _, name = function.partition(':')
            result = ('ok', getattr(importlib.import_module(module), name)(*args, **kwargs))
            reply = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as e:  # pylint: disable=broad-except  (the caller gets every error)
            reply = pickle.dumps(('error', f'{type(e).__name__}: {e}'[:300]),
                                 protocol=pickle.HIGHEST_PROTOCOL)
        _write(stdout, reply)


if __name__ == '__main__':
    _serve(int(sys.argv[1]))
