/* ingest/_syscore.c: the per-call state of SyscallAggregator (ingest/parsers/syscalls.py) in C,
 * and a scanner for the common truss and strace lines that feeds it without building Python
 * objects per line.
 *
 * Why: a 1 GB capture is ~10-14 million lines; CPython pays about a microsecond per line just to
 * run one regex and touch a few dicts, so the streaming target (>= 50 MB/s and <= 2x grep -E)
 * needs the per-line work compiled.
 *
 * The rules (what a call counts into, the clock, the reservoir, the top-N heaps, the caps) are
 * those of the pure-Python SyscallAggregator, which stays the reference: tests compare the two
 * on every generated capture mode and fixture. Constants and name tables come from Python
 * (configure()), so they are defined once. The scanners accept only line shapes whose parse is
 * certain; for any other line they stop and the Python parser reads it, so the Python regexes
 * stay the definition of the formats. The final statistics are computed in Python from an
 * export of this state (Core.export), by the same code as for the reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* -- configuration, from syscalls.py ---------------------------------------------------------- */

#define MAX_TARGETS 256
#define TARGET_LEN 32

static struct {
    int ready;
    long max_syscalls, max_pids, max_repeat_keys, reservoir, top_n, max_names, max_children;
    Py_ssize_t max_line;
    PyObject *other;          /* OTHER */
    PyObject *fork_calls, *exec_calls, *fd_calls; /* frozensets */
    PyObject *size_from_end;  /* dict name -> int */
    PyObject *arg_shape;      /* callable: the repeat key of non-ASCII argument text */
    PyObject *stat_cls, *proc_cls;
    double *bounds;
    int nbounds;
    /* ROUTE_KIND: calls whose lines the scanners hand to the Python path, where
     * syscalls.FdTargets reads what they open, connect and wait on (kind 1: always; 2: when
     * the call returned 0, a poll that ran out; 3: when its arguments hold F_DUPFD), and
     * FD_CALLS again, kind 4: a failed call on an fd goes too */
    char target_names[MAX_TARGETS][TARGET_LEN];
    unsigned char target_lens[MAX_TARGETS];
    unsigned char target_kinds[MAX_TARGETS];
    int ntargets;
    uint64_t first_len[256]; /* kinds 1-3: bit n set when a name of length n starts with c */
} cfg;

static int contains(const unsigned char *s, Py_ssize_t n, const char *w);

/* name[0..n)'s routing kinds as a bit set (1 << kind); a length check, then memcmp. Kind 4
 * (the long FD_CALLS list) is looked at only for a failed call. */
static int route_bits(const unsigned char *name, Py_ssize_t n, int failed)
{
    int bits = 0;
    if (!failed && (n >= 64 || !((cfg.first_len[name[0]] >> n) & 1)))
        return 0; /* most call lines: no name of kinds 1-3 starts so and is this long */
    for (int k = 0; k < cfg.ntargets; k++) {
        if (cfg.target_kinds[k] == 4 && !failed)
            break; /* configure() put kind 4 last */
        if (cfg.target_lens[k] == n && memcmp(cfg.target_names[k], name, (size_t)n) == 0)
            bits |= 1 << cfg.target_kinds[k];
    }
    return bits;
}

/* Does the Python path take this call line (see ROUTE_KIND)? `partial`: the arguments are only
 * the resumed half of a call, so a kind-3 call goes whatever they hold. */
static int routed(const unsigned char *s, Py_ssize_t name_s, Py_ssize_t name_n, Py_ssize_t args_s,
                  Py_ssize_t args_n, Py_ssize_t ret_s, Py_ssize_t ret_n, int failed, int partial)
{
    int bits = route_bits(s + name_s, name_n, failed);
    if (!bits)
        return 0;
    if (bits & (1 << 1))
        return 1;
    if ((bits & (1 << 2)) && ret_n == 1 && s[ret_s] == '0')
        return 1;
    if ((bits & (1 << 3)) && (partial || contains(s + args_s, args_n, "F_DUPFD")))
        return 1;
    return failed && (bits & (1 << 4));
}

/* Keep a line `routed` says FdTargets reads: the scanner counts it as usual and the parser
 * hands the text to FdTargets after the run (its tables depend on nothing else). */
static int route_line(PyObject *routed_list, PyObject *text, Py_ssize_t pos, Py_ssize_t le,
                      long long n)
{
    PyObject *line = PyUnicode_Substring(text, pos, le);
    if (line == NULL)
        return -1;
    PyObject *item = Py_BuildValue("(LN)", n, line);
    if (item == NULL)
        return -1;
    int r = PyList_Append(routed_list, item);
    Py_DECREF(item);
    return r;
}

static PyObject *k_syscall, *k_pid, *k_ms, *k_line, *k_ret, *k_err, *k_notes, *k_after,
    *k_before, *k_parent, *s_round, *s_strip, *four;

#define TOPMAX 64

/* -- small helpers ------------------------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* eight bytes at a time; equal keys are still compared in full */
static inline uint64_t hash_bytes(uint64_t h, const char *p, Py_ssize_t n)
{
    h ^= (uint64_t)n * 0x9e3779b97f4a7c15ULL;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    return mix64(h ^ w);
}

/* Python's str.isspace() for ASCII: what str.strip() removes */
static inline int py_space(unsigned char c)
{
    return c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31);
}

/* Eight bytes at a time: does a word hold a byte < n (n <= 128), or a byte equal to n? */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define HAS_LESS(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)
#define HAS_BYTE(x, n) HAS_LESS((x) ^ (ONES * (n)), 1)

static inline int plain_byte(unsigned char c) { return (c >= 32 && c < 127) || c == '\t'; }

/* Is every byte printable ASCII or a tab? (what the scanners read; anything else is left to
 * the Python path) */
static int plain_line(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (HAS_LESS(w, 32) | (w & HIGHS) | HAS_BYTE(w, 127)) {
            for (int k = 0; k < 8; k++)
                if (!plain_byte(p[i + k]))
                    return 0;
        }
    }
    for (; i < n; i++)
        if (!plain_byte(p[i]))
            return 0;
    return 1;
}

static void strip_span(const char **p, Py_ssize_t *n)
{
    const char *s = *p;
    Py_ssize_t len = *n;
    while (len > 0 && py_space((unsigned char)s[0])) {
        s++;
        len--;
    }
    while (len > 0 && py_space((unsigned char)s[len - 1]))
        len--;
    *p = s;
    *n = len;
}

/* prefix + s[:n] (ASCII) as a str: PyUnicode_FromFormat has no %.*s before 3.12 */
static PyObject *joined(const char *prefix, const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t pn = (Py_ssize_t)strlen(prefix);
    PyObject *o = PyUnicode_New(pn + n, 127);
    if (o == NULL)
        return NULL;
    memcpy(PyUnicode_1BYTE_DATA(o), prefix, pn);
    memcpy(PyUnicode_1BYTE_DATA(o) + pn, p, n);
    return o;
}

static PyObject *round4(double x)
{
    PyObject *f = PyFloat_FromDouble(x);
    if (f == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethodObjArgs(f, s_round, four, NULL); /* round(x, 4) */
    Py_DECREF(f);
    return r;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* float() of digits[.digits] (no sign, no exponent), correctly rounded like CPython's: exact
 * integer over an exact power of ten when both fit in 53 bits, else CPython's own parser. */
static int parse_decimal(const char *p, Py_ssize_t n, double *out)
{
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '.') {
            frac = 0;
            continue;
        }
        m = m * 10 + (uint64_t)(c - '0');
        digits++;
        if (frac >= 0)
            frac++;
    }
    if (frac < 0)
        frac = 0;
    if (digits <= 15 && frac <= 22) {
        *out = (double)m / POW10[frac];
        return 0;
    }
    char buf[64];
    if (n >= (Py_ssize_t)sizeof(buf)) { /* the line shapes read here give at most 22 */
        PyErr_SetString(PyExc_ValueError, "number too long");
        return -1;
    }
    memcpy(buf, p, n);
    buf[n] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* -- state ---------------------------------------------------------------------------------------- */

typedef struct {
    PyObject *name;
    const char *nb; /* UTF-8 of name, owned by it */
    Py_ssize_t nn;
    uint64_t hash;
    long long count, timed, errors;
    double total, max, delta;
    int has_delta;
    double *samples;
    int nsamples;
    char special, is_fork, is_fd;
    int back;
} Stat;

typedef struct {
    int has_pid;
    long long pid;
    PyObject *pid_obj;
    long long calls, errors;
    double time;
    int *slot; /* slot[stat] = 1 + position in order/cnt, 0: not called */
    int nslot;
    int *order;
    long long *cnt;
    int nsys, capsys;
    int has_last_ts;
    double last_ts;
    PyObject *last_name; /* NULL: None */
    int has_pending;
    int p_stat;
    double p_ts;
    long long p_line;
    PyObject *p_notes, *p_ret, *p_err; /* ret/err NULL: None */
} Proc;

typedef struct {
    double key;
    long long seq;
    PyObject *entry;
} HeapItem;

typedef struct {
    int stat, kind; /* kind 2: (name, text); 3: (name, fd, size) */
    char *a, *b;
    Py_ssize_t an, bn;
    uint64_t hash;
    long long count;
} Rep;

typedef struct {
    PyObject_HEAD
    int gap_timing;
    Stat *stats;
    int nstats, capstats;
    int *stat_tab;
    size_t stat_cap;
    Proc **procs;
    int nprocs, capprocs;
    int *proc_tab;
    size_t proc_cap;
    int none_proc;
    Proc overflow;
    int procs_capped;
    Rep *reps;
    int nreps, capreps;
    int *rep_tab;
    size_t rep_cap;
    long long *hist;
    HeapItem slowest[TOPMAX], gaps[TOPMAX];
    int nslow, ngaps;
    long long seq;
    double ts_min, ts_max, slow_floor, gap_floor;
    long long fork_n, exec_n;
    double fork_total, fork_max, exec_total, exec_max;
    long long continuations, elisions;
    PyObject *last_notes; /* NULL: None */
    PyObject *errnos, *children, *random, *signals, *exits;
    PyObject *routed; /* [(line number, line text)]: the lines ROUTE_KIND names, for FdTargets */
} Core;

/* A piece of text: bytes of the input (ASCII) or a str from Python (obj set). */
typedef struct {
    const char *p;
    Py_ssize_t n;
    PyObject *obj;
    int ascii;
} Txt;

static PyObject *txt_obj(const Txt *t)
{
    if (t->obj != NULL) {
        Py_INCREF(t->obj);
        return t->obj;
    }
    return PyUnicode_DecodeASCII(t->p, t->n, NULL);
}

static int txt_from(Txt *t, PyObject *o)
{
    if (!PyUnicode_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "expected str");
        return -1;
    }
    t->obj = o;
    t->p = PyUnicode_AsUTF8AndSize(o, &t->n);
    if (t->p == NULL)
        return -1;
    t->ascii = PyUnicode_IS_ASCII(o);
    return 0;
}

/* -- open-addressing tables (slot value: index + 1, 0 empty) ---------------------------------- */

static int table_grow(int **tab, size_t *cap, size_t need, uint64_t (*hash_of)(void *, int),
                      void *owner, int count)
{
    if ((size_t)(count + 1) * 2 <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need * 2)
        nc *= 2;
    int *nt = PyMem_Calloc(nc, sizeof(int));
    if (nt == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < count; i++) {
        size_t j = hash_of(owner, i) & (nc - 1);
        while (nt[j])
            j = (j + 1) & (nc - 1);
        nt[j] = i + 1;
    }
    PyMem_Free(*tab);
    *tab = nt;
    *cap = nc;
    return 0;
}

static uint64_t stat_hash_of(void *o, int i) { return ((Core *)o)->stats[i].hash; }

static uint64_t proc_hash_of(void *o, int i)
{
    return mix64((uint64_t)((Core *)o)->procs[i]->pid);
}

static uint64_t rep_hash_of(void *o, int i) { return ((Core *)o)->reps[i].hash; }

static int stat_find(Core *c, const char *nb, Py_ssize_t nn, uint64_t h)
{
    if (!c->stat_cap)
        return -1;
    size_t mask = c->stat_cap - 1, j = h & mask;
    for (;;) {
        int v = c->stat_tab[j];
        if (!v)
            return -1;
        Stat *s = &c->stats[v - 1];
        if (s->hash == h && s->nn == nn && memcmp(s->nb, nb, nn) == 0)
            return v - 1;
        j = (j + 1) & mask;
    }
}

