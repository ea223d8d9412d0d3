/* ingest/_syscore_src/table.c: Table, the one row reader of the sysstat column tables (mpstat,
 * sar, iostat's device rows) and of the process tables (pidstat, prstat: proc mode; top: top
 * mode): the hot loop of a long capture, in C.
 *
 * A sysstat data row is `clock [AM|PM] [key] value value ...`: the Python parser reads the
 * table's header and gives a Table the layout it found (how many values, whether a key column
 * comes first, which columns must lie in a range, whether a decimal comma is a number), and
 * Table.run() then reads rows from the text until the first line it cannot vouch for, folding
 * each into per-key running aggregates: count, sum, min, max, first, last and the downsampled
 * chart points of ostable.Series, per column. A line of any other shape (a prompt, a journal
 * prefix, a wrapped or cut row, a value out of range, a decimal comma where the format takes
 * none, text beyond ASCII, `Average:` rows, another header) stops the run, and the Python
 * reader, which stays the reference, reads it: tests compare the evidence with this core on and
 * off.
 *
 * Two ways to fold, one reader:
 *   sar:    every row goes straight into its key's series (ostable.Series, bit for bit: the same
 *           float operations in the same order); Python's own rows are added with Table.add, so
 *           a section has one store.
 *   mpstat: rows are grouped into intervals (a group ends at a new clock label, a key seen twice,
 *           or the interval header `clock CPU %usr ...` repeated, which `tail` describes); a
 *           group's rows are added to the sums when the next group starts, as _Totals.add does.
 *           The parser hands its state over (load/open/put) and takes it back (export).
 *   iostat: rows mode (rows_init): `device value ...` rows without a clock, each made into the
 *           stored columns as _device_row and _derive make a row, and added at once to the
 *           device's series; the parser opens the Table's report (report()) when a report it
 *           knows will be counted starts, so a device seen twice ends the run (seen()).
 *   vmstat: sheet mode (sheet_init): rows of numbers only, one per sample, in one series per
 *           column (key ""), and the lines between snapshots read here too: OSWatcher's `zzz`
 *           marker (the next row is a fresh vmstat's since-boot row, left out) and the group and
 *           column header lines the parser has already read once (know()), which repeat above
 *           every snapshot; with -t each row's date and time is its label. The parser pushes its state in (state()) and takes the counts, the
 *           labels and the last rows out (sheet()); its own rows go in with add().
 */
#include "syscore.h"

#include <math.h>
#include <stdlib.h>

#define POINTS 240 /* ostable.POINTS */
#define LABEL_MAX 40
#define SHEET_ROWS 5  /* vmstat.ROWS_KEPT */
#define SHEET_KNOWN 8 /* header lines a sheet remembers */
#define SHEET_LABEL 160 /* vmstat's labels: 40 characters, up to 4 bytes each in UTF-8 */

typedef struct {
    long long n, step, k;
    double total, low, high, first, last, acc;
    double *pts;
    int npts;
} Ser;

typedef struct {
    char *name;
    Py_ssize_t nn;
    uint64_t hash;
    int points;       /* this key's series keep chart points */
    Ser *ser;         /* ncols */
    int *order, norder; /* columns in the order first added (dict order of the Python store) */
    unsigned char *seen;
    int in_group;     /* grouped: 1 + its place in the open group, 0: not in it */
    long long stamp;  /* rows mode: the report this key last had a row in (0: none) */
    PyObject *names;  /* proc mode: (command shown, pid[/tid]) of the key's first row */
} TKey;

typedef struct {
    PyObject_HEAD
    int ncols, keyed, key_int, comma, grouped, points_mode, max_keys, max_group, check_clock;
    Py_ssize_t max_line;
    double *lo, *hi;
    char **tail;
    Py_ssize_t *tail_n;
    int ntail;
    TKey *keys;
    int nkeys, capkeys;
    int *tab;
    size_t tabcap;
    /* grouped: the open group */
    int has_group, ngroup, group_keys;
    int *group;      /* key indexes, in row order */
    double *gvals;   /* ncols per group row */
    char label[LABEL_MAX + 1];
    int label_n;
    long long groups, headers;
    /* rows mode (iostat's device rows: `key value ...`, no clock): see Table_init */
    int rows, nin, util, max_report, report_rows;
    long long report;
    unsigned char *skip;   /* nin: a column printed but not read */
    double *fac;           /* nin: the factor to the canonical unit */
    int *ops;              /* ncols * 5: how each stored column is made from the row */
    unsigned char *colpts; /* ncols: the column keeps chart points */
    /* proc mode (pidstat and prstat rows into ostable.ProcTable): see proc_layout */
    int proc, pmode, ptok, cpu_m, usr_c, sys_c;
    int pcode[64], pcol[64];
    long long dropped;
    int topm; /* top mode: see top_run */
    /* sheet mode (vmstat: a row of numbers per sample; see sheet_init) */
    int sheet, sh_expect, sh_hold, sh_key, sh_stamp;
    char sh_label[SHEET_LABEL + 1];
    int sh_label_n;
    long long sh_samples, sh_boot, sh_snaps, sh_headers; /* since the last sheet() */
    char sh_first[SHEET_LABEL + 1], sh_last[SHEET_LABEL + 1];
    int sh_first_n, sh_last_n; /* -1: no labelled sample since the last sheet() */
    double *sh_ring;           /* SHEET_ROWS * ncols: the last rows added since sheet() */
    char sh_ring_lab[SHEET_ROWS][SHEET_LABEL + 1];
    int sh_ring_lab_n[SHEET_ROWS], sh_ring_n, sh_ring_head;
    char *known[SHEET_KNOWN]; /* header lines the parser read once, as pasted */
    Py_ssize_t known_n[SHEET_KNOWN];
    int known_code[SHEET_KNOWN], nknown;
} Table;

/* -- keys ------------------------------------------------------------------------------------- */

static int key_points(Table *t, const char *p, Py_ssize_t n)
{
    if (t->points_mode == 1)
        return 1;
    if (t->points_mode == 2)
        return (n == 3 && memcmp(p, "all", 3) == 0) || (n == 2 && memcmp(p, "-1", 2) == 0) ||
               (n == 0);
    return 0;
}

static int tab_grow(Table *t)
{
    size_t cap = t->tabcap ? t->tabcap * 2 : 64;
    int *tab = PyMem_Malloc(cap * sizeof(int));
    if (tab == NULL)
        return -1;
    for (size_t i = 0; i < cap; i++)
        tab[i] = -1;
    for (int k = 0; k < t->nkeys; k++) {
        size_t h = (size_t)t->keys[k].hash & (cap - 1);
        while (tab[h] >= 0)
            h = (h + 1) & (cap - 1);
        tab[h] = k;
    }
    PyMem_Free(t->tab);
    t->tab = tab;
    t->tabcap = cap;
    return 0;
}

/* the key's index; -2: a new key past max_keys; -1: out of memory */
static int key_get(Table *t, const char *p, Py_ssize_t n, int create)
{
    uint64_t h = hash_bytes(0x6a09e667f3bcc908ULL, p, n);
    if (t->tabcap) {
        size_t i = (size_t)h & (t->tabcap - 1);
        while (t->tab[i] >= 0) {
            TKey *k = &t->keys[t->tab[i]];
            if (k->hash == h && k->nn == n && memcmp(k->name, p, (size_t)n) == 0)
                return t->tab[i];
            i = (i + 1) & (t->tabcap - 1);
        }
    }
    if (!create || t->nkeys >= t->max_keys)
        return -2;
    if ((size_t)(t->nkeys + 1) * 2 > t->tabcap && tab_grow(t) < 0)
        return -1;
    if (t->nkeys == t->capkeys) {
        int cap = t->capkeys ? t->capkeys * 2 : 16;
        TKey *keys = PyMem_Realloc(t->keys, (size_t)cap * sizeof(TKey));
        if (keys == NULL)
            return -1;
        t->keys = keys;
        t->capkeys = cap;
    }
    TKey *k = &t->keys[t->nkeys];
    memset(k, 0, sizeof(TKey));
    k->name = PyMem_Malloc((size_t)n + 1);
    k->ser = PyMem_Calloc((size_t)t->ncols, sizeof(Ser));
    k->order = PyMem_Calloc((size_t)t->ncols, sizeof(int));
    k->seen = PyMem_Calloc((size_t)t->ncols, 1);
    if (!k->name || !k->ser || !k->order || !k->seen) {
        PyMem_Free(k->name);
        PyMem_Free(k->ser);
        PyMem_Free(k->order);
        PyMem_Free(k->seen);
        return -1;
    }
    memcpy(k->name, p, (size_t)n);
    k->name[n] = 0;
    k->nn = n;
    k->hash = h;
    k->points = key_points(t, p, n);
    for (int c = 0; c < t->ncols; c++) {
        k->ser[c].step = 1;
        k->ser[c].low = Py_HUGE_VAL;
        k->ser[c].high = -Py_HUGE_VAL;
    }
    size_t i = (size_t)h & (t->tabcap - 1);
    while (t->tab[i] >= 0)
        i = (i + 1) & (t->tabcap - 1);
    t->tab[i] = t->nkeys;
    return t->nkeys++;
}

/* ostable.Series.add, the same operations in the same order */
static int ser_add(Ser *s, double v, int points)
{
    s->n++;
    s->total += v;
    if (v < s->low)
        s->low = v;
    if (v > s->high)
        s->high = v;
    if (s->n == 1)
        s->first = v;
    s->last = v;
    if (!points)
        return 0;
    s->acc += v;
    s->k++;
    if (s->k == s->step) {
        if (s->pts == NULL && (s->pts = PyMem_Malloc(POINTS * sizeof(double))) == NULL)
            return -1;
        s->pts[s->npts++] = s->acc / (double)s->k;
        s->acc = 0.0;
        s->k = 0;
        if (s->npts >= POINTS) {
            int m = 0;
            for (int i = 0; i < s->npts - 1; i += 2)
                s->pts[m++] = (s->pts[i] + s->pts[i + 1]) / 2;
            s->npts = m;
            s->step *= 2;
        }
    }
    return 0;
}

