"""Documents other than HTML and plain text: PDF, OOXML (docx, xlsx, pptx), OpenDocument (odt,
ods, odp), RTF, EPUB, RSS and Atom feeds, XML, and the legacy Office formats (doc, xls, ppt).
Text, title, outlinks with anchors where the format has them, and metadata (`author`,
`created`, `modified`, `pages`), into the same Parse as HTML (policy/parsed.py). Pure, no Beam.

The readers were chosen by measurement against Apache Tika 3.3.1 (what Nutch's parse-tika
uses) on documents with known contents (docs/documents.md "Formats"): per format, these found
everything Tika found and more, 2.5 to 100 times faster, without a JVM.

* PDF: pypdfium2 (PDFium), links with the text inside their rectangle as anchor.
* OOXML, OpenDocument, EPUB: their zip read with lxml; a member larger than the document limit
  (declared, or found while reading: a zip can lie) fails the parse, so a zip bomb costs
  nothing; all members together are held to the same limit.
* RTF: striprtf for the text, the HYPERLINK fields and the info group read here.
* Feeds: feedparser (entries' links are outlinks with their titles as anchors).
* XML: lxml (title, author and links by their element and attribute names).
* doc, xls, ppt: olefile (the Word piece table, the PowerPoint record tree) and xlrd.

Every XML read is hardened (no entities, no DTD, no network, no huge trees). Links are kept only
when absolute (http, https); a feed's or an XML file's relative links are resolved against the
document's URL. `parse_binary(...)` never raises: a document that cannot be read gives a
`failed` Parse with its reason.
"""

import datetime
import io
import re
import struct
import urllib.parse
import zipfile
from typing import Callable, Dict, List, Optional, Tuple

from lxml import etree

from beamcrawl.transforms.policy.parsed import Parse

__all__ = ['document_format', 'parse_binary', 'FORMATS', 'DocumentTooLarge']

_NS = {
    'w': 'http://schemas.openxmlformats.org/wordprocessingml/2006/main',
    'r': 'http://schemas.openxmlformats.org/officeDocument/2006/relationships',
    'a': 'http://schemas.openxmlformats.org/drawingml/2006/main',
    'p': 'http://schemas.openxmlformats.org/presentationml/2006/main',
    's': 'http://schemas.openxmlformats.org/spreadsheetml/2006/main',
    'rel': 'http://schemas.openxmlformats.org/package/2006/relationships',
    'dc': 'http://purl.org/dc/elements/1.1/',
    'dcterms': 'http://purl.org/dc/terms/',
    'ep': 'http://schemas.openxmlformats.org/officeDocument/2006/extended-properties',
    'office': 'urn:oasis:names:tc:opendocument:xmlns:office:1.0',
    'text': 'urn:oasis:names:tc:opendocument:xmlns:text:1.0',
    'meta': 'urn:oasis:names:tc:opendocument:xmlns:meta:1.0',
    'draw': 'urn:oasis:names:tc:opendocument:xmlns:drawing:1.0',
    'xlink': 'http://www.w3.org/1999/xlink',
    'opf': 'http://www.idpf.org/2007/opf',
    'cn': 'urn:oasis:names:tc:opendocument:xmlns:container',
}

# MIME types by format (the first is the one a format is known by).
FORMATS: Dict[str, Tuple[str, ...]] = {
    'pdf': ('application/pdf', 'application/x-pdf'),
    'docx': ('application/vnd.openxmlformats-officedocument.wordprocessingml.document',),
    'xlsx': ('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',),
    'pptx': ('application/vnd.openxmlformats-officedocument.presentationml.presentation',),
    'odt': ('application/vnd.oasis.opendocument.text',),
    'ods': ('application/vnd.oasis.opendocument.spreadsheet',),
    'odp': ('application/vnd.oasis.opendocument.presentation',),
    'rtf': ('application/rtf', 'text/rtf', 'application/x-rtf'),
    'epub': ('application/epub+zip',),
    'feed': ('application/rss+xml', 'application/atom+xml', 'application/rdf+xml'),
    'xml': ('application/xml', 'text/xml'),
    'doc': ('application/msword',),
    'xls': ('application/vnd.ms-excel', 'application/msexcel'),
    'ppt': ('application/vnd.ms-powerpoint', 'application/mspowerpoint'),
}
_BY_MIME = {mime: fmt for fmt, mimes in FORMATS.items() for mime in mimes}
_OOXML = {'word/document.xml': 'docx', 'xl/workbook.xml': 'xlsx',
          'ppt/presentation.xml': 'pptx'}
