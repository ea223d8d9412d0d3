/* ingest/_syscore_src/stacks.c: stack_frames(), the frame reader of the stack formats (gdb and
 * Linux pstack `#N 0x.. in f () from lib`, Solaris/AIX pstack `addr f (args) + off`, perf script
 * `\taddr f+0xoff (module)`, DTrace ustack() `module`f+0xoff` frames and their count lines).
 *
 * Why: a stack dump is mostly frame lines, and reading each in Python (one regex, a cache look-up,
 * an append, a vote) cost about a microsecond a frame, the floor of stack.py's and dtrace.py's
 * `feed_run`. This reads a run of them in one call and hands back, per stack, a tuple of the
 * Frame objects Python built (through `make`, cached in `cache` by name and module), so the
 * per-stack work (FunctionStats.add_stack) stays Python's, and so does every other line.
 *
 * The Python readers stay the reference: each shape here accepts only what the parser's own
 * `_FAST` regex reads the same way (a strict subset: anything in doubt, text beyond ASCII, a
 * line too long, a shape that depends on state this does not know), and stops there so the
 * Python path reads that line. tests/test_stack_core.py compares the two on every fixture,
 * corpus snippet and on generated and hostile captures.
 */
#include "syscore.h"

/* the shapes a caller allows (stack.py / dtrace.py say which are open to the run) */
#define SH_GDB 1    /* #N  0xADDR in name () [from lib] */
#define SH_PSTACK 2 /* [0x]ADDR name (args) [+ off] */
#define SH_PERF 4   /* \tADDR func[+0xoff] (module) */
#define SH_TICK 8   /* module`func[+off][(args)] */
#define SH_COUNT 16 /* a count closing a ustack() stack */

static inline int is_alpha(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

static inline int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Python's \s on ASCII text (what [^\s...] and \S exclude) */
static inline int is_space(unsigned char c) { return py_space(c); }

/* [ \t]*+\r*+ then the end of the line: the tail every fast regex ends with */
static inline int tail_ok(const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
    while (i < n && is_ws(s[i]))
        i++;
    while (i < n && s[i] == '\r')
        i++;
    return i == n;
}

typedef struct {
    Py_ssize_t a, an, b, bn; /* the key's two parts; bn < 0: None */
    int number;              /* gdb's frame number, -1 otherwise */
    int vote;                /* 0 none, 1 linux, 2 solaris */
    int count;               /* 1: a count line (value in `value`) */
    double value;
} Shape;

/* stack.py _FAST's first branch: `#(\d{1,9})[ \t]++0x[0-9a-fA-F]++[ \t]++in[ \t]++
 * ([A-Za-z_][\w.$]{0,500}+) \(\)(?:[ \t]++from[ \t]++([^\s:<]{1,500}+))?[ \t]*+\r*+$` */
static int gdb_frame(const unsigned char *s, Py_ssize_t n, Shape *out)
{
    Py_ssize_t i = 1;
    int k = digits(s, i, n, 9);
    if (k <= 0)
        return 0;
    int number = 0;
    for (int j = 0; j < k; j++)
        number = number * 10 + (s[i + j] - '0');
    i += k;
    if (i >= n || !is_ws(s[i]))
        return 0;
    while (i < n && is_ws(s[i]))
        i++;
    if (!starts(s, i, n, "0x"))
        return 0;
    i += 2;
    Py_ssize_t h = i;
    while (i < n && is_hex(s[i]))
        i++;
    if (i == h || i >= n || !is_ws(s[i]))
        return 0;
    while (i < n && is_ws(s[i]))
        i++;
    if (!starts(s, i, n, "in") || i + 2 >= n || !is_ws(s[i + 2]))
        return 0;
    i += 2;
    while (i < n && is_ws(s[i]))
        i++;
    if (i >= n || !(is_alpha(s[i]) || s[i] == '_'))
        return 0;
    Py_ssize_t a = i++;
    while (i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '$'))
        i++;
    if (i - a > 501 || !starts(s, i, n, " ()"))
        return 0;
    out->a = a;
    out->an = i - a;
    out->bn = -1;
    i += 3;
    if (!tail_ok(s, i, n)) {
        /* (?:[ \t]++from[ \t]++([^\s:<]{1,500}+))? */
        if (i >= n || !is_ws(s[i]))
            return 0;
        while (i < n && is_ws(s[i]))
            i++;
        if (!starts(s, i, n, "from") || i + 4 >= n || !is_ws(s[i + 4]))
            return 0;
        i += 4;
        while (i < n && is_ws(s[i]))
            i++;
        Py_ssize_t b = i;
        while (i < n && !is_space(s[i]) && s[i] != ':' && s[i] != '<')
            i++;
        if (i == b || i - b > 500 || !tail_ok(s, i, n))
            return 0;
        out->b = b;
        out->bn = i - b;
    }
    out->number = number;
    out->vote = 1;
    return 1;
}

