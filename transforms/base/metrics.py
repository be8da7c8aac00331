"""Counter names, in one place. Every per-URL outcome increments one of these.

A name ending in a dot is a family: the code appends a value from a fixed set (a status name, a
rejection reason, ...), given in the comment. tests/test_metrics.py checks that the code uses
no counter name that is not declared here.
"""

import collections

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
INJECT_DENIED = 'inject.denied_address'         # seeds refused by the address policy

# generate
GENERATE_MALFORMED = 'generate.malformed'       # URL without a parseable host
GENERATE_REJECTED = 'generate.rejected.'        # + a reason of policy.generate.REJECT_REASONS
GENERATE_DUE = 'generate.due'                   # passed every check
GENERATE_SELECTED = 'generate.selected'         # written to a fetch list
GENERATE_OVER_LIMIT = 'generate.over_limit'     # due, but topN × maxNumSegments were placed
GENERATE_HOST_CAPPED = 'generate.host_capped'   # due, but its host/domain was full everywhere
GENERATE_HOSTS_AFFECTED = 'generate.hosts_capped'  # hosts/domains that hit the cap

# fetch
FETCH_STATUS = 'fetch.status.'                  # + the crawl_fetch status of each generated URL
FETCH_PROTOCOL = 'fetch.protocol.'              # + its protocol status (success, notfetching...)
FETCH_ROBOTS = 'fetch.robots.'                  # + robots.txt kind per site: parsed, allow_all,
                                                #   deny_all, unavailable
FETCH_REDIRECT_FOLLOWED = 'fetch.redirect.followed'    # redirect targets fetched in this run
FETCH_REDIRECT_DUPLICATE = 'fetch.redirect.duplicate'  # targets already in this fetch, skipped
FETCH_REDIRECT_RECORDED = 'fetch.redirect.recorded'    # targets written as `linked` records
FETCH_REDIRECT_EXCEEDED = 'fetch.redirect.exceeded'    # chains cut at http.redirect.max
FETCH_DENIED_ADDRESS = 'fetch.denied.address'  # requests refused by the address policy (URLs,
                                                #   redirect targets, robots.txt redirects)
FETCH_DEADLINE = 'fetch.deadline_exceeded'      # requests cut at http.request.deadline
FETCH_LEFT = 'fetch.left_for_next_run'          # generated URLs an interrupt left unfetched

# parse
PARSE_STATUS = 'parse.status.'                  # + success, success_redirect, failed, notparsed
PARSE_SKIPPED_NOT_SUCCESS = 'parse.skipped.not_success'  # content with an HTTP code other than 200
PARSE_SKIPPED_TRUNCATED = 'parse.skipped.truncated'      # truncated (parser.skip.truncated)
PARSE_OUTLINKS = 'parse.outlinks'               # outlinks kept (after normalize/filter/limits)
PARSE_DENIED = 'parse.denied_address'           # outlinks and refresh targets refused by the
                                                #   address policy
PARSE_FALLBACK = 'parse.fallback_tokenizer'     # documents nested too deeply for lxml, read by
                                                #   the fallback tokenizer

# updatedb
UPDATEDB_PURGED_GONE = 'updatedb.purged_gone'   # db_gone records dropped (db.update.purge.404)
UPDATEDB_DROPPED = 'updatedb.dropped_'          # + malformed or filtered (--normalize/--filter)
UPDATEDB_OUTCOME = 'updatedb.'                  # + added, updated, unchanged, notfetching,
                                                #   blocked, not_added, dropped
UPDATEDB_STATUS = 'updatedb.status.'            # + the new record's status
UPDATEDB_DENIED = 'updatedb.denied_address'     # linked URLs refused by the address policy
UPDATEDB_RATE_BIN = 'updatedb.rate_bin.'         # + bin: pages in it gained or lost (optimal)
CRAWLDB_RECORDS = 'crawldb.records'             # records written to the new crawldb