static int stat_add(Core *c, PyObject *name)
{
    if (c->nstats == c->capstats) {
        int nc = c->capstats ? c->capstats * 2 : 32;
        Stat *ns = PyMem_Realloc(c->stats, nc * sizeof(Stat));
        if (ns == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->stats = ns;
        c->capstats = nc;
    }
    Stat *s = &c->stats[c->nstats];
    memset(s, 0, sizeof(Stat));
    s->nb = PyUnicode_AsUTF8AndSize(name, &s->nn);
    if (s->nb == NULL)
        return -1;
    s->hash = hash_bytes(1469598103934665603ULL, s->nb, s->nn);
    int f = PySet_Contains(cfg.fork_calls, name);
    int e = PySet_Contains(cfg.exec_calls, name);
    int d = PySet_Contains(cfg.fd_calls, name);
    if (f < 0 || e < 0 || d < 0)
        return -1;
    s->is_fork = (char)f;
    s->special = (char)(f || e);
    s->is_fd = (char)d;
    s->back = 1;
    PyObject *b = PyDict_GetItemWithError(cfg.size_from_end, name);
    if (b != NULL) {
        s->back = (int)PyLong_AsLong(b);
        if (s->back < 1 && PyErr_Occurred())
            return -1;
    }
    else if (PyErr_Occurred())
        return -1;
    s->samples = PyMem_Malloc(sizeof(double) * (size_t)cfg.reservoir);
    if (s->samples == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (table_grow(&c->stat_tab, &c->stat_cap, c->nstats + 1, stat_hash_of, c, c->nstats) < 0) {
        PyMem_Free(s->samples);
        return -1;
    }
    Py_INCREF(name);
    s->name = name;
    size_t mask = c->stat_cap - 1, j = s->hash & mask;
    while (c->stat_tab[j])
        j = (j + 1) & mask;
    c->stat_tab[j] = ++c->nstats;
    return c->nstats - 1;
}

/* stats.get(name), else _new_stat(name); name_obj may be NULL (ASCII bytes of the input) */
static int stat_get(Core *c, const char *nb, Py_ssize_t nn, PyObject *name_obj)
{
    uint64_t h = hash_bytes(1469598103934665603ULL, nb, nn);
    int i = stat_find(c, nb, nn, h);
    if (i >= 0)
        return i;
    if (c->nstats >= cfg.max_syscalls - 1) {
        Py_ssize_t on;
        const char *ob = PyUnicode_AsUTF8AndSize(cfg.other, &on);
        i = stat_find(c, ob, on, hash_bytes(1469598103934665603ULL, ob, on));
        return i >= 0 ? i : stat_add(c, cfg.other);
    }
    if (name_obj != NULL)
        return stat_add(c, name_obj);
    PyObject *name = PyUnicode_DecodeUTF8(nb, nn, NULL);
    if (name == NULL)
        return -1;
    i = stat_add(c, name);
    Py_DECREF(name);
    return i;
}

static void proc_clear(Proc *p)
{
    Py_CLEAR(p->pid_obj);
    Py_CLEAR(p->last_name);
    Py_CLEAR(p->p_notes);
    Py_CLEAR(p->p_ret);
    Py_CLEAR(p->p_err);
    PyMem_Free(p->slot);
    PyMem_Free(p->order);
    PyMem_Free(p->cnt);
    p->slot = p->order = NULL;
    p->cnt = NULL;
}

static int proc_init(Proc *p, int has_pid, long long pid)
{
    memset(p, 0, sizeof(Proc));
    p->has_pid = has_pid;
    p->pid = pid;
    p->pid_obj = has_pid ? PyLong_FromLongLong(pid) : (Py_INCREF(Py_None), Py_None);
    return p->pid_obj ? 0 : -1;
}

/* procs.get(pid) or proc(pid): the overflow bucket once MAX_PIDS processes have their own */
static Proc *proc_get(Core *c, int has_pid, long long pid)
{
    if (!has_pid) {
        if (c->none_proc >= 0)
            return c->procs[c->none_proc];
    }
    else if (c->proc_cap) {
        size_t mask = c->proc_cap - 1, j = mix64((uint64_t)pid) & mask;
        for (;;) {
            int v = c->proc_tab[j];
            if (!v)
                break;
            Proc *p = c->procs[v - 1];
            if (p->has_pid && p->pid == pid)
                return p;
            j = (j + 1) & mask;
        }
    }
    if (c->nprocs >= cfg.max_pids) {
        c->procs_capped = 1;
        return &c->overflow;
    }
    if (c->nprocs == c->capprocs) {
        int nc = c->capprocs ? c->capprocs * 2 : 64;
        Proc **np = PyMem_Realloc(c->procs, nc * sizeof(Proc *));
        if (np == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        c->procs = np;
        c->capprocs = nc;
    }
    Proc *p = PyMem_Malloc(sizeof(Proc));
    if (p == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (proc_init(p, has_pid, pid) < 0) {
        PyMem_Free(p);
        return NULL;
    }
    if (has_pid) {
        /* the table holds pid-keyed processes only; rebuild it from all of them */
        int *keep = c->proc_tab;
        size_t cap = c->proc_cap;
        if ((size_t)(c->nprocs + 1) * 2 > cap) {
            size_t nc = cap ? cap * 2 : 128;
            int *nt = PyMem_Calloc(nc, sizeof(int));
            if (nt == NULL) {
                proc_clear(p);
                PyMem_Free(p);
                PyErr_NoMemory();
                return NULL;
            }
            for (int i = 0; i < c->nprocs; i++) {
                if (!c->procs[i]->has_pid)
                    continue;
                size_t j = proc_hash_of(c, i) & (nc - 1);
                while (nt[j])
                    j = (j + 1) & (nc - 1);
                nt[j] = i + 1;
            }
            PyMem_Free(keep);
            c->proc_tab = nt;
            c->proc_cap = nc;
        }
        size_t mask = c->proc_cap - 1, j = mix64((uint64_t)pid) & mask;
        while (c->proc_tab[j])
            j = (j + 1) & mask;
        c->proc_tab[j] = c->nprocs + 1;
    }
    else
        c->none_proc = c->nprocs;
    c->procs[c->nprocs++] = p;
    return p;
}

static int proc_count_sys(Proc *p, int stat)
{
    if (stat >= p->nslot) {
        int ns = p->nslot ? p->nslot : 16;
        while (ns <= stat)
            ns *= 2;
        int *nslot = PyMem_Realloc(p->slot, ns * sizeof(int));
        if (nslot == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(nslot + p->nslot, 0, (ns - p->nslot) * sizeof(int));
        p->slot = nslot;
        p->nslot = ns;
    }
    int k = p->slot[stat];
    if (k) {
        p->cnt[k - 1]++;
        return 0;
    }
    if (p->nsys == p->capsys) {
        int nc = p->capsys ? p->capsys * 2 : 8;
        int *no = PyMem_Realloc(p->order, nc * sizeof(int));
        if (no == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->order = no;
        long long *ncnt = PyMem_Realloc(p->cnt, nc * sizeof(long long));
        if (ncnt == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->cnt = ncnt;
        p->capsys = nc;
    }
    p->order[p->nsys] = stat;
    p->cnt[p->nsys] = 1;
    p->slot[stat] = ++p->nsys;
    return 0;
}

static void pending_drop(Proc *p)
{
    p->has_pending = 0;
    Py_CLEAR(p->p_notes);
    Py_CLEAR(p->p_ret);
    Py_CLEAR(p->p_err);
}

/* -- repeat keys ------------------------------------------------------------------------------ */

static uint64_t rep_hash(int stat, int kind, const char *a, Py_ssize_t an, const char *b,
                         Py_ssize_t bn)
{
    uint64_t h = mix64((uint64_t)stat * 4 + (uint64_t)kind);
    h = hash_bytes(h, a, an);
    h = hash_bytes(h ^ 0x9e3779b97f4a7c15ULL, b, bn);
    return h ^ (uint64_t)an * 31;
}

/* the repeat counter of a key (created while fewer than MAX_REPEAT_KEYS exist); NULL: untracked */
static long long *rep_cell(Core *c, int stat, int kind, const char *a, Py_ssize_t an,
                           const char *b, Py_ssize_t bn, int *err)
{
    uint64_t h = rep_hash(stat, kind, a, an, b, bn);
    if (c->rep_cap) {
        size_t mask = c->rep_cap - 1, j = h & mask;
        for (;;) {
            int v = c->rep_tab[j];
            if (!v)
                break;
            Rep *r = &c->reps[v - 1];
            if (r->hash == h && r->stat == stat && r->kind == kind && r->an == an &&
                r->bn == bn && memcmp(r->a, a, an) == 0 && memcmp(r->b, b, bn) == 0)
                return &r->count;
            j = (j + 1) & mask;
        }
    }
    if (c->nreps >= cfg.max_repeat_keys)
        return NULL;
    if (c->nreps == c->capreps) {
        int nc = c->capreps ? c->capreps * 2 : 256;
        Rep *nr = PyMem_Realloc(c->reps, nc * sizeof(Rep));
        if (nr == NULL)
            goto nomem;
        c->reps = nr;
        c->capreps = nc;
    }
    Rep *r = &c->reps[c->nreps];
    r->a = PyMem_Malloc(an + bn + 1);
    if (r->a == NULL)
        goto nomem;
    memcpy(r->a, a, an);
    r->b = r->a + an;
    memcpy(r->b, b, bn);
    r->an = an;
    r->bn = bn;
    r->stat = stat;
    r->kind = kind;
    r->hash = h;
    r->count = 0;
    if (table_grow(&c->rep_tab, &c->rep_cap, c->nreps + 1, rep_hash_of, c, c->nreps) < 0) {
        PyMem_Free(r->a);
        *err = 1;
        return NULL;
    }
    size_t mask = c->rep_cap - 1, j = h & mask;
    while (c->rep_tab[j])
        j = (j + 1) & mask;
    c->rep_tab[j] = ++c->nreps;
    return &r->count;
nomem:
    PyErr_NoMemory();
    *err = 1;
    return NULL;
}

/* arg_shape() on ASCII text: (name, args[:80]), or (name, fd, size) for calls on a descriptor */
static int count_repeat(Core *c, int si, const Txt *args)
{
    Stat *st = &c->stats[si];
    int err = 0;
    long long *cell;
    if (!args->ascii) {
        PyObject *key = PyObject_CallFunctionObjArgs(cfg.arg_shape, st->name, args->obj, NULL);
        if (key == NULL)
            return -1;
        Py_ssize_t kn = PyTuple_GET_SIZE(key), an = 0, bn = 0;
        const char *a = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(key, 1), &an);
        const char *b = kn > 2 ? PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(key, 2), &bn) : "";
        if (a == NULL || b == NULL) {
            Py_DECREF(key);
            return -1;
        }
        cell = rep_cell(c, si, (int)kn, a, an, b, bn, &err);
        Py_DECREF(key);
    }
    else if (!st->is_fd) {
        cell = rep_cell(c, si, 2, args->p, args->n < 80 ? args->n : 80, "", 0, &err);
    }
    else {
        const char *p = args->p;
        Py_ssize_t n = args->n;
        /* fd: args.partition(",")[0].strip(), cut at "<", [:20] */
        const char *comma = memchr(p, ',', n);
        const char *fd = p;
        Py_ssize_t fdn = comma ? comma - p : n;
        strip_span(&fd, &fdn);
        const char *lt = memchr(fd, '<', fdn);
        if (lt)
            fdn = lt - fd;
        if (fdn > 20)
            fdn = 20;
        /* size: args.rsplit(",", back)[1].strip()[:20] when there are back commas */
        const char *size = "";
        Py_ssize_t sn = 0;
        int found = 0;
        Py_ssize_t end = n, i = n;
        Py_ssize_t cut_hi = n;
        while (i > 0 && found < st->back) {
            i--;
            if (p[i] == ',') {
                found++;
                if (found == st->back - 1)
                    cut_hi = i;
                if (found == st->back)
                    end = i;
            }
        }
        if (found == st->back) {
            size = p + end + 1;
            sn = (st->back == 1 ? n : cut_hi) - (end + 1);
            strip_span(&size, &sn);
            if (sn > 20)
                sn = 20;
        }
        cell = rep_cell(c, si, 3, fd, fdn, size, sn, &err);
    }
    if (err)
        return -1;
    if (cell != NULL)
        (*cell)++;
    return 0;
}

/* -- heaps: heapq's algorithms on (key, seq) ---------------------------------------------------- */

static inline int item_lt(const HeapItem *a, const HeapItem *b)
{
    return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static void sift_down(HeapItem *h, int start, int pos)
{
    HeapItem item = h[pos];
    while (pos > start) {
        int parent = (pos - 1) >> 1;
        if (item_lt(&item, &h[parent])) {
            h[pos] = h[parent];
            pos = parent;
            continue;
        }
        break;
    }
    h[pos] = item;
}

static void sift_up(HeapItem *h, int n, int pos)
{
    int start = pos;
    HeapItem item = h[pos];
    int child = 2 * pos + 1;
    while (child < n) {
        int right = child + 1;
        if (right < n && !item_lt(&h[child], &h[right]))
            child = right;
        h[pos] = h[child];
        pos = child;
        child = 2 * pos + 1;
    }
    h[pos] = item;
    sift_down(h, start, pos);
}

/* heappush while under TOP_N, else heapreplace and raise the floor; steals entry */
static void heap_push(HeapItem *h, int *n, double key, long long seq, PyObject *entry,
                      double *floor)
{
    HeapItem it = {key, seq, entry};
    if (*n < cfg.top_n) {
        h[*n] = it;
        (*n)++;
        sift_down(h, 0, *n - 1);
        return;
    }
    PyObject *old = h[0].entry;
    h[0] = it;
    sift_up(h, *n, 0);
    Py_DECREF(old);
    *floor = h[0].key;
}

static int push_gap(Core *c, Proc *pc, double gap, long long line, PyObject *what)
{
    c->seq++;
    PyObject *e = PyDict_New();
    PyObject *ms = round4(gap);
    PyObject *ln = PyLong_FromLongLong(line);
    if (e == NULL || ms == NULL || ln == NULL ||
        PyDict_SetItem(e, k_pid, pc->pid_obj) < 0 || PyDict_SetItem(e, k_ms, ms) < 0 ||
        PyDict_SetItem(e, k_line, ln) < 0 ||
        PyDict_SetItem(e, k_after, pc->last_name ? pc->last_name : Py_None) < 0 ||
        PyDict_SetItem(e, k_before, what) < 0) {
        Py_XDECREF(e);
        Py_XDECREF(ms);
        Py_XDECREF(ln);
        return -1;
    }
    Py_DECREF(ms);
    Py_DECREF(ln);
    heap_push(c->gaps, &c->ngaps, gap, c->seq, e, &c->gap_floor);
    return 0;
}

/* returns the entry's notes list (borrowed), NULL on error */
static PyObject *push_slow(Core *c, Stat *st, Proc *pc, double dur, long long line,
                           PyObject *ret, PyObject *err, PyObject *notes)
{
    c->seq++;
    PyObject *e = PyDict_New();
    PyObject *ms = round4(dur);
    PyObject *ln = PyLong_FromLongLong(line);
    PyObject *nl = notes ? (Py_INCREF(notes), notes) : PyList_New(0);
    if (e == NULL || ms == NULL || ln == NULL || nl == NULL ||
        PyDict_SetItem(e, k_syscall, st->name) < 0 || PyDict_SetItem(e, k_pid, pc->pid_obj) < 0 ||
        PyDict_SetItem(e, k_ms, ms) < 0 || PyDict_SetItem(e, k_line, ln) < 0 ||
        PyDict_SetItem(e, k_ret, ret ? ret : Py_None) < 0 ||
        PyDict_SetItem(e, k_err, err ? err : Py_None) < 0 || PyDict_SetItem(e, k_notes, nl) < 0) {
        Py_XDECREF(e);
        Py_XDECREF(ms);
        Py_XDECREF(ln);
        Py_XDECREF(nl);
        return NULL;
    }
    Py_DECREF(ms);
    Py_DECREF(ln);
    Py_DECREF(nl); /* the entry holds it */
    heap_push(c->slowest, &c->nslow, dur, c->seq, e, &c->slow_floor);
    return nl;
}

/* -- accounting ------------------------------------------------------------------------------- */

static int draw(Core *c, long long timed, long long *j)
{
    PyObject *r = PyObject_CallNoArgs(c->random);
    if (r == NULL)
        return -1;
    double v = PyFloat_AsDouble(r);
    Py_DECREF(r);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    *j = (long long)(v * (double)timed);
    return 0;
}

/* the part of call()/_timed() shared by both: sample, histogram, process time, fork/exec */
static int account(Core *c, Stat *st, Proc *pc, double dur)
{
    st->timed++;
    st->total += dur;
    if (dur > st->max)
        st->max = dur;
    if (st->nsamples < cfg.reservoir)
        st->samples[st->nsamples++] = dur;
    else {
        long long j;
        if (draw(c, st->timed, &j) < 0)
            return -1;
        if (j < cfg.reservoir)
            st->samples[j] = dur;
    }
    int lo = 0, hi = cfg.nbounds;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cfg.bounds[mid] < dur)
            lo = mid + 1;
        else
            hi = mid;
    }
    c->hist[lo < cfg.nbounds ? lo : cfg.nbounds - 1]++;
    pc->time += dur;
    if (st->special) {
        if (st->is_fork) {
            c->fork_n++;
            c->fork_total += dur;
            if (dur > c->fork_max)
                c->fork_max = dur;
        }
        else {
            c->exec_n++;
            c->exec_total += dur;
            if (dur > c->exec_max)
                c->exec_max = dur;
        }
    }
    return 0;
}

static int close_pending(Core *c, Proc *pc, double ts)
{
    int si = pc->p_stat;
    double t0 = pc->p_ts;
    long long line = pc->p_line;
    PyObject *notes = pc->p_notes, *ret = pc->p_ret, *err = pc->p_err;
    pc->has_pending = 0;
    pc->p_notes = pc->p_ret = pc->p_err = NULL;
    int rc = 0;
    if (ts >= t0) {
        double dur = (ts - t0) * 1000.0;
        Stat *st = &c->stats[si];
        rc = account(c, st, pc, dur);
        if (rc == 0 && dur > c->slow_floor &&
            push_slow(c, st, pc, dur, line, ret, err, notes) == NULL)
            rc = -1;
    }
    Py_XDECREF(notes);
    Py_XDECREF(ret);
    Py_XDECREF(err);
    return rc;
}

static inline void span(Core *c, double ts)
{
    if (ts < c->ts_min)
        c->ts_min = ts;
    if (ts > c->ts_max)
        c->ts_max = ts;
}

static int add_child(Core *c, PyObject *pid, PyObject *parent, long long line)
{
    Py_ssize_t n = PyList_GET_SIZE(c->children);
    if (n >= cfg.max_children)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(c->children, i);
        PyObject *p = PyDict_GetItemWithError(d, k_pid);
        if (p == NULL) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        int eq = PyObject_RichCompareBool(p, pid, Py_EQ);
        if (eq != 0)
            return eq < 0 ? -1 : 0;
    }
    PyObject *ln = PyLong_FromLongLong(line);
    PyObject *d = ln ? PyDict_New() : NULL;
    int rc = -1;
    if (d != NULL && PyDict_SetItem(d, k_pid, pid) == 0 && PyDict_SetItem(d, k_parent, parent) == 0 &&
        PyDict_SetItem(d, k_line, ln) == 0)
        rc = PyList_Append(c->children, d);
    Py_XDECREF(d);
    Py_XDECREF(ln);
    return rc;
}

/* pid_number(): 1-18 ASCII digits */
static int ascii_pid(const Txt *t, long long *v)
{
    if (t == NULL || t->n < 1 || t->n > 18 || !t->ascii)
        return 0;
    long long x = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        char ch = t->p[i];
        if (ch < '0' || ch > '9')
            return 0;
        x = x * 10 + (ch - '0');
    }
    *v = x;
    return 1;
}

/* syscalls.bump(): count a name into a table that garbage cannot grow forever */
static int bump(PyObject *table, PyObject *k)
{
    PyObject *v = PyDict_GetItemWithError(table, k);
    int rc = 0;
    if (v != NULL || (!PyErr_Occurred() && PyDict_GET_SIZE(table) < cfg.max_names)) {
        long long n = v ? PyLong_AsLongLong(v) : 0;
        PyObject *nv = PyLong_FromLongLong(n + 1);
        rc = nv ? PyDict_SetItem(table, k, nv) : -1;
        Py_XDECREF(nv);
    }
    else if (PyErr_Occurred())
        rc = -1;
    return rc;
}

static int bump_errno(Core *c, const Txt *err)
{
    PyObject *k = txt_obj(err);
    if (k == NULL)
        return -1;
    int rc = bump(c->errnos, k);
    Py_DECREF(k);
    return rc;
}

typedef struct {
    int has_pid;
    long long pid;
    int has_dur, has_delta, has_ts, has_gap;
    double dur, delta, ts, gap;
    const Txt *err, *ret; /* NULL: None */
    const Txt *args;
    long long line;
} CallArgs;

/* SyscallAggregator._clock: the pid's clock moves to ts, which closes a "d" call pending on it;
 * the time since its previous line (or the -D gap printed) may be one of the biggest gaps */
static int clock_tick(Core *c, Proc *pc, int has_ts, double ts, int has_gap, double gap,
                      long long line, PyObject *what)
{
    if (!(has_ts || has_gap) || pc == &c->overflow)
        return 0;
    if (has_ts) {
        span(c, ts);
        int had = pc->has_last_ts;
        double last = pc->last_ts;
        pc->has_last_ts = 1;
        pc->last_ts = ts;
        if (had) {
            if (!has_gap && ts >= last) {
                gap = (ts - last) * 1000.0;
                has_gap = 1;
            }
            if (pc->has_pending && close_pending(c, pc, ts) < 0)
                return -1;
        }
    }
    if (has_gap && gap > c->gap_floor && pc->last_name != NULL &&
        push_gap(c, pc, gap, line, what) < 0)
        return -1;
    return 0;
}

/* SyscallAggregator.call */
static int core_call(Core *c, int si, const CallArgs *a)
{
    Stat *st = &c->stats[si];
    st->count++;
    Proc *pc = proc_get(c, a->has_pid, a->pid);
    if (pc == NULL)
        return -1;
    pc->calls++;
    if (proc_count_sys(pc, si) < 0)
        return -1;
    if (a->err != NULL) {
        st->errors++;
        pc->errors++;
        if (bump_errno(c, a->err) < 0)
            return -1;
    }
    if (a->has_delta) {
        st->delta += a->delta;
        st->has_delta = 1;
    }
    if (count_repeat(c, si, a->args) < 0)
        return -1;
    long long child;
    if (st->special && st->is_fork && ascii_pid(a->ret, &child)) {
        PyObject *cp = PyLong_FromLongLong(child);
        PyObject *pp = a->has_pid ? PyLong_FromLongLong(a->pid) : Py_NewRef(Py_None);
        int rc = cp && pp ? add_child(c, cp, pp, a->line) : -1;
        Py_XDECREF(cp);
        Py_XDECREF(pp);
        if (rc < 0)
            return -1;
    }
    if (clock_tick(c, pc, a->has_ts, a->ts, a->has_gap, a->gap, a->line, st->name) < 0)
        return -1;
    Py_INCREF(st->name);
    Py_XSETREF(pc->last_name, st->name);
    if (!a->has_dur) {
        if (c->gap_timing && a->has_ts && pc != &c->overflow) {
            PyObject *notes = PyList_New(0);
            PyObject *ret = a->ret ? txt_obj(a->ret) : NULL;
            PyObject *err = a->err ? txt_obj(a->err) : NULL;
            if (notes == NULL || (a->ret && ret == NULL) || (a->err && err == NULL)) {
                Py_XDECREF(notes);
                Py_XDECREF(ret);
                Py_XDECREF(err);
                return -1;
            }
            pending_drop(pc);
            pc->has_pending = 1;
            pc->p_stat = si;
            pc->p_ts = a->ts;
            pc->p_line = a->line;
            pc->p_notes = notes;
            pc->p_ret = ret;
            pc->p_err = err;
            Py_INCREF(notes);
            Py_XSETREF(c->last_notes, notes);
        }
        else
            Py_CLEAR(c->last_notes);
        return 0;
    }
    double dur = a->dur;
    if (account(c, st, pc, dur) < 0)
        return -1;
    if (dur > c->slow_floor) {
        PyObject *ret = a->ret ? txt_obj(a->ret) : NULL;
        PyObject *err = a->err ? txt_obj(a->err) : NULL;
        PyObject *notes = NULL;
        if ((!a->ret || ret) && (!a->err || err))
            notes = push_slow(c, st, pc, dur, a->line, ret, err, NULL);
        Py_XDECREF(ret);
        Py_XDECREF(err);
        if (notes == NULL)
            return -1;
        Py_INCREF(notes);
        Py_XSETREF(c->last_notes, notes);
    }
    else
        Py_CLEAR(c->last_notes);
    return 0;
}

/* SyscallAggregator.event / _clock */
static int core_event(Core *c, int has_pid, long long pid, int has_ts, double ts, int has_gap,
                      double gap, long long line, PyObject *what)
{
    Proc *pc = proc_get(c, has_pid, pid);
    if (pc == NULL || clock_tick(c, pc, has_ts, ts, has_gap, gap, line, what) < 0)
        return -1;
    Py_INCREF(what);
    Py_XSETREF(pc->last_name, what);
    return 0;
}

static int core_continuation(Core *c, const char *p, Py_ssize_t n)
{
    c->continuations++;
    PyObject *notes = c->last_notes;
    if (notes == NULL || PyList_GET_SIZE(notes) >= 3)
        return 0;
    strip_span(&p, &n);
    PyObject *s = PyUnicode_DecodeASCII(p, n < 160 ? n : 160, NULL);
    if (s == NULL)
        return -1;
    int rc = PyList_Append(notes, s);
    Py_DECREF(s);
    return rc;
}

/* -- Python-facing methods ------------------------------------------------------------------- */

static int opt_pid(PyObject *o, int *has, long long *v)
{
    if (o == Py_None) {
        *has = 0;
        *v = 0;
        return 0;
    }
    *has = 1;
    *v = PyLong_AsLongLong(o);
    return (*v == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int opt_float(PyObject *o, int *has, double *v)
{
    if (o == Py_None) {
        *has = 0;
        *v = 0.0;
        return 0;
    }
    *has = 1;
    *v = PyFloat_AsDouble(o);
    return (*v == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *Core_call(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 9 || nargs > 10) {
        PyErr_SetString(PyExc_TypeError, "call(pid, name, dur, delta, ts, gap, err, args, line, ret=None)");
        return NULL;
    }
    CallArgs a;
    Txt name, args_t, err_t, ret_t;
    if (opt_pid(args[0], &a.has_pid, &a.pid) < 0 || txt_from(&name, args[1]) < 0 ||
        opt_float(args[2], &a.has_dur, &a.dur) < 0 || opt_float(args[3], &a.has_delta, &a.delta) < 0 ||
        opt_float(args[4], &a.has_ts, &a.ts) < 0 || opt_float(args[5], &a.has_gap, &a.gap) < 0 ||
        txt_from(&args_t, args[7]) < 0)
        return NULL;
    a.err = a.ret = NULL;
    if (args[6] != Py_None) {
        if (txt_from(&err_t, args[6]) < 0)
            return NULL;
        a.err = &err_t;
    }
    if (nargs == 10 && args[9] != Py_None) {
        if (txt_from(&ret_t, args[9]) < 0)
            return NULL;
        a.ret = &ret_t;
    }
    a.args = &args_t;
    a.line = PyLong_AsLongLong(args[8]);
    if (a.line == -1 && PyErr_Occurred())
        return NULL;
    int si = stat_get(c, name.p, name.n, args[1]);
    if (si < 0 || core_call(c, si, &a) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_event(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyUnicode_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "event(pid, ts, gap, line, what: str)");
        return NULL;
    }
    int hp, ht, hg;
    long long pid, line;
    double ts, gap;
    if (opt_pid(args[0], &hp, &pid) < 0 || opt_float(args[1], &ht, &ts) < 0 ||
        opt_float(args[2], &hg, &gap) < 0)
        return NULL;
    line = PyLong_AsLongLong(args[3]);
    if (line == -1 && PyErr_Occurred())
        return NULL;
    if (core_event(c, hp, pid, ht, ts, hg, gap, line, args[4]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* child(pid, parent: int | None, line, ts): a fork child's first line */
static PyObject *Core_child(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "child(pid, parent, line, ts)");
        return NULL;
    }
    int hp, ht;
    long long pid;
    double ts;
    if (opt_pid(args[0], &hp, &pid) < 0 || opt_float(args[3], &ht, &ts) < 0)
        return NULL;
    long long line = PyLong_AsLongLong(args[2]);
    if (line == -1 && PyErr_Occurred())
        return NULL;
    Proc *pc = proc_get(c, hp, pid);
    if (pc == NULL)
        return NULL;
    if (ht && pc != &c->overflow) {
        pc->has_last_ts = 1;
        pc->last_ts = ts;
        span(c, ts);
    }
    if (hp && add_child(c, args[0], args[1], line) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_continuation(Core *c, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "continuation(text: str)");
        return NULL;
    }
    c->continuations++;
    PyObject *notes = c->last_notes;
    if (notes == NULL || PyList_GET_SIZE(notes) >= 3)
        Py_RETURN_NONE;
    PyObject *s = PyObject_CallMethodNoArgs(text, s_strip);
    if (s == NULL)
        return NULL;
    PyObject *cut = PyUnicode_Substring(s, 0, 160);
    Py_DECREF(s);
    if (cut == NULL || PyList_Append(notes, cut) < 0) {
        Py_XDECREF(cut);
        return NULL;
    }
    Py_DECREF(cut);
    Py_RETURN_NONE;
}

static PyObject *Core_elide(Core *c, PyObject *unused)
{
    c->elisions++;
    for (int i = 0; i < c->nprocs; i++) {
        Proc *p = c->procs[i];
        pending_drop(p);
        p->has_last_ts = 0;
        Py_CLEAR(p->last_name);
    }
    Py_CLEAR(c->last_notes);
    Py_RETURN_NONE;
}

static PyObject *Core_proc(Core *c, PyObject *pid)
{
    int hp;
    long long v;
    if (opt_pid(pid, &hp, &v) < 0 || proc_get(c, hp, v) == NULL)
        return NULL;
    Py_RETURN_NONE;
}

/* -- export: the state as the pure-Python aggregator holds it --------------------------------- */

#define SET(obj, name, value)                                          \
    do {                                                               \
        PyObject *_v = (value);                                        \
        if (_v == NULL || PyObject_SetAttrString(obj, name, _v) < 0) { \
            Py_XDECREF(_v);                                            \
            goto fail;                                                 \
        }                                                              \
        Py_DECREF(_v);                                                 \
    } while (0)

static PyObject *heap_list(HeapItem *h, int n)
{
    PyObject *l = PyList_New(n);
    if (l == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(dLO)", h[i].key, h[i].seq, h[i].entry);
        if (t == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

static PyObject *export_proc(Core *c, Proc *p, PyObject *stat_objs)
{
    PyObject *o = PyObject_CallOneArg(cfg.proc_cls, p->pid_obj);
    if (o == NULL)
        return NULL;
    PyObject *sys = PyDict_New();
    if (sys == NULL)
        goto fail;
    for (int i = 0; i < p->nsys; i++) {
        PyObject *v = PyLong_FromLongLong(p->cnt[i]);
        if (v == NULL || PyDict_SetItem(sys, c->stats[p->order[i]].name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(sys);
            goto fail;
        }
        Py_DECREF(v);
    }
    SET(o, "sys", sys);
    SET(o, "calls", PyLong_FromLongLong(p->calls));
    SET(o, "errors", PyLong_FromLongLong(p->errors));
    SET(o, "time", PyFloat_FromDouble(p->time));
    SET(o, "last_ts", p->has_last_ts ? PyFloat_FromDouble(p->last_ts) : Py_NewRef(Py_None));
    SET(o, "last_name", Py_NewRef(p->last_name ? p->last_name : Py_None));
    if (p->has_pending)
        SET(o, "pending",
            Py_BuildValue("[OdLOOO]", PyList_GET_ITEM(stat_objs, p->p_stat), p->p_ts, p->p_line,
                          p->p_notes, p->p_ret ? p->p_ret : Py_None,
                          p->p_err ? p->p_err : Py_None));
    else
        SET(o, "pending", Py_NewRef(Py_None));
    return o;
fail:
    Py_DECREF(o);
    return NULL;
}

/* export(agg): write this state into a pure-Python SyscallAggregator's attributes. The objects
 * it holds (entries, notes lists) are shared: the caller deep-copies the result. */
static PyObject *Core_export(Core *c, PyObject *agg)
{
    PyObject *stat_objs = PyList_New(0), *stats = PyDict_New(), *procs = PyDict_New();
    PyObject *reps = PyDict_New(), *hist = NULL;
    if (!stat_objs || !stats || !procs || !reps)
        goto fail;
    for (int i = 0; i < c->nstats; i++) {
        Stat *s = &c->stats[i];
        PyObject *o = PyObject_CallOneArg(cfg.stat_cls, s->name);
        if (o == NULL)
            goto fail;
        if (PyList_Append(stat_objs, o) < 0 || PyDict_SetItem(stats, s->name, o) < 0) {
            Py_DECREF(o);
            goto fail;
        }
        Py_DECREF(o);
        PyObject *samples = PyList_New(s->nsamples);
        if (samples == NULL)
            goto fail;
        for (int k = 0; k < s->nsamples; k++) {
            PyObject *f = PyFloat_FromDouble(s->samples[k]);
            if (f == NULL) {
                Py_DECREF(samples);
                goto fail;
            }
            PyList_SET_ITEM(samples, k, f);
        }
        SET(o, "samples", samples);
        SET(o, "count", PyLong_FromLongLong(s->count));
        SET(o, "timed", PyLong_FromLongLong(s->timed));
        SET(o, "errors", PyLong_FromLongLong(s->errors));
        SET(o, "total", PyFloat_FromDouble(s->total));
        SET(o, "max", PyFloat_FromDouble(s->max));
        SET(o, "delta", PyFloat_FromDouble(s->delta));
        SET(o, "has_delta", PyBool_FromLong(s->has_delta));
    }
    for (int i = 0; i < c->nprocs; i++) {
        PyObject *o = export_proc(c, c->procs[i], stat_objs);
        if (o == NULL || PyDict_SetItem(procs, c->procs[i]->pid_obj, o) < 0) {
            Py_XDECREF(o);
            goto fail;
        }
        Py_DECREF(o);
    }
    for (int i = 0; i < c->nreps; i++) {
        Rep *r = &c->reps[i];
        PyObject *key = r->kind == 2 ? Py_BuildValue("(Os#)", c->stats[r->stat].name, r->a, r->an)
                                     : Py_BuildValue("(Os#s#)", c->stats[r->stat].name, r->a,
                                                     r->an, r->b, r->bn);
        PyObject *cell = Py_BuildValue("[L]", r->count);
        if (key == NULL || cell == NULL || PyDict_SetItem(reps, key, cell) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(cell);
            goto fail;
        }
        Py_DECREF(key);
        Py_DECREF(cell);
    }
    hist = PyList_New(cfg.nbounds);
    if (hist == NULL)
        goto fail;
    for (int i = 0; i < cfg.nbounds; i++) {
        PyObject *v = PyLong_FromLongLong(c->hist[i]);
        if (v == NULL)
            goto fail;
        PyList_SET_ITEM(hist, i, v);
    }
    SET(agg, "stats", Py_NewRef(stats));
    SET(agg, "procs", Py_NewRef(procs));
    SET(agg, "_overflow", export_proc(c, &c->overflow, stat_objs));
    SET(agg, "procs_capped", PyBool_FromLong(c->procs_capped));
    SET(agg, "repeats", Py_NewRef(reps));
    SET(agg, "hist", Py_NewRef(hist));
    SET(agg, "slowest", heap_list(c->slowest, c->nslow));
    SET(agg, "gaps", heap_list(c->gaps, c->ngaps));
    SET(agg, "seq", PyLong_FromLongLong(c->seq));
    SET(agg, "ts_min", PyFloat_FromDouble(c->ts_min));
    SET(agg, "ts_max", PyFloat_FromDouble(c->ts_max));
    SET(agg, "_slow_floor", PyFloat_FromDouble(c->slow_floor));
    SET(agg, "_gap_floor", PyFloat_FromDouble(c->gap_floor));
    SET(agg, "fork", Py_BuildValue("[Ldd]", c->fork_n, c->fork_total, c->fork_max));
    SET(agg, "exec", Py_BuildValue("[Ldd]", c->exec_n, c->exec_total, c->exec_max));
    SET(agg, "continuations", PyLong_FromLongLong(c->continuations));
    SET(agg, "elisions", PyLong_FromLongLong(c->elisions));
    SET(agg, "_last_notes", Py_NewRef(c->last_notes ? c->last_notes : Py_None));
    SET(agg, "gap_timing", PyBool_FromLong(c->gap_timing));
    SET(agg, "errnos", Py_NewRef(c->errnos));
    SET(agg, "children", Py_NewRef(c->children));
    Py_DECREF(stat_objs);
    Py_DECREF(stats);
    Py_DECREF(procs);
    Py_DECREF(reps);
    Py_DECREF(hist);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(stat_objs);
    Py_XDECREF(stats);
    Py_XDECREF(procs);
    Py_XDECREF(reps);
    Py_XDECREF(hist);
    return NULL;
}

/* -- the truss scanner ------------------------------------------------------------------------ */

/* The line at pos: its end e (the newline or endpos) and le (before trailing CRs). Returns 0 if
 * a scanner may read it, 1 if it is for the Python path: longer than MAX_LINE, or holding a CR
 * inside it or a character beyond printable ASCII and tab. Runs hold no control character
 * (Parser.feed_run's contract), so in ASCII text only the CR test is needed. */
static int next_line(const unsigned char *s, Py_ssize_t pos, Py_ssize_t endpos, int ascii,
                     Py_ssize_t *e, Py_ssize_t *le)
{
    const unsigned char *nl = memchr(s + pos, '\n', endpos - pos);
    *e = nl ? nl - s : endpos;
    if (*e - pos > cfg.max_line)
        return 1;
    Py_ssize_t l = *e;
    while (l > pos && s[l - 1] == '\r')
        l--;
    *le = l;
    return ascii ? memchr(s + pos, '\r', l - pos) != NULL : !plain_line(s + pos, l - pos);
}

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_word(unsigned char c)
{
    return is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t'; }

/* digits{1,max} at s[i], possessive: returns the count, 0 if none, -1 if more than max */
static inline int digits(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, int max)
{
    int k = 0;
    while (i + k < e && is_digit(s[i + k]))
        k++;
    return k > max ? -1 : k;
}

/* `pid:` / `pid/lwp:` / `/lwp:` (each number 1-10 digits, `@n` after the lwp) followed by
 * whitespace. Returns the index after ":", or -1 if the line has no such prefix. */
static Py_ssize_t truss_prefix(const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                               Py_ssize_t *pid_s, int *pid_n, int *lwp2)
{
    *pid_n = 0;
    *lwp2 = 0;
    int k, lwp = 0;
    if (i < e && s[i] != '/') { /* pid */
        k = digits(s, i, e, 10);
        if (k <= 0)
            return -1;
        *pid_s = i;
        *pid_n = k;
        i += k;
    }
    if (i < e && s[i] == '/') { /* /lwp, after a pid or alone */
        k = digits(s, i + 1, e, 10);
        if (k <= 0)
            return -1;
        i += 1 + k;
        lwp = 1;
        *lwp2 = *pid_n == 0;
    }
    if (lwp && i < e && s[i] == '@') { /* @n only follows an lwp */
        k = digits(s, i + 1, e, 10);
        if (k <= 0)
            return -1;
        i += 1 + k;
    }
    if (i < e && s[i] == ':' && i + 1 < e && is_ws(s[i + 1]))
        return i + 1;
    return -1;
}

/* After a call's last ")": W* then `= value [..]`, `Err#N NAME [..]`, `argc = N` or nothing,
 * then W* to the end. Returns 1 (a value or an error, spans filled), 2 (nothing or argc: no
 * return value) or 0 (the regex would not end here). */
static int truss_tail(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, Py_ssize_t *ret_s,
                      Py_ssize_t *ret_n, Py_ssize_t *eno_s, Py_ssize_t *eno_n, Py_ssize_t *ename_s,
                      Py_ssize_t *ename_n)
{
    *ret_n = *eno_n = *ename_n = 0;
    while (i < e && is_ws(s[i]))
        i++;
    if (i < e && s[i] == '=') {
        i++;
        while (i < e && is_ws(s[i]))
            i++;
        Py_ssize_t st = i;
        if (i < e && s[i] == '-')
            i++;
        Py_ssize_t w = i;
        while (i < e && is_word(s[i]))
            i++;
        if (i == w)
            return 0;
        *ret_s = st;
        *ret_n = i - st;
    }
    else if (e - i >= 4 && memcmp(s + i, "Err#", 4) == 0) {
        i += 4;
        int k = digits(s, i, e, 1000);
        if (k < 1 || k > 5)
            return 0;
        *eno_s = i;
        *eno_n = k;
        i += k;
        Py_ssize_t j = i;
        while (j < e && is_ws(s[j]))
            j++;
        if (j > i && j < e && s[j] >= 'A' && s[j] <= 'Z') {
            Py_ssize_t st = j;
            while (j < e && ((s[j] >= 'A' && s[j] <= 'Z') || is_digit(s[j]) || s[j] == '_'))
                j++;
            *ename_s = st;
            *ename_n = j - st;
            i = j;
        }
    }
    else {
        if (e - i >= 4 && memcmp(s + i, "argc", 4) == 0) {
            i += 4;
            while (i < e && is_ws(s[i]))
                i++;
            if (i >= e || s[i] != '=')
                return 0;
            i++;
            while (i < e && is_ws(s[i]))
                i++;
            int k = digits(s, i, e, 1 << 30);
            if (k < 1)
                return 0;
            i += k;
        }
        while (i < e && is_ws(s[i]))
            i++;
        return i == e ? 2 : 0;
    }
    /* optional `W+[...]` */
    Py_ssize_t j = i;
    while (j < e && is_ws(s[j]))
        j++;
    if (j > i && j < e && s[j] == '[') {
        Py_ssize_t k = j + 1;
        while (k < e && s[k] != ']')
            k++;
        if (k < e)
            i = k + 1;
    }
    while (i < e && is_ws(s[i]))
        i++;
    return i == e;
}

static int contains(const unsigned char *s, Py_ssize_t n, const char *w)
{
    size_t wn = strlen(w);
    for (Py_ssize_t i = 0; i + (Py_ssize_t)wn <= n; i++)
        if (s[i] == (unsigned char)w[0] && memcmp(s + i, w, wn) == 0)
            return 1;
    return 0;
}

static inline int starts(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, const char *w)
{
    size_t n = strlen(w);
    return (Py_ssize_t)n <= e - i && memcmp(s + i, w, n) == 0;
}

/* The -d/-D/-E columns of a truss line as TrussParser._times reads them (cols: the index of d,
 * D and E for 1, 2 and 3 columns). */
typedef struct {
    int nt;
    Py_ssize_t s[3], n[3];
} Times;

/* a line's -d timestamp (s), -D delta and -E in-call time (ms), as TrussParser._times reads the
 * columns it printed */
typedef struct {
    int has_d, has_D, has_E;
    double d, D, E;
} Cols;

static int truss_cols(const unsigned char *s, const Times *t, int cols[3][3], Cols *out)
{
    memset(out, 0, sizeof(*out));
    if (!t->nt)
        return 0;
    const int *col = cols[t->nt - 1];
    double *dst[3] = {&out->d, &out->D, &out->E};
    int *has[3] = {&out->has_d, &out->has_D, &out->has_E};
    for (int k = 0; k < 3; k++) {
        if (col[k] < 0)
            continue;
        if (parse_decimal((const char *)s + t->s[col[k]], t->n[col[k]], dst[k]) < 0)
            return -1;
        if (k)
            *dst[k] *= 1000.0;
        *has[k] = 1;
    }
    return 0;
}

/* A `Received signal #N, NAME ...` line (text after the prefix and times at i): what
 * TrussParser._feed_other does with it. Returns 1 if taken, 0 if not this shape, -1 on error. */
static int truss_signal(Core *c, const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                        int has_pid, long long pid, const Times *t, int cols[3][3], long long line)
{
    static const char head[] = "Received signal";
    if (!starts(s, i, e, head))
        return 0;
    i += sizeof(head) - 1;
    /* _SIGNAL: \s*#?(\d+)?,?\s*(\w+)?  (greedy, unanchored: no backtracking can change it) */
    while (i < e && py_space(s[i]))
        i++;
    if (i < e && s[i] == '#')
        i++;
    Py_ssize_t num_s = i;
    while (i < e && is_digit(s[i]))
        i++;
    Py_ssize_t num_n = i - num_s;
    if (i < e && s[i] == ',')
        i++;
    while (i < e && py_space(s[i]))
        i++;
    Py_ssize_t w_s = i;
    while (i < e && is_word(s[i]))
        i++;
    PyObject *name;
    if (i > w_s)
        name = PyUnicode_DecodeASCII((const char *)s + w_s, i - w_s, NULL);
    else if (num_n)
        name = joined("#", s + num_s, num_n);
    else
        name = PyUnicode_FromString("signal");
    if (name == NULL)
        return -1;
    Cols v;
    if (truss_cols(s, t, cols, &v) < 0 || bump(c->signals, name) < 0 ||
        core_event(c, has_pid, pid, v.has_d, v.d, v.has_D, v.D, line, name) < 0)
        goto fail;
    Py_DECREF(name);
    return 1;
fail:
    Py_DECREF(name);
    return -1;
}

/* truss_run(text, pos, endpos, n, cols) -> (pos, n, calls, status)
 * TrussParser.feed_run's loop for the common lines: calls with a pid, a time column or an Err#,
 * calls without a value after a prefix (_exit, execve's argc, (sleeping...), a fork child's
 * (returning as child ...)), `Received signal` lines and -v continuation lines (prefixed lines,
 * which the parser claims). status 0: reached endpos; 1: the line at pos is for the Python
 * path; 2: the text is not one this scanner reads. */
static PyObject *Core_truss_run(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[4]) ||
        PyTuple_GET_SIZE(args[4]) != 3) {
        PyErr_SetString(PyExc_TypeError, "truss_run(text, pos, endpos, n, cols)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), endpos = PyLong_AsSsize_t(args[2]);
    long long n = PyLong_AsLongLong(args[3]);
    int cols[3][3];
    for (int k = 0; k < 3; k++) {
        PyObject *t = PyTuple_GET_ITEM(args[4], k);
        for (int j = 0; j < 3; j++)
            cols[k][j] = (int)PyLong_AsLong(PyTuple_GetItem(t, j));
    }
    if (PyErr_Occurred())
        return NULL;
    int calls = 0, status = 0;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
        status = 2;
        goto done;
    }
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t tlen = PyUnicode_GET_LENGTH(text);
    /* runs hold no control character (Parser.feed_run's contract), so in ASCII text only a CR
     * inside a line is left for the Python path; other text is checked byte by byte */
    int ascii = PyUnicode_IS_ASCII(text);
    if (endpos > tlen)
        endpos = tlen;
    while (pos < endpos) {
        Py_ssize_t e, le; /* trailing CRs are whitespace to the regexes */
        if (next_line(s, pos, endpos, ascii, &e, &le)) {
            status = 1;
            break;
        }
        Py_ssize_t i = pos;
        while (i < le && is_ws(s[i]))
            i++;
        Py_ssize_t pid_s = 0;
        int pid_n = 0, lwp2 = 0;
        Py_ssize_t after = truss_prefix(s, i, le, &pid_s, &pid_n, &lwp2);
        int prefixed = after >= 0;
        if (prefixed)
            i = after;
        while (i < le && is_ws(s[i]))
            i++;
        int has_pid = pid_n > 0;
        long long pid = 0;
        for (int k = 0; k < pid_n; k++)
            pid = pid * 10 + (s[pid_s + k] - '0');
        /* up to three time columns */
        Times t;
        t.nt = 0;
        int bad = 0;
        while (t.nt < 3 && i < le && is_digit(s[i])) {
            int a = digits(s, i, le, 12);
            if (a < 0 || i + a >= le || s[i + a] != '.') {
                bad = 1;
                break;
            }
            int b = digits(s, i + a + 1, le, 5);
            Py_ssize_t j = i + a + 1 + (b > 0 ? b : 0);
            if (b <= 0 || j >= le || !is_ws(s[j])) {
                bad = 1;
                break;
            }
            t.s[t.nt] = i;
            t.n[t.nt] = j - i;
            t.nt++;
            while (j < le && is_ws(s[j]))
                j++;
            i = j;
        }
        if (bad) {
            status = 1;
            break;
        }
        Py_ssize_t name_s = i;
        if (i < le && (s[i] == '_' || ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z'))) {
            while (i < le && is_word(s[i]))
                i++;
        }
        int is_call = i > name_s && i < le && s[i] == '(';
        if (!is_call) {
            if (!prefixed || name_s == le) {
                status = 1;
                break;
            }
            if (t.nt) { /* after times: a signal line, or something for the Python path */
                int r = truss_signal(c, s, name_s, le, has_pid, pid, &t, cols, n + 1);
                if (r < 0)
                    return NULL;
                if (r == 0) {
                    status = 1;
                    break;
                }
                n++;
                calls = 1;
                pos = e + 1;
                continue;
            }
            /* a -v continuation line: `pid: text`, text not starting with a digit, a call or
             * a signal/fault word */
            if (starts(s, name_s, le, "Received") || starts(s, name_s, le, "Stopped") ||
                starts(s, name_s, le, "Stepped") || starts(s, name_s, le, "Incurred")) {
                status = 1;
                break;
            }
            n++;
            if (core_continuation(c, (const char *)s + name_s, e - name_s) < 0)
                return NULL;
            pos = e + 1;
            continue;
        }
        Py_ssize_t name_n = i - name_s;
        Py_ssize_t args_s = i + 1;
        /* the args end at the last ")" of the line, if the regex can end there */
        Py_ssize_t close = le - 1;
        while (close >= args_s && s[close] != ')')
            close--;
        Py_ssize_t ret_s = 0, ret_n, eno_s = 0, eno_n, ename_s = 0, ename_n;
        int tail = close < args_s ? 0
                                  : truss_tail(s, close + 1, le, &ret_s, &ret_n, &eno_s, &eno_n,
                                               &ename_s, &ename_n);
        if (tail == 0) {
            status = 1;
            break;
        }
        Py_ssize_t args_n = close - args_s;
        const unsigned char *ap = s + args_s;
        if (tail == 1 ? !(pid_n || lwp2 || t.nt || eno_n)
                      : !(pid_n || lwp2) || contains(ap, args_n, ") = ") ||
                            contains(ap, args_n, ") Err#")) {
            status = 1; /* the detector asks the other formats, or feed() reads it */
            break;
        }
        if (tail == 2 && contains(ap, args_n, "(sleeping")) {
            status = 1; /* an LWP going to sleep: FdTargets reads it in the Python path */
            break;
        }
        n++;
        calls = 1;
        if (tail == 1 &&
            routed(s, name_s, name_n, args_s, args_n, ret_s, eno_n ? 0 : ret_n, eno_n > 0, 0) &&
            route_line(c->routed, text, pos, le, n) < 0)
            return NULL;
        if (contains(ap, args_n, "(returning as")) { /* a fork child's first line */
            Cols v;
            if (truss_cols(s, &t, cols, &v) < 0)
                return NULL;
            Proc *pc = proc_get(c, has_pid, pid);
            if (pc == NULL)
                return NULL;
            if (v.has_d && pc != &c->overflow) {
                pc->has_last_ts = 1;
                pc->last_ts = v.d;
                span(c, v.d);
            }
            if (has_pid) {
                Txt r = {(const char *)s + ret_s, ret_n, NULL, 1};
                long long parent;
                PyObject *po = ascii_pid(&r, &parent) ? PyLong_FromLongLong(parent)
                                                       : Py_NewRef(Py_None);
                PyObject *co = po ? PyLong_FromLongLong(pid) : NULL;
                int rc = co ? add_child(c, co, po, n) : -1;
                Py_XDECREF(po);
                Py_XDECREF(co);
                if (rc < 0)
                    return NULL;
            }
            pos = e + 1;
            continue;
        }
        Cols v;
        if (truss_cols(s, &t, cols, &v) < 0)
            return NULL;
        CallArgs a;
        a.has_pid = has_pid;
        a.pid = pid;
        a.has_ts = v.has_d; /* dur: -E if printed, else -D; the -D delta is also the gap */
        a.ts = v.d;
        a.has_delta = a.has_gap = v.has_D;
        a.delta = a.gap = v.D;
        a.has_dur = v.has_E || v.has_D;
        a.dur = v.has_E ? v.E : v.D;
        char errbuf[16];
        Txt err_t = {NULL, 0, NULL, 1}, ret_t = {NULL, 0, NULL, 1};
        Txt args_t = {(const char *)ap, args_n, NULL, 1};
        a.err = a.ret = NULL;
        if (eno_n) {
            if (ename_n) {
                err_t.p = (const char *)s + ename_s;
                err_t.n = ename_n;
            }
            else {
                memcpy(errbuf, "Err#", 4);
                memcpy(errbuf + 4, s + eno_s, eno_n);
                err_t.p = errbuf;
                err_t.n = 4 + eno_n;
            }
            a.err = &err_t;
        }
        if (ret_n) {
            ret_t.p = (const char *)s + ret_s;
            ret_t.n = ret_n;
            a.ret = &ret_t;
        }
        a.args = &args_t;
        a.line = n;
        int si = stat_get(c, (const char *)s + name_s, name_n, NULL);
        if (si < 0 || core_call(c, si, &a) < 0)
            return NULL;
        pos = e + 1;
    }
    if (pos == endpos && status == 0)
        status = 1; /* an empty last line: the Python path decides */
done:
    return Py_BuildValue("(nLii)", pos, n, calls, status);
}

/* -- the strace scanner ------------------------------------------------------------------------ */

/* StraceParser's clock state, read from the parser before a run and written back after it */
typedef struct {
    int has_main;
    long long main_pid;
    char hm[8];
    int hm_n;
    long long hm_s;
    double day, clock;
    int has_last_clock;
    double last_clock;
    int has_epoch;
    long long epoch;
    int decided, any_dur;
} StraceState;

/* The prefix _PFX reads: `[pid N] ` or `N `, a -t/-tt clock, a -ttt/-r number. */
typedef struct {
    int has_pid;
    long long pid;
    Py_ssize_t clock_s, clock_n; /* clock_n 0: none */
    Py_ssize_t f_s, f_n;         /* f_n 0: none */
} StracePrefix;

/* FRAC: 3, 6 or 9 digits, then whitespace (the clock's lookahead, or the number's \s++) */
static int frac_ok(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, Py_ssize_t *end)
{
    int k = 0;
    while (i + k < e && is_digit(s[i + k]))
        k++;
    if (k != 3 && k != 6 && k != 9)
        return 0; /* (the regex could take a shorter FRAC only if a digit may follow: it may not) */
    if (i + k >= e || !is_ws(s[i + k]))
        return 0;
    *end = i + k;
    return 1;
}

/* Returns the index after the prefix, or -1 when the line is not one this scanner reads there. */
static Py_ssize_t strace_prefix(const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                                StracePrefix *px)
{
    memset(px, 0, sizeof(*px));
    while (i < e && is_ws(s[i]))
        i++;
    if (i < e && s[i] == '[') {
        if (!starts(s, i, e, "[pid"))
            return -1;
        Py_ssize_t j = i + 4;
        if (j >= e || !is_ws(s[j]))
            return -1;
        while (j < e && is_ws(s[j]))
            j++;
        int k = digits(s, j, e, 10);
        if (k <= 0 || j + k >= e || s[j + k] != ']')
            return -1;
        px->has_pid = 1;
        for (int q = 0; q < k; q++)
            px->pid = px->pid * 10 + (s[j + q] - '0');
        i = j + k + 1;
        while (i < e && is_ws(s[i]))
            i++;
    }
    else if (i < e && is_digit(s[i])) {
        int k = digits(s, i, e, 1000);
        if (k <= 10 && i + k < e && is_ws(s[i + k])) { /* `N ` */
            px->has_pid = 1;
            for (int q = 0; q < k; q++)
                px->pid = px->pid * 10 + (s[i + q] - '0');
            i += k;
            while (i < e && is_ws(s[i]))
                i++;
        }
        else if (!(i + k < e && (s[i + k] == ':' || s[i + k] == '.')))
            return -1; /* 11+ digits before a space, or digits glued to something else */
    }
    /* a clock: \d{1,2}:\d\d:\d\d(\.FRAC)? followed by whitespace */
    if (i < e && is_digit(s[i])) {
        int k = digits(s, i, e, 1000);
        if (i + k < e && s[i + k] == ':') {
            if (k > 2)
                return -1;
            Py_ssize_t j = i + k + 1;
            if (!(j + 5 <= e && is_digit(s[j]) && is_digit(s[j + 1]) && s[j + 2] == ':' &&
                  is_digit(s[j + 3]) && is_digit(s[j + 4])))
                return -1;
            j += 5;
            Py_ssize_t end = j;
            if (j < e && s[j] == '.') {
                if (!frac_ok(s, j + 1, e, &end))
                    return -1;
            }
            else if (j >= e || !is_ws(s[j]))
                return -1;
            px->clock_s = i;
            px->clock_n = end - i;
            i = end;
            while (i < e && is_ws(s[i]))
                i++;
        }
    }
    /* a number: \d{1,12}\.FRAC then whitespace */
    if (i < e && is_digit(s[i])) {
        int k = digits(s, i, e, 1000);
        Py_ssize_t end;
        if (k > 12 || i + k >= e || s[i + k] != '.' || !frac_ok(s, i + k + 1, e, &end))
            return -1;
        px->f_s = i;
        px->f_n = end - i;
        i = end;
        while (i < e && is_ws(s[i]))
            i++;
    }
    return i;
}

/* StraceParser._time: (absolute seconds, -r delta in ms) of a prefix with a clock or number */
static int strace_time(StraceState *st, const unsigned char *s, const StracePrefix *px,
                       int *has_ts, double *ts, int *has_r, double *r)
{
    *has_ts = *has_r = 0;
    if (px->clock_n) {
        const unsigned char *c = s + px->clock_s;
        Py_ssize_t n = px->clock_n;
        /* hm, _, sec = clock.rpartition(":") */
        Py_ssize_t colon = n - 1;
        while (c[colon] != ':')
            colon--;
        if (colon != st->hm_n || memcmp(c, st->hm, colon) != 0) {
            long long h = 0, mi = 0;
            Py_ssize_t q = 0;
            while (c[q] != ':')
                h = h * 10 + (c[q++] - '0');
            for (q++; q < colon; q++)
                mi = mi * 10 + (c[q] - '0');
            memcpy(st->hm, c, colon);
            st->hm_n = (int)colon;
            st->hm_s = h * 3600 + mi * 60;
        }
        double sec;
        if (parse_decimal((const char *)c + colon + 1, n - colon - 1, &sec) < 0)
            return -1;
        double t = (double)st->hm_s + sec;
        if (st->has_last_clock && t + st->day < st->last_clock - 43200)
            st->day += 86400.0;
        t += st->day;
        st->has_last_clock = 1;
        st->last_clock = t;
        *ts = t;
        *has_ts = 1;
        if (px->f_n) {
            double v;
            if (parse_decimal((const char *)s + px->f_s, px->f_n, &v) < 0)
                return -1;
            *r = v * 1000.0;
            *has_r = 1;
        }
    }
    else if (px->f_n) {
        double v;
        if (parse_decimal((const char *)s + px->f_s, px->f_n, &v) < 0)
            return -1;
        if (v >= 1e6) { /* -ttt: epoch seconds, relative to the first */
            const unsigned char *f = s + px->f_s;
            Py_ssize_t dot = 0;
            long long whole = 0;
            while (f[dot] != '.')
                whole = whole * 10 + (f[dot++] - '0');
            if (!st->has_epoch) {
                st->has_epoch = 1;
                st->epoch = whole;
            }
            char buf[24];
            Py_ssize_t fn = px->f_n - dot - 1;
            buf[0] = '0';
            buf[1] = '.';
            memcpy(buf + 2, f + dot + 1, fn);
            double frac;
            if (parse_decimal(buf, fn + 2, &frac) < 0)
                return -1;
            *ts = (double)(whole - st->epoch) + frac;
            *has_ts = 1;
        }
        else { /* -r: a delta, accumulated into a clock */
            *r = v * 1000.0;
            *has_r = 1;
            st->clock += v;
            *ts = st->clock;
            *has_ts = 1;
        }
    }
    return 0;
}

/* RET: (-?\d{1,20}+ | 0x[0-9a-fA-F]{1,16}+ | \?) (<...>)? then whitespace or the end. Returns the
 * index after it (the rest starts there), or -1. */
static Py_ssize_t strace_ret(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, Py_ssize_t *ret_n)
{
    Py_ssize_t st = i;
    int ok = 0;
    if (i < e && (s[i] == '-' || is_digit(s[i]))) {
        Py_ssize_t j = i + (s[i] == '-');
        int k = digits(s, j, e, 20);
        if (k > 0) {
            Py_ssize_t end = j + k;
            if (!(end < e && s[end] == 'x')) {
                i = end;
                ok = 1;
            }
        }
    }
    if (!ok && i + 1 < e && s[i] == '0' && s[i + 1] == 'x') {
        Py_ssize_t j = i + 2;
        int k = 0;
        while (j + k < e && (is_digit(s[j + k]) || ((s[j + k] | 32) >= 'a' && (s[j + k] | 32) <= 'f')))
            k++;
        if (k < 1 || k > 16)
            return -1;
        i = j + k;
        ok = 1;
    }
    if (!ok && i < e && s[i] == '?') {
        i++;
        ok = 1;
    }
    if (!ok)
        return -1;
    *ret_n = i - st;
    if (i < e && s[i] == '<') { /* strace -y: the file behind the descriptor */
        Py_ssize_t j = i + 1;
        while (j < e && s[j] != '>')
            j++;
        if (j < e)
            i = j + 1;
    }
    if (i < e && !is_ws(s[i]))
        return -1;
    return i;
}

/* StraceParser._outcome on the rest [rs, re) after a return value: the errno name (for -1 and
 * ?) and the -T duration in ms */
static int strace_outcome(const unsigned char *s, Py_ssize_t ret_s, Py_ssize_t ret_n,
                          Py_ssize_t rs, Py_ssize_t re, Py_ssize_t *err_s, Py_ssize_t *err_n,
                          int *has_d, double *d)
{
    *err_n = 0;
    *has_d = 0;
    Py_ssize_t e = re; /* rest = rest.rstrip() */
    while (e > rs && py_space(s[e - 1]))
        e--;
    if (e > rs && s[e - 1] == '>') {
        Py_ssize_t lt = e - 2; /* i = rest.rfind("<") */
        while (lt >= rs && s[lt] != '<')
            lt--;
        Py_ssize_t v = lt >= rs ? lt + 1 : rs, ve = e - 1; /* value = rest[i + 1 : -1] */
        Py_ssize_t q = v;
        int a = 0, b = -1; /* \d{1,9}(\.\d{1,9})? */
        while (q < ve && is_digit(s[q]))
            q++, a++;
        if (q < ve && s[q] == '.') {
            q++;
            b = 0;
            while (q < ve && is_digit(s[q]))
                q++, b++;
        }
        if (a >= 1 && a <= 9 && (b == -1 || (b >= 1 && b <= 9)) && q == ve) {
            if (parse_decimal((const char *)s + v, ve - v, d) < 0)
                return -1;
            *d *= 1000.0;
            *has_d = 1;
            e = lt >= rs ? lt : e - 1; /* rest = rest[:i] */
        }
    }
    int minus1 = ret_n == 2 && s[ret_s] == '-' && s[ret_s + 1] == '1';
    int unknown = ret_n == 1 && s[ret_s] == '?';
    if (e > rs && (minus1 || unknown)) { /* _ERRNAME: \s*(E[A-Z0-9]{2,})\b */
        Py_ssize_t q = rs;
        while (q < e && py_space(s[q]))
            q++;
        if (q < e && s[q] == 'E') {
            Py_ssize_t r = q + 1;
            while (r < e && ((s[r] >= 'A' && s[r] <= 'Z') || is_digit(s[r])))
                r++;
            if (r - q - 1 >= 2 && !(r < e && is_word(s[r]))) {
                *err_s = q;
                *err_n = r - q;
            }
        }
    }
    return 0;
}

/* The rightmost ")" after which `<sep>=<sep>RET` matches (sep: spaces, or any whitespace when
 * ws_any), as a greedy `(.*)\) +=  +RET` finds it. Returns the ")" index, -2 when a candidate's
 * RET did not match (the regex would go on to earlier ones: left to Python), -1 when none. */
static Py_ssize_t strace_close(const unsigned char *s, Py_ssize_t from, Py_ssize_t e, int ws_any,
                               Py_ssize_t *ret_s, Py_ssize_t *ret_n, Py_ssize_t *rest_s)
{
    for (Py_ssize_t c = e - 1; c >= from; c--) {
        if (s[c] != ')')
            continue;
        Py_ssize_t j = c + 1, k = j;
        while (k < e && (ws_any ? is_ws(s[k]) : s[k] == ' '))
            k++;
        if (k == j || k >= e || s[k] != '=')
            continue;
        j = ++k;
        while (k < e && (ws_any ? is_ws(s[k]) : s[k] == ' '))
            k++;
        if (k == j)
            continue;
        Py_ssize_t r = strace_ret(s, k, e, ret_n);
        if (r < 0)
            return -2;
        *ret_s = k;
        *rest_s = r;
        return c;
    }
    return -1;
}

static int read_state(PyObject *parser, StraceState *st, long long *n, PyObject **unfinished)
{
    PyObject *v;
#define GET(name)                                        \
    if ((v = PyObject_GetAttrString(parser, name)) == NULL) \
        return -1;
    GET("_n");
    *n = PyLong_AsLongLong(v);
    Py_DECREF(v);
    GET("_main_pid");
    st->has_main = v != Py_None;
    st->main_pid = st->has_main ? PyLong_AsLongLong(v) : 0;
    Py_DECREF(v);
    GET("_hm");
    Py_ssize_t hn;
    const char *hm = PyUnicode_AsUTF8AndSize(v, &hn);
    if (hm == NULL || hn >= (Py_ssize_t)sizeof(st->hm)) {
        Py_DECREF(v);
        return hm == NULL ? -1 : 1;
    }
    memcpy(st->hm, hm, hn);
    st->hm_n = (int)hn;
    Py_DECREF(v);
    GET("_hm_s");
    st->hm_s = PyLong_AsLongLong(v);
    Py_DECREF(v);
    GET("_day");
    st->day = PyFloat_AsDouble(v);
    Py_DECREF(v);
    GET("_clock");
    st->clock = PyFloat_AsDouble(v);
    Py_DECREF(v);
    GET("_last_clock");
    st->has_last_clock = v != Py_None;
    st->last_clock = st->has_last_clock ? PyFloat_AsDouble(v) : 0.0;
    Py_DECREF(v);
    GET("_epoch");
    st->has_epoch = v != Py_None;
    st->epoch = st->has_epoch ? PyLong_AsLongLong(v) : 0;
    Py_DECREF(v);
    GET("_decided");
    st->decided = PyObject_IsTrue(v);
    Py_DECREF(v);
    GET("_any_dur");
    st->any_dur = PyObject_IsTrue(v);
    Py_DECREF(v);
    GET("_unfinished");
    if (!PyDict_Check(v)) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "_unfinished must be a dict");
        return -1;
    }
    *unfinished = v; /* new reference */
#undef GET
    return PyErr_Occurred() ? -1 : 0;
}

static int write_state(PyObject *parser, const StraceState *st, long long n)
{
#define PUT(name, expr)                                                      \
    do {                                                                     \
        PyObject *_v = (expr);                                               \
        if (_v == NULL || PyObject_SetAttrString(parser, name, _v) < 0) {    \
            Py_XDECREF(_v);                                                  \
            return -1;                                                       \
        }                                                                    \
        Py_DECREF(_v);                                                       \
    } while (0)
    PUT("_n", PyLong_FromLongLong(n));
    PUT("_hm", PyUnicode_DecodeASCII(st->hm, st->hm_n, NULL));
    PUT("_hm_s", PyLong_FromLongLong(st->hm_s));
    PUT("_day", PyFloat_FromDouble(st->day));
    PUT("_clock", PyFloat_FromDouble(st->clock));
    PUT("_last_clock", st->has_last_clock ? PyFloat_FromDouble(st->last_clock) : Py_NewRef(Py_None));
    PUT("_epoch", st->has_epoch ? PyLong_FromLongLong(st->epoch) : Py_NewRef(Py_None));
    PUT("_decided", PyBool_FromLong(st->decided));
    PUT("_any_dur", PyBool_FromLong(st->any_dur));
#undef PUT
    return 0;
}

/* _SIGNAL (---\s+(stopped by\s+)?(SIG[A-Z0-9+]*|\w+)) or _EXIT (\+\+\+\s+(exited with
 * (-?\d{1,5})|killed by (SIG[A-Z0-9]+))) at i: StraceParser._feed_other's signal and exit
 * branches. Returns 1 if taken, 0 if the line is not one of these shapes, -1 on error. */
static int strace_event(Core *c, StraceState *st, const unsigned char *s, Py_ssize_t i,
                        Py_ssize_t e, const StracePrefix *px, int has_pid, long long pid,
                        long long line)
{
    int sig = s[i] == '-';
    Py_ssize_t j = i + 3, k = j;
    while (k < e && py_space(s[k]))
        k++;
    if (k == j)
        return 0;
    PyObject *what;
    if (sig) {
        if (starts(s, k, e, "stopped by")) {
            Py_ssize_t q = k + 10, w = q;
            while (q < e && py_space(s[q]))
                q++;
            if (q == w || q >= e || !is_word(s[q]))
                return 0; /* the regex would backtrack to read "stopped" as the name */
            k = q;
        }
        Py_ssize_t ns = k;
        if (starts(s, k, e, "SIG")) {
            k += 3;
            while (k < e && ((s[k] >= 'A' && s[k] <= 'Z') || is_digit(s[k]) || s[k] == '+'))
                k++;
        }
        else {
            while (k < e && is_word(s[k]))
                k++;
            if (k == ns)
                return 0;
        }
        what = PyUnicode_DecodeASCII((const char *)s + ns, k - ns, NULL);
    }
    else if (starts(s, k, e, "exited with ")) {
        Py_ssize_t q = k + 12, ds = q;
        if (q < e && s[q] == '-')
            q++;
        int nd = 0;
        while (q < e && is_digit(s[q]) && nd < 5)
            q++, nd++;
        if (!nd)
            return 0;
        what = joined("exited with ", s + ds, q - ds);
    }
    else if (starts(s, k, e, "killed by SIG")) {
        Py_ssize_t q = k + 13;
        while (q < e && ((s[q] >= 'A' && s[q] <= 'Z') || is_digit(s[q])))
            q++;
        if (q == k + 13)
            return 0;
        what = joined("killed by ", s + k + 10, q - k - 10);
    }
    else
        return 0;
    if (what == NULL)
        return -1;
    int has_ts = 0, has_r = 0;
    double ts = 0.0, r = 0.0;
    int rc = -1;
    if ((px->clock_n || px->f_n) && strace_time(st, s, px, &has_ts, &ts, &has_r, &r) < 0)
        goto done;
    if (sig) { /* agg.signal(p, name, ts, None, n) */
        if (bump(c->signals, what) == 0 &&
            core_event(c, has_pid, pid, has_ts, ts, 0, 0.0, line, what) == 0)
            rc = 1;
    }
    else { /* agg.exited(p, status, n, ts) */
        if (PyList_GET_SIZE(c->exits) < cfg.max_children) {
            PyObject *d = Py_BuildValue("{s:N,s:O,s:L}", "pid",
                                        has_pid ? PyLong_FromLongLong(pid) : Py_NewRef(Py_None),
                                        "status", what, "line", line);
            if (d == NULL || PyList_Append(c->exits, d) < 0) {
                Py_XDECREF(d);
                goto done;
            }
            Py_DECREF(d);
        }
        PyObject *ex = PyUnicode_FromString("exit");
        if (ex != NULL && core_event(c, has_pid, pid, has_ts, ts, 0, 0.0, line, ex) == 0)
            rc = 1;
        Py_XDECREF(ex);
    }
done:
    Py_DECREF(what);
    return rc;
}

static PyObject *opt_float_obj(int has, double v)
{
    return has ? PyFloat_FromDouble(v) : Py_NewRef(Py_None);
}

/* The end of a call line or of a resumed call: its outcome ([rest_s, rest_e): errno, -T time),
 * the timing decision the first value makes (StraceParser._decide), in "d" timing a resumed
 * call's time since its unfinished half (has_t0), then the call itself. */
static int strace_call(Core *c, StraceState *st, const unsigned char *s, Py_ssize_t name_s,
                       Py_ssize_t name_n, Py_ssize_t ret_s, Py_ssize_t ret_n, Py_ssize_t rest_s,
                       Py_ssize_t rest_e, int has_pid, long long pid, int has_ts, double ts,
                       int has_r, double r, int has_t0, double t0, const char *args,
                       Py_ssize_t args_n, long long line)
{
    Py_ssize_t err_s = 0, err_n = 0;
    int has_d = 0;
    double d = 0.0;
    if (rest_s < rest_e &&
        strace_outcome(s, ret_s, ret_n, rest_s, rest_e, &err_s, &err_n, &has_d, &d) < 0)
        return -1;
    int unknown = ret_n == 1 && s[ret_s] == '?';
    if (!st->decided && !unknown) {
        st->decided = 1;
        c->gap_timing = !has_d && has_ts;
    }
    if (has_d)
        st->any_dur = 1;
    else if (has_t0 && c->gap_timing && has_ts && ts >= t0) {
        d = (ts - t0) * 1000.0;
        has_d = 1;
    }
    Txt args_t = {args, args_n, NULL, 1};
    Txt err_t = {(const char *)s + err_s, err_n, NULL, 1};
    Txt ret_t = {(const char *)s + ret_s, ret_n, NULL, 1};
    CallArgs a = {has_pid, pid, has_d, has_r, has_ts, 0, d, r, ts, 0.0,
                  err_n ? &err_t : NULL, &ret_t, &args_t, line};
    int si = stat_get(c, (const char *)s + name_s, name_n, NULL);
    return si < 0 ? -1 : core_call(c, si, &a);
}

/* strace_run(text, pos, endpos, parser) -> (pos, n, status)
 * StraceParser.feed_run's loop: call lines with a pid or a time, `<unfinished ...>` and
 * `<... resumed>` lines, with the parser's clock and unfinished-call table. status as for
 * truss_run. */
static PyObject *Core_strace_run(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "strace_run(text, pos, endpos, parser)");
        return NULL;
    }
    PyObject *text = args[0], *parser = args[3], *unfinished = NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), endpos = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    StraceState st;
    long long n = 0, n0;
    int status = 0;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        return Py_BuildValue("(nii)", pos, 0, 2);
    int rs = read_state(parser, &st, &n, &unfinished);
    if (rs < 0)
        return NULL;
    if (rs > 0) /* an unexpected clock state: the Python path handles it */
        return Py_BuildValue("(nLi)", pos, n, 2);
    n0 = n;
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t tlen = PyUnicode_GET_LENGTH(text);
    int ascii = PyUnicode_IS_ASCII(text); /* as in truss_run */
    if (endpos > tlen)
        endpos = tlen;
    char *buf = NULL;
    Py_ssize_t bufcap = 0;
    while (pos < endpos) {
        Py_ssize_t e, le;
        StracePrefix px;
        Py_ssize_t i = next_line(s, pos, endpos, ascii, &e, &le) ? -1
                                                                   : strace_prefix(s, pos, le, &px);
        if (i < 0) {
            status = 1;
            break;
        }
        int has_pid = px.has_pid || st.has_main;
        long long pid = px.has_pid ? px.pid : st.main_pid;
        int timed = px.clock_n || px.f_n;
        if (i < le && s[i] == '<') { /* <... name resumed>rest */
            if (!starts(s, i, le, "<...") || contains(s + pos, le - pos, "Err#")) {
                status = 1;
                break;
            }
            Py_ssize_t j = i + 4, k = j;
            while (k < le && is_ws(s[k]))
                k++;
            Py_ssize_t name_s = k;
            if (k == j || k >= le || !(s[k] == '_' || ((s[k] | 32) >= 'a' && (s[k] | 32) <= 'z'))) {
                status = 1;
                break;
            }
            while (k < le && is_word(s[k]))
                k++;
            Py_ssize_t name_n = k - name_s, w = k;
            while (k < le && is_ws(s[k]))
                k++;
            if (k == w || !starts(s, k, le, "resumed>")) {
                status = 1;
                break;
            }
            k += 8;
            if (k < e && is_ws(s[k])) /* \s? (a trailing CR counts too) */
                k++;
            Py_ssize_t rest_s = k < le ? k : le; /* r_rest.rstrip("\r") */
            /* _TAIL(rest): (.*)\)\s+=\s+RET */
            Py_ssize_t ret_s, ret_n, rest2;
            Py_ssize_t close = strace_close(s, rest_s, le, 1, &ret_s, &ret_n, &rest2);
            if (close < 0 ||
                routed(s, name_s, name_n, rest_s, close - rest_s, ret_s, ret_n,
                       ret_n == 2 && s[ret_s] == '-' && s[ret_s + 1] == '1', 1)) {
                /* no value yet (still unfinished), unreadable, or a call FdTargets reads:
                 * Python decides */
                status = 1;
                break;
            }
            /* the unfinished half, if its name matches */
            PyObject *key = has_pid ? PyLong_FromLongLong(pid) : Py_NewRef(Py_None);
            if (key == NULL)
                goto error;
            PyObject *start = PyDict_GetItemWithError(unfinished, key);
            const char *head = "";
            Py_ssize_t head_n = 0;
            int matched = 0;
            if (start == NULL && PyErr_Occurred()) {
                Py_DECREF(key);
                goto error;
            }
            if (start != NULL) {
                Py_ssize_t sn;
                const char *sname = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(start, 0), &sn);
                if (sname == NULL) {
                    Py_DECREF(key);
                    goto error;
                }
                if (sn == name_n && memcmp(sname, s + name_s, sn) == 0) {
                    PyObject *sargs = PyTuple_GET_ITEM(start, 1);
                    if (!PyUnicode_IS_ASCII(sargs)) {
                        Py_DECREF(key);
                        status = 1; /* argument text the byte path cannot join: Python does */
                        break;
                    }
                    matched = 1;
                    head = PyUnicode_AsUTF8AndSize(sargs, &head_n);
                    /* .rstrip().rstrip(",") */
                    while (head_n > 0 && py_space((unsigned char)head[head_n - 1]))
                        head_n--;
                    while (head_n > 0 && head[head_n - 1] == ',')
                        head_n--;
                }
            }
            n++;
            int has_ts = 0, has_r = 0;
            double ts = 0.0, r = 0.0;
            if (timed && strace_time(&st, s, &px, &has_ts, &ts, &has_r, &r) < 0) {
                Py_DECREF(key);
                goto error;
            }
            int has_t0 = 0;
            double t0 = 0.0;
            long long line_no = n;
            PyObject *hold = NULL;
            if (matched) {
                hold = Py_NewRef(start); /* keeps head alive past the del */
                PyObject *t0o = PyTuple_GET_ITEM(start, 2), *ro = PyTuple_GET_ITEM(start, 3);
                has_t0 = t0o != Py_None;
                t0 = has_t0 ? PyFloat_AsDouble(t0o) : 0.0;
                has_r = ro != Py_None;
                r = has_r ? PyFloat_AsDouble(ro) : 0.0;
                line_no = PyLong_AsLongLong(PyTuple_GET_ITEM(start, 4));
                if (PyErr_Occurred() || PyDict_DelItem(unfinished, key) < 0) {
                    Py_DECREF(hold);
                    Py_DECREF(key);
                    goto error;
                }
            }
            Py_DECREF(key);
            /* args = f"{head}, {tail_args}" if head and tail_args else head or tail_args */
            Py_ssize_t tail_n = close - rest_s;
            Py_ssize_t need = head_n + 2 + tail_n;
            if (need > bufcap) {
                char *nb = PyMem_Realloc(buf, need + 64);
                if (nb == NULL) {
                    Py_XDECREF(hold);
                    PyErr_NoMemory();
                    goto error;
                }
                buf = nb;
                bufcap = need + 64;
            }
            Py_ssize_t an = 0;
            if (head_n && tail_n) {
                memcpy(buf, head, head_n);
                memcpy(buf + head_n, ", ", 2);
                memcpy(buf + head_n + 2, s + rest_s, tail_n);
                an = need;
            }
            else if (head_n) {
                memcpy(buf, head, head_n);
                an = head_n;
            }
            else {
                memcpy(buf, s + rest_s, tail_n);
                an = tail_n;
            }
            Py_XDECREF(hold);
            if (strace_call(c, &st, s, name_s, name_n, ret_s, ret_n, rest2, le, has_pid, pid,
                            has_ts, ts, has_r, r, has_t0, t0, buf, an, line_no) < 0)
                goto error;
            pos = e + 1;
            continue;
        }
        if (starts(s, i, le, "---") || starts(s, i, le, "+++")) {
            /* `--- SIGxxx {...} ---` and `+++ exited with N +++`: start_score scores them 2
             * unless the line holds "..." or "strace" (its other branches come first), and
             * feed turns away a line with Err# */
            if (contains(s + pos, le - pos, "...") || contains(s + pos, le - pos, "strace") ||
                contains(s + pos, le - pos, "Err#")) {
                status = 1;
                break;
            }
            int r = strace_event(c, &st, s, i, le, &px, has_pid, pid, n + 1);
            if (r < 0)
                goto error;
            if (r == 0) {
                status = 1;
                break;
            }
            n++;
            pos = e + 1;
            continue;
        }
        /* name(...) */
        Py_ssize_t name_s = i;
        if (!(i < le && (s[i] == '_' || ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z')))) {
            status = 1;
            break;
        }
        while (i < le && is_word(s[i]))
            i++;
        if (i >= le || s[i] != '(') {
            status = 1;
            break;
        }
        Py_ssize_t name_n = i - name_s, args_s = i + 1;
        Py_ssize_t ret_s = 0, ret_n = 0, rest_s = 0;
        Py_ssize_t close = strace_close(s, args_s, le, 0, &ret_s, &ret_n, &rest_s);
        if (close == -2) {
            status = 1;
            break;
        }
        if (close >= 0) { /* a complete call */
            if (!(px.has_pid || timed)) {
                status = 1; /* a bare call line: the detector asks the other formats */
                break;
            }
            n++;
            if (routed(s, name_s, name_n, args_s, close - args_s, ret_s, ret_n,
                       ret_n == 2 && s[ret_s] == '-' && s[ret_s + 1] == '1', 0) &&
                route_line(c->routed, text, pos, le, n) < 0)
                goto error;
            int has_ts = 0, has_r = 0;
            double ts = 0.0, r = 0.0;
            if (timed && strace_time(&st, s, &px, &has_ts, &ts, &has_r, &r) < 0)
                goto error;
            if (strace_call(c, &st, s, name_s, name_n, ret_s, ret_n, rest_s, e, has_pid, pid,
                            has_ts, ts, has_r, r, 0, 0.0, (const char *)s + args_s,
                            close - args_s, n) < 0)
                goto error;
            pos = e + 1;
            continue;
        }
        /* name(args <unfinished ...> or <detached ...> */
        Py_ssize_t k = le;
        while (k > args_s && is_ws(s[k - 1]))
            k--;
        Py_ssize_t lt = k - 16; /* "<unfinished ...>" and "<detached ...>" are 16 and 14 long */
        if (!(lt >= args_s && memcmp(s + lt, "<unfinished ...>", 16) == 0)) {
            lt = k - 14;
            if (!(lt >= args_s && memcmp(s + lt, "<detached ...>", 14) == 0)) {
                status = 1;
                break;
            }
        }
        if (contains(s + pos, le - pos, "Err#")) {
            status = 1; /* feed turns it away as truss */
            break;
        }
        Py_ssize_t a_end = lt;
        while (a_end > args_s && is_ws(s[a_end - 1]))
            a_end--;
        n++;
        int has_ts = 0, has_r = 0;
        double ts = 0.0, r = 0.0;
        if (timed && strace_time(&st, s, &px, &has_ts, &ts, &has_r, &r) < 0)
            goto error;
        PyObject *uname = PyUnicode_DecodeASCII((const char *)s + name_s, name_n, NULL);
        if (uname == NULL)
            goto error;
        if (core_event(c, has_pid, pid, has_ts, ts, 0, 0.0, n, uname) < 0) {
            Py_DECREF(uname);
            goto error;
        }
        PyObject *key = has_pid ? PyLong_FromLongLong(pid) : Py_NewRef(Py_None);
        int present = key ? PyDict_Contains(unfinished, key) : -1;
        if (present < 0) {
            Py_XDECREF(key);
            Py_DECREF(uname);
            goto error;
        }
        if (present || PyDict_GET_SIZE(unfinished) < cfg.max_pids) {
            PyObject *tup = Py_BuildValue("(Ns#NNL)", uname, (const char *)s + args_s,
                                          a_end - args_s, opt_float_obj(has_ts, ts),
                                          opt_float_obj(has_r, r), n);
            uname = NULL; /* stolen by N */
            if (tup == NULL || PyDict_SetItem(unfinished, key, tup) < 0) {
                Py_XDECREF(tup);
                Py_DECREF(key);
                goto error;
            }
            Py_DECREF(tup);
        }
        Py_XDECREF(uname);
        Py_DECREF(key);
        pos = e + 1;
    }
    if (pos == endpos && status == 0)
        status = 1;
    PyMem_Free(buf);
    Py_DECREF(unfinished);
    if (write_state(parser, &st, n) < 0)
        return NULL;
    if (n != n0) {
        if (PyObject_SetAttrString(parser, "_seen_call", Py_True) < 0)
            return NULL;
    }
    return Py_BuildValue("(nLi)", pos, n, status);
error:
    PyMem_Free(buf);
    Py_DECREF(unfinished);
    return NULL;
}

/* -- type plumbing ---------------------------------------------------------------------------- */

static int Core_init(Core *c, PyObject *args, PyObject *kw)
{
    PyObject *errnos, *children, *random, *signals, *exits;
    if (!cfg.ready) {
        PyErr_SetString(PyExc_RuntimeError, "_syscore.configure() was not called");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!O!OO!O!", &PyDict_Type, &errnos, &PyList_Type, &children,
                          &random, &PyDict_Type, &signals, &PyList_Type, &exits))
        return -1;
    Py_INCREF(exits);
    Py_XSETREF(c->exits, exits);
    Py_INCREF(signals);
    Py_XSETREF(c->signals, signals);
    Py_INCREF(errnos);
    Py_XSETREF(c->errnos, errnos);
    Py_INCREF(children);
    Py_XSETREF(c->children, children);
    Py_INCREF(random);
    Py_XSETREF(c->random, random);
    Py_XSETREF(c->routed, PyList_New(0));
    if (c->routed == NULL)
        return -1;
    c->none_proc = -1;
    c->ts_min = Py_HUGE_VAL;
    c->ts_max = -Py_HUGE_VAL;
    c->slow_floor = 0.0;
    c->gap_floor = -1.0;
    if (c->hist == NULL) {
        c->hist = PyMem_Calloc(cfg.nbounds, sizeof(long long));
        if (c->hist == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (proc_init(&c->overflow, 0, 0) < 0)
        return -1;
    return 0;
}

static void Core_dealloc(Core *c)
{
    PyObject_GC_UnTrack(c);
    for (int i = 0; i < c->nstats; i++) {
        Py_XDECREF(c->stats[i].name);
        PyMem_Free(c->stats[i].samples);
    }
    PyMem_Free(c->stats);
    PyMem_Free(c->stat_tab);
    for (int i = 0; i < c->nprocs; i++) {
        proc_clear(c->procs[i]);
        PyMem_Free(c->procs[i]);
    }
    PyMem_Free(c->procs);
    PyMem_Free(c->proc_tab);
    proc_clear(&c->overflow);
    for (int i = 0; i < c->nreps; i++)
        PyMem_Free(c->reps[i].a);
    PyMem_Free(c->reps);
    PyMem_Free(c->rep_tab);
    PyMem_Free(c->hist);
    for (int i = 0; i < c->nslow; i++)
        Py_XDECREF(c->slowest[i].entry);
    for (int i = 0; i < c->ngaps; i++)
        Py_XDECREF(c->gaps[i].entry);
    Py_XDECREF(c->last_notes);
    Py_XDECREF(c->errnos);
    Py_XDECREF(c->children);
    Py_XDECREF(c->random);
    Py_XDECREF(c->signals);
    Py_XDECREF(c->exits);
    Py_XDECREF(c->routed);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int Core_traverse(Core *c, visitproc visit, void *arg)
{
    Py_VISIT(c->errnos);
    Py_VISIT(c->children);
    Py_VISIT(c->random);
    Py_VISIT(c->signals);
    Py_VISIT(c->exits);
    Py_VISIT(c->routed);
    Py_VISIT(c->last_notes);
    for (int i = 0; i < c->nslow; i++)
        Py_VISIT(c->slowest[i].entry);
    for (int i = 0; i < c->ngaps; i++)
        Py_VISIT(c->gaps[i].entry);
    for (int i = 0; i < c->nprocs; i++) {
        Py_VISIT(c->procs[i]->p_notes);
        Py_VISIT(c->procs[i]->last_name);
    }
    return 0;
}

static PyMethodDef Core_methods[] = {
    {"call", (PyCFunction)(void (*)(void))Core_call, METH_FASTCALL, "SyscallAggregator.call"},
    {"event", (PyCFunction)(void (*)(void))Core_event, METH_FASTCALL, "SyscallAggregator.event"},
    {"child", (PyCFunction)(void (*)(void))Core_child, METH_FASTCALL,
     "a fork child's first line (parent already read as a pid)"},
    {"continuation", (PyCFunction)Core_continuation, METH_O, "a -v line"},
    {"elide", (PyCFunction)Core_elide, METH_NOARGS, "lines were cut here"},
    {"proc", (PyCFunction)Core_proc, METH_O, "make sure a process has its counters"},
    {"export", (PyCFunction)Core_export, METH_O, "write the state into a SyscallAggregator"},
    {"truss_run", (PyCFunction)(void (*)(void))Core_truss_run, METH_FASTCALL,
     "TrussParser.feed_run's loop"},
    {"strace_run", (PyCFunction)(void (*)(void))Core_strace_run, METH_FASTCALL,
     "StraceParser.feed_run's loop"},
    {NULL}};

static PyMemberDef Core_members[] = {
    {"routed", T_OBJECT_EX, offsetof(Core, routed), READONLY,
     "[(line number, line)] the scanners kept for syscalls.FdTargets"},
    {"gap_timing", T_BOOL, offsetof(Core, gap_timing), 0, "charge each pid's gap to its call"},
    {NULL}};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ingest._syscore.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "SyscallAggregator's per-call state",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
};

static long get_long(PyObject *d, const char *k)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (v == NULL) {
        PyErr_Format(PyExc_KeyError, "configure(): %s missing", k);
        return -1;
    }
    return PyLong_AsLong(v);
}

static PyObject *get_obj(PyObject *d, const char *k)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (v == NULL)
        PyErr_Format(PyExc_KeyError, "configure(): %s missing", k);
    else
        Py_INCREF(v);
    return v;
}

/* configure(spec: dict): the constants and tables of syscalls.py */
static PyObject *configure(PyObject *mod, PyObject *spec)
{
    if (!PyDict_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "configure(spec: dict)");
        return NULL;
    }
    if (cfg.ready)
        Py_RETURN_NONE;
    cfg.max_syscalls = get_long(spec, "MAX_SYSCALLS");
    cfg.max_pids = get_long(spec, "MAX_PIDS");
    cfg.max_repeat_keys = get_long(spec, "MAX_REPEAT_KEYS");
    cfg.reservoir = get_long(spec, "RESERVOIR");
    cfg.top_n = get_long(spec, "TOP_N");
    cfg.max_names = get_long(spec, "MAX_NAMES");
    cfg.max_children = get_long(spec, "MAX_CHILDREN");
    cfg.max_line = get_long(spec, "MAX_LINE");
    if (PyErr_Occurred())
        return NULL;
    if (cfg.top_n < 1 || cfg.top_n > TOPMAX || cfg.reservoir < 1 || cfg.max_syscalls < 2) {
        PyErr_SetString(PyExc_ValueError, "configure(): limits out of range");
        return NULL;
    }
    if (!(cfg.other = get_obj(spec, "OTHER")) || !(cfg.fork_calls = get_obj(spec, "FORK_CALLS")) ||
        !(cfg.exec_calls = get_obj(spec, "EXEC_CALLS")) ||
        !(cfg.fd_calls = get_obj(spec, "FD_CALLS")) ||
        !(cfg.size_from_end = get_obj(spec, "SIZE_FROM_END")) ||
        !(cfg.arg_shape = get_obj(spec, "arg_shape")) || !(cfg.stat_cls = get_obj(spec, "Stat")) ||
        !(cfg.proc_cls = get_obj(spec, "Proc")))
        return NULL;
    PyObject *bounds = PyDict_GetItemString(spec, "HIST_BOUNDS");
    if (bounds == NULL || !PyTuple_Check(bounds)) {
        PyErr_SetString(PyExc_TypeError, "configure(): HIST_BOUNDS must be a tuple");
        return NULL;
    }
    PyObject *kinds = PyDict_GetItemString(spec, "ROUTE_KIND"); /* optional */
    cfg.ntargets = 0;
    if (kinds != NULL) { /* a tuple of (name, kind) pairs; a name may come with several kinds */
        if (!PyTuple_Check(kinds)) {
            PyErr_SetString(PyExc_TypeError, "configure(): ROUTE_KIND must be a tuple");
            return NULL;
        }
        for (Py_ssize_t at = 0; at < PyTuple_GET_SIZE(kinds); at++) {
            PyObject *pair = PyTuple_GET_ITEM(kinds, at);
            Py_ssize_t tn = 0;
            const char *t = NULL;
            long kind = -1;
            if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 &&
                PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) &&
                PyLong_Check(PyTuple_GET_ITEM(pair, 1))) {
                t = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &tn);
                kind = PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
            }
            int after4 = cfg.ntargets > 0 && cfg.target_kinds[cfg.ntargets - 1] == 4;
            if (t == NULL || tn >= TARGET_LEN || cfg.ntargets >= MAX_TARGETS || kind < 1 ||
                kind > 4 || (after4 && kind != 4)) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "configure(): ROUTE_KIND out of range");
                return NULL;
            }
            memcpy(cfg.target_names[cfg.ntargets], t, (size_t)tn);
            if (kind != 4 && tn > 0)
                cfg.first_len[(unsigned char)t[0]] |= (uint64_t)1 << tn;
            cfg.target_lens[cfg.ntargets] = (unsigned char)tn;
            cfg.target_kinds[cfg.ntargets++] = (unsigned char)kind;
        }
    }
    cfg.nbounds = (int)PyTuple_GET_SIZE(bounds);
    cfg.bounds = PyMem_Malloc(sizeof(double) * (cfg.nbounds ? cfg.nbounds : 1));
    if (cfg.bounds == NULL)
        return PyErr_NoMemory();
    for (int i = 0; i < cfg.nbounds; i++) {
        cfg.bounds[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(bounds, i));
        if (PyErr_Occurred())
            return NULL;
    }
    cfg.ready = 1;
    Py_RETURN_NONE;
}

