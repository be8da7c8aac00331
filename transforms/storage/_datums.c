/* CrawlDatum blocks in Avro's binary encoding, read in C: the inner loops of datumcodec.py.
 *
 * Each function gives what its Python twin in datumcodec.py gives (the twin is the test oracle:
 * tests/test_native.py), or None where the block is not clean (the caller then reads it with
 * fastavro, which decides). The data is a block's records, decompressed; every read is checked
 * against its end, and nothing read is trusted to be in range.
 *
 *   decode(data, count, layout, complete)     [(record, raw)]: _decode_block
 *   split(data, count, conv)                  [(url, status, raw in our schema)]: split_datums
 *                                             (our schema), _convert_block (another writer's)
 *   partition(data, count, conv, keep, n)     the same records as n runs by crc32(url) mod n,
 *                                             each bytes of (u32 length, raw)...; and counts
 *   decode_own(raw), encode_own(record),     one record of our schema: decode_datum,
 *   score_offset(raw)                         encode_datum, datum_score_offset
 *   lookup(old, new), merge(...)              a part's records merged with replacements
 *   slices(text, lengths)                     a keys file's URLs
 *   scheme_host(url)                          policy/urlparts.py scheme_host's fast path
 *   sorted_run(runs)                          those runs' records in URL order: urls, status
 *                                             indexes, lengths (u32), their bytes, and whether
 *                                             each URL is there once
 *
 * layout: (statuses, sig_null, sig_value, protocol_mode, protocol_null, protocol_value,
 *          http_mode, http_null, http_value): datumcodec._Layout; a mode is 0 (no such field),
 *          1 (the value's type alone) or 2 (a union; the bytes that say null and a value).
 * conv:   (layout, own, table, same_order): own, the file is in our schema (its bytes are taken
 *          as they are); else table gives, per writer symbol, (our status name, our status
 *          index) or None, and the bytes are taken only in the form encode_datum writes.
 * docs/performance.md, "CrawlDatum records are encoded and decoded by hand".
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ABSENT 0
#define PLAIN 1
#define UNION 2

typedef struct {
    const unsigned char *d;
    Py_ssize_t size;
} Block;

typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
} Span;

/* The zigzag varint at *pos, of at most `most` bytes (and 64 bits); 0 on success. */
static int varint(const Block *b, Py_ssize_t *pos, int most, int64_t *out)
{
    uint64_t result = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (int i = 0; i < most && i < 10; i++) {
        if (p >= b->size)
            return -1;
        unsigned char c = b->d[p++];
        if (i == 9 && c > 1)
            return -1;
        result |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) {
            *pos = p;
            *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* A varint of at most `most` bytes in its shortest form (no value wanted). */
static int shortest(const Block *b, Py_ssize_t *pos, int most)
{
    Py_ssize_t p = *pos;
    for (int i = 0; i < most; i++) {
        if (p >= b->size)
            return -1;
        unsigned char c = b->d[p++];
        if (c < 0x80) {
            if (i > 0 && c == 0)
                return -1;
            *pos = p;
            return 0;
        }
    }
    return -1;
}

/* A length: not negative, not beyond the block; `canon`: in its shortest form. */
static int length_at(const Block *b, Py_ssize_t *pos, int canon, Py_ssize_t *out)
{
    int64_t n;
    Py_ssize_t start = *pos;
    if (varint(b, pos, 10, &n) < 0 || n < 0 || n > b->size - *pos)
        return -1;
    if (canon && *pos - start > 1 && b->d[*pos - 1] == 0)
        return -1;
    *out = (Py_ssize_t)n;
    return 0;
}

/* Whether the bytes are UTF-8 as Python's strict decoder takes it (no error left set). */
static int valid_utf8(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n && p[i] < 0x80)
        i++;
    if (i == n)
        return 1;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p + i, n - i, NULL);
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(s);
    return 1;
}

/* A string or bytes value at *pos; `text`: UTF-8 checked. */
static int span_at(const Block *b, Py_ssize_t *pos, int canon, int text, Span *out)
{
    Py_ssize_t n;
    if (length_at(b, pos, canon, &n) < 0)
        return -1;
    out->p = b->d + *pos;
    out->n = n;
    *pos += n;
    if (text && !valid_utf8(out->p, n))
        return -1;
    return 0;
}

/* A str of UTF-8 bytes; NULL with no error set when they are not UTF-8. */
static PyObject *str_of(Span s)
{
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s.p, s.n, NULL);
    if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        PyErr_Clear();
    return text;
}

static int parse_block(PyObject *arg, Py_buffer *view, Block *b)
{
    if (PyObject_GetBuffer(arg, view, PyBUF_SIMPLE) < 0)
        return -1;
    b->d = (const unsigned char *)view->buf;
    b->size = view->len;
    return 0;
}

/* An optional field's union byte at *pos: 1 a value follows, 0 null, -1 neither. */
static int branch(const Block *b, Py_ssize_t *pos, int null_byte, int value_byte)
{
    if (*pos >= b->size)
        return -1;
    int c = b->d[(*pos)++];
    return c == value_byte ? 1 : c == null_byte ? 0 : -1;
}

/* -- layouts and conversions --------------------------------------------------------------- */

typedef struct {
    PyObject *names[64];        /* borrowed: the writer's status symbols */
    Py_ssize_t nstatus;
    int sig_null, sig_value;
    int protocol, protocol_null, protocol_value;
    int http, http_null, http_value;
} Layout;

static int layout_of(PyObject *t, Layout *l)
{
    PyObject *statuses;
    if (!PyArg_ParseTuple(t, "O!iiiiiiii;layout: (statuses, 8 ints)", &PyTuple_Type,
                          &statuses, &l->sig_null, &l->sig_value, &l->protocol,
                          &l->protocol_null, &l->protocol_value, &l->http, &l->http_null,
                          &l->http_value))
        return -1;
    if (l->protocol < ABSENT || l->protocol > UNION || l->http < ABSENT || l->http > UNION ||
        PyTuple_GET_SIZE(statuses) > 64) {
        PyErr_SetString(PyExc_ValueError, "layout: modes of 0, 1 or 2, at most 64 statuses");
        return -1;
    }
    l->nstatus = PyTuple_GET_SIZE(statuses);
    for (Py_ssize_t i = 0; i < l->nstatus; i++)
        l->names[i] = PyTuple_GET_ITEM(statuses, i);
    return 0;
}

typedef struct {
    Layout l;
    int own;                    /* our schema: the bytes as they are */
    int same;                   /* another writer's, its symbols in our order */
    PyObject *names[64];        /* borrowed: our status name per writer symbol, or NULL */
    int index[64];              /* our status index per writer symbol */
} Conv;

static int conv_of(PyObject *t, Conv *c)
{
    PyObject *layout, *table;
    if (!PyArg_ParseTuple(t, "OpO!p;conv: (layout, own, table, same_order)", &layout, &c->own,
                          &PyTuple_Type, &table, &c->same) ||
        layout_of(layout, &c->l) < 0)
        return -1;
    if (PyTuple_GET_SIZE(table) != c->l.nstatus) {
        PyErr_SetString(PyExc_ValueError, "conv: a table entry per status symbol");
        return -1;
    }
    for (Py_ssize_t i = 0; i < c->l.nstatus; i++) {
        PyObject *entry = PyTuple_GET_ITEM(table, i);
        c->names[i] = NULL;
        if (entry == Py_None)
            continue;
        if (!PyArg_ParseTuple(entry, "Oi;conv: (name, index) or None", &c->names[i],
                              &c->index[i]))
            return -1;
        if (c->index[i] < 0 || c->index[i] > 63) {
            PyErr_SetString(PyExc_ValueError, "conv: a status index of 0 to 63");
            return -1;
        }
    }
    return 0;
}

