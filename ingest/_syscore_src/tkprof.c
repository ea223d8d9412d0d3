/* ingest/_syscore_src/tkprof.c: tkprof_tables(), the runs of a tkprof report's statements
 * (ingest/parsers/tkprof.py's feed_run).
 *
 * Why: a report is mostly per-statement tables (the call table's rows and rulers, the wait
 * table's rows, the blank lines between parts), and each of those lines cost feed_run's loop a
 * regex, its groups, float() per cell and a method call in Python. Here they are read where they
 * lie and applied to the parser's own state exactly as feed_run applies them: a call row sets
 * stmt.calls[kind] to a tuple of 7 floats (_call_row), a wait row adds [count, max, total] into
 * stmt.waits (_add_wait), a blank line ends a table (CALLS/ROWSRC/WAITS -> STRUCT), a ruler inside
 * a table is nothing. With the tables in C, a statement's other lines were most of what was left
 * in Python (issue 19: 20.5 MB/s at 1 GB), each a trip out of this loop and back: so the
 * attribute lines and table headers (`_attr`: Misses, Optimizer, Parsing user id, Number of plan,
 * Rows, call, Elapsed times, Event waited, the wait table's dashes) are read here too, SQL text
 * (`_add_text`) when the detector's memo says no other format starts on the line (what feed_one
 * asks; a memo that is not a plain dict, detect.Answers, works a missing answer out when asked
 * its `get`), and stars and a SQL ID line call the parser's own _on_stars / _new_stmt (closing a
 * statement stays in Python) and the run goes on.
 *
 * The Python reader stays the definition: this accepts a strict subset of what feed_run reads, in
 * the states it applies each in (attribute lines: printable ASCII, the regex's exact shape), and
 * stops, leaving the line to Python, at anything else and wherever Python would do more: a call
 * row or call header that starts a statement, a new event past MAX_EVENTS, numbers of more than
 * 15 digits (the MAX_VALUE check), misses over 12 digits, a recursive depth the first match does
 * not read, text beyond printable ASCII, SQL text the memo has no answer for or that starts like
 * another line, and a line longer than max_line. tkprof.NATIVE = False turns it off; tests
 * compare both.
 */
#include "syscore.h"

static inline int blank(unsigned char c) { return c == ' ' || c == '\t'; }

/* [0-9]+ (with_frac: then maybe '.' [0-9]+) from i, at most 15 digits in all; returns the end or
 * -1 */
static Py_ssize_t num_end(const unsigned char *s, Py_ssize_t i, Py_ssize_t end, int with_frac)
{
    Py_ssize_t a = i;
    int digits = 0;
    while (i < end && is_digit(s[i]))
        i++, digits++;
    if (i == a)
        return -1;
    if (with_frac && i < end && s[i] == '.') {
        Py_ssize_t b = ++i;
        while (i < end && is_digit(s[i]))
            i++, digits++;
        if (i == b)
            return -1;
    }
    return digits > 15 ? -1 : i;
}

static int tk_starts(const unsigned char *s, Py_ssize_t i, Py_ssize_t end, const char *word)
{
    size_t n = strlen(word);
    return (Py_ssize_t)n <= end - i && memcmp(s + i, word, n) == 0;
}

/* Does an event name at i start like a line _FAST's wait alternative leaves to others? */
static int excluded(const unsigned char *s, Py_ssize_t i, Py_ssize_t end)
{
    static const char *const prefixes[] = {
        "TKPROF:",        "Optimizer ",          "Parsing user id:",     "Trace file",
        "Sort options:",  "The following ",      "Error encountered:",   "parse error offset:",
        "error during execute", "SQL ID:",       "Plan Hash:",           "Misses in ",
        "Number of plan ", "OVERALL ",           "Elapsed times ",       "Event waited ",
        "Row Source",     NULL};
    for (int k = 0; prefixes[k]; k++)
        if (tk_starts(s, i, end, prefixes[k]))
            return 1;
    unsigned char c = s[i];
    if (is_digit(c) || c == '*' || c == '-')
        return 1;
    if (tk_starts(s, i, end, "ORA-") && i + 4 < end && is_digit(s[i + 4]))
        return 1;
    if (tk_starts(s, i, end, "Rows") && !(i + 4 < end && is_word(s[i + 4])))
        return 1;
    static const char *const kinds[] = {"Parse", "Execute", "Fetch", "total", "call", NULL};
    for (int k = 0; kinds[k]; k++) {
        Py_ssize_t n = (Py_ssize_t)strlen(kinds[k]);
        if (tk_starts(s, i, end, kinds[k]) && i + n < end && py_space(s[i + n]))
            return 1;
    }
    return 0;
}

