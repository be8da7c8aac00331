"""CrawlDb readers (Nutch's CrawlDbReader): statistics, dumps, top-N, formatting."""

import csv
import io
import json
import math
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence

import apache_beam as beam
from apache_beam.transforms.stats import ApproximateQuantiles

from beamcrawl.transforms.policy.urlparts import MalformedUrl
from beamcrawl.transforms.runners.runtime import format_time
from beamcrawl.transforms.storage.parts import Record
from beamcrawl.transforms.storage.records import STATUS_CODES

__all__ = ['CrawlDbStats', 'FilterRecords', 'DumpLines', 'TopScores', 'format_stats',
           'format_datum', 'json_record', 'CSV_HEADER']

_QUANTILE_RESOLUTION = 1000   # ApproximateQuantiles buckets; a quantile q reads bucket q × 1000


class _StatsCombineFn(beam.CombineFn):
    """Totals, per-status and per-retry counts, min/sum/max of score, interval, fetch time."""

    def create_accumulator(self):
        return {'total': 0, 'status': {}, 'retries': {}, 'nan_scores': 0,
                'score': [math.inf, 0.0, -math.inf], 'fetch_interval': [math.inf, 0, -math.inf],
                'fetch_time': [math.inf, 0, -math.inf]}

    def add_input(self, acc, record):
        acc['total'] += 1
        acc['status'][record['status']] = acc['status'].get(record['status'], 0) + 1
        retries = str(record['retries'])
        acc['retries'][retries] = acc['retries'].get(retries, 0) + 1
        if math.isnan(record['score']):
            acc['nan_scores'] += 1
        else:
            _add(acc['score'], record['score'])
        _add(acc['fetch_interval'], record['fetch_interval'])
        _add(acc['fetch_time'], record['fetch_time'])
        return acc

    def merge_accumulators(self, accumulators):
        out = self.create_accumulator()
        for acc in accumulators:
            out['total'] += acc['total']
            out['nan_scores'] += acc['nan_scores']
            for key in ('status', 'retries'):
                for name, count in acc[key].items():
                    out[key][name] = out[key].get(name, 0) + count
            for key in ('score', 'fetch_interval', 'fetch_time'):
                lo, total, hi = acc[key]
                out[key] = [min(out[key][0], lo), out[key][1] + total, max(out[key][2], hi)]
        return out

    def extract_output(self, acc):
        total = acc['total']
        scored = total - acc['nan_scores']
        out = {'total': total,
               'status': dict(sorted(acc['status'].items(), key=lambda kv: STATUS_CODES[kv[0]])),
               'retries': dict(sorted(acc['retries'].items(), key=lambda kv: int(kv[0]))),
               'nan_scores': acc['nan_scores']}
        for key, count in (('score', scored), ('fetch_interval', total), ('fetch_time', total)):
            lo, s, hi = acc[key]
            out[key] = ({'min': lo, 'avg': s / count, 'max': hi} if count else
                        {'min': None, 'avg': None, 'max': None})
        return out


def _add(triple, value):
    triple[0] = min(triple[0], value)
    triple[1] += value
    triple[2] = max(triple[2], value)


def _attach_quantiles(stats, buckets, quantiles):
    buckets = list(buckets or [])
    values = {}
    if buckets and stats['score']['min'] is not None:
        for q in quantiles:
            values[_qname(q)] = buckets[min(len(buckets) - 1, round(q * (len(buckets) - 1)))]
    stats['score']['quantiles'] = values
    return stats


def _qname(q: float) -> str:
    return f'{q:g}'


class CrawlDbStats(beam.PTransform):
    """PCollection[CrawlDatum] → one dict of statistics (the `readdb --stats` JSON form).

    Args:
      quantiles: score quantiles to report, each in (0, 1) (db.stats.score.quantiles);
        approximate, from Beam's ApproximateQuantiles with 1,001 buckets.
    """

    def __init__(self, quantiles: Sequence[float]):
        super().__init__()
        self.quantiles = tuple(quantiles)

    def expand(self, records: beam.PCollection[Record]) -> beam.PCollection[Dict[str, Any]]:
        stats = records | 'Stats' >> beam.CombineGlobally(_StatsCombineFn())
        buckets = (records
                   | 'Scores' >> beam.Map(lambda r: r['score'])
                   | 'NoNaN' >> beam.Filter(lambda s: not math.isnan(s))
                   | 'Quantiles' >> ApproximateQuantiles.Globally(_QUANTILE_RESOLUTION + 1))
        return stats | 'WithQuantiles' >> beam.Map(
            _attach_quantiles, beam.pvalue.AsSingleton(buckets, default_value=[]),
            self.quantiles)


class FilterRecords(beam.PTransform):
    """Keeps records of a status (name, case-insensitive) and/or whose URL fully matches regex."""

    def __init__(self, status: Optional[str] = None, regex: Optional[str] = None):
        super().__init__()
        self.status = status.lower() if status else None
        self.regex = regex

    def expand(self, records: beam.PCollection[Record]) -> beam.PCollection[Record]:
        status, regex = self.status, re.compile(self.regex) if self.regex else None
        return records | 'Filter' >> beam.Filter(
            lambda r: (status is None or r['status'] == status)
            and (regex is None or regex.fullmatch(r['url']) is not None))


