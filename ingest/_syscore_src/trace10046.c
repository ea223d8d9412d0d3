/* ingest/_syscore_src/trace10046.c: trace10046_waits(), the run of WAIT lines a raw 10046 trace
 * is mostly made of (ingest/parsers/trace10046.py, Trace10046Parser.feed_run).
 *
 * Why: a level-12 trace is two thirds WAIT lines, and the Python loop paid about a microsecond
 * and a half for each (the anchored regex, then the accounting written out inline). This reads
 * the same lines and does the same accounting on the parser's own objects: its events dict
 * (name -> [count, max, total]), its pending deque of (tim, ela, idle), and the clock
 * attributes (prev_end, last_tim, first_tim, tim_digits_max, max_gap, timed_waits, max_wait,
 * think, inside, dropped_events), read once per run and written back at its end.
 *
 * The Python code stays the reference (trace10046.NATIVE = False turns this off; the tests
 * compare both). Only the strict shape of _FAST's WAIT alternative is read here, with ASCII
 * digits:
 *     WAIT #<1-20 digits>: nam='<0-200 chars, no quote>' ela=<0-8 spaces><1-15 digits>
 *     [ <0-400 chars>] tim=<1-20 digits><spaces or CR>(\n | end of text)
 * and a line no longer than max_line; at any other line the run stops and Python reads it.
 * Numbers are converted as float() converts them (PyOS_string_to_double), sums are the same
 * double additions in the same order, so the evidence is identical.
 */
#include "syscore.h"

#define NAME_MAX_LEN 200
#define PARAMS_MAX 400
#define REST_KEPT 300

/* float(digits) for s[a:b] (ASCII digits only, at most 20): exact below 2**53 by integer sum,
 * else Python's own conversion */
