# The long-lived worker of the validation harness (harness.py --worker), speaking the
# protocol of channel.py with its parent: the Worker, which forks a child per request
# (or hands it to a repository's zygote), enforces the wall-clock deadline, kills and reaps what the child left and classifies
# how it ended.
import gc
import os
import select
import signal
import sys
import tempfile
import time

from nnrag_harness import stages as _stages, zygote as _zygote
from nnrag_harness.procs import (
    _dumps,
    _loads,
    _exit,
    _monotonic,
    mount_points,
    sweep_dir,
    remove_tree,
    read_tail,
    vm_size_kb,
    count_my_tasks,
    set_subreaper,
    set_undumpable,
    descendants,
    reap_except,
    kill_group,
    close_quietly,
    remove_sysv_ipc,
    tree_cpu,
    cpu_of,
    self_cpu,
    WALL_PER_CPU,
    WALL_SLACK,
)

# the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): the worker's own part of a
# request's time outside its stages (OutsideClock). Kept here, not in procs.py, which a
# harvest step imports (an edit there is a new harvest key: environment.ts harvestHarness)
_thread_cpu = time.thread_time


class StageClock(object):
    """One request's times the child does not report itself (stages.py stays as it is):
    each stage's CPU time and the usage line's wall and CPU time (it runs between forward
    and equivalence, stages.py `_send_usage`, in no stage's timing). Read as the child's
    reports arrive, its CPU time from /proc (procs.cpu_of; to a clock tick)."""

    def __init__(self, pid):
        self.pid = pid
        self.started = {}  # stage -> the child's CPU seconds at its start
        self.stages = {}  # stage -> CPU ms
        self.stage_ms = {}  # stage -> wall ms, as the child reported it
        self.forward_end = None  # (monotonic, CPU seconds) when forward passed
        self.usage_ms = None
        self.usage_cpu_ms = None
        self.first = None  # (monotonic, CPU seconds) at the child's first stage report
        self.done = None  # (monotonic, CPU seconds) at its "done"

    def event(self, ev, staged):
        """Account one report of the child (`staged`: a stage's start or end)."""
        kind = ev.get("ev")
        if not staged and kind != "done":
            return
        cpu = cpu_of(self.pid)
        if self.first is None:
            self.first = (_monotonic(), cpu)
        if kind == "done":
            self.done = (_monotonic(), cpu)
        if staged and kind == "start":
            self.started[ev["stage"]] = cpu
        elif staged and ev["stage"] in self.started:
            self.stages[ev["stage"]] = round(max(0.0, cpu - self.started.pop(ev["stage"])) * 1000, 1)
            if isinstance(ev.get("ms"), (int, float)):
                self.stage_ms[ev["stage"]] = ev["ms"]
        if kind == "end" and ev.get("stage") == "forward":
            self.forward_end = (_monotonic(), cpu) if ev.get("status") == "pass" else None
        elif self.forward_end is not None and (
            kind == "done" or (kind == "start" and ev.get("stage") == "equivalence")
        ):
            t, c = self.forward_end
            self.usage_ms = round((_monotonic() - t) * 1000, 3)
            self.usage_cpu_ms = round(max(0.0, cpu - c) * 1000, 1)
            self.forward_end = None

    def report(self, res):
        """Add the times to a request's result (`usageMs`, `usageCpuMs`, `cpuTimings`)."""
        if self.usage_ms is not None:
            res["usageMs"] = self.usage_ms
            res["usageCpuMs"] = self.usage_cpu_ms
        if self.stages:
            res["cpuTimings"] = self.stages