/* the second branch: `[ \t]*+(0x)?+[0-9a-fA-F]{6,16}+[ \t]++([A-Za-z_$.?<~][^\s(]{0,500}+)
 * [ \t]*+\((?![/\[])[^()\n]{0,2000}+\)(?:[ \t]*+\+[ \t]*+(?:0x)?+[0-9a-fA-F]++)?[ \t]*+\r*+$` */
static int pstack_frame(const unsigned char *s, Py_ssize_t n, Shape *out)
{
    Py_ssize_t i = 0;
    while (i < n && is_ws(s[i]))
        i++;
    int hex0x = starts(s, i, n, "0x");
    if (hex0x)
        i += 2;
    Py_ssize_t h = i;
    while (i < n && is_hex(s[i]))
        i++;
    if (i - h < 6 || i - h > 16 || i >= n || !is_ws(s[i]))
        return 0;
    while (i < n && is_ws(s[i]))
        i++;
    if (i >= n || !(is_alpha(s[i]) || (s[i] && strchr("_$.?<~", s[i]) != NULL)))
        return 0;
    Py_ssize_t a = i++;
    while (i < n && !is_space(s[i]) && s[i] != '(')
        i++;
    if (i - a > 501)
        return 0;
    Py_ssize_t an = i - a;
    while (i < n && is_ws(s[i]))
        i++;
    if (i >= n || s[i] != '(')
        return 0;
    i++;
    if (i < n && (s[i] == '/' || s[i] == '['))
        return 0;
    Py_ssize_t g = i;
    while (i < n && s[i] != '(' && s[i] != ')')
        i++;
    if (i - g > 2000 || i >= n || s[i] != ')')
        return 0;
    i++;
    if (!tail_ok(s, i, n)) {
        /* (?:[ \t]*+\+[ \t]*+(?:0x)?+[0-9a-fA-F]++)? */
        while (i < n && is_ws(s[i]))
            i++;
        if (i >= n || s[i] != '+')
            return 0;
        i++;
        while (i < n && is_ws(s[i]))
            i++;
        if (starts(s, i, n, "0x"))
            i += 2;
        Py_ssize_t o = i;
        while (i < n && is_hex(s[i]))
            i++;
        if (i == o || !tail_ok(s, i, n))
            return 0;
    }
    out->a = a;
    out->an = an;
    out->bn = -1;
    out->number = -1;
    out->vote = hex0x ? 0 : 2;
    return 1;
}

/* the third branch: `[ \t]++[0-9a-fA-F]{1,16}+[ \t]++(\S{1,500}?)(?:\+0x[0-9a-fA-F]+)?[ \t]++
 * \(([/\[][^()\n]{0,2000})\)[ \t]*+\r*+$`; the module is stripped as stack.py does */
