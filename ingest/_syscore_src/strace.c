/* ingest/_syscore_src/strace.c: Core.strace_run, StraceParser.feed_run's loop for the common strace
 * lines, with the parser's clock and unfinished-call table (ingest/parsers/syscalls.py stays the
 * definition of the format: any line this scanner is not certain of goes back to it). */
#include "syscore.h"

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

/* parser.<name> as a long long (ll) or a double (d), whichever is given; with `has`, None is
 * allowed and *has says whether a value was given (the number is then 0). Errors are left set
 * for read_state to find. */
static int attr_number(PyObject *parser, const char *name, int *has, long long *ll, double *d)
{
    PyObject *v = get_attr(parser, name);
    if (v == NULL)
        return -1;
    int given = v != Py_None;
    if (has != NULL)
        *has = given;
    int convert = has == NULL || given;
    if (ll != NULL)
        *ll = convert ? PyLong_AsLongLong(v) : 0;
    if (d != NULL)
        *d = convert ? PyFloat_AsDouble(v) : 0.0;
    Py_DECREF(v);
    return 0;
}

static int attr_truth(PyObject *parser, const char *name, int *out)
{
    PyObject *v = get_attr(parser, name);
    if (v == NULL)
        return -1;
    *out = PyObject_IsTrue(v);
    Py_DECREF(v);
    return 0;
}

static int read_state(PyObject *parser, StraceState *st, long long *n, PyObject **unfinished)
{
    if (attr_number(parser, "_n", NULL, n, NULL) < 0 ||
        attr_number(parser, "_main_pid", &st->has_main, &st->main_pid, NULL) < 0)
        return -1;
    PyObject *v = get_attr(parser, "_hm");
    if (v == NULL)
        return -1;
    Py_ssize_t hn;
    const char *hm = PyUnicode_AsUTF8AndSize(v, &hn);
    if (hm == NULL || hn >= (Py_ssize_t)sizeof(st->hm)) {
        Py_DECREF(v);
        return hm == NULL ? -1 : 1;
    }
    memcpy(st->hm, hm, hn);
    st->hm_n = (int)hn;
    Py_DECREF(v);
    if (attr_number(parser, "_hm_s", NULL, &st->hm_s, NULL) < 0 ||
        attr_number(parser, "_day", NULL, NULL, &st->day) < 0 ||
        attr_number(parser, "_clock", NULL, NULL, &st->clock) < 0 ||
        attr_number(parser, "_last_clock", &st->has_last_clock, NULL, &st->last_clock) < 0 ||
        attr_number(parser, "_epoch", &st->has_epoch, &st->epoch, NULL) < 0 ||
        attr_truth(parser, "_decided", &st->decided) < 0 ||
        attr_truth(parser, "_any_dur", &st->any_dur) < 0)
        return -1;
    if ((v = get_attr(parser, "_unfinished")) == NULL)
        return -1;
    if (!PyDict_Check(v)) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "_unfinished must be a dict");
        return -1;
    }
    *unfinished = v; /* new reference */
    return PyErr_Occurred() ? -1 : 0;
}

static int write_state(PyObject *parser, const StraceState *st, long long n)
{
#define PUT(name, expr)                                                      \
    do {                                                                     \
        PyObject *_v = (expr);                                               \
        if (_v == NULL || set_attr(parser, name, _v) < 0) {    \
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
PyObject *Core_strace_run(Core *c, PyObject *const *args, Py_ssize_t nargs)
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
    long long n = 0, n0, events = 0; /* events: signal and exit lines, which are no call */
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
            events++;
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
    if (n - n0 > events) { /* as feed: a signal or an exit line alone is not a call seen */
        if (set_attr(parser, "_seen_call", Py_True) < 0)
            return NULL;
    }
    return Py_BuildValue("(nLi)", pos, n, status);
error:
    PyMem_Free(buf);
    Py_DECREF(unfinished);
    return NULL;
}
