/* The word model's hot path (scan/classifier.py InjectionModel.detect) in C.
 *
 * Contract: Scorer(unigram, bigram, bound, heavy, bias, window, short, small) copies the
 * model's four tables once into tables of its own; detect(encoded, needed, threshold)
 * and score(encoded) return, for the UTF-8 bytes of a folded text, exactly the float
 * (bit for bit) or None that the pure-Python InjectionModel.detect / probability return.
 * Hence the rules this file keeps:
 *   - tokens: the same boundaries as bytes.translate(_PUNCT).split(): a token is a
 *     maximal run of bytes that are neither ASCII punctuation of _PUNCT nor whitespace;
 *   - every sum() is the running interpreter's sum() of floats (Sum below): up to 3.11
 *     each value added left to right in double precision, from 3.12 on with Neumaier's
 *     compensation as CPython does it; no reordering, no FMA (setup.py builds this file
 *     with -ffp-contract=off, and an x87 build refuses to compile below);
 *   - prefix sums, windows, max, clamp and sigmoid as classifier.py writes them, with
 *     libm's sqrt and exp (what math.sqrt / math.exp call).
 * No Python object is made per token; memory is a few bytes a token, freed on return;
 * the GIL is released for long texts (only C data is touched then).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "double arithmetic must be plain IEEE double (SSE2, not x87) to match CPython bit for bit"
#endif

#ifndef WORDMODEL_SOURCE_SHA256
#define WORDMODEL_SOURCE_SHA256 "unknown"
#endif

/* Texts at least this long are scored with the GIL released. */
#define RELEASE_GIL_BYTES 65536
/* Token ids of a text this short live on the stack. */
#define STACK_TOKENS 256

typedef struct {  /* a vocabulary slot: token bytes -> id */
    uint64_t hash;
    uint32_t offset, len;  /* into the key arena; len 0 = empty slot */
    uint32_t id;
} TokSlot;

typedef struct {  /* a pair slot: (id, id) -> bigram weight, heavy bound */
    uint64_t key;  /* (first + 1) << 32 | (second + 1); 0 = empty slot */
    double bigram, heavy;
} PairSlot;

typedef struct {
    PyObject_HEAD
    TokSlot *toks;
    size_t tok_mask;
    char *arena;
    double *uni, *bound;  /* by id; id nvocab (unknown token) holds 0.0, 0.0 */
    uint32_t nvocab;
    PairSlot *pairs;
    size_t pair_mask;
    double bias, small;
    Py_ssize_t window, shortlen;
    int ready;  /* set once every table is filled: a half-built Scorer scores nothing */
} Scorer;

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ULL; h ^= h >> 32;
    return h;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static size_t table_size(size_t n) {  /* a power of two, at most half full */
    size_t size = 16;
    while (size < 2 * n + 2) size <<= 1;
    return size;
}

/* The id of a token, or s->nvocab when it is in no table. */
static uint32_t tok_id(const Scorer *s, const unsigned char *p, size_t n) {
    uint64_t h = hash_bytes(p, n);
    for (size_t i = (size_t)h & s->tok_mask;; i = (i + 1) & s->tok_mask) {
        const TokSlot *slot = &s->toks[i];
        if (slot->len == 0) return s->nvocab;
        if (slot->hash == h && slot->len == n && memcmp(s->arena + slot->offset, p, n) == 0)
            return slot->id;
    }
}

static const PairSlot *pair_find(const Scorer *s, uint32_t a, uint32_t b) {
    if (a == s->nvocab || b == s->nvocab) return NULL;
    uint64_t key = ((uint64_t)(a + 1) << 32) | (uint64_t)(b + 1);
    for (size_t i = (size_t)mix64(key) & s->pair_mask;; i = (i + 1) & s->pair_mask) {
        const PairSlot *slot = &s->pairs[i];
        if (slot->key == key) return slot;
        if (slot->key == 0) return NULL;
    }
}

/* Tokenizer: 1 for a byte that ends a token (translate(_PUNCT) makes it a space, or it is
 * one of bytes.split()'s whitespace). */
static unsigned char SEP[256];

