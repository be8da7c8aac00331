"""A fallback reading of HTML for documents nested too deeply for lxml. Pure.

libxml2 (under lxml) refuses to build a tree deeper than 2048 elements even with `huge_tree`,
and silently drops everything after that depth: a page of a hundred thousand unclosed `<div>`s
would lose every link and all its text while looking parsed. For such a document the parser
falls back to this reading: Python's `html.parser` tokenizer, which keeps no tree and so has no
depth limit, with the same rules as the tree reading (meta and title only outside `<body>`,
script/style/template text skipped, a break around block elements, anchor text or image alt
text for links, rel=nofollow links skipped). Linear in the size of the document.
"""

import dataclasses
import html.parser
from typing import Dict, List, Optional, Tuple

__all__ = ['Extract', 'extract_tokens']


@dataclasses.dataclass
class Extract:
    """What the HTML readers take from a document, before the shared rules are applied."""
    metas: List[Dict[str, str]] = dataclasses.field(default_factory=list)  # outside <body>
    base: Optional[str] = None
    title: str = ''
    links: List[Tuple[str, str]] = dataclasses.field(default_factory=list)  # (href, anchor)
    text: str = ''
    lang: str = ''                   # the <html lang> attribute


class _Reader(html.parser.HTMLParser):

    def __init__(self, *, link_attrs, block_tags, skip_tags, breaker: str):
        super().__init__(convert_charrefs=True)
        self.link_attrs, self.block_tags, self.skip_tags = link_attrs, block_tags, skip_tags
        self.breaker = breaker
        self.out = Extract()
        self.in_body = False
        self.skipping = 0
        self.title: Optional[List[str]] = None
        self.title_done = False
        self.anchor: Optional[Tuple[str, List[str], List[str]]] = None   # href, text, alts
        self.chunks: List[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = {k.lower(): (v or '') for k, v in attrs}
        if tag == 'body':
            self.in_body = True
        if tag == 'html' and not self.out.lang:
            self.out.lang = attrs.get('lang', '').strip()
        if tag in self.skip_tags:
            self.skipping += 1
        if tag in self.block_tags:
            self.chunks.append(self.breaker)
        if tag == 'meta' and not self.in_body:
            self.out.metas.append(attrs)
        elif tag == 'base' and self.out.base is None and attrs.get('href', '').strip():
            self.out.base = attrs['href'].strip()
        elif tag == 'title' and not self.in_body and not self.title_done:
            self.title = []
        elif tag == 'img' and self.anchor is not None:
            self.anchor[2].append(attrs.get('alt', ''))
        name = self.link_attrs.get(tag)
        target = attrs.get(name, '').strip() if name else ''
        if target and 'nofollow' not in attrs.get('rel', '').lower().split():
            if tag in ('a', 'area'):
                self._close_anchor()
                self.anchor = (target, [], [])
                if tag == 'area':
                    self._close_anchor()
            else:
                self.out.links.append((target, ''))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in self.skip_tags:
            self.skipping = max(0, self.skipping - 1)

    def handle_endtag(self, tag):
        if tag in self.skip_tags:
            self.skipping = max(0, self.skipping - 1)
        if tag in self.block_tags:
            self.chunks.append(self.breaker)
        if tag == 'title' and self.title is not None:
            self.out.title = ''.join(self.title)
            self.title, self.title_done = None, True
        if tag == 'a':
            self._close_anchor()

    def handle_data(self, data):
        if self.title is not None:
            self.title.append(data)
        if self.skipping:
            return
        if self.anchor is not None:
            self.anchor[1].append(data)
        self.chunks.append(data)

    def _close_anchor(self):
        if self.anchor is not None:
            href, text, alts = self.anchor
            anchor = ' '.join(''.join(text).split()) or ' '.join(' '.join(alts).split())
            self.out.links.append((href, anchor))
            self.anchor = None

    def finish(self) -> Extract:
        self.close()
        self._close_anchor()
        if self.title is not None:
            self.out.title = ''.join(self.title)
        self.out.text = ''.join(self.chunks)
        return self.out


def extract_tokens(text: str, *, link_attrs, block_tags, skip_tags, breaker: str) -> Extract:
    """Reads `text` (a decoded HTML document) token by token."""
    reader = _Reader(link_attrs=link_attrs, block_tags=block_tags, skip_tags=skip_tags,
                     breaker=breaker)
    reader.feed(text)
    return reader.finish()
