/* ingest/_syscore_src/awr.c: awr_rows(), the runs of rows of an open ruled table of an AWR or
 * Statspack report (ingest/parsers/waits.py's run_step).
 *
 * Why: a report's event, statistics and time model tables are most of its lines, and each row
 * cost the waits parser's `_feed` a dozen checks (titles, sections, snapshot lines, rulers), then
 * `_split_row` (tokens, `parse_number` per cell) and `_assign` (the column whose right edge is
 * nearest each number) in Python. Here a row is split and its numbers assigned where it lies; the
 * Python side applies it to the table as `_row` does (`WaitsParser._take_row`).
 *
 * The Python reader stays the definition: this reads a strict subset of what `_feed` reads as a
 * row of the open table, and stops, leaving the line to Python, at anything else: a line longer
 * than max_line, a blank line, a byte beyond printable ASCII (a tab too), a first character that
 * is not a letter (rulers, notes, page breaks start otherwise), a first word that may begin a
 * title the case-insensitive regexes read (foreground, background, wait, enqueue, instance,
 * interval, init, begin, end) or a Top N title ('top'), a ':' with a
 * '(' (RE_MINUTES), a '~', a row whose spacing was collapsed, a unit one space after a token
 * (`_tokens` joins '52.86 s'), a token `parse_number` might read otherwise than this does (signs,
 * decimal commas, more than 15 digits, values past MAX_VALUE), a name ending in '-' or 'N/A',
 * words after the numbers where the table has no Wait Class / Reason column, and more numbers
 * than value columns. A row starting with a capital ('DB time', 'SQL*Net ...': a fifth of an
 * archive's rows) may still be a section title (`awr_report.section_of`, case-sensitive titles
 * such as 'Host CPU'): the caller asks section_of of those (WaitsParser._titled_row).
 * waits.NATIVE = False turns it off; tests compare both.
 *
 * awr_rows(text, pos, endpos, cols, ends, words_after, max_line) -> (pos, rows): cols are the
 * table's value columns (`_value_columns`), ends their right edges; rows is a list of (next,
 * line, name, cells, trailing) with cells [(column, value, unit or None)] as `_assign` gives them
 * and trailing the words after the numbers joined, at most 60 characters. */
#include "syscore.h"

#define AWR_TOKENS 128

/* Does the line's first word start (case-insensitively) like a title or snapshot line? With
 * `row` (a line holding a number), not 'system' / 'session': RE_TITLE reads those only as the
 * whole line 'Session waits' and the like, words alone ('session logical reads' is a row). */
static int title_word(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, int row)
{
    static const char *const words[] = {"foreground", "background", "wait",   "enqueue",
                                        "instance",   "interval",   "init",   "begin",
                                        "end",        "top",        "system", "session",
                                        NULL};
    for (int k = 0; words[k] && !(row && k >= 10); k++) {
        Py_ssize_t n = (Py_ssize_t)strlen(words[k]);
        if (n > e - i)
            continue;
        Py_ssize_t j = 0;
        while (j < n && (s[i + j] | 0x20) == (unsigned char)words[k][j])
            j++;
        if (j == n)
            return 1;
    }
    return 0;
}

enum { T_WORD, T_NUMBER, T_HOLD, T_UNSURE };

/* What `parse_number` makes of the token [a, b): a word (None, and not a placeholder), a
 * placeholder ('-', 'N/A'), a number of the plain shapes ([0-9]+ or [0-9]{1,3}(,[0-9]{3})+, then
 * maybe .[0-9]+, or .[0-9]+; then [KMGT] or ns/us/ms/s, then maybe '%') with its value and unit,
 * or unsure (what this does not read: the line goes to Python). */
