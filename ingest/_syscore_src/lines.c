/* ingest/_syscore_src/lines.c: what the truss and strace scanners share: where a line ends and
 * whether a scanner may read it, routing the lines syscalls.FdTargets reads, decimal numbers
 * parsed as CPython parses them, and small text helpers. */
#include "syscore.h"

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
int routed(const unsigned char *s, Py_ssize_t name_s, Py_ssize_t name_n, Py_ssize_t args_s,
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

/* The line at pos: its end e (the newline or endpos) and le (before trailing CRs). Returns 0 if
 * a scanner may read it, 1 if it is for the Python path: longer than MAX_LINE, or holding a CR
 * inside it or a character beyond printable ASCII and tab. Runs hold no control character
 * (Parser.feed_run's contract), so in ASCII text only the CR test is needed. */
int next_line(const unsigned char *s, Py_ssize_t pos, Py_ssize_t endpos, int ascii,
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

int contains(const unsigned char *s, Py_ssize_t n, const char *w)
{
    size_t wn = strlen(w);
    for (Py_ssize_t i = 0; i + (Py_ssize_t)wn <= n; i++)
        if (s[i] == (unsigned char)w[0] && memcmp(s + i, w, wn) == 0)
            return 1;
    return 0;
}
