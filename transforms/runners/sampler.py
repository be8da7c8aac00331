"""Beam's state sampler, made prompt at the end of a bundle.

While a bundle runs, Beam's SDK harness samples which step is running in a thread of its own
(the per-step msec counters). Between two samples that thread sleeps, longer and longer up to
200 ms (Beam 2.77, runners/worker/statesampler.py), and the end of the bundle waits for the
sleep in course to end: 0 to 200 ms, 0.1 s on average, added to every bundle that ran longer
than about a second, in every stage and every worker. After a fetch, 58 ms of the 80 ms between
the last journal write and the end of the pipeline were this wait (docs/performance.md,
"Smaller costs").

beamcrawl reads none of the msec counters, so `prompt_state_sampler()` makes the longest sleep
`SAMPLING_PERIOD_MS`: the sampler then wakes up to 100 times a second, without the GIL, which
costs nothing measurable. Every process that runs bundles calls it before its first one: the
commands (runtime.py), the local runner's workers (localworker.py) and the Flink cluster's
(sdkboot.py).
"""

__all__ = ['SAMPLING_PERIOD_MS', 'prompt_state_sampler']

SAMPLING_PERIOD_MS = 10


def prompt_state_sampler() -> None:
    """Makes the state sampler of every bundle started in this process sleep at most
    SAMPLING_PERIOD_MS between samples (idempotent)."""
    from apache_beam.runners.worker import statesampler
    if getattr(statesampler.StateSampler, 'prompt', False):
        return
    beam_sampler = statesampler.StateSampler

    class PromptStateSampler(beam_sampler):
        """Beam's StateSampler with a sampling period of SAMPLING_PERIOD_MS."""
        prompt = True

        def __init__(self, prefix, counter_factory, sampling_period_ms=SAMPLING_PERIOD_MS):
            super().__init__(prefix, counter_factory,
                             sampling_period_ms=min(sampling_period_ms, SAMPLING_PERIOD_MS))

    statesampler.StateSampler = PromptStateSampler