static int token_kind(const unsigned char *s, Py_ssize_t a, Py_ssize_t b, double *value,
                      double *unit, int *has_unit)
{
    Py_ssize_t n = b - a;
    if ((n == 1 && s[a] == '-') || (n == 3 && memcmp(s + a, "N/A", 3) == 0))
        return T_HOLD;
    int digit = 0, other = 0;
    for (Py_ssize_t q = a; q < b; q++) {
        unsigned char c = s[q];
        if (is_digit(c))
            digit = 1;
        else if (!strchr("+-,.%KMGTnums", c))
            other = 1;
    }
    if (!digit || other)
        return T_WORD; /* RE_HAS_DIGIT or RE_NUMBER cannot match */
    char buf[32];
    int nb = 0, nd = 0;
    Py_ssize_t i = a;
    if (s[i] == '.') {
        buf[nb++] = '0';
    } else {
        Py_ssize_t g = i;
        while (i < b && is_digit(s[i]))
            i++;
        Py_ssize_t first = i - g;
        if (first == 0)
            return T_UNSURE;
        if (i < b && s[i] == ',') {
            if (first > 3)
                return T_UNSURE; /* '1234,5': a decimal comma, maybe */
            while (i < b && s[i] == ',') {
                if (b - i < 4 || !is_digit(s[i + 1]) || !is_digit(s[i + 2]) ||
                    !is_digit(s[i + 3]))
                    return T_UNSURE;
                i += 4;
            }
            if (i < b && is_digit(s[i]))
                return T_UNSURE;
        }
        for (Py_ssize_t q = g; q < i; q++)
            if (s[q] != ',') {
                if (nb >= 20)
                    return T_UNSURE;
                buf[nb++] = (char)s[q];
                nd++;
            }
    }
    if (i < b && s[i] == '.') {
        Py_ssize_t f = ++i;
        while (i < b && is_digit(s[i]))
            i++;
        if (i == f || i - f + nb >= 30)
            return T_UNSURE;
        buf[nb++] = '.';
        for (Py_ssize_t q = f; q < i; q++, nd++)
            buf[nb++] = (char)s[q];
    }
    if (nd > 15)
        return T_UNSURE;
    double scale = 1.0;
    *has_unit = 0;
    if (i < b && strchr("KMGT", s[i])) {
        scale = s[i] == 'K' ? 1e3 : s[i] == 'M' ? 1e6 : s[i] == 'G' ? 1e9 : 1e12;
        i++;
    } else if (i < b) {
        static const char *const units[] = {"ns", "us", "ms", "s"};
        static const double secs[] = {1e-9, 1e-6, 1e-3, 1.0};
        for (int k = 0; k < 4; k++) {
            Py_ssize_t un = (Py_ssize_t)strlen(units[k]);
            if (b - i >= un && memcmp(s + i, units[k], un) == 0 &&
                (i + un == b || s[i + un] == '%')) {
                *has_unit = 1;
                *unit = secs[k];
                i += un;
                break;
            }
        }
    }
    if (i < b && s[i] == '%')
        i++;
    if (i != b)
        return T_UNSURE;
    double v;
    if (parse_decimal(buf, nb, &v) < 0)
        return -1;
    v *= scale;
    if (!(v <= 1e18)) /* MAX_VALUE: parse_number gives None, the token is a word */
        return T_UNSURE;
    *value = v;
    return T_NUMBER;
}

/* Append a new item (NULL: an error already set) to the runs' list, taking its reference:
 * 0, or -1 on an error. */
static int take_item(PyObject *list, PyObject *item)
{
    if (item == NULL || PyList_Append(list, item) < 0) {
        Py_XDECREF(item);
        return -1;
    }
    Py_DECREF(item);
    return 0;
}

typedef struct {
    Py_ssize_t a, b;
    int kind, has_unit;
    double value, unit;
} AwrTok;

/* One row of the line [pos, e): 1 when read (into *row, a new reference), 0 to leave the line to
 * Python, -1 on an error. */