/* -- bytes being built ---------------------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    Py_ssize_t n, cap;
} Out;

static int grow(Out *o, Py_ssize_t more)
{
    if (o->n + more <= o->cap)
        return 0;
    Py_ssize_t cap = (o->n + more) * 2 + 256;
    unsigned char *p = PyMem_Realloc(o->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

static int add(Out *o, const void *p, Py_ssize_t n)
{
    if (grow(o, n) < 0)
        return -1;
    memcpy(o->p + o->n, p, n);
    o->n += n;
    return 0;
}

static int add_byte(Out *o, unsigned char c)
{
    return add(o, &c, 1);
}

static int add_u32(Out *o, uint32_t v)
{
    unsigned char le[4] = {v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, (v >> 24) & 0xFF};
    return add(o, le, 4);
}

/* -- one record, split and made ours ------------------------------------------------------- */

static int span_order(const void *a, const void *b)
{
    const Span *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return memcmp(x->p, y->p, x->n);
}

/* Whether two of a map block's `n` keys are the same (may reorder them). */
static int duplicate_keys(Span *keys, Py_ssize_t n)
{
    if (n <= 16) {
        for (Py_ssize_t i = 1; i < n; i++)
            for (Py_ssize_t j = 0; j < i; j++)
                if (span_order(&keys[i], &keys[j]) == 0)
                    return 1;
        return 0;
    }
    qsort(keys, n, sizeof(Span), span_order);
    for (Py_ssize_t i = 1; i < n; i++)
        if (span_order(&keys[i], &keys[i - 1]) == 0)
            return 1;
    return 0;
}

/* The metadata map at *pos: in our schema any blocks (split_datums); else one block of
 * distinct keys in shortest forms (_convert_block). 1 clean, 0 not, -1 error. */