static int perf_frame(const unsigned char *s, Py_ssize_t n, Shape *out)
{
    Py_ssize_t i = 0;
    if (n == 0 || !is_ws(s[0]))
        return 0;
    while (i < n && is_ws(s[i]))
        i++;
    Py_ssize_t h = i;
    while (i < n && is_hex(s[i]))
        i++;
    if (i == h || i - h > 16 || i >= n || !is_ws(s[i]))
        return 0;
    while (i < n && is_ws(s[i]))
        i++;
    Py_ssize_t t0 = i;
    while (i < n && !is_space(s[i]))
        i++;
    Py_ssize_t t1 = i;
    if (t1 == t0 || i >= n || !is_ws(s[i]))
        return 0;
    /* the lazy name: the token less a `+0x<hex>` it ends with (the last '+'), if that leaves one
     * character or more, else the whole token */
    Py_ssize_t fn = t1 - t0;
    for (Py_ssize_t p = t1 - 1; p > t0; p--) {
        if (s[p] != '+')
            continue;
        if (p + 3 < t1 && s[p + 1] == '0' && s[p + 2] == 'x') {
            Py_ssize_t q = p + 3;
            while (q < t1 && is_hex(s[q]))
                q++;
            if (q == t1)
                fn = p - t0;
        }
        break;
    }
    if (fn > 500)
        return 0;
    while (i < n && is_ws(s[i]))
        i++;
    if (i >= n || s[i] != '(' || i + 1 >= n || (s[i + 1] != '/' && s[i + 1] != '['))
        return 0;
    Py_ssize_t b = ++i;
    while (i < n && s[i] != '(' && s[i] != ')')
        i++;
    if (i - b > 2001 || i >= n || s[i] != ')' || !tail_ok(s, i + 1, n))
        return 0;
    Py_ssize_t be = i;
    while (b < be && is_space(s[b]))
        b++;
    while (be > b && is_space(s[be - 1]))
        be--;
    out->a = t0;
    out->an = fn;
    out->b = b;
    out->bn = be - b;
    out->number = -1;
    out->vote = 1;
    return 1;
}

/* dtrace.py _FAST: `[ \t]*+(?:([\w.+-]++)`([^+\s(`]++)(?:\+(?:0x[0-9a-fA-F]++|\d++))?+
 * (?:\([^\n]*\))?|(\d{1,15}+))[ \t]*+\r*+$` */
static int tick_frame(const unsigned char *s, Py_ssize_t n, int counts, Shape *out)
{
    Py_ssize_t i = 0;
    while (i < n && is_ws(s[i]))
        i++;
    Py_ssize_t a = i;
    while (i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '+' || s[i] == '-'))
        i++;
    if (i < n && s[i] == '`' && i > a) {
        Py_ssize_t an = i - a;
        Py_ssize_t b = ++i;
        while (i < n && s[i] != '+' && !is_space(s[i]) && s[i] != '(' && s[i] != '`')
            i++;
        if (i == b)
            return 0;
        Py_ssize_t bn = i - b;
        if (i < n && s[i] == '+') {
            i++;
            Py_ssize_t o = i;
            if (starts(s, i, n, "0x") && i + 2 < n && is_hex(s[i + 2])) {
                i += 2;
                while (i < n && is_hex(s[i]))
                    i++;
            } else {
                while (i < n && is_digit(s[i]))
                    i++;
                if (i == o)
                    return 0;
            }
        }
        if (!tail_ok(s, i, n)) {
            /* (?:\([^\n]*\))?: a '(' here and a ')' last before the tail */
            if (i >= n || s[i] != '(')
                return 0;
            Py_ssize_t e = n;
            while (e > i && s[e - 1] == '\r')
                e--;
            while (e > i && is_ws(s[e - 1]))
                e--;
            if (e - 1 <= i || s[e - 1] != ')')
                return 0;
        }
        out->a = a;
        out->an = an;
        out->b = b;
        out->bn = bn;
        out->number = -1;
        out->vote = 0;
        out->count = 0;
        return 1;
    }
    if (!counts)
        return 0;
    i = a;
    int k = digits(s, i, n, 15);
    if (k <= 0 || !tail_ok(s, i + k, n))
        return 0;
    double v = 0;
    for (int j = 0; j < k; j++)
        v = v * 10 + (s[i + j] - '0');
    out->count = 1;
    out->value = v;
    out->vote = 0;
    out->number = -1;
    return 1;
}

