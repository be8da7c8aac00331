"""FetchResult: what one run of a segment's fetch did (transforms/fetch.py FetchRun)."""

import dataclasses
from typing import Dict

__all__ = ['FetchResult']


@dataclasses.dataclass
class FetchResult:
    """What a fetch run did, once its pipeline has ended."""
    left: int                            # generated URLs not done (an interrupted run)
    queue_times: Dict[str, float]        # when each queue may be requested next (epoch s)
    statuses: Dict[str, int]             # crawl_fetch statuses of the URLs this run did
    protocols: Dict[str, int]            # their protocol statuses
    done: Dict[str, dict]                # every generated URL done, by any run: its record
