/* ingest/_syscore_src/summary.c: strace_summary_rows(), the runs of `strace -c` table rows and
 * rulers (ingest/parsers/strace.py's _summary_run).
 *
 * Why: a monitoring log of `strace -c -p` tables is almost all rows, and each row cost the
 * Python run a regex, its groups and a call to _add_row (~2 us): the table stayed at ~20 MB/s of
 * CPU. Here a row is read where it lies and stored in the parser's held dict exactly as _add_row
 * stores it: syscall -> (columns, [number strings]).
 *
 * The Python reader stays the definition: this accepts a strict subset of what _SUM_RUN reads
 * (ASCII only; 3 to 5 numbers of ASCII digits then a name of [A-Za-z0-9_], or a ruler of two or
 * more dash runs), and stops, leaving the line to Python, at anything else and wherever
 * _add_row would do more than store the row: a 4-number row whose layout is not yet named in
 * the parser's per-header dict, a new name when the held dict is full (_hand_rows runs there),
 * a line longer than max_line. strace.NATIVE = False turns it off; tests compare both.
 */
#include "syscore.h"

/* One number cell as _SUM_NUM reads it: 1-15 digits, then maybe [.,] and 1-9 digits. Returns
 * the end of the cell, or -1. */
static Py_ssize_t number_end(const unsigned char *s, Py_ssize_t i, Py_ssize_t end)
{
    Py_ssize_t a = i;
    while (i < end && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == a || i - a > 15)
        return -1;
    if (i < end && (s[i] == '.' || s[i] == ',')) {
        Py_ssize_t b = ++i;
        while (i < end && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == b || i - b > 9)
            return -1;
    }
    return i;
}

/* is_word ([A-Za-z0-9_]) and is_ws ([ \t]) are syscore.h's */
#define blank is_ws

/* A ruler: [ \t]* -{3,} ([ \t]+ -{3,})+ [ \t\r]* to the line's end. */
static int is_ruler(const unsigned char *s, Py_ssize_t i, Py_ssize_t end)
{
    int runs = 0;
    while (i < end && blank(s[i]))
        i++;
    for (;;) {
        Py_ssize_t a = i;
        while (i < end && s[i] == '-')
            i++;
        if (i - a < 3)
            return 0;
        runs++;
        Py_ssize_t b = i;
        while (i < end && blank(s[i]))
            i++;
        if (i == end || s[i] != '-')
            break;
        if (i == b)
            return 0;
    }
    while (i < end && (blank(s[i]) || s[i] == '\r'))
        i++;
    return i == end && runs >= 2;
}

/* strace_summary_rows(text, pos, endpos, held, named, held_max, three, five, max_line)
 *   -> (pos, taken). `held` is the parser's _held_rows, `named` its _sum_named (a 4-number row's
 *   number ends, relative to the line start -> its columns), `three` and `five` the column tuples
 *   of 3- and 5-number rows. pos is where the first line not taken starts (past endpos by one
 *   when the last line taken ends at endpos without a newline, as the Python run returns). */
PyObject *strace_summary_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9 || !PyUnicode_Check(args[0]) || !PyDict_Check(args[3]) ||
        !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "strace_summary_rows(text, pos, endpos, held, named, "
                                         "held_max, three, five, max_line)");
        return NULL;
    }
    PyObject *text = args[0], *held = args[3], *named = args[4], *three = args[6],
             *five = args[7];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t endpos = PyLong_AsSsize_t(args[2]);
    Py_ssize_t held_max = PyLong_AsSsize_t(args[5]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || endpos > n || pos < 0)
        return Py_BuildValue("(nn)", pos, (Py_ssize_t)0);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t taken = 0;

    while (pos < endpos) {
        /* the Python run measures the match, which stops before trailing CRs are past $ */
        Py_ssize_t end, le;
        if (!line_at(s, pos, endpos, max_line, &end, &le))
            break;
        Py_ssize_t i = pos;
        while (i < end && blank(s[i]))
            i++;
        if (i < end && s[i] == '-') {
            if (!is_ruler(s, pos, end))
                break;
            taken++;
            pos = end + 1;
            continue;
        }
        Py_ssize_t starts[5], ends[5];
        int k = 0;
        while (k < 5 && i < end && s[i] >= '0' && s[i] <= '9') {
            Py_ssize_t e = number_end(s, i, end);
            if (e < 0 || e == end || !blank(s[e]))
                break;
            starts[k] = i;
            ends[k++] = e;
            i = e;
            while (i < end && blank(s[i]))
                i++;
        }
        if (k < 3 || i >= end)
            break;
        unsigned char c0 = s[i];
        if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_'))
            break;
        Py_ssize_t na = i;
        while (i < end && is_word(s[i]))
            i++;
        Py_ssize_t nb = i;
        while (i < end && (blank(s[i]) || s[i] == '\r'))
            i++;
        if (i != end)
            break; /* more after the name, or a byte beyond ASCII: Python's reading */

        PyObject *cols;
        if (k == 5) {
            cols = five;
            Py_INCREF(cols);
        } else if (k == 3) {
            cols = three;
            Py_INCREF(cols);
        } else {
            PyObject *key = Py_BuildValue("(nnnn)", ends[0] - pos, ends[1] - pos,
                                          ends[2] - pos, ends[3] - pos);
            if (key == NULL)
                return NULL;
            cols = PyDict_GetItemWithError(named, key);
            Py_DECREF(key);
            if (cols == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                break; /* a layout not named yet: _add_row names it */
            }
            Py_INCREF(cols);
        }
        PyObject *name = PyUnicode_FromStringAndSize((const char *)s + na, nb - na);
        if (name == NULL) {
            Py_DECREF(cols);
            return NULL;
        }
        int has = PyDict_Contains(held, name);
        if (has < 0 || (!has && PyDict_GET_SIZE(held) >= held_max)) {
            Py_DECREF(name);
            Py_DECREF(cols);
            if (has < 0)
                return NULL;
            break; /* the held rows are handed over first: _add_row does it */
        }
        PyObject *nums = PyList_New(k);
        if (nums == NULL) {
            Py_DECREF(name);
            Py_DECREF(cols);
            return NULL;
        }
        for (int j = 0; j < k; j++) {
            PyObject *t =
                PyUnicode_FromStringAndSize((const char *)s + starts[j], ends[j] - starts[j]);
            if (t == NULL) {
                Py_DECREF(nums);
                Py_DECREF(name);
                Py_DECREF(cols);
                return NULL;
            }
            PyList_SET_ITEM(nums, j, t);
        }
        PyObject *row = PyTuple_Pack(2, cols, nums);
        Py_DECREF(cols);
        Py_DECREF(nums);
        if (row == NULL) {
            Py_DECREF(name);
            return NULL;
        }
        int r = PyDict_SetItem(held, name, row);
        Py_DECREF(row);
        Py_DECREF(name);
        if (r < 0)
            return NULL;
        taken++;
        pos = end + 1;
    }
    return Py_BuildValue("(nn)", pos, taken);
}