static int metadata_at(const Block *b, Py_ssize_t *pos, int own)
{
    Span value;
    if (*pos >= b->size)
        return 0;
    if (b->d[*pos] == 0) {
        (*pos)++;
        return 1;
    }
    if (own) {
        for (;;) {
            int64_t entries, skip;
            if (varint(b, pos, 10, &entries) < 0)
                return 0;
            if (entries == 0)
                return 1;
            if (entries < 0) {              /* a block with its byte size */
                if (entries == INT64_MIN)
                    return 0;
                entries = -entries;
                if (varint(b, pos, 10, &skip) < 0)
                    return 0;
            }
            if (entries > b->size)
                return 0;
            for (int64_t e = 0; e < 2 * entries; e++)
                if (span_at(b, pos, 0, 1, &value) < 0)
                    return 0;
        }
    }
    Py_ssize_t entries;
    if (length_at(b, pos, 1, &entries) < 0 || entries > b->size)
        return 0;
    Span few[16], *keys = few;
    if (entries > 16) {
        keys = PyMem_Malloc(entries * sizeof(Span));
        if (keys == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    int clean = 1;
    for (Py_ssize_t e = 0; clean && e < entries; e++)
        clean = span_at(b, pos, 1, 1, &keys[e]) == 0 && span_at(b, pos, 1, 1, &value) == 0;
    clean = clean && !duplicate_keys(keys, entries) && *pos < b->size && b->d[*pos] == 0;
    if (keys != few)
        PyMem_Free(keys);
    if (!clean)
        return 0;
    (*pos)++;
    return 1;
}

/* The record at *pos: its URL, our status index and its bytes in our schema (appended to o).
 * 1 clean, 0 not (the block is left to the caller), -1 an error. */
static int next_record(const Block *b, Py_ssize_t *pos, const Conv *c, Out *o, Span *url,
                       int *status)
{
    const Layout *l = &c->l;
    Py_ssize_t start = *pos;
    int canon = !c->own;
    int64_t v;
    Span text;
    if (span_at(b, pos, canon, 0, url) < 0)
        return 0;
    Py_ssize_t at_status = *pos;
    if (*pos >= b->size)
        return 0;
    unsigned char s = b->d[(*pos)++];
    if (s >= 0x80 || (s & 1) || (s >> 1) >= l->nstatus)
        return 0;
    int symbol = s >> 1;
    if (c->own)
        *status = symbol;
    else if (c->names[symbol] == NULL)
        return 0;
    else
        *status = c->index[symbol];
    if (c->own) {
        for (int i = 0; i < 4; i++)             /* fetch_time ... retries */
            if (varint(b, pos, 10, &v) < 0)
                return 0;
    } else if (shortest(b, pos, 9) < 0 || shortest(b, pos, 9) < 0 ||
               shortest(b, pos, 4) < 0 || shortest(b, pos, 4) < 0)
        return 0;                               /* longs of 63 bits, ints of 27 */
    if (*pos + 4 > b->size)
        return 0;
    if (canon && (b->d[*pos + 3] & 0x7F) == 0x7F && (b->d[*pos + 2] & 0x80))
        return 0;                               /* a NaN or infinite score */
    *pos += 4;
    Py_ssize_t at_signature = *pos;
    int sig = branch(b, pos, l->sig_null, l->sig_value);
    if (sig < 0 || (sig && span_at(b, pos, canon, 0, &text) < 0))
        return 0;
    int rc = metadata_at(b, pos, c->own);
    if (rc <= 0)
        return rc;
    Py_ssize_t body_end = *pos;
    /* protocol_status, http_code */
    int present = l->protocol == ABSENT ? 0 : l->protocol == PLAIN ? 1 :
                  branch(b, pos, l->protocol_null, l->protocol_value);
    Py_ssize_t protocol_at = *pos;
    if (present < 0 || (present && span_at(b, pos, canon, 1, &text) < 0))
        return 0;
    Py_ssize_t protocol_end = *pos;
    int http = l->http == ABSENT ? 0 : l->http == PLAIN ? 1 :
               branch(b, pos, l->http_null, l->http_value);
    Py_ssize_t http_at = *pos;
    if (http < 0)
        return 0;
    if (http) {
        if (varint(b, pos, 10, &v) < 0 || v < INT32_MIN || v > INT32_MAX ||
            (canon && *pos - http_at > 1 && b->d[*pos - 1] == 0))
            return 0;
    }
    if (c->own)
        return add(o, b->d + start, *pos - start) < 0 ? -1 : 1;
    if (c->same && l->sig_null == 0) {
        if (add(o, b->d + start, body_end - start) < 0)
            return -1;
    } else if (add(o, b->d + start, at_status - start) < 0 ||
               add_byte(o, (unsigned char)(2 * *status)) < 0 ||
               add(o, b->d + at_status + 1, at_signature - at_status - 1) < 0 ||
               add_byte(o, sig ? 2 : 0) < 0 ||
               add(o, b->d + at_signature + 1, body_end - at_signature - 1) < 0)
        return -1;
    if (present) {
        if (add_byte(o, 2) < 0 || add(o, b->d + protocol_at, protocol_end - protocol_at) < 0)
            return -1;
    } else if (add_byte(o, 0) < 0)
        return -1;
    if (http) {
        if (add_byte(o, 2) < 0 || add(o, b->d + http_at, *pos - http_at) < 0)
            return -1;
    } else if (add_byte(o, 0) < 0)
        return -1;
    return 1;
}

/* -- split -------------------------------------------------------------------------------- */

static PyObject *split(PyObject *self, PyObject *args)
{
    PyObject *data, *conv_arg;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "OnO", &data, &count, &conv_arg))
        return NULL;
    Conv c;
    if (conv_of(conv_arg, &c) < 0)
        return NULL;
    Py_buffer view;
    Block b;
    if (parse_block(data, &view, &b) < 0)
        return NULL;
    Out o = {NULL, 0, 0};
    PyObject *out = PyList_New(0), *result = NULL;
    if (out == NULL)
        goto done;
    Py_ssize_t pos = 0;
    for (Py_ssize_t r = 0; r < count; r++) {
        Span url;
        int status;
        o.n = 0;
        int rc = next_record(&b, &pos, &c, &o, &url, &status);
        if (rc < 0)
            goto done;
        if (rc == 0)
            goto none;
        PyObject *text = str_of(url);
        if (text == NULL) {
            if (PyErr_Occurred())
                goto done;
            goto none;
        }
        PyObject *name = c.own ? c.l.names[status] : c.names[url.p[url.n] >> 1];
        PyObject *raw = PyBytes_FromStringAndSize((const char *)o.p, o.n);
        PyObject *item = raw == NULL ? NULL : PyTuple_Pack(3, text, name, raw);
        Py_DECREF(text);
        Py_XDECREF(raw);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    if (pos == b.size) {
        result = out;
        out = NULL;
        goto done;
    }
none:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(out);
    PyMem_Free(o.p);
    PyBuffer_Release(&view);
    return result;
}

/* -- partition ------------------------------------------------------------------------------ */

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

/* zlib.crc32 */
static uint32_t crc32_of(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (Py_ssize_t i = 0; i < n; i++)
        c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static PyObject *partition(PyObject *self, PyObject *args)
{
    PyObject *data, *conv_arg;
    Py_buffer keep;
    Py_ssize_t count, n;
    if (!PyArg_ParseTuple(args, "OnOy*n", &data, &count, &conv_arg, &keep, &n))
        return NULL;
    Conv c;
    Py_buffer view;
    Block b;
    Out *parts = NULL;
    Py_ssize_t *counts = NULL;
    PyObject *result = NULL;
    Out o = {NULL, 0, 0};
    int have_view = 0;
    if (n < 1 || n > 1 << 20 || keep.len < 64) {
        PyErr_SetString(PyExc_ValueError, "partition: 1 to 2**20 parts, a keep mask of 64");
        goto done;
    }
    if (conv_of(conv_arg, &c) < 0 || parse_block(data, &view, &b) < 0)
        goto done;
    have_view = 1;
    parts = PyMem_Calloc(n, sizeof(Out));
    counts = PyMem_Calloc(n, sizeof(Py_ssize_t));
    if (parts == NULL || counts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *kept = keep.buf;
    Py_ssize_t pos = 0;
    for (Py_ssize_t r = 0; r < count; r++) {
        Span url;
        int status;
        o.n = 0;
        int rc = next_record(&b, &pos, &c, &o, &url, &status);
        if (rc < 0)
            goto done;
        if (rc == 0 || !valid_utf8(url.p, url.n))
            goto none;
        if (!kept[status])
            continue;
        uint32_t p = crc32_of(url.p, url.n) % (uint32_t)n;
        if (o.n > UINT32_MAX || add_u32(&parts[p], (uint32_t)o.n) < 0 ||
            add(&parts[p], o.p, o.n) < 0)
            goto done;
        counts[p]++;
    }
    if (pos != b.size)
        goto none;
    PyObject *blobs = PyList_New(n), *numbers = PyList_New(n);
    if (blobs == NULL || numbers == NULL) {
        Py_XDECREF(blobs);
        Py_XDECREF(numbers);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *blob = PyBytes_FromStringAndSize((const char *)parts[i].p, parts[i].n);
        PyObject *number = PyLong_FromSsize_t(counts[i]);
        if (blob == NULL || number == NULL) {
            Py_XDECREF(blob);
            Py_XDECREF(number);
            Py_DECREF(blobs);
            Py_DECREF(numbers);
            goto done;
        }
        PyList_SET_ITEM(blobs, i, blob);
        PyList_SET_ITEM(numbers, i, number);
    }
    result = PyTuple_Pack(2, blobs, numbers);
    Py_DECREF(blobs);
    Py_DECREF(numbers);
    goto done;
none:
    result = Py_None;
    Py_INCREF(result);
done:
    if (parts != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            PyMem_Free(parts[i].p);
    PyMem_Free(parts);
    PyMem_Free(counts);
    PyMem_Free(o.p);
    if (have_view)
        PyBuffer_Release(&view);
    PyBuffer_Release(&keep);
    return result;
}

/* -- sorted_run ---------------------------------------------------------------------------- */

typedef struct {
    uint64_t prefix;            /* the URL's first 8 bytes, big-endian: most comparisons */
    const unsigned char *url;
    const unsigned char *raw;
    uint32_t url_n, raw_n;
    Py_ssize_t seq;             /* its place in the runs, which orders equal URLs */
} Entry;

static int entry_order(const void *a, const void *b)
{
    const Entry *x = a, *y = b;
    if (x->prefix != y->prefix)
        return x->prefix < y->prefix ? -1 : 1;
    uint32_t n = x->url_n < y->url_n ? x->url_n : y->url_n;
    int c = n > 8 ? memcmp(x->url + 8, y->url + 8, n - 8) : 0;
    if (c)
        return c;
    if (x->url_n != y->url_n)
        return x->url_n < y->url_n ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;      /* stable: the runs' order */
}

static PyObject *sorted_run(PyObject *self, PyObject *args)
{
    PyObject *runs;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &runs))
        return NULL;
    Py_ssize_t nruns = PyList_GET_SIZE(runs), total = 0, bytes = 0;
    Py_buffer *views = PyMem_Calloc(nruns ? nruns : 1, sizeof(Py_buffer));
    Entry *entries = NULL;
    PyObject *result = NULL, *urls = NULL, *status = NULL, *lengths = NULL, *data = NULL;
    Py_ssize_t got = 0;
    if (views == NULL)
        return PyErr_NoMemory();
    for (; got < nruns; got++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(runs, got), &views[got], PyBUF_SIMPLE) < 0)
            goto done;
    /* count, then index the records: (u32 length, raw) each, raw starting with its URL */
    for (int pass = 0; pass < 2; pass++) {
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < nruns; i++) {
            Block b = {views[i].buf, views[i].len};
            Py_ssize_t pos = 0;
            while (pos < b.size) {
                if (b.size - pos < 4)
                    goto bad;
                uint32_t n = b.d[pos] | (b.d[pos + 1] << 8) | (b.d[pos + 2] << 16) |
                             ((uint32_t)b.d[pos + 3] << 24);
                pos += 4;
                if (n > b.size - pos)
                    goto bad;
                if (pass == 1) {
                    Block rec = {b.d + pos, n};
                    Py_ssize_t at = 0;
                    Span url;
                    if (span_at(&rec, &at, 0, 0, &url) < 0 || at >= rec.size ||
                        url.n > UINT32_MAX)
                        goto bad;
                    Entry *e = &entries[k];
                    e->url = url.p;
                    e->url_n = (uint32_t)url.n;
                    e->raw = rec.d;
                    e->raw_n = n;
                    e->seq = k;
                    e->prefix = 0;
                    for (int j = 0; j < 8; j++)
                        e->prefix = e->prefix << 8 | (j < (int)url.n ? url.p[j] : 0);
                    bytes += n;
                }
                k++;
                pos += n;
            }
        }
        if (pass == 0) {
            total = k;
            entries = PyMem_Malloc((total ? total : 1) * sizeof(Entry));
            if (entries == NULL) {
                PyErr_NoMemory();
                goto done;
            }
        }
    }
    qsort(entries, total, sizeof(Entry), entry_order);
    urls = PyList_New(total);
    status = PyBytes_FromStringAndSize(NULL, total);
    lengths = PyBytes_FromStringAndSize(NULL, 4 * total);
    data = PyBytes_FromStringAndSize(NULL, bytes);
    if (urls == NULL || status == NULL || lengths == NULL || data == NULL)
        goto done;
    unsigned char *st = (unsigned char *)PyBytes_AS_STRING(status);
    unsigned char *le = (unsigned char *)PyBytes_AS_STRING(lengths);
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(data);
    int once = 1;
    for (Py_ssize_t k = 0; k < total; k++) {
        Entry *e = &entries[k];
        PyObject *url = str_of((Span){e->url, e->url_n});
        if (url == NULL) {
            if (!PyErr_Occurred())
                goto bad;
            goto done;
        }
        PyList_SET_ITEM(urls, k, url);
        if (k > 0 && e->url_n == entries[k - 1].url_n &&
            memcmp(e->url, entries[k - 1].url, e->url_n) == 0)
            once = 0;
        st[k] = e->url[e->url_n] >> 1;          /* the status byte after the URL */
        le[4 * k] = e->raw_n & 0xFF;
        le[4 * k + 1] = (e->raw_n >> 8) & 0xFF;
        le[4 * k + 2] = (e->raw_n >> 16) & 0xFF;
        le[4 * k + 3] = (e->raw_n >> 24) & 0xFF;
        memcpy(out, e->raw, e->raw_n);
        out += e->raw_n;
    }
    result = Py_BuildValue("(OOOOO)", urls, status, lengths, data, once ? Py_True : Py_False);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "sorted_run: not runs of partition()");