_ODF = {'application/vnd.oasis.opendocument.text': 'odt',
        'application/vnd.oasis.opendocument.spreadsheet': 'ods',
        'application/vnd.oasis.opendocument.presentation': 'odp',
        'application/epub+zip': 'epub'}
_OLE_MAGIC = b'\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1'
# Types that say too little: the document's first bytes (or its zip's members) decide.
_SNIFFED = frozenset({'', 'application/octet-stream', 'application/zip',
                      'application/x-zip-compressed', 'binary/octet-stream'})


class DocumentTooLarge(ValueError):
    """A document expands beyond the limit (parser.document.max.expanded)."""


def document_format(mime: str, body: bytes) -> Optional[str]:
    """The format of a document by its MIME type, or by its first bytes when the type says
    nothing (application/octet-stream, none, a bare zip); XML that is a feed is a feed. None
    when it is none of FORMATS."""
    fmt = _BY_MIME.get(mime)
    sniff = fmt is None and mime in _SNIFFED
    if fmt == 'xml' or (sniff and body.lstrip()[:1] == b'<'):
        head = body[:2048].lower()
        if b'<rss' in head or b'<feed' in head or b'<rdf:rdf' in head:
            return 'feed'
        if fmt == 'xml' or head.lstrip().startswith(b'<?xml'):
            return 'xml'
    if not sniff:
        return fmt
    if body.startswith(b'%PDF-'):
        return 'pdf'
    if body.startswith(b'{\\rtf'):
        return 'rtf'
    if body.startswith(b'PK\x03\x04'):
        return _zip_format(body)
    if body.startswith(_OLE_MAGIC):
        return _ole_format(body)
    return None


def _zip_format(body: bytes) -> Optional[str]:
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            names = set(z.namelist())
            if 'mimetype' in names and z.getinfo('mimetype').file_size < 100:
                return _ODF.get(z.read('mimetype').decode('ascii', 'replace').strip())
            for member, fmt in _OOXML.items():
                if member in names:
                    return fmt
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None
    return None


def _ole_format(body: bytes) -> Optional[str]:
    import olefile
    try:
        with olefile.OleFileIO(body) as ole:
            for stream, fmt in (('WordDocument', 'doc'), ('Workbook', 'xls'), ('Book', 'xls'),
                                ('PowerPoint Document', 'ppt')):
                if ole.exists(stream):
                    return fmt
    except (OSError, ValueError, struct.error):
        return None
    return None


# -- reading ---------------------------------------------------------------------------------

class _Doc:
    """What a reader found."""

    def __init__(self):
        self.lines: List[str] = []
        self.links: List[Tuple[str, str]] = []
        self.title = self.author = self.created = self.modified = ''
        self.pages: Optional[int] = None


class _Zip:
    """A zip whose members are read within one budget of expanded bytes."""

    def __init__(self, body: bytes, budget: int):
        self.zip = zipfile.ZipFile(io.BytesIO(body))
        self.names = set(self.zip.namelist())
        self.budget = budget

    def read(self, name: str) -> bytes:
        info = self.zip.getinfo(name)
        if info.file_size > self.budget:
            raise DocumentTooLarge(f'{name} expands to {info.file_size} bytes')
        with self.zip.open(name) as f:
            data = f.read(self.budget + 1)
        if len(data) > self.budget:
            raise DocumentTooLarge(f'{name} expands beyond its declared size')
        self.budget -= len(data)
        return data

    def xml(self, name: str):
        return _xml(self.read(name))

    def close(self):
        self.zip.close()


def _xml(data: bytes):
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False, recover=False)
    return etree.fromstring(data, parser)


def _text_of(element) -> str:
    return ''.join(element.itertext())


def _find_text(root, path: str) -> str:
    found = root.find(path, _NS)
    return (found.text or '').strip() if found is not None and found.text else ''