static int key_add(Table *t, int ki, const double *vals, const unsigned char *have)
{
    TKey *k = &t->keys[ki];
    for (int c = 0; c < t->ncols; c++) {
        if (have && !have[c])
            continue;
        if (!k->seen[c]) {
            k->seen[c] = 1;
            k->order[k->norder++] = c;
        }
        if (ser_add(&k->ser[c], vals[c], k->points && (!t->colpts || t->colpts[c])) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* -- groups (mpstat's intervals) ---------------------------------------------------------------- */

static int group_commit(Table *t)
{
    if (t->has_group && t->ngroup) {
        for (int g = 0; g < t->ngroup; g++)
            if (key_add(t, t->group[g], t->gvals + (size_t)g * t->ncols, NULL) < 0)
                return -1;
        t->groups++;
    }
    for (int g = 0; g < t->ngroup; g++)
        t->keys[t->group[g]].in_group = 0;
    t->ngroup = 0;
    t->group_keys = 0;
    t->has_group = 0;
    return 0;
}

static int group_open(Table *t, const char *label, Py_ssize_t n)
{
    if (group_commit(t) < 0)
        return -1;
    if (n > LABEL_MAX)
        n = LABEL_MAX; /* callers pass at most LABEL_MAX */
    memcpy(t->label, label, (size_t)n);
    t->label[n] = 0;
    t->label_n = (int)n;
    t->has_group = 1;
    return 0;
}

static int group_put(Table *t, int ki, const double *vals)
{
    if (t->ngroup >= t->max_group + 1) /* never: run() stops first */
        return 0;
    t->keys[ki].in_group = t->ngroup + 1;
    t->group[t->ngroup] = ki;
    memcpy(t->gvals + (size_t)t->ngroup * t->ncols, vals, (size_t)t->ncols * sizeof(double));
    t->ngroup++;
    return 0;
}

/* -- reading a row ------------------------------------------------------------------------------ */

static inline Py_ssize_t skip_ws(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    while (i < e && is_ws(s[i]))
        i++;
    return i;
}

static inline Py_ssize_t skip_tok(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    while (i < e && !is_ws(s[i]))
        i++;
    return i;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* One number of s[i..e) up to a blank or the end: `-?\d{1,maxint}([.] or [.,] \d{1,maxfrac})?`.
 * comma 0: no decimal comma; 1: any (mpstat's _NUMBER); 2: as pasted.number reads one, so not
 * `\d{1,3},\d{3}`, which it reads as a thousands group (the Python reader takes that row).
 * Returns the end, or -1 if it is not one. The value is Python's float() of the text (with a
 * decimal comma read as a point): exact when the digits fit 15 (M / 10^f, both exact, the one
 * division correctly rounded), else strtod, correctly rounded too. */
static Py_ssize_t read_num(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, int comma,
                           int maxint, int maxfrac, double *out)
{
    Py_ssize_t start = i;
    int neg = 0;
    if (i < e && s[i] == '-') {
        neg = 1;
        i++;
    }
    uint64_t m = 0;
    int nint = 0, nfrac = 0;
    while (i < e && is_digit(s[i])) {
        if (nint < 19)
            m = m * 10 + (uint64_t)(s[i] - '0');
        nint++;
        i++;
    }
    if (nint == 0 || nint > maxint)
        return -1;
    if (i < e && (s[i] == '.' || (comma && s[i] == ','))) {
        i++;
        while (i < e && is_digit(s[i])) {
            if (nint + nfrac < 19)
                m = m * 10 + (uint64_t)(s[i] - '0');
            nfrac++;
            i++;
        }
        if (nfrac == 0 || nfrac > maxfrac)
            return -1;
        if (comma == 2 && s[i - nfrac - 1] == ',' && nint <= 3 && nfrac == 3)
            return -1;
    }
    if (i < e && !is_ws(s[i]))
        return -1;
    double v;
    if (nint + nfrac <= 15) {
        v = (double)m / POW10[nfrac];
    } else {
        char buf[64];
        Py_ssize_t n = i - start;
        if (n >= (Py_ssize_t)sizeof(buf))
            return -1;
        memcpy(buf, s + start, (size_t)n);
        buf[n] = 0;
        for (Py_ssize_t j = 0; j < n; j++)
            if (buf[j] == ',')
                buf[j] = '.';
        v = strtod(buf, NULL);
        neg = 0;
    }
    *out = neg ? -v : v;
    return i;
}

/* ostable.table_row: `lead` tokens, then a rest of only number characters longer than 3 */
static int table_row(const unsigned char *s, Py_ssize_t e, int lead)
{
    Py_ssize_t i = skip_ws(s, 0, e);
    for (int k = 0; k < lead; k++) {
        if (i >= e)
            return 0;
        i = skip_tok(s, i, e);
        i = skip_ws(s, i, e);
    }
    if (i >= e || e - i <= 3)
        return 0;
    for (; i < e; i++) {
        unsigned char c = s[i];
        if (!(is_digit(c) || c == '.' || c == ',' || c == '-' || is_ws(c)))
            return 0;
    }
    return 1;
}

static inline int two(const unsigned char *s) { return (s[0] - '0') * 10 + (s[1] - '0'); }

/* `\d\d:\d\d:\d\d` at s (n bytes available) */
static inline int clock_at(const unsigned char *s, Py_ssize_t n)
{
    return n >= 8 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':' && is_digit(s[3]) &&
           is_digit(s[4]) && s[5] == ':' && is_digit(s[6]) && is_digit(s[7]);
}

/* Is s[0..e) the interval header (`clock [AM|PM] CPU %usr ...`, the tail)? Sets the label. */
static int header_line(Table *t, const unsigned char *s, Py_ssize_t e, Py_ssize_t *lab_e)
{
    if (!t->ntail)
        return 0;
    Py_ssize_t i = skip_ws(s, 0, e), c0 = i;
    /* _TIME: \d{1,2}:\d{2}:\d{2} as a whole token */
    Py_ssize_t j = i;
    while (j < e && is_digit(s[j]))
        j++;
    if (j - i < 1 || j - i > 2 || j + 6 > e || s[j] != ':' || !is_digit(s[j + 1]) ||
        !is_digit(s[j + 2]) || s[j + 3] != ':' || !is_digit(s[j + 4]) || !is_digit(s[j + 5]))
        return 0;
    j += 6;
    if (j >= e || !is_ws(s[j]))
        return 0;
    Py_ssize_t le = j;
    i = skip_ws(s, j, e);
    if (e - i >= 2 && (s[i] == 'A' || s[i] == 'P') && s[i + 1] == 'M' &&
        (i + 2 == e || is_ws(s[i + 2]))) {
        le = i + 2;
        i = skip_ws(s, i + 2, e);
    }
    for (int k = 0; k < t->ntail; k++) {
        Py_ssize_t te = skip_tok(s, i, e);
        if (te - i != t->tail_n[k] || memcmp(s + i, t->tail[k], (size_t)(te - i)) != 0)
            return 0;
        i = skip_ws(s, te, e);
    }
    if (i != e)
        return 0;
    *lab_e = le;
    (void)c0;
    return 1;
}

/* -- rows mode: iostat's device rows ----------------------------------------------------------- */

/* A device name as iostat's _DEV takes it and as nothing in pasted.unpaste would touch: ASCII
 * [A-Za-z0-9_:/.@+~,-], starting with a letter, `_` or `/` (so not a number), not ending in `:`
 * (a pdsh host prefix), without `evice` (the Python reader's header test). */
static int dev_name(const unsigned char *s, Py_ssize_t n)
{
    if (n < 1 || n > 128)
        return 0;
    unsigned char c0 = s[0];
    if (!(is_word(c0) && !is_digit(c0)) && c0 != '/')
        return 0;
    if (s[n - 1] == ':')
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (!(is_word(c) || c == ':' || c == '/' || c == '.' || c == '@' || c == '+' || c == '~' ||
              c == ',' || c == '-'))
            return 0;
    }
    for (Py_ssize_t i = 0; i + 5 <= n; i++)
        if (memcmp(s + i, "evice", 5) == 0)
            return 0;
    return 1;
}

/* One device row `key v1 .. v_nin` into the stored columns (iostat's _device_row and _derive,
 * the same float operations in the same order). 1: read into out; 0: not one the core vouches
 * for (the Python reader takes it: it may count it malformed). */
static int device_row(Table *t, const unsigned char *l, Py_ssize_t n, Py_ssize_t *key_s,
                      Py_ssize_t *key_n, double *out)
{
    double row[64];
    Py_ssize_t i = skip_ws(l, 0, n);
    Py_ssize_t ke = skip_tok(l, i, n);
    if (ke >= n || !dev_name(l + i, ke - i))
        return 0;
    *key_s = i;
    *key_n = ke - i;
    i = skip_ws(l, ke, n);
    int c = 0;
    while (i < n && c < t->nin) {
        double v;
        Py_ssize_t ve = read_num(l, i, n, 2, 15, 15, &v);
        if (ve < 0)
            return 0;
        row[c] = t->skip[c] ? 0.0 : v * t->fac[c];
        if (!t->skip[c] && row[c] < 0)
            return 0; /* the Python reader counts it malformed */
        c++;
        i = skip_ws(l, ve, n);
    }
    if (c != t->nin || i != n)
        return 0;
    if (t->util >= 0 && !(row[t->util] >= 0 && row[t->util] <= 100.5 + 50))
        return 0;
    if (!table_row(l, n, 1)) /* iostat's claims: what the detector hands over */
        return 0;
    for (int o = 0; o < t->ncols; o++) {
        const int *op = t->ops + (size_t)o * 5;
        switch (op[0]) {
        case 0:
        case 3:
            out[o] = row[op[1]];
            break;
        case 1: {
            double r = op[3] >= 0 ? row[op[3]] : 0.0, w = op[4] >= 0 ? row[op[4]] : 0.0;
            double ra = row[op[1]], wa = row[op[2]];
            out[o] = r + w > 0 ? (ra * r + wa * w) / (r + w) : (wa > ra ? wa : ra);
            break;
        }
        default:
            out[o] = (op[1] >= 0 ? row[op[1]] : 0.0) + (op[2] >= 0 ? row[op[2]] : 0.0);
        }
    }
    return 1;
}

/* run() in rows mode: device rows of the open report until a line of any other shape, a device
 * the report already has, a device past max_keys or a full report */
static PyObject *rows_run(Table *t, const unsigned char *s, Py_ssize_t pos, Py_ssize_t endpos)
{
    double out[64];
    long long taken = 0;
    while (pos < endpos) {
        Py_ssize_t e, le;
        if (!line_at(s, pos, endpos, t->max_line, &e, &le))
            break;
        const unsigned char *l = s + pos;
        Py_ssize_t n = le - pos, ks, kn;
        if (!plain_line(l, n) || t->report_rows >= t->max_report || !device_row(t, l, n, &ks, &kn, out))
            break;
        int ki = key_get(t, (const char *)l + ks, kn, 1);
        if (ki == -1)
            return PyErr_NoMemory();
        if (ki == -2 || t->keys[ki].stamp == t->report)
            break;
        if (key_add(t, ki, out, NULL) < 0)
            return NULL;
        t->keys[ki].stamp = t->report;
        t->report_rows++;
        taken++;
        pos = e + 1;
    }
    return Py_BuildValue("(nLOO)", pos, taken, Py_None, Py_None);
}

/* -- proc mode: pidstat and prstat rows (ostable.ProcTable) ----------------------------------------
 *
 * The per-process tables: each row is a process (or thread/LWP) with its values, folded into the
 * key's series (ostable.ProcTable.add: no chart points, the columns in the order the key first
 * had them) and the key's first (command, pid) kept. The parser gives the header's layout with
 * proc(): per token its code (0 text, not read; 1 the pid, 2 pidstat's TID, 3 a number as
 * pasted.number reads it, 4 a size as ostable.size_kb reads it, 5 a microstate count as
 * prstat's _count reads it) and its stored column (-1: read only to check it), and the mode:
 *   1 pidstat: `clock [AM|PM] tokens... command words`, key p<pid> or t<tid> (`|__` thread rows)
 *   2/3 prstat: `pid tokens... name/lwp`, key pid (2) or pid/lwp (3, -L)
 * Rows the parser's claims() would not take, or that its feed would read otherwise (a decimal
 * comma, a thousands group, a value out of range, a cut row, text beyond ASCII) stop the run;
 * the Python reader, the reference, reads them and adds them with padd(). */

/* pasted.number of s[i..e), the subset read here: -?\d{1,15}(.\d{1,15})? and, when pct, a `%`
 * after it (not `\d{1,3}.\d{3}%`, which number reads as a thousands group). 1: read. */
static int proc_num(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, int pct, double *v)
{
    if (pct && e - i > 1 && s[e - 1] == '%') {
        e--;
        Py_ssize_t dot = -1;
        for (Py_ssize_t j = i; j < e; j++)
            if (s[j] == '.')
                dot = j;
        Py_ssize_t lead = dot - i - (s[i] == '-');
        if (dot >= 0 && e - dot - 1 == 3 && lead >= 1 && lead <= 3)
            return 0;
    }
    return read_num(s, i, e, 0, 15, 15, v) == e;
}

static const char SIZE_UNITS[] = "KMGTP";
static const double SIZE_KB[] = {1.0, 1024.0, 1024.0 * 1024.0, 1024.0 * 1024.0 * 1024.0,
                                 1024.0 * 1024.0 * 1024.0 * 1024.0};

static int proc_cell(int code, const unsigned char *s, Py_ssize_t i, Py_ssize_t e, double *v)
{
    if (code == 3)
        return proc_num(s, i, e, 1, v);
    if (code == 4) { /* size_kb: \d+(.\d+)?[KMGTP]?B? (upper case here), times its factor */
        if (e > i && s[e - 1] == 'B')
            e--;
        double f = 1.0;
        if (e > i) {
            const char *u = memchr(SIZE_UNITS, s[e - 1], 5);
            if (u != NULL) {
                f = SIZE_KB[u - SIZE_UNITS];
                e--;
            }
        }
        if (e <= i || s[i] == '-' || read_num(s, i, e, 0, 15, 15, v) != e)
            return 0;
        *v = *v * f;
        return 1;
    }
    if (code == 5) { /* _count: a number, or one with K or M after it */
        if (e - i > 1 && (s[e - 1] == 'K' || s[e - 1] == 'M')) {
            double f = s[e - 1] == 'K' ? 1e3 : 1e6;
            if (read_num(s, i, e - 1, 0, 15, 15, v) != e - 1)
                return 0;
            *v = *v * f;
            return 1;
        }
        return read_num(s, i, e, 0, 15, 15, v) == e;
    }
    return 0;
}

static int all_digits(const unsigned char *s, Py_ssize_t n)
{
    if (n < 1)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!is_digit(s[i]))
            return 0;
    return 1;
}

/* a key's values in the row's order (ProcTable.add: the dict's order), no chart points */
static int proc_put(Table *t, int ki, const int *cols, const double *vals, int n)
{
    TKey *k = &t->keys[ki];
    for (int j = 0; j < n; j++) {
        int c = cols[j];
        if (!k->seen[c]) {
            k->seen[c] = 1;
            k->order[k->norder++] = c;
        }
        ser_add(&k->ser[c], vals[j], 0);
    }
    return 0;
}

/* the key's index, its names set when it is new; -2: dropped (past max_keys); -1: error */
static int proc_key(Table *t, const char *key, Py_ssize_t kn, const char *shown, Py_ssize_t sn,
                    const char *ident, Py_ssize_t in)
{
    int ki = key_get(t, key, kn, 1);
    if (ki == -1) {
        PyErr_NoMemory();
        return -1;
    }
    if (ki == -2) {
        t->dropped++;
        return -2;
    }
    if (t->keys[ki].names == NULL) {
        t->keys[ki].names = Py_BuildValue("(s#s#)", shown, sn, ident, in);
        if (t->keys[ki].names == NULL)
            return -1;
    }
    return ki;
}

#define PROC_ID 200 /* a pid or tid longer than this is left to the Python reader */
#define PROC_CMD 200 /* pidstat keeps the command's first 200 characters */

/* One row at l[0..n); 1: read and added, 0: not one the core vouches for, -1: error.
 * label/lab_n: pidstat's clock label (out). */
static int proc_row(Table *t, const unsigned char *l, Py_ssize_t n, Py_ssize_t *lab_n)
{
    Py_ssize_t ts[66], te[66];
    int nt = 0;
    Py_ssize_t i = 0;
    if (t->pmode == 1) {
        /* pidstat's claims (_ROW): `\d\d:\d\d:\d\d( [AP]M)?\s+\d+\s+\S.*\s(?!\d+\s*$)\S+\s*$` */
        if (!clock_at(l, n) || n < 10 || !is_ws(l[8]))
            return 0;
        if (n > 10 && l[10] == 'T')
            return 0; /* ostable.clean would read an ISO stamp there */
        int h = two(l), mi = two(l + 3), sec = two(l + 6);
        *lab_n = 8;
        i = 8;
        if (n > 11 && l[8] == ' ' && (l[9] == 'A' || l[9] == 'P') && l[10] == 'M' &&
            is_ws(l[11])) {
            h = (h % 12) + (l[9] == 'P' ? 12 : 0);
            *lab_n = 11;
            i = 11;
        }
        if (h > 23 || mi > 59 || sec > 60)
            return 0;
    } else {
        /* prstat's claims (_ROW): the pid first, two tokens more, the last ending in a slash
         * and digits; clean() keeps the line */
        i = skip_ws(l, 0, n);
        if (n - i > 10 && l[i + 10] == 'T')
            return 0;
    }
    i = skip_ws(l, i, n);
    while (i < n) {
        if (nt == 66)
            return 0;
        ts[nt] = i;
        i = skip_tok(l, i, n);
        te[nt++] = i;
        i = skip_ws(l, i, n);
    }
    int need = t->ptok + 1;
    if (t->pmode == 1 ? nt < need : nt != need)
        return 0;
    if (nt < 3 || !all_digits(l + ts[0], te[0] - ts[0]))
        return 0; /* claims: a number first (after the clock), then two tokens at least */
    const unsigned char *last = l + ts[nt - 1];
    Py_ssize_t lastn = te[nt - 1] - ts[nt - 1];
    if (t->pmode == 1 && all_digits(last, lastn))
        return 0; /* claims: the command does not end in a number */
    double vals[66];
    int cols[66], nv = 0, usr = -1, sys = -1;
    Py_ssize_t pid_s = -1, pid_n = 0, tid_s = -1, tid_n = 0;
    for (int j = 0; j < t->ptok; j++) {
        int code = t->pcode[j];
        const unsigned char *p = l + ts[j];
        Py_ssize_t pn = te[j] - ts[j];
        if (code == 0)
            continue;
        if (code == 1 || code == 2) {
            if (pn > PROC_ID || !(all_digits(p, pn) || (t->pmode == 1 && pn == 1 && p[0] == '-')))
                return 0;
            if (code == 1)
                pid_s = ts[j], pid_n = pn;
            else
                tid_s = ts[j], tid_n = pn;
            continue;
        }
        double v;
        if (!proc_cell(code, l, ts[j], te[j], &v))
            return 0;
        int c = t->pcol[j];
        if (c < 0)
            continue;
        if (!(v >= t->lo[c] && v <= t->hi[c]))
            return 0;
        if (c == t->usr_c)
            usr = nv;
        if (c == t->sys_c)
            sys = nv;
        cols[nv] = c;
        vals[nv++] = v;
    }
    if (t->cpu_m >= 0 && usr >= 0 && sys >= 0) {
        cols[nv] = t->cpu_m;
        vals[nv] = vals[usr] + vals[sys];
        nv++;
    }
    char key[PROC_ID + 2 + PROC_ID + 1], shown[2 * PROC_CMD + 4];
    Py_ssize_t kn, sn;
    const char *ident;
    Py_ssize_t in;
    if (t->pmode == 1) {
        if (pid_s < 0)
            return 0;
        char cmd[PROC_CMD + 1];
        Py_ssize_t cn = 0;
        for (int j = t->ptok; j < nt && cn < PROC_CMD; j++) {
            if (j > t->ptok)
                cmd[cn++] = ' ';
            for (Py_ssize_t q = ts[j]; q < te[j] && cn < PROC_CMD; q++)
                cmd[cn++] = (char)l[q];
        }
        int thread = tid_s >= 0 && !(tid_n == 1 && l[tid_s] == '-') && cn >= 3 &&
                     memcmp(cmd, "|__", 3) == 0;
        Py_ssize_t a = cn >= 3 && memcmp(cmd, "|__", 3) == 0 ? 3 : 0, b = cn;
        while (a < b && cmd[a] == ' ')
            a++;
        while (b > a && cmd[b - 1] == ' ')
            b--;
        if (a == b) {
            cmd[0] = '?';
            a = 0;
            b = 1;
        }
        memcpy(shown, cmd + a, (size_t)(b - a));
        sn = b - a;
        if (thread) {
            shown[sn++] = '/';
            memcpy(shown + sn, l + tid_s, (size_t)tid_n);
            sn += tid_n;
            key[0] = 't';
            memcpy(key + 1, l + tid_s, (size_t)tid_n);
            kn = tid_n + 1;
            ident = (const char *)l + tid_s;
            in = tid_n;
        } else {
            key[0] = 'p';
            memcpy(key + 1, l + pid_s, (size_t)pid_n);
            kn = pid_n + 1;
            ident = (const char *)l + pid_s;
            in = pid_n;
        }
    } else {
        /* prstat: `name/lwp` last (claims: it ends in /digits), rpartition at the last slash */
        Py_ssize_t sl = lastn - 1;
        while (sl >= 0 && last[sl] != '/')
            sl--;
        if (sl < 0 || sl == lastn - 1 || !all_digits(last + sl + 1, lastn - sl - 1) ||
            lastn > PROC_CMD)
            return 0;
        pid_s = ts[0];
        pid_n = te[0] - ts[0];
        if (pid_n > PROC_ID)
            return 0;
        Py_ssize_t name_n = sl, lwp_s = sl + 1, lwp_n = lastn - sl - 1;
        if (name_n == 0) { /* `/5`: name, lwp = last, "" */
            name_n = lastn;
            lwp_s = lastn;
            lwp_n = 0;
        }
        memcpy(key, l + pid_s, (size_t)pid_n);
        kn = pid_n;
        if (t->pmode == 3) {
            key[kn++] = '/';
            memcpy(key + kn, last + lwp_s, (size_t)lwp_n);
            kn += lwp_n;
            memcpy(shown, last, (size_t)name_n);
            shown[name_n] = '/';
            memcpy(shown + name_n + 1, last + lwp_s, (size_t)lwp_n);
            sn = name_n + 1 + lwp_n;
            ident = key;
            in = kn;
        } else {
            memcpy(shown, last, (size_t)name_n);
            sn = name_n;
            ident = key;
            in = kn;
        }
    }
    int ki = proc_key(t, key, kn, shown, sn, ident, in);
    if (ki == -1)
        return -1;
    if (ki >= 0)
        proc_put(t, ki, cols, vals, nv);
    return 1;
}

/* run(text, pos, endpos, last label) in proc mode -> (pos, rows taken, new sample labels,
 * the last label or None) */
static PyObject *proc_run(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "run(text, pos, endpos, last_label)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), endpos = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    if (endpos > len)
        endpos = len;
    if (t->pmode == 0 || PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || pos < 0 ||
        pos >= endpos)
        return Py_BuildValue("(niiO)", pos, 0, 0, Py_None);
    char label[LABEL_MAX + 1];
    Py_ssize_t label_n;
    const char *lp = PyUnicode_AsUTF8AndSize(args[3], &label_n);
    if (lp == NULL)
        return NULL;
    if (label_n > LABEL_MAX)
        label_n = -1; /* no row's label is that long: the first row is a new sample */
    else
        memcpy(label, lp, (size_t)label_n);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    long long taken = 0, samples = 0;
    int moved = 0;
    while (pos < endpos) {
        Py_ssize_t e, le;
        if (!line_at(s, pos, endpos, t->max_line, &e, &le))
            break;
        const unsigned char *l = s + pos;
        Py_ssize_t n = le - pos, lab_n = 0;
        if (n == 0 || !plain_line(l, n))
            break;
        int r = proc_row(t, l, n, &lab_n);
        if (r < 0)
            return NULL;
        if (r == 0)
            break;
        if (t->pmode == 1 && (lab_n != label_n || memcmp(l, label, (size_t)lab_n) != 0)) {
            memcpy(label, l, (size_t)lab_n);
            label_n = lab_n;
            samples++;
            moved = 1;
        }
        taken++;
        pos = e + 1;
    }
    if (!moved)
        return Py_BuildValue("(nLLO)", pos, taken, samples, Py_None);
    return Py_BuildValue("(nLLs#)", pos, taken, samples, label, label_n);
}

static int int_seq(PyObject *seq, int n, int *out)
{
    PyObject *fast = PySequence_Fast(seq, "a sequence of int");
    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "codes and cols: one per token");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* proc(codes, cols, mode, cpu_m, usr, sys): makes this Table a proc table (run() reads rows of
 * the layout; mode 0: none, the Python reader reads every row); cpu_m: the column usr + sys
 * goes to (prstat -m), or -1 */
static PyObject *Table_proc(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    int mode, cpu_m, usr, sys;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "proc(codes, cols, mode, cpu_m, usr, sys)");
        return NULL;
    }
    Py_ssize_t n = PyObject_Length(args[0]);
    if (n < 0)
        return NULL;
    mode = (int)PyLong_AsLong(args[2]);
    cpu_m = (int)PyLong_AsLong(args[3]);
    usr = (int)PyLong_AsLong(args[4]);
    sys = (int)PyLong_AsLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (n > 64 || mode < 0 || mode > 3 || t->rows || t->grouped) {
        PyErr_SetString(PyExc_ValueError, "proc: at most 64 tokens, mode 0-3, not rows/grouped");
        return NULL;
    }
    int codes[64], cols[64];
    if (int_seq(args[0], (int)n, codes) < 0 || int_seq(args[1], (int)n, cols) < 0)
        return NULL;
    for (int i = 0; i < n; i++)
        if (codes[i] < 0 || codes[i] > 5 || cols[i] >= t->ncols ||
            (codes[i] >= 3 && cols[i] < -1)) {
            PyErr_SetString(PyExc_ValueError, "proc: a bad code or column");
            return NULL;
        }
    if (cpu_m >= t->ncols || usr >= t->ncols || sys >= t->ncols) {
        PyErr_SetString(PyExc_ValueError, "proc: a bad column");
        return NULL;
    }
    memcpy(t->pcode, codes, sizeof(int) * (size_t)n);
    memcpy(t->pcol, cols, sizeof(int) * (size_t)n);
    t->ptok = (int)n;
    t->pmode = mode;
    t->cpu_m = cpu_m;
    t->usr_c = usr;
    t->sys_c = sys;
    t->proc = 1;
    Py_RETURN_NONE;
}

/* padd(key, shown, ident, cols, values): a row the Python reader read -> kept (bool) */
static PyObject *Table_padd(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1]) ||
        !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "padd(key, shown, ident, cols, values)");
        return NULL;
    }
    Py_ssize_t n = PyObject_Length(args[3]);
    if (n < 0)
        return NULL;
    if (n > t->ncols) {
        PyErr_SetString(PyExc_ValueError, "padd: more values than columns");
        return NULL;
    }
    int cols[64];
    double vals[64];
    if (int_seq(args[3], (int)n, cols) < 0)
        return NULL;
    PyObject *fast = PySequence_Fast(args[4], "values");
    if (fast == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "padd: one value per column");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        vals[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if ((vals[i] == -1.0 && PyErr_Occurred()) || cols[i] < 0 || cols[i] >= t->ncols) {
            Py_DECREF(fast);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "padd: a bad column");
            return NULL;
        }
    }
    Py_DECREF(fast);
    Py_ssize_t kn, sn, in;
    const char *k = PyUnicode_AsUTF8AndSize(args[0], &kn);
    const char *sh = k ? PyUnicode_AsUTF8AndSize(args[1], &sn) : NULL;
    const char *id = sh ? PyUnicode_AsUTF8AndSize(args[2], &in) : NULL;
    if (id == NULL)
        return NULL;
    int ki = key_get(t, k, kn, 1);
    if (ki == -1)
        return PyErr_NoMemory();
    if (ki == -2) {
        t->dropped++;
        Py_RETURN_FALSE;
    }
    if (t->keys[ki].names == NULL) {
        t->keys[ki].names = PyTuple_Pack(2, args[1], args[2]);
        if (t->keys[ki].names == NULL)
            return NULL;
    }
    proc_put(t, ki, cols, vals, (int)n);
    Py_RETURN_TRUE;
}