static void init_sep(void) {
    const char *chars = "!\"#$%&()*+,-./:;<=>?@[\\]^`{|}~\t\n\r\x0b\x0c ";
    for (const char *c = chars; *c; c++) SEP[(unsigned char)*c] = 1;
}

/* Token ids of text into ids (room for len/2 + 1); returns how many. */
static Py_ssize_t tokenize(const Scorer *s, const unsigned char *text, Py_ssize_t len,
                           uint32_t *ids) {
    Py_ssize_t n = 0, i = 0;
    while (i < len) {
        while (i < len && SEP[text[i]]) i++;
        Py_ssize_t start = i;
        while (i < len && !SEP[text[i]]) i++;
        if (i > start) ids[n++] = tok_id(s, text + start, (size_t)(i - start));
    }
    return n;
}

/* sum() of floats as the interpreter this is built for computes it (bltinmodule.c). */
typedef struct { double f, c; } Sum;

static inline void sum_add(Sum *s, double x) {
#if PY_VERSION_HEX >= 0x030C0000
    double t = s->f + x;
    if (fabs(s->f) >= fabs(x)) s->c += (s->f - t) + x;
    else s->c += (x - t) + s->f;
    s->f = t;
#else
    s->f += x;
#endif
}

static inline double sum_total(const Sum *s) {
#if PY_VERSION_HEX >= 0x030C0000
    if (s->c != 0.0 && isfinite(s->c)) return s->f + s->c;
#endif
    return s->f;
}

static double sigmoid(double z) {
    /* 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))): min/max keep their first
     * argument unless the second is strictly smaller/larger. */
    double c = z < 60.0 ? z : 60.0;
    c = c > -60.0 ? c : -60.0;
    return 1.0 / (1.0 + exp(-c));
}

static double pair_bigram(const Scorer *s, uint32_t a, uint32_t b) {
    const PairSlot *p = pair_find(s, a, b);
    return p ? p->bigram : 0.0;
}

/* window_spans' windows of a text of n tokens, n > window: half-overlapping. */
static Py_ssize_t window_end(const Scorer *s, Py_ssize_t start, Py_ssize_t n) {
    return start + s->window < n ? start + s->window : n;
}

/* _score(toks): 0 = ok, -1 = out of memory. */
static int exact_score(const Scorer *s, const uint32_t *ids, Py_ssize_t n, double *out) {
    if (n == 0) { *out = 0.0; return 0; }
    double best = 0.0;
    if (n <= s->window) {
        Sum uni = {0.0, 0.0}, bi = {0.0, 0.0};
        for (Py_ssize_t i = 0; i < n; i++) sum_add(&uni, s->uni[ids[i]]);
        for (Py_ssize_t i = 0; i + 1 < n; i++) sum_add(&bi, pair_bigram(s, ids[i], ids[i + 1]));
        best = (sum_total(&uni) + sum_total(&bi)) / sqrt((double)(n + 1));
    } else {
        /* [0.0, *accumulate(per_token)] and [0.0, *accumulate(per_pair)] */
        double *tok_sum = PyMem_RawMalloc(sizeof(double) * (size_t)(2 * n + 1));
        if (tok_sum == NULL) return -1;
        double *pair_sum = tok_sum + n + 1;
        tok_sum[0] = 0.0; pair_sum[0] = 0.0;
        tok_sum[1] = s->uni[ids[0]];
        for (Py_ssize_t i = 1; i < n; i++) tok_sum[i + 1] = tok_sum[i] + s->uni[ids[i]];
        pair_sum[1] = pair_bigram(s, ids[0], ids[1]);
        for (Py_ssize_t i = 1; i + 1 < n; i++)
            pair_sum[i + 1] = pair_sum[i] + pair_bigram(s, ids[i], ids[i + 1]);
        Py_ssize_t step = s->window / 2;
        for (Py_ssize_t start = 0; start < n - step; start += step) {
            Py_ssize_t end = window_end(s, start, n);
            double total = tok_sum[end] - tok_sum[start] + pair_sum[end - 1] - pair_sum[start];
            double v = total / sqrt((double)(end - start + 1));
            if (start == 0 || v > best) best = v;  /* max() keeps the first of equals */
        }
        PyMem_RawFree(tok_sum);
    }
    *out = sigmoid(s->bias + best);
    return 0;
}