done:
    Py_XDECREF(urls);
    Py_XDECREF(status);
    Py_XDECREF(lengths);
    Py_XDECREF(data);
    PyMem_Free(entries);
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    return result;
}

/* -- decode -------------------------------------------------------------------------------- */

static PyObject *K_URL, *K_STATUS, *K_FETCH_TIME, *K_MODIFIED_TIME, *K_FETCH_INTERVAL,
    *K_RETRIES, *K_SCORE, *K_SIGNATURE, *K_METADATA, *K_PROTOCOL_STATUS, *K_HTTP_CODE;

static double float_at(const unsigned char *p)
{
    uint32_t bits = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                    ((uint32_t)p[3] << 24);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* d[key] = value, the reference to value stolen; -1 on an error (also for value NULL). */
static int put(PyObject *d, PyObject *key, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyDict_SetItem(d, key, value);
    Py_DECREF(value);
    return rc;
}

/* A str at *pos (its length in any form, as _string_at): 1 ok, 0 not clean, -1 an error. */
static int str_at(const Block *b, Py_ssize_t *pos, PyObject **out)
{
    Span s;
    if (span_at(b, pos, 0, 0, &s) < 0)
        return 0;
    *out = str_of(s);
    return *out != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
}

/* The metadata map at *pos as a dict, in `metadata`: 1 ok, 0 not clean, -1 an error. */
static int metadata_dict(const Block *b, Py_ssize_t *pos, PyObject *metadata)
{
    if (*pos < b->size && b->d[*pos] == 0) {
        (*pos)++;
        return 1;
    }
    for (;;) {
        int64_t entries, skip;
        if (varint(b, pos, 10, &entries) < 0)
            return 0;
        if (entries == 0)
            return 1;
        if (entries < 0) {
            if (entries == INT64_MIN)
                return 0;
            entries = -entries;
            if (varint(b, pos, 10, &skip) < 0)
                return 0;
        }
        if (entries > b->size)
            return 0;
        for (int64_t e = 0; e < entries; e++) {
            PyObject *key = NULL, *value = NULL;
            int rc = str_at(b, pos, &key);
            if (rc > 0)
                rc = str_at(b, pos, &value);
            if (rc > 0 && PyDict_SetItem(metadata, key, value) < 0)
                rc = -1;
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (rc <= 0)
                return rc;
        }
    }
}

/* One record at *pos as the dict fastavro reads (the writer's fields; every field of ours
 * with `full`): 1 ok (*out set), 0 not clean, -1 an error. */
static int record_at(const Block *b, Py_ssize_t *pos, const Layout *l, int full,
                     PyObject **out)
{
    PyObject *record = _PyDict_NewPresized(11), *metadata = NULL;
    PyObject *protocol_status = NULL, *http_code = NULL, *value;
    int rc = -1;
    int64_t longs[4];
    if (record == NULL)
        return -1;
    if ((rc = str_at(b, pos, &value)) <= 0)
        goto done;
    rc = -1;
    if (put(record, K_URL, value) < 0)
        goto done;
    rc = 0;
    if (*pos >= b->size || b->d[*pos] >= 0x80 || (b->d[*pos] & 1) ||
        (b->d[*pos] >> 1) >= l->nstatus)
        goto done;
    rc = -1;
    if (PyDict_SetItem(record, K_STATUS, l->names[b->d[*pos] >> 1]) < 0)
        goto done;
    (*pos)++;
    rc = 0;
    for (int i = 0; i < 4; i++)                 /* each at most 9 bytes: 63 bits */
        if (varint(b, pos, 9, &longs[i]) < 0)
            goto done;
    if (*pos + 4 > b->size)
        goto done;
    double score = float_at(b->d + *pos);
    *pos += 4;
    int sig = branch(b, pos, l->sig_null, l->sig_value);
    Span signature = {NULL, 0};
    if (sig < 0 || (sig && span_at(b, pos, 0, 0, &signature) < 0))
        goto done;
    rc = -1;
    metadata = PyDict_New();
    if (metadata == NULL || (rc = metadata_dict(b, pos, metadata)) <= 0)
        goto done;
    if (l->protocol != ABSENT) {
        int present = l->protocol == PLAIN ? 1 :
                      branch(b, pos, l->protocol_null, l->protocol_value);
        rc = 0;
        if (present < 0 || (present && (rc = str_at(b, pos, &protocol_status)) <= 0))
            goto done;
    }
    if (l->http != ABSENT) {
        int present = l->http == PLAIN ? 1 : branch(b, pos, l->http_null, l->http_value);
        int64_t code;
        rc = 0;
        if (present < 0 || (present && varint(b, pos, 10, &code) < 0))
            goto done;
        rc = -1;
        if (present && (http_code = PyLong_FromLongLong(code)) == NULL)
            goto done;
    }
    rc = -1;
    if (put(record, K_FETCH_TIME, PyLong_FromLongLong(longs[0])) < 0 ||
        put(record, K_MODIFIED_TIME, PyLong_FromLongLong(longs[1])) < 0 ||
        put(record, K_FETCH_INTERVAL, PyLong_FromLongLong(longs[2])) < 0 ||
        put(record, K_RETRIES, PyLong_FromLongLong(longs[3])) < 0 ||
        put(record, K_SCORE, PyFloat_FromDouble(score)) < 0)
        goto done;
    if (sig) {
        if (put(record, K_SIGNATURE,
                PyBytes_FromStringAndSize((const char *)signature.p, signature.n)) < 0)
            goto done;
    } else if (PyDict_SetItem(record, K_SIGNATURE, Py_None) < 0)
        goto done;
    if (PyDict_SetItem(record, K_METADATA, metadata) < 0)
        goto done;
    if ((full || l->protocol != ABSENT) &&
        PyDict_SetItem(record, K_PROTOCOL_STATUS,
                       protocol_status != NULL ? protocol_status : Py_None) < 0)
        goto done;
    if (full && PyDict_SetItem(record, K_HTTP_CODE, http_code != NULL ? http_code : Py_None) < 0)
        goto done;
    *out = record;
    record = NULL;
    rc = 1;
done:
    Py_XDECREF(record);
    Py_XDECREF(metadata);
    Py_XDECREF(protocol_status);
    Py_XDECREF(http_code);
    return rc;
}

static PyObject *decode(PyObject *self, PyObject *args)
{
    PyObject *data, *layout_arg;
    Py_ssize_t count;
    int complete;
    if (!PyArg_ParseTuple(args, "OnOp", &data, &count, &layout_arg, &complete))
        return NULL;
    Layout l;
    if (layout_of(layout_arg, &l) < 0)
        return NULL;
    int full = complete || (l.protocol != ABSENT && l.http != ABSENT);
    Py_buffer view;
    Block b;
    if (parse_block(data, &view, &b) < 0)
        return NULL;
    PyObject *out = PyList_New(0), *result = NULL;
    if (out == NULL)
        goto done;
    Py_ssize_t pos = 0;
    for (Py_ssize_t r = 0; r < count; r++) {
        Py_ssize_t start = pos;
        PyObject *record = NULL;
        int rc = record_at(&b, &pos, &l, full, &record);
        if (rc < 0)
            goto done;
        if (rc == 0)
            goto none;
        PyObject *raw = PyBytes_FromStringAndSize((const char *)b.d + start, pos - start);
        PyObject *item = raw == NULL ? NULL : PyTuple_Pack(2, record, raw);
        Py_DECREF(record);
        Py_XDECREF(raw);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    if (pos == b.size) {
        result = out;
        out = NULL;
        goto done;
    }
none:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return result;
}

/* -- one record of our schema --------------------------------------------------------------- */

static Layout own_layout;
static PyObject *own_status_index;     /* {status name: index in our enum}, set by set_own */
static int own_set = 0;

static PyObject *set_own(PyObject *self, PyObject *arg)
{
    static PyObject *kept = NULL;           /* the statuses' owner, kept alive */
    if (layout_of(arg, &own_layout) < 0)
        return NULL;
    PyObject *index = PyDict_New();
    if (index == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < own_layout.nstatus; i++) {
        PyObject *number = PyLong_FromSsize_t(i);
        if (number == NULL || PyDict_SetItem(index, own_layout.names[i], number) < 0) {
            Py_XDECREF(number);
            Py_DECREF(index);
            return NULL;
        }
        Py_DECREF(number);
    }
    Py_XSETREF(own_status_index, index);
    Py_INCREF(arg);
    Py_XDECREF(kept);
    kept = arg;
    own_set = 1;
    Py_RETURN_NONE;
}

static PyObject *decode_own(PyObject *self, PyObject *arg)
{
    if (!own_set) {
        PyErr_SetString(PyExc_RuntimeError, "decode_own: set_own first");
        return NULL;
    }
    Py_buffer view;
    Block b;
    if (parse_block(arg, &view, &b) < 0)
        return NULL;
    PyObject *record = NULL;
    Py_ssize_t pos = 0;
    int rc = record_at(&b, &pos, &own_layout, 1, &record);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    if (rc == 0 || pos != b.size) {
        Py_XDECREF(record);
        Py_RETURN_NONE;
    }
    return record;
}

/* datum_score_offset: where the score of one encoded record starts, when its metadata is
 * empty; else None. */
static PyObject *score_offset(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    Block b;
    if (parse_block(arg, &view, &b) < 0)
        return NULL;
    Py_ssize_t pos = 0, n, score = -1;
    int64_t v;
    if (length_at(&b, &pos, 0, &n) == 0) {
        pos += n;
        int ok = 1;
        for (int i = 0; ok && i < 5; i++)       /* status, fetch_time ... retries */
            ok = varint(&b, &pos, 10, &v) == 0;
        if (ok && pos + 4 < b.size) {
            Py_ssize_t at = pos;
            pos += 4;
            if (b.d[pos] == 0)
                pos++;
            else if (b.d[pos] == 2) {
                pos++;
                ok = length_at(&b, &pos, 0, &n) == 0;
                pos += n;
            } else
                ok = 0;
            if (ok && pos < b.size && b.d[pos] == 0)
                score = at;
        }
    }
    PyBuffer_Release(&view);
    if (score < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(score);
}

/* -- a part's records merged with their replacements ----------------------------------------- */

/* (positions, matched): for each URL of sorted `new`, bisect_left(old, url) in sorted `old`,
 * and whether the old URL there is that URL (a byte each). One merge pass. */
static PyObject *lookup(PyObject *self, PyObject *args)
{
    PyObject *old, *new;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &old, &PyList_Type, &new))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(old), m = PyList_GET_SIZE(new), i = 0;
    PyObject *at = PyList_New(m), *matched = PyBytes_FromStringAndSize(NULL, m);
    if (at == NULL || matched == NULL)
        goto fail;
    char *flags = PyBytes_AS_STRING(matched);
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *key = PyList_GET_ITEM(new, k);
        int c = 1;
        while (i < n) {
            c = PyUnicode_Compare(PyList_GET_ITEM(old, i), key);
            if (c == -1 && PyErr_Occurred())
                goto fail;
            if (c >= 0)
                break;
            i++;
        }
        flags[k] = i < n && c == 0;
        PyObject *pos = PyLong_FromSsize_t(i);
        if (pos == NULL)
            goto fail;
        PyList_SET_ITEM(at, k, pos);
    }
    PyObject *result = PyTuple_Pack(2, at, matched);
    Py_DECREF(at);
    Py_DECREF(matched);
    return result;
fail:
    Py_XDECREF(at);
    Py_XDECREF(matched);
    return NULL;
}

static uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* join(old_urls, statuses, old_status, old_lengths, old_data, new, groups) -> (joined, at,
 * matched): lookup's positions and flags, and per URL of `new` the tuple engine/joins.py
 * calls Joined: (url, the old record's status name, its bytes, None, groups[url]), or (url,
 * None, None, None, groups[url]) where the part has no such URL. */
static PyObject *join(PyObject *self, PyObject *args)
{
    PyObject *old, *statuses, *new, *groups, *pair = NULL, *joined = NULL, *at, *matched;
    Py_buffer ost, olen, odata;
    if (!PyArg_ParseTuple(args, "O!O!y*y*y*O!O!", &PyList_Type, &old, &PyList_Type, &statuses,
                          &ost, &olen, &odata, &PyList_Type, &new, &PyDict_Type, &groups))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(old), m = PyList_GET_SIZE(new);
    if (ost.len != n || olen.len != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "join: lists of different lengths");
        goto done;
    }
    PyObject *look = Py_BuildValue("(OO)", old, new);
    pair = look == NULL ? NULL : lookup(NULL, look);
    Py_XDECREF(look);
    if (pair == NULL)
        goto done;
    at = PyTuple_GET_ITEM(pair, 0);
    matched = PyTuple_GET_ITEM(pair, 1);
    const char *flags = PyBytes_AS_STRING(matched);
    const unsigned char *st = ost.buf, *le = olen.buf, *d = odata.buf;
    joined = PyList_New(m);
    if (joined == NULL)
        goto done;
    Py_ssize_t i = 0, off = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *url = PyList_GET_ITEM(new, k), *values = PyDict_GetItemWithError(groups, url);
        if (values == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, url);
            goto fail;
        }
        Py_ssize_t pos = PyLong_AsSsize_t(PyList_GET_ITEM(at, k));
        for (; i < pos; i++)                        /* the bytes of the records before it */
            off += u32_at(le + 4 * i);
        PyObject *entry;
        if (flags[k]) {
            uint32_t len = u32_at(le + 4 * i);
            if (off + (Py_ssize_t)len > odata.len || st[i] >= PyList_GET_SIZE(statuses)) {
                PyErr_SetString(PyExc_ValueError, "join: lengths and data differ");
                goto fail;
            }
            PyObject *raw = PyBytes_FromStringAndSize((const char *)d + off, len);
            entry = raw == NULL ? NULL : PyTuple_Pack(5, url, PyList_GET_ITEM(statuses, st[i]),
                                                      raw, Py_None, values);
            Py_XDECREF(raw);
        } else
            entry = PyTuple_Pack(5, url, Py_None, Py_None, Py_None, values);
        if (entry == NULL)
            goto fail;
        PyList_SET_ITEM(joined, k, entry);
    }
    PyObject *result = PyTuple_Pack(3, joined, at, matched);
    Py_DECREF(joined);
    joined = NULL;
    Py_CLEAR(pair);
    PyBuffer_Release(&ost);
    PyBuffer_Release(&olen);
    PyBuffer_Release(&odata);
    return result;
