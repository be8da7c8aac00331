"""Small SVG charts for the report, as strings: vertical bars (plain or stacked), horizontal
stacked bars, a line over time and the politeness gaps against the delay. Pure Python, no
library, nothing fetched to view them. Every bar and point carries a `<title>` with its numbers
(a browser shows it on hover; report_html.py also prints a table beside each chart), both axes
are labelled with their units, and every text is escaped: labels are hosts and URLs from the
web.
"""

import html
import math
from typing import List, Sequence, Tuple

__all__ = ['PALETTE', 'bar_chart', 'stacked_bars', 'hbar_stacked', 'line_chart', 'gap_chart',
           'nice_max', 'fmt']

PALETTE = ('#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
           '#ff9da7', '#9c755f', '#bab0ac')
_W, _H = 640, 276                 # a chart's size (px)
_L, _R, _T, _B = 64, 16, 16, 72   # its margins: left (y ticks), right, top, bottom (x labels)


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def fmt(value) -> str:
    """A number for people: integers with thousands separators, others with 3 significant
    digits."""
    if value is None:
        return '–'
    if isinstance(value, float) and not value.is_integer():
        return f'{value:,.3g}' if abs(value) < 1000 else f'{value:,.0f}'
    return f'{int(value):,}'


def nice_max(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 × 10^k at least `value` (an axis's top); 1 for 0."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def _frame(title: str, body: List[str], x_label: str, y_label: str, width: int = _W,
           height: int = _H) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<title>{esc(title)}</title>' + ''.join(body) +
            f'<text class="axis-label" x="{_L + (width - _L - _R) / 2:.0f}" y="{height - 6}" '
            f'text-anchor="middle">{esc(x_label)}</text>'
            f'<text class="axis-label" x="14" y="{_T + (height - _T - _B) / 2:.0f}" '
            f'text-anchor="middle" transform="rotate(-90 14 {_T + (height - _T - _B) / 2:.0f})">'
            f'{esc(y_label)}</text></svg>')


def _y_axis(top: float, width: int = _W, height: int = _H) -> List[str]:
    out = []
    plot_h = height - _T - _B
    for i in range(5):
        value = top * i / 4
        y = _T + plot_h - plot_h * i / 4
        out.append(f'<line class="grid" x1="{_L}" x2="{width - _R}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{esc(fmt(value))}</text>')
    return out


def _x_labels(labels: Sequence[str], slot: float) -> List[str]:
    out = []
    rotate = max((len(str(lb)) for lb in labels), default=0) * 6 > slot
    for i, label in enumerate(labels):
        x = _L + slot * (i + 0.5)
        y = _H - _B + 14
        text = str(label)
        short = text if len(text) <= 18 else text[:17] + '…'
        if rotate:
            out.append(f'<text class="tick" x="{x:.1f}" y="{y}" text-anchor="end" '
                       f'transform="rotate(-30 {x:.1f} {y})">{esc(short)}</text>')
        else:
            out.append(f'<text class="tick" x="{x:.1f}" y="{y}" text-anchor="middle">'
                       f'{esc(short)}</text>')
    return out


def bar_chart(bars: Sequence[Tuple[str, float]], *, title: str, x_label: str, y_label: str,
              unit: str = '') -> str:
    """One bar per (label, value)."""
    return stacked_bars([label for label, _ in bars], [('', [v for _, v in bars])],
                        title=title, x_label=x_label, y_label=y_label, unit=unit)


def stacked_bars(categories: Sequence[str], series: Sequence[Tuple[str, Sequence[float]]], *,
                 title: str, x_label: str, y_label: str, unit: str = '') -> str:
    """Vertical bars, one per category, each stacked from the series (name, values)."""
    totals = [sum(values[i] for _, values in series) for i in range(len(categories))]
    top = nice_max(max(totals, default=0))
    plot_w, plot_h = _W - _L - _R, _H - _T - _B
    slot = plot_w / max(1, len(categories))
    body = _y_axis(top)
    for i, category in enumerate(categories):
        base = 0.0
        for s, (name, values) in enumerate(series):
            value = values[i]
            if not value:
                continue
            h = plot_h * value / top
            y = _T + plot_h - plot_h * (base + value) / top
            what = f'{category}: {name + " " if name else ""}{fmt(value)}{unit}'
            body.append(f'<rect class="bar" x="{_L + slot * i + slot * 0.15:.1f}" y="{y:.1f}" '
                        f'width="{slot * 0.7:.1f}" height="{max(h, 0.5):.1f}" '
                        f'fill="{PALETTE[s % len(PALETTE)]}"><title>{esc(what)}</title></rect>')
            base += value
    body += _x_labels(categories, slot)
    body.append(f'<line class="axis" x1="{_L}" x2="{_W - _R}" y1="{_T + plot_h}" '
                f'y2="{_T + plot_h}"/>')
    if any(name for name, _ in series):
        body += _legend([name for name, _ in series])
    return _frame(title, body, x_label, y_label)


def _legend(names: Sequence[str]) -> List[str]:
    out, x = [], _L
    for s, name in enumerate(names):
        out.append(f'<rect x="{x}" y="2" width="10" height="10" '
                   f'fill="{PALETTE[s % len(PALETTE)]}"/>'
                   f'<text class="legend" x="{x + 14}" y="11">{esc(name)}</text>')
        x += 24 + 7 * len(str(name))
    return out