/* first_bad(text, pos) -> int: where the first ``` or control character (what ingest/detect.py's
 * _BAD finds: \x00-\x08 \x0b \x0c \x0e-\x1f \x7f) is at or after pos, len(text) if none; -1
 * for text that is not 1-byte kind (the caller's regex then looks). One pass instead of a find()
 * and an encode() + translate() per megabyte. */
/* Does a 16-byte (SSE2) or 8-byte block hold a byte first_bad must look at: a control character
 * other than \t \n \r, DEL or a backtick? */
#ifdef __SSE2__
static inline int suspect_block(const unsigned char *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)p);
    const __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(31)), v); /* v <= 31 */
    const __m128i ok = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                    _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
    const __m128i odd = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(127)),
                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
    return _mm_movemask_epi8(_mm_or_si128(_mm_andnot_si128(ok, ctl), odd)) != 0;
}
#define BLOCK 16
#else
static inline int suspect_block(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return (HAS_LESS(w, 32) | HAS_BYTE(w, 127) | HAS_BYTE(w, '`')) != 0;
}
#define BLOCK 8
#endif

/* first_bad(text, pos) -> int: where the first ``` or control character (what ingest/detect.py's
 * _BAD finds: \x00-\x08 \x0b \x0c \x0e-\x1f \x7f) is at or after pos, len(text) if none; -1
 * for text that is not 1-byte kind (the caller's regex then looks). One pass instead of a find()
 * and an encode() + translate() per megabyte. */