# index and dedup
INDEX_DOCUMENTS = 'index.documents'             # documents added or replaced
INDEX_DELETED = 'index.deleted.'                # + the crawldb status that removed a document
INDEX_SKIPPED = 'index.skipped'                 # fetched pages whose parse failed or is missing
INDEX_SHARDS_WRITTEN = 'index.shards_written'   # shards given a new version
PARSE_SANDBOX = 'parse.documents.'              # + timeout, crashed, error: the sandbox child
DEDUP_DUPLICATES = 'dedup.duplicates'           # pages marked db_duplicate
DEDUP_NEAR_CROWDED = 'dedup.near.crowded_bands'  # band values shared by too many pages

# sitemap (transforms/sitemap.py)
SITEMAP_SITES = 'sitemap.sites'                  # sites whose robots.txt was read (--from-robots)
SITEMAP_FROM_ROBOTS = 'sitemap.from_robots'      # sitemaps named by robots.txt Sitemap: lines
SITEMAP_DEFAULT = 'sitemap.default_sitemap_xml'  # /sitemap.xml tried: robots.txt named none
SITEMAP_FETCHED = 'sitemap.fetched'              # sitemaps fetched and read
SITEMAP_FAILED = 'sitemap.failed.'               # + the protocol status, redirect_not_followed
SITEMAP_KIND = 'sitemap.kind.'                   # + urlset, index, text, rss, atom, empty, unknown
SITEMAP_MALFORMED = 'sitemap.malformed'          # read up to a fault (or not at all): counted
SITEMAP_DROPPED = 'sitemap.dropped.'             # + no_url, invalid_url, out_of_scope, over_limit,
#                                                  bad_lastmod, bad_changefreq, bad_priority,
#                                                  malformed (a sitemap URL the normalizer refuses)
SITEMAP_URLS = 'sitemap.urls'                    # URLs found (first sitemap of a URL wins)
SITEMAP_DUPLICATE = 'sitemap.duplicate_urls'     # URLs found again in a later sitemap
SITEMAP_TOO_DEEP = 'sitemap.index_too_deep'      # sitemaps of an index beyond index.depth.max
SITEMAP_OVER_COUNT = 'sitemap.over_count'        # sitemaps beyond sitemap.count.max, not fetched
SITEMAP_OVER_HOST_COUNT = 'sitemap.over_host_count'  # beyond sitemap.host.count.max: not fetched
SITEMAP_OVER_HOST_TIME = 'sitemap.over_host_time'    # after sitemap.host.time.max: not fetched
SITEMAP_OVER_TIME = 'sitemap.over_time'          # after sitemap.time.max: not fetched
SITEMAP_INTERRUPTED = 'sitemap.interrupted'      # not fetched: the run was stopped (a signal)
SITEMAP_SITES_SKIPPED = 'sitemap.sites_skipped'  # robots.txt not read: stopped or out of time
SITEMAP_HOSTS_LIMITED = 'sitemap.hosts_limited'  # hosts cut short by sitemap.host.*.max
SITEMAP_SEEN = 'sitemap.duplicate_sitemaps'      # sitemap URLs named again (an index naming
#                                                  itself, loops): fetched once

# invertlinks
LINKDB_INVERTED = 'linkdb.inverted_links'       # (target, inlink) pairs produced
LINKDB_PARTS_WRITTEN = 'linkdb.parts_written'   # linkdb partitions written

