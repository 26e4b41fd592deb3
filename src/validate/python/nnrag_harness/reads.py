# What a witness-harvest step read (issue 27, harvest reuse per entry point): the files
# whose code ran while the step ran (the list step: the files of every module imported) (the global trace function's "call" events, sys.settrace
# and threading.settrace, no line tracing; a
# module's top level is a code object too, so importing it counts, Language Reference
# §4.1) and the files it opened (builtins.open, io.open: configuration files, YAML model
# files), kept when they lie under the given folders. The TypeScript side keys the step's
# stored result by these files (and the files they import names from), so an edit
# re-runs only the entry points that read the edited file.
# Which code ran is kept per function too (`calls`: a file's qualified names, co_qualname),
# with the functions the zygote's import of the repository ran (`import_calls`, recorded
# by zygote.py: a decorator, a registry filled at import): a function body that ran
# neither at import nor in the step cannot have made anything the step saw, so an edit of
# it alone keeps the step's stored answer (witness/parts.ts).
import builtins
import io
import linecache
import os
import sys
import threading

# the code objects the zygote's import of the repository ran (id -> code; record_import),
# None outside a zygote that recorded them (then no step says which functions ran); and
# the files whose source the import read through linecache (torch.jit.script(fn) compiles
# fn's source at import without running it)
IMPORT_CODES = None
IMPORT_SOURCES = set()


def record_import(run):
    """Run `run()` (the zygote's import of the repository) with the global trace function
    recording each code object called (its "call" events, no line tracing) and the
    source read through linecache, kept in IMPORT_CODES and IMPORT_SOURCES for the
    harvest steps forked from here."""
    global IMPORT_CODES
    seen = {}
    real_lines = linecache.getlines

    def hook(frame, event, arg):
        co = frame.f_code
        seen[id(co)] = co

    def recording_getlines(filename, *a, **k):
        if isinstance(filename, str):
            IMPORT_SOURCES.add(filename)
        return real_lines(filename, *a, **k)

    linecache.getlines = recording_getlines
    sys.settrace(hook)
    try:
        run()
    finally:
        sys.settrace(None)
        linecache.getlines = real_lines
        IMPORT_CODES = seen


def _real(f):
    try:
        return os.path.realpath(os.path.abspath(f))
    except (OSError, ValueError):
        return None


def calls_of(codes, roots):
    """file -> sorted qualified names of the code objects in `codes` (id -> code) whose
    file lies under `roots` (absolute, realpath'd as Reads.files gives them)."""
    by_file = {}
    for co in codes.values():
        f = co.co_filename
        if f and not f.startswith("<"):
            by_file.setdefault(f, set()).add(getattr(co, "co_qualname", None) or co.co_name)
    out = {}
    for f, names in by_file.items():
        p = _real(f)
        if p is not None and any(p.startswith(r) for r in roots):
            out.setdefault(p, set()).update(names)
    return {k: sorted(v) for k, v in out.items()}


class Reads(object):
    def __init__(self, roots):
        self.roots = [os.path.join(os.path.realpath(r), "") for r in roots if r]
        self.codes = set()
        self.opened = set()
        self._open = None
        self._getlines = None
        # id -> code object of each code that ran (held, so an id is not reused)
        self.seen = {}
        # Python calls in the thread that started recording (the global trace function's
        # "call" events there)
        self.main_calls = 0

    def _hook(self, frame, event, arg):
        # the global trace function sees "call" only (a new frame): its code object
        co = frame.f_code
        self.seen[id(co)] = co

    def _main_hook(self, frame, event, arg):
        # the main thread's: the same, and the calls counted (main_calls: a test session's
        # Python work, harvest_docs.PythonCalls; other threads run as the scheduler lets them)
        co = frame.f_code
        self.seen[id(co)] = co
        self.main_calls += 1

    def start(self, calls=True):
        """Record from here: the files opened, and with `calls` the code that runs (the
        list step imports every module: it takes them from sys.modules, add_modules,
        without the trace function's cost)."""
        if calls:
            sys.settrace(self._main_hook)
            threading.settrace(self._hook)
        real = self._open = builtins.open
        opened = self.opened

        def recording_open(file, *a, **k):
            if isinstance(file, (str, bytes, os.PathLike)):
                opened.add(os.fsdecode(file))
            return real(file, *a, **k)

        builtins.open = io.open = recording_open
        # source read through linecache (inspect.getsource, a traceback's lines) is the
        # file read whole: a function's body read without running it (harvest.reads_of)
        real_lines = self._getlines = linecache.getlines

        def recording_getlines(filename, *a, **k):
            if isinstance(filename, str):
                opened.add(filename)
            return real_lines(filename, *a, **k)

        linecache.getlines = recording_getlines
        return self

    def stop(self):
        sys.settrace(None)
        threading.settrace(None)
        if self._open is not None:
            builtins.open = io.open = self._open
            self._open = None
        if self._getlines is not None:
            linecache.getlines = self._getlines
            self._getlines = None

    def add_modules(self):
        """The files of the modules imported so far (sys.modules; a module imported before
        the step, by the zygote, too): a module's top level ran when it was imported
        (Language Reference §5.3), what it binds may decide what the step finds."""
        for m in list(sys.modules.values()):
            f = getattr(m, "__file__", None)
            if isinstance(f, str):
                self.codes.add(f)

    def calls(self):
        """file -> qualified names of the code that ran (under the roots)."""
        return calls_of(self.seen, self.roots)

    def opened_files(self):
        """The files opened (under the roots), sorted."""
        return self._under(self.opened)

    def files(self):
        """The files read, absolute, under the roots, sorted."""
        return self._under(self.codes | {co.co_filename for co in self.seen.values()} | self.opened)

    def _under(self, files):
        out = set()
        for f in files:
            if not f or f.startswith("<"):
                continue
            try:
                p = os.path.realpath(os.path.abspath(f))
            except (OSError, ValueError):
                continue
            if any(p.startswith(r) for r in self.roots) and os.path.isfile(p):
                out.add(p)
        return sorted(out)
