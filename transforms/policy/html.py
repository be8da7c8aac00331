"""HTML and plain-text parsing (Nutch's parse-html rules; docs/nutch-differences.md D24-D26).
Pure, no Beam.

lxml is the parser: its start/end traversal events make Nutch's text rules (block separators,
skipped script/style subtrees whose tails still count, meta tags only outside <body>)
straightforward; selectolax extracts raw links 1.7× faster (bench/bench_html_parsers.py), but
per-link URL normalization costs more than parsing, so the difference does not show end to end.

lxml builds trees up to 2048 levels deep (`huge_tree`: the default 256 loses everything after
300 unclosed `<font>` tags, which real pages have); a document deeper still is read by the
tokenizer of html_tokens.py instead, so no link or text is dropped silently. Both readings
produce an `Extract`, to which the same rules (robots meta tags, refresh, base URL, link
resolution) are applied. The encoding is chosen by charset.py.

`parse_document(...)` never raises for bad input: a document that cannot be parsed gives a
`failed` Parse, a type that is not text gives `notparsed`.
"""

import re
import urllib.parse
from typing import Dict, Optional, Sequence, Tuple

import lxml.etree
import lxml.html

from beamcrawl.transforms.policy.charset import decode_document
from beamcrawl.transforms.policy.headers import header
from beamcrawl.transforms.policy.html_tokens import Extract, extract_tokens
from beamcrawl.transforms.policy.maintext import main_text
from beamcrawl.transforms.policy.parsed import Parse

__all__ = ['Parse', 'parse_document', 'document_format_of', 'HTML_TYPES', 'BLOCK_TAGS']

HTML_TYPES = frozenset({'text/html', 'application/xhtml+xml', 'application/vnd.wap.xhtml+xml'})
TEXT_TYPES = frozenset({'text/plain'})

# Elements around which text gets a line break (Nutch's parser.html.line.separators).
BLOCK_TAGS = frozenset(
    'article aside blockquote br canvas dd div dl dt fieldset figcaption figure footer form h1 h2 '
    'h3 h4 h5 h6 header hr li main nav noscript ol output p pre section table tfoot tr ul video '
    'title td th caption'.split())
_SKIP_TEXT = frozenset({'script', 'style', 'template'})
_LINK_ATTRS = {'a': 'href', 'area': 'href', 'frame': 'src', 'iframe': 'src', 'script': 'src',
               'link': 'href', 'img': 'src', 'source': 'src'}
_SPACES = re.compile(r'[\s\u00a0\u2000-\u200b\u3000]+')
_BREAK = '\ue000'            # marks a block boundary while text is assembled (private use)
_COLON_DIRECTIVES = ('unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview')


def _clean(text: str) -> str:
    text = ' '.join(text.split())          # str.split knows Unicode spaces, e.g. U+00A0
    return _SPACES.sub(' ', text).strip() if '\u200b' in text else text


def _robots_flags(directives: str) -> Tuple[bool, bool, bool]:
    """(noindex, nofollow, nocache) of a robots meta content or X-Robots-Tag value."""
    value = directives.lower()
    none = 'none' in value
    return none or 'noindex' in value, none or 'nofollow' in value, 'noarchive' in value


def x_robots_directives(header: str, agents: Sequence[str]) -> str:
    """The X-Robots-Tag directives that apply to us: all of them, unless the value starts with
    another crawler's name (`otherbot: noindex`)."""
    agent, sep, rest = header.partition(':')
    name = agent.strip().lower()
    if sep and ',' not in agent and name not in _COLON_DIRECTIVES:
        return rest if name in agents else ''
    return header


def _refresh(content: str, base_url: str) -> Optional[Tuple[str, int]]:
    seconds, _, rest = content.partition(';')
    try:
        delay = int(seconds.strip())
    except ValueError:
        return None
    rest = rest.strip()
    m = re.match(r'url\s*=\s*(.*)$', rest, re.I | re.S)
    target = (m.group(1) if m else rest).strip().strip('"\'')
    return (urllib.parse.urljoin(base_url, target) if target else base_url), delay


def _in_body(element) -> bool:
    for ancestor in element.iterancestors():
        if ancestor.tag == 'body':
            return True
    return False


