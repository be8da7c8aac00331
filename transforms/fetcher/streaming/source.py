"""FetchListStayingOpen: the fetch list of a streaming fetch, from a source that does not end
(the command cancels the job once the journal holds every URL: see the package's docstring)."""

from typing import List

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.utils.timestamp import Duration

from beamcrawl.transforms.storage.parts import iter_records

__all__ = ['FetchListStayingOpen']


class _TwoPhases(RestrictionProvider):
    """[0, 2): offset 0 is "emit the records", offset 1 is "the fetch is drained"."""

    def initial_restriction(self, element):
        return OffsetRange(0, 2)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()

    def split(self, element, restriction):
        yield restriction


class _StayOpenFn(beam.DoFn):
    """paths → their records; then the element stays open, deferring itself every `check_s`,
    until the job is cancelled."""

    def __init__(self, check_s: float):
        self.check_s = check_s

    @beam.DoFn.unbounded_per_element()
    def process(self, paths, tracker=beam.DoFn.RestrictionParam(_TwoPhases())):
        if tracker.current_restriction().start == 0:
            if not tracker.try_claim(0):
                return
            yield from iter_records(paths)
        tracker.defer_remainder(Duration.of(self.check_s))


class FetchListStayingOpen(beam.PTransform):
    """PBegin → the records of the fetch-list files `paths`, from a source that does not end
    (see the module's docstring: the command cancels the job)."""

    def __init__(self, paths: List[str], check_s: float = 5.0):
        super().__init__()
        self.paths, self.check_s = list(paths), check_s

    def expand(self, pbegin):
        return (pbegin
                | 'Paths' >> beam.Create([self.paths])
                | 'Read' >> beam.ParDo(_StayOpenFn(self.check_s)))