static int bound_passes(const Scorer *s, const uint32_t *ids, Py_ssize_t start,
                        Py_ssize_t end, double needed) {
    Sum tok = {0.0, 0.0}, pair = {0.0, 0.0};
    for (Py_ssize_t i = start; i < end; i++) sum_add(&tok, s->uni[ids[i]]);
    for (Py_ssize_t i = start; i + 1 < end; i++) {
        const PairSlot *p = pair_find(s, ids[i], ids[i + 1]);
        sum_add(&pair, p ? p->heavy : s->small);
    }
    return sum_total(&tok) + sum_total(&pair) >= needed * sqrt((double)(end - start + 1));
}

/* detect(): 1 = score in *out, 0 = below the threshold, -1 = out of memory. */
static int run_detect(const Scorer *s, const uint32_t *ids, Py_ssize_t n, double needed,
                      double threshold, double *out) {
    if (n == 0) return 0;
    if (n <= s->shortlen) {
        Sum bound = {0.0, 0.0};
        for (Py_ssize_t i = 0; i < n; i++) sum_add(&bound, s->bound[ids[i]]);
        if (sum_total(&bound) < needed * sqrt((double)(n + 1))) return 0;
    } else {
        /* _may_pass: a window's exact unigrams + each bigram's heavy weight or small */
        int pass = 0;
        if (n <= s->window) pass = bound_passes(s, ids, 0, n, needed);
        else
            for (Py_ssize_t start = 0, step = s->window / 2; !pass && start < n - step;
                 start += step)
                pass = bound_passes(s, ids, start, window_end(s, start, n), needed);
        if (!pass) return 0;
    }
    if (exact_score(s, ids, n, out) < 0) return -1;
    return *out >= threshold;
}

/* Tokenize and run: mode 0 = score, 1 = detect. 1 = *out set, 0 = None, -1 = error set. */
static int run(const Scorer *s, Py_buffer *text, int mode, double needed, double threshold,
               double *out) {
    if (!s->ready) {
        PyErr_SetString(PyExc_ValueError, "Scorer was not initialised");
        return -1;
    }
    uint32_t stack[STACK_TOKENS];
    size_t room = (size_t)text->len / 2 + 1;
    uint32_t *ids = room <= STACK_TOKENS ? stack : PyMem_RawMalloc(sizeof(uint32_t) * room);
    if (ids == NULL) { PyErr_NoMemory(); return -1; }
    int rc;
    int release = text->len >= RELEASE_GIL_BYTES;
    PyThreadState *save = release ? PyEval_SaveThread() : NULL;
    Py_ssize_t n = tokenize(s, (const unsigned char *)text->buf, text->len, ids);
    if (mode == 0) rc = exact_score(s, ids, n, out) < 0 ? -1 : 1;
    else rc = run_detect(s, ids, n, needed, threshold, out);
    if (release) PyEval_RestoreThread(save);
    if (ids != stack) PyMem_RawFree(ids);
    if (rc < 0) PyErr_NoMemory();
    return rc;
}

static PyObject *Scorer_detect(Scorer *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "detect(encoded, needed, threshold)");
        return NULL;
    }
    double needed = PyFloat_AsDouble(args[1]), threshold = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    double out = 0.0;
    int rc = run(self, &view, 1, needed, threshold, &out);
    PyBuffer_Release(&view);
    if (rc < 0) return NULL;
    if (rc == 0) Py_RETURN_NONE;
    return PyFloat_FromDouble(out);
}

static PyObject *Scorer_score(Scorer *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    double out = 0.0;
    int rc = run(self, &view, 0, 0.0, 0.0, &out);
    PyBuffer_Release(&view);
    if (rc < 0) return NULL;
    return PyFloat_FromDouble(out);
}

/* --- construction ------------------------------------------------------------------ */

typedef struct {  /* the vocabulary while it is built */
    PyObject *ids;  /* dict: token bytes -> int id */
} Builder;

static double as_double(PyObject *v, int *bad) {
    if (!PyFloat_CheckExact(v)) { *bad = 1; return 0.0; }
    return PyFloat_AS_DOUBLE(v);
}