static int awr_row(const unsigned char *s, Py_ssize_t pos, Py_ssize_t e, PyObject *cols,
                   const Py_ssize_t *ends, Py_ssize_t ncols, int words_after, PyObject **name,
                   PyObject **cells, PyObject **trailing)
{
    Py_ssize_t i = pos;
    while (i < e && s[i] == ' ')
        i++;
    while (e > i && s[e - 1] == ' ')
        e--;
    if (i == e || !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) ||
        title_word(s, i, e, 1))
        return 0;
    int colon = 0, paren = 0, doubled = 0;
    for (Py_ssize_t q = i; q < e; q++) {
        unsigned char c = s[q];
        if (c < 0x20 || c > 0x7e || c == '~')
            return 0;
        colon |= c == ':';
        paren |= c == '(';
        doubled |= c == ' ' && s[q + 1] == ' '; /* q + 1 < e: e ends in a non-space */
    }
    if ((colon && paren) || !doubled)
        return 0;
    AwrTok toks[AWR_TOKENS];
    int nt = 0;
    for (Py_ssize_t q = i; q < e;) {
        while (q < e && s[q] == ' ')
            q++;
        Py_ssize_t a = q;
        while (q < e && s[q] != ' ')
            q++;
        if (nt == AWR_TOKENS)
            return 0;
        Py_ssize_t n = q - a;
        /* a unit one space after another token: `_tokens` may join it ('52.86 s') */
        if (nt > 0 && a == toks[nt - 1].b + 1 &&
            ((n == 1 && s[a] == 's') ||
             (n == 2 && s[a + 1] == 's' && (s[a] == 'n' || s[a] == 'u' || s[a] == 'm'))))
            return 0;
        toks[nt].a = a;
        toks[nt].b = q;
        toks[nt].kind = -2; /* read from the end below, only as far as needed */
        nt++;
    }
    /* from the end: the words after the numbers, then the run of cells (`_split_row`) */
    int end = nt;
    while (end > 0) {
        AwrTok *t = &toks[end - 1];
        t->kind = token_kind(s, t->a, t->b, &t->value, &t->unit, &t->has_unit);
        if (t->kind < 0)
            return -1;
        if (t->kind == T_UNSURE)
            return 0;
        if (t->kind != T_WORD)
            break;
        end--;
    }
    int start = end;
    while (start > 0) {
        AwrTok *t = &toks[start - 1];
        if (t->kind == -2) {
            t->kind = token_kind(s, t->a, t->b, &t->value, &t->unit, &t->has_unit);
            if (t->kind < 0)
                return -1;
        }
        if (t->kind == T_UNSURE)
            return 0;
        if (t->kind == T_WORD)
            break;
        start--;
    }
    while (start < end && toks[start].kind == T_HOLD)
        start++;
    if (start == end || start == 0)
        return 0; /* no number, or no name */
    if (end < nt && !words_after)
        return 0;
    Py_ssize_t nn = end - start;
    if (nn > ncols)
        return 0;
    Py_ssize_t ne = toks[start].a;
    while (ne > i && s[ne - 1] == ' ')
        ne--;
    if (s[ne - 1] == '-' || (ne - i >= 3 && memcmp(s + ne - 3, "N/A", 3) == 0))
        return 0; /* RE_NAME_TAIL's empty cells */
    /* `_assign`: each number to the column whose right edge is nearest, left to right */
    Py_ssize_t chosen[AWR_TOKENS];
    Py_ssize_t lo = 0;
    for (Py_ssize_t k = 0; k < nn; k++) {
        Py_ssize_t at = toks[start + k].b - pos; /* columns count from the line's start */
        Py_ssize_t best = lo, gap = ends[lo] > at ? ends[lo] - at : at - ends[lo];
        for (Py_ssize_t j = lo + 1; j < ncols - (nn - k) + 1; j++) {
            Py_ssize_t d = ends[j] > at ? ends[j] - at : at - ends[j];
            if (d < gap) {
                best = j;
                gap = d;
            }
        }
        chosen[k] = best;
        lo = best + 1;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return -1;
    for (Py_ssize_t k = 0; k < nn; k++) {
        AwrTok *t = &toks[start + k];
        if (t->kind != T_NUMBER)
            continue; /* a '-' placeholder holds its cell and carries no value */
        PyObject *col = PyList_GET_ITEM(cols, chosen[k]);
        PyObject *cell = t->has_unit ? Py_BuildValue("(Odd)", col, t->value, t->unit)
                                     : Py_BuildValue("(OdO)", col, t->value, Py_None);
        if (cell == NULL || PyList_Append(out, cell) < 0) {
            Py_XDECREF(cell);
            Py_DECREF(out);
            return -1;
        }
        Py_DECREF(cell);
    }
    char words[64];
    Py_ssize_t nw = 0;
    for (int k = end; k < nt && nw < 60; k++) {
        if (k > end)
            words[nw++] = ' ';
        for (Py_ssize_t q = toks[k].a; q < toks[k].b && nw < 60; q++)
            words[nw++] = (char)s[q];
    }
    *name = PyUnicode_FromStringAndSize((const char *)s + i, ne - i);
    *trailing = PyUnicode_FromStringAndSize(words, nw);
    if (*name == NULL || *trailing == NULL) {
        Py_XDECREF(*name);
        Py_XDECREF(*trailing);
        Py_DECREF(out);
        return -1;
    }
    *cells = out;
    return 1;
}

