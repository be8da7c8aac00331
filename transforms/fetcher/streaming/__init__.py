"""The streaming fetch: per-queue politeness with a stateful DoFn and processing-time timers.

  requests.py   ThreadedRequests: a worker's requests in flight, on a thread pool
  polite.py     PoliteFetch: the stateful DoFn per queue, with its timers
  source.py     FetchListStayingOpen: the fetch list, from a source that does not end
  segment.py    StreamingFetchSegment: the fetch of a segment, wired
  driver.py     StreamingFetch: the command's side (run until drained, cancel, publish)

This is the design card's fetcher, for a streaming runner (Flink with --streaming), where
processing-time timers fire on the wall clock and Flink checkpoints state and timers. In batch,
timers do not wait (docs/architecture.md, "Politeness in batch"): the batch fetcher (fetch.py)
stays the default. docs/streaming-fetch.md says when to use which.

`PoliteFetch`: PCollection[(queue id, CrawlDatum)] → PCollection[(generated URL, [(part,
record)])]. For each queue (the key), a stateful DoFn keeps

  pending    BagState: the queue's URLs, as they arrive
  taken      BagState: the URLs handed to a request (a URL is taken once)
  inflight   the record being fetched (kept until its result is in: after a restore from a
             checkpoint, a request that was in flight is sent again)
  queue      the queue's politeness state (policy/politeness.FetchQueue: next allowed start,
             Crawl-delay, exceptions, response time, blocked)

and two processing-time timers: `fetch`, set to the queue's next allowed start (the end of its
last request plus its delay, exactly as the batch fetcher: policy/politeness.request_ended), and
`poll`. The fetch timer never blocks its thread for a download: it hands the request to a
worker-local thread pool (`ThreadedRequests`) and sets the poll timer, which collects the result
when it is there (or looks again a little later). So one worker serves any number of queues.
One request per queue is in flight at a time (fetcher.threads.per.queue is 1 here).

The requests themselves (robots.txt, address policy, Crawl-delay limit, the GET) and the records
they give are the batch fetcher's (fetcher/request.py). Redirects are recorded as `linked`
records for the next round, as with http.redirect.max = 0: following one would need a
feedback loop into another key.

`StreamingFetchSegment` wires it for a segment: the fetch list (`FetchListStayingOpen`) →
keyed by queue → PoliteFetch → the fetch journal (fetcher/journal/), which the command
publishes once the job has ended, each generated URL's records once (a URL fetched again after
a restore from a checkpoint keeps its first complete attempt).

The end of a finite streaming job: when its input ends, Beam's Flink runner (2.62) stops firing
processing-time timers and waits for the watermark, which pending timers hold back: the job
would never end (and a job restarted from scratch would re-queue URLs the journal already
has). So the fetch list is read by a splittable DoFn that, once it has emitted the records,
stays open; the command watches the journal (for its progress line too) and cancels the job
once the journal holds every generated URL (`run_until_drained`). Every result is in the
journal by then: it is flushed per URL.
"""