/* procs() -> ([(shown, ident) per key, in key order], rows dropped past max_keys) */
static PyObject *Table_procs(Table *t, PyObject *unused)
{
    PyObject *names = PyList_New(t->nkeys);
    if (names == NULL)
        return NULL;
    for (int ki = 0; ki < t->nkeys; ki++) {
        PyObject *nm = t->keys[ki].names ? t->keys[ki].names : Py_None;
        Py_INCREF(nm);
        PyList_SET_ITEM(names, ki, nm);
    }
    return Py_BuildValue("(NL)", names, t->dropped);
}

/* -- top mode: a top capture's frames (top.py's _Frame) -------------------------------------------
 *
 * One Table holds a frame's rows: per command (the first word of COMMAND, 200 characters at most)
 * column 0 folds %CPU (its total is _Frame.proc_cpu, max(0.0, its high) proc_cpu_max) and column
 * 1 %MEM (proc_mem); a second Table (`states`, one column) counts the rows per state. The layout
 * comes with each run: the header's column count, where %CPU, %MEM and the state are, and the
 * header line itself. A run reads whole frames of procps top: the rows, the blank lines (when
 * the parser says feed would take them), the header line it was given, and the summary lines
 * feed reads without looking at anything else (`top - ... up`, `Tasks:`/`Threads:`/`Processes:`
 * with a total, `%Cpu(s):`/`Cpu(s):`/`%CpuN :`, `KiB|MiB|GiB|TiB Mem|Swap|Memory :`), which it
 * does not read: it hands the current frame's back as text, and the parser reads them only when
 * that frame's facts are wanted (a frame replaces the one before it, so the summary lines of
 * every other frame are never read). A `top -` line starts a new frame: the two Tables are
 * cleared. A row top's claims would not take, or that its feed would read otherwise (a number
 * pasted.number reads differently, a cut row, `N processes:`, text beyond ASCII), any other line
 * and any summary line in another shape stop the run; the parser then reads on in Python (the
 * rest of a frame's rows from the sums read back: export). */

