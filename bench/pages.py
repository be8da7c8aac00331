"""Synthetic HTML pages for the parse benchmarks: 2-50 KB, 20-200 links, mixed markup."""

import random

WORDS = ('crawler politeness segment fetch parse update link anchor index host domain queue '
         'robots schedule adaptive interval score signature content metadata page text').split()


def page(i: int, rnd: random.Random):
    target = rnd.randint(2, 50) * 1024
    links = rnd.randint(20, 200)
    host = f'www.h{i % 500}.example.com'
    parts = [f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Page {i} about '
             f'{rnd.choice(WORDS)}</title><meta name="description" content="page {i}">'
             f'<style>body {{ color: #333 }}</style><script>var x = {i};</script></head><body>'
             f'<div class="nav"><ul>']
    for k in range(links):
        if k % 3 == 0:
            href = f'/section/{rnd.randint(0, 999)}/item-{k}.html'
        elif k % 3 == 1:
            href = f'http://www.h{rnd.randint(0, 4999)}.example.com/p/{k}?ref={i}'
        else:
            href = f'../rel/{k}/page.html#frag'
        parts.append(f'<li><a href="{href}" class="l{k % 7}">{" ".join(rnd.sample(WORDS, 3))}'
                     f'</a></li>')
    parts.append('</ul></div><main>')
    size = sum(len(p) for p in parts)
    while size < target:
        words = ' '.join(rnd.choice(WORDS) for _ in range(rnd.randint(30, 120)))
        para = f'<p>{words} <b>{rnd.choice(WORDS)}</b> {words[:40]}</p>\n'
        parts.append(para)
        size += len(para)
    parts.append(f'<img src="/img/{i}.png" alt="picture {i}"></main></body></html>')
    return ''.join(parts).encode('utf-8'), f'http://{host}/page/{i}.html'


def pages(n: int, seed: int = 7):
    rnd = random.Random(seed)
    return [page(i, rnd) for i in range(n)]
