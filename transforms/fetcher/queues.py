"""Keying URLs by their politeness queue: their host, domain or IP (fetcher.queue.mode,
partition.url.mode), so that every URL of a queue meets in one group (policy/partition.py).

The fetch (batch: per fetch slot; streaming: per queue) and generate's fetch-list parts all key
URLs with `KeyByQueue`; the host's address, in byIP mode, is resolved once per worker.
"""

from typing import Any, Callable, FrozenSet, Optional, Tuple

import apache_beam as beam

from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.policy.partition import partition, url_queue
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['KeyByQueue']


class _QueueOfFn(beam.DoFn):
    def __init__(self, *, mode: str, policy: UrlPolicy, url_of: Callable[[Any], str],
                 prepare: Optional[Callable[[Any], Any]], skip: FrozenSet[str],
                 slots: Optional[int]):
        self.mode, self.policy, self.url_of = mode, policy, url_of
        self.prepare, self.skip, self.slots = prepare, skip, slots

    def setup(self):
        self._resolve = Resolver()

    def process(self, element):
        if self.prepare is not None:
            element = self.prepare(element)
        url = self.url_of(element)
        if url in self.skip:
            return
        queue = url_queue(url, self.mode, domain_of=self.policy.domains.domain,
                          resolve=self._resolve)
        if self.slots is None:
            yield queue, element
        else:
            yield partition(queue or url, self.slots), (queue, element)


class KeyByQueue(beam.PTransform):
    """PCollection[X] → PCollection[(queue id or None, X)]: None when the URL has no host or,
    in byIP mode, its host has no address.

    Args (keyword-only):
      mode: byHost, byDomain or byIP.
      policy: the domain helper (byDomain).
      url_of: the URL of an element (default: the element is a record; its 'url').
      prepare: applied to each element first (default: none).
      skip: URLs whose elements are left out.
      slots: with a number, the output is (fetch slot, (queue id or None, X)) instead: the
        queue's stable hash over `slots` (policy/partition.py), or the URL's when it has none.
    One step for all of it: each step costs the local runner about 5 ms to build and run, on
    every fetch (docs/performance.md).
    """

    def __init__(self, *, mode: str, policy: UrlPolicy,
                 url_of: Optional[Callable[[Any], str]] = None,
                 prepare: Optional[Callable[[Any], Any]] = None,
                 skip: FrozenSet[str] = frozenset(), slots: Optional[int] = None):
        super().__init__()
        self.fn = _QueueOfFn(mode=mode, policy=policy, url_of=url_of or _record_url,
                             prepare=prepare, skip=frozenset(skip), slots=slots)

    def expand(self, pcoll) -> beam.PCollection[Tuple[Any, Any]]:
        return pcoll | 'QueueOf' >> beam.ParDo(self.fn)


def _record_url(record: dict) -> str:
    return record['url']