/* words that make stack.py's `_ORACLE_HINT` look at a line: not a fast line then */
static int oracle_hint(const unsigned char *s, Py_ssize_t n)
{
    return contains(s, n, "()") || contains(s, n, "Stack") || contains(s, n, "calling") ||
           contains(s, n, "oradebug") || contains(s, n, "Statement processed");
}

/* The Frame for key (a, b): from the cache (a dict keyed "a\0b"), else make(a, b) and cached. */
static PyObject *frame_of(const unsigned char *s, const Shape *sh, PyObject *cache,
                          PyObject *make, char *buf)
{
    Py_ssize_t kn = sh->an + (sh->bn >= 0 ? 1 + sh->bn : 0);
    memcpy(buf, s + sh->a, sh->an);
    if (sh->bn >= 0) {
        buf[sh->an] = '\0';
        memcpy(buf + sh->an + 1, s + sh->b, sh->bn);
    }
    PyObject *key = PyUnicode_DecodeLatin1(buf, kn, NULL);
    if (key == NULL)
        return NULL;
    PyObject *frame = PyDict_GetItemWithError(cache, key);
    if (frame != NULL) {
        Py_DECREF(key);
        Py_INCREF(frame);
        return frame;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *a = PyUnicode_DecodeLatin1((const char *)s + sh->a, sh->an, NULL);
    PyObject *b = sh->bn >= 0 ? PyUnicode_DecodeLatin1((const char *)s + sh->b, sh->bn, NULL)
                              : (Py_INCREF(Py_None), Py_None);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_DECREF(key);
        return NULL;
    }
    frame = PyObject_CallFunctionObjArgs(make, a, b, NULL);
    Py_DECREF(a);
    Py_DECREF(b);
    if (frame == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    if (PyDict_GET_SIZE(cache) >= 4096)
        PyDict_Clear(cache);
    int r = PyDict_SetItem(cache, key, frame);
    Py_DECREF(key);
    if (r < 0) {
        Py_DECREF(frame);
        return NULL;
    }
    return frame;
}

/* Close the frames read since the last item into a tuple on `items`. */
static int flush(PyObject *items, PyObject *pending)
{
    if (PyList_GET_SIZE(pending) == 0)
        return 0;
    PyObject *t = PyList_AsTuple(pending);
    if (t == NULL)
        return -1;
    int r = PyList_Append(items, t);
    Py_DECREF(t);
    if (r < 0)
        return -1;
    return PyList_SetSlice(pending, 0, PyList_GET_SIZE(pending), NULL);
}

/* stack_frames(text, pos, endpos, shapes, nframes, last_gdb, max_line, max_frames, cache, make)
 *   -> (pos, taken, items, last_gdb, dropped, linux_votes, solaris_votes, linux_first)
 *
 * Reads frame lines of the allowed shapes from pos (a line start) up to endpos (a newline or the
 * end of the text) and stops at the first other line (or one it cannot vouch for). `nframes`
 * is how many frames the stack being read holds, `last_gdb` its last gdb frame number.
 * `items`, in order: a tuple of Frames (append them to the stack), None (gdb's frame #0, or a
 * number going back: commit the stack first; `last_gdb` is then -1) or a float (a ustack()
 * count: the stack ends with it). Frames past max_frames are only counted (`dropped`).
 * A line is at most max_line characters with its newline. */
PyObject *stack_frames(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyUnicode_Check(args[0]) || !PyDict_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError, "stack_frames(text, pos, endpos, shapes, nframes, "
                                         "last_gdb, max_line, max_frames, cache, make)");
        return NULL;
    }
    PyObject *text = args[0], *cache = args[8], *make = args[9];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t endpos = PyLong_AsSsize_t(args[2]);
    long shapes = PyLong_AsLong(args[3]);
    Py_ssize_t nframes = PyLong_AsSsize_t(args[4]);
    long last_gdb = PyLong_AsLong(args[5]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[6]);
    Py_ssize_t max_frames = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t taken = 0, dropped = 0, linux_n = 0, solaris_n = 0;
    int first = 0;
    PyObject *items = PyList_New(0);
    PyObject *pending = PyList_New(0);
    char *buf = PyMem_Malloc(2 * (size_t)max_line + 2);
    if (items == NULL || pending == NULL || buf == NULL)
        goto fail;
    if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND) {
        const unsigned char *s = PyUnicode_1BYTE_DATA(text);
        Py_ssize_t len = PyUnicode_GET_LENGTH(text);
        if (endpos > len)
            endpos = len;
        /* endpos is a newline (or the end of the text): the line ending there takes it */
        Py_ssize_t limit = endpos < len ? endpos + 1 : endpos;
        while (pos < endpos) {
            const unsigned char *nl = memchr(s + pos, '\n', limit - pos);
            Py_ssize_t e = nl ? nl - s : endpos;
            /* the match ends after the newline, if there is one */
            if (e + (nl ? 1 : 0) - pos > max_line)
                break;
            const unsigned char *l = s + pos;
            Py_ssize_t n = e - pos, j;
            for (j = 0; j < n && l[j] < 128; j++)
                ;
            if (j < n)
                break; /* beyond ASCII: Python's \w and \s decide */
            Shape sh = {0};
            int ok = 0;
            if (n && l[0] == '#')
                ok = (shapes & SH_GDB) && gdb_frame(l, n, &sh);
            else if (shapes & (SH_TICK | SH_COUNT))
                ok = tick_frame(l, n, (shapes & SH_COUNT) && nframes > 0, &sh) &&
                     (sh.count || (shapes & SH_TICK));
            else if (shapes & (SH_PSTACK | SH_PERF)) {
                if (pstack_frame(l, n, &sh))
                    ok = (shapes & SH_PSTACK) != 0;
                else
                    ok = (shapes & SH_PERF) && perf_frame(l, n, &sh);
                ok = ok && !oracle_hint(l, n);
            }
            if (!ok)
                break;
            if (sh.count) {
                if (flush(items, pending) < 0)
                    goto fail;
                PyObject *v = PyFloat_FromDouble(sh.value);
                if (v == NULL || PyList_Append(items, v) < 0) {
                    Py_XDECREF(v);
                    goto fail;
                }
                Py_DECREF(v);
                nframes = 0;
            } else {
                if (sh.number >= 0) {
                    if (nframes > 0 && sh.number <= last_gdb) {
                        if (flush(items, pending) < 0 || PyList_Append(items, Py_None) < 0)
                            goto fail;
                        nframes = 0;
                    }
                    last_gdb = sh.number;
                }
                if (sh.vote == 1) {
                    if (!linux_n && !solaris_n)
                        first = 1;
                    linux_n++;
                } else if (sh.vote == 2) {
                    if (!linux_n && !solaris_n)
                        first = 2;
                    solaris_n++;
                }
                if (nframes >= max_frames)
                    dropped++;
                else {
                    PyObject *f = frame_of(l, &sh, cache, make, buf);
                    if (f == NULL)
                        goto fail;
                    int r = PyList_Append(pending, f);
                    Py_DECREF(f);
                    if (r < 0)
                        goto fail;
                    nframes++;
                }
            }
            taken++;
            pos = nl ? e + 1 : e;
        }
    }
    if (flush(items, pending) < 0)
        goto fail;
    PyMem_Free(buf);
    Py_DECREF(pending);
    return Py_BuildValue("(nnNlnnni)", pos, taken, items, last_gdb, dropped, linux_n, solaris_n,
                         first);
fail:
    PyMem_Free(buf);
    Py_XDECREF(items);
    Py_XDECREF(pending);
    return NULL;
}
