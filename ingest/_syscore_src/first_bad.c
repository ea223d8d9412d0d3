/* ingest/_syscore_src/first_bad.c: first_bad(), the scan ingest/detect.py runs over every chunk
 * for fences and control characters, 16 bytes at a time with SSE2 (8 without). */
#include "syscore.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Does a 16-byte (SSE2) or 8-byte block hold a byte first_bad must look at: a control character
 * other than \t \n \r, DEL or a backtick? */
#ifdef __SSE2__
static inline int suspect_block(const unsigned char *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)p);
    const __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(31)), v); /* v <= 31 */
    const __m128i ok = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                    _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
    const __m128i odd = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(127)),
                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
    return _mm_movemask_epi8(_mm_or_si128(_mm_andnot_si128(ok, ctl), odd)) != 0;
}
#define BLOCK 16
#else
static inline int suspect_block(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return (HAS_LESS(w, 32) | HAS_BYTE(w, 127) | HAS_BYTE(w, '`')) != 0;
}
#define BLOCK 8
#endif

/* first_bad(text, pos) -> int: where the first ``` or control character (what ingest/detect.py's
 * _BAD finds: \x00-\x08 \x0b \x0c \x0e-\x1f \x7f) is at or after pos, len(text) if none; -1
 * for text that is not 1-byte kind (the caller's regex then looks). One pass instead of a find()
 * and an encode() + translate() per megabyte. */
PyObject *first_bad(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "first_bad(text, pos)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        return PyLong_FromLong(-1);
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t i = pos < 0 ? 0 : pos;
    for (;;) {
        while (i + BLOCK <= n && !suspect_block(s + i))
            i += BLOCK;
        Py_ssize_t stop = i + BLOCK < n ? i + BLOCK : n;
        for (; i < stop; i++) {
            unsigned char c = s[i];
            if (c >= 32 && c != '`' && c != 127)
                continue;
            if (c == '`') {
                if (i + 2 < n && s[i + 1] == '`' && s[i + 2] == '`')
                    return PyLong_FromSsize_t(i);
                continue;
            }
            if (c == 127 || (c < 32 && c != '\t' && c != '\n' && c != '\r'))
                return PyLong_FromSsize_t(i);
        }
        if (i >= n)
            return PyLong_FromSsize_t(n);
    }
}
