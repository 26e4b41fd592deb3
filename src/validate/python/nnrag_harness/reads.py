# What a witness-harvest step read (issue 27, harvest reuse per entry point): the files
# whose code ran while the step ran (the list step: the files of every module imported) (the global trace function's "call" events, sys.settrace
# and threading.settrace, no line tracing; a
# module's top level is a code object too, so importing it counts, Language Reference
# §4.1) and the files it opened (builtins.open, io.open: configuration files, YAML model
# files), kept when they lie under the given folders. The TypeScript side keys the step's
# stored result by these files' blob ids (and the files they import names from), so an
# edit re-runs only the entry points that read the edited file.
import builtins
import io
import os
import sys
import threading


class Reads(object):
    def __init__(self, roots):
        self.roots = [os.path.join(os.path.realpath(r), "") for r in roots if r]
        self.codes = set()
        self.opened = set()
        self._open = None

    def _hook(self, frame, event, arg):
        # the global trace function sees "call" only (a new frame): its code object's file
        self.codes.add(frame.f_code.co_filename)

    def start(self, calls=True):
        """Record from here: the files opened, and with `calls` the code that runs (the
        list step imports every module: it takes them from sys.modules, add_modules,
        without the trace function's cost)."""
        if calls:
            sys.settrace(self._hook)
            threading.settrace(self._hook)
        real = self._open = builtins.open
        opened = self.opened

        def recording_open(file, *a, **k):
            if isinstance(file, (str, bytes, os.PathLike)):
                opened.add(os.fsdecode(file))
            return real(file, *a, **k)

        builtins.open = io.open = recording_open
        return self

    def stop(self):
        sys.settrace(None)
        threading.settrace(None)
        if self._open is not None:
            builtins.open = io.open = self._open
            self._open = None

    def add_modules(self):
        """The files of the modules imported so far (sys.modules; a module imported before
        the step, by the zygote, too): a module's top level ran when it was imported
        (Language Reference §5.3), what it binds may decide what the step finds."""
        for m in list(sys.modules.values()):
            f = getattr(m, "__file__", None)
            if isinstance(f, str):
                self.codes.add(f)

    def files(self):
        """The files read, absolute, under the roots, sorted."""
        out = set()
        for f in self.codes | self.opened:
            if not f or f.startswith("<"):
                continue
            try:
                p = os.path.realpath(os.path.abspath(f))
            except (OSError, ValueError):
                continue
            if any(p.startswith(r) for r in self.roots) and os.path.isfile(p):
                out.add(p)
        return sorted(out)
