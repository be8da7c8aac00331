"""The fetch journal: where fetch results are written as they complete, and how a fetch resumes.

  paths.py        the journal's files and how to read them (a killed writer's too)
  writing.py      JournalWriter: one fetcher's results, flushed per write; a run's commit
  reading.py      what earlier runs did: the URLs done (read_journals)
  queuetimes.py   when each politeness queue may be requested next
  publishing.py   the journal turned into the segment's parts

A fetch writes into `segments/<seg>/.fetch/` (docs/crawl-dir.md, "Fetching"):

  run-<id>/<writer>.crawl_fetch.avro   CrawlDatum records, appended as results complete
  run-<id>/<writer>.content.avro       Content records, appended as results complete
  run-<id>/<writer>.warc.avro          WARC records of each exchange (fetcher.store.warc)
  run-<id>/<writer>.queues.json        when each queue may be requested next (written last)
  run-<id>.committed                   the journal files of bundles the runner committed

Every record carries `_src_` in its metadata: the generated URL it stems from. A generated URL
is *done* once its own crawl_fetch record is in the journal; the records it led to (its content,
a redirect target's records, `linked` records) are written before it, so a done URL has all of
them. Each write is flushed to the operating system, so a process killed with SIGKILL loses at
most what was being written; a file cut in the middle of a block is read up to its last whole
block. Records of a URL that is not done are dropped: the URL is fetched again.

A resumed fetch reads every journal first: done URLs are not requested again, and the last
request to each politeness queue sets when its next request may start. At the end, the journal
files become the segment's crawl_fetch and content parts, and the WARC journal records become
the segment's WARC files (transforms/storage/warc.py): the WARC records themselves (gzip
members) are made when the page arrives, the journal keeps them with the URL they belong to
until the fetch is published.
"""
