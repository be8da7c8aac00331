"""Keying URLs by their politeness queue: their host, domain or IP (fetcher.queue.mode,
partition.url.mode), so that every URL of a queue meets in one group (policy/partition.py).

The fetch (batch: per fetch slot; streaming: per queue) and generate's fetch-list parts all key
URLs with `KeyByQueue`; the host's address, in byIP mode, is resolved once per worker.
"""

from typing import Any, Callable, Optional, Tuple

import apache_beam as beam

from beamcrawl.transforms.fetcher.dns import Resolver
from beamcrawl.transforms.policy.partition import url_queue
from beamcrawl.transforms.policy.urls import UrlPolicy

__all__ = ['KeyByQueue']


class _QueueOfFn(beam.DoFn):
    def __init__(self, *, mode: str, policy: UrlPolicy, url_of: Callable[[Any], str]):
        self.mode, self.policy, self.url_of = mode, policy, url_of

    def setup(self):
        self._resolve = Resolver()

    def process(self, element):
        yield url_queue(self.url_of(element), self.mode, domain_of=self.policy.domains.domain,
                        resolve=self._resolve), element


class KeyByQueue(beam.PTransform):
    """PCollection[X] → PCollection[(queue id or None, X)]: None when the URL has no host or,
    in byIP mode, its host has no address.

    Args (keyword-only):
      mode: byHost, byDomain or byIP.
      policy: the domain helper (byDomain).
      url_of: the URL of an element (default: the element is a record; its 'url').
    """

    def __init__(self, *, mode: str, policy: UrlPolicy,
                 url_of: Optional[Callable[[Any], str]] = None):
        super().__init__()
        self.fn = _QueueOfFn(mode=mode, policy=policy, url_of=url_of or _record_url)

    def expand(self, pcoll) -> beam.PCollection[Tuple[Optional[str], Any]]:
        return pcoll | 'QueueOf' >> beam.ParDo(self.fn)


def _record_url(record: dict) -> str:
    return record['url']