fail:
    Py_CLEAR(joined);
done:
    Py_XDECREF(pair);
    PyBuffer_Release(&ost);
    PyBuffer_Release(&olen);
    PyBuffer_Release(&odata);
    return NULL;
}

/* merge(old_urls, old_status, old_lengths, old_data, new_urls, at, matched, raws, status)
 * -> (urls, status, lengths, data, copied): the old records (sorted by URL; status indexes,
 * u32 lengths, their bytes) with those of `new_urls` (sorted; `at`, `matched`: lookup's)
 * put in: raws[k] (bytes, with status index status[k]) replaces the old record of the same
 * URL or goes in at its place; None removes it. `copied`: per old status index, the old
 * records kept as they were. */
static PyObject *merge(PyObject *self, PyObject *args)
{
    PyObject *old_urls, *new_urls, *at, *raws;
    Py_buffer ost, olen, odata, flags, nst;
    if (!PyArg_ParseTuple(args, "O!y*y*y*O!O!y*O!y*", &PyList_Type, &old_urls, &ost, &olen,
                          &odata, &PyList_Type, &new_urls, &PyList_Type, &at, &flags,
                          &PyList_Type, &raws, &nst))
        return NULL;
    PyObject *result = NULL, *urls = NULL, *status = NULL, *lengths = NULL, *data = NULL,
             *copied = NULL;
    Py_ssize_t n = PyList_GET_SIZE(old_urls), m = PyList_GET_SIZE(new_urls);
    Py_ssize_t counts[256] = {0};
    if (ost.len != n || olen.len != 4 * n || PyList_GET_SIZE(at) != m || flags.len != m ||
        PyList_GET_SIZE(raws) != m || nst.len != m) {
        PyErr_SetString(PyExc_ValueError, "merge: lists of different lengths");
        goto done;
    }
    const unsigned char *os = ost.buf, *ol = olen.buf, *od = odata.buf, *fl = flags.buf,
                        *ns = nst.buf;
    /* sizes first */
    Py_ssize_t records = n, bytes = odata.len, last = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *raw = PyList_GET_ITEM(raws, k);
        Py_ssize_t pos = PyLong_AsSsize_t(PyList_GET_ITEM(at, k));
        if (pos == -1 && PyErr_Occurred())
            goto done;
        if (pos < last || pos > n || (fl[k] && pos == n) ||
            (raw != Py_None && !PyBytes_Check(raw))) {
            PyErr_SetString(PyExc_ValueError, "merge: a bad position or replacement");
            goto done;
        }
        last = pos + (fl[k] ? 1 : 0);               /* each old record matched once */
        if (fl[k]) {
            records--;
            bytes -= u32_at(ol + 4 * pos);
        }
        if (raw != Py_None) {
            records++;
            bytes += PyBytes_GET_SIZE(raw);
        }
    }
    if (bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "merge: lengths and data differ");
        goto done;
    }
    urls = PyList_New(records);
    status = PyBytes_FromStringAndSize(NULL, records);
    lengths = PyBytes_FromStringAndSize(NULL, 4 * records);
    data = PyBytes_FromStringAndSize(NULL, bytes);
    if (urls == NULL || status == NULL || lengths == NULL || data == NULL)
        goto done;
    unsigned char *st = (unsigned char *)PyBytes_AS_STRING(status);
    unsigned char *le = (unsigned char *)PyBytes_AS_STRING(lengths);
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(data), *end = out + bytes;
    Py_ssize_t r = 0, i = 0, k = 0, off = 0;