/* The call row's kind at i ("Parse", ...): its index in `kinds`, its length in *len; -1 if none */
static int call_kind(const unsigned char *s, Py_ssize_t i, Py_ssize_t end, Py_ssize_t *len)
{
    static const char *const kinds[] = {"Parse", "Execute", "Fetch", "total"};
    for (int k = 0; k < 4; k++) {
        Py_ssize_t n = (Py_ssize_t)strlen(kinds[k]);
        if (tk_starts(s, i, end, kinds[k]) && i + n < end && blank(s[i + n])) {
            *len = n;
            return k;
        }
    }
    return -1;
}

/* A plan line in ROWSRC (`_step_rowsource` then `_add_rowsource`): [ \t]* rows [rows_avg
 * rows_max] [ \t]+ operation "(cr=... )", ASCII only, every number at most 15 digits.
 * Returns 1 when taken, 0 to leave the line to Python, -1 on an error. */
static int plan_line(PyObject *stmt, const unsigned char *s, Py_ssize_t pos, Py_ssize_t e,
                     Py_ssize_t max_rows)
{
    if (e - pos > 4000) /* _FAST reads at most 4,000 characters after the first digit */
        return 0;
    for (Py_ssize_t q = pos; q < e; q++)
        if (!((s[q] >= 0x20 && s[q] < 0x7f) || s[q] == '\t'))
            return 0;
    if (s[e - 1] != ')')
        return 0;
    PyObject *o = get_attr(stmt, "rs_three");
    if (o == NULL)
        return -1;
    int three = PyObject_IsTrue(o);
    Py_DECREF(o);
    if (three < 0)
        return -1;
    int want = three ? 3 : 1;
    Py_ssize_t i = pos;
    double nums[3];
    while (i < e && is_ws(s[i]))
        i++;
    for (int k = 0; k < want; k++) {
        Py_ssize_t a = i;
        while (i < e && is_digit(s[i]))
            i++;
        Py_ssize_t b = i;
        if (a == b || b - a > 15 || i == e || !is_ws(s[i]))
            return 0;
        while (i < e && is_ws(s[i]))
            i++;
        if (parse_decimal((const char *)s + a, b - a, &nums[k]) < 0)
            return -1;
    }
    if (i == e)
        return 0;
    Py_ssize_t col = i - pos, op = i;
    /* the first "(cr=" and the ")" after it: RE_ROWSRC_STATS */
    Py_ssize_t st = -1;
    for (Py_ssize_t q = op; q + 4 <= e; q++)
        if (s[q] == '(' && s[q + 1] == 'c' && s[q + 2] == 'r' && s[q + 3] == '=') {
            st = q;
            break;
        }
    if (st < 0)
        return 0;
    Py_ssize_t close = st + 4;
    while (close < e && s[close] != ')')
        close++;
    if (close >= e && s[close - 1] != ')')
        return 0;
    if (close >= e)
        return 0;

    PyObject *lines = get_attr(stmt, "row_source_lines");
    PyObject *rows = get_attr(stmt, "row_source");
    PyObject *base = get_attr(stmt, "rs_base_col");
    PyObject *stats = NULL, *row = NULL, *tmp = NULL;
    int result = -1;
    if (lines == NULL || rows == NULL || base == NULL || !PyList_Check(rows) ||
        !PyLong_CheckExact(lines))
        goto done;
    long nlines = PyLong_AsLong(lines);
    if (nlines == -1 && PyErr_Occurred())
        goto done;
    if (PyList_GET_SIZE(rows) >= max_rows) { /* counted, not kept */
        if ((tmp = PyLong_FromLong(nlines + 1)) == NULL ||
            set_attr(stmt, "row_source_lines", tmp) < 0)
            goto done;
        result = 1;
        goto done;
    }
    /* the statistics: RE_KV.findall, (\w+)=(\d+), left to right */
    stats = PyDict_New();
    if (stats == NULL)
        goto done;
    for (Py_ssize_t q = st + 1; q < close;) {
        if (!is_word(s[q])) {
            q++;
            continue;
        }
        Py_ssize_t a = q;
        while (q < close && is_word(s[q]))
            q++;
        if (q < close && s[q] == '=' && q + 1 < close && is_digit(s[q + 1])) {
            Py_ssize_t d = q + 1, f = d;
            while (f < close && is_digit(s[f]))
                f++;
            double v;
            if (f - d > 15) {
                result = 0;
                goto done;
            }
            if (parse_decimal((const char *)s + d, f - d, &v) < 0)
                goto done;
            PyObject *k = PyUnicode_FromStringAndSize((const char *)s + a, q - a);
            PyObject *fv = PyFloat_FromDouble(v);
            int r = (k == NULL || fv == NULL) ? -1 : PyDict_SetItem(stats, k, fv);
            Py_XDECREF(k);
            Py_XDECREF(fv);
            if (r < 0)
                goto done;
            q = f;
        }
    }
    Py_ssize_t oa = op, ob = st;
    while (oa < ob && is_ws(s[oa]))
        oa++;
    while (ob > oa && is_ws(s[ob - 1]))
        ob--;
    if (ob - oa > 200)
        ob = oa + 200;
    long base_col;
    if (base == Py_None) {
        base_col = (long)col;
        if ((tmp = PyLong_FromLong(base_col)) == NULL ||
            set_attr(stmt, "rs_base_col", tmp) < 0)
            goto done;
        Py_CLEAR(tmp);
    } else {
        base_col = PyLong_AsLong(base);
        if (base_col == -1 && PyErr_Occurred())
            goto done;
    }
    long depth = (long)col - base_col;
    if (depth < 0)
        depth = 0;
    PyObject *avg = three ? PyFloat_FromDouble(nums[1]) : (Py_INCREF(Py_None), Py_None);
    PyObject *mx = three ? PyFloat_FromDouble(nums[2]) : (Py_INCREF(Py_None), Py_None);
    row = (avg == NULL || mx == NULL)
              ? NULL
              : Py_BuildValue("{s:d,s:O,s:O,s:l,s:s#,s:O}", "rows", nums[0], "rows_avg", avg,
                              "rows_max", mx, "depth", depth, "operation",
                              (const char *)s + oa, ob - oa, "stats", stats);
    Py_XDECREF(avg);
    Py_XDECREF(mx);
    if (row == NULL || PyList_Append(rows, row) < 0)
        goto done;
    if ((tmp = PyLong_FromLong(nlines + 1)) == NULL ||
        set_attr(stmt, "row_source_lines", tmp) < 0)
        goto done;
    result = 1;
done:
    Py_XDECREF(lines);
    Py_XDECREF(rows);
    Py_XDECREF(base);
    Py_XDECREF(stats);
    Py_XDECREF(row);
    Py_XDECREF(tmp);
    return result;
}