static PyTypeObject TableType;

static void keys_free(Table *t)
{
    for (int i = 0; i < t->nkeys; i++) {
        TKey *k = &t->keys[i];
        for (int c = 0; c < t->ncols; c++)
            PyMem_Free(k->ser[c].pts);
        PyMem_Free(k->ser);
        PyMem_Free(k->order);
        PyMem_Free(k->seen);
        PyMem_Free(k->name);
        Py_XDECREF(k->names);
    }
    t->nkeys = 0;
    for (size_t i = 0; i < t->tabcap; i++)
        t->tab[i] = -1;
}

/* does l[0..n) hold w? (memmem is not in C99) */
static int holds(const unsigned char *l, Py_ssize_t n, const char *w)
{
    size_t k = strlen(w);
    for (const unsigned char *p = l; (p = memchr(p, w[0], (size_t)(n - (p - l)))) != NULL; p++)
        if ((size_t)(n - (p - l)) >= k && memcmp(p, w, k) == 0)
            return 1;
    return 0;
}

/* start_score's first test (_TOP_HINT): one of the words is in the line */
static int top_hint(const unsigned char *l, Py_ssize_t n)
{
    static const char *const words[] = {"top -",     "last pid", "Tasks", "Threads", "Processes",
                                        "Cpu",       "CPU states", "Mem", "PID"};
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
        if (holds(l, n, words[w]))
            return 1;
    return 0;
}

enum { TOP_NONE, TOP_FRAME, TOP_SUMMARY };

/* Is l[0..n) (printable ASCII, not blank, no longer than top.MAX_LINE) a summary line that
 * start_score scores 2 and feed reads (as _read) as the line it is, unpaste leaving it as it is?
 * TOP_FRAME: `top - ... up` (_TOP, a new frame); TOP_SUMMARY: Tasks, CPU or memory (_TASKS with
 * a total, _CPU but `CPU states`, _MEM with a unit); TOP_NONE: any other line, for the parser.
 * Each starts in the first column with a word unpaste's prefixes (syslog, `#`, `>`) cannot
 * start with, and each leaves the shapes _read tests before it unmatched. */
static int top_summary(const unsigned char *l, Py_ssize_t n)
{
    Py_ssize_t i;
    if (starts(l, 0, n, "top - ")) { /* _TOP: top\s+-\s+\S+\s+up\b */
        i = skip_ws(l, 6, n);
        Py_ssize_t j = skip_tok(l, i, n);
        if (j == i || j == n || !is_ws(l[j]))
            return TOP_NONE;
        j = skip_ws(l, j, n);
        if (!starts(l, j, n, "up") || (j + 2 < n && is_word(l[j + 2])))
            return TOP_NONE;
        return TOP_FRAME;
    }
    if (starts(l, 0, n, "Tasks:") || starts(l, 0, n, "Threads:") ||
        starts(l, 0, n, "Processes:")) { /* _TASKS: a digit after the colon, and `total` */
        const unsigned char *c = memchr(l, ':', (size_t)n);
        Py_ssize_t k = c - l + 1;
        int digit = 0;
        for (Py_ssize_t j = k; j < n && !digit; j++)
            digit = is_digit(l[j]);
        if (!digit || !holds(l + k, n - k, "total"))
            return TOP_NONE;
        return TOP_SUMMARY;
    }
    i = l[0] == '%';
    if (starts(l, i, n, "Cpu")) { /* _CPU: %?Cpu(\(s\)|\d+)\s*: */
        i += 3;
        if (starts(l, i, n, "(s)"))
            i += 3;
        else {
            Py_ssize_t j = i;
            while (j < n && is_digit(l[j]))
                j++;
            if (j == i)
                return TOP_NONE;
            i = j;
        }
        i = skip_ws(l, i, n);
        return i < n && l[i] == ':' ? TOP_SUMMARY : TOP_NONE;
    }
    if ((l[0] == 'K' || l[0] == 'M' || l[0] == 'G' || l[0] == 'T') && starts(l, 1, n, "iB")) {
        /* _MEM with a unit: (KiB|MiB|GiB|TiB)\s*(Mem|Swap|Memory)\s*: */
        i = skip_ws(l, 3, n);
        Py_ssize_t j;
        if (starts(l, i, n, "Memory") && (j = skip_ws(l, i + 6, n)) < n && l[j] == ':')
            return TOP_SUMMARY;
        if (starts(l, i, n, "Mem") && (j = skip_ws(l, i + 3, n)) < n && l[j] == ':')
            return TOP_SUMMARY;
        if (starts(l, i, n, "Swap") && (j = skip_ws(l, i + 4, n)) < n && l[j] == ':')
            return top_hint(l, n) ? TOP_SUMMARY : TOP_NONE;
    }
    return TOP_NONE;
}