def _anchor_text(element) -> str:
    text = _clean(element.text_content()) if element.tag in ('a', 'area') else ''
    if not text:
        text = _clean(' '.join(img.get('alt', '') for img in element.iter('img')))
    return text


def parse_html(body: bytes, url: str, *, header_charset: Optional[str] = None,
               x_robots: str = '', agents: Sequence[str] = (),
               main_text_extractor: str = 'none') -> Parse:
    text, charset, source = decode_document(body, header_charset)
    text = text.replace(_BREAK, ' ')
    meta: Dict[str, str] = {'charset': charset, 'charset.source': source}
    if '\x00' in text[:1024]:
        return Parse('failed', metadata={**meta, 'parse.error': 'binary content, not HTML'})
    parser = lxml.html.HTMLParser(encoding='utf-8', huge_tree=True)
    try:
        root = lxml.html.fromstring(text.encode('utf-8'), parser=parser)
    except lxml.etree.ParserError:          # empty document
        return Parse('success', metadata=meta)
    if any('Excessive depth' in e.message for e in parser.error_log):
        meta['parse.fallback'] = 'tokenizer: nested deeper than lxml builds trees'
        extract = extract_tokens(text, link_attrs=_LINK_ATTRS, block_tags=BLOCK_TAGS,
                                 skip_tags=_SKIP_TEXT, breaker=_BREAK)
        extract.text = _lines(extract.text)
    else:
        extract = _extract_tree(root)
    parse = _apply_rules(extract, url, meta, x_robots, agents)
    if main_text_extractor != 'none' and not parse.noindex:
        parse.main_text, error = main_text(text, main_text_extractor)
        if error:
            meta['main_text.error'] = error
    return parse


def _extract_tree(root) -> Extract:
    out = Extract(lang=(root.get('lang') or '').strip() if root.tag == 'html' else '')
    for element in root.iter('meta'):
        if not _in_body(element):
            out.metas.append({k.lower(): v for k, v in element.attrib.items()})
    for element in root.iter('base'):
        if element.get('href'):
            out.base = element.get('href').strip()
            break
    for element in root.iter('title'):
        if not _in_body(element):
            out.title = element.text_content()
        break
    for element in root.iter(*_LINK_ATTRS):
        target = element.get(_LINK_ATTRS[element.tag])
        if target is None or not target.strip():
            continue
        if 'nofollow' in (element.get('rel') or '').lower().split():
            continue
        out.links.append((target.strip(), _anchor_text(element)))
    out.text = _text(root)                 # last: it changes the tree
    return out


def _apply_rules(extract: Extract, url: str, meta: Dict[str, str], x_robots: str,
                 agents: Sequence[str]) -> Parse:
    """Robots directives (meta and X-Robots-Tag), meta refresh, the base URL and the links."""
    noindex, nofollow, nocache = _robots_flags(x_robots_directives(x_robots, agents))
    refresh = None
    for attrs in extract.metas:
        content = attrs.get('content', '')
        name, equiv = attrs.get('name', '').lower(), attrs.get('http-equiv', '').lower()
        if name:
            meta[name] = content
            if name == 'robots':
                flags = _robots_flags(content)
                noindex, nofollow, nocache = (noindex or flags[0], nofollow or flags[1],
                                              nocache or flags[2])
        if equiv == 'pragma' and 'no-cache' in content.lower():
            nocache = True
        if equiv == 'refresh' and refresh is None:
            refresh = _refresh(content, url)
    base = url
    if extract.base:
        try:
            base = urllib.parse.urljoin(url, extract.base)
        except ValueError:
            pass
    outlinks = []
    if not nofollow:
        for href, anchor in extract.links:
            try:
                outlinks.append((_resolve(base, href), _clean(anchor)))
            except ValueError:                # e.g. a malformed IPv6 literal
                continue
    if nocache:
        meta['caching.forbidden'] = 'content'
    if extract.lang:
        meta['lang'] = extract.lang[:35]
    parse = Parse('success_redirect' if refresh else 'success',
                  title='' if noindex else _clean(extract.title),
                  text='' if noindex else extract.text, outlinks=outlinks, metadata=meta,
                  refresh=refresh, noindex=noindex, nofollow=nofollow)
    if refresh:
        meta['refresh.url'], meta['refresh.time'] = refresh[0], str(refresh[1])
    return parse