PyObject *awr_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyUnicode_Check(args[0]) || !PyList_Check(args[3]) ||
        !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) != PyList_GET_SIZE(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "awr_rows(text, pos, endpos, cols, ends, words_after, max_line)");
        return NULL;
    }
    PyObject *text = args[0], *cols = args[3];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t endpos = PyLong_AsSsize_t(args[2]);
    int words_after = PyObject_IsTrue(args[5]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[6]);
    Py_ssize_t ncols = PyTuple_GET_SIZE(args[4]);
    if (PyErr_Occurred() || words_after < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *rows = PyList_New(0);
    if (rows == NULL)
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || endpos > n || pos < 0 || ncols == 0 ||
        ncols > AWR_TOKENS)
        return Py_BuildValue("(nN)", pos, rows);
    Py_ssize_t ends[AWR_TOKENS];
    for (Py_ssize_t k = 0; k < ncols; k++) {
        ends[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[4], k));
        if (ends[k] == -1 && PyErr_Occurred()) {
            Py_DECREF(rows);
            return NULL;
        }
    }
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    while (pos < endpos) {
        Py_ssize_t end, e;
        if (!line_at(s, pos, endpos, max_line, &end, &e))
            break;
        PyObject *name, *cells, *trailing;
        int r = awr_row(s, pos, e, cols, ends, ncols, words_after, &name, &cells, &trailing);
        if (r < 0) {
            Py_DECREF(rows);
            return NULL;
        }
        if (r == 0)
            break;
        Py_ssize_t next = end < n ? end + 1 : end;
        PyObject *line = PyUnicode_FromStringAndSize((const char *)s + pos, e - pos);
        PyObject *nx = PyLong_FromSsize_t(next);
        PyObject *row = line == NULL || nx == NULL ? NULL
                                                   : PyTuple_Pack(5, nx, line, name, cells, trailing);
        Py_XDECREF(line);
        Py_XDECREF(nx);
        Py_DECREF(name);
        Py_DECREF(cells);
        Py_DECREF(trailing);
        if (take_item(rows, row) < 0) {
            Py_DECREF(rows);
            return NULL;
        }
        pos = next;
    }
    return Py_BuildValue("(nN)", pos, rows);
}

/* awr_cells(line, spans) -> list of str, or None: awr_report._cells, the cells of a row under a
 * ruler's spans [(lo, hi)], each token to the first span holding it (lo <= b - 1 < hi + 1 or
 * lo <= a < hi), else to the first whose end is nearest its end, the tokens of a cell joined by
 * one space. Why: the SQL ordered by rows and the report header are read by the ruler's cells,
 * and the Python loop made a tuple per token and span (a third of a SQL row's time). None when
 * the line holds anything but printable ASCII (what `\S` splits on beyond it is Python's to say)
 * or there are no spans: the caller then runs the Python function, the reference. */
