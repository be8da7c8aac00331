"""The fetch engine, in the parts a reader looks for:

  settings.py       FetcherSettings (built from config by transforms/settings.py)
  engine.py         Fetcher: the queues, the worker threads, one URL's fetch, the output records
  http.py           HttpClient: one GET with a content limit and bounded decoding
  robots_cache.py   robots.txt per site, fetched once per run
  redirects.py      redirect targets and the records that carry them
  monitor.py        time limit, throughput threshold, progress line

The per-queue politeness decisions themselves are pure policy (transforms/policy/politeness.py).
"""

from beamcrawl.transforms.fetcher.engine import Fetcher
from beamcrawl.transforms.fetcher.http import HttpSettings
from beamcrawl.transforms.fetcher.settings import FetcherSettings

__all__ = ['Fetcher', 'FetcherSettings', 'HttpSettings']