#define TOP_MARKS 256 /* summary lines held per frame; more: the parser reads on */

/* run(text, pos, endpos, states, ncols, at_cpu, at_mem, at_state, header, flags)
 *   -> (pos, lines taken, rows read, frames started, header set, [the frame's summary lines])
 * flags: 1 the header is set (rows are the frame's), 2 a blank line is the parser's (feed takes
 * it and the detector's memo says no other format starts on one), 4 a `top -` line may start a
 * new frame (a frame was read before, not Solaris's). Rows and summary lines counted and kept
 * are those since the last frame this run started, or all when it started none. */
static PyObject *top_run(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyUnicode_Check(args[0]) || Py_TYPE(args[3]) != &TableType ||
        !PyUnicode_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError, "run(text, pos, endpos, states, ncols, at_cpu, "
                                         "at_mem, at_state, header, flags)");
        return NULL;
    }
    PyObject *text = args[0], *header = args[8];
    Table *st = (Table *)args[3];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), endpos = PyLong_AsSsize_t(args[2]);
    long ncols = PyLong_AsLong(args[4]), at_cpu = PyLong_AsLong(args[5]),
         at_mem = PyLong_AsLong(args[6]), at_state = PyLong_AsLong(args[7]),
         flags = PyLong_AsLong(args[9]);
    if (PyErr_Occurred())
        return NULL;
    if (ncols < 1 || ncols > 64 || at_cpu < 0 || at_cpu >= ncols || at_mem < 0 ||
        at_mem >= ncols || at_state >= ncols || t->ncols != 2 || st->ncols < 1 || st == t) {
        PyErr_SetString(PyExc_ValueError, "top run: a bad layout");
        return NULL;
    }
    int have = (flags & 1) != 0, blank_ok = (flags & 2) != 0, frame_ok = (flags & 4) != 0;
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    if (endpos > len)
        endpos = len;
    long long taken = 0, rows = 0, frames = 0;
    Py_ssize_t marks[TOP_MARKS][2];
    int nmarks = 0;
    if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND && pos >= 0 && pos < endpos) {
        const unsigned char *s = PyUnicode_1BYTE_DATA(text);
        const unsigned char *hs = PyUnicode_KIND(header) == PyUnicode_1BYTE_KIND
                                      ? PyUnicode_1BYTE_DATA(header)
                                      : NULL;
        Py_ssize_t hn = hs ? PyUnicode_GET_LENGTH(header) : -1;
        while (pos < endpos) {
            Py_ssize_t e, n;
            if (!line_at(s, pos, endpos, t->max_line, &e, &n))
                break;
            const unsigned char *l = s + pos;
            n -= pos;
            if (n == 0) {
                if (!blank_ok)
                    break;
            } else if (!plain_line(l, n)) {
                break;
            } else if (n == hn && memcmp(l, hs, (size_t)n) == 0) {
                have = 1; /* the header read before: feed reads it so again */
            } else if (is_digit(l[0]) || is_ws(l[0])) {
                if (!have)
                    break;
                Py_ssize_t ts[64], te[64];
                int nt = 0;
                Py_ssize_t i = skip_ws(l, 0, n);
                while (i < n && nt < ncols) {
                    ts[nt] = i;
                    i = skip_tok(l, i, n);
                    te[nt++] = i;
                    i = skip_ws(l, i, n);
                }
                /* claims (_ROW): the pid, a user that is no number, one token more; feed: not
                 * Solaris's `N processes:`, at least the header's columns */
                if (nt < ncols || nt < 3 || !all_digits(l + ts[0], te[0] - ts[0]) ||
                    all_digits(l + ts[1], te[1] - ts[1]) ||
                    (te[1] - ts[1] >= 10 && memcmp(l + ts[1], "processes:", 10) == 0))
                    break;
                double v[2];
                if (!proc_num(l, ts[at_cpu], te[at_cpu], 1, &v[0]) ||
                    !proc_num(l, ts[at_mem], te[at_mem], 1, &v[1]))
                    break;
                Py_ssize_t kn = te[ncols - 1] - ts[ncols - 1];
                if (kn > PROC_CMD)
                    kn = PROC_CMD;
                int ki = key_get(t, (const char *)l + ts[ncols - 1], kn, 1);
                if (ki == -1)
                    return PyErr_NoMemory();
                if (ki >= 0) {
                    key_add(t, ki, v, NULL);
                    if (at_state >= 0) {
                        int si = key_get(st, (const char *)l + ts[at_state],
                                         te[at_state] - ts[at_state], 1);
                        if (si == -1)
                            return PyErr_NoMemory();
                        if (si >= 0)
                            key_add(st, si, v, NULL);
                    }
                }
                rows++;
            } else {
                int kind = top_summary(l, n);
                if (kind == TOP_NONE || nmarks == TOP_MARKS)
                    break;
                if (kind == TOP_FRAME) {
                    if (!frame_ok)
                        break;
                    keys_free(t);
                    keys_free(st);
                    frames++;
                    rows = 0;
                    nmarks = 0;
                    have = 0;
                }
                marks[nmarks][0] = pos;
                marks[nmarks++][1] = pos + n;
            }
            taken++;
            pos = e + 1;
        }
    }
    PyObject *lines = PyList_New(nmarks);
    if (lines == NULL)
        return NULL;
    for (int m = 0; m < nmarks; m++) {
        PyObject *one = PyUnicode_Substring(text, marks[m][0], marks[m][1]);
        if (one == NULL) {
            Py_DECREF(lines);
            return NULL;
        }
        PyList_SET_ITEM(lines, m, one);
    }
    return Py_BuildValue("(nLLLiN)", pos, taken, rows, frames, have, lines);
}

/* clear(): top mode, the store emptied for the parser's next frame (the Table is reused) */
static PyObject *Table_clear(Table *t, PyObject *unused)
{
    if (!t->topm && !(t->ncols == 1 && !t->rows && !t->grouped && !t->proc && !t->sheet)) {
        PyErr_SetString(PyExc_ValueError, "clear: a top frame's Table");
        return NULL;
    }
    keys_free(t);
    Py_RETURN_NONE;
}

/* top(): makes this Table a top frame's store (two columns: %CPU, %MEM) */
static PyObject *Table_top(Table *t, PyObject *unused)
{
    if (t->ncols != 2 || t->rows || t->grouped || t->proc) {
        PyErr_SetString(PyExc_ValueError, "top: a plain Table of two columns");
        return NULL;
    }
    t->topm = 1;
    Py_RETURN_NONE;
}

/* -- sheet mode: vmstat's samples ------------------------------------------------------------- */

/* A vmstat row as the parser reads it when it is the one it claims (vmstat.claims: only number
 * characters and blanks, longer than 20) and feed sends it straight to _row (it starts with a
 * digit once stripped): exactly ncols numbers `-?\d{1,15}(\.\d{1,15})?` (no comma: pasted.number
 * reads `2,210` as a thousands group), each inside its column's bounds. 0: not one the core
 * vouches for (the Python reader takes it: it may count it malformed). */
static int sheet_row(Table *t, const unsigned char *l, Py_ssize_t n, double *out, char *stamp,
                     int *stamp_n)
{
    if (n <= 20)
        return 0;
    if (t->sh_stamp) {
        /* `-t`: the row ends in `YYYY-MM-DD H:MM:SS` (vmstat.claims' second shape; _row's
         * stamp, the two tokens joined by one blank); the numbers come before it */
        Py_ssize_t e2 = n;
        while (e2 > 0 && is_ws(l[e2 - 1]))
            e2--;
        Py_ssize_t s2 = e2;
        while (s2 > 0 && !is_ws(l[s2 - 1]))
            s2--;
        Py_ssize_t e1 = s2;
        while (e1 > 0 && is_ws(l[e1 - 1]))
            e1--;
        Py_ssize_t s1 = e1;
        while (s1 > 0 && !is_ws(l[s1 - 1]))
            s1--;
        const unsigned char *d = l + s1, *c = l + s2;
        Py_ssize_t cn = e2 - s2;
        if (e1 - s1 != 10 || !is_digit(d[0]) || !is_digit(d[1]) || !is_digit(d[2]) ||
            !is_digit(d[3]) || d[4] != '-' || !is_digit(d[5]) || !is_digit(d[6]) || d[7] != '-' ||
            !is_digit(d[8]) || !is_digit(d[9]))
            return 0;
        if (cn == 7)
            c--; /* one-digit hour: check from c[1] */
        if ((cn != 7 && cn != 8) || (cn == 8 && !is_digit(c[0])) || !is_digit(c[1]) ||
            c[2] != ':' || !is_digit(c[3]) || !is_digit(c[4]) || c[5] != ':' || !is_digit(c[6]) ||
            !is_digit(c[7]))
            return 0;
        memcpy(stamp, d, 10);
        stamp[10] = ' ';
        memcpy(stamp + 11, l + s2, (size_t)cn);
        stamp[11 + cn] = 0;
        *stamp_n = (int)(11 + cn);
        n = e1 - 10; /* the numbers: everything before the date */
        while (n > 0 && is_ws(l[n - 1]))
            n--;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = l[i];
        if (!(is_digit(c) || c == '.' || c == ',' || c == '-' || is_ws(c)))
            return 0;
    }
    Py_ssize_t i = skip_ws(l, 0, n);
    if (i >= n || !is_digit(l[i]))
        return 0;
    int c = 0;
    while (i < n) {
        if (c >= t->ncols)
            return 0;
        Py_ssize_t ve = read_num(l, i, n, 0, 15, 15, &out[c]);
        if (ve < 0 || !(out[c] >= t->lo[c] && out[c] <= t->hi[c]))
            return 0;
        c++;
        i = skip_ws(l, ve, n);
    }
    return c == t->ncols;
}

/* the label of a `zzz ***Tue Nov 01 00:00:30 UTC 2026` line as vmstat's feed makes it:
 * text[3:].strip(" *")[:40] of the line stripped; 0: not a marker feed reads (`zzz` alone) */
static int sheet_zzz(Table *t, const unsigned char *l, Py_ssize_t n)
{
    Py_ssize_t b = n;
    while (b > 0 && is_ws(l[b - 1]))
        b--;
    if (b <= 4)
        return 0;
    Py_ssize_t a = 3;
    while (a < b && (l[a] == ' ' || l[a] == '*'))
        a++;
    Py_ssize_t z = b;
    while (z > a && (l[z - 1] == ' ' || l[z - 1] == '*'))
        z--;
    Py_ssize_t k = z - a > LABEL_MAX ? LABEL_MAX : z - a;
    memcpy(t->sh_label, l + a, (size_t)k);
    t->sh_label[k] = 0;
    t->sh_label_n = (int)k;
    return 1;
}

static int sheet_known(Table *t, const unsigned char *l, Py_ssize_t n)
{
    for (int k = 0; k < t->nknown; k++)
        if (t->known_n[k] == n && memcmp(t->known[k], l, (size_t)n) == 0)
            return k;
    return -1;
}