def _pdf(body: bytes, doc: _Doc, budget: int) -> None:
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw
    pdf = pdfium.PdfDocument(body)
    try:
        meta = pdf.get_metadata_dict()
        doc.title, doc.author = meta.get('Title', ''), meta.get('Author', '')
        doc.created, doc.modified = meta.get('CreationDate', ''), meta.get('ModDate', '')
        doc.pages = len(pdf)
        size = 0
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
                size += len(text)
                if size > budget:
                    raise DocumentTooLarge(f'more than {budget} characters of text')
                doc.lines.append(text)
                position, link = ctypes.c_int(0), raw.FPDF_LINK()
                while raw.FPDFLink_Enumerate(page.raw, ctypes.byref(position),
                                             ctypes.byref(link)):
                    action = raw.FPDFLink_GetAction(link)
                    if not action or raw.FPDFAction_GetType(action) != raw.PDFACTION_URI:
                        continue
                    n = raw.FPDFAction_GetURIPath(pdf.raw, action, None, 0)
                    buf = ctypes.create_string_buffer(n)
                    raw.FPDFAction_GetURIPath(pdf.raw, action, buf, n)
                    rect, anchor = raw.FS_RECTF(), ''
                    if raw.FPDFLink_GetAnnotRect(link, ctypes.byref(rect)):
                        anchor = textpage.get_text_bounded(rect.left, rect.bottom, rect.right,
                                                           rect.top)
                    doc.links.append((buf.value.decode('utf-8', 'replace'), anchor))
            finally:
                textpage.close()
                page.close()
    finally:
        pdf.close()


def _rels(z: _Zip, path: str) -> Dict[str, str]:
    folder, _, name = path.rpartition('/')
    rels = f'{folder}/_rels/{name}.rels' if folder else f'_rels/{name}.rels'
    if rels not in z.names:
        return {}
    return {r.get('Id'): r.get('Target') or '' for r in z.xml(rels).findall('rel:Relationship',
                                                                               _NS)}


def _member(base: str, target: str) -> str:
    if target.startswith('/'):
        return target[1:]
    parts = base.split('/')[:-1]
    for segment in target.split('/'):
        if segment == '..':
            parts = parts[:-1]
        elif segment and segment != '.':
            parts.append(segment)
    return '/'.join(parts)


def _ooxml_properties(z: _Zip, doc: _Doc) -> None:
    if 'docProps/core.xml' in z.names:
        core = z.xml('docProps/core.xml')
        doc.title, doc.author = _find_text(core, 'dc:title'), _find_text(core, 'dc:creator')
        doc.created = _find_text(core, 'dcterms:created')
        doc.modified = _find_text(core, 'dcterms:modified')
    if 'docProps/app.xml' in z.names:
        app = z.xml('docProps/app.xml')
        for path in ('ep:Pages', 'ep:Slides'):
            value = _find_text(app, path)
            if value.isdigit():
                doc.pages = int(value)


def _docx(z: _Zip, doc: _Doc) -> None:
    w = '{%s}' % _NS['w']
    rid = '{%s}id' % _NS['r']
    rels = _rels(z, 'word/document.xml')
    for para in z.xml('word/document.xml').iter(w + 'p'):
        parts = []
        for el in para.iter(w + 't', w + 'tab', w + 'br', w + 'hyperlink'):
            if el.tag == w + 't':
                parts.append(el.text or '')
            elif el.tag == w + 'hyperlink':
                if el.get(rid) in rels:
                    doc.links.append((rels[el.get(rid)],
                                      ''.join(t.text or '' for t in el.iter(w + 't'))))
            else:
                parts.append('\t' if el.tag == w + 'tab' else '\n')
        doc.lines.append(''.join(parts))
    _ooxml_properties(z, doc)