/* The id of token bytes `key`, added to the vocabulary if new; -1 on error. */
static Py_ssize_t vocab_id(PyObject *ids, PyObject *key) {
    if (!PyBytes_CheckExact(key)) {
        PyErr_SetString(PyExc_TypeError, "word model keys must be bytes");
        return -1;
    }
    PyObject *id = PyDict_GetItemWithError(ids, key);
    if (id != NULL) return PyLong_AsSsize_t(id);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t next = PyDict_GET_SIZE(ids);
    if (next >= 0x7fffffff) { PyErr_SetString(PyExc_ValueError, "vocabulary too large"); return -1; }
    PyObject *value = PyLong_FromSsize_t(next);
    if (value == NULL || PyDict_SetItem(ids, key, value) < 0) { Py_XDECREF(value); return -1; }
    Py_DECREF(value);
    return next;
}

static int pair_ids(PyObject *ids, PyObject *key, uint32_t *a, uint32_t *b) {
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 2) {
        PyErr_SetString(PyExc_TypeError, "bigram keys must be (bytes, bytes)");
        return -1;
    }
    Py_ssize_t x = vocab_id(ids, PyTuple_GET_ITEM(key, 0));
    if (x < 0) return -1;
    Py_ssize_t y = vocab_id(ids, PyTuple_GET_ITEM(key, 1));
    if (y < 0) return -1;
    *a = (uint32_t)x; *b = (uint32_t)y;
    return 0;
}

static PairSlot *pair_slot(Scorer *s, uint32_t a, uint32_t b) {  /* found or claimed */
    uint64_t key = ((uint64_t)(a + 1) << 32) | (uint64_t)(b + 1);
    for (size_t i = (size_t)mix64(key) & s->pair_mask;; i = (i + 1) & s->pair_mask) {
        PairSlot *slot = &s->pairs[i];
        if (slot->key == key) return slot;
        if (slot->key == 0) {
            slot->key = key; slot->bigram = 0.0; slot->heavy = s->small;
            return slot;
        }
    }
}

static int fill(Scorer *s, PyObject *unigram, PyObject *bigram, PyObject *bound,
                PyObject *heavy) {
    PyObject *ids = PyDict_New(), *key, *value;
    if (ids == NULL) return -1;
    Py_ssize_t pos;
    uint32_t a, b;
    int bad = 0, rc = -1;
    /* 1. the vocabulary: every token of every table */
    PyObject *uni_bound[2] = {unigram, bound}, *pairs[2] = {bigram, heavy};
    for (int t = 0; t < 2; t++)
        for (pos = 0; PyDict_Next(uni_bound[t], &pos, &key, &value);)
            if (vocab_id(ids, key) < 0) goto done;
    for (int t = 0; t < 2; t++)
        for (pos = 0; PyDict_Next(pairs[t], &pos, &key, &value);)
            if (pair_ids(ids, key, &a, &b) < 0) goto done;
    s->nvocab = (uint32_t)PyDict_GET_SIZE(ids);
    size_t arena_len = 0;
    for (pos = 0; PyDict_Next(ids, &pos, &key, &value);) arena_len += (size_t)PyBytes_GET_SIZE(key);
    s->tok_mask = table_size(s->nvocab) - 1;
    s->toks = PyMem_Calloc(s->tok_mask + 1, sizeof(TokSlot));
    s->arena = PyMem_Malloc(arena_len + 1);
    s->uni = PyMem_Calloc((size_t)s->nvocab + 1, sizeof(double));
    s->bound = PyMem_Calloc((size_t)s->nvocab + 1, sizeof(double));
    size_t npairs = (size_t)(PyDict_GET_SIZE(bigram) + PyDict_GET_SIZE(heavy));
    s->pair_mask = table_size(npairs) - 1;
    s->pairs = PyMem_Calloc(s->pair_mask + 1, sizeof(PairSlot));
    if (!s->toks || !s->arena || !s->uni || !s->bound || !s->pairs) { PyErr_NoMemory(); goto done; }
    /* 2. the token table (empty tokens never occur in a text: len 0 marks a free slot) */
    size_t offset = 0;
    for (pos = 0; PyDict_Next(ids, &pos, &key, &value);) {
        size_t n = (size_t)PyBytes_GET_SIZE(key);
        if (n == 0) continue;
        if (n > 0xffffffffu || offset > 0xffffffffu - n) {
            PyErr_SetString(PyExc_ValueError, "vocabulary too large"); goto done;
        }
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(key);
        memcpy(s->arena + offset, p, n);
        uint64_t h = hash_bytes(p, n);
        size_t i = (size_t)h & s->tok_mask;
        while (s->toks[i].len != 0) i = (i + 1) & s->tok_mask;
        s->toks[i] = (TokSlot){h, (uint32_t)offset, (uint32_t)n, (uint32_t)PyLong_AsSsize_t(value)};
        offset += n;
    }
    /* 3. the values */
    for (pos = 0; PyDict_Next(unigram, &pos, &key, &value);)
        s->uni[vocab_id(ids, key)] = as_double(value, &bad);
    for (pos = 0; PyDict_Next(bound, &pos, &key, &value);)
        s->bound[vocab_id(ids, key)] = as_double(value, &bad);
    for (pos = 0; PyDict_Next(bigram, &pos, &key, &value);) {
        if (pair_ids(ids, key, &a, &b) < 0) goto done;
        pair_slot(s, a, b)->bigram = as_double(value, &bad);
    }
    for (pos = 0; PyDict_Next(heavy, &pos, &key, &value);) {
        if (pair_ids(ids, key, &a, &b) < 0) goto done;
        pair_slot(s, a, b)->heavy = as_double(value, &bad);
    }
    if (bad) {
        /* an int weight would be summed as CPython sums ints: not this file's arithmetic */
        PyErr_SetString(PyExc_TypeError, "word model weights must be floats");
        goto done;
    }
    rc = 0;
    s->ready = 1;
done:
    Py_DECREF(ids);
    return rc;
}