static int sheet_sample(Table *t, const double *vals, const char *label, int ln)
{
    if (key_add(t, t->sh_key, vals, NULL) < 0)
        return -1;
    t->sh_samples++;
    if (ln) {
        if (t->sh_first_n < 0) {
            memcpy(t->sh_first, label, (size_t)ln + 1);
            t->sh_first_n = ln;
        }
        memcpy(t->sh_last, label, (size_t)ln + 1);
        t->sh_last_n = ln;
    }
    int r = t->sh_ring_head;
    memcpy(t->sh_ring + (size_t)r * t->ncols, vals, (size_t)t->ncols * sizeof(double));
    memcpy(t->sh_ring_lab[r], label, (size_t)ln + 1);
    t->sh_ring_lab_n[r] = ln;
    t->sh_ring_head = (r + 1) % SHEET_ROWS;
    if (t->sh_ring_n < SHEET_ROWS)
        t->sh_ring_n++;
    return 0;
}

/* run() in sheet mode: samples, `zzz` markers and known header lines until a line of any other
 * shape, or a fresh run's first row when the parser would keep it (state()'s hold) */
static PyObject *sheet_run(Table *t, const unsigned char *s, Py_ssize_t pos, Py_ssize_t endpos)
{
    double vals[64];
    long long taken = 0;
    while (pos < endpos) {
        Py_ssize_t e, le;
        if (!line_at(s, pos, endpos, t->max_line, &e, &le))
            break;
        const unsigned char *l = s + pos;
        Py_ssize_t n = le - pos;
        int k;
        if (!plain_line(l, n))
            break;
        if (n >= 4 && memcmp(l, "zzz ", 4) == 0) {
            if (!sheet_zzz(t, l, n))
                break;
            t->sh_snaps++;
            t->sh_expect = 1;
        } else if ((k = sheet_known(t, l, n)) >= 0) {
            if (t->known_code[k] == 1)
                t->sh_headers++;
        } else {
            char stamp[24];
            int stamp_n = 0;
            if (!sheet_row(t, l, n, vals, stamp, &stamp_n))
                break;
            if (t->sh_expect) {
                if (t->sh_hold)
                    break; /* the capture's first row: the parser keeps it apart */
                t->sh_expect = 0;
                t->sh_boot++;
            } else if (sheet_sample(t, vals, stamp_n ? stamp : t->sh_label,
                                    stamp_n ? stamp_n : t->sh_label_n) < 0) {
                return NULL;
            }
        }
        taken++;
        pos = e + 1;
    }
    return Py_BuildValue("(nLOO)", pos, taken, Py_None, Py_None);
}

/* -- Table.run ---------------------------------------------------------------------------------- */

/* run(text, pos, endpos) -> (pos, lines taken, first label or None, last label or None) */
static PyObject *Table_run(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (t->proc)
        return proc_run(t, args, nargs);
    if (t->topm)
        return top_run(t, args, nargs);
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "run(text, pos, endpos)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), endpos = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    if (endpos > len)
        endpos = len;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || pos < 0 || pos >= endpos)
        return Py_BuildValue("(niOO)", pos, 0, Py_None, Py_None);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    if (t->rows)
        return rows_run(t, s, pos, endpos);
    if (t->sheet)
        return sheet_run(t, s, pos, endpos);
    int ncols = t->ncols;
    double vals[64];
    long long taken = 0;
    Py_ssize_t first_s = -1, first_n = 0, last_s = -1, last_n = 0;

    while (pos < endpos) {
        Py_ssize_t e, le;
        if (!line_at(s, pos, endpos, t->max_line, &e, &le))
            break;
        const unsigned char *l = s + pos;
        Py_ssize_t n = le - pos;
        if (!plain_line(l, n))
            break;
        /* the row: clock, [AM|PM], [key], the values; or else mpstat's interval header */
        if (!clock_at(l, n) || n < 9 || l[8] != ' ')
            goto not_row;
        if (t->check_clock && n > 10 && l[10] == 'T')
            goto not_row; /* ostable.clean would read an ISO stamp there */
        Py_ssize_t i = skip_ws(l, 8, n);
        Py_ssize_t lab_n = 8;
        int h = two(l), mi = two(l + 3), sec = two(l + 6);
        if (n - i >= 2 && (l[i] == 'A' || l[i] == 'P' || l[i] == 'a' || l[i] == 'p') &&
            (l[i + 1] == 'M' || l[i + 1] == 'm') && i + 2 < n && is_ws(l[i + 2])) {
            int upper = l[i + 1] == 'M';
            if (upper != (l[i] == 'A' || l[i] == 'P'))
                goto not_row; /* `Am`, `aM`: not what split_clock reads as AM/PM */
            int pm = l[i] == 'P' || l[i] == 'p';
            h = (h % 12) + (pm ? 12 : 0);
            lab_n = i + 2;
            i = skip_ws(l, i + 2, n);
        }
        if (t->check_clock && (h > 23 || mi > 59 || sec > 60))
            goto not_row;
        Py_ssize_t key_s = i, key_n = 0;
        if (t->keyed) {
            Py_ssize_t ke = skip_tok(l, i, n);
            key_n = ke - i;
            if (key_n == 0 || ke >= n)
                goto not_row;
            if (t->key_int) {
                int digits_only = 1;
                for (Py_ssize_t j = i; j < ke; j++)
                    if (!is_digit(l[j]))
                        digits_only = 0;
                if (!digits_only && !(key_n == 3 && memcmp(l + i, "all", 3) == 0))
                    goto not_row;
            }
            i = skip_ws(l, ke, n);
        }
        Py_ssize_t values_s = i;
        int c = 0;
        while (i < n && c < ncols) {
            Py_ssize_t ve = read_num(l, i, n, t->comma, t->comma == 1 ? 12 : 15,
                                     t->comma == 1 ? 6 : 15, &vals[c]);
            if (ve < 0)
                goto not_row;
            double v = vals[c];
            if (v < t->lo[c] || v > t->hi[c])
                goto not_row;
            c++;
            i = skip_ws(l, ve, n);
        }
        if (c != ncols || i != n)
            goto not_row;
        /* what the detector asks before handing the line over: ostable.clock_row (mpstat's
         * _PLAIN_ROW matches only lines clock_row says yes to) */
        if (!(table_row(l, n, 2) || table_row(l, n, 3)))
            goto not_row;
        (void)values_s;
        const char *kp = t->keyed ? (const char *)l + key_s : "";
        if (t->grouped) {
            Py_ssize_t ln = lab_n;
            char lab[LABEL_MAX + 1];
            /* " ".join of the clock and AM/PM */
            memcpy(lab, l, 8);
            ln = 8;
            if (lab_n > 8) {
                lab[8] = ' ';
                lab[9] = (char)l[lab_n - 2];
                lab[10] = (char)l[lab_n - 1];
                ln = 11;
            }
            int ki = key_get(t, kp, key_n, 0);
            int new_group = !t->has_group || t->label_n != ln || memcmp(t->label, lab, ln) != 0 ||
                            (ki >= 0 && t->keys[ki].in_group);
            int cpus = new_group ? 0 : t->group_keys;
            int is_all = key_n == 3 && memcmp(kp, "all", 3) == 0;
            if (!is_all && cpus >= t->max_group)
                break; /* _store drops it: the Python reader says so */
            if (ki < 0) {
                ki = key_get(t, kp, key_n, 1);
                if (ki == -1)
                    return PyErr_NoMemory();
                if (ki == -2)
                    break;
            }
            if (new_group && group_open(t, lab, ln) < 0)
                return NULL;
            group_put(t, ki, vals);
            if (!is_all)
                t->group_keys++;
        } else {
            int ki = key_get(t, kp, key_n, 1);
            if (ki == -1)
                return PyErr_NoMemory();
            if (ki >= 0 && key_add(t, ki, vals, NULL) < 0)
                return NULL;
            if (first_s < 0) {
                first_s = pos;
                first_n = lab_n;
            }
            last_s = pos;
            last_n = lab_n;
        }
        taken++;
        pos = e + 1;
        continue;
    not_row:;
        Py_ssize_t lab_e;
        if (t->grouped && header_line(t, l, n, &lab_e)) {
            /* " ".join(tokens[:at]): the clock and AM/PM with one blank between */
            char lab[LABEL_MAX + 1];
            Py_ssize_t i0 = skip_ws(l, 0, n), ce = skip_tok(l, i0, n), m = ce - i0;
            if (m + 3 > LABEL_MAX)
                break;
            memcpy(lab, l + i0, (size_t)m);
            if (lab_e > ce) {
                lab[m++] = ' ';
                lab[m++] = (char)l[lab_e - 2];
                lab[m++] = 'M';
            }
            if (group_open(t, lab, m) < 0)
                return NULL;
            t->headers++;
            taken++;
            pos = e + 1;
            continue;
        }
        break;
    }
    PyObject *first = Py_None, *last = Py_None;
    Py_INCREF(first);
    Py_INCREF(last);
    if (first_s >= 0) {
        /* the label as split_clock makes it: clock, one blank, AM/PM */
        PyObject *f = first_n > 8 ? PyUnicode_FromFormat("%.8s %.2s", s + first_s,
                                                        s + first_s + first_n - 2)
                                  : PyUnicode_FromStringAndSize((const char *)s + first_s, 8);
        PyObject *g = last_n > 8 ? PyUnicode_FromFormat("%.8s %.2s", s + last_s,
                                                       s + last_s + last_n - 2)
                                 : PyUnicode_FromStringAndSize((const char *)s + last_s, 8);
        if (f == NULL || g == NULL) {
            Py_XDECREF(f);
            Py_XDECREF(g);
            Py_DECREF(first);
            Py_DECREF(last);
            return NULL;
        }
        Py_SETREF(first, f);
        Py_SETREF(last, g);
    }
    return Py_BuildValue("(nLNN)", pos, taken, first, last); /* like feed_one: past the newline */
}

/* -- the Python side: add, load, open, put, export ---------------------------------------------- */

static int read_values(Table *t, PyObject *seq, double *vals, unsigned char *have)
{
    PyObject *fast = PySequence_Fast(seq, "values: a sequence");
    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != t->ncols) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "values: one per column");
        return -1;
    }
    for (int c = 0; c < t->ncols; c++) {
        PyObject *v = PySequence_Fast_GET_ITEM(fast, c);
        if (v == Py_None) {
            if (have == NULL) {
                Py_DECREF(fast);
                PyErr_SetString(PyExc_ValueError, "values: None");
                return -1;
            }
            have[c] = 0;
            continue;
        }
        if (have)
            have[c] = 1;
        vals[c] = PyFloat_AsDouble(v);
        if (vals[c] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

static int key_of(Table *t, PyObject *key)
{
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(key, &n);
    if (p == NULL)
        return -1;
    int ki = key_get(t, p, n, 1);
    if (ki == -1) {
        PyErr_NoMemory();
        return -1;
    }
    return ki; /* -2: past max_keys */
}

/* add(key, values): a row the Python reader read (None: a column left blank) */
static PyObject *Table_add(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    double vals[64];
    unsigned char have[64];
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "add(key, values)");
        return NULL;
    }
    if (read_values(t, args[1], vals, have) < 0)
        return NULL;
    int ki = key_of(t, args[0]);
    if (ki == -1)
        return NULL;
    if (ki >= 0 && key_add(t, ki, vals, have) < 0)
        return NULL;
    if (t->rows) { /* a row of the open report, read by the Python reader */
        if (ki >= 0)
            t->keys[ki].stamp = t->report;
        t->report_rows++;
    }
    return PyBool_FromLong(ki >= 0);
}