def _resolve(base: str, href: str) -> str:
    """urljoin, with fast paths for the common absolute and root-relative links (urljoin costs
    about 20 µs a call)."""
    if href.startswith(('http://', 'https://')):
        return href
    if href.startswith('/') and not href.startswith('//') and '/./' not in href \
            and '/../' not in href and not href.endswith(('/.', '/..')):
        end = base.find('/', base.find('//') + 2)
        return (base if end == -1 else base[:end]) + href
    return urllib.parse.urljoin(base, href)


def _text(root) -> str:
    """The document's text: script/style/template subtrees dropped (their tails kept), a break
    around every block element, whitespace runs collapsed. Done by lxml in C: the tree is
    changed, so this runs after title, meta and outlinks have been read."""
    for element in list(root.iter(*_SKIP_TEXT)):
        element.drop_tree()
    for element in root.iter(*BLOCK_TAGS):
        element.text = _BREAK + (element.text or '')
        element.tail = _BREAK + (element.tail or '')
    return _lines(lxml.etree.tostring(root, method='text', encoding='unicode'))


def _lines(text: str) -> str:
    """Text with block breaks marked: one line per block, whitespace runs collapsed."""
    lines = (_clean(line) for line in text.split(_BREAK))
    return '\n'.join(line for line in lines if line)


def _mime_of(content_type: str, headers: Optional[Dict[str, str]]) -> Tuple[str, str]:
    """(MIME type, its parameters) of a fetched document."""
    mime, _, params = content_type.partition(';')
    mime = mime.strip().lower()
    if mime in ('', 'application/octet-stream'):
        # Content stored before header names were matched case-insensitively has no type;
        # its headers still say what it is.
        mime = header(headers, 'Content-Type').partition(';')[0].strip().lower() or mime
    return mime, params


def _is_html(mime: str, body: bytes) -> bool:
    return mime in HTML_TYPES or (mime in ('', 'application/octet-stream')
                                  and b'<html' in body[:1024].lower())


def document_format_of(body: bytes, content_type: str,
                       headers: Optional[Dict[str, str]] = None) -> Optional[str]:
    """The format of a fetched document that parse_document reads with policy/documents.py
    (PDF, office documents, feeds, XML...), or None for HTML, text and what it does not read:
    the parse stage runs those documents' parses in a child process (docs/documents.md)."""
    mime, _ = _mime_of(content_type, headers)
    if _is_html(mime, body) or mime in TEXT_TYPES:
        return None
    from beamcrawl.transforms.policy import documents
    return documents.document_format(mime, body)


def parse_document(body: bytes, url: str, content_type: str, *,
                   headers: Optional[Dict[str, str]] = None, agents: Sequence[str] = (),
                   main_text_extractor: str = 'none',
                   max_expanded: Optional[int] = None) -> Parse:
    """Parses one fetched document by its MIME type (an HTML page's main text too, by
    `main_text_extractor`: policy/maintext.py); PDF, office documents, feeds and XML by
    policy/documents.py, within `max_expanded` bytes expanded (parser.document.max.expanded)."""
    mime, params = _mime_of(content_type, headers)
    charset = None
    m = re.search(r'charset\s*=\s*["\']?([^"\';\s]+)', params + ';' +
                  header(headers, 'Content-Type'), re.I)
    if m:
        charset = m.group(1)
    if _is_html(mime, body):
        return parse_html(body, url, header_charset=charset,
                          x_robots=header(headers, 'X-Robots-Tag'), agents=agents,
                          main_text_extractor=main_text_extractor)
    if mime in TEXT_TYPES:
        text, used, source = decode_document(body, charset)
        meta = {'charset': used, 'charset.source': source}
        if '\x00' in text[:1024]:
            return Parse('failed', metadata={**meta, 'parse.error': 'binary content, not text'})
        return Parse('success', text='\n'.join(_clean(l) for l in text.splitlines() if l.strip()),
                     metadata=meta)
    from beamcrawl.transforms.policy import documents  # PDF, office, feeds, XML
    fmt = documents.document_format(mime, body)
    if fmt is not None:
        if max_expanded is None:
            raise ValueError('parse_document: give max_expanded (parser.document.max.expanded) '
                             'to parse documents')
        return documents.parse_binary(body, url, fmt, max_expanded=max_expanded)
    return Parse('notparsed', metadata={'parse.error': f'no parser for {mime or "unknown type"}'})
