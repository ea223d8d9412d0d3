/* ingest/_syscore_src/syscore.h: the one header of the C core (ingest._syscore), shared by its
 * files, one per job:
 *   module.c      the module: the Core type, its method table, configure(), PyInit__syscore
 *   aggregator.c  SyscallAggregator's per-call state (tables, repeat keys, heaps, accounting),
 *                 the Python-facing Core methods and the export
 *   lines.c       what both scanners share out of line: routed lines, decimals, text helpers
 *   truss.c       Core.truss_run, the scanner of common truss lines
 *   strace.c      Core.strace_run, the scanner of common strace lines
 *   first_bad.c   first_bad(), the SIMD scan ingest/detect.py uses
 *   table.c       Table, the row reader of the column tables (mpstat, sar, iostat, pidstat,
 *                 prstat, top)
 *   stacks.c      stack_frames(), the frame reader of the stack formats (stack.py, dtrace.py)
 *   trace10046.c  trace10046_waits(), the runs of WAIT lines of a raw 10046 trace
 *   summary.c     strace_summary_rows(), the runs of strace -c table rows and rulers
 *   tkprof.c      tkprof_tables(), the runs of a tkprof report's statements (tables, attributes, SQL text)
 *   awr.c         awr_rows(), the runs of rows of an AWR / Statspack report's open table;
 *                 awr_cells(), a row's cells under a ruler (the report's SQL and header rows)
 *                 awr_lines(), a run of Load Profile rows, SQL text, skipped sections' lines
 *
 * Why this file: every type, constant and helper used by more than one of them lives here and
 * only here, so no struct is defined twice. Helpers the scanners call per byte or per line are
 * `static inline` here (the compiler cannot inline across files); everything a file does not
 * share stays `static` in it, and the extension is built with -fvisibility=hidden, so the only
 * exported symbol is PyInit__syscore.
 *
 * Why a C core at all: a 1 GB capture is ~10-14 million lines; CPython pays about a microsecond
 * per line just to run one regex and touch a few dicts, so the streaming target (>= 50 MB/s and
 * <= 2x grep -E) needs the per-line work compiled.
 *
 * The rules (what a call counts into, the clock, the reservoir, the top-N heaps, the caps) are
 * those of the pure-Python SyscallAggregator (ingest/parsers/syscalls.py), which stays the
 * reference: tests compare the two on every generated capture mode and fixture. Constants and
 * name tables come from Python (configure()), so they are defined once. The scanners accept only
 * line shapes whose parse is certain; for any other line they stop and the Python parser reads
 * it, so the Python regexes stay the definition of the formats. The final statistics are
 * computed in Python from an export of this state (Core.export), by the same code as for the
 * reference.
 */
#ifndef SYSCORE_H
#define SYSCORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* -- configuration, from syscalls.py ---------------------------------------------------------- */

#define MAX_TARGETS 256
#define TARGET_LEN 32

typedef struct {
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
} SyscoreConfig;

/* the one instance, filled once by configure() (module.c) */
extern SyscoreConfig cfg;


/* interned names and constants, made once by PyInit__syscore (module.c) */
extern PyObject *k_syscall, *k_pid, *k_ms, *k_line, *k_ret, *k_err, *k_notes, *k_after,
    *k_before, *k_parent, *s_round, *s_strip, *four;

#define TOPMAX 64

/* -- small helpers (static inline: called per byte or per line) ----------------------------- */

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

static inline int starts(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, const char *w)
{
    size_t n = strlen(w);
    return (Py_ssize_t)n <= e - i && memcmp(s + i, w, n) == 0;
}


/* -- state ---------------------------------------------------------------------------------- */

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

typedef struct {
    int has_pid;
    long long pid;
    int has_dur, has_delta, has_ts, has_gap;
    double dur, delta, ts, gap;
    const Txt *err, *ret; /* NULL: None */
    const Txt *args;
    long long line;
} CallArgs;

static inline void span(Core *c, double ts)
{
    if (ts < c->ts_min)
        c->ts_min = ts;
    if (ts > c->ts_max)
        c->ts_max = ts;
}

/* -- per-line helpers of the scanners ------------------------------------------------------- */
/* static inline: they run on every line or call line. Out of line (in lines.c) the truss parse of
 * a 100 MB capture took 1-3% more CPU than the single-file build did, measured in the same run;
 * inline here it takes the same. */

/* does s[0..n) hold w? (strlen(w) folds to a constant once inlined) */
static inline int contains(const unsigned char *s, Py_ssize_t n, const char *w)
{
    size_t wn = strlen(w);
    for (Py_ssize_t i = 0; i + (Py_ssize_t)wn <= n; i++)
        if (s[i] == (unsigned char)w[0] && memcmp(s + i, w, wn) == 0)
            return 1;
    return 0;
}

/* name[0..n)'s routing kinds as a bit set (1 << kind); a length check, then memcmp. Kind 4
 * (the long FD_CALLS list) is looked at only for a failed call. */
static inline int route_bits(const unsigned char *name, Py_ssize_t n, int failed)
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
static inline int routed(const unsigned char *s, Py_ssize_t name_s, Py_ssize_t name_n,
                         Py_ssize_t args_s, Py_ssize_t args_n, Py_ssize_t ret_s,
                         Py_ssize_t ret_n, int failed, int partial)
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

int plain_line(const unsigned char *p, Py_ssize_t n); /* lines.c: text beyond ASCII */