static PyObject *first_bad(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "first_bad(text, pos)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        return PyLong_FromLong(-1);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t i = pos < 0 ? 0 : pos;
    for (;;) {
        while (i + BLOCK <= n && !suspect_block(s + i))
            i += BLOCK;
        Py_ssize_t stop = i + BLOCK < n ? i + BLOCK : n;
        for (; i < stop; i++) {
            unsigned char c = s[i];
            if (c >= 32 && c != '`' && c != 127)
                continue;
            if (c == '`') {
                if (i + 2 < n && s[i + 1] == '`' && s[i + 2] == '`')
                    return PyLong_FromSsize_t(i);
                continue;
            }
            if (c == 127 || (c < 32 && c != '\t' && c != '\n' && c != '\r'))
                return PyLong_FromSsize_t(i);
        }
        if (i >= n)
            return PyLong_FromSsize_t(n);
    }
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_O, "the constants and tables of ingest/parsers/syscalls.py"},
    {"first_bad", (PyCFunction)(void (*)(void))first_bad, METH_FASTCALL,
     "where the next fence or control character is (ingest/detect.py)"},
    {NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_syscore",
                                       "SyscallAggregator's per-call state in C", -1,
                                       module_methods};

PyMODINIT_FUNC PyInit__syscore(void)
{
    if (PyType_Ready(&CoreType) < 0)
        return NULL;
#define INTERN(var, s) \
    if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
    INTERN(k_syscall, "syscall");
    INTERN(k_pid, "pid");
    INTERN(k_ms, "ms");
    INTERN(k_line, "line");
    INTERN(k_ret, "ret");
    INTERN(k_err, "err");
    INTERN(k_notes, "notes");
    INTERN(k_after, "after");
    INTERN(k_before, "before");
    INTERN(k_parent, "parent");
    INTERN(s_round, "__round__");
    INTERN(s_strip, "strip");
    if ((four = PyLong_FromLong(4)) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