#define EMIT(url, s, p, len)                                                          \
    do {                                                                              \
        if (r >= records || (len) > end - out) goto mismatch;                         \
        Py_INCREF(url);                                                               \
        PyList_SET_ITEM(urls, r, url);                                                \
        st[r] = (s);                                                                  \
        le[4 * r] = (len) & 0xFF; le[4 * r + 1] = ((len) >> 8) & 0xFF;                \
        le[4 * r + 2] = ((len) >> 16) & 0xFF; le[4 * r + 3] = ((len) >> 24) & 0xFF;   \
        memcpy(out, (p), (len));                                                      \
        out += (len);                                                                 \
        r++;                                                                          \
    } while (0)
    while (i < n || k < m) {
        Py_ssize_t pos = k < m ? PyLong_AsSsize_t(PyList_GET_ITEM(at, k)) : n;
        if (k < m && pos == i) {                    /* a new record, at the old one's place */
            PyObject *raw = PyList_GET_ITEM(raws, k);
            if (raw != Py_None)
                EMIT(PyList_GET_ITEM(new_urls, k), ns[k],
                     (const unsigned char *)PyBytes_AS_STRING(raw), (uint32_t)PyBytes_GET_SIZE(raw));
            if (fl[k]) {                            /* it replaces (or drops) the old one */
                if (i >= n) goto mismatch;
                off += u32_at(ol + 4 * i);
                i++;
            }
            k++;
            continue;
        }
        if (i >= n)
            goto mismatch;
        uint32_t len = u32_at(ol + 4 * i);           /* an old record no new one names */
        if (off + (Py_ssize_t)len > odata.len)
            goto mismatch;
        EMIT(PyList_GET_ITEM(old_urls, i), os[i], od + off, len);
        counts[os[i]]++;
        off += len;
        i++;
    }
#undef EMIT
    if (r != records || out != end)
        goto mismatch;
    copied = PyList_New(256);
    if (copied == NULL)
        goto done;
    for (int j = 0; j < 256; j++) {
        PyObject *c = PyLong_FromSsize_t(counts[j]);
        if (c == NULL)
            goto done;
        PyList_SET_ITEM(copied, j, c);
    }
    result = PyTuple_Pack(5, urls, status, lengths, data, copied);
    goto done;
mismatch:
    PyErr_SetString(PyExc_ValueError, "merge: lengths and data differ");
done:
    Py_XDECREF(urls);
    Py_XDECREF(status);
    Py_XDECREF(lengths);
    Py_XDECREF(data);
    Py_XDECREF(copied);
    PyBuffer_Release(&ost);
    PyBuffer_Release(&olen);
    PyBuffer_Release(&odata);
    PyBuffer_Release(&flags);
    PyBuffer_Release(&nst);
    return result;
}

/* -- encode: encode_datum -------------------------------------------------------------------- */

static int put_varint(Out *o, int64_t n)
{
    uint64_t z = ((uint64_t)n << 1) ^ (uint64_t)(n >> 63);
    unsigned char buf[10];
    int k = 0;
    while (z > 0x7F) {
        buf[k++] = (unsigned char)((z & 0x7F) | 0x80);
        z >>= 7;
    }
    buf[k++] = (unsigned char)z;
    return add(o, buf, k);
}

/* 1 written, 0 not plain (the caller returns None), -1 an error. */
static int put_string(Out *o, PyObject *text)
{
    if (!PyUnicode_CheckExact(text))
        return 0;
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(text, &n);
    if (p == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    return put_varint(o, n) < 0 || add(o, p, n) < 0 ? -1 : 1;
}

static int put_long(Out *o, PyObject *n, int64_t lo, int64_t hi)
{
    if (!PyLong_CheckExact(n))
        return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi)
        return 0;
    return put_varint(o, v) < 0 ? -1 : 1;
}

/* A field of the record (borrowed), or NULL with no error when it is missing. */
static PyObject *field(PyObject *record, PyObject *key)
{
    return PyDict_GetItemWithError(record, key);
}

static int encode_into(PyObject *record, Out *o)
{
    PyObject *url, *status, *fetch_time, *modified_time, *interval, *retries, *score,
        *signature, *metadata, *protocol, *http;
#define GET(var, key) if ((var = field(record, key)) == NULL) return PyErr_Occurred() ? -1 : 0
    GET(signature, K_SIGNATURE);
    GET(protocol, K_PROTOCOL_STATUS);
    GET(http, K_HTTP_CODE);
    GET(score, K_SCORE);
    GET(url, K_URL);
    GET(status, K_STATUS);
    GET(fetch_time, K_FETCH_TIME);
    GET(modified_time, K_MODIFIED_TIME);
    GET(interval, K_FETCH_INTERVAL);
    GET(retries, K_RETRIES);
    GET(metadata, K_METADATA);
#undef GET
    if (signature != Py_None && !PyBytes_CheckExact(signature))
        return 0;
    if (!PyFloat_CheckExact(score) && !PyLong_CheckExact(score))
        return 0;
    int rc;
    if ((rc = put_string(o, url)) <= 0)
        return rc;
    if (!PyUnicode_CheckExact(status))
        return 0;
    PyObject *index = PyDict_GetItemWithError(own_status_index, status);
    if (index == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (put_varint(o, PyLong_AsLongLong(index)) < 0)
        return -1;
    if ((rc = put_long(o, fetch_time, INT64_MIN, INT64_MAX)) <= 0 ||
        (rc = put_long(o, modified_time, INT64_MIN, INT64_MAX)) <= 0 ||
        (rc = put_long(o, interval, INT32_MIN, INT32_MAX)) <= 0 ||
        (rc = put_long(o, retries, INT32_MIN, INT32_MAX)) <= 0)
        return rc;
    double x = PyFloat_CheckExact(score) ? PyFloat_AS_DOUBLE(score) : PyLong_AsDouble(score);
    if (x == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    unsigned char packed[4];
    if (PyFloat_Pack4(x, (char *)packed, 1) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (add(o, packed, 4) < 0)
        return -1;
    if (signature == Py_None) {
        if (add_byte(o, 0) < 0)
            return -1;
    } else if (add_byte(o, 2) < 0 || put_varint(o, PyBytes_GET_SIZE(signature)) < 0 ||
               add(o, PyBytes_AS_STRING(signature), PyBytes_GET_SIZE(signature)) < 0)
        return -1;
    if (!PyDict_CheckExact(metadata))
        return 0;
    Py_ssize_t entries = PyDict_GET_SIZE(metadata);
    if (entries) {
        if (put_varint(o, entries) < 0)
            return -1;
        Py_ssize_t at = 0;
        PyObject *key, *value;
        while (PyDict_Next(metadata, &at, &key, &value))
            if ((rc = put_string(o, key)) <= 0 || (rc = put_string(o, value)) <= 0)
                return rc;
    }
    if (add_byte(o, 0) < 0)
        return -1;
    if (protocol == Py_None) {
        if (add_byte(o, 0) < 0)
            return -1;
    } else if (add_byte(o, 2) < 0 || (rc = put_string(o, protocol)) <= 0)
        return rc < 0 ? -1 : rc;
    if (http == Py_None)
        return add_byte(o, 0) < 0 ? -1 : 1;
    if (add_byte(o, 2) < 0)
        return -1;
    return put_long(o, http, INT32_MIN, INT32_MAX);
}

/* encode_own(record) -> its bytes in our schema, or None where encode_datum gives None. */
static PyObject *encode_own(PyObject *self, PyObject *record)
{
    if (own_status_index == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "encode_own: set_own first");
        return NULL;
    }
    if (!PyDict_CheckExact(record))
        Py_RETURN_NONE;
    Out o = {NULL, 0, 0};
    int rc = encode_into(record, &o);
    PyObject *result = rc < 0 ? NULL : rc == 0 ? (Py_INCREF(Py_None), Py_None)
                                               : PyBytes_FromStringAndSize((const char *)o.p, o.n);
    PyMem_Free(o.p);
    return result;
}

/* with_score(raw, offset, score) -> raw with the 4 bytes at offset the score as a float. */
static PyObject *with_score(PyObject *self, PyObject *args)
{
    Py_buffer raw;
    Py_ssize_t offset;
    double score;
    if (!PyArg_ParseTuple(args, "y*nd", &raw, &offset, &score))
        return NULL;
    PyObject *out = NULL;
    if (offset < 0 || offset > raw.len - 4)
        PyErr_SetString(PyExc_ValueError, "with_score: no score there");
    else if ((out = PyBytes_FromStringAndSize(raw.buf, raw.len)) != NULL &&
             PyFloat_Pack4(score, PyBytes_AS_STRING(out) + offset, 1) < 0)
        Py_CLEAR(out);
    PyBuffer_Release(&raw);
    return out;
}

/* -- a keys file's URLs --------------------------------------------------------------------- */

/* slices(text, lengths) -> [text[0:l0], text[l0:l0+l1], ...] for u32 lengths (in characters);
 * ValueError when they run past the text. */
static PyObject *slices(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_buffer lengths;
    if (!PyArg_ParseTuple(args, "Uy*", &text, &lengths))
        return NULL;
    Py_ssize_t n = lengths.len / 4, size = PyUnicode_GET_LENGTH(text), pos = 0;
    const unsigned char *l = lengths.buf;
    PyObject *out = lengths.len % 4 ? NULL : PyList_New(n);
    if (out == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "slices: lengths of 4 bytes");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len = u32_at(l + 4 * i);
        if (len > size - pos) {
            PyErr_SetString(PyExc_ValueError, "slices: lengths beyond the text");
            Py_CLEAR(out);
            goto done;
        }
        PyObject *piece = PyUnicode_Substring(text, pos, pos + len);
        if (piece == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, piece);
        pos += len;
    }
done:
    PyBuffer_Release(&lengths);
    return out;
}

/* -- a URL's scheme and host ---------------------------------------------------------------- */

static PyObject *ascii_lower(const char *p, Py_ssize_t n)
{
    PyObject *out = PyUnicode_New(n, 127);
    if (out == NULL)
        return NULL;
    Py_UCS1 *q = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t i = 0; i < n; i++)
        q[i] = p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i];
    return out;
}

