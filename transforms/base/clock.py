"""The injected clock: `--now`, and times for humans. Without Beam: a command reads
its `--now` before any pipeline is built."""

import datetime
import time
from typing import Optional

from beamcrawl.transforms.base.errors import UserError

__all__ = ['parse_now', 'format_time']


def parse_now(text: Optional[str]) -> int:
    """`--now`: ISO-8601 with a zone, or epoch milliseconds. None: the wall clock."""
    if text is None or text == '':
        return int(time.time() * 1000)
    text = text.strip()
    if text.lstrip('-').isdigit():
        return int(text)
    try:
        when = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        raise UserError(f'--now {text!r}: expected ISO-8601 with a zone '
                        f'(2026-11-22T10:00:00Z) or epoch milliseconds') from None
    if when.tzinfo is None:
        raise UserError(f'--now {text!r}: give a zone (Z or +01:00), or epoch milliseconds')
    return int(when.timestamp() * 1000)


def format_time(ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC string (for humans)."""
    when = datetime.datetime.fromtimestamp(ms / 1000.0, datetime.timezone.utc)
    return when.isoformat(timespec='seconds').replace('+00:00', 'Z')