/* A line's whole text against a pattern: ' ' is [ \t]++, '~' is [ \t]*+, '`' a literal space,
 * anything else itself. Returns where the match ends, -1 if it does not. */
static Py_ssize_t pat(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, const char *p)
{
    for (; *p; p++) {
        if (*p == ' ' || *p == '~') {
            Py_ssize_t a = i;
            while (i < e && blank(s[i]))
                i++;
            if (*p == ' ' && i == a)
                return -1;
        } else if (i < e && s[i] == (unsigned char)(*p == '`' ? ' ' : *p)) {
            i++;
        } else {
            return -1;
        }
    }
    return i;
}

/* printable ASCII and tab from i to e: where the C reader reads words the Python reader reads
 * with \s, \S, \w and str.split() (which beyond ASCII mean more) */
static int ascii_text(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    for (; i < e; i++)
        if (!plain_byte(s[i]))
            return 0;
    return 1;
}

/* a run of non-blanks from i (\S+ in printable ASCII); returns its end, i if none */
static Py_ssize_t word_end(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    while (i < e && !blank(s[i]))
        i++;
    return i;
}

static int set_attr_str(PyObject *o, const char *name, const unsigned char *s, Py_ssize_t n)
{
    PyObject *v = PyUnicode_FromStringAndSize((const char *)s, n);
    if (v == NULL)
        return -1;
    int r = set_attr(o, name, v);
    Py_DECREF(v);
    return r;
}

static int set_attr_long(PyObject *o, const char *name, long n)
{
    PyObject *v = PyLong_FromLong(n);
    if (v == NULL)
        return -1;
    int r = set_attr(o, name, v);
    Py_DECREF(v);
    return r;
}

