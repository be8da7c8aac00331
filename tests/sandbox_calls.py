"""Functions that the sandbox tests run in the sandbox's child (tests/test_sandbox.py)."""

import ctypes
import os
import threading


def add(a, b):
    return a + b


def fail(message):
    raise ValueError(message)


def hang():
    threading.Event().wait()          # forever: only a kill ends it


def eat(megabytes):
    blocks = [bytearray(1 << 20) for _ in range(megabytes)]
    return len(blocks)


def segfault():
    ctypes.string_at(0)


def leave(code):
    os._exit(code)


def pid():
    return os.getpid()


def parse_that_hangs(*args, **kwargs):
    hang()


def parse_that_crashes(*args, **kwargs):
    segfault()