def _xlsx(z: _Zip, doc: _Doc) -> None:
    s = '{%s}' % _NS['s']
    rid = '{%s}id' % _NS['r']
    shared = []
    if 'xl/sharedStrings.xml' in z.names:
        shared = [''.join(t.text or '' for t in si.iter(s + 't'))
                  for si in z.xml('xl/sharedStrings.xml').findall('s:si', _NS)]
    rels = _rels(z, 'xl/workbook.xml')
    for sheet in z.xml('xl/workbook.xml').iterfind('s:sheets/s:sheet', _NS):
        target = rels.get(sheet.get(rid))
        if not target:
            continue
        path = _member('xl/workbook.xml', target)
        doc.lines.append(sheet.get('name') or '')
        root = z.xml(path)
        values: Dict[str, str] = {}
        for row in root.iterfind('s:sheetData/s:row', _NS):
            cells = []
            for cell in row.iterfind('s:c', _NS):
                kind, value = cell.get('t'), cell.find('s:v', _NS)
                if kind == 's' and value is not None and (value.text or '').isdigit() \
                        and int(value.text) < len(shared):
                    text = shared[int(value.text)]
                elif kind == 'inlineStr':
                    text = ''.join(t.text or '' for t in cell.iter(s + 't'))
                else:
                    text = value.text or '' if value is not None else ''
                values[cell.get('r') or ''] = text
                cells.append(text)
            doc.lines.append('\t'.join(cells))
        sheet_rels = _rels(z, path)
        for link in root.iterfind('s:hyperlinks/s:hyperlink', _NS):
            if link.get(rid) in sheet_rels:
                doc.links.append((sheet_rels[link.get(rid)],
                                  values.get((link.get('ref') or '').split(':')[0], '')))
    _ooxml_properties(z, doc)


def _pptx(z: _Zip, doc: _Doc) -> None:
    a = '{%s}' % _NS['a']
    rid = '{%s}id' % _NS['r']
    rels = _rels(z, 'ppt/presentation.xml')
    slides = 0
    for slide in z.xml('ppt/presentation.xml').iterfind('p:sldIdLst/p:sldId', _NS):
        target = rels.get(slide.get(rid))
        if not target:
            continue
        path = _member('ppt/presentation.xml', target)
        slides += 1
        slide_rels = _rels(z, path)
        for para in z.xml(path).iter(a + 'p'):
            parts = []
            for run in para.iter(a + 'r', a + 'fld'):
                found = run.find('a:t', _NS)
                text = _text_of(found) if found is not None else ''
                parts.append(text)
                click = run.find('a:rPr/a:hlinkClick', _NS)
                if click is not None and click.get(rid) in slide_rels:
                    doc.links.append((slide_rels[click.get(rid)], text))
            doc.lines.append(''.join(parts))
    _ooxml_properties(z, doc)
    doc.pages = doc.pages or slides or None


def _odf(z: _Zip, doc: _Doc) -> None:
    t = '{%s}' % _NS['text']
    body = z.xml('content.xml').find('office:body', _NS)
    if body is None:
        raise ValueError('content.xml has no office:body')
    for el in body.iter(t + 'p', t + 'h'):
        doc.lines.append(_text_of(el))
        for link in el.iter(t + 'a'):
            doc.links.append((link.get('{%s}href' % _NS['xlink']) or '', _text_of(link)))
    if 'meta.xml' in z.names:
        meta = z.xml('meta.xml').find('office:meta', _NS)
        if meta is not None:
            doc.title = _find_text(meta, 'dc:title')
            doc.author = _find_text(meta, 'dc:creator') or \
                _find_text(meta, 'meta:initial-creator')
            doc.created = _find_text(meta, 'meta:creation-date')
            doc.modified = _find_text(meta, 'dc:date')
            stats = meta.find('meta:document-statistic', _NS)
            count = stats.get('{%s}page-count' % _NS['meta']) if stats is not None else None
            if count and count.isdigit():
                doc.pages = int(count)
    if doc.pages is None:
        doc.pages = len(body.findall('.//draw:page', _NS)) or None


