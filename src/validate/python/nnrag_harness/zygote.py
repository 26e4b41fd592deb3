# Per-repository zygotes of the validation harness (harness.py): a fork of the worker that
# imports the original repository once (zygote_main) and forks that repository's
# candidates, its modules hidden from sys.modules while a candidate runs (stash.py); the
# worker's handle on one (Zygote).
import gc
import os
import select
import signal
import sys

from nnrag_harness import reads as _reads
from nnrag_harness import stages as _stages
from nnrag_harness.inputs import seed_all
from nnrag_harness.channel import NONCE_LEN, Channel, frame
from nnrag_harness.stash import (
    IN_ZYGOTE,
    INSTALLED,
    STASH,
    isolable_installed,
    of_roots,
    root_prefixes,
    same_as_installed,
)
from nnrag_harness.procs import (
    WALL_PER_CPU,
    WALL_SLACK,
    _loads,
    _exit,
    _monotonic,
    self_cpu,
    enter_work_dir,
    vm_size_kb,
    count_threads,
    kill_descendants,
    _libc,
    set_subreaper,
    set_undumpable,
    descendants,
    close_quietly,
)


MAX_ZYGOTES = 3
ZYGOTE_UNCLEAN = 75  # exit status of a zygote whose import left a thread running


# Transparent huge pages (madvise(2) MADV_COLLAPSE, Linux 6.1+): a fork copies one page-table
# entry per 4 KiB page of private anonymous memory, and the child's exit drops each again;
# the same memory as 2 MiB pages is one entry per 512 pages. A zygote (torch and a
# repository's import: 300-900 MB of heap) forks every candidate of its repository: its
# heap collapsed into huge pages, each fork and each exit costs a third (yolov9's zygote:
# ~18 -> 6 ms of CPU for the fork, ~20 -> 8 ms for the exit). The collapse itself copies
# the memory (0.5-2.5 ms of CPU per MB), and the pages a zygote still shared with its
# worker become its own (yolov9's: ~220 MB more resident), so a worker does it once it has
# forked COLLAPSE_AFTER candidates (Worker.validate), when more are likely to follow. The
# memory's contents, the address space (VmSize: the candidates' RLIMIT_AS budget counts
# from it) and what a candidate can reach are unchanged; a candidate's write into a huge
# page the two share copies a 4 KiB page, as before (the kernel splits the shared huge
# page's mapping).
MADV_COLLAPSE = 25
HUGE = 1 << 21
COLLAPSE_AFTER = 32


def collapse_anonymous():
    """Collapse this process's private anonymous memory (its heap and anonymous mappings,
    not its stack or file mappings) into transparent huge pages, where the kernel can:
    the 2 MiB-aligned parts of each mapping. Returns the bytes collapsed; nothing happens
    on a kernel without MADV_COLLAPSE (EINVAL) or with huge pages disabled."""
    import ctypes

    try:
        libc = _libc()
        madvise = libc.madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except (OSError, AttributeError):
        return 0
    asked = 0
    for line in lines:
        parts = line.split()
        # address perms offset dev inode [path]: anonymous = no path (or [heap])
        if len(parts) < 5 or "w" not in parts[1] or "p" not in parts[1]:
            continue
        if len(parts) > 5 and parts[5] != "[heap]":
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        lo = (lo + HUGE - 1) & ~(HUGE - 1)
        hi &= ~(HUGE - 1)
        if hi <= lo:
            continue
        if madvise(lo, hi - lo, MADV_COLLAPSE) == 0:
            asked += hi - lo
    return asked


