"""Counter names, in one place. Every per-URL outcome increments one of these."""

import collections

from apache_beam.metrics import Metrics

NAMESPACE = 'beamcrawl'

# inject
INJECT_LINES = 'inject.lines'                   # seed lines holding a URL (not blank, not comment)
INJECT_MALFORMED = 'inject.malformed'           # unparseable line or URL
INJECT_FILTERED = 'inject.filtered'             # rejected by the URL filters
INJECT_BAD_METADATA = 'inject.bad_metadata'     # a metadata value ignored (URL still injected)
INJECT_INJECTED = 'inject.injected'             # accepted seed lines
INJECT_DUPLICATE = 'inject.duplicate_seeds'     # accepted lines repeating an earlier seed URL
INJECT_NEW = 'inject.new'                       # URLs added to the crawldb
INJECT_ALREADY_KNOWN = 'inject.already_known'   # URLs in the crawldb, left unchanged
INJECT_MERGED = 'inject.merged'                 # URLs in the crawldb, changed (--overwrite/--update)
INJECT_PURGED = 'inject.purged_gone'            # db_gone records dropped (db.update.purge.404)
INJECT_OLD_FILTERED = 'inject.old_rejected'     # existing records dropped by --filter-normalize-all

# generate
GENERATE_MALFORMED = 'generate.malformed'       # URL without a parseable host
GENERATE_REJECTED = 'generate.rejected.'        # + a reason of policy.generate.REJECT_REASONS
GENERATE_DUE = 'generate.due'                   # passed every check
GENERATE_SELECTED = 'generate.selected'         # written to a fetch list
GENERATE_OVER_LIMIT = 'generate.over_limit'     # due, but topN × maxNumSegments were placed
GENERATE_HOST_CAPPED = 'generate.host_capped'   # due, but its host/domain was full everywhere
GENERATE_HOSTS_AFFECTED = 'generate.hosts_capped'  # hosts/domains that hit the cap

CRAWLDB_RECORDS = 'crawldb.records'             # records written to the new crawldb


def counter(name: str):
    """A Beam counter in the beamcrawl namespace."""
    return Metrics.counter(NAMESPACE, name)


class BundleCounts:
    """Counts summed in a DoFn and added to the Beam counters once per bundle: an increment per
    element through Beam costs about a microsecond. Create in start_bundle, flush in
    finish_bundle."""

    def __init__(self):
        self.counts = collections.Counter()

    def inc(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def flush(self) -> None:
        for name, n in self.counts.items():
            if n:
                counter(name).inc(n)
        self.counts.clear()