/* *out = o.name, an int attribute; -1 on an error */
static int read_attr_long(PyObject *o, const char *name, long long *out)
{
    PyObject *v = get_attr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* o.name += n for an int attribute; -1 on an error (or not an exact int) */
static int add_attr_long(PyObject *o, const char *name, long long n)
{
    long long cur;
    if (read_attr_long(o, name, &cur) < 0)
        return -1;
    PyObject *w = PyLong_FromLongLong(cur + n);
    if (w == NULL)
        return -1;
    int r = set_attr(o, name, w);
    Py_DECREF(w);
    return r;
}

/* An attribute line or table header of a statement (feed_run's `_attr`) outside SQL text, read
 * as the one regex that reads it would; the state it leaves in *state. Returns 1 when taken, 0
 * to leave the line to Python (another line, a shape the regex would read otherwise, a bound),
 * -1 on an error. stmt is not None. */
static int attr_line(PyObject *stmt, const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                     int in_waits, long *state, long st_struct, long st_rowsrc, long st_waits)
{
    Py_ssize_t j;
    if (!ascii_text(s, i, e))
        return 0;
    switch (s[i]) {
    case 'M': /* RE_MISSES; more than 12 digits is malformed: Python's */
        if ((j = pat(s, i, e, "Misses`in`library`cache`during`parse:~")) >= 0 ||
            (j = pat(s, i, e, "Misses`in`library`cache`during`execute:~")) >= 0) {
            int parse = s[i + 31] == 'p';
            int k = digits(s, j, e, 12);
            if (k <= 0 || j + k != e)
                return 0;
            long long n = 0;
            for (Py_ssize_t q = j; q < e; q++)
                n = n * 10 + (s[q] - '0');
            if (add_attr_long(stmt, parse ? "misses_parse" : "misses_execute", n) < 0)
                return -1;
            *state = st_struct;
            return 1;
        }
        return 0;
    case 'O': /* RE_OPTIMIZER: the first word after the colon, the rest ignored */
        if ((j = pat(s, i, e, "Optimizer`mode:~")) < 0 && (j = pat(s, i, e, "Optimizer`goal:~")) < 0)
            return 0;
        if (j == e)
            return 0;
        if (set_attr_str(stmt, "optimizer_mode", s + j, word_end(s, j, e) - j) < 0)
            return -1;
        *state = st_struct;
        return 1;
    case 'P': { /* RE_USER, then RE_DEPTH searched in the rest */
        if ((j = pat(s, i, e, "Parsing`user`id:~")) < 0 || j == e)
            return 0;
        Py_ssize_t u = word_end(s, j, e);
        long depth = 0;
        for (Py_ssize_t q = u; q + 16 <= e; q++) {
            if (memcmp(s + q, "recursive depth:", 16) != 0)
                continue;
            Py_ssize_t d = q + 16;
            while (d < e && blank(s[d]))
                d++;
            int k = digits(s, d, e, 6);
            if (k <= 0 || (d + k < e && is_word(s[d + k])))
                return 0; /* the first one does not read: Python searches on */
            for (Py_ssize_t x = d; x < d + k; x++)
                depth = depth * 10 + (s[x] - '0');
            break;
        }
        if (set_attr_str(stmt, "user", s + j, u - j) < 0 || set_attr_long(stmt, "depth", depth) < 0)
            return -1;
        *state = st_struct;
        return 1;
    }
    case 'N': /* RE_PLAN_STATS */
        if ((j = pat(s, i, e, "Number`of`plan`statistics`captured:~")) < 0)
            return 0;
        if (j == e || digits(s, j, e, (int)(e - j)) != e - j)
            return 0;
        *state = st_struct;
        return 1;
    case 'R': { /* RE_ROWSRC_HEADER */
        static const char *const three[] = {
            "Rows (1st) Rows (avg) Rows (max) Row`Source`Operation",
            "Rows (1st) Rows (avg) Rows (max) Execution`Plan", NULL};
        static const char *const one[] = {"Rows Row`Source`Operation", "Rows Execution`Plan",
                                          NULL};
        int is3 = -1;
        for (int k = 0; three[k] && is3 < 0; k++)
            if (pat(s, i, e, three[k]) == e)
                is3 = 1;
        for (int k = 0; one[k] && is3 < 0; k++)
            if (pat(s, i, e, one[k]) == e)
                is3 = 0;
        if (is3 < 0)
            return 0;
        if (set_attr(stmt, "rs_three", is3 ? Py_True : Py_False) < 0 ||
            set_attr(stmt, "rs_base_col", Py_None) < 0)
            return -1;
        *state = st_rowsrc;
        return 1;
    }
    case 'E': /* RE_WAIT_INTRO, RE_WAIT_HEAD1 */
        if (pat(s, i, e, "Elapsed`times`include`waiting`on`following`events:") != e &&
            pat(s, i, e, "Event`waited`on Times Max.~Wait Total`Waited") != e)
            return 0;
        *state = st_waits;
        return 1;
    case '-': /* RE_WAIT_HEAD2, inside a wait table only */
        if (!in_waits)
            return 0;
        j = i;
        while (j < e && s[j] == '-')
            j++;
        if (j == i || (j = pat(s, j, e, " Waited ")) < 0)
            return 0;
        for (int k = 0; k < 2; k++) {
            Py_ssize_t a = j;
            while (j < e && s[j] == '-')
                j++;
            if (j == a)
                return 0;
            if (k == 0 && (j = pat(s, j, e, " ")) < 0)
                return 0;
        }
        return j == e;
    }
    return 0;
}

/* RE_CALL_HEADER */
static int call_header(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    return pat(s, i, e, "call count cpu elapsed disk query current rows") == e;
}

/* Does a line in SQL text start like one _step reads otherwise (RE_HEADER, the call header,
 * stars, a call row, SQL ID, Plan Hash)? Then Python reads it. */
static int sql_other(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    static const char *const words[] = {"TKPROF:", "call", "*",      "Parse",      "Execute",
                                        "Fetch",   "total", "SQL ID:", "Plan Hash:", NULL};
    for (int k = 0; words[k]; k++)
        if (tk_starts(s, i, e, words[k]))
            return 1;
    return 0;
}

/* A SQL text line (`_add_text`): stmt.text_lines += 1 and, while the excerpt is short, its words
 * joined by one space after the text so far, cut at `excerpt` characters. */
static int sql_text(PyObject *stmt, const unsigned char *s, Py_ssize_t i, Py_ssize_t e,
                    Py_ssize_t excerpt)
{
    if (add_attr_long(stmt, "text_lines", 1) < 0)
        return -1;
    PyObject *text = get_attr(stmt, "text");
    if (text == NULL)
        return -1;
    if (!PyUnicode_Check(text)) {
        Py_DECREF(text);
        PyErr_SetString(PyExc_TypeError, "stmt.text");
        return -1;
    }
    Py_ssize_t have = PyUnicode_GET_LENGTH(text);
    if (have >= excerpt) {
        Py_DECREF(text);
        return 0;
    }
    /* " ".join(line.split()), as much of it as the excerpt can take */
    Py_ssize_t room = excerpt - have - (have > 0);
    char buf[512];
    Py_ssize_t n = 0;
    for (Py_ssize_t q = i; q < e && n < room;) {
        if (blank(s[q])) {
            while (q < e && blank(s[q]))
                q++;
            buf[n++] = ' ';
        } else {
            buf[n++] = (char)s[q++];
        }
    }
    PyObject *words = PyUnicode_FromStringAndSize(buf, n);
    PyObject *out = NULL;
    if (words != NULL && have > 0) {
        PyObject *sp = PyUnicode_FromString(" ");
        PyObject *a = sp == NULL ? NULL : PyUnicode_Concat(text, sp);
        out = a == NULL ? NULL : PyUnicode_Concat(a, words);
        Py_XDECREF(sp);
        Py_XDECREF(a);
    } else if (words != NULL) {
        out = words;
        Py_INCREF(out);
    }
    Py_DECREF(text);
    Py_XDECREF(words);
    if (out == NULL)
        return -1;
    int r = set_attr(stmt, "text", out);
    Py_DECREF(out);
    return r;
}

static int set_state(PyObject *p, long state)
{
    PyObject *v = PyLong_FromLong(state);
    if (v == NULL)
        return -1;
    int r = set_attr(p, "_state", v);
    Py_DECREF(v);
    return r;
}

/* After a call into the parser (a statement closed or opened): its state and statement again,
 * the statement's dicts to be fetched anew. */
static int resync(PyObject *p, long *state, PyObject **stmt, PyObject **calls, PyObject **waits)
{
    Py_CLEAR(*calls);
    Py_CLEAR(*waits);
    Py_CLEAR(*stmt);
    if ((*stmt = get_attr(p, "_stmt")) == NULL)
        return -1;
    long long st;
    if (read_attr_long(p, "_state", &st) < 0)
        return -1;
    *state = (long)st;
    return 0;
}

/* p.method(**kw) (kw may be NULL) with the state so far written back first, then the state and
 * statement read again (resync): a statement closed or opened by the parser's own method. */
static int in_parser(PyObject *p, const char *method, PyObject *kw, long *state, PyObject **stmt,
                     PyObject **calls, PyObject **waits)
{
    if (set_state(p, *state) < 0)
        return -1;
    PyObject *m = get_attr(p, method);
    PyObject *args = m == NULL ? NULL : PyTuple_New(0);
    PyObject *got = args == NULL ? NULL : PyObject_Call(m, args, kw);
    Py_XDECREF(m);
    Py_XDECREF(args);
    if (got == NULL)
        return -1;
    Py_DECREF(got);
    return resync(p, state, stmt, calls, waits);
}

/* "SQL ID: id [Plan Hash: digits]" (RE_SQL_ID) -> the keywords of p._new_stmt(sql_id=...,
 * plan_hash=...); NULL without an error when the line does not read so. */
static PyObject *sql_id_kwargs(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    if (!ascii_text(s, i, e))
        return NULL;
    Py_ssize_t j = pat(s, i, e, "SQL`ID:~");
    if (j < 0)
        return NULL;
    Py_ssize_t a = j;
    while (j < e && is_word(s[j]))
        j++;
    Py_ssize_t b = j, ha = -1;
    if (a == b)
        return NULL;
    if (j < e) {
        if ((j = pat(s, j, e, " Plan`Hash:~")) < 0)
            return NULL;
        ha = j;
        while (j < e && is_digit(s[j]))
            j++;
        if (j == ha || j != e)
            return NULL;
    }
    PyObject *kw = Py_BuildValue("{s:s#}", "sql_id", (const char *)s + a, b - a);
    if (kw == NULL)
        return NULL;
    PyObject *hash = ha < 0 ? (Py_INCREF(Py_None), Py_None)
                            : PyUnicode_FromStringAndSize((const char *)s + ha, e - ha);
    if (hash == NULL || PyDict_SetItemString(kw, "plan_hash", hash) < 0) {
        Py_XDECREF(hash);
        Py_DECREF(kw);
        return NULL;
    }
    Py_DECREF(hash);
    return kw;
}

/* tkprof_tables(parser, text, pos, endpos, states, kinds, max_line, max_events, max_rows,
 *               plain, max_sql_lines, excerpt) -> (pos, taken)
 *   states: (START, CALLS, STRUCT, ROWSRC, WAITS, TRAILER, SQL), tkprof.py's constants; kinds: the
 *   four call kinds as str ("Parse", "Execute", "Fetch", "total"), the keys of stmt.calls;
 *   max_rows: MAX_ROWSOURCE_ROWS, the plan lines kept per statement; plain: the detector's memo
 *   ((type(parser), line) -> does another format start on it), which alone lets a SQL text
 *   line be read here; max_sql_lines, excerpt: MAX_SQL_LINES, TEXT_EXCERPT. Stars and a SQL ID
 *   line outside SQL text call the parser's own `_on_stars` / `_new_stmt` (a statement closes). */
PyObject *tkprof_tables(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 12 || !PyUnicode_Check(args[1]) || !PyTuple_Check(args[4]) ||
        PyTuple_GET_SIZE(args[4]) != 7 || !PyTuple_Check(args[5]) ||
        PyTuple_GET_SIZE(args[5]) != 4 || !PyDict_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError, "tkprof_tables(parser, text, pos, endpos, states, "
                                         "kinds, max_line, max_events, max_rows, plain, "
                                         "max_sql_lines, excerpt)");
        return NULL;
    }
    PyObject *p = args[0], *text = args[1], *kinds = args[5], *plain = args[9];
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    Py_ssize_t endpos = PyLong_AsSsize_t(args[3]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[6]);
    Py_ssize_t max_events = PyLong_AsSsize_t(args[7]);
    Py_ssize_t max_rows = PyLong_AsSsize_t(args[8]);
    long max_sql = PyLong_AsLong(args[10]);
    Py_ssize_t excerpt = PyLong_AsSsize_t(args[11]);
    long st_start = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 0));
    long st_calls = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 1));
    long st_struct = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 2));
    long st_rowsrc = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 3));
    long st_waits = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 4));
    long st_trailer = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 5));
    long st_sql = PyLong_AsLong(PyTuple_GET_ITEM(args[4], 6));
    if (PyErr_Occurred())
        return NULL;
    if (excerpt < 0 || excerpt > 500) { /* sql_text's buffer */
        PyErr_SetString(PyExc_ValueError, "excerpt must be 0..500");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || endpos > n || pos < 0)
        return Py_BuildValue("(nn)", pos, (Py_ssize_t)0);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);

    long long st0;
    if (read_attr_long(p, "_state", &st0) < 0)
        return NULL;
    long state = (long)st0, state0 = state;
    PyObject *stmt = get_attr(p, "_stmt");
    if (stmt == NULL)
        return NULL;
    PyObject *calls = NULL, *waits = NULL; /* the statement's dicts, fetched when first needed */
    Py_ssize_t taken = 0;

    while (pos < endpos) {
        Py_ssize_t end, le;
        if (!line_at(s, pos, endpos, max_line, &end, &le))
            break;
        Py_ssize_t e = le;
        int has_nl = end < n; /* the match takes the newline (feed_run's limit allows it) */
        if (has_nl && end - pos == max_line)
            break;
        Py_ssize_t next = end + has_nl;
        /* [ \t]*+ \r*+ before the line's end: the content is what precedes them (e: the CRs
         * are off) */
        while (e > pos && blank(s[e - 1]))
            e--;
        Py_ssize_t i = pos;
        while (i < e && blank(s[i]))
            i++;
        if (i == e) { /* a blank line */
            if (state == st_start)
                break;
            if (state == st_calls || state == st_rowsrc || state == st_waits)
                state = st_struct;
            taken++;
            pos = next;
            continue;
        }
        if (s[i] == '*') { /* stars: _on_stars closes the statement */
            Py_ssize_t j = i;
            while (j < e && s[j] == '*')
                j++;
            if (j != e || j - i < 10)
                break;
            if (in_parser(p, "_on_stars", NULL, &state, &stmt, &calls, &waits) < 0)
                goto fail;
            state0 = state;
            taken++;
            pos = next;
            continue;
        }
        if (i == pos && s[i] == '-') { /* a ruler: -++(?:[ \t]++-++)*+ */
            Py_ssize_t j = i;
            int ok = 1;
            while (j < e) {
                if (s[j] == '-') {
                    j++;
                } else if (blank(s[j])) {
                    while (j < e && blank(s[j]))
                        j++;
                    if (j < e && s[j] != '-')
                        ok = 0;
                } else {
                    ok = 0;
                    break;
                }
                if (!ok)
                    break;
            }
            if (ok && (state == st_calls || state == st_rowsrc || state == st_struct)) {
                taken++;
                pos = next;
                continue;
            }
            if (ok && state != st_sql)
                break;
            /* else SQL text, or a line that starts with dashes (the wait table's header) */
        }
        Py_ssize_t klen;
        int kind = call_kind(s, i, e, &klen);
        if (kind >= 0) { /* a call row: kind, then 7 numbers (the 2nd and 3rd may have decimals) */
            if (state == st_trailer || stmt == Py_None)
                break;
            Py_ssize_t j = i + klen;
            double v[7];
            int ok = 1;
            for (int c = 0; c < 7 && ok; c++) {
                Py_ssize_t b = j;
                while (j < e && blank(s[j]))
                    j++;
                Py_ssize_t a = j;
                if (a == b || (j = num_end(s, a, e, c == 1 || c == 2)) < 0) {
                    ok = 0;
                    break;
                }
                if (parse_decimal((const char *)s + a, j - a, &v[c]) < 0)
                    goto fail;
            }
            if (!ok || j != e)
                break;
            if (calls == NULL && (calls = get_attr(stmt, "calls")) == NULL)
                goto fail;
            PyObject *key = PyTuple_GET_ITEM(kinds, kind);
            int has = PyDict_Contains(calls, key);
            if (has < 0)
                goto fail;
            if (has)
                break; /* a new statement starts: _call_row */
            PyObject *t = PyTuple_New(7);
            if (t == NULL)
                goto fail;
            for (int c = 0; c < 7; c++) {
                PyObject *f = PyFloat_FromDouble(v[c]);
                if (f == NULL) {
                    Py_DECREF(t);
                    goto fail;
                }
                PyTuple_SET_ITEM(t, c, f);
            }
            int r = PyDict_SetItem(calls, key, t);
            Py_DECREF(t);
            if (r < 0)
                goto fail;
            state = st_calls;
            taken++;
            pos = next;
            continue;
        }
        if (state == st_rowsrc && is_digit(s[i])) { /* a plan line */
            if (stmt == Py_None)
                break;
            int r = plan_line(stmt, s, pos, e, max_rows);
            if (r < 0)
                goto fail;
            if (r == 0)
                break;
            taken++;
            pos = next;
            continue;
        }
        if (state != st_start && state != st_trailer && state != st_sql &&
            tk_starts(s, i, e, "SQL ID:")) { /* a statement closes, the next opens */
            PyObject *kw = sql_id_kwargs(s, i, e);
            if (kw == NULL) {
                if (PyErr_Occurred())
                    goto fail;
                break;
            }
            int r = in_parser(p, "_new_stmt", kw, &state, &stmt, &calls, &waits);
            Py_DECREF(kw);
            if (r < 0)
                goto fail;
            state0 = state;
            taken++;
            pos = next;
            continue;
        }
        if (state != st_start && state != st_trailer && stmt != Py_None) {
            if (s[i] == 'c' && call_header(s, i, e)) { /* _on_call_header */
                if (calls == NULL && (calls = get_attr(stmt, "calls")) == NULL)
                    goto fail;
                if (!PyDict_Check(calls) || PyDict_GET_SIZE(calls) > 0)
                    break; /* a new statement: Python's */
                state = st_calls;
                taken++;
                pos = next;
                continue;
            }
            if (state == st_sql) { /* SQL text (_step_sql, _add_text) */
                if (sql_other(s, i, e) || !ascii_text(s, pos, le))
                    break;
                long long lines;
                if (read_attr_long(stmt, "text_lines", &lines) < 0)
                    goto fail;
                if (lines >= max_sql)
                    break;
                /* the detector hands it to this block only if no other format starts on it */
                PyObject *line = PyUnicode_Substring(text, pos, le);
                PyObject *key = line == NULL ? NULL : PyTuple_Pack(2, (PyObject *)Py_TYPE(p), line);
                Py_XDECREF(line);
                if (key == NULL)
                    goto fail;
                PyObject *other = PyDict_GetItemWithError(plain, key);
                int alone = other == Py_False; /* no other format starts on the line */
                if (other == NULL && !PyErr_Occurred() && !PyDict_CheckExact(plain)) {
                    /* the detector's memo (detect.Answers) works a missing answer out: asked
                     * here, the run goes on in C instead of leaving for the line */
                    PyObject *get = interned("get");
                    other = get == NULL ? NULL : PyObject_CallMethodOneArg(plain, get, key);
                    alone = other == Py_False;
                    Py_XDECREF(other);
                }
                Py_DECREF(key);
                if (PyErr_Occurred())
                    goto fail;
                if (!alone)
                    break;
                if (sql_text(stmt, s, i, e, excerpt) < 0)
                    goto fail;
                taken++;
                pos = next;
                continue;
            }
            int r = attr_line(stmt, s, i, e, state == st_waits, &state, st_struct, st_rowsrc,
                              st_waits);
            if (r < 0)
                goto fail;
            if (r > 0) {
                taken++;
                pos = next;
                continue;
            }
        }
        /* a wait row: [ \t]++ event [ \t]++ int [ \t]++ dec [ \t]++ dec */
        if (i == pos || state != st_waits || stmt == Py_None || excluded(s, i, e))
            break;
        Py_ssize_t cut[3], stop[3];
        Py_ssize_t j = e;
        int ok = 1;
        for (int c = 2; c >= 0; c--) { /* the three numbers from the end */
            Py_ssize_t b = j;
            while (j > i && (is_digit(s[j - 1]) || s[j - 1] == '.'))
                j--;
            if (j == b || j == i || !blank(s[j - 1]) ||
                num_end(s, j, b, c > 0) != b) {
                ok = 0;
                break;
            }
            cut[c] = j;
            stop[c] = b;
            while (j > i && blank(s[j - 1]))
                j--;
        }
        if (!ok || j == i || j - i > 402)
            break;
        for (Py_ssize_t q = i; q < j && ok; q++)
            if (!((s[q] >= 0x20 && s[q] < 0x7f) || s[q] == '\t'))
                ok = 0;
        if (!ok)
            break;
        double v[3];
        for (int c = 0; c < 3; c++)
            if (parse_decimal((const char *)s + cut[c], stop[c] - cut[c], &v[c]) < 0)
                goto fail;
        if (waits == NULL && (waits = get_attr(stmt, "waits")) == NULL)
            goto fail;
        PyObject *name = PyUnicode_FromStringAndSize((const char *)s + i, j - i);
        if (name == NULL)
            goto fail;
        PyObject *cur = PyDict_GetItemWithError(waits, name);
        if (cur == NULL) {
            if (PyErr_Occurred() || PyDict_GET_SIZE(waits) >= max_events) {
                Py_DECREF(name);
                if (PyErr_Occurred())
                    goto fail;
                break; /* counted as dropped by _add_wait */
            }
            PyObject *row = Py_BuildValue("[ddd]", v[0], v[1], v[2]);
            int r = row == NULL ? -1 : PyDict_SetItem(waits, name, row);
            Py_XDECREF(row);
            Py_DECREF(name);
            if (r < 0)
                goto fail;
        } else {
            Py_DECREF(name);
            if (!PyList_CheckExact(cur) || PyList_GET_SIZE(cur) != 3)
                break;
            double c0 = PyFloat_AsDouble(PyList_GET_ITEM(cur, 0));
            double c1 = PyFloat_AsDouble(PyList_GET_ITEM(cur, 1));
            double c2 = PyFloat_AsDouble(PyList_GET_ITEM(cur, 2));
            if (PyErr_Occurred())
                goto fail;
            PyObject *a = PyFloat_FromDouble(c0 + v[0]);
            PyObject *c = PyFloat_FromDouble(c2 + v[2]);
            if (a == NULL || c == NULL) {
                Py_XDECREF(a);
                Py_XDECREF(c);
                goto fail;
            }
            PyList_SetItem(cur, 0, a);
            if (v[1] > c1) { /* max(cur[1], max_s): the first of equals stays */
                PyObject *m = PyFloat_FromDouble(v[1]);
                if (m == NULL) {
                    Py_DECREF(c);
                    goto fail;
                }
                PyList_SetItem(cur, 1, m);
            }
            PyList_SetItem(cur, 2, c);
        }
        taken++;
        pos = next;
    }
    Py_XDECREF(calls);
    Py_XDECREF(waits);
    Py_DECREF(stmt);
    if (state != state0 && set_state(p, state) < 0)
        return NULL;
    return Py_BuildValue("(nn)", pos, taken);
fail:
    Py_XDECREF(calls);
    Py_XDECREF(waits);
    Py_XDECREF(stmt);
    return NULL;
}