static int scheme_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '.' || c == '-';
}

static int host_char(char c)
{
    return c != ':' && c != '/' && c != '?' && c != '#' && c != '[' && c != ']' && c != '@';
}

/* scheme_host(url) -> (scheme, host) lowercased for an ASCII URL of the usual form, exactly as
 * policy/urlparts.py scheme_host's fast path (its regex) gives them; None for any other URL
 * (the caller's Python then decides). */
static PyObject *scheme_host(PyObject *self, PyObject *url)
{
    if (!PyUnicode_Check(url) || !PyUnicode_IS_ASCII(url))
        Py_RETURN_NONE;
    const char *u = (const char *)PyUnicode_1BYTE_DATA(url);
    Py_ssize_t n = PyUnicode_GET_LENGTH(url), i = 0;
    if (n == 0 || !((u[0] >= 'a' && u[0] <= 'z') || (u[0] >= 'A' && u[0] <= 'Z')))
        Py_RETURN_NONE;
    while (i < n && scheme_char(u[i]))
        i++;
    if (n - i < 3 || u[i] != ':' || u[i + 1] != '/' || u[i + 2] != '/')
        Py_RETURN_NONE;
    Py_ssize_t p = i + 3, q = p, start = p, end;
    while (q < n && u[q] != '@' && u[q] != '/' && u[q] != '?' && u[q] != '#')
        q++;
    end = -1;
    if (q < n && u[q] == '@') {                 /* user information, then the host */
        Py_ssize_t h = q + 1;
        while (h < n && host_char(u[h]))
            h++;
        if (h > q + 1) {
            start = q + 1;
            end = h;
        }
    }
    if (end < 0) {                              /* the host right after '//' */
        Py_ssize_t h = p;
        while (h < n && host_char(u[h]))
            h++;
        if (h == p)
            Py_RETURN_NONE;
        start = p;
        end = h;
    }
    if (end < n && u[end] != ':' && u[end] != '/' && u[end] != '?' && u[end] != '#')
        Py_RETURN_NONE;
    PyObject *scheme = ascii_lower(u, i), *host = scheme == NULL ? NULL :
                                                    ascii_lower(u + start, end - start);
    PyObject *result = host == NULL ? NULL : PyTuple_Pack(2, scheme, host);
    Py_XDECREF(scheme);
    Py_XDECREF(host);
    return result;
}

/* -- module -------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(data, count, layout, complete) -> [(record, raw)] or None"},
    {"split", split, METH_VARARGS,
     "split(data, count, conv) -> [(url, status, raw in our schema)] or None"},
    {"partition", partition, METH_VARARGS,
     "partition(data, count, conv, keep, n) -> ([n runs], [n counts]) or None"},
    {"sorted_run", sorted_run, METH_VARARGS,
     "sorted_run(runs) -> (urls, status indexes, u32 lengths, data, each URL once)"},
    {"lookup", lookup, METH_VARARGS,
     "lookup(old, new) -> (bisect_left positions, matched flags), both sorted lists of str"},
    {"join", join, METH_VARARGS,
     "join(old_urls, statuses, old_status, old_lengths, old_data, new, groups)"},
    {"merge", merge, METH_VARARGS,
     "merge(old_urls, old_status, old_lengths, old_data, new_urls, at, matched, raws, status)"},
    {"slices", slices, METH_VARARGS,
     "slices(text, u32 lengths) -> the text cut into those lengths (a keys file's URLs)"},
    {"encode_own", encode_own, METH_O,
     "encode_own(record) -> its bytes in our schema, or None (as encode_datum)"},
    {"with_score", with_score, METH_VARARGS,
     "with_score(raw, offset, score) -> the record's bytes with that score"},
    {"scheme_host", scheme_host, METH_O,
     "scheme_host(url) -> (scheme, host) lowercased for the usual form of URL, or None"},
    {"set_own", set_own, METH_O, "set_own(layout): our schema's layout, for decode_own"},
    {"decode_own", decode_own, METH_O,
     "decode_own(raw) -> one record of our schema as a dict (every field), or None"},
    {"score_offset", score_offset, METH_O,
     "score_offset(raw) -> where the score starts when the metadata is empty, or None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_datums",
                                    "CrawlDatum blocks read in C (datumcodec.py)", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__datums(void)
{
    PyObject **keys[] = {&K_URL, &K_STATUS, &K_FETCH_TIME, &K_MODIFIED_TIME, &K_FETCH_INTERVAL,
                         &K_RETRIES, &K_SCORE, &K_SIGNATURE, &K_METADATA, &K_PROTOCOL_STATUS,
                         &K_HTTP_CODE};
    const char *names[] = {"url", "status", "fetch_time", "modified_time", "fetch_interval",
                           "retries", "score", "signature", "metadata", "protocol_status",
                           "http_code"};
    for (int i = 0; i < 11; i++) {
        *keys[i] = PyUnicode_InternFromString(names[i]);
        if (*keys[i] == NULL)
            return NULL;
    }
    crc_init();
    return PyModule_Create(&module);
}
