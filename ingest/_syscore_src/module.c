/* ingest/_syscore_src/module.c: the module ingest._syscore: the Core type (its slots and method
 * table), configure(), which fills the one SyscoreConfig from syscalls.py's constants, and
 * PyInit__syscore, the only symbol the extension exports. See syscore.h for the whole layout. */
#include "syscore.h"

SyscoreConfig cfg;

PyObject *k_syscall, *k_pid, *k_ms, *k_line, *k_ret, *k_err, *k_notes, *k_after, *k_before,
    *k_parent, *s_round, *s_strip, *four;

/* -- type plumbing ---------------------------------------------------------------------------- */

static int Core_init(Core *c, PyObject *args, PyObject *kw)
{
    PyObject *errnos, *children, *random, *signals, *exits;
    if (!cfg.ready) {
        PyErr_SetString(PyExc_RuntimeError, "_syscore.configure() was not called");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!O!OO!O!", &PyDict_Type, &errnos, &PyList_Type, &children,
                          &random, &PyDict_Type, &signals, &PyList_Type, &exits))
        return -1;
    Py_INCREF(exits);
    Py_XSETREF(c->exits, exits);
    Py_INCREF(signals);
    Py_XSETREF(c->signals, signals);
    Py_INCREF(errnos);
    Py_XSETREF(c->errnos, errnos);
    Py_INCREF(children);
    Py_XSETREF(c->children, children);
    Py_INCREF(random);
    Py_XSETREF(c->random, random);
    Py_XSETREF(c->routed, PyList_New(0));
    if (c->routed == NULL)
        return -1;
    c->none_proc = -1;
    c->ts_min = Py_HUGE_VAL;
    c->ts_max = -Py_HUGE_VAL;
    c->slow_floor = 0.0;
    c->gap_floor = -1.0;
    if (c->hist == NULL) {
        c->hist = PyMem_Calloc(cfg.nbounds, sizeof(long long));
        if (c->hist == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (proc_init(&c->overflow, 0, 0) < 0)
        return -1;
    return 0;
}

static void Core_dealloc(Core *c)
{
    PyObject_GC_UnTrack(c);
    for (int i = 0; i < c->nstats; i++) {
        Py_XDECREF(c->stats[i].name);
        PyMem_Free(c->stats[i].samples);
    }
    PyMem_Free(c->stats);
    PyMem_Free(c->stat_tab);
    for (int i = 0; i < c->nprocs; i++) {
        proc_clear(c->procs[i]);
        PyMem_Free(c->procs[i]);
    }
    PyMem_Free(c->procs);
    PyMem_Free(c->proc_tab);
    proc_clear(&c->overflow);
    for (int i = 0; i < c->nreps; i++)
        PyMem_Free(c->reps[i].a);
    PyMem_Free(c->reps);
    PyMem_Free(c->rep_tab);
    PyMem_Free(c->hist);
    for (int i = 0; i < c->nslow; i++)
        Py_XDECREF(c->slowest[i].entry);
    for (int i = 0; i < c->ngaps; i++)
        Py_XDECREF(c->gaps[i].entry);
    Py_XDECREF(c->last_notes);
    Py_XDECREF(c->errnos);
    Py_XDECREF(c->children);
    Py_XDECREF(c->random);
    Py_XDECREF(c->signals);
    Py_XDECREF(c->exits);
    Py_XDECREF(c->routed);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int Core_traverse(Core *c, visitproc visit, void *arg)
{
    Py_VISIT(c->errnos);
    Py_VISIT(c->children);
    Py_VISIT(c->random);
    Py_VISIT(c->signals);
    Py_VISIT(c->exits);
    Py_VISIT(c->routed);
    Py_VISIT(c->last_notes);
    for (int i = 0; i < c->nslow; i++)
        Py_VISIT(c->slowest[i].entry);
    for (int i = 0; i < c->ngaps; i++)
        Py_VISIT(c->gaps[i].entry);
    for (int i = 0; i < c->nprocs; i++) {
        Py_VISIT(c->procs[i]->p_notes);
        Py_VISIT(c->procs[i]->last_name);
    }
    return 0;
}

static PyMethodDef Core_methods[] = {
    {"call", (PyCFunction)(void (*)(void))Core_call, METH_FASTCALL, "SyscallAggregator.call"},
    {"event", (PyCFunction)(void (*)(void))Core_event, METH_FASTCALL, "SyscallAggregator.event"},
    {"child", (PyCFunction)(void (*)(void))Core_child, METH_FASTCALL,
     "a fork child's first line (parent already read as a pid)"},
    {"continuation", (PyCFunction)Core_continuation, METH_O, "a -v line"},
    {"elide", (PyCFunction)Core_elide, METH_NOARGS, "lines were cut here"},
    {"proc", (PyCFunction)Core_proc, METH_O, "make sure a process has its counters"},
    {"export", (PyCFunction)Core_export, METH_O, "write the state into a SyscallAggregator"},
    {"truss_run", (PyCFunction)(void (*)(void))Core_truss_run, METH_FASTCALL,
     "TrussParser.feed_run's loop"},
    {"strace_run", (PyCFunction)(void (*)(void))Core_strace_run, METH_FASTCALL,
     "StraceParser.feed_run's loop"},
    {NULL}};

static PyMemberDef Core_members[] = {
    {"routed", T_OBJECT_EX, offsetof(Core, routed), READONLY,
     "[(line number, line)] the scanners kept for syscalls.FdTargets"},
    {"gap_timing", T_BOOL, offsetof(Core, gap_timing), 0, "charge each pid's gap to its call"},
    {NULL}};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ingest._syscore.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "SyscallAggregator's per-call state",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
};

static long get_long(PyObject *d, const char *k)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (v == NULL) {
        PyErr_Format(PyExc_KeyError, "configure(): %s missing", k);
        return -1;
    }
    return PyLong_AsLong(v);
}

