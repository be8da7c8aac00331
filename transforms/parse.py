"""Parse as Beam transforms: content records → parse_text, parse_data and crawl_parse records.

Only content fetched with success (HTTP 200) is parsed; truncated content is skipped when
parser.skip.truncated. A document that cannot be parsed yields an empty parse with a failed
status; nothing raises out of the DoFn. Each document's parse runs on a helper thread bounded by
parser.timeout.
"""

import concurrent.futures
import dataclasses
import logging
from typing import List, Optional, Tuple

import apache_beam as beam

from beamcrawl.transforms.base import metrics, progress
from beamcrawl.transforms.base.counting import CountingDoFn
from beamcrawl.transforms.base.sandbox import Sandbox
from beamcrawl.transforms.policy.domains import choose_repr
from beamcrawl.transforms.policy.headers import header
from beamcrawl.transforms.policy.html import Parse, document_format_of, parse_document
from beamcrawl.transforms.policy.language import detect as detect_language
from beamcrawl.transforms.policy.outlinks import OutlinkRules, filter_outlinks
from beamcrawl.transforms.policy.scoring import CRAWL_SCORE_KEY, OpicScoring
from beamcrawl.transforms.policy.signature import signature
from beamcrawl.transforms.policy.simhash import MIN_WORDS as SIMHASH_MIN_WORDS
from beamcrawl.transforms.policy.simhash import SIMHASH_KEY, simhash, to_hex
from beamcrawl.transforms.policy.urls import UrlPolicy
from beamcrawl.transforms.storage.parts import ReadParts, Record, WriteParts, count_records
from beamcrawl.transforms.storage.records import SCHEMAS, crawl_datum, parse_data, parse_text
from beamcrawl.transforms.storage.segments import CRAWL_PARSE, PARSE_DATA, PARSE_PARTS, PARSE_TEXT

__all__ = ['ParseSettings', 'ParseContent', 'ParseSegment', 'parse_one']

log = logging.getLogger('beamcrawl')
FETCH_TIME_KEY = '_ftk_'     # parse_data metadata: the fetch time of the content (Nutch's key)
_PERM_REFRESH_SECONDS = 5      # a shorter meta refresh counts as a temporary redirect (Nutch)


@dataclasses.dataclass(frozen=True)
class ParseSettings:
    signature_kind: str
    min_token_len: int
    quant_rate: float
    skip_truncated: bool
    timeout_s: float                  # < 0: no bound
    interval_default: int
    outlinks: OutlinkRules
    normalize: bool
    filter_urls: bool
    agents: Tuple[str, ...]
    scoring: OpicScoring
    main_text: str = 'none'           # parser.main.text.extractor (policy/maintext.py)
    max_expanded: int = 0             # parser.document.max.expanded (policy/documents.py)
    document_memory: int = 0          # parser.document.memory: the sandbox child's limit


# What the sandbox's child runs: the same parse_document as for HTML, in another process.
_PARSE_DOCUMENT = 'beamcrawl.transforms.policy.html:parse_document'