def _epub(z: _Zip, doc: _Doc) -> None:
    import lxml.html
    rootfile = z.xml('META-INF/container.xml').find('.//cn:rootfile', _NS)
    if rootfile is None or not rootfile.get('full-path'):
        raise ValueError('META-INF/container.xml names no package')
    opf_path = rootfile.get('full-path')
    opf = z.xml(opf_path)
    meta = opf.find('opf:metadata', _NS)
    if meta is not None:
        doc.title, doc.author = _find_text(meta, 'dc:title'), _find_text(meta, 'dc:creator')
        doc.created = _find_text(meta, 'dc:date')
        for item in meta.findall('opf:meta', _NS):
            if item.get('property') == 'dcterms:modified':
                doc.modified = (item.text or '').strip()
    manifest = {item.get('id'): item.get('href') for item in
                opf.iterfind('opf:manifest/opf:item', _NS)}
    blocks = {'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'li', 'td', 'th', 'dt', 'dd',
              'blockquote', 'pre'}
    for ref in opf.iterfind('opf:spine/opf:itemref', _NS):
        href = manifest.get(ref.get('idref'))
        if not href:
            continue
        page = lxml.html.document_fromstring(z.read(_member(opf_path, href)))
        for el in page.iter():
            tag = el.tag.rpartition('}')[2] if isinstance(el.tag, str) else ''
            if tag in blocks:
                doc.lines.append(' '.join(_text_of(el).split()))
            elif tag == 'a' and el.get('href'):
                doc.links.append((el.get('href'), ' '.join(_text_of(el).split())))


def _rtf(body: bytes, doc: _Doc) -> None:
    from striprtf.striprtf import rtf_to_text
    source = body.decode('latin-1')
    doc.lines.append(rtf_to_text(source, errors='ignore'))
    for m in re.finditer(r'HYPERLINK\s+"([^"]+)"', source):
        start = source.find('\\fldrslt', m.end())
        if start < 0:
            continue
        depth, end = 1, start                # the balanced {...} group of \fldrslt
        while end < len(source) and depth:
            if source[end] == '\\':
                end += 2
                continue
            depth += {'{': 1, '}': -1}.get(source[end], 0)
            end += 1
        doc.links.append((m.group(1), rtf_to_text('{' + source[start:end],
                                                  errors='ignore').strip()))

    def info(key):
        m = re.search(r'\{\\' + key + r'\s+((?:[^{}\\]|\\.)*?)\}', source)
        return rtf_to_text(m.group(1), errors='ignore').strip() if m else ''

    def when(key):
        m = re.search(r'\{\\' + key + r'\\yr(\d+)\\mo(\d+)\\dy(\d+)(?:\\hr(\d+))?(?:\\min(\d+))?',
                      source)
        if not m:
            return ''
        try:
            return datetime.datetime(*(int(x or 0) for x in m.groups())).isoformat()
        except ValueError:
            return ''
    doc.title, doc.author = info('title'), info('author')
    doc.created, doc.modified = when('creatim'), when('revtim')


def _feed(body: bytes, doc: _Doc) -> None:
    import feedparser
    import lxml.html
    feed = feedparser.parse(body, resolve_relative_uris=False, sanitize_html=False)
    if feed.bozo and not feed.entries and not feed.feed:
        raise ValueError(f'not a feed ({type(feed.bozo_exception).__name__})')

    def plain(html: str) -> str:
        if not html:
            return ''
        try:
            return lxml.html.fragment_fromstring(html, create_parent='div').text_content()
        except (etree.ParserError, ValueError):
            return html
    doc.title = feed.feed.get('title', '')
    doc.author = feed.feed.get('author') or (feed.entries[0].get('author', '')
                                             if feed.entries else '')
    doc.modified = feed.feed.get('updated') or feed.feed.get('published') or ''
    doc.lines.append(doc.title)
    for entry in feed.entries:
        doc.lines.append(entry.get('title', ''))
        doc.lines.append(plain(entry.get('summary', '')))
        if entry.get('link'):
            doc.links.append((entry.get('link'), entry.get('title', '')))


def _generic_xml(body: bytes, doc: _Doc) -> None:
    root = _xml(body)
    doc.lines = [text.strip() for text in root.itertext() if text.strip()]
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        name = etree.QName(el).localname.lower()
        if not doc.title and name == 'title':
            doc.title = _text_of(el).strip()
        if not doc.author and name in ('author', 'creator'):
            doc.author = _text_of(el).strip()
        for key, value in el.attrib.items():
            if etree.QName(key).localname == 'href':
                doc.links.append((value, ' '.join(_text_of(el).split())))