static PyObject *get_obj(PyObject *d, const char *k)
{
    PyObject *v = PyDict_GetItemString(d, k);
    if (v == NULL)
        PyErr_Format(PyExc_KeyError, "configure(): %s missing", k);
    else
        Py_INCREF(v);
    return v;
}

/* configure(spec: dict): the constants and tables of syscalls.py */
static PyObject *configure(PyObject *mod, PyObject *spec)
{
    if (!PyDict_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "configure(spec: dict)");
        return NULL;
    }
    if (cfg.ready)
        Py_RETURN_NONE;
    cfg.max_syscalls = get_long(spec, "MAX_SYSCALLS");
    cfg.max_pids = get_long(spec, "MAX_PIDS");
    cfg.max_repeat_keys = get_long(spec, "MAX_REPEAT_KEYS");
    cfg.reservoir = get_long(spec, "RESERVOIR");
    cfg.top_n = get_long(spec, "TOP_N");
    cfg.max_names = get_long(spec, "MAX_NAMES");
    cfg.max_children = get_long(spec, "MAX_CHILDREN");
    cfg.max_line = get_long(spec, "MAX_LINE");
    if (PyErr_Occurred())
        return NULL;
    if (cfg.top_n < 1 || cfg.top_n > TOPMAX || cfg.reservoir < 1 || cfg.max_syscalls < 2) {
        PyErr_SetString(PyExc_ValueError, "configure(): limits out of range");
        return NULL;
    }
    if (!(cfg.other = get_obj(spec, "OTHER")) || !(cfg.fork_calls = get_obj(spec, "FORK_CALLS")) ||
        !(cfg.exec_calls = get_obj(spec, "EXEC_CALLS")) ||
        !(cfg.fd_calls = get_obj(spec, "FD_CALLS")) ||
        !(cfg.size_from_end = get_obj(spec, "SIZE_FROM_END")) ||
        !(cfg.arg_shape = get_obj(spec, "arg_shape")) || !(cfg.stat_cls = get_obj(spec, "Stat")) ||
        !(cfg.proc_cls = get_obj(spec, "Proc")))
        return NULL;
    PyObject *bounds = PyDict_GetItemString(spec, "HIST_BOUNDS");
    if (bounds == NULL || !PyTuple_Check(bounds)) {
        PyErr_SetString(PyExc_TypeError, "configure(): HIST_BOUNDS must be a tuple");
        return NULL;
    }
    PyObject *kinds = PyDict_GetItemString(spec, "ROUTE_KIND"); /* optional */
    cfg.ntargets = 0;
    if (kinds != NULL) { /* a tuple of (name, kind) pairs; a name may come with several kinds */
        if (!PyTuple_Check(kinds)) {
            PyErr_SetString(PyExc_TypeError, "configure(): ROUTE_KIND must be a tuple");
            return NULL;
        }
        for (Py_ssize_t at = 0; at < PyTuple_GET_SIZE(kinds); at++) {
            PyObject *pair = PyTuple_GET_ITEM(kinds, at);
            Py_ssize_t tn = 0;
            const char *t = NULL;
            long kind = -1;
            if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 &&
                PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) &&
                PyLong_Check(PyTuple_GET_ITEM(pair, 1))) {
                t = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &tn);
                kind = PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
            }
            int after4 = cfg.ntargets > 0 && cfg.target_kinds[cfg.ntargets - 1] == 4;
            if (t == NULL || tn >= TARGET_LEN || cfg.ntargets >= MAX_TARGETS || kind < 1 ||
                kind > 4 || (after4 && kind != 4)) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "configure(): ROUTE_KIND out of range");
                return NULL;
            }
            memcpy(cfg.target_names[cfg.ntargets], t, (size_t)tn);
            if (kind != 4 && tn > 0)
                cfg.first_len[(unsigned char)t[0]] |= (uint64_t)1 << tn;
            cfg.target_lens[cfg.ntargets] = (unsigned char)tn;
            cfg.target_kinds[cfg.ntargets++] = (unsigned char)kind;
        }
    }
    cfg.nbounds = (int)PyTuple_GET_SIZE(bounds);
    cfg.bounds = PyMem_Malloc(sizeof(double) * (cfg.nbounds ? cfg.nbounds : 1));
    if (cfg.bounds == NULL)
        return PyErr_NoMemory();
    for (int i = 0; i < cfg.nbounds; i++) {
        cfg.bounds[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(bounds, i));
        if (PyErr_Occurred())
            return NULL;
    }
    cfg.ready = 1;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_O, "the constants and tables of ingest/parsers/syscalls.py"},
    {"first_bad", (PyCFunction)(void (*)(void))first_bad, METH_FASTCALL,
     "where the next fence or control character is (ingest/detect.py)"},
    {"stack_frames", (PyCFunction)(void (*)(void))stack_frames, METH_FASTCALL,
     "a run of frame lines of the stack formats (ingest/parsers/stack.py, dtrace.py)"},
    {"trace10046_waits", (PyCFunction)(void (*)(void))trace10046_waits, METH_FASTCALL,
     "a run of WAIT lines of a raw 10046 trace (ingest/parsers/trace10046.py)"},
    {"strace_summary_rows", (PyCFunction)(void (*)(void))strace_summary_rows, METH_FASTCALL,
     "a run of strace -c table rows and rulers (ingest/parsers/strace.py)"},
    {"tkprof_tables", (PyCFunction)(void (*)(void))tkprof_tables, METH_FASTCALL,
     "a run of a tkprof report's call and wait table lines (ingest/parsers/tkprof.py)"},
    {"awr_rows", (PyCFunction)(void (*)(void))awr_rows, METH_FASTCALL,
     "a run of rows of an AWR / Statspack report's open table (ingest/parsers/waits.py)"},
    {"awr_lines", (PyCFunction)(void (*)(void))awr_lines, METH_FASTCALL,
     "a run of a report section's lines the waits parser applies (ingest/parsers/waits.py)"},
    {"awr_cells", (PyCFunction)(void (*)(void))awr_cells, METH_FASTCALL,
     "the cells of a row under a ruler's spans (ingest/parsers/awr_report.py)"},
    {NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_syscore",
                                       "SyscallAggregator's per-call state in C", -1,
                                       module_methods};

PyMODINIT_FUNC PyInit__syscore(void)
{
    if (PyType_Ready(&CoreType) < 0)
        return NULL;
#define INTERN(var, s) \
    if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
    INTERN(k_syscall, "syscall");
    INTERN(k_pid, "pid");
    INTERN(k_ms, "ms");
    INTERN(k_line, "line");
    INTERN(k_ret, "ret");
    INTERN(k_err, "err");
    INTERN(k_notes, "notes");
    INTERN(k_after, "after");
    INTERN(k_before, "before");
    INTERN(k_parent, "parent");
    INTERN(s_round, "__round__");
    INTERN(s_strip, "strip");
    if ((four = PyLong_FromLong(4)) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    if (table_type_add(m) < 0) { /* table.c */
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