# mergedb, mergelinkdb, mergesegs, freegen
MERGE_READ = 'merge.read'                       # records read from the inputs
MERGE_FILTERED = 'merge.filtered'               # URLs dropped by --normalize / --filter
MERGE_PURGED = 'merge.purged_gone'              # db_gone records dropped (db.update.purge.404)
MERGE_WRITTEN = 'merge.written'                 # URLs written (records, or segment URLs)
MERGE_STATUS = 'merge.status.'                  # + status: crawldb records written by status
# updatehostdb
HOSTDB_HOSTS = 'hostdb.hosts'                    # HostDatums written
HOSTDB_URLS = 'hostdb.urls'                      # crawldb URLs counted
HOSTDB_REJECTED = 'hostdb.rejected_urls'         # crawldb URLs --filter/--normalize dropped
HOSTDB_FETCHES = 'hostdb.fetch_attempts'         # fetch attempts of new segments folded in
HOSTDB_FAILING = 'hostdb.failing_hosts'          # hosts whose last fetch attempt failed
HOSTDB_RESOLVE = 'hostdb.resolve.'               # + a lookup outcome (policy.hostdb.resolved),
#                                                  or 'timeout' (counted as unknown too)

# generate with a hostdb
GENERATE_HOSTS_SKIPPED = 'generate.hostdb.skipped_hosts.'  # + why (policy.hostdb.skip_reason)
GENERATE_HOSTS_LIMITED = 'generate.hostdb.max_count_hosts'  # hosts given their own max count
GENERATE_HOSTS_DELAYED = 'generate.hostdb.delay_hosts'      # hosts given their own fetch delay
GENERATE_HOSTS_UNDEFINED = 'generate.hostdb.undefined_hosts'  # an expression lacked a value
# import-nutch
IMPORT_RECORDS = 'import.records.'              # + the part read (crawldb, linkdb, content...)
IMPORT_DUPLICATES = 'import.duplicate_urls'     # a database URL met again: the last one kept
IMPORT_CONTENT_UNMATCHED = 'import.content_without_fetch'  # content with no crawl_fetch record:
#                                                  fetch time 0, no HTTP code
# webgraph, linkrank, scoreupdater (docs/link-analysis.md)
WEBGRAPH_REJECTED = 'webgraph.rejected_sources'  # pages whose URL the normalizers/filters refused
WEBGRAPH_GONE = 'webgraph.gone_pages'           # pages whose outlinks link.delete.gone removed
WEBGRAPH_IGNORED = 'webgraph.ignored_links'     # links the link.ignore.* rules dropped
WEBGRAPH_OUTLINKS = 'webgraph.outlinks'         # links stored
WEBGRAPH_NODES = 'webgraph.nodes'               # nodes (URLs of the graph)
LINKRANK_NODES = 'linkrank.nodes'               # node scores written (per iteration)
LINKRANK_IGNORED = 'linkrank.ignored_inlinks'   # inlinks not counted (same page or domain)
SCOREUPDATER_SCORED = 'scoreupdater.scored'     # crawldb records given their node's score
SCOREUPDATER_CLEARED = 'scoreupdater.cleared'   # records not in the graph: clear score
SCOREUPDATER_NOT_IN_DB = 'scoreupdater.nodes_not_in_crawldb'  # nodes without a record

# what the stages write to the crawl directory's store (docs/scaling.md: objects and bytes)
STORE_PARTS = 'store.parts_written'             # part files written by the workers
STORE_PART_BYTES = 'store.part_bytes'           # their bytes
STORE_SPILLS = 'store.spill_files'              # the batch engine's spill files (one per unit)
STORE_SPILL_BYTES = 'store.spill_bytes'         # their bytes (each read back once)


def counter(name: str):
    """A Beam counter in the beamcrawl namespace."""
    from apache_beam.metrics import Metrics
    return Metrics.counter(NAMESPACE, name)


class BundleCounts:
    """Counts summed in a DoFn and added to the Beam counters once per bundle: an increment per
    element through Beam costs about a microsecond. Create in start_bundle, flush in
    finish_bundle."""

    def __init__(self):
        self.counts = collections.Counter()

    def inc(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def clear(self) -> None:
        """Forgets the counts so far (work that is being redone)."""
        self.counts.clear()

    def flush(self) -> None:
        for name, n in self.counts.items():
            if n:
                counter(name).inc(n)
        self.counts.clear()
