"""The `beamcrawl` program's start-up: the cyclic garbage collector is off while it imports.

Importing Beam and beamcrawl makes about half a million objects, most of them containers that
live as long as the process; with the collector on, they set off dozens of collections that find
nothing to free: 0.08-0.10 s of the 0.7 s before a command's first step (docs/performance.md,
"Start-up"). `begin()` turns the collector off at the program's start; `end()` turns it back on
when the command builds its first pipeline (runtime.make_pipeline), or when the command ends
without one. What exists then (modules, classes, settings) is moved out of the collector's sight
(gc.freeze), so later full collections do not walk it again; forked workers share it unchanged.

A process that did not call begin() (a library user's, the tests') is left alone.
"""

import gc

__all__ = ['begin', 'end']

_state = {'begun': False}


def begin() -> None:
    """Turns the cyclic collector off until end(), if it is on."""
    if gc.isenabled():
        gc.disable()
        _state['begun'] = True


def end() -> None:
    """Freezes what the start-up made and turns the collector back on (once; after begin())."""
    if _state['begun']:
        _state['begun'] = False
        gc.freeze()
        gc.enable()