/* The line at pos, as every run reads it (feed_run's loops in table.c, the scanners' next_line):
 * its end e (the newline or endpos) and le (before trailing CRs, which the detector strips).
 * Returns 0 when the line is longer than max_line (the detector cuts those: the run stops
 * there; e is set, le is not), else 1. One home so that the runs measure a line alike. */
static inline int line_at(const unsigned char *s, Py_ssize_t pos, Py_ssize_t endpos,
                          Py_ssize_t max_line, Py_ssize_t *e, Py_ssize_t *le)
{
    const unsigned char *nl = memchr(s + pos, '\n', (size_t)(endpos - pos));
    *e = nl ? nl - s : endpos;
    if (*e - pos > max_line)
        return 0;
    Py_ssize_t l = *e;
    while (l > pos && s[l - 1] == '\r')
        l--;
    *le = l;
    return 1;
}

/* The line at pos: its end e (the newline or endpos) and le (before trailing CRs). Returns 0 if
 * a scanner may read it, 1 if it is for the Python path: longer than MAX_LINE, or holding a CR
 * inside it or a character beyond printable ASCII and tab. Runs hold no control character
 * (Parser.feed_run's contract), so in ASCII text only the CR test is needed. */
static inline int next_line(const unsigned char *s, Py_ssize_t pos, Py_ssize_t endpos,
                            int ascii, Py_ssize_t *e, Py_ssize_t *le)
{
    if (!line_at(s, pos, endpos, cfg.max_line, e, le))
        return 1;
    Py_ssize_t l = *le;
    return ascii ? memchr(s + pos, '\r', l - pos) != NULL : !plain_line(s + pos, l - pos);
}

/* -- shared functions ------------------------------------------------------------------------- */

/* aggregator.c: SyscallAggregator's state, called by the scanners and by module.c */
int stat_get(Core *c, const char *nb, Py_ssize_t nn, PyObject *name_obj);
int proc_init(Proc *p, int has_pid, long long pid);
void proc_clear(Proc *p);
Proc *proc_get(Core *c, int has_pid, long long pid);
int add_child(Core *c, PyObject *pid, PyObject *parent, long long line);
int bump(PyObject *table, PyObject *k);
int core_call(Core *c, int si, const CallArgs *a);
int core_event(Core *c, int has_pid, long long pid, int has_ts, double ts, int has_gap,
               double gap, long long line, PyObject *what);
int core_continuation(Core *c, const char *p, Py_ssize_t n);

/* lines.c: what the scanners (and the aggregator) share */
int route_line(PyObject *routed_list, PyObject *text, Py_ssize_t pos, Py_ssize_t le, long long n);
/* lines.c: an attribute or method name as an interned str, made the first time each name (a
 * string literal, told apart by its address) is asked for and kept: borrowed, NULL with an
 * exception set. `name` must be a string literal (or text that never changes or moves): its
 * address is the key. Why: PyObject_GetAttrString / SetAttrString make, hash (siphash) and free a new
 * str on every call, and the readers touch their parser's attributes per run and per
 * statement: in tkprof_tables and trace10046_waits that was about a tenth of a 10 MB parse's
 * instructions (callgrind). */
PyObject *interned(const char *name);

static inline PyObject *get_attr(PyObject *o, const char *name)
{
    PyObject *k = interned(name);
    return k == NULL ? NULL : PyObject_GetAttr(o, k);
}

static inline int set_attr(PyObject *o, const char *name, PyObject *v)
{
    PyObject *k = interned(name);
    return k == NULL ? -1 : PyObject_SetAttr(o, k, v);
}
void strip_span(const char **p, Py_ssize_t *n);
PyObject *joined(const char *prefix, const unsigned char *p, Py_ssize_t n);
int parse_decimal(const char *p, Py_ssize_t n, double *out);
int ascii_pid(const Txt *t, long long *v);

/* the methods of Core (module.c's method table) and the module's functions */
PyObject *Core_call(Core *c, PyObject *const *args, Py_ssize_t nargs);
PyObject *Core_event(Core *c, PyObject *const *args, Py_ssize_t nargs);
PyObject *Core_child(Core *c, PyObject *const *args, Py_ssize_t nargs);
PyObject *Core_continuation(Core *c, PyObject *text);
PyObject *Core_elide(Core *c, PyObject *unused);
PyObject *Core_proc(Core *c, PyObject *pid);
PyObject *Core_export(Core *c, PyObject *agg);
PyObject *Core_truss_run(Core *c, PyObject *const *args, Py_ssize_t nargs); /* truss.c */
PyObject *Core_strace_run(Core *c, PyObject *const *args, Py_ssize_t nargs); /* strace.c */
PyObject *first_bad(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* first_bad.c */
int table_type_add(PyObject *m); /* table.c: adds the Table type to the module */
PyObject *stack_frames(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* stacks.c */
PyObject *trace10046_waits(PyObject *mod, PyObject *const *args,
                          Py_ssize_t nargs); /* trace10046.c */
PyObject *strace_summary_rows(PyObject *mod, PyObject *const *args,
                              Py_ssize_t nargs); /* summary.c */
PyObject *tkprof_tables(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* tkprof.c */
PyObject *awr_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);  /* awr.c */
PyObject *awr_cells(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* awr.c */
PyObject *awr_lines(PyObject *mod, PyObject *const *args, Py_ssize_t nargs); /* awr.c */

#endif /* SYSCORE_H */