def _ole_properties(ole, doc: _Doc) -> None:
    meta = ole.get_metadata()
    page = (meta.codepage or 1252) & 0xFFFF
    encoding = 'utf-8' if page == 65001 else 'utf-16-le' if page == 1200 else f'cp{page}'

    def text(value):
        if isinstance(value, bytes):
            try:
                return value.decode(encoding, 'replace').rstrip('\x00')
            except LookupError:
                return value.decode('cp1252', 'replace').rstrip('\x00')
        return value or ''
    doc.title, doc.author = text(meta.title), text(meta.author)
    doc.created = meta.create_time.isoformat() if hasattr(meta.create_time, 'isoformat') else ''
    doc.modified = meta.last_saved_time.isoformat() \
        if hasattr(meta.last_saved_time, 'isoformat') else ''
    doc.pages = meta.num_pages or getattr(meta, 'slides', None) or None


def _xls(body: bytes, doc: _Doc) -> None:
    import olefile
    import xlrd
    book = xlrd.open_workbook(file_contents=body, on_demand=False, logfile=io.StringIO())
    for sheet in book.sheets():
        doc.lines.append(sheet.name)
        for row in range(sheet.nrows):
            doc.lines.append('\t'.join(str(v) for v in sheet.row_values(row) if v not in ('',)))
        for link in getattr(sheet, 'hyperlink_list', None) or []:
            try:
                anchor = str(sheet.cell_value(link.frowx, link.fcolx))
            except IndexError:
                anchor = ''
            doc.links.append(((link.url_or_path or '').rstrip('\x00'),
                              anchor or (link.desc or '').rstrip('\x00')))
    with olefile.OleFileIO(body) as ole:
        _ole_properties(ole, doc)


def _doc(body: bytes, doc: _Doc) -> None:
    """Word 97-2003: the text of the WordDocument stream through its piece table (MS-DOC
    2.4.1); HYPERLINK fields give the links."""
    import olefile
    with olefile.OleFileIO(body) as ole:
        word = ole.openstream('WordDocument').read()
        flags = struct.unpack_from('<H', word, 0x0A)[0]
        table = ole.openstream('1Table' if flags & 0x0200 else '0Table').read()
        fc_clx, lcb_clx = struct.unpack_from('<II', word, 0x01A2)
        clx = table[fc_clx:fc_clx + lcb_clx]
        i = 0
        while i < len(clx) and clx[i] == 0x01:           # Prc entries come first
            i += 3 + struct.unpack_from('<H', clx, i + 1)[0]
        if i >= len(clx) or clx[i] != 0x02:
            raise ValueError('no piece table')
        lcb = struct.unpack_from('<I', clx, i + 1)[0]
        plc = clx[i + 5:i + 5 + lcb]
        n = (lcb - 4) // 12
        cps = struct.unpack_from('<%dI' % (n + 1), plc, 0)
        parts = []
        for k in range(n):
            fc = struct.unpack_from('<I', plc, 4 * (n + 1) + 8 * k + 2)[0]
            length = cps[k + 1] - cps[k]
            if fc & 0x40000000:
                offset = (fc & 0x3FFFFFFF) // 2
                parts.append(word[offset:offset + length].decode('cp1252', 'replace'))
            else:
                parts.append(word[fc:fc + 2 * length].decode('utf-16-le', 'replace'))
        _ole_properties(ole, doc)
    raw = ''.join(parts)
    for m in re.finditer(r'\x13\s*HYPERLINK\s+"([^"]+)"[^\x14\x15]*\x14([^\x15]*)\x15', raw):
        doc.links.append((m.group(1), m.group(2).strip()))
    text = re.sub(r'\x13[^\x14\x15]*\x14?', '', raw)     # field codes out, their results in
    for old, new in (('\x15', ''), ('\r', '\n'), ('\x07', '\t'), ('\x0b', '\n'), ('\x0c', '\n')):
        text = text.replace(old, new)
    doc.lines.append(text)