/* report(): rows mode: a new report opens (no key has a row in it yet) */
static PyObject *Table_report(Table *t, PyObject *unused)
{
    t->report++;
    t->report_rows = 0;
    Py_RETURN_NONE;
}

/* seen(key): rows mode: does the open report have a row of this key? */
static PyObject *Table_seen(Table *t, PyObject *key)
{
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(key, &n);
    if (p == NULL)
        return NULL;
    int ki = key_get(t, p, n, 0);
    return PyBool_FromLong(ki >= 0 && t->keys[ki].stamp == t->report);
}

/* load(key, n, totals): a key's sums the Python reader had (mpstat's _Totals) */
static PyObject *Table_load(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    double vals[64];
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "load(key, n, totals)");
        return NULL;
    }
    long long n = PyLong_AsLongLong(args[1]);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (read_values(t, args[2], vals, NULL) < 0)
        return NULL;
    int ki = key_of(t, args[0]);
    if (ki == -1)
        return NULL;
    if (ki == -2) {
        PyErr_SetString(PyExc_ValueError, "too many keys");
        return NULL;
    }
    TKey *k = &t->keys[ki];
    for (int c = 0; c < t->ncols; c++) {
        if (!k->seen[c]) {
            k->seen[c] = 1;
            k->order[k->norder++] = c;
        }
        k->ser[c].n = n;
        k->ser[c].total = vals[c];
    }
    Py_RETURN_NONE;
}

/* open(label): the interval being read (mpstat's _current) */
static PyObject *Table_open(Table *t, PyObject *label)
{
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(label, &n);
    if (p == NULL)
        return NULL;
    if (n > LABEL_MAX) {
        PyErr_SetString(PyExc_ValueError, "label too long");
        return NULL;
    }
    if (group_open(t, p, n) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* put(key, values): a row of the open interval */
static PyObject *Table_put(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    double vals[64];
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !t->has_group) {
        PyErr_SetString(PyExc_TypeError, "put(key, values) after open()");
        return NULL;
    }
    if (read_values(t, args[1], vals, NULL) < 0)
        return NULL;
    int ki = key_of(t, args[0]);
    if (ki == -1)
        return NULL;
    if (ki == -2 || t->keys[ki].in_group || t->group_keys >= t->max_group) {
        PyErr_SetString(PyExc_ValueError, "put: not a row the interval can take");
        return NULL;
    }
    group_put(t, ki, vals);
    if (!(t->keys[ki].nn == 3 && memcmp(t->keys[ki].name, "all", 3) == 0))
        t->group_keys++;
    Py_RETURN_NONE;
}

static PyObject *ser_tuple(const Ser *s)
{
    PyObject *pts = PyList_New(s->npts);
    if (pts == NULL)
        return NULL;
    for (int i = 0; i < s->npts; i++) {
        PyObject *f = PyFloat_FromDouble(s->pts[i]);
        if (f == NULL) {
            Py_DECREF(pts);
            return NULL;
        }
        PyList_SET_ITEM(pts, i, f);
    }
    return Py_BuildValue("(LddddddNLdL)", s->n, s->total, s->low, s->high, s->first, s->last,
                         0.0, pts, s->step, s->acc, s->k);
}

/* export() -> ([(key, [(column, (n, total, low, high, first, last, 0.0, points, step, acc,
 * k)), ...]), ...], open interval: None or (label, [(key, [values])]), intervals, headers) */
static PyObject *Table_export(Table *t, PyObject *unused)
{
    PyObject *keys = PyList_New(0), *grp = NULL;
    if (keys == NULL)
        return NULL;
    for (int ki = 0; ki < t->nkeys; ki++) {
        TKey *k = &t->keys[ki];
        PyObject *cols = PyList_New(k->norder);
        if (cols == NULL)
            goto fail;
        for (int j = 0; j < k->norder; j++) {
            PyObject *st = ser_tuple(&k->ser[k->order[j]]);
            PyObject *item = st ? Py_BuildValue("(iN)", k->order[j], st) : NULL;
            if (item == NULL) {
                Py_DECREF(cols);
                goto fail;
            }
            PyList_SET_ITEM(cols, j, item);
        }
        PyObject *entry = Py_BuildValue("(s#N)", k->name, k->nn, cols);
        if (entry == NULL || PyList_Append(keys, entry) < 0) {
            Py_XDECREF(entry);
            goto fail;
        }
        Py_DECREF(entry);
    }
    if (t->has_group) {
        PyObject *rows = PyList_New(t->ngroup);
        if (rows == NULL)
            goto fail;
        for (int g = 0; g < t->ngroup; g++) {
            PyObject *vals = PyList_New(t->ncols);
            if (vals == NULL) {
                Py_DECREF(rows);
                goto fail;
            }
            for (int c = 0; c < t->ncols; c++)
                PyList_SET_ITEM(vals, c, PyFloat_FromDouble(t->gvals[(size_t)g * t->ncols + c]));
            TKey *k = &t->keys[t->group[g]];
            PyList_SET_ITEM(rows, g, Py_BuildValue("(s#N)", k->name, k->nn, vals));
        }
        grp = Py_BuildValue("(s#N)", t->label, (Py_ssize_t)t->label_n, rows);
        if (grp == NULL)
            goto fail;
    } else {
        grp = Py_None;
        Py_INCREF(grp);
    }
    return Py_BuildValue("(NNLL)", keys, grp, t->groups, t->headers);
fail:
    Py_DECREF(keys);
    return NULL;
}

/* state(expect, hold, label): sheet mode, the parser's state before a run: the next row is a
 * fresh vmstat's first (expect), which the parser keeps apart itself (hold); the label of the
 * rows (the last `zzz` marker's) */
static PyObject *Table_state(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[2]) || !t->sheet) {
        PyErr_SetString(PyExc_TypeError, "state(expect, hold, label) of a sheet");
        return NULL;
    }
    int expect = PyObject_IsTrue(args[0]), hold = PyObject_IsTrue(args[1]);
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(args[2], &n);
    if (expect < 0 || hold < 0 || p == NULL)
        return NULL;
    if (n > SHEET_LABEL) {
        PyErr_SetString(PyExc_ValueError, "label too long");
        return NULL;
    }
    t->sh_expect = expect;
    t->sh_hold = hold;
    memcpy(t->sh_label, p, (size_t)n);
    t->sh_label[n] = 0;
    t->sh_label_n = (int)n;
    Py_RETURN_NONE;
}

/* sheet() -> (samples, boot rows, snapshots, headers, expect, label, first label or None, last
 * label or None, [(label, (values...)), ...] the last rows, oldest first): what the runs read
 * since the last sheet(), which starts the count again */