PyObject *awr_cells(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "awr_cells(line, spans)");
        return NULL;
    }
    PyObject *line = args[0], *spans = args[1];
    Py_ssize_t ns = PyList_GET_SIZE(spans), n = PyUnicode_GET_LENGTH(line);
    if (ns == 0 || ns > AWR_TOKENS || PyUnicode_KIND(line) != PyUnicode_1BYTE_KIND)
        Py_RETURN_NONE;
    const unsigned char *s = PyUnicode_1BYTE_DATA(line);
    for (Py_ssize_t q = 0; q < n; q++)
        if (s[q] < 0x20 || s[q] > 0x7e)
            Py_RETURN_NONE;
    Py_ssize_t lo[AWR_TOKENS], hi[AWR_TOKENS], len[AWR_TOKENS];
    for (Py_ssize_t i = 0; i < ns; i++) {
        PyObject *sp = PyList_GET_ITEM(spans, i);
        if (!PyTuple_Check(sp) || PyTuple_GET_SIZE(sp) != 2)
            Py_RETURN_NONE;
        lo[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sp, 0));
        hi[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sp, 1));
        if (PyErr_Occurred())
            return NULL;
        len[i] = 0;
    }
    /* each token (where it lies, its span), the cells' lengths, then their text */
    Py_ssize_t *tok = PyMem_Malloc(sizeof(Py_ssize_t) * 3 * (size_t)(n / 2 + 1));
    if (tok == NULL)
        return PyErr_NoMemory();
    Py_ssize_t nt = 0;
    for (Py_ssize_t q = 0; q < n;) {
        while (q < n && s[q] == ' ')
            q++;
        if (q == n)
            break;
        Py_ssize_t a = q;
        while (q < n && s[q] != ' ')
            q++;
        Py_ssize_t b = q, best = 0, bk0 = 2, bk1 = 0;
        for (Py_ssize_t i = 0; i < ns; i++) {
            Py_ssize_t k0 = (lo[i] <= b - 1 && b - 1 < hi[i] + 1) || (lo[i] <= a && a < hi[i]) ? 0 : 1;
            Py_ssize_t k1 = hi[i] > b ? hi[i] - b : b - hi[i];
            if (k0 < bk0 || (k0 == bk0 && k1 < bk1)) {
                best = i;
                bk0 = k0;
                bk1 = k1;
            }
        }
        tok[3 * nt] = a;
        tok[3 * nt + 1] = b;
        tok[3 * nt + 2] = best;
        nt++;
        len[best] += (len[best] ? 1 : 0) + (b - a);
    }
    PyObject *out = PyList_New(ns);
    PyObject **cell = PyMem_Malloc(sizeof(PyObject *) * (size_t)ns);
    Py_ssize_t *fill = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)ns);
    if (out == NULL || cell == NULL || fill == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < ns; i++) {
        cell[i] = PyUnicode_New(len[i], 127);
        if (cell[i] == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, cell[i]);
        fill[i] = 0;
    }
    for (Py_ssize_t t = 0; t < nt; t++) {
        Py_ssize_t a = tok[3 * t], b = tok[3 * t + 1], i = tok[3 * t + 2];
        Py_UCS1 *d = PyUnicode_1BYTE_DATA(cell[i]);
        if (fill[i])
            d[fill[i]++] = ' ';
        memcpy(d + fill[i], s + a, (size_t)(b - a));
        fill[i] += b - a;
    }
    PyMem_Free(tok);
    PyMem_Free(cell);
    PyMem_Free(fill);
    return out;
fail:
    PyMem_Free(tok);
    PyMem_Free(cell);
    PyMem_Free(fill);
    Py_XDECREF(out);
    return PyErr_Occurred() ? NULL : PyErr_NoMemory();
}