def _ppt(body: bytes, doc: _Doc) -> None:
    """PowerPoint 97-2003: the text atoms of the record tree of the 'PowerPoint Document'
    stream (MS-PPT); ExHyperlink records give the links."""
    import olefile
    with olefile.OleFileIO(body) as ole:
        stream = ole.openstream('PowerPoint Document').read()
        _ole_properties(ole, doc)
    slides = 0
    pending = [(0, len(stream), False, 0)]
    while pending:                        # (start, end, in a hyperlink, depth): no recursion
        start, end, in_link, depth = pending.pop()
        strings, i = [], start
        while i + 8 <= end:
            version, kind, length = struct.unpack_from('<HHI', stream, i)
            inner = i + 8
            if length > end - inner:
                break
            if version & 0x0F == 0x0F:                    # a container
                slides += kind == 0x03EE
                if depth < 32:
                    pending.append((inner, inner + length, kind == 0x0FD7, depth + 1))
            elif kind == 0x0FA0:                          # TextCharsAtom
                doc.lines.append(stream[inner:inner + length].decode('utf-16-le', 'replace'))
            elif kind == 0x0FA8:                          # TextBytesAtom
                doc.lines.append(stream[inner:inner + length].decode('latin-1'))
            elif kind == 0x0FBA and in_link:              # CString: name, target, location
                strings.append(stream[inner:inner + length].decode('utf-16-le', 'replace'))
            i = inner + length
        if in_link and strings:
            doc.links.append((strings[1] if len(strings) > 1 else strings[0], strings[0]))
    doc.lines = [line.replace('\r', '\n').replace('\x0b', '\n') for line in doc.lines]
    doc.pages = doc.pages or slides or None


_ZIPPED: Dict[str, Callable[[_Zip, _Doc], None]] = {
    'docx': _docx, 'xlsx': _xlsx, 'pptx': _pptx, 'odt': _odf, 'ods': _odf, 'odp': _odf,
    'epub': _epub}
_PLAIN: Dict[str, Callable[[bytes, _Doc], None]] = {
    'rtf': _rtf, 'feed': _feed, 'xml': _generic_xml, 'xls': _xls, 'doc': _doc, 'ppt': _ppt}


def parse_binary(body: bytes, url: str, fmt: str, *, max_expanded: int) -> Parse:
    """The Parse of a document of format `fmt` (document_format). `max_expanded`: how many
    bytes its zip members may expand to, together, and how many characters of text it may
    give (parser.document.max.expanded); beyond that the parse fails."""
    doc = _Doc()
    try:
        if fmt == 'pdf':
            _pdf(body, doc, max_expanded)
        elif fmt in _ZIPPED:
            z = _Zip(body, max_expanded)
            try:
                _ZIPPED[fmt](z, doc)
            finally:
                z.close()
        else:
            _PLAIN[fmt](body, doc)
    except DocumentTooLarge as e:
        return Parse('failed', metadata={'document.format': fmt,
                                         'parse.error': f'document too large: {e}'})
    except Exception as e:  # pylint: disable=broad-except  (a hostile document is a failed parse)
        return Parse('failed', metadata={'document.format': fmt,
                                         'parse.error': f'{type(e).__name__}: {e}'[:300]})
    text = '\n'.join(line for line in (' '.join(line.split()) for line in doc.lines) if line)
    if len(text) > max_expanded:
        return Parse('failed', metadata={'document.format': fmt, 'parse.error':
                                         f'document too large: more than {max_expanded} '
                                         f'characters of text'})
    meta = {'document.format': fmt}
    for key, value in (('author', doc.author), ('created', doc.created),
                       ('modified', doc.modified)):
        if value:
            meta[key] = ' '.join(str(value).split())[:200]
    if doc.pages:
        meta['pages'] = str(doc.pages)
    return Parse('success', title=' '.join((doc.title or '').split())[:1000], text=text,
                 outlinks=_outlinks(doc.links, url, relative=fmt in ('feed', 'xml')),
                 metadata=meta)


def _outlinks(links, url: str, relative: bool) -> List[Tuple[str, str]]:
    out = []
    for target, anchor in links:
        target = (target or '').strip()
        if relative:
            try:
                target = urllib.parse.urljoin(url, target)
            except ValueError:
                continue
        if target.lower().startswith(('http://', 'https://')):
            out.append((target, ' '.join((anchor or '').split())))
    return out
