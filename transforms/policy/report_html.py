"""The report page (`beamcrawl report`): one self-contained HTML file from policy/report.py's
`assemble` dict, with inline CSS and inline SVG charts (svgcharts.py); no script, nothing
fetched to view it. Every chart has a table with its numbers beside it. Everything that came
from the web (URLs, hosts, queue names) is escaped.

Each section is a `<section id=...>`; the numbers a reader may check carry `data-*`
attributes (the browser test, tests/test_report.py, reads them): docs/report.md.
"""

import datetime
import html
from typing import Any, Dict, List, Optional, Sequence

from beamcrawl.transforms.policy.svgcharts import (bar_chart, fmt, gap_chart, hbar_stacked,
                                                   line_chart, stacked_bars)

__all__ = ['render', 'SECTIONS']

# (id, heading) of the page's sections, in order.
SECTIONS = (('crawldb', 'CrawlDb'), ('composition', 'Composition by round'),
            ('hosts', 'Hosts and domains'), ('segments', 'Fetch segments'),
            ('changes', 'Change rates'), ('linkdb', 'LinkDb'))

_STATUS_ORDER = ('db_unfetched', 'db_fetched', 'db_notmodified', 'db_gone', 'db_redir_temp',
                 'db_redir_perm', 'db_duplicate', 'db_orphan')

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px;
color:#222}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:32px}
h3{font-size:15px;margin-bottom:4px}
table{border-collapse:collapse;margin:6px 0 12px}td,th{padding:2px 8px;text-align:left;
border-bottom:1px solid #eee;vertical-align:top}td.n,th.n{text-align:right;
font-variant-numeric:tabular-nums}
.pair{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.chart{max-width:100%;height:auto;background:#fafafa;border:1px solid #eee}
.chart .tick{font-size:10px;fill:#555}.chart .axis-label{font-size:11px;fill:#222}
.chart .legend{font-size:10px;fill:#222}.chart .grid{stroke:#e4e4e4}
.chart .axis{stroke:#888}
.url{word-break:break-all}.muted{color:#777}.bad{color:#b00020;font-weight:bold}
nav a{margin-right:12px}
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _time(ms: Optional[int]) -> str:
    if ms is None:
        return '–'
    when = datetime.datetime.fromtimestamp(ms / 1000.0, datetime.timezone.utc)
    return when.isoformat(timespec='seconds').replace('+00:00', 'Z')


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, numeric: Sequence[int] = (),
           attrs: Optional[Sequence[str]] = None, cls: str = '') -> str:
    """A table; cells are escaped; columns in `numeric` are right-aligned and formatted;
    attrs[i] adds attributes (already escaped) to row i."""
    head = ''.join(f'<th class="n">{_e(h)}</th>' if i in numeric else f'<th>{_e(h)}</th>'
                   for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cells = []
        for i, value in enumerate(row):
            if i in numeric:
                cells.append(f'<td class="n">{_e(fmt(value))}</td>')
            else:
                cells.append(f'<td class="{cls if i == 0 else ""}">{_e(value)}</td>')
        extra = f' {attrs[r]}' if attrs else ''
        body.append(f'<tr{extra}>{"".join(cells)}</tr>')
    return f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _pair(chart: str, table: str) -> str:
    return f'<div class="pair"><div>{chart}</div><div>{table}</div></div>'


def _crawldb(data) -> List[str]:
    db = data['crawldb']
    stats = db['stats']
    out = [f'<p>Total URLs: <b data-stat="total">{_e(fmt(stats["total"]))}</b>; applied '
           f'segments: {len(data["applied"])}.</p>']
    statuses = list(stats['status'].items())
    out.append(_pair(
        bar_chart(statuses, title='CrawlDb URLs by status', x_label='status',
                  y_label='URLs', unit=' URLs'),
        _table(['status', 'URLs'], statuses, numeric=(1,),
               attrs=[f'data-stat="{_e(s)}" data-count="{n}"' for s, n in statuses])))
    sc, iv = stats['score'], stats['fetch_interval']
    summary = [('score min / avg / max', f'{fmt(sc["min"])} / {fmt(sc["avg"])} / '
                                         f'{fmt(sc["max"])}'),
               ('fetch interval min / avg / max (days)',
                ' / '.join(fmt(None if v is None else v / 86400)
                           for v in (iv['min'], iv['avg'], iv['max']))),
               ('earliest / latest next fetch', f'{_time(stats["fetch_time"]["min"])} / '
                                                f'{_time(stats["fetch_time"]["max"])}')]
    summary += [(f'score quantile {q}', fmt(v)) for q, v in sc.get('quantiles', {}).items()]
    out.append(_pair(
        bar_chart(db['score_bins'], title='Score distribution', x_label='score',
                  y_label='URLs', unit=' URLs'),
        _table(['score', 'URLs'], db['score_bins'], numeric=(1,))))
    out.append(_pair(
        bar_chart(db['interval_bins'], title='Fetch-interval distribution',
                  x_label='fetch interval (h, d)', y_label='URLs', unit=' URLs'),
        _table(['fetch interval', 'URLs'], db['interval_bins'], numeric=(1,))))
    out.append(_table(['figure', 'value'], summary))
    return out


def _composition(data) -> List[str]:
    rounds = data['composition']
    if not rounds:
        return ['<p class="muted">No URLs.</p>']
    present = {s for _, counts in rounds for s in counts}
    statuses = [s for s in _STATUS_ORDER if s in present] + sorted(present - set(_STATUS_ORDER))
    labels = [r for r, _ in rounds]
    series = [(s, [counts.get(s, 0) for _, counts in rounds]) for s in statuses]
    rows, total = [], 0
    for r, counts in rounds:
        total += sum(counts.values())
        rows.append([r] + [counts.get(s, 0) for s in statuses] + [total])
    return ['<p>The crawldb\'s URLs by the round (segment) that first linked to them, stacked by '
            'their status now; <i>injected</i>: URLs no segment linked to before they were '
            'fetched (seeds, sitemaps). The last column adds up to the crawldb\'s size.</p>',
            stacked_bars(labels, series, title='CrawlDb URLs by discovery round and status',
                         x_label='discovery round (segment)', y_label='URLs', unit=' URLs'),
            _table(['round'] + statuses + ['crawldb URLs so far'], rows,
                   numeric=tuple(range(1, len(statuses) + 2)))]


def _hosts(data) -> List[str]:
    out = []
    for mode, heading in (('host', 'Hosts'), ('domain', 'Registrable domains')):
        group = data['groups'][mode]
        top = group['top']
        out.append(f'<h3>{heading}: top {len(top)} of <span data-groups="{mode}">'
                   f'{_e(fmt(group["count"]))}</span> by URLs</h3>')
        if not top:
            continue
        rows = [(g['name'], [g['fetched'], g['urls'] - g['fetched']]) for g in top]
        out.append(_pair(
            hbar_stacked(rows, ['fetched', 'not fetched'], title=f'{heading} by URLs',
                         x_label='URLs', unit=' URLs'),
            _table([mode, 'URLs', 'fetched', 'fetched %'],
                   [(g['name'], g['urls'], g['fetched'],
                     f'{100.0 * g["fetched"] / g["urls"]:.1f}' if g['urls'] else '–')
                    for g in top], numeric=(1, 2), cls='url')))
    return out


def _segment(seg, data) -> List[str]:
    name = seg['name']
    applied = 'applied to the crawldb' if name in data['applied'] else 'not applied yet'
    out = [f'<h3 id="seg-{_e(name)}">Segment {_e(name)} <span class="muted">({applied})</span>'
           f'</h3>']
    duration = (seg['end'] - seg['start']) / 1000 if seg['start'] is not None else None
    pages = sum(seg['status'].values())          # crawl_fetch records but `linked` ones
    rate = pages / duration if duration and pages else None
    facts = [('generated', fmt(seg['generated'])), ('fetched', fmt(seg['fetched'])),
             ('parsed', fmt(seg['parsed'])), ('fetch start', _time(seg['start'])),
             ('fetch end', _time(seg['end'])),
             ('fetch duration (s)', fmt(duration)), ('average pages/s', fmt(rate)),
             ('content bytes', fmt(seg['bytes'])),
             ('robots.txt denials', fmt(sum(seg['robots_denied'].values()))),
             ('address-policy refusals', fmt(sum(seg['blocked'].values()))),
             ('politeness queues', fmt(seg['queues'])),
             ('politeness violations', fmt(seg['violations']))]
    keys = ('generated', 'fetched', 'parsed', 'start', 'end', 'duration', 'rate', 'bytes',
            'robots_denied', 'blocked', 'queues', 'violations')
    facts_table = _table(['figure', 'value'], facts,
                         attrs=[f'data-seg-fact="{k}"' for k in keys])
    points = seg['rate']['points']
    if points:
        width = seg['rate']['width_s']
        out.append(_pair(
            line_chart(points, title=f'Pages per second, segment {name}',
                       x_label=f'time since the first fetch (s; {width} s bins)',
                       y_label='pages/s', unit=' pages/s', x_unit=' s'),
            facts_table + '<details><summary>pages/s per bin</summary>' +
            _table(['from (s)', 'pages/s'], points, numeric=(0, 1)) + '</details>'))
    else:
        out.append(facts_table)
    statuses = list(seg['status'].items())
    if statuses:
        out.append(_pair(
            bar_chart(statuses, title=f'Fetch statuses, segment {name}', x_label='status',
                      y_label='pages', unit=' pages'),
            _table(['status', 'pages'], statuses, numeric=(1,))
            + _table(['protocol status', 'pages'], list(seg['protocol'].items()),
                     numeric=(1,))))
    if seg['slowest']:
        out.append('<h3>Slowest hosts (mean time of a request)</h3>' + _table(
            ['host', 'mean ms', 'fetches', 'failures'],
            [(h, ms, n, f) for ms, h, n, f in seg['slowest']], numeric=(1, 2, 3), cls='url'))
    if seg['failing']:
        out.append('<h3>Most failing hosts</h3>' + _table(
            ['host', 'failures', 'fetches'], [(h, f, n) for f, h, n in seg['failing']],
            numeric=(1, 2), cls='url'))
    for key, heading in (('robots_denied', 'robots.txt denials by host'),
                         ('blocked', 'Address-policy refusals by host')):
        if seg[key]:
            out.append(f'<h3>{heading}</h3>' + _table(['host', 'URLs'],
                                                      list(seg[key].items())[:data['top']],
                                                      numeric=(1,), cls='url'))
    if seg['politeness']:
        rows = [(q, a['min_gap_ms'], a['median_gap_ms'], a['delay_ms'])
                for q, a in seg['politeness']]
        table = _table(['queue', 'fetches', 'delay ms', 'min gap ms', 'median gap ms',
                        'violations'],
                       [(q, a['fetches'], a['delay_ms'], a['min_gap_ms'], a['median_gap_ms'],
                         a['violations']) for q, a in seg['politeness']],
                       numeric=(1, 2, 3, 4, 5), cls='url')
        out.append(f'<h3>Politeness: gaps between requests per queue against the delay '
                   f'({_e(fmt(seg["queues"]))} queues, '
                   f'<span class="{"bad" if seg["violations"] else ""}">'
                   f'{_e(fmt(seg["violations"]))} violations</span>; the {len(rows)} with the '
                   f'most violations, then fetches)</h3>')
        out.append(_pair(gap_chart(rows, title=f'Politeness gaps, segment {name}',
                                   x_label='gap between requests (ms)'), table))
    return out


def _changes(data) -> List[str]:
    segs = [s for s in data['segment_reports'] if s['changes']]
    if not segs:
        return ['<p class="muted">No page was fetched again yet.</p>']
    kinds = ('not_modified', 'unchanged', 'changed')
    series = [(k.replace('_', ' '), [s['changes'].get(k, 0) for s in segs]) for k in kinds]
    rows = []
    for s in segs:
        total = sum(s['changes'].values())
        rows.append([s['name']] + [s['changes'].get(k, 0) for k in kinds] +
                    [f'{100.0 * s["changes"].get("changed", 0) / total:.1f}'])
    schedule = data.get('schedule') or ''
    return [f'<p>Pages fetched again (fetched before), per segment: a 304 (not modified), the '
            f'same content signature (unchanged), or changed. Fetch schedule: '
            f'<code>{_e(schedule)}</code>.</p>',
            _pair(stacked_bars([s['name'] for s in segs], series,
                               title='Refetched pages by outcome',
                               x_label='segment', y_label='pages', unit=' pages'),
                  _table(['segment', 'not modified', 'unchanged', 'changed', 'changed %'],
                         rows, numeric=(1, 2, 3)))]


def _linkdb(data) -> List[str]:
    link = data['linkdb']
    if link is None:
        return ['<p class="muted">No linkdb (run invertlinks).</p>']
    return [f'<p>URLs with inlinks: <b data-linkdb="urls">{_e(fmt(link["urls"]))}</b>; '
            f'inlinks: <b data-linkdb="inlinks">{_e(fmt(link["inlinks"]))}</b>; applied '
            f'segments: {len(link["applied"])}.</p>',
            _pair(bar_chart(link['indegree_bins'], title='In-degree distribution',
                            x_label='inlinks per URL', y_label='URLs', unit=' URLs'),
                  _table(['inlinks', 'URLs'], link['indegree_bins'], numeric=(1,))),
            f'<h3>Top {len(link["top"])} pages by inlinks</h3>',
            _table(['URL', 'inlinks'], [(t['url'], t['inlinks']) for t in link['top']],
                   numeric=(1,), cls='url')]


def render(data: Dict[str, Any], *, crawl_dir: str, now: int) -> str:
    """The whole page. `now` (ms) is when the report was made (shown in its header)."""
    body = [f'<h1>Crawl report: {_e(crawl_dir)}</h1>',
            f'<p class="muted">Made {_e(_time(now))} by beamcrawl report from the crawl '
            f'directory alone; every chart has its numbers in the table beside it and in the '
            f'tooltip of each bar.</p>',
            '<nav>' + ''.join(f'<a href="#{sid}">{_e(h)}</a>' for sid, h in SECTIONS) + '</nav>']
    makers = {'crawldb': _crawldb, 'composition': _composition, 'hosts': _hosts,
              'changes': _changes, 'linkdb': _linkdb}
    for sid, heading in SECTIONS:
        body.append(f'<section id="{sid}"><h2>{_e(heading)}</h2>')
        if sid == 'segments':
            if not data['segment_reports']:
                body.append('<p class="muted">No segments.</p>')
            body.append(_table(['segment', 'generated', 'fetched', 'parsed', 'fetch start',
                                'fetch end'],
                               [(s['name'], s['generated'], s['fetched'], s['parsed'],
                                 _time(s['start']), _time(s['end']))
                                for s in data['segment_reports']],
                               numeric=(1, 2, 3),
                               attrs=[f'data-segment="{_e(s["name"])}"'
                                      for s in data['segment_reports']]))
            for seg in data['segment_reports']:
                body += _segment(seg, data)
        else:
            body += makers[sid](data)
        body.append('</section>')
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>Crawl report: {_e(crawl_dir)}</title><style>{_CSS}</style></head>'
            f'<body>{"".join(body)}</body></html>\n')