def signal_handlers():
    """The signal handlers set now, to put back after an import (settle_import)."""
    handlers = {}
    for sig in signal.valid_signals() if hasattr(signal, "valid_signals") else ():
        try:
            handlers[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            pass
    return handlers


def enter_roots(roots, scratch, fresh):
    """Before an import of repository code: its roots first on sys.path, and the work
    folder import-time code runs in (procs.enter_work_dir)."""
    for p in reversed(roots):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        enter_work_dir(scratch or "/tmp", fresh=fresh)
    except OSError:
        pass


def ready_for_candidates(w):
    """After an import: the candidates' address-space budget counted from what the zygote
    maps now (Worker.limits), and the import's objects frozen out of the collector's
    reach (gc.freeze: a forked candidate does not touch their pages)."""
    w.vm_kb = vm_size_kb()
    w.lim = w.limits(w.vm_kb)
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()


def settle_import(before, roots, handlers):
    """After the zygote imported repository code (its first import, or a sibling module:
    zygote_extend), leave it as its candidates need it; the number of its threads."""
    import importlib

    prefixes = root_prefixes(roots)
    # installed pure-Python packages the original's import loaded first: its candidates
    # import them afresh (stash.INSTALLED), not as the original's import left them
    INSTALLED.update(isolable_installed(before, roots))
    for p in roots:
        while p in sys.path:
            sys.path.remove(p)
    importlib.invalidate_caches()
    # the repository's modules are hidden from its candidates, except a package the
    # environment has installed from the same code (stash.same_as_installed): a
    # candidate's `import pkg.sub` of that installed distribution gets these modules
    # instead of importing the package a second time
    for name, m in list(sys.modules.items()):
        if of_roots(m, prefixes):
            STASH[name] = m
            if not same_as_installed(name.partition(".")[0], roots):
                del sys.modules[name]
    # nothing of the import may act later, between or inside other blocks' runs: its
    # processes (daemons) are killed, signal handlers it set are put back, the zygote is
    # made non-dumpable again (candidates cannot open its /proc/PID/fd or memory), and a
    # zygote left with a thread is reported unclean and not used (see Worker.route)
    for sig, h in handlers.items():
        try:
            if signal.getsignal(sig) is not h:
                signal.signal(sig, h)
        except (OSError, ValueError, TypeError):
            pass
    set_undumpable()
    kill_descendants(os.getpid())
    return count_threads(os.getpid())


def zygote_main(worker_class, cfg, roots, module, req_fd, res_fd, preload=(), harvest=False):
    """A forked copy of the worker that imports the original repository once; the
    candidates of that repository fork from here, so equivalence does not re-import
    the repository for every block. The repository's import-time code runs here, in the
    same sandbox, never in the worker that serves other repositories.

    `preload`: for a harvest's run steps, the installed modules the repository's code
    imports (harvest.InstalledImports, found by its list step), imported first: each run
    step then imports only the repository's own modules for its entry point, not
    pandas, OpenCV or SciPy again. They are imported before the repository, as its own
    import would have them (a module-level `os.environ[...] = ...` of the repository set
    before its `import cv2` now comes after it, as in any process that had cv2 already)."""
    try:
        _libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
    except Exception:  # noqa: BLE001
        pass
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    # processes the import starts, double-forked or not, come back to this zygote
    set_subreaper()
    handlers = signal_handlers()
    sys.dont_write_bytecode = True
    enter_roots(roots, cfg.get("scratch"), fresh=False)
    IN_ZYGOTE.append(module)
    before = set(sys.modules)
    # the repository's import-time draws (a module-level random tensor) the same in every
    # run: torch and NumPy seed their global generators from the operating system
    seed_all(sys.modules["torch"], 0)
    try:
        # the functions the import runs are recorded (reads.IMPORT_CODES): a harvest step
        # forked from here depends on their bodies as on the modules' top levels
        _reads.record_import(lambda: import_with_preload(preload, module))
    except BaseException:  # noqa: BLE001 - the equivalence stage reports it
        pass
    threads = settle_import(before, roots, handlers)
    if harvest:
        try:
            from nnrag_harness import harvest as _harvest

            _harvest.warm_scans(sys.modules["torch"].nn, STASH)
        except Exception:  # noqa: BLE001 - each step scans for itself, as without it
            pass
    zcfg = dict(cfg)
    zcfg["pidns"] = False
    zcfg["no_zygotes"] = True
    w = worker_class(zcfg, Channel(req_fd, res_fd))
    ready_for_candidates(w)
    w.extra_close = [req_fd]
    w.zygote_roots = list(roots)
    if threads != 1:
        # said by the exit status: a thread of the import may be writing into the pipe
        _exit(ZYGOTE_UNCLEAN)
    # the original modules this zygote holds: a request whose original module is not
    # among them (a sibling module the package's __init__ does not import) is validated
    # outside the zygote, where its original is imported for it (Worker.route)
    # its CPU time since the fork (the import, settling it): the cost table's
    w.send(
        {
            "type": "zygote-ready",
            "threads": threads,
            "modules": sorted(STASH),
            "cpu_ms": round(self_cpu() * 1000, 1),
        }
    )
    w.serve()


def import_with_preload(preload, module):
    """Import the `preload` modules (each failing alone, silently: its run steps import
    it themselves, as before), then `module`. Inside the import's recording (reads.py):
    repository code an installed module's import runs is recorded as the repository's
    own import is."""
    import importlib

    for name in preload:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - the run steps import it as they did without
            pass
    importlib.import_module(module)


def zygote_extend(w, module):
    """Import one more module of the repository into this zygote (a sibling module its
    package's __init__ does not import, Worker.route): as zygote_main's import, in a
    fresh work folder with the roots on sys.path and the zygote's modules put back, its
    new modules then hidden from the candidates (STASH), the installed pure-Python
    packages it loaded first taken afresh by them (INSTALLED, with the new submodules of
    a package already there), its processes killed, signal handlers put back. Its
    requests then fork from here instead of importing the module each (~4-8 s for a
    repository's model module, every time). Answers `extended` (whether the module is
    held now, the threads, the modules); a zygote left with a thread exits unclean."""
    import importlib

    roots = w.zygote_roots
    handlers = signal_handlers()
    for name, m in STASH.items():
        sys.modules.setdefault(name, m)
    enter_roots(roots, w.cfg.get("scratch"), fresh=True)
    before = set(sys.modules)
    t0 = _monotonic()
    c0 = self_cpu()
    try:
        importlib.import_module(module)
    except BaseException:  # noqa: BLE001 - the request is validated outside (Worker.route)
        pass
    ms = round((_monotonic() - t0) * 1000, 1)
    prefixes = root_prefixes(roots)
    installed_tops = {n.partition(".")[0] for n in INSTALLED}
    for name, m in list(sys.modules.items()):
        # a new submodule of a package its candidates import afresh is theirs afresh too
        if name not in before and name.partition(".")[0] in installed_tops and not of_roots(m, prefixes):
            INSTALLED[name] = m
    threads = settle_import(before, roots, handlers)
    ready_for_candidates(w)
    w.send(
        {
            "type": "extended",
            "ok": module in STASH,
            "threads": threads,
            "modules": sorted(STASH),
            "ms": ms,
            "cpu_ms": round((self_cpu() - c0) * 1000, 1),
        }
    )
    if threads != 1:
        _exit(ZYGOTE_UNCLEAN)


class Zygote:
    def __init__(self, worker, roots, module, preload=(), harvest=False):
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(req_w)
                os.close(res_r)
                for z in worker.zygotes.values():
                    z.close_fds()
                worker.proto.close()
                zygote_main(type(worker), worker.cfg, roots, module, req_r, res_w, preload, harvest)
            except BaseException:  # noqa: BLE001
                pass
            _exit(0)
        os.close(req_r)
        os.close(res_w)
        self.pid = pid
        self.w = req_w
        self.r = res_r
        self.buf = b""
        self.never_answered = True
        self.progress = {}
        self.running = None
        self.clean = True
        self.reaped = False
        self.threads = None  # after its import (zygote-ready)
        self.module = module
        self.modules = None  # the original modules it imported (zygote-ready)
        self.extended = False  # it imported more modules since (extend)
        self.t0 = _monotonic()
        self.import_ms = None  # from its start to zygote-ready: the repository's import
        self.import_cpu_ms = None  # the zygote's CPU time of it
        self.import_reported = False
        self.extend_ms = None
        self.extend_cpu_ms = None

    def unchanged(self):
        """Still as it was when it became ready: alive, the same threads, no process
        left below it (its own cleanup runs after each candidate)."""
        if not self.alive() or self.threads is None or count_threads(self.pid) != self.threads:
            return False
        return not [p for p, st in descendants(self.pid) if st != "Z"]

    def close_fds(self):
        close_quietly(self.w, self.r)

    def alive(self):
        if self.reaped:
            return False
        try:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            done = self.pid
        self.reaped = done != 0
        return done == 0

    def kill(self):
        if self.reaped:
            # its pid may already name another process: what it left is the worker's
            # (its subreaper) to clean up
            self.close_fds()
            return
        for p, _ in descendants(self.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.close_fds()

    def ask(self, worker, msg):
        """Send one request; relay its progress lines; return its result, or None when
        the zygote died or did not answer in time (its first answer may include the
        repository import)."""
        rid = msg.get("rid")
        req = msg.get("req") or {}
        timeout = max(0.05, float(req.get("timeoutMs") or worker.cfg.get("timeout_ms") or 20000) / 1000.0)
        # the zygote's worker ends its child by CPU time, or by the wall-clock backstop
        # (procs.WALL_PER_CPU); the first answer includes the repository import; stay
        # inside the TS watchdog (the backstop + 10 s)
        backstop = timeout * WALL_PER_CPU + WALL_SLACK
        self.deadline = _monotonic() + backstop + (8.0 if self.never_answered else 5.0)
        self.progress = {}
        self.running = None
        token = self.send({"type": "validate", "rid": rid, "req": req})
        if token is None:
            return None
        for obj in self.messages():
            t = obj.get("type")
            if t == "zygote-ready" and self.threads is None:
                self.threads = obj.get("threads")
                self.modules = frozenset(obj.get("modules") or ())
                self.import_ms = round((_monotonic() - self.t0) * 1000, 1)
                self.import_cpu_ms = obj.get("cpu_ms")
            elif obj.get("nonce") != token:
                pass
            elif t == "progress" and obj.get("rid") == rid:
                if obj.get("ev") == "start":
                    self.running = obj.get("stage")
                    if obj.get("stage") == "equivalence":
                        # the zygote's child has an equivalence budget of its own
                        self.deadline = max(self.deadline, _monotonic() + backstop + 5.0)
                else:
                    self.progress[obj.get("stage")] = obj.get("status")
                    self.running = None
                worker.send(obj)
            elif t == "result" and obj.get("rid") == rid:
                self.never_answered = False
                return obj
        return None

    def extend(self, worker, module, req):
        """Have the zygote import `module` too (zygote_extend). True when it holds the
        module now and is as it was (same threads); False when the import failed (the
        zygote is kept); None when the zygote died, exited unclean or did not answer in
        time (the request timeout's backstop + 8 s, as a first import)."""
        timeout = max(0.05, float(req.get("timeoutMs") or worker.cfg.get("timeout_ms") or 20000) / 1000.0)
        self.deadline = _monotonic() + timeout * WALL_PER_CPU + WALL_SLACK + 8.0
        token = self.send({"type": "extend", "module": module})
        if token is None:
            return None
        self.extended = True
        for obj in self.messages():
            if obj.get("type") == "extended" and obj.get("nonce") == token:
                self.modules = frozenset(obj.get("modules") or ())
                self.extend_ms = obj.get("ms")
                self.extend_cpu_ms = obj.get("cpu_ms")
                if obj.get("threads") != self.threads:
                    self.ended()
                    return None
                return bool(obj.get("ok")) and module in self.modules
        return None

    def send(self, obj):
        """Write `obj` to the zygote under a fresh token, which its answers carry (lines
        without it, left in the pipe or written for another request, are ignored); the
        token, None when the pipe is closed."""
        token = os.urandom(NONCE_LEN // 2).hex()
        self.buf = b""
        try:
            data = frame(token.encode("ascii"), obj)
            while data:
                n = os.write(self.w, data)
                data = data[n:]
        except OSError:
            return None
        return token

    def messages(self):
        """Each JSON object the zygote writes, until `self.deadline` (which the reader may
        move) passes (`timed_out`) or the zygote closes its pipe (`ended`)."""
        while True:
            nl = self.buf.find(b"\n")
            while nl >= 0:
                line = self.buf[:nl]
                self.buf = self.buf[nl + 1 :]
                try:
                    obj = _loads(line.decode("utf-8", "replace"))
                except ValueError:
                    obj = None
                if isinstance(obj, dict):
                    yield obj
                nl = self.buf.find(b"\n")
            left = self.deadline - _monotonic()
            if left <= 0:
                self.timed_out = True
                return
            ready = select.select([self.r], [], [], min(left, 0.5))[0]
            if ready:
                chunk = os.read(self.r, 65536)
                if not chunk:
                    self.ended()
                    return
                self.buf += chunk

    def ended(self):
        """The zygote closed its pipe: collect how it ended (unclean import or death)."""
        try:
            pid, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return
        self.reaped = True
        if pid and os.WIFEXITED(status) and os.WEXITSTATUS(status) == ZYGOTE_UNCLEAN:
            self.clean = False

    def failure(self, msg):
        stages = {s: self.progress.get(s, "skip") for s in _stages.STAGES}
        st = self.running or next((s for s in _stages.STAGES if stages[s] == "skip"), "import")
        stages[st] = "fail"
        hung = getattr(self, "timed_out", False)
        return {
            "type": "result",
            "rid": msg.get("rid"),
            "stages": stages,
            "timings": {},
            "category": "timeout" if hung else "crash",
            "error": (
                "the original repository's import did not finish in time"
                if hung and self.never_answered
                else "validation process did not answer in time"
                if hung
                else "validation process (repository zygote) died while validating"
            ),
            "stage": st,
            "args": None,
            "input_shapes": None,
            "output_shapes": None,
            "params": None,
            "ms": 0,
        }