static int Scorer_init(Scorer *self, PyObject *args, PyObject *kwds) {
    PyObject *unigram, *bigram, *bound, *heavy;
    static char *kwlist[] = {"unigram", "bigram", "bound", "heavy", "bias", "window",
                             "short", "small", NULL};
    if (self->toks != NULL) {
        PyErr_SetString(PyExc_TypeError, "Scorer is immutable");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!O!dnnd", kwlist, &PyDict_Type, &unigram,
                                     &PyDict_Type, &bigram, &PyDict_Type, &bound, &PyDict_Type,
                                     &heavy, &self->bias, &self->window, &self->shortlen,
                                     &self->small))
        return -1;
    if (self->window < 2) {  /* window_spans' step would be 0 */
        PyErr_SetString(PyExc_ValueError, "window must be at least 2");
        return -1;
    }
    return fill(self, unigram, bigram, bound, heavy);
}

static void Scorer_dealloc(Scorer *self) {
    PyMem_Free(self->toks);
    PyMem_Free(self->arena);
    PyMem_Free(self->uni);
    PyMem_Free(self->bound);
    PyMem_Free(self->pairs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Scorer_vocabulary(Scorer *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(self->nvocab);
}

static PyMethodDef Scorer_methods[] = {
    {"detect", (PyCFunction)(void (*)(void))Scorer_detect, METH_FASTCALL,
     "detect(encoded, needed, threshold) -> float | None: InjectionModel.detect on UTF-8 bytes"},
    {"score", (PyCFunction)Scorer_score, METH_O,
     "score(encoded) -> float: InjectionModel.probability on UTF-8 bytes"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Scorer_getset[] = {
    {"vocabulary", (getter)Scorer_vocabulary, NULL, "tokens in the tables", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScorerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "llm_observe.scan.native._wordmodel.Scorer",
    .tp_basicsize = sizeof(Scorer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The word model's tables, copied once; detect() and score() in C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scorer_init,
    .tp_dealloc = (destructor)Scorer_dealloc,
    .tp_methods = Scorer_methods,
    .tp_getset = Scorer_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wordmodel",
    "The word model's scorer in C (see llm_observe/scan/native/__init__.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__wordmodel(void) {
    init_sep();
    if (PyType_Ready(&ScorerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ScorerType);
    if (PyModule_AddObject(m, "Scorer", (PyObject *)&ScorerType) < 0 ||
        PyModule_AddStringConstant(m, "SOURCE_SHA256", WORDMODEL_SOURCE_SHA256) < 0) {
        Py_DECREF(&ScorerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