class OutsideClock(object):
    """A request's time outside its stages and usage line, in parts (the cost table's
    `outside` rows, issue 27): part -> [wall ms, CPU ms]. The CPU of a part is this
    worker thread's (time.thread_time) and, for the parts the child runs in, the child's
    (from /proc as its reports arrive, StageClock; its total from wait4 when it is reaped).
    Parts inside the request's `ms`: `fork` (its scratch folder, pipe, fork), `child
    start` (from the fork to the child's first report: its limits, output log, work
    folder), `child between stages` (the child's time in no stage or usage line, an
    unfinished stage's too), `child exit` (from its last report until it is reaped),
    `clean-up` (what it left: processes, the pipe); after `ms`: `scratch removal`,
    `sweep` (/tmp, /dev/shm, System V IPC) and, for a zygote's request, `zygote's worker`
    (its worker's clean-up after the answer); before it, once a worker: `huge pages`
    (zygote.collapse_anonymous)."""

    def __init__(self):
        self.parts = {}
        self.mark()

    def mark(self):
        self.t, self.c = _monotonic(), _thread_cpu()

    def lap(self, part, child_cpu=0.0):
        """Close `part` at now: its wall and this thread's CPU since the last mark, plus
        `child_cpu` seconds of the child's."""
        t, c = self.t, self.c
        self.mark()
        self.add(part, (self.t - t) * 1000, (self.c - c + max(0.0, child_cpu)) * 1000)

    def add(self, part, wall_ms, cpu_ms):
        row = self.parts.setdefault(part, [0.0, 0.0])
        row[0] += max(0.0, wall_ms)
        row[1] += max(0.0, cpu_ms)

    def report(self, res):
        if self.parts:
            out = res.setdefault("outside", {})
            for part, (wall, cpu) in self.parts.items():
                row = out.setdefault(part, [0.0, 0.0])
                row[0] = round(row[0] + wall, 3)
                row[1] = round(row[1] + cpu, 3)