def _hbar_frame(body: List[str], rows: int, bar_h: float, label_w: float, plot_w: float,
                top: float, width: int, height: int, title: str, x_label: str) -> str:
    """A horizontal bar chart's SVG around its `body`: the x axis ticks and label, the title."""
    axis_y = _T + 20 + bar_h * rows + 4
    for i in range(5):
        x = label_w + plot_w * i / 4
        body.append(f'<text class="tick" x="{x:.1f}" y="{axis_y + 12}" text-anchor="middle">'
                    f'{esc(fmt(top * i / 4))}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}"><title>{esc(title)}</title>'
            + ''.join(body) +
            f'<text class="axis-label" x="{label_w + plot_w / 2:.0f}" y="{height - 4}" '
            f'text-anchor="middle">{esc(x_label)}</text></svg>')


def hbar_stacked(rows: Sequence[Tuple[str, Sequence[float]]], names: Sequence[str], *,
                 title: str, x_label: str, unit: str = '') -> str:
    """Horizontal bars, one per (label, values), stacked from the values (`names` name them)."""
    bar_h, label_w = 18, 220
    height = _T + 20 + bar_h * len(rows) + 40
    width = _W
    top = nice_max(max((sum(v) for _, v in rows), default=0))
    plot_w = width - label_w - _R
    body = _legend(names)
    for i, (label, values) in enumerate(rows):
        y = _T + 20 + bar_h * i
        text = str(label)
        short = text if len(text) <= 34 else text[:33] + '…'
        body.append(f'<text class="tick" x="{label_w - 6}" y="{y + 13}" text-anchor="end">'
                    f'{esc(short)}<title>{esc(text)}</title></text>')
        x = float(label_w)
        for s, value in enumerate(values):
            if not value:
                continue
            w = plot_w * value / top
            what = f'{label}: {names[s]} {fmt(value)}{unit} of {fmt(sum(values))}{unit}'
            body.append(f'<rect class="bar" x="{x:.1f}" y="{y + 2}" width="{max(w, 0.5):.1f}" '
                        f'height="{bar_h - 4}" fill="{PALETTE[s % len(PALETTE)]}">'
                        f'<title>{esc(what)}</title></rect>')
            x += w
    return _hbar_frame(body, len(rows), bar_h, label_w, plot_w, top, width, height, title,
                       x_label)


def line_chart(points: Sequence[Tuple[float, float]], *, title: str, x_label: str,
               y_label: str, unit: str = '', x_unit: str = '') -> str:
    """A line through (x, y) points, x ascending, with a marker (and its title) per point."""
    top = nice_max(max((y for _, y in points), default=0))
    right = max((x for x, _ in points), default=0) or 1
    plot_w, plot_h = _W - _L - _R, _H - _T - _B
    body = _y_axis(top)

    def xy(x, y):
        return _L + plot_w * x / right, _T + plot_h - plot_h * y / top
    coords = [xy(x, y) for x, y in points]
    if coords:
        body.append('<polyline class="line" fill="none" stroke="#4e79a7" stroke-width="2" '
                    'points="' + ' '.join(f'{x:.1f},{y:.1f}' for x, y in coords) + '"/>')
    for (x, y), (cx, cy) in zip(points, coords):
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="#4e79a7"><title>'
                    f'{esc(f"{fmt(x)}{x_unit}: {fmt(y)}{unit}")}</title></circle>')
    for i in range(5):
        value = right * i / 4
        body.append(f'<text class="tick" x="{_L + plot_w * i / 4:.1f}" y="{_H - _B + 14}" '
                    f'text-anchor="middle">{esc(fmt(value))}</text>')
    body.append(f'<line class="axis" x1="{_L}" x2="{_W - _R}" y1="{_T + plot_h}" '
                f'y2="{_T + plot_h}"/>')
    return _frame(title, body, x_label, y_label)


def gap_chart(rows: Sequence[Tuple[str, float, float, float]], *, title: str,
              x_label: str) -> str:
    """Per queue (name, min gap, median gap, delay), in ms: a bar to the median gap, a darker
    one to the shortest gap, and a red tick at the delay in force; a shortest gap left of the
    tick is a violation."""
    bar_h, label_w = 18, 220
    height = _T + 20 + bar_h * len(rows) + 40
    top = nice_max(max((max(m or 0, d or 0, md or 0) for _, m, md, d in rows), default=0))
    plot_w = _W - label_w - _R
    body = _legend(['median gap', 'shortest gap'])
    body.append(f'<rect x="{_L + 230}" y="2" width="3" height="10" fill="#e15759"/>'
                f'<text class="legend" x="{_L + 238}" y="11">delay</text>')
    for i, (queue, shortest, median, delay) in enumerate(rows):
        y = _T + 20 + bar_h * i
        text = str(queue)
        short = text if len(text) <= 34 else text[:33] + '…'
        body.append(f'<text class="tick" x="{label_w - 6}" y="{y + 13}" text-anchor="end">'
                    f'{esc(short)}<title>{esc(text)}</title></text>')
        what = (f'{queue}: shortest gap {fmt(shortest)} ms, median {fmt(median)} ms, '
                f'delay {fmt(delay)} ms')
        for value, color, inset in ((median, PALETTE[0], 2), (shortest, PALETTE[1], 6)):
            if value is None:
                continue
            w = plot_w * max(0.0, value) / top
            body.append(f'<rect class="bar" x="{label_w}" y="{y + inset}" '
                        f'width="{max(w, 0.5):.1f}" height="{bar_h - 2 * inset}" '
                        f'fill="{color}"><title>{esc(what)}</title></rect>')
        if delay is not None:
            x = label_w + plot_w * delay / top
            body.append(f'<rect x="{x - 1:.1f}" y="{y}" width="3" height="{bar_h}" '
                        f'fill="#e15759"><title>{esc(what)}</title></rect>')
    return _hbar_frame(body, len(rows), bar_h, label_w, plot_w, top, _W, height, title,
                       x_label)