/* awr_lines(text, pos, endpos, section, max_line) -> (pos, lines): the run of lines of a
 * report section that `WaitsParser._feed` hands to the ReportReader and that change nothing but
 * what the line's kind says (WaitsParser._report_lines applies them). Why: in an archive of
 * reports two thirds of the lines come in the detector's runs, and after the table rows (awr_rows)
 * most are the Load Profile's rows, the SQL text under SQL ordered by, the sections read for their
 * title only (init.ora parameters, ...) and blank lines, each ~25 us through `feed_one`, `feed`,
 * `_feed`, `section_of`, three snapshot regexes and the section's reader.
 *
 * section: AWR_LOAD (rows 'Label:  1,234.5  12.3' of the Load Profile), AWR_SQL (text lines under
 * a keyed SQL ordered by table: no two spaces inside, no 13-character [0-9a-z] word that could be
 * a SQL Id: `_sql_line` counts them as noise) or AWR_SKIP (any line of a section read for its
 * title). Each item is (next, line, kind, label, values): kind AWR_BLANK (spaces only), AWR_ROW
 * (a Load Profile row: its label, stripped, and its numbers as `to_float` reads them, each a
 * plain number of `token_kind`'s with no unit or '%') or AWR_TEXT (noise or a skipped line).
 *
 * It stops at a line it cannot vouch for: longer than max_line, a byte beyond printable ASCII, a
 * first word that may begin a title (title_word: RE_TITLE, RE_TOP_TITLE, RE_SNAP, RE_INTERVAL), a
 * page header (OUTPUT, ...), a '(' after a ':' (RE_MINUTES), a ':' in a line holding 'sess'
 * (RE_AAS). What it cannot see is the caller's to check on each line: `section_of` (the titles
 * are many, case-sensitive and kept in awr_report.py) and whether the detector would hand the line
 * to the parser at all (`claims` or the detector's memo). */
enum { AWR_LOAD = 1, AWR_SQL = 2, AWR_SKIP = 3 };
enum { AWR_BLANK = 0, AWR_ROW = 1, AWR_TEXT = 2 };

/* Is [i, e) (non-blank, trimmed) a line `_feed` passes to the report section's reader as is? */
static int report_text(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    static const char *const pages[] = {"OUTPUT", "COLUMN_VALUE", "PLAN_TABLE_OUTPUT", NULL};
    if (title_word(s, i, e, 0))
        return 0;
    for (int k = 0; pages[k]; k++)
        if ((Py_ssize_t)strlen(pages[k]) == e - i && memcmp(s + i, pages[k], e - i) == 0)
            return 0;
    int colon = 0, sess = 0;
    for (Py_ssize_t q = i; q < e; q++) {
        unsigned char c = s[q];
        if (c < 0x20 || c > 0x7e)
            return 0;
        if (c == '(' && colon)
            return 0;
        colon |= c == ':';
        sess |= q + 4 <= e && (c | 0x20) == 's' && (s[q + 1] | 0x20) == 'e' &&
                (s[q + 2] | 0x20) == 's' && (s[q + 3] | 0x20) == 's';
    }
    return !(colon && sess);
}

/* A Load Profile row: label, then ':', then plain numbers (RE_KV_NUMS with every `to_float` not
 * None). 1 with *label and *values set (new references), 0 to leave it, -1 on an error. */
static int load_row(const unsigned char *s, Py_ssize_t i, Py_ssize_t e, PyObject **label,
                    PyObject **values)
{
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
        return 0;
    const unsigned char *c = memchr(s + i, ':', (size_t)(e - i));
    if (c == NULL)
        return 0;
    Py_ssize_t colon = c - s, le = colon;
    while (le > i && s[le - 1] == ' ')
        le--;
    if (colon + 1 >= e || s[colon + 1] != ' ')
        return 0;
    double v[AWR_TOKENS];
    Py_ssize_t nv = 0;
    for (Py_ssize_t q = colon + 1; q < e;) {
        while (q < e && s[q] == ' ')
            q++;
        Py_ssize_t a = q;
        while (q < e && s[q] != ' ')
            q++;
        double unit;
        int has_unit = 0;
        if (nv == AWR_TOKENS || s[q - 1] == '%')
            return 0;
        int kind = token_kind(s, a, q, &v[nv], &unit, &has_unit);
        if (kind < 0)
            return -1;
        if (kind != T_NUMBER || has_unit)
            return 0;
        nv++;
    }
    *values = PyTuple_New(nv);
    if (*values == NULL)
        return -1;
    for (Py_ssize_t k = 0; k < nv; k++) {
        PyObject *f = PyFloat_FromDouble(v[k]);
        if (f == NULL) {
            Py_DECREF(*values);
            return -1;
        }
        PyTuple_SET_ITEM(*values, k, f);
    }
    *label = PyUnicode_FromStringAndSize((const char *)s + i, le - i);
    if (*label == NULL) {
        Py_DECREF(*values);
        return -1;
    }
    return 1;
}