CSV_HEADER = ('url,status_code,status,fetch_time,modified_time,retries,fetch_interval_s,'
              'fetch_interval_days,score,signature,metadata')


def json_record(record: dict) -> dict:
    """A CrawlDatum as JSON-ready dict: contract field names, signature in hex, plus the code."""
    out = {k: v for k, v in record.items() if v is not None or k == 'signature'}
    out['status_code'] = STATUS_CODES[record['status']]
    out['signature'] = record['signature'].hex() if record.get('signature') else None
    return out


def _csv_line(record: dict) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator='').writerow([
        record['url'], STATUS_CODES[record['status']], record['status'],
        format_time(record['fetch_time']), format_time(record['modified_time']),
        record['retries'], record['fetch_interval'], record['fetch_interval'] // 86400,
        record['score'], record['signature'].hex() if record.get('signature') else '',
        '|'.join(f'{k}:{v}' for k, v in sorted(record['metadata'].items()))])
    return buf.getvalue()


class DumpLines(beam.PTransform):
    """PCollection[CrawlDatum] → text lines in 'jsonl' or 'csv' form."""

    def __init__(self, fmt: str):
        super().__init__()
        if fmt not in ('jsonl', 'csv'):
            raise ValueError(fmt)
        self.fmt = fmt

    def expand(self, records: beam.PCollection[Record]) -> beam.PCollection[str]:
        if self.fmt == 'csv':
            return records | 'Csv' >> beam.Map(_csv_line)
        return records | 'Json' >> beam.Map(
            lambda r: json.dumps(json_record(r), ensure_ascii=False, sort_keys=True))


class TopScores(beam.PTransform):
    """PCollection[CrawlDatum] → `score<TAB>url` lines of the n highest scores (ties: URL order)
    with score ≥ min_score, as one list, highest first."""

    def __init__(self, n: int, min_score: float = 0.0):
        super().__init__()
        self.n = n
        self.min_score = min_score

    def expand(self, records: beam.PCollection[Record]) -> beam.PCollection[str]:
        min_score = self.min_score
        return (records
                | 'AboveMin' >> beam.Filter(lambda r: r['score'] >= min_score)
                | 'Key' >> beam.Map(lambda r: (-r['score'], r['url']))
                | 'Top' >> beam.combiners.Top.Of(self.n, reverse=True)
                | 'Lines' >> beam.FlatMap(
                    lambda top: [f'{-neg:.6g}\t{url}' for neg, url in top]))


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hms = f'{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}'
    return f'{days} days, {hms}' if days else hms


def format_stats(stats: dict) -> List[str]:
    """The human form of `readdb --stats`, in Nutch's order."""
    lines = [f'TOTAL urls:\t{stats["total"]}']
    iv, ft, sc = stats['fetch_interval'], stats['fetch_time'], stats['score']
    if stats['total']:
        lines += [f'shortest fetch interval:\t{_duration(iv["min"])}',
                  f'avg fetch interval:\t{_duration(iv["avg"])}',
                  f'longest fetch interval:\t{_duration(iv["max"])}',
                  f'earliest fetch time:\t{format_time(ft["min"])}',
                  f'avg of fetch times:\t{format_time(int(ft["avg"]))}',
                  f'latest fetch time:\t{format_time(ft["max"])}']
    lines += [f'retry {n}:\t{count}' for n, count in stats['retries'].items()]
    if stats['nan_scores']:
        lines.append(f'score == NaN:\t{stats["nan_scores"]}')
    lines += [f'score quantile {q}:\t{v:.6g}' for q, v in sc.get('quantiles', {}).items()]
    if sc['min'] is not None:
        lines += [f'min score:\t{sc["min"]:.6g}', f'avg score:\t{sc["avg"]:.6g}',
                  f'max score:\t{sc["max"]:.6g}']
    lines += [f'status {STATUS_CODES[name]} ({name}):\t{count}'
              for name, count in stats['status'].items()]
    return lines


def format_datum(record: dict) -> List[str]:
    """A CrawlDatum the way Nutch's toString prints it (readdb --url)."""
    days = record['fetch_interval'] // 86400
    lines = [f'URL: {record["url"]}',
             f'Status: {STATUS_CODES[record["status"]]} ({record["status"]})',
             f'Fetch time: {format_time(record["fetch_time"])}',
             f'Modified time: {format_time(record["modified_time"])}',
             f'Retries since fetch: {record["retries"]}',
             f'Retry interval: {record["fetch_interval"]} seconds ({days} days)',
             f'Score: {record["score"]:.6g}',
             f'Signature: {record["signature"].hex() if record.get("signature") else "null"}',
             'Metadata: ']
    lines += [f'\t{k}={v}' for k, v in sorted(record['metadata'].items())]
    if record.get('protocol_status'):
        lines.append(f'Protocol status: {record["protocol_status"]} (HTTP {record["http_code"]})')
    return lines


def find_url(records: Iterable[dict], url: str, policy) -> Optional[dict]:
    """The first record for `url` as given or as the policy normalizes it (readers' --url)."""
    wanted = {url}
    try:
        wanted.add(policy.normalize(url))
    except MalformedUrl:
        pass
    for record in records:
        if record['url'] in wanted:
            return record
    return None