class Worker:
    def __init__(self, cfg, proto):
        self.cfg = cfg
        self.proto = proto  # a Channel
        self.scratch_root = cfg.get("scratch") or "/tmp"
        self.masked = cfg.get("masked") or []
        self.seq = 0
        self.me = os.getpid()
        # kill(-1) is only safe when this worker is alone in a pid namespace made for it
        # (bwrap: init is pid 1, the worker pid 2); never without the sandbox
        self.pidns = bool(cfg.get("pidns")) and self.me <= 3
        self.zygotes = {}
        self.failed_zygotes = set()
        # (zygote key, module) whose import into the zygote failed or unsettled it: its
        # requests import the module in their own child
        self.unextendable = set()
        self.zygote_ok = not cfg.get("no_zygotes")
        self.extra_close = []
        self._eq_start = None  # when the running child's equivalence stage started (collect)
        self.discard = False  # set when a candidate left state this worker cannot remove

    def send(self, obj):
        self.proto.send(obj)

    def limits(self, vm_kb):
        lim = dict(self.cfg.get("limits") or {})
        mem_mb = lim.pop("memory_mb", 2048)
        # address space = what the worker already maps (interpreter + torch) + the budget
        lim["as_bytes"] = int(vm_kb * 1024 + mem_mb * 1024 * 1024)
        lim["nproc"] = count_my_tasks() + int(lim.pop("max_procs", 64))
        lim["fsize_bytes"] = int(lim.pop("file_size_mb", 64)) * 1024 * 1024
        return lim

    def run(self):
        t0 = _monotonic()
        import torch  # noqa: F401 - imported once; every child inherits it through fork

        from nnrag_harness.extensions import load_each_library_once

        load_each_library_once(torch)
        # a checkout's package gets the extension modules the environment compiled from
        # it (stash.BuiltExtensions): its originals import as they do where it was built
        from nnrag_harness.stash import serve_built_extensions

        serve_built_extensions()
        try:
            torch.set_num_threads(1)
        except Exception:  # noqa: BLE001
            pass
        self.vm_kb = vm_size_kb()
        self.lim = self.limits(self.vm_kb)
        set_subreaper()
        set_undumpable()
        gc.collect()
        if hasattr(gc, "freeze"):
            gc.freeze()  # fewer copy-on-write pages after fork
        self.send(
            {
                "type": "ready",
                "torch": torch.__version__,
                "python": "%d.%d.%d" % sys.version_info[:3],
                "executable": sys.executable,
                "pid": os.getpid(),
                "vm_kb": self.vm_kb,
                "limits": self.lim,
                "import_ms": round((_monotonic() - t0) * 1000, 1),
                # this process's CPU time so far: the interpreter's start and torch's import
                "cpu_ms": round(self_cpu() * 1000, 1),
            }
        )
        self.serve()

    def serve(self):
        while True:
            msg = self.proto.read()
            if msg is None or msg.get("type") == "exit":
                break
            if msg.get("type") == "extend" and getattr(self, "zygote_roots", None) is not None:
                # (in a zygote) a sibling module imported once for its requests
                _zygote.zygote_extend(self, str(msg.get("module") or ""))
                continue
            if msg.get("type") == "validate":
                res = self.route(msg)
                self.send(res)
                if self.discard:
                    # something a candidate left could not be removed: end this worker
                    # (pool.ts starts a fresh sandbox) instead of running the next one
                    break

    def route(self, msg):
        """Requests with an original module run in a zygote that has imported the
        original repository once (see Zygote); the others fork from this worker."""
        req = msg.get("req") or {}
        orig = req.get("original")
        if self.zygote_ok and orig and orig.get("module") and orig.get("sysPath"):
            key = (tuple(orig["sysPath"]), orig["module"].split(".")[0])
            # a harvest's run steps name the installed modules their zygote imports first
            # (zygote_main's `preload`): a zygote of its own, which other requests do not
            # extend (zygote_of_roots); one that failed (a preloaded module left a thread
            # running) gives way to the zygote of the package's import alone
            preload = tuple(orig.get("preload") or ()) if req.get("harvest") else ()
            if preload and key + (preload,) not in self.failed_zygotes:
                key = key + (preload,)
            if key not in self.failed_zygotes:
                z = self.zygotes.get(key)
                waited = None
                waited_cpu = None
                sibling = False
                if z is None and not req.get("harvest"):
                    # another top-level package of the same roots (yolov9's `utils` beside
                    # its `models`): the zygote that imported one imports the other as a
                    # sibling module, sharing what both import (the repository's common
                    # modules, the installed packages); a harvest step keeps a zygote of
                    # its package's import alone (see below). Failing that, its own zygote
                    shared = self.zygote_of_roots(key, orig["module"], req)
                    if shared is not None:
                        key, z, sibling = shared
                        if sibling:
                            waited, waited_cpu = z.extend_ms, z.extend_cpu_ms
                if z is not None and z.extended and req.get("harvest"):
                    # a harvest step reads what its zygote imported (reads.add_modules,
                    # IMPORT_CODES): it runs in a zygote of the package's import alone
                    self.drop_zygote(key)
                    z = None
                if z is None or not z.alive():
                    z = self.new_zygote(key, orig, bool(req.get("harvest")))
                elif z.modules is not None and orig["module"] != z.module and orig["module"] not in z.modules:
                    # the zygote imported a sibling module that does not import this
                    # one: the zygote imports it too, once for all its requests (not for
                    # a harvest step, see above); failing that, the candidate imports the
                    # original in its own child
                    if req.get("harvest") or not self.extend_zygote(key, z, orig["module"], req):
                        z = None
                        return self.swept(self.validate(msg))
                    waited, waited_cpu = z.extend_ms, z.extend_cpu_ms
                    sibling = True
                if z is not None:
                    res = z.ask(self, msg)
                    if waited is None and z.import_ms is not None and not z.import_reported:
                        waited, waited_cpu = z.import_ms, z.import_cpu_ms
                        z.import_reported = True
                    if res is not None and waited is not None:
                        # the zygote's import this request waited for (the cost table's)
                        res["zygoteMs"] = waited
                        if waited_cpu is not None:
                            res["zygoteCpuMs"] = waited_cpu
                        if sibling:
                            res["zygoteSibling"] = True
                    if res is not None:
                        # orphans re-parented to this worker die too, and a zygote that
                        # kept a thread or process of anything it ran is not used again
                        clock = OutsideClock()
                        self.cleanup(None)
                        if not z.unchanged():
                            self.drop_zygote(key)
                        clock.lap("zygote's worker")
                        clock.report(res)
                        return self.swept(res)
                    self.drop_zygote(key)
                    self.cleanup(None)
                    self.sweep()
                    if not z.clean:
                        # the repository's import left a thread running in the zygote:
                        # its requests import the original in their own child instead
                        self.failed_zygotes.add(key)
                        return self.validate(msg)
                    # the zygote died or hung: forget it, clean up its orphans, report
                    if z.never_answered:
                        self.failed_zygotes.add(key)
                    return z.failure(msg)
        return self.swept(self.validate(msg))

    def swept(self, res):
        """`res` after the sweep (below), whose time is its `outside` part `sweep`."""
        clock = OutsideClock()
        self.sweep()
        clock.lap("sweep")
        clock.report(res)
        return res

    def sweep(self):
        """Between candidates, empty the sandbox's writable places (/tmp, /dev/shm: each
        a size-limited tmpfs of this sandbox alone), so nothing a candidate wrote there
        reaches the next one. Without the sandbox only the candidate's own scratch folder
        is removed (validate). What cannot be removed discards this worker."""
        if not self.pidns:
            return
        # what bubblewrap mounted below them stays: a repository root or an interpreter
        # prefix that lives under /tmp is bound on top of the scratch tmpfs, read-only
        keep = mount_points()
        for d in (self.scratch_root, "/dev/shm"):
            try:
                os.chmod(d, 0o700)  # a candidate may have taken its owner's write permission
            except OSError:
                continue
            if not sweep_dir(d, keep):
                self.discard = True
        # System V IPC objects outlive their processes: none passes to the next block
        if not remove_sysv_ipc():
            self.discard = True

    def zygote_of_roots(self, key, module, req):
        """A live zygote of the same repository roots as `key` but another top-level
        package that holds `module` or can import it as a sibling (extend_zygote):
        (its key, it, whether it imported `module` now), else None. Python imports a
        module by its name on sys.path (Language Reference 5.3): with the same roots, a
        module of another top-level package imports in that zygote as in one of its own."""
        for k, z in list(self.zygotes.items()):
            if k[0] != key[0] or k == key or len(k) > 2 or k in self.failed_zygotes or not z.alive():
                continue
            if z.modules is None or (k, module) in self.unextendable:
                continue
            if module in z.modules:
                return k, z, False
            if self.extend_zygote(k, z, module, req):
                return k, z, True
        return None

    def new_zygote(self, key, orig, harvest=False):
        while len(self.zygotes) >= _zygote.MAX_ZYGOTES:
            self.drop_zygote(next(iter(self.zygotes)))
        try:
            z = _zygote.Zygote(self, list(orig["sysPath"]), orig["module"], key[2] if len(key) > 2 else (), harvest)
        except OSError:
            return None
        self.zygotes[key] = z
        return z

    def extend_zygote(self, key, z, module, req):
        """Have zygote `z` import `module` as well (Zygote.extend): True when its
        requests can fork from it. A failed import is not tried again in this worker; a
        zygote that died, hung or was left changed by it is dropped."""
        if (key, module) in self.unextendable:
            return False
        ok = z.extend(self, module, req)
        if ok and z.unchanged():
            self.sweep()
            return True
        self.unextendable.add((key, module))
        if ok is None or not z.unchanged():
            self.drop_zygote(key)
            self.cleanup(None)
        self.sweep()
        return False

    def drop_zygote(self, key):
        z = self.zygotes.pop(key, None)
        if z is not None:
            z.kill()

    def validate(self, msg):
        rid = msg.get("rid")
        req = msg.get("req") or {}
        timeout = max(0.05, float(req.get("timeoutMs") or self.cfg.get("timeout_ms") or 20000) / 1000.0)
        self.seq += 1
        clock = OutsideClock()
        if self.seq == _zygote.COLLAPSE_AFTER:
            # this process forks candidate after candidate: its heap in huge pages from
            # now on (zygote.collapse_anonymous), which makes each fork and exit cheaper
            _zygote.collapse_anonymous()
            clock.lap("huge pages")
        # an unpredictable name, created exclusively (mode 0700): nothing a candidate
        # left can stand in for the next one's scratch
        scratch = tempfile.mkdtemp(prefix="nnrag-", dir=self.scratch_root)
        t0 = _monotonic()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                self.proto.close()
                # no way for a candidate to reach a zygote's pipes or this zygote's requests
                for z in self.zygotes.values():
                    z.close_fds()
                close_quietly(*self.extra_close)
                _stages.child_main(req, scratch, w, self.lim, self.masked)
            except BaseException as e:  # noqa: BLE001
                try:
                    # the exception itself (type and message) as the error, its traceback
                    # apart: a stored record caps both, never losing the exception line
                    os.write(
                        w,
                        (
                            _dumps(
                                {
                                    "ev": "harness-error",
                                    "error": _stages.fmt_error(e),
                                    "traceback": _stages.fmt_trace(e),
                                }
                            )
                            + "\n"
                        ).encode(),
                    )
                except BaseException:  # noqa: BLE001
                    pass
            _exit(0)
        clock.lap("fork")
        forked = clock.t
        os.close(w)
        self._rusage = None
        buf, timed_out, overflow, status = self.collect(pid, r, timeout, rid)
        if status is None:
            try:
                _, status, self._rusage = os.wait4(pid, 0)
            except ChildProcessError:
                pass
        self.child_parts(clock, forked)
        strays = self.cleanup(pid)
        # drain whatever is still in the pipe, without waiting for stray holders of it
        try:
            os.set_blocking(r, False)
            while len(buf) < _stages.MAX_PIPE_BYTES:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                buf += chunk
        except (BlockingIOError, OSError):
            pass
        os.close(r)
        strays += self.cleanup(pid)
        elapsed = (_monotonic() - t0) * 1000
        clock.lap("clean-up")
        out_tail = read_tail(os.path.join(scratch, "output.log"))
        remove_tree(scratch)
        clock.lap("scratch removal")
        events = []
        for ln in buf.split(b"\n"):
            if not ln.strip():
                continue
            try:
                events.append(_loads(ln.decode("utf-8", "replace")))
            except ValueError:
                continue
        res = self.assemble(rid, req, events, status, timed_out, overflow, elapsed, timeout, strays, out_tail)
        self._clock.report(res)
        clock.report(res)
        # the scratch folder's name is random: a message naming it (the candidate's file in
        # a traceback) names it `<scratch>`, so that two runs of one request record the same
        text = _dumps(res)
        if scratch in text:
            res = _loads(text.replace(scratch, "<scratch>"))
        return res

    def child_parts(self, clock, forked):
        """The child's parts of `clock` once it is reaped: its start (fork to first
        report), its time outside the stages and usage line (first report to "done", or
        to now when it did not finish), its exit (from "done" to now, reaped)."""
        sc = self._clock
        now = _monotonic()
        total = None
        if self._rusage is not None:
            total = self._rusage.ru_utime + self._rusage.ru_stime
        first = sc.first or (now, total if total is not None else 0.0)
        end = sc.done or (now, total if total is not None else first[1])
        staged_ms = sum(sc.stage_ms.values())
        staged_cpu = sum(sc.stages.values()) / 1000.0 + (sc.usage_cpu_ms or 0.0) / 1000.0
        staged_ms += sc.usage_ms or 0.0
        clock.add("child start", (first[0] - forked) * 1000, first[1] * 1000)
        clock.add(
            "child between stages",
            (end[0] - first[0]) * 1000 - staged_ms,
            (end[1] - first[1] - staged_cpu) * 1000,
        )
        exit_cpu = (total - end[1]) if total is not None and sc.done is not None else 0.0
        # the worker's own CPU while the child ran (reading its reports, its CPU time):
        # beside the child's parts, no wall time of its own
        clock.add("worker reading the child (CPU only)", 0.0, (_thread_cpu() - clock.c) * 1000)
        clock.add("child exit", (now - end[0]) * 1000, exit_cpu * 1000)
        clock.mark()

    def cleanup(self, child_pid):
        """Kill and reap every process the candidate left behind. Inside the sandbox's
        own pid namespace kill(-1) reaches all of them at once (everything but this
        worker and the namespace's init), which also stops a fork bomb that forks
        while we kill; without a sandbox only the candidate's process group and this
        worker's descendants are signalled. Returns how many were still alive."""
        me = os.getpid()
        keep = {z.pid for z in self.zygotes.values()}
        left = [p for p, st in descendants(me, keep) if st != "Z"]
        strays = len(left)
        for _ in range(500):
            if self.pidns and not keep:
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    pass
            else:
                if child_pid:
                    kill_group(child_pid)
                for p in left:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            reap_except(keep)
            rest = descendants(me, keep)
            if not rest:
                break
            left = [p for p, st in rest if st != "Z"]
            time.sleep(0.001)
        return strays

    def forward_progress(self, rid, buf, pos):
        """Relay stage start/end events to the TS side as they arrive, so that if this
        worker itself is killed the request is still attributed to its running stage."""
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                return pos
            line = buf[pos:nl]
            pos = nl + 1
            try:
                ev = _loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            staged = ev.get("ev") in ("start", "end") and ev.get("stage") in _stages.STAGES
            self._clock.event(ev, staged)
            if ev.get("ev") == "done":
                self._done = True
            if ev.get("ev") == "start" and ev.get("stage") == "equivalence" and self._eq_start is None:
                self._eq_start = _monotonic()
            if staged:
                self.send(
                    {"type": "progress", "rid": rid, "ev": ev["ev"], "stage": ev["stage"], "status": ev.get("status")}
                )

    def collect(self, pid, r, timeout, rid=None):
        """Read the child's reports until it exits, its time limit passes (kill) or it
        floods the pipe (kill). Returns (bytes, timed_out, overflow, status or None), with
        timed_out None, "cpu" or "wall". The limit is `timeout` seconds of CPU time of the
        child and what it forked (procs.tree_cpu), with a wall-clock backstop for a child
        that waits (procs.WALL_PER_CPU); the equivalence stage, which builds and runs two
        copies, gets the same budget of its own from its start, once."""
        buf = b""
        self._eq_start = None
        self._clock = StageClock(pid)
        extended = False
        timed_out = None
        overflow = False
        status = None
        pidfd = None
        cpu_limit = timeout
        wall_deadline = _monotonic() + timeout * WALL_PER_CPU + WALL_SLACK
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                pidfd = None
        r_open = True
        pos = 0
        self._done = False
        cpu, cpu_at = 0.0, None
        try:
            while True:
                # the candidate's CPU time, read from /proc at most every 20 ms: a child
                # that reports many lines wakes this loop for each, and the walk of its
                # descendants is not free
                now = _monotonic()
                if cpu_at is None or now - cpu_at >= 0.02:
                    cpu, cpu_at = tree_cpu(pid), now
                if self._eq_start is not None and not extended:
                    extended = True
                    cpu_limit = max(cpu_limit, cpu + timeout)
                    wall_deadline = max(wall_deadline, self._eq_start + timeout * WALL_PER_CPU + WALL_SLACK)
                left = wall_deadline - _monotonic()
                if cpu >= cpu_limit or left <= 0:
                    timed_out = "cpu" if cpu >= cpu_limit else "wall"
                    self._cpu_used = cpu
                    kill_group(pid)
                    break
                # CPU time grows no faster than the wall clock per thread: wake when the
                # limit could be reached (the candidate runs torch on one thread)
                left = min(left, max(0.01, cpu_limit - cpu))
                watch = ([r] if r_open else []) + ([pidfd] if pidfd is not None else [])
                if pidfd is None:
                    done, st, ru = os.wait4(pid, os.WNOHANG)
                    if done:
                        status = st
                        self._rusage = ru
                        break
                    wait = min(left, 0.002 if not r_open else 0.05)
                else:
                    wait = min(left, 0.5)
                ready = select.select(watch, [], [], wait)[0] if watch else time.sleep(wait) or []
                if r_open and r in ready:
                    chunk = os.read(r, 65536)
                    if not chunk:
                        r_open = False
                    else:
                        buf += chunk
                        pos = self.forward_progress(rid, buf, pos)
                        if self._done:
                            # the child has reported everything: do not wait for its
                            # exit (slow under a fork bomb), end it and its group now
                            kill_group(pid)
                            break
                        if len(buf) > _stages.MAX_PIPE_BYTES:
                            overflow = True
                            kill_group(pid)
                            break
                if pidfd is not None and pidfd in ready:
                    break
        finally:
            if pidfd is not None:
                os.close(pidfd)
        return buf, timed_out, overflow, status

    def assemble(self, rid, req, events, status, timed_out, overflow, elapsed, timeout, strays, out_tail):
        stages = {s: "skip" for s in _stages.STAGES}
        timings = {}
        res = {
            "type": "result",
            "rid": rid,
            "stages": stages,
            "timings": timings,
            "category": None,
            "error": None,
            "stage": None,
            "args": None,
            "input_shapes": None,
            "output_shapes": None,
            "params": None,
            "ms": round(elapsed, 3),
        }
        current = None
        ended = set()
        done = False
        equivalence = None
        original_ms = None  # the original's import and build, when equivalence got that far
        harness_error = None
        for ev in events:
            k = ev.get("ev")
            if k == "start" and ev.get("stage") in stages:
                current = ev["stage"]
            elif k == "end" and ev.get("stage") in stages:
                st = ev["stage"]
                ended.add(st)
                stages[st] = ev.get("status", "fail")
                if "ms" in ev:
                    timings[st] = ev["ms"]
                if ev.get("args") is not None:
                    res["args"] = ev["args"]
                if st == "namespace" and isinstance(ev.get("namespace"), dict):
                    res["namespace"] = dict(ev["namespace"], status=ev.get("status"))
                if st == "equivalence":
                    equivalence = {"status": ev.get("status")}
                    if ev.get("reason"):
                        equivalence["reason"] = ev["reason"]
                    if ev.get("maxAbsDiff") is not None:
                        equivalence["maxAbsDiff"] = ev["maxAbsDiff"]
                if ev.get("status") == "fail" and res["stage"] is None:
                    res["stage"] = st
                    res["category"] = ev.get("category") or "runtime-error"
                    res["error"] = ev.get("error")
                    if ev.get("traceback"):
                        res["traceback"] = ev["traceback"]
                current = None
            elif k == "info":
                if isinstance(ev.get("originalMs"), (int, float)):
                    original_ms = ev["originalMs"]
                for key in (
                    "args",
                    "input_shapes",
                    "output_shapes",
                    "params",
                    "layers",
                    "usage",
                    "usageCheck",
                    "usageDraws",
                    "usageSkipped",
                    "usageNeeds",
                    "usageParts",
                    "argumentsSource",
                    "argumentsOrigin",
                    "witnessSkipped",
                    "providersWanted",
                    "whole",
                ):
                    if key in ev and ev[key] is not None:
                        res[key] = ev[key]
            elif k == "harvest":
                res["harvest"] = ev.get("result")
            elif k == "done":
                done = True
            elif k == "harness-error":
                harness_error = ev.get("error")
                if ev.get("traceback") and not res.get("traceback"):
                    res["traceback"] = ev["traceback"]
        if equivalence is not None:
            if original_ms is not None:
                equivalence["originalMs"] = original_ms
            res["equivalence"] = equivalence
        if not done and res["stage"] is None:
            # the child did not finish: attribute the ending to the running stage, else
            # to the first stage after the last one reported. A stage whose report line
            # was lost (a candidate can corrupt the pipe) is never failed beside later
            # stages that ran; None when every stage reported and only "done" is missing
            # (then the record is not ok: nothing says the block finished)
            reported = [i for i, s in enumerate(_stages.STAGES) if s in ended]
            after = max(reported) + 1 if reported else 0
            st = current or (_stages.STAGES[after] if after < len(_stages.STAGES) else None)
            if st is not None:
                stages[st] = "fail"
            res["stage"] = st
            if timed_out == "cpu":
                res["category"] = "timeout"
                res["error"] = "timeout: the block used its %g s of CPU time" % timeout
            elif timed_out:
                res["category"] = "timeout"
                res["error"] = "timeout: wall-clock backstop after %.0f s (%.1f s of CPU time used of %g s)" % (
                    elapsed / 1000,
                    getattr(self, "_cpu_used", 0.0),
                    timeout,
                )
            elif overflow:
                res["category"] = "crash"
                res["error"] = "candidate flooded the report pipe"
            elif status is not None and os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
                if sig == signal.SIGXCPU:
                    res["category"] = "timeout"
                    res["error"] = "CPU time limit exceeded (SIGXCPU)"
                elif sig == signal.SIGXFSZ:
                    res["category"] = "sandbox-denied"
                    res["error"] = "file size limit exceeded (SIGXFSZ)"
                else:
                    res["category"] = "crash"
                    res["error"] = "process killed by %s" % name
            elif harness_error:
                res["category"] = "crash"
                res["error"] = "harness error: " + harness_error
            else:
                code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
                res["category"] = "crash"
                res["error"] = "process exited with status %s %s" % (
                    code,
                    "during %s" % st if st else "after the last stage, before its end",
                )
            if out_tail:
                res["output"] = out_tail
            if st == "equivalence" and res["category"] == "timeout":
                # Running the original as well did not fit the time: that decides nothing
                # about the copy (every stage it needs passed), so equivalence is skipped
                # with the reason, not failed.
                stages[st] = "skip"
                res["equivalence"] = {"status": "skip", "reason": "not decided: " + res["error"]}
                res["stage"] = res["category"] = res["error"] = None
                res.pop("output", None)
            elif st == "equivalence" and equivalence is None:
                res["equivalence"] = {"status": "fail", "reason": res["error"]}
        if strays:
            res["strays_killed"] = strays

        return res
