"""The C inner loops of the CrawlDatum codec (transforms/storage/_datums.c), when they are built.

`codec` is the C module, or None: not built (the install found no C compiler: setup.py), or
turned off with the environment variable BEAMCRAWL_NATIVE=0. Without it the same loops run in
Python (datumcodec.py), which are also the C's test oracle (docs/performance.md, "The codec's
inner loops in C"). `missing()` says why it is not there, for the one line a command logs.
"""

import os
from typing import Optional

__all__ = ['codec', 'missing']

codec = None
_why = 'turned off (BEAMCRAWL_NATIVE=0)'
if os.environ.get('BEAMCRAWL_NATIVE', '1') != '0':
    try:
        from beamcrawl.transforms.storage import _datums as codec
    except ImportError as e:               # not built: the Python loops do the same
        _why = f'not built ({e})'


def missing() -> Optional[str]:
    """Why the C loops are not in use; None when they are."""
    return None if codec is not None else _why