/* A line of SQL text under a keyed SQL ordered by table: `_sql_line`'s collapsed branch finds no
 * SQL Id in it (no two spaces inside, no word of 13 [0-9a-z]), so it is noise. */
static int sql_noise_line(const unsigned char *s, Py_ssize_t i, Py_ssize_t e)
{
    Py_ssize_t r = i;
    while (r < e && (s[r] == '-' || s[r] == '~' || s[r] == ' '))
        r++;
    if (r == e)
        return 0; /* RE_RULER's shape: new columns, maybe */
    for (Py_ssize_t q = i; q < e;) {
        Py_ssize_t a = q;
        while (q < e && s[q] != ' ')
            q++;
        if (q - a == 13) {
            Py_ssize_t k = a;
            while (k < q && ((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'z')))
                k++;
            if (k == q)
                return 0;
        }
        if (q < e && s[q + 1] == ' ')
            return 0; /* two spaces inside: read by the ruler's cells (q + 1 < e: e trimmed) */
        q++;
    }
    return 1;
}

PyObject *awr_lines(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "awr_lines(text, pos, endpos, section, max_line)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t endpos = PyLong_AsSsize_t(args[2]);
    long section = PyLong_AsLong(args[3]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND || endpos > n || pos < 0 ||
        section < AWR_LOAD || section > AWR_SKIP)
        return Py_BuildValue("(nN)", pos, out);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    while (pos < endpos) {
        Py_ssize_t end, le;
        if (!line_at(s, pos, endpos, max_line, &end, &le))
            break;
        Py_ssize_t i = pos, e = le;
        while (i < e && s[i] == ' ')
            i++;
        while (e > i && s[e - 1] == ' ')
            e--;
        int kind = AWR_TEXT;
        PyObject *label = Py_None, *values = Py_None;
        Py_INCREF(label);
        Py_INCREF(values);
        if (i == e) {
            kind = AWR_BLANK; /* spaces only (a tab or a CR inside is Python's) */
        } else if (!report_text(s, i, e)) {
            kind = -1;
        } else if (section == AWR_LOAD) {
            Py_DECREF(label);
            Py_DECREF(values);
            int r = load_row(s, i, e, &label, &values);
            if (r < 0) {
                Py_DECREF(out);
                return NULL;
            }
            if (r == 0) {
                label = values = Py_None;
                Py_INCREF(label);
                Py_INCREF(values);
                kind = -1;
            } else {
                kind = AWR_ROW;
            }
        } else if (section == AWR_SQL && !sql_noise_line(s, i, e)) {
            kind = -1;
        }
        if (kind < 0) {
            Py_DECREF(label);
            Py_DECREF(values);
            break;
        }
        Py_ssize_t next = end < n ? end + 1 : end;
        PyObject *line = PyUnicode_FromStringAndSize((const char *)s + pos, le - pos);
        if (line == NULL) {
            Py_DECREF(label);
            Py_DECREF(values);
            Py_DECREF(out);
            return NULL;
        }
        PyObject *item = Py_BuildValue("(nNiNN)", next, line, kind, label, values);
        if (take_item(out, item) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        pos = next;
    }
    return Py_BuildValue("(nN)", pos, out);
}
