/* ingest/_syscore_src/truss.c: Core.truss_run, TrussParser.feed_run's loop for the common truss
 * lines (ingest/parsers/syscalls.py stays the definition of the format: any line this scanner is
 * not certain of goes back to it). */
#include "syscore.h"

/* -- the truss scanner ------------------------------------------------------------------------ */

static Py_ssize_t truss_prefix_at(const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                                  Py_ssize_t *pid_s, int *pid_n, int *lwp2);

/* `pid:` / `pid/lwp:` / `/lwp:` (each number 1-10 digits, `@n` after the lwp) followed by
 * whitespace. Returns the index after ":", or -1 if the line has no such prefix; then no pid
 * either (the digits of `4.5958 _lgrpsys(...)`, a -d time without a pid, are not one). */
static Py_ssize_t truss_prefix(const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                               Py_ssize_t *pid_s, int *pid_n, int *lwp2)
{
    Py_ssize_t after = truss_prefix_at(s, i, e, pid_s, pid_n, lwp2);
    if (after < 0) {
        *pid_n = 0;
        *lwp2 = 0;
    }
    return after;
}

static Py_ssize_t truss_prefix_at(const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
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

/* The -d/-D/-E columns of a truss line as TrussParser._times reads them (cols: the index of d,
 * D and E for 1, 2 and 3 columns). */
typedef struct {
    int nt;
    Py_ssize_t s[3], n[3];
} TrussClocks;

/* a line's -d timestamp (s), -D delta and -E in-call time (ms), as TrussParser._times reads the
 * columns it printed */
typedef struct {
    int has_d, has_D, has_E;
    double d, D, E;
} Cols;

static int truss_cols(const unsigned char *s, const TrussClocks *t, int cols[3][3], Cols *out)
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
                        int has_pid, long long pid, const TrussClocks *t, int cols[3][3], long long line)
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
PyObject *Core_truss_run(Core *c, PyObject *const *args, Py_ssize_t nargs)
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
        TrussClocks t;
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