static int digits_value(const unsigned char *s, Py_ssize_t a, Py_ssize_t b, double *out)
{
    if (b - a <= 15) {
        uint64_t v = 0;
        for (Py_ssize_t i = a; i < b; i++)
            v = v * 10 + (uint64_t)(s[i] - '0');
        *out = (double)v;
        return 0;
    }
    char buf[32];
    memcpy(buf, s + a, (size_t)(b - a));
    buf[b - a] = '\0';
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

static inline Py_ssize_t digit_run(const unsigned char *s, Py_ssize_t i, Py_ssize_t end)
{
    while (i < end && s[i] >= '0' && s[i] <= '9')
        i++;
    return i;
}

/* One line at s[pos:end] (end: its newline or the end of the text). Fills the offsets of the
 * parts or returns 0 when the line is not the strict shape. */
typedef struct {
    Py_ssize_t name_a, name_b, ela_a, ela_b, tim_a, tim_b;
} WaitLine;

static int read_wait(const unsigned char *s, Py_ssize_t pos, Py_ssize_t end, WaitLine *w)
{
    Py_ssize_t i = pos;
    if (end - i < 6 || memcmp(s + i, "WAIT #", 6) != 0)
        return 0;
    i += 6;
    Py_ssize_t j = digit_run(s, i, end);
    if (j == i || j - i > 20)
        return 0;
    i = j;
    if (end - i < 7 || memcmp(s + i, ": nam='", 7) != 0)
        return 0;
    i += 7;
    w->name_a = i;
    while (i < end && s[i] != '\'' && i - w->name_a <= NAME_MAX_LEN)
        i++;
    if (i >= end || s[i] != '\'' || i - w->name_a > NAME_MAX_LEN)
        return 0;
    w->name_b = i;
    i++;
    if (end - i < 5 || memcmp(s + i, " ela=", 5) != 0)
        return 0;
    i += 5;
    Py_ssize_t sp = i;
    while (i < end && s[i] == ' ')
        i++;
    if (i - sp > 8)
        return 0;
    w->ela_a = i;
    j = digit_run(s, i, end);
    if (j == i || j - i > 15)
        return 0;
    w->ela_b = i = j;
    /* the tail: spaces or CR after the tim digits, back from the line's end */
    Py_ssize_t e = end;
    while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\r'))
        e--;
    Py_ssize_t d = e;
    while (d > i && s[d - 1] >= '0' && s[d - 1] <= '9')
        d--;
    if (d == e || e - d > 20 || d - i < 5 || memcmp(s + d - 5, " tim=", 5) != 0)
        return 0;
    w->tim_a = d;
    w->tim_b = e;
    /* between ela's digits and " tim=": nothing, or a space and at most PARAMS_MAX more */
    Py_ssize_t params = (d - 5) - i;
    if (params > 0 && (s[i] != ' ' || params - 1 > PARAMS_MAX))
        return 0;
    return 1;
}

static int set_float_item(PyObject *list, Py_ssize_t k, double v)
{
    PyObject *f = PyFloat_FromDouble(v);
    if (f == NULL)
        return -1;
    return PyList_SetItem(list, k, f); /* steals f */
}

/* the optional float attributes: None or a float */
static int get_opt(PyObject *obj, const char *name, int *has, double *v)
{
    PyObject *o = get_attr(obj, name);
    if (o == NULL)
        return -1;
    if (o == Py_None) {
        *has = 0;
    } else {
        *has = 1;
        *v = PyFloat_AsDouble(o);
    }
    Py_DECREF(o);
    return PyErr_Occurred() ? -1 : 0;
}

static int set_opt(PyObject *obj, const char *name, int has, double v)
{
    if (!has)
        return set_attr(obj, name, Py_None);
    PyObject *f = PyFloat_FromDouble(v);
    if (f == NULL)
        return -1;
    int r = set_attr(obj, name, f);
    Py_DECREF(f);
    return r;
}

/* trace10046_waits(parser, text, pos, endpos, idle_events, max_events, max_pending, max_line)
 *   -> (pos, taken): reads WAIT lines from pos while they have the strict shape and end by
 *   endpos (a newline, or the end of the text). The caller makes sure no wrapped line is held,
 *   no SQL text and no BINDS block is open. */
PyObject *trace10046_waits(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "trace10046_waits(parser, text, pos, endpos, idle, max_events, "
                        "max_pending, max_line)");
        return NULL;
    }
    PyObject *p = args[0], *text = args[1], *idle_set = args[4];
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    Py_ssize_t endpos = PyLong_AsSsize_t(args[3]);
    Py_ssize_t max_events = PyLong_AsSsize_t(args[5]);
    Py_ssize_t max_pending = PyLong_AsSsize_t(args[6]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || endpos > n || pos < 0)
        return Py_BuildValue("(nn)", pos, (Py_ssize_t)0);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);

    PyObject *events = NULL, *pending = NULL, *append = NULL, *popleft = NULL;
    PyObject *max_wait = NULL, *max_gap = NULL, *o = NULL;
    PyObject *last_name = NULL; /* the previous line's name: reused while it repeats */
    PyObject *result = NULL;
    Py_ssize_t taken = 0;

    events = get_attr(p, "events");
    pending = get_attr(p, "pending");
    if (events == NULL || pending == NULL || !PyDict_Check(events))
        goto fail;
    append = get_attr(pending, "append");
    popleft = get_attr(pending, "popleft");
    max_wait = get_attr(p, "max_wait");
    max_gap = get_attr(p, "max_gap");
    if (append == NULL || popleft == NULL || max_wait == NULL || max_gap == NULL)
        goto fail;
    int has_prev, has_first, has_last;
    double prev, first, last;
    if (get_opt(p, "prev_end", &has_prev, &prev) < 0 ||
        get_opt(p, "first_tim", &has_first, &first) < 0 ||
        get_opt(p, "last_tim", &has_last, &last) < 0)
        goto fail;
    double think, inside;
    long digits_max, dropped;
    if ((o = get_attr(p, "think")) == NULL)
        goto fail;
    think = PyFloat_AsDouble(o);
    Py_CLEAR(o);
    if ((o = get_attr(p, "inside")) == NULL)
        goto fail;
    inside = PyFloat_AsDouble(o);
    Py_CLEAR(o);
    if ((o = get_attr(p, "tim_digits_max")) == NULL)
        goto fail;
    digits_max = PyLong_AsLong(o);
    Py_CLEAR(o);
    if ((o = get_attr(p, "dropped_events")) == NULL)
        goto fail;
    dropped = PyLong_AsLong(o);
    Py_CLEAR(o);
    if (PyErr_Occurred())
        goto fail;
    double wait_top = 0.0;
    int has_top = max_wait != Py_None;
    if (has_top) {
        if (!PyTuple_Check(max_wait) || PyTuple_GET_SIZE(max_wait) < 1)
            goto fail;
        wait_top = PyFloat_AsDouble(PyTuple_GET_ITEM(max_wait, 0));
    }
    double gap_top = 0.0;
    int has_gap = max_gap != Py_None;
    if (has_gap) {
        if (!PyTuple_Check(max_gap) || PyTuple_GET_SIZE(max_gap) < 1)
            goto fail;
        gap_top = PyFloat_AsDouble(PyTuple_GET_ITEM(max_gap, 0));
    }
    if (PyErr_Occurred())
        goto fail;
    Py_ssize_t npending = PyObject_Size(pending);
    if (npending < 0)
        goto fail;

    while (pos < endpos) {
        /* endpos is a newline (the run's last line ends there) or the end of the text */
        Py_ssize_t lim = endpos < n ? endpos + 1 : n;
        const unsigned char *nl = memchr(s + pos, '\n', (size_t)(lim - pos));
        if (nl == NULL && endpos != n)
            break;
        Py_ssize_t end = nl != NULL ? nl - s : n;
        Py_ssize_t next = nl != NULL ? end + 1 : n;
        if (next - pos > max_line)
            break; /* what the regex's match may span (its newline included) */
        WaitLine w;
        if (!read_wait(s, pos, end, &w))
            break;
        double ela, t;
        if (digits_value(s, w.ela_a, w.ela_b, &ela) < 0 ||
            digits_value(s, w.tim_a, w.tim_b, &t) < 0)
            goto fail;
        /* the event's name, and its row in events */
        Py_ssize_t nlen = w.name_b - w.name_a;
        PyObject *name = NULL;
        if (last_name != NULL && PyUnicode_KIND(last_name) == PyUnicode_1BYTE_KIND &&
            PyUnicode_GET_LENGTH(last_name) == nlen &&
            memcmp(PyUnicode_1BYTE_DATA(last_name), s + w.name_a, (size_t)nlen) == 0) {
            name = last_name;
            Py_INCREF(name);
        } else {
            name = PyUnicode_Substring(text, w.name_a, w.name_b);
            if (name == NULL)
                goto fail;
            Py_XSETREF(last_name, name);
            Py_INCREF(name);
        }
        PyObject *ev = PyDict_GetItemWithError(events, name); /* borrowed */
        if (ev == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(name);
                goto fail;
            }
            if (PyDict_GET_SIZE(events) >= max_events) {
                dropped++;
            } else {
                ev = Py_BuildValue("[ddd]", 0.0, 0.0, 0.0);
                if (ev == NULL || PyDict_SetItem(events, name, ev) < 0) {
                    Py_XDECREF(ev);
                    Py_DECREF(name);
                    goto fail;
                }
                Py_DECREF(ev); /* the dict holds it */
            }
        }
        if (ev != NULL) {
            if (!PyList_Check(ev) || PyList_GET_SIZE(ev) != 3) {
                Py_DECREF(name);
                goto fail;
            }
            double count = PyFloat_AsDouble(PyList_GET_ITEM(ev, 0));
            double top = PyFloat_AsDouble(PyList_GET_ITEM(ev, 1));
            double total = PyFloat_AsDouble(PyList_GET_ITEM(ev, 2));
            if (PyErr_Occurred() || set_float_item(ev, 0, count + 1) < 0 ||
                set_float_item(ev, 2, total + ela) < 0 ||
                (ela > top && set_float_item(ev, 1, ela) < 0)) {
                Py_DECREF(name);
                goto fail;
            }
        }
        int idle = PySet_Contains(idle_set, name);
        if (idle < 0) {
            Py_DECREF(name);
            goto fail;
        }
        if (!idle && (!has_top || ela > wait_top)) {
            /* the parameters are kept only for a new longest wait: rest[:300] */
            Py_ssize_t ra = w.ela_b, rb = w.tim_b;
            if (rb - ra > REST_KEPT)
                rb = ra + REST_KEPT;
            PyObject *rest = PyUnicode_Substring(text, ra, rb);
            PyObject *tup = rest != NULL ? Py_BuildValue("(dON)", ela, name, rest) : NULL;
            if (tup == NULL) {
                Py_DECREF(name);
                goto fail;
            }
            Py_SETREF(max_wait, tup);
            wait_top = ela;
            has_top = 1;
        }
        Py_DECREF(name);
        /* the clock (_tim) */
        long nd = (long)(w.tim_b - w.tim_a);
        if (nd > digits_max)
            digits_max = nd;
        if (!has_prev) {
            if (!has_first) {
                first = t;
                has_first = 1;
            }
        } else {
            double gap = t - ela - prev;
            if (gap > 0 && (!has_gap || gap > gap_top)) {
                PyObject *tup = Py_BuildValue("(ddd)", gap, prev, t);
                if (tup == NULL)
                    goto fail;
                Py_SETREF(max_gap, tup);
                gap_top = gap;
                has_gap = 1;
            }
        }
        prev = last = t;
        has_prev = has_last = 1;
        /* pending.append((t, ela, idle)), the oldest placed inside beyond max_pending */
        PyObject *item = Py_BuildValue("(ddO)", t, ela, idle ? Py_True : Py_False);
        if (item == NULL)
            goto fail;
        PyObject *r = PyObject_CallOneArg(append, item);
        Py_DECREF(item);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
        npending++;
        if (npending > max_pending) {
            PyObject *old = PyObject_CallNoArgs(popleft);
            if (old == NULL)
                goto fail;
            npending--;
            if (!PyTuple_Check(old) || PyTuple_GET_SIZE(old) != 3) {
                Py_DECREF(old);
                PyErr_SetString(PyExc_TypeError, "pending holds (tim, ela, idle)");
                goto fail;
            }
            double old_ela = PyFloat_AsDouble(PyTuple_GET_ITEM(old, 1));
            int old_idle = PyObject_IsTrue(PyTuple_GET_ITEM(old, 2));
            Py_DECREF(old);
            if (old_idle < 0 || PyErr_Occurred())
                goto fail;
            if (old_idle)
                think += old_ela;
            else
                inside += old_ela;
        }
        taken++;
        pos = next;
    }
    if (taken) {
        PyObject *f;
        if (set_opt(p, "prev_end", has_prev, prev) < 0 ||
            set_opt(p, "first_tim", has_first, first) < 0 ||
            set_opt(p, "last_tim", has_last, last) < 0 ||
            set_attr(p, "max_wait", max_wait) < 0 ||
            set_attr(p, "max_gap", max_gap) < 0 ||
            set_attr(p, "timed_waits", Py_True) < 0 ||
            set_attr(p, "seen_body", Py_True) < 0)
            goto fail;
        if ((f = PyFloat_FromDouble(think)) == NULL || set_attr(p, "think", f) < 0) {
            Py_XDECREF(f);
            goto fail;
        }
        Py_DECREF(f);
        if ((f = PyFloat_FromDouble(inside)) == NULL ||
            set_attr(p, "inside", f) < 0) {
            Py_XDECREF(f);
            goto fail;
        }
        Py_DECREF(f);
        if ((f = PyLong_FromLong(digits_max)) == NULL ||
            set_attr(p, "tim_digits_max", f) < 0) {
            Py_XDECREF(f);
            goto fail;
        }
        Py_DECREF(f);
        if ((f = PyLong_FromLong(dropped)) == NULL ||
            set_attr(p, "dropped_events", f) < 0) {
            Py_XDECREF(f);
            goto fail;
        }
        Py_DECREF(f);
    }
    result = Py_BuildValue("(nn)", pos, taken);
fail:
    Py_XDECREF(events);
    Py_XDECREF(pending);
    Py_XDECREF(append);
    Py_XDECREF(popleft);
    Py_XDECREF(max_wait);
    Py_XDECREF(max_gap);
    Py_XDECREF(last_name);
    Py_XDECREF(o);
    return result;
}