class _ParseFn(CountingDoFn):
    def __init__(self, *, settings: ParseSettings, policy: UrlPolicy, now: int,
                 done: progress.Reporter = progress.Reporter(None, 'parse')):
        self.settings, self.policy, self.now = settings, policy, now
        self.done = done

    def start_bundle(self):
        super().start_bundle()
        self._ticker = progress.Ticker(self.done)

    def finish_bundle(self):
        super().finish_bundle()
        self._ticker.flush()

    def setup(self):
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix='parse')
        self._sandbox = Sandbox(self.settings.document_memory)

    def teardown(self):
        self._pool.shutdown(wait=False)
        self._sandbox.close()

    def _parse_in_sandbox(self, fmt: str, args, kwargs) -> Parse:
        """A document read by policy/documents.py (PDF, office...), parsed in the sandbox's
        child process: killed at parser.timeout, limited to parser.document.memory; a crash
        of its reader (native code) is a failed parse (docs/documents.md)."""
        timeout = self.settings.timeout_s if self.settings.timeout_s >= 0 else None
        outcome, value = self._sandbox.call(_PARSE_DOCUMENT, args, timeout, kwargs)
        if outcome == 'ok':
            return value
        self.counts.inc(metrics.PARSE_SANDBOX + outcome)
        error = {'timeout': 'parser.timeout exceeded',
                 'crashed': f'the document crashed its reader ({value})'}.get(outcome, value)
        return Parse('failed', metadata={'document.format': fmt, 'parse.error': error})


    def _parse(self, content) -> Parse:
        args = (content['content'], content['url'], content['content_type'])
        kwargs = {'headers': content['headers'], 'agents': self.settings.agents,
                  'main_text_extractor': self.settings.main_text,
                  'max_expanded': self.settings.max_expanded}
        fmt = document_format_of(content['content'], content['content_type'], content['headers'])
        if fmt is not None:
            return self._parse_in_sandbox(fmt, args, kwargs)
        if self.settings.timeout_s < 0:
            try:
                return parse_document(*args, **kwargs)
            except Exception as e:  # pylint: disable=broad-except  (a document never kills a run)
                return Parse('failed', metadata={'parse.error': f'{type(e).__name__}: {e}'})
        future = self._pool.submit(parse_document, *args, **kwargs)
        try:
            return future.result(timeout=self.settings.timeout_s)
        except concurrent.futures.TimeoutError:
            # The stuck parse keeps its thread; later documents get a fresh one.
            self._pool.shutdown(wait=False)
            self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix='parse')
            return Parse('failed', metadata={'parse.error': 'parser.timeout exceeded'})
        except Exception as e:  # pylint: disable=broad-except
            return Parse('failed', metadata={'parse.error': f'{type(e).__name__}: {e}'})

    def process(self, content):
        self._ticker.tick()
        url = content['url']
        if content['http_code'] != 200:
            self.counts.inc(metrics.PARSE_SKIPPED_NOT_SUCCESS)
            return
        if content['truncated'] and self.settings.skip_truncated:
            self.counts.inc(metrics.PARSE_SKIPPED_TRUNCATED)
            return
        parse = self._parse(content)
        self.counts.inc(metrics.PARSE_STATUS + parse.status)
        if parse.status in ('failed', 'notparsed'):
            parse = Parse(parse.status, metadata=parse.metadata)
        denied: list = []
        outlinks = filter_outlinks(url, parse.outlinks, self.settings.outlinks, self.policy,
                                   normalize=self.settings.normalize,
                                   filter_urls=self.settings.filter_urls, denied=denied)
        if parse.metadata.get('parse.fallback'):
            self.counts.inc(metrics.PARSE_FALLBACK)
        s = self.settings
        digest = signature(s.signature_kind, content=content['content'], text=parse.text,
                           url=url, min_token_len=s.min_token_len, quant_rate=s.quant_rate)
        # The page's own words: its main text when one is extracted, else its whole text.
        own = parse.main_text if s.main_text != 'none' else parse.text
        fingerprint = simhash(own, min_words=SIMHASH_MIN_WORDS)
        near = {SIMHASH_KEY: to_hex(fingerprint)} if fingerprint is not None else {}
        yield beam.pvalue.TaggedOutput(PARSE_TEXT, parse_text(url, parse.text, parse.main_text))
        yield beam.pvalue.TaggedOutput(PARSE_DATA, parse_data(
            url, title=parse.title, parse_status=parse.status, outlinks=outlinks,
            metadata={**parse.metadata, 'nutch.content.digest': digest.hex(),
                      FETCH_TIME_KEY: str(content['fetch_time']), **near,
                      **_languages(own or parse.text, content['headers'])}))
        yield crawl_datum(url, 'signature', fetch_time=self.now, fetch_interval=0,
                          signature=digest, metadata=near)
        refresh = self._refresh_target(url, parse, denied)
        if refresh is not None:
            yield refresh
        if denied:
            self.counts.inc(metrics.PARSE_DENIED, len(denied))
        targets = list(dict.fromkeys(target for target, _ in outlinks))
        try:
            base = float((content.get('metadata') or {}).get(CRAWL_SCORE_KEY, 0.0))
        except ValueError:
            base = 0.0
        shares = s.scoring.distribute(url, base, targets, len(parse.outlinks))
        for target, share in zip(targets, shares):
            yield crawl_datum(target, 'linked', fetch_time=self.now,
                              fetch_interval=s.interval_default, score=share)
        self.counts.inc(metrics.PARSE_OUTLINKS, len(outlinks))

    def _refresh_target(self, url: str, parse: Parse, denied: list) -> Optional[dict]:
        if parse.refresh is None:
            return None
        target, seconds = parse.refresh
        target, reason = self.policy.clean(target)
        if reason == 'denied':
            denied.append(parse.refresh[0])
        if target is None or target == url:
            return None
        metadata = {}
        chosen = choose_repr(url, target, seconds < _PERM_REFRESH_SECONDS, self.policy.domains)
        if chosen != target:
            metadata['_repr_'] = chosen
        return crawl_datum(target, 'linked', fetch_time=self.now, fetch_interval=0, score=0.0,
                           metadata=metadata)


