"""CountingDoFn: a DoFn counting into BundleCounts (base/metrics.py), apart from the counter
names so that those are read where Beam is not imported yet (the fetch's head start,
docs/performance.md)."""

import apache_beam as beam

from beamcrawl.transforms.base.metrics import BundleCounts

__all__ = ['CountingDoFn']


class CountingDoFn(beam.DoFn):
    """A DoFn that counts into `self.counts` (BundleCounts), added to Beam's counters once per
    bundle. A subclass with a start_bundle or finish_bundle of its own calls these too."""

    def start_bundle(self):
        self.counts = BundleCounts()

    def finish_bundle(self):
        self.counts.flush()