static PyObject *Table_sheet(Table *t, PyObject *unused)
{
    if (!t->sheet) {
        PyErr_SetString(PyExc_TypeError, "sheet() of a sheet");
        return NULL;
    }
    PyObject *rows = PyList_New(t->sh_ring_n);
    if (rows == NULL)
        return NULL;
    int start = (t->sh_ring_head - t->sh_ring_n + SHEET_ROWS) % SHEET_ROWS;
    for (int j = 0; j < t->sh_ring_n; j++) {
        int r = (start + j) % SHEET_ROWS;
        PyObject *vals = PyTuple_New(t->ncols);
        if (vals == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
        for (int c = 0; c < t->ncols; c++) {
            PyObject *f = PyFloat_FromDouble(t->sh_ring[(size_t)r * t->ncols + c]);
            if (f == NULL) {
                Py_DECREF(vals);
                Py_DECREF(rows);
                return NULL;
            }
            PyTuple_SET_ITEM(vals, c, f);
        }
        PyObject *item = Py_BuildValue("(s#N)", t->sh_ring_lab[r], (Py_ssize_t)t->sh_ring_lab_n[r],
                                       vals);
        if (item == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
        PyList_SET_ITEM(rows, j, item);
    }
    PyObject *first = t->sh_first_n < 0
                          ? Py_NewRef(Py_None)
                          : PyUnicode_FromStringAndSize(t->sh_first, t->sh_first_n);
    PyObject *last = t->sh_last_n < 0 ? Py_NewRef(Py_None)
                                      : PyUnicode_FromStringAndSize(t->sh_last, t->sh_last_n);
    if (first == NULL || last == NULL) {
        Py_XDECREF(first);
        Py_XDECREF(last);
        Py_DECREF(rows);
        return NULL;
    }
    PyObject *out = Py_BuildValue("(LLLLis#NNN)", t->sh_samples, t->sh_boot, t->sh_snaps,
                                  t->sh_headers, t->sh_expect, t->sh_label,
                                  (Py_ssize_t)t->sh_label_n, first, last, rows);
    t->sh_samples = t->sh_boot = t->sh_snaps = t->sh_headers = 0;
    t->sh_first_n = t->sh_last_n = -1;
    t->sh_ring_n = t->sh_ring_head = 0;
    return out;
}

/* know(line, code): sheet mode, a header line as pasted that the parser has read and will read
 * the same way again (code 0: the group line, nothing to count; 1: the column header, counted);
 * False when SHEET_KNOWN are known already */
static PyObject *Table_know(Table *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !t->sheet) {
        PyErr_SetString(PyExc_TypeError, "know(line, code) of a sheet");
        return NULL;
    }
    int code = (int)PyLong_AsLong(args[1]);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(args[0], &n);
    if (p == NULL)
        return NULL;
    if (t->nknown >= SHEET_KNOWN || n == 0 || n > t->max_line)
        Py_RETURN_FALSE;
    if (sheet_known(t, (const unsigned char *)p, n) >= 0)
        Py_RETURN_TRUE;
    char *copy = PyMem_Malloc((size_t)n + 1);
    if (copy == NULL)
        return PyErr_NoMemory();
    memcpy(copy, p, (size_t)n + 1);
    t->known[t->nknown] = copy;
    t->known_n[t->nknown] = n;
    t->known_code[t->nknown++] = code;
    Py_RETURN_TRUE;
}

/* -- type plumbing ------------------------------------------------------------------------------ */

static int float_seq(PyObject *seq, int n, double *out, double dflt)
{
    PyObject *fast = PySequence_Fast(seq, "a sequence of floats or None");
    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "lo/hi: one per column");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(fast, i);
        out[i] = v == Py_None ? dflt : PyFloat_AsDouble(v);
        if (out[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* rows = (factors, util, ops, colpoints, max_report): rows mode, iostat's device rows. factors:
 * per printed value column its factor to the canonical unit, None: not read; util: the value
 * column that must lie in 0-150.5 (-1: none); ops: per stored column (op, a, b, c, d) over the
 * value columns (0 and 3: a; 1: c+d > 0 ? (a*c + b*d) / (c+d) : max(a, b); 2: a + b; -1: 0.0);
 * colpoints: per stored column, whether it keeps chart points; max_report: rows a report keeps. */
static int rows_init(Table *t, PyObject *rows)
{
    PyObject *factors, *ops, *colpoints;
    if (!PyArg_ParseTuple(rows, "OiOOi", &factors, &t->util, &ops, &colpoints, &t->max_report))
        return -1;
    PyObject *ff = PySequence_Fast(factors, "factors"), *of = NULL, *cf = NULL;
    if (ff == NULL)
        return -1;
    int nin = (int)PySequence_Fast_GET_SIZE(ff);
    if (nin < 1 || nin > 64 || t->util >= nin) {
        Py_DECREF(ff);
        PyErr_SetString(PyExc_ValueError, "rows: 1-64 value columns");
        return -1;
    }
    t->nin = nin;
    t->skip = PyMem_Calloc((size_t)nin, 1);
    t->fac = PyMem_Calloc((size_t)nin, sizeof(double));
    t->ops = PyMem_Calloc((size_t)t->ncols * 5, sizeof(int));
    t->colpts = PyMem_Calloc((size_t)t->ncols, 1);
    if (!t->skip || !t->fac || !t->ops || !t->colpts) {
        Py_DECREF(ff);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(ff, i);
        t->skip[i] = v == Py_None;
        t->fac[i] = v == Py_None ? 0.0 : PyFloat_AsDouble(v);
        if (PyErr_Occurred())
            goto fail;
    }
    of = PySequence_Fast(ops, "ops");
    cf = PySequence_Fast(colpoints, "colpoints");
    if (of == NULL || cf == NULL)
        goto fail;
    if (PySequence_Fast_GET_SIZE(of) != t->ncols || PySequence_Fast_GET_SIZE(cf) != t->ncols) {
        PyErr_SetString(PyExc_ValueError, "rows: one op and one colpoints per column");
        goto fail;
    }
    for (int o = 0; o < t->ncols; o++) {
        int *op = t->ops + (size_t)o * 5;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(of, o), "iiiii", op, op + 1, op + 2,
                              op + 3, op + 4))
            goto fail;
        for (int j = 1; j < 5; j++)
            if (op[j] >= nin || op[j] < -1 || (op[j] >= 0 && t->skip[op[j]])) {
                PyErr_SetString(PyExc_ValueError, "rows: an op reads a column not read");
                goto fail;
            }
        if (op[0] < 0 || op[0] > 3 || (op[1] < 0 && op[0] != 2) ||
            (op[0] == 1 && op[2] < 0)) {
            PyErr_SetString(PyExc_ValueError, "rows: a bad op");
            goto fail;
        }
        int pt = PyObject_IsTrue(PySequence_Fast_GET_ITEM(cf, o));
        if (pt < 0)
            goto fail;
        t->colpts[o] = (unsigned char)pt;
    }
    if (t->util >= 0 && t->skip[t->util]) {
        PyErr_SetString(PyExc_ValueError, "rows: util is not read");
        goto fail;
    }
    Py_DECREF(ff);
    Py_DECREF(of);
    Py_DECREF(cf);
    t->rows = 1;
    t->report = 1;
    return 0;
fail:
    Py_DECREF(ff);
    Py_XDECREF(of);
    Py_XDECREF(cf);
    return -1;
}

/* sheet = (colpoints, stamp): sheet mode, vmstat's samples (per column, whether it keeps chart
 * points; stamp: -t, each row ends in its date and time); the rows go to the key "" */
static int sheet_init(Table *t, PyObject *sheet)
{
    PyObject *colpoints;
    if (!PyArg_ParseTuple(sheet, "Op", &colpoints, &t->sh_stamp))
        return -1;
    PyObject *cf = PySequence_Fast(colpoints, "sheet: colpoints");
    if (cf == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(cf) != t->ncols) {
        Py_DECREF(cf);
        PyErr_SetString(PyExc_ValueError, "sheet: one colpoints per column");
        return -1;
    }
    t->colpts = PyMem_Calloc((size_t)t->ncols, 1);
    t->sh_ring = PyMem_Calloc((size_t)SHEET_ROWS * t->ncols, sizeof(double));
    if (!t->colpts || !t->sh_ring) {
        Py_DECREF(cf);
        PyErr_NoMemory();
        return -1;
    }
    for (int o = 0; o < t->ncols; o++) {
        int pt = PyObject_IsTrue(PySequence_Fast_GET_ITEM(cf, o));
        if (pt < 0) {
            Py_DECREF(cf);
            return -1;
        }
        t->colpts[o] = (unsigned char)pt;
    }
    Py_DECREF(cf);
    t->sheet = 1;
    t->sh_first_n = t->sh_last_n = -1;
    return 0;
}

/* Table(ncols, keyed, key_int, comma, grouped, points_mode, max_keys, max_group, check_clock,
 *       max_line, lo, hi, tail[, rows[, sheet]]) */
static int Table_init(Table *t, PyObject *args, PyObject *kw)
{
    int ncols, keyed, key_int, comma, grouped, points_mode, max_keys, max_group, check_clock;
    Py_ssize_t max_line;
    PyObject *lo, *hi, *tail, *rows = Py_None, *sheet = Py_None;
    if (t->keys != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Table.__init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "ippipiiipnOOO|OO", &ncols, &keyed, &key_int, &comma, &grouped,
                          &points_mode, &max_keys, &max_group, &check_clock, &max_line, &lo,
                          &hi, &tail, &rows, &sheet))
        return -1;
    if (ncols < 1 || ncols > 64 || max_keys < 1 || max_group < 1) {
        PyErr_SetString(PyExc_ValueError, "Table: 1-64 columns, max_keys and max_group >= 1");
        return -1;
    }
    t->ncols = ncols;
    t->keyed = keyed;
    t->key_int = key_int;
    t->comma = comma;
    t->grouped = grouped;
    t->points_mode = points_mode;
    t->max_keys = max_keys;
    t->max_group = max_group;
    t->check_clock = check_clock;
    t->max_line = max_line;
    t->lo = PyMem_Malloc(sizeof(double) * (size_t)ncols);
    t->hi = PyMem_Malloc(sizeof(double) * (size_t)ncols);
    if (t->lo == NULL || t->hi == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (float_seq(lo, ncols, t->lo, -Py_HUGE_VAL) < 0 ||
        float_seq(hi, ncols, t->hi, Py_HUGE_VAL) < 0)
        return -1;
    if (grouped) {
        t->group = PyMem_Malloc(sizeof(int) * ((size_t)max_group + 1));
        t->gvals = PyMem_Malloc(sizeof(double) * (size_t)ncols * ((size_t)max_group + 1));
        if (t->group == NULL || t->gvals == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (tail != Py_None) {
        PyObject *fast = PySequence_Fast(tail, "tail: a sequence of str");
        if (fast == NULL)
            return -1;
        Py_ssize_t nt = PySequence_Fast_GET_SIZE(fast);
        t->tail = PyMem_Calloc((size_t)nt + 1, sizeof(char *));
        t->tail_n = PyMem_Calloc((size_t)nt + 1, sizeof(Py_ssize_t));
        if (t->tail == NULL || t->tail_n == NULL) {
            Py_DECREF(fast);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < nt; i++) {
            Py_ssize_t n;
            const char *p = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(fast, i), &n);
            if (p == NULL || (t->tail[i] = PyMem_Malloc((size_t)n + 1)) == NULL) {
                Py_DECREF(fast);
                if (p != NULL)
                    PyErr_NoMemory();
                return -1;
            }
            memcpy(t->tail[i], p, (size_t)n + 1);
            t->tail_n[i] = n;
            t->ntail = (int)i + 1;
        }
        Py_DECREF(fast);
    }
    if (rows != Py_None && rows_init(t, rows) < 0)
        return -1;
    /* the key table exists from here on (and marks the object initialised) */
    t->capkeys = 16;
    t->keys = PyMem_Malloc(sizeof(TKey) * 16);
    if (t->keys == NULL || tab_grow(t) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (sheet != Py_None) {
        if (rows != Py_None) {
            PyErr_SetString(PyExc_ValueError, "Table: rows or sheet, not both");
            return -1;
        }
        if (sheet_init(t, sheet) < 0)
            return -1;
        if ((t->sh_key = key_get(t, "", 0, 1)) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

static void Table_dealloc(Table *t)
{
    keys_free(t);
    PyMem_Free(t->keys);
    PyMem_Free(t->tab);
    PyMem_Free(t->lo);
    PyMem_Free(t->hi);
    PyMem_Free(t->group);
    PyMem_Free(t->gvals);
    for (int i = 0; i < t->ntail; i++)
        PyMem_Free(t->tail[i]);
    PyMem_Free(t->tail);
    PyMem_Free(t->tail_n);
    PyMem_Free(t->skip);
    PyMem_Free(t->fac);
    PyMem_Free(t->ops);
    PyMem_Free(t->colpts);
    PyMem_Free(t->sh_ring);
    for (int i = 0; i < t->nknown; i++)
        PyMem_Free(t->known[i]);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef Table_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Table_run, METH_FASTCALL,
     "run(text, pos, endpos) -> (pos, taken, first label, last label): read rows"},
    {"add", (PyCFunction)(void (*)(void))Table_add, METH_FASTCALL,
     "add(key, values): a row the Python reader read"},
    {"load", (PyCFunction)(void (*)(void))Table_load, METH_FASTCALL,
     "load(key, n, totals): sums carried over from the Python reader"},
    {"open", (PyCFunction)Table_open, METH_O, "open(label): start an interval"},
    {"put", (PyCFunction)(void (*)(void))Table_put, METH_FASTCALL,
     "put(key, values): a row of the open interval"},
    {"export", (PyCFunction)Table_export, METH_NOARGS, "the state, for the Python reader"},
    {"report", (PyCFunction)Table_report, METH_NOARGS, "report(): rows mode, a new report"},
    {"seen", (PyCFunction)Table_seen, METH_O, "seen(key): rows mode, a row in this report?"},
    {"state", (PyCFunction)(void (*)(void))Table_state, METH_FASTCALL,
     "state(expect, hold, label): sheet mode, the parser's state before a run"},
    {"sheet", (PyCFunction)Table_sheet, METH_NOARGS,
     "sheet(): sheet mode, what the runs read since the last call"},
    {"know", (PyCFunction)(void (*)(void))Table_know, METH_FASTCALL,
     "know(line, code): sheet mode, a header line read once"},
    {"proc", (PyCFunction)(void (*)(void))Table_proc, METH_FASTCALL,
     "proc(codes, cols, mode, cpu_m, usr, sys): proc mode, the layout of a pidstat/prstat header"},
    {"padd", (PyCFunction)(void (*)(void))Table_padd, METH_FASTCALL,
     "padd(key, shown, ident, cols, values): proc mode, a row the Python reader read"},
    {"top", (PyCFunction)Table_top, METH_NOARGS,
     "top(): top mode, a frame's process rows (run(text, pos, endpos, states, ...))"},
    {"clear", (PyCFunction)Table_clear, METH_NOARGS,
     "clear(): top mode, the store emptied for the next frame"},
    {"procs", (PyCFunction)Table_procs, METH_NOARGS,
     "procs() -> ([(shown, ident) per key], dropped rows): proc mode"},
    {NULL}};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ingest._syscore.Table",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Table_init,
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_methods = Table_methods,
    .tp_doc = "the row reader of the sysstat column tables (mpstat, sar, iostat)",
};

int table_type_add(PyObject *m)
{
    if (PyType_Ready(&TableType) < 0)
        return -1;
    Py_INCREF(&TableType);
    if (PyModule_AddObject(m, "Table", (PyObject *)&TableType) < 0) {
        Py_DECREF(&TableType);
        return -1;
    }
    return 0;
}
