"""Beam's reading of a DoFn's state and timer specs, remembered per DoFn.

`userstate.get_dofn_specs(dofn)` (Beam 2.77) inspects the signature of every method of the DoFn
(about 30, most of them DoFn's own) to find state and timer parameters, and Beam asks it about
four times per DoFn while it builds, translates and starts a pipeline: 70 times for the fetch's
pipeline, which made a third of the 0.1-0.15 s between building the pipeline and the fetch's
first request (docs/performance.md, "Smaller costs"). The answer depends only on the DoFn
object's methods, so `remember_dofn_specs()` keeps it per object, weakly (it goes with the
DoFn); a DoFn that cannot be weakly referenced or hashed is read each time, as before.
Every process that builds or runs pipelines calls it (runtime.py, localworker.py, sdkboot.py).
"""

import weakref

__all__ = ['remember_dofn_specs']


def remember_dofn_specs() -> None:
    """Makes userstate.get_dofn_specs remember its answer per DoFn object (idempotent)."""
    from apache_beam.transforms import userstate
    read = userstate.get_dofn_specs
    if getattr(read, 'remembered', False):
        return
    known: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()

    def get_dofn_specs(dofn):
        try:
            specs = known.get(dofn)
        except TypeError:                  # not hashable, or no weak reference to it
            return read(dofn)
        if specs is None:
            specs = read(dofn)
            try:
                known[dofn] = specs
            except TypeError:
                pass
        state_specs, timer_specs = specs
        return set(state_specs), set(timer_specs)    # callers get sets of their own, as before

    get_dofn_specs.remembered = True
    get_dofn_specs.read = read                       # what it asks once per DoFn
    get_dofn_specs.__doc__ = read.__doc__
    userstate.get_dofn_specs = get_dofn_specs
