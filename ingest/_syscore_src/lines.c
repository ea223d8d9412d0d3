/* ingest/_syscore_src/lines.c: what the truss and strace scanners share out of line (the per-line
 * ones, where a line ends and which call lines go to FdTargets, are static inline in syscore.h):
 * keeping a routed line for syscalls.FdTargets, the printable check of non-ASCII text, decimal
 * numbers parsed as CPython parses them, and small text helpers. */
#include "syscore.h"

/* Keep a line `routed` says FdTargets reads: the scanner counts it as usual and the parser
 * hands the text to FdTargets after the run (its tables depend on nothing else). */
int route_line(PyObject *routed_list, PyObject *text, Py_ssize_t pos, Py_ssize_t le,
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

/* interned(): open addressing on the literal's address. The C core names fewer than a hundred
 * attributes, so the table never fills; if it did, the name is still interned and returned,
 * its one reference kept (an interned str lives as long as the interpreter anyway). */
#define NAMES 512
static struct {
    const char *key;
    PyObject *name;
} names[NAMES];

PyObject *interned(const char *name)
{
    size_t i = (size_t)(((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ULL >> 55) & (NAMES - 1);
    for (size_t probe = 0; probe < NAMES; probe++, i = (i + 1) & (NAMES - 1)) {
        if (names[i].key == name)
            return names[i].name;
        if (names[i].key == NULL) {
            PyObject *s = PyUnicode_InternFromString(name);
            if (s != NULL) {
                names[i].key = name;
                names[i].name = s;
            }
            return s;
        }
    }
    return PyUnicode_InternFromString(name);
}

/* Is every byte printable ASCII or a tab? (what the scanners read; anything else is left to
 * the Python path) */
int plain_line(const unsigned char *p, Py_ssize_t n)
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

void strip_span(const char **p, Py_ssize_t *n)
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
PyObject *joined(const char *prefix, const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t pn = (Py_ssize_t)strlen(prefix);
    PyObject *o = PyUnicode_New(pn + n, 127);
    if (o == NULL)
        return NULL;
    memcpy(PyUnicode_1BYTE_DATA(o), prefix, pn);
    memcpy(PyUnicode_1BYTE_DATA(o) + pn, p, n);
    return o;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* float() of digits[.digits] (no sign, no exponent), correctly rounded like CPython's: exact
 * integer over an exact power of ten when both fit in 53 bits, else CPython's own parser. */
int parse_decimal(const char *p, Py_ssize_t n, double *out)
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

/* pid_number(): 1-18 ASCII digits */
int ascii_pid(const Txt *t, long long *v)
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