def _languages(text: str, headers) -> dict:
    """The language detected in the page's own text (`lang.detected`, `lang.confidence`: 0 to
    1) and the one its Content-Language header declares (`lang.http`), kept apart from the
    one its <html lang> declares (`lang`, policy/html.py)."""
    out = {}
    code, confidence = detect_language(text)
    if code:
        out['lang.detected'], out['lang.confidence'] = code, f'{confidence:.3f}'
    declared = header(headers, 'Content-Language').strip()
    if declared:
        out['lang.http'] = declared[:35]
    return out


def parse_one(content: dict, *, settings: ParseSettings, policy: UrlPolicy, now: int
              ) -> Tuple[dict, dict]:
    """The parse of one content record outside a pipeline, by the parse stage's own DoFn
    (parsechecker, indexchecker): ({part: [records]}, {counter: n}). Parts absent from the
    result were not written (content not parsed: not a 200, or truncated)."""
    fn = _ParseFn(settings=settings, policy=policy, now=now)
    fn.setup()
    fn.start_bundle()
    out: dict = {}
    try:
        for item in fn.process(content):
            if isinstance(item, beam.pvalue.TaggedOutput):
                out.setdefault(item.tag, []).append(item.value)
            else:
                out.setdefault(CRAWL_PARSE, []).append(item)
    finally:
        fn.teardown()
    return out, dict(fn.counts.counts)


class ParseContent(beam.PTransform):
    """PCollection[Content] → {'parse_text', 'parse_data', 'crawl_parse'} PCollections.

    Args (keyword-only):
      settings: signature kind, truncation and timeout rules, outlink rules.
      policy: URL normalizers and filters for outlinks and refresh targets.
      now: the time written into crawl_parse records, epoch ms.
    """

    def __init__(self, *, settings: ParseSettings, policy: UrlPolicy, now: int):
        super().__init__()
        self.settings, self.policy, self.now = settings, policy, now
        self.done = progress.Reporter(None, 'parse')    # ParseSegment's, when it counts pages

    def expand(self, contents: beam.PCollection[Record]):    # → {part: PCollection[Record]}
        out = contents | 'Parse' >> beam.ParDo(_ParseFn(
            settings=self.settings, policy=self.policy, now=self.now,
            done=self.done)).with_outputs(
                PARSE_TEXT, PARSE_DATA, main=CRAWL_PARSE)
        return {PARSE_TEXT: out[PARSE_TEXT], PARSE_DATA: out[PARSE_DATA],
                CRAWL_PARSE: out[CRAWL_PARSE]}



# A page's parse (HTML tree, text, outlinks normalized and filtered) against a crawldb
# record's share of a batch stage: about 1 ms against 10 µs of CPU (measured on pages of 20 kB
# with 50 links). With runner.local.parallel.records at 200k, a segment of 2,000 pages or more
# is parsed by worker processes (10,000 such pages: 11.6 s in one process, 7.1 s in two).
_PAGE_WEIGHT = 100


class ParseSegment(beam.PTransform):
    """PBegin → the parse of a segment: its content parts parsed (ParseContent) into the
    parse parts of `update` (a SegmentUpdate: parse_text, parse_data, crawl_parse are written
    into its temporary part directories, which the segment update publishes).

    Args (keyword-only):
      content_files: the segment's content part files.
      update: the SegmentUpdate of the parse parts.
      settings, policy, now: as for ParseContent.

    `weight` is the size of the work in crawldb records, for sizing the run (make_pipeline):
    parsing a page costs about as much as _PAGE_WEIGHT crawldb records in a batch stage.
    """

    def __init__(self, *, content_files: List[str], update, settings: ParseSettings,
                 policy: UrlPolicy, now: int):
        super().__init__()
        self.content_files, self.update = list(content_files), update
        self.parse = ParseContent(settings=settings, policy=policy, now=now)
        self.weight = count_records(self.content_files) * _PAGE_WEIGHT

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.pvalue.PDone:
        self.parse.done = progress.stage(pbegin.pipeline, 'parse',
                                         self.weight // _PAGE_WEIGHT, 'pages')
        outputs = (pbegin
                   | 'ReadContent' >> ReadParts(self.content_files)
                   | 'ParseContent' >> self.parse)
        for part in PARSE_PARTS:
            _ = outputs[part] | f'Write_{part}' >> WriteParts(self.update.tmp[part],
                                                               SCHEMAS[part])
        return beam.pvalue.PDone(pbegin.pipeline)
