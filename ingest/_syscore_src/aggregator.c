/* ingest/_syscore_src/aggregator.c: SyscallAggregator's per-call state in C: the name and pid
 * tables, repeat keys, the heapq-identical top lists, the reservoir, per-pid clocks and pending
 * "-d" calls; the Core methods Python calls per line (call, event, child, continuation, elide,
 * proc) and export(), which hands the state to the Python code that computes the statistics. */
#include "syscore.h"

static PyObject *round4(double x)
{
    PyObject *f = PyFloat_FromDouble(x);
    if (f == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethodObjArgs(f, s_round, four, NULL); /* round(x, 4) */
    Py_DECREF(f);
    return r;
}

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
int stat_get(Core *c, const char *nb, Py_ssize_t nn, PyObject *name_obj)
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

void proc_clear(Proc *p)
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

int proc_init(Proc *p, int has_pid, long long pid)
{
    memset(p, 0, sizeof(Proc));
    p->has_pid = has_pid;
    p->pid = pid;
    p->pid_obj = has_pid ? PyLong_FromLongLong(pid) : (Py_INCREF(Py_None), Py_None);
    return p->pid_obj ? 0 : -1;
}

/* procs.get(pid) or proc(pid): the overflow bucket once MAX_PIDS processes have their own */
Proc *proc_get(Core *c, int has_pid, long long pid)
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

int add_child(Core *c, PyObject *pid, PyObject *parent, long long line)
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


/* syscalls.bump(): count a name into a table that garbage cannot grow forever */
int bump(PyObject *table, PyObject *k)
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
int core_call(Core *c, int si, const CallArgs *a)
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
int core_event(Core *c, int has_pid, long long pid, int has_ts, double ts, int has_gap,
               double gap, long long line, PyObject *what)
{
    Proc *pc = proc_get(c, has_pid, pid);
    if (pc == NULL || clock_tick(c, pc, has_ts, ts, has_gap, gap, line, what) < 0)
        return -1;
    Py_INCREF(what);
    Py_XSETREF(pc->last_name, what);
    return 0;
}

int core_continuation(Core *c, const char *p, Py_ssize_t n)
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

PyObject *Core_call(Core *c, PyObject *const *args, Py_ssize_t nargs)
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

PyObject *Core_event(Core *c, PyObject *const *args, Py_ssize_t nargs)
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
PyObject *Core_child(Core *c, PyObject *const *args, Py_ssize_t nargs)
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

PyObject *Core_continuation(Core *c, PyObject *text)
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

PyObject *Core_elide(Core *c, PyObject *unused)
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

PyObject *Core_proc(Core *c, PyObject *pid)
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
        if (_v == NULL || set_attr(obj, name, _v) < 0) { \
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
PyObject *Core_export(Core *c, PyObject *agg)
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
