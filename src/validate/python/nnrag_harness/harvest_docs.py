# Witnesses from the repository's own tests and documented examples (src/validate/README.md
# "Witnesses", "Tests and documented examples"): a library of layers has no model builder
# to harvest, but its test suite builds every layer with valid arguments and calls it with
# valid inputs, and its documentation shows how. Runs in the sandbox like harvest.py:
#
#   list: test files (pytest's naming convention: test_*.py / *_test.py), the Python code
#         blocks of Markdown files (``` python fences), the `>>>` examples of the
#         repository classes' docstrings (doctest's own parser) and the scripts of an
#         examples/ folder - each an entry point with the repository classes it names
#         (its reach, for greedy coverage), read statically, never run.
#   run:  one test file through pytest's own collection and runner (fixtures and
#         parametrization as pytest runs them), or one example as a script, under the
#         harvest's constructor and forward wrappers (harvest.Recorder), each completed
#         construction a witness named by the test (its node id) or the file and line.
#
# A test gets a budget of its own (a CPU-time timer, harvest.py BUDGET_TIMER: the test
# fails with TestTimeout and the next runs; a test that ignores it is ended by the step's
# budget); what a failing, skipped or
# stopped test recorded before it stopped is kept, nothing more. A test or step that waits
# without computing (a download retried with pauses in a sandbox without network: 23 s of
# sleeping per file) is ended the same way by a wall-clock timer (ITIMER_REAL) of
# WALL_PER_CPU x its CPU budget + WALL_SLACK s, as a block's is (procs.py): the step still
# answers, with what ran before, instead of waiting for the worker's backstop.
import ast
import inspect
import os
import re
import signal
import sys
import time
from . import harvest as H

TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")  # pytest's default python_files
TEST_DIRS = {"test", "tests", "testing", "unittest", "unittests"}
SKIP_DIRS = {"node_modules", "site-packages", "build", "dist", "__pycache__", "venv", ".venv", "third_party"}
MD_FENCE = re.compile(r"^( {0,3})(```+|~~~+)\s*\{?\.?(python3?|py|pycon|ipython3?)\b[^\n]*$", re.I)
# folders whose *_test.py files are not the test suite: documentation, examples, benchmarks
NOT_TESTS = {"docs", "doc", "examples", "example", "benchmark", "benchmarks"}
MAX_FILES = 2000
MAX_DOC_BYTES = 400_000
DEFAULT_TEST_SECONDS = 10.0
# tests naming the same classes that run in a row without calling a class new to the
# harvest, after which the others naming only called classes are not run (as IDLE_RUNS
# for the harvest's families, witness/harvest.ts)
IDLE_TESTS = 2


class TestTimeout(Exception):
    """A test ran past its own budget: pytest records it as failed and runs the next."""


class TestWorkSpent(TestTimeout):
    """A test's counted work passed its own budget (StepMeter): at the same operation in
    every run; pytest records it as failed and runs the next."""


class TestMemorySpent(MemoryError):
    """An operation of a test took the step's live tensors past their budget (StepMeter):
    refused, as the allocator refuses one past the address-space limit (a MemoryError),
    at the same operation in every run; pytest records the test as failed and runs the
    next, whose operations go on while they fit."""


# The counted work of a test session or example (StepMeter), in the unit of the real
# forwards' work (harvest.work_counter: multiply-adds and elements), so that a step stops
# at the same operation, or the same test, on every machine and at any load, as a builder
# step's forward does; its CPU timer is only a backstop, BACKSTOP_PER_BUDGET x the budget.
# A test spends its CPU on what a forward's count sees (multiply-adds, elements), on calling
# torch at all (TEST_OP_WORK per operation: the Python around it, small tensors) and on
# Python (a runner's hooks, configurations, registries: TEST_CALL_WORK per Python call, the
# global trace function's "call" events in the main thread); a backward pass counts
# TEST_BACKWARD x the forward operations it differentiates. The rates are fixed, never a
# measured speed. Calibrated on this project's 2-core x86 machine (torch 2.15, under the
# load of other work; src/validate/README.md "Tests and documented examples" gives the
# figures): sessions of the reference corpus count 7 G per second of CPU for their
# multiply-adds and elements (mmpose's VGG and V2V backbone tests: 5.9e10 in 8.5 s with
# 1.9 M calls), about 15 us per operation (the function mode's own Python and a small
# tensor's; a test indexing a tensor element by element makes 100,000s of them), 1 us per
# Python call (mmengine's runner tests: 29.3 M calls in 29.2 s), so that a second of CPU
# there counts 0.8-1.2 s of work: a step that completed within its 30 s there still does,
# one that ran to its timer stops by its work, and the backstop (45 s) is reached only on
# a machine much slower, or by work the count does not see (a loop that calls no function
# and no torch operation).
TEST_WORK_PER_SECOND = 7e9
TEST_OP_WORK = 15e-6 * TEST_WORK_PER_SECOND
TEST_CALL_WORK = 1e-6 * TEST_WORK_PER_SECOND
# a backward pass: twice the work of the forward operations it differentiates
TEST_BACKWARD = 2
# a process the step starts (ProcessStarts): its work is done where the count does not
# see it, but its CPU time is the step's (a waited-for child's, times(2)). A Python
# interpreter started (a distributed test's workers, multiprocessing's spawn) imports
# torch and runs a little: a session of mmengine's model and wrapper tests started 11 and
# spent 18.7 s of CPU, about 14 s of it in them; a fork of the step (multiprocessing's fork)
# runs on what it inherited; another program (git, a compiler asked its version: the
# environment a runner collects, 10-11 a session in mmengine's hook tests) takes
# milliseconds
TEST_PYTHON_START_WORK = 1.5 * TEST_WORK_PER_SECOND
TEST_FORK_WORK = 0.5 * TEST_WORK_PER_SECOND
TEST_EXEC_WORK = 0.05 * TEST_WORK_PER_SECOND
# the CPU (and wall-clock) timers of a doc step and of a test, past their counted budget,
# within the child's RLIMIT_CPU (twice the pool's 30 s, harness double_cpu_budget) for the
# default 30 s budget
BACKSTOP_PER_BUDGET = 1.5
# the bytes of live tensor storages a doc step may hold (StepMeter), when the request
# gives no memory budget (`tensorMemoryMb`): below the address space the pool gives a step
# (2048 MB from its zygote's), which the interpreter's objects, the allocator's free lists
# and arenas, thread stacks and the libraries mapped later share with the tensors. In the
# harvest (the repository imported in the zygote), mmpose's backbone sessions stopped at
# 1,280 MB of tensors had grown 1,373-1,491 MB resident, and sessions the address-space
# limit stopped had grown 2,034-2,103 MB: 1,536 MB of tensors leaves some 300 MB below
# those; 1,280 MB cut sessions that had run on with a few allocations refused, and two
# classes of mmpose lost a second witness
TEST_TENSOR_MB = 1536


class PythonCalls(object):
    """Python function calls in this thread from start(): the global trace function's
    "call" events (a new frame; no line events). The harvest step's own recording of what
    ran (reads.Reads) counts them when it is the trace function; else a counting trace
    function of its own, chained to any other. A pure function of the code that runs
    (the same calls in the same order on every machine); other threads are not counted
    (they run as the scheduler lets them)."""

    def __init__(self):
        self.n = 0
        self.src = None
        self.prev = None
        self.base = 0
        self.on = False

    def _hook(self, frame, event, arg):
        self.n += 1
        prev = self.prev
        return prev(frame, event, arg) if prev is not None else None

    def start(self):
        tr = sys.gettrace()
        owner = getattr(tr, "__self__", None)
        if owner is not None and hasattr(owner, "main_calls"):
            self.src, self.base = owner, owner.main_calls
        else:
            self.prev = tr
            sys.settrace(self._hook)
        self.on = True
        return self

    def count(self):
        return self.src.main_calls - self.base if self.src is not None else self.n

    def stop(self):
        if self.on and self.src is None and sys.gettrace() == self._hook:
            sys.settrace(self.prev)
        self.on = False


class ProcessStarts(object):
    """The processes the step starts, counted where Python starts them, and their work
    (`work`): os.fork (multiprocessing's fork start method: TEST_FORK_WORK),
    _posixsubprocess.fork_exec (subprocess, which binds it at import, and
    multiprocessing's spawn and forkserver through spawnv_passfds) and os.posix_spawn(p):
    TEST_PYTHON_START_WORK for a Python interpreter (this one, or a program named
    python*), else TEST_EXEC_WORK."""

    def __init__(self):
        self.n = 0
        self.work = 0
        self.saved = []

    def _charge(self, name, a, k):
        self.n += 1
        if name == "fork":
            self.work += TEST_FORK_WORK
            return
        # the program: fork_exec(args, executable_list, ...), posix_spawn(path, argv, env)
        prog = None
        try:
            if name.endswith("fork_exec"):
                exe = a[1] if len(a) > 1 else None
                prog = exe[0] if exe else (a[0][0] if a and a[0] else None)
            else:
                prog = a[0] if a else k.get("path")
            prog = os.fsdecode(prog)
        except Exception:  # noqa: BLE001 - an odd call: charged as another program
            prog = None
        py = isinstance(prog, str) and (
            prog == sys.executable or re.match(r"python[\d.]*$", os.path.basename(prog)) is not None
        )
        self.work += TEST_PYTHON_START_WORK if py else TEST_EXEC_WORK

    def start(self):
        import _posixsubprocess
        import subprocess

        for owner, name in (
            (os, "fork"),
            (_posixsubprocess, "fork_exec"),
            (subprocess, "_fork_exec"),  # bound at its import (Python 3.11)
            (os, "posix_spawn"),
            (os, "posix_spawnp"),
        ):
            f = getattr(owner, name, None)
            if f is None:
                continue

            def counted(*a, _f=f, _name=name, **k):
                self._charge(_name, a, k)
                return _f(*a, **k)

            try:
                setattr(owner, name, counted)
            except (AttributeError, TypeError):
                continue
            self.saved.append((owner, name, f))
        return self

    def stop(self):
        for owner, name, f in reversed(self.saved):
            setattr(owner, name, f)
        self.saved = []


class StepMeter(object):
    """The counted work and memory of a doc step (a test session or an example): a
    harvest.work_counter function mode (the torch operations' multiply-adds and elements,
    TEST_OP_WORK per operation, the live tensor storages' bytes) entered while a test or
    an example runs, plus TEST_CALL_WORK per Python call (PythonCalls) and
    the processes it starts (ProcessStarts). The step's budget
    is TEST_WORK_PER_SECOND x its seconds, a test's the same of its own seconds; the
    operation that passes a test's budget fails that test (TestWorkSpent), the one that
    passes the step's fails the running test and ends the session (`stop`: "work"); Python
    work without torch operations is checked between tests. An operation that takes the
    live tensors past the memory budget is refused (TestMemorySpent, a MemoryError: the
    test fails and the next runs, as under the address-space limit, but at the same
    operation in every run; an example ends, `stop`: "memory"). None without a function
    mode (torch < 1.12: the CPU timers alone)."""

    def __new__(cls, torch, budget, memory_mb):
        mode = H.work_counter(
            torch,
            op_work=TEST_OP_WORK,
            backward=TEST_BACKWARD,
            memory_limit=int(memory_mb * (1 << 20)) if memory_mb else None,
        )
        if mode is None:
            return None
        self = object.__new__(cls)
        self.mode = mode
        self.calls = PythonCalls()
        self.procs = ProcessStarts()
        self.limit = TEST_WORK_PER_SECOND * budget
        self.stop = None
        self.test_stopped = False
        self.memory_stopped = False  # an operation of the running test passed the memory budget
        self.in_test = False
        mode.extra = self.python_work
        return self

    def python_work(self):
        # the work the mode does not see: Python calls, processes started
        return self.calls.count() * TEST_CALL_WORK + self.procs.work

    def start(self):
        self.calls.start()
        self.procs.start()

    def stop_counting(self):
        self.calls.stop()
        self.procs.stop()

    def work(self):
        return self.mode.total + self.python_work()

    def seconds(self):
        return round(self.work() / TEST_WORK_PER_SECOND, 3)

    def spent(self):
        """The step's counted work or memory is spent (checked between tests: Python
        work is not checked while it runs)."""
        if self.stop is None and self.work() > self.limit:
            self.stop = "work"
        return self.stop is not None

    def arm(self, test_seconds=None):
        """The limit for what runs next: the step's, or a test's of `test_seconds` within it."""
        lim = self.limit
        if test_seconds:
            lim = min(lim, self.work() + TEST_WORK_PER_SECOND * test_seconds)
        self.mode.limit = lim if self.stop is None else None
        self.mode.on_limit = self._passed

    def _passed(self, kind):
        if kind == "memory":
            self.memory_stopped = True
            if self.in_test:
                raise TestMemorySpent(H.MEMORY_STOP)
            self.stop = self.stop or "memory"
            return  # an example: work_counter raises MemoryBudgetSpent, which ends it
        if self.work() > self.limit:
            self.stop = self.stop or "work"
            return  # work_counter raises WorkBudgetSpent: the session ends
        self.test_stopped = True
        raise TestWorkSpent("test's counted work passed its budget")

    def peak_mb(self):
        return None if self.mode.peak is None else round(self.mode.peak / float(1 << 20), 1)


def _walk(root, want, limit=MAX_FILES):
    """Files under root (sorted, hidden and vendored folders left out) for which want(rel) holds."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in SKIP_DIRS)
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(d, f), root)
            if want(rel):
                out.append(rel)
                if len(out) >= limit:
                    return out
    return out


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(MAX_DOC_BYTES)
    except OSError:
        return None


def _names(text):
    return set(re.findall(r"[A-Za-z_]\w*", text or ""))


def _reach(names, by_name):
    return sorted({c for n in names for c in by_name.get(n, ())})


def is_test_file(rel):
    return bool(TEST_FILE.match(os.path.basename(rel)))


def markdown_blocks(text):
    """(line, code) of each Python code block of a Markdown text (CommonMark fenced code
    blocks, §4.5: an opening fence of 3+ backticks or tildes with the info string
    `python`/`py`, closed by a fence of the same character at least as long); `pycon`
    blocks and `>>>` sessions are read as doctest examples. Blocks that do not parse
    are left out (shell lines, elided code)."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = MD_FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m.group(2), len(m.group(1))
        start = i + 1
        j = start
        while j < len(lines) and not re.match(
            r"^ {0,3}%s%s*\s*$" % (re.escape(fence[0]) * len(fence), re.escape(fence[0])), lines[j]
        ):
            j += 1
        body = [ln[indent:] if ln[:indent].strip() == "" else ln for ln in lines[start:j]]
        code = "\n".join(body)
        if ">>>" in code:
            code = doctest_code(code)
        if code and code.strip():
            try:
                ast.parse(code)
                out.append((start + 1, code))
            except SyntaxError:
                pass
        i = j + 1
    return out


def doctest_code(text):
    """The source of the `>>>` examples of a docstring (doctest's own parser), one script."""
    import doctest

    try:
        return "".join(ex.source for ex in doctest.DocTestParser().get_examples(text))
    except ValueError:
        return ""


def import_lines(code):
    """The top-level import statements of a code block (what a later block of the same
    document relies on)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    lines = code.split("\n")
    out = []
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            out.append("\n".join(lines[st.lineno - 1 : st.end_lineno]))
    return "\n".join(out)


def _runs_something(code):
    """A block with a statement besides imports (one of imports only builds nothing)."""
    try:
        return any(not isinstance(st, (ast.Import, ast.ImportFrom)) for st in ast.parse(code).body)
    except SyntaxError:
        return False


def doc_entries(repo_root, classes, by_name, pytest_ok):
    """Entry points from the repository's tests and documented examples (see the header):
    those naming no repository class are left out (they cannot cover one)."""
    entries = []
    if not repo_root or not os.path.isdir(repo_root):
        return entries, {}
    notes = {}
    # 1. test files: one entry per file (pytest collects and runs it)
    tests = _walk(repo_root, lambda rel: is_test_file(rel) and rel.split(os.sep)[0] not in NOT_TESTS)
    if tests and not pytest_ok:
        notes["tests"] = "pytest is not importable in this environment: %d test files not run" % len(tests)
        tests = []
    for rel in tests:
        r = _reach(_names(_read(os.path.join(repo_root, rel))), by_name)
        if r:
            entries.append(
                {
                    "kind": "test",
                    "module": "",
                    "qualname": rel,
                    "plan": {},
                    "reach": r,
                    "rank": 0,
                    "family": "test:" + rel,
                    "via": "test:" + rel,
                    "file": rel,
                }
            )
    # 2. Markdown code blocks: each a script, after the imports of the blocks above it
    for rel in _walk(repo_root, lambda rel: rel.lower().endswith((".md", ".markdown")) and rel.count(os.sep) <= 2, 200):
        text = _read(os.path.join(repo_root, rel)) or ""
        before = []
        for line, code in markdown_blocks(text):
            r = _reach(_names(code), by_name)
            prefix = "\n".join(x for x in before if x)
            imports = import_lines(code)
            before.append(imports)
            if r and _runs_something(code):
                entries.append(
                    {
                        "kind": "readme",
                        "module": "",
                        "qualname": "%s:%d" % (rel, line),
                        "plan": {},
                        "reach": r,
                        "rank": 0,
                        "family": "readme:%s:%d" % (rel, line),
                        "via": "readme:%s:%d" % (rel, line),
                        "file": rel,
                        "line": line,
                        "code": code,
                        "prelude": prefix,
                    }
                )
    # 3. `>>>` examples in the docstrings of the repository's classes, run in the class's module namespace

    for cid, cls in sorted(classes.items()):
        doc = cls.__dict__.get("__doc__")
        if not isinstance(doc, str) or ">>>" not in doc:
            continue
        code = doctest_code(inspect.cleandoc(doc))
        if not code:
            continue
        try:
            f = inspect.getsourcefile(cls)
            line = inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            f, line = None, 0
        rel = os.path.relpath(f, repo_root) if f else cls.__module__
        r = sorted(set(_reach(_names(code), by_name)) | {cid})
        entries.append(
            {
                "kind": "doctest",
                "module": cls.__module__,
                "qualname": cls.__qualname__,
                "plan": {},
                "reach": r,
                "rank": 0,
                "family": "doctest:" + cid,
                "via": "doctest:%s:%d" % (rel, line),
                "file": rel,
                "line": line,
                "code": code,
            }
        )
    # 4. examples/ scripts
    for rel in _walk(
        repo_root,
        lambda rel: rel.endswith(".py") and rel.split(os.sep)[0] in ("examples", "example") and not is_test_file(rel),
        200,
    ):
        r = _reach(_names(_read(os.path.join(repo_root, rel))), by_name)
        if r:
            entries.append(
                {
                    "kind": "example",
                    "module": "",
                    "qualname": rel,
                    "plan": {},
                    "reach": r,
                    "rank": 0,
                    "family": "example:" + rel,
                    "via": "example:" + rel,
                    "file": rel,
                }
            )
    return entries, notes


def pytest_importable():
    import importlib.util

    try:
        return importlib.util.find_spec("pytest") is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------------------- run


def run_doc_entry(cfg, torch, send):
    """Run one test file or one documented example under the harvest's wrappers; sends one
    {"ev": "harvest"} event like harvest.run_entry."""
    entry = cfg["entry"]
    repo_root = cfg.get("repoRoot")
    budget = float(cfg.get("budgetSeconds", 30))
    # the budgets count CPU seconds (harvest.py BUDGET_TIMER); ms is the wall time
    t0 = H.cpu_seconds()
    w0 = time.monotonic()
    name = H.entry_name(entry)
    res = {"entry": name, "built": False, "forward": False, "error": None}
    rss0 = H.proc_status_kb("VmRSS")
    H.limit_memory(cfg.get("memoryMb"))
    roots = cfg.get("own") or cfg["roots"]
    nn = torch.nn
    rec = None

    def install():
        nonlocal rec
        if rec is None:
            rec = H.Recorder(torch, H.repo_classes(H.repo_modules(roots), nn), roots)
            rec.origin = {}
            rec.current = name
            rec.install(nn)
            rec.watch_imports()
            H.no_downloads(torch)
        return rec

    # the step's counted work and memory (StepMeter): what stops it, the same in every run;
    # its CPU and wall-clock timers are backstops, BACKSTOP_PER_BUDGET x the budget
    # (without a function mode, torch < 1.12: the budget itself). The collector starts from
    # a known state (what the zygote left between forks differs from step to step): the
    # storages it frees, and when, are then the same in every run
    import gc

    gc.collect()
    memory_mb = cfg.get("tensorMemoryMb") or TEST_TENSOR_MB
    meter = StepMeter(torch, budget, memory_mb)
    backstop = budget * (BACKSTOP_PER_BUDGET if meter is not None else 1.0)
    # which backstop ended the step: "cpu" or "wall"
    ended = {}

    def alarm(signum, frame):
        ended["by"] = "wall" if signum == signal.SIGALRM else "cpu"
        raise H.EntryTimeout("step took longer than %.0f s" % backstop)

    signal.signal(H.BUDGET_SIGNAL, alarm)
    signal.signal(signal.SIGALRM, alarm)
    H.arm_budget(backstop)
    # the step's wall-clock bound, as arm_budget armed it
    deadline = w0 + wall_bound(backstop)
    saved_argv, saved_path = sys.argv, list(sys.path)
    if meter is not None:
        meter.start()
    try:
        if entry["kind"] == "test":
            res["tests"] = run_test_file(cfg, entry, repo_root, backstop, t0, install, torch, deadline, meter, ended)
            res["built"] = res["tests"]["passed"] + res["tests"]["failed"] > 0
        else:
            run_example(entry, repo_root, install, torch, meter)
            res["built"] = True
    except H.WorkBudgetSpent:
        res["error"] = "%s of %.0f s" % (H.WORK_STOP, budget)
    except H.MemoryBudgetSpent:
        res["error"] = "%s of %d MB" % (H.MEMORY_STOP, memory_mb)
    except H.EntryTimeout as e:
        res["error"] = "timeout: %s" % e
    except BaseException as e:  # noqa: BLE001 - a failing example is reported, never fatal
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    finally:
        H.arm_budget(0)
        if meter is not None:
            meter.stop_counting()
        sys.argv = saved_argv
        sys.path[:] = saved_path
    if rec is not None:
        res["forward"] = any(rec.calls.values())
    res["ms"] = round((time.monotonic() - w0) * 1000, 1)
    res["cpuMs"] = round((H.cpu_seconds() - t0) * 1000, 1)
    res["memoryMb"] = H.memory_used_mb(rss0)
    if meter is not None:
        # the step's counted work, in seconds of its budget (witness/harvest.ts reusable:
        # a completed answer serves a smaller budget only above it), the live tensors' peak
        res["workSeconds"] = meter.seconds()
        res["work"] = {
            "ops": meter.mode.ops,
            "elements": meter.mode.total - meter.mode.ops * TEST_OP_WORK - meter.mode.backward_work,
            "backward": meter.mode.backward_work,
            "calls": meter.calls.count(),
            "processes": meter.procs.n,
            "tensorMb": meter.peak_mb(),
        }
    # what ended the step, or the session before some of its tests ran (a larger budget
    # would run more; a stored answer then serves only the same budget, witness/harvest.ts
    # reusable): its counted work ("work") or memory ("memory", also the address-space
    # limit refusing an allocation), the same in every run; or a backstop ("time": its CPU
    # or wall-clock timer, `backstop` says which), which depends on the machine and its load
    tests = res.get("tests") or {}
    stop = H.budget_stop(str(res.get("error") or ""))
    timed = tests.pop("spent", None) or stop == "time"
    counted = meter.stop if meter is not None else None
    # the address-space limit (RLIMIT_AS) ended the step: its error is a MemoryError or the
    # allocator's, not the counted budget's
    by_address_space = stop == "memory" and not str(res.get("error") or "").startswith(H.MEMORY_STOP)
    if by_address_space:
        res["stopped"] = "memory"
        res["backstop"] = "address-space"
    elif counted == "memory" or stop == "memory":
        res["stopped"] = "memory"
    elif timed:
        res["stopped"] = "time"
        res["backstop"] = ended.get("by", "cpu")
    elif counted == "work" or stop == "work":
        res["stopped"] = "work"
    elif tests.get("unrun"):
        res["stopped"] = "time"
    elif tests.get("memory"):
        # tests whose operations the memory budget refused (a larger budget runs them further)
        res["stopped"] = "memory"
    res["classes"] = rec.witnesses(name) if rec is not None else {}
    send({"ev": "harvest", "result": res})


def run_example(entry, repo_root, install, torch, meter=None):
    """A Markdown block, a docstring's examples or an examples/ script, run as a script
    (`__name__ == "__main__"`, no command-line arguments). Its import statements run
    before the wrappers are installed (the classes they import are then wrapped); a
    statement that raises ends the script, what ran before it is kept."""
    import importlib

    kind = entry["kind"]
    if kind == "example":
        path = os.path.join(repo_root, entry["file"])
        code = _read(path) or ""
        ns = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
        sys.argv = [path]
        sys.path.insert(0, os.path.dirname(path))
    elif kind == "doctest":
        m = importlib.import_module(entry["module"])
        code = entry["code"]
        ns = dict(vars(m))  # doctest's globs: a copy of the module's namespace
        ns["__name__"] = "__main__"
        # what a doctest namespace usually provides besides the module's own names (pytest's
        # doctest_namespace in a conftest): the top-level package and torch
        top = entry["module"].split(".")[0]
        ns.setdefault(top, sys.modules.get(top) or importlib.import_module(top))
        ns.setdefault("torch", torch)
        path = "<doctest %s>" % entry["via"]
        sys.argv = [path]
    else:
        code = (entry.get("prelude") or "") + "\n" + entry["code"]
        path = os.path.join(repo_root, entry["file"])
        ns = {"__name__": "__main__", "__builtins__": __builtins__}
        sys.argv = [path]
    tree = ast.parse(code, path)
    imports = [st for st in tree.body if isinstance(st, (ast.Import, ast.ImportFrom))]
    rest = [st for st in tree.body if not isinstance(st, (ast.Import, ast.ImportFrom))]
    for st in imports:
        try:
            exec(compile(ast.Module([st], []), path, "exec"), ns)  # noqa: S102 - the repository's own example, in the sandbox
        except ImportError:
            pass  # a later statement that uses the name fails and ends the example
    install()
    torch.manual_seed(0)
    if meter is not None:
        # the example's statements under the step's counted work and memory
        meter.arm()
        with meter.mode:
            for st in rest:
                exec(compile(ast.Module([st], []), path, "exec"), ns)  # noqa: S102
        return
    for st in rest:
        exec(compile(ast.Module([st], []), path, "exec"), ns)  # noqa: S102


def test_reach(item, rec):
    """The repository classes a collected test names: the global names its function's code
    reads (nested code included) and those of the test module's own functions it calls,
    one level (helpers that build the layer). Empty when it names none (it runs)."""
    fn = getattr(item, "function", None) or getattr(item, "obj", None)
    fn = getattr(fn, "__func__", fn)
    if not hasattr(fn, "__code__"):
        return set()
    ids = getattr(rec, "_class_keys", None)
    if ids is None:
        ids = rec._class_keys = {id(c): k for k, c in rec.repo.items()}
    g = getattr(fn, "__globals__", {})
    out = set()
    for code in H.code_objects(fn):
        for n in code.co_names:
            v = g.get(n)
            if v is None:
                continue
            if id(v) in ids:
                out.add(ids[id(v)])
            elif inspect.isfunction(v) and v.__module__ == fn.__module__:
                for c2 in H.code_objects(v):
                    out.update(ids[id(g[m])] for m in c2.co_names if m in g and id(g[m]) in ids)
    return out


def rec_calls(rec):
    """Per repository class key: how many of its instances this step saw called."""
    ids = getattr(rec, "_class_keys", None) or {id(c): k for k, c in rec.repo.items()}
    n = {}
    for k, calls in rec.calls.items():
        if calls and k in rec.built:
            cid = ids.get(id(rec.built[k][1]))
            if cid is not None:
                n[cid] = n.get(cid, 0) + 1
    return n


# a test parameter that names the device a test runs on (pytest's convention for tests
# of one operator on several backends: `device`, `device_type`, `devices`)
DEVICE_PARAM = re.compile(r"(^|_)(device|dev)s?(_type|_name)?$", re.I)
DEVICE_VALUE = re.compile(r"^([a-z][a-z0-9_]*)(:\d+)?$")


def device_available(torch, value):
    """Whether this torch can run on the device a string names: cpu, or a backend whose
    module says so (torch.cuda, torch.mps, torch.xpu; a device plugin such as torch_npu
    registers torch.npu). A name torch has no module for (mlu, musa without their plugin)
    is not available."""
    kind = value.split(":", 1)[0].lower()
    if kind in ("cpu", "meta"):
        return True
    mod = getattr(torch, kind, None)
    try:
        return bool(mod.is_available())
    except Exception:  # noqa: BLE001 - no such backend here
        return False


def cpu_stand_ins(items, torch):
    """Tests parametrized over accelerator devices only (`@parametrize('device', [cuda,
    npu, mlu])`, each skipped where its device is missing) run once on the CPU in their
    stead: what such a test builds and calls before it moves to the device (the layer,
    its inputs, its CPU reference run) is the repository's own use of the layer, and on a
    machine without the device nothing else in the test suite may build it. So does a
    test skipped only for want of a device (device_skip). Per test
    function with no parametrization on an available device, the first item of each
    combination of its other parameters gets the device parameter 'cpu' and loses the
    skip marks of its parametrization (those of the test itself stay); its witnesses are
    named by its test id with '@cpu'. Returns the items changed."""
    by_function = {}
    for it in items:
        cs = getattr(it, "callspec", None)
        params = getattr(cs, "params", None)
        if not isinstance(params, dict):
            continue
        devs = [n for n, v in params.items() if DEVICE_PARAM.search(n) and isinstance(v, str) and DEVICE_VALUE.match(v)]
        if len(devs) != 1:
            continue
        key = (getattr(getattr(it, "parent", None), "nodeid", ""), getattr(it, "originalname", it.name))
        by_function.setdefault(key, []).append((it, devs[0]))
    changed = []
    for group in by_function.values():
        if any(device_available(torch, it.callspec.params[n]) for it, n in group):
            continue  # the test runs on this machine as it is
        seen = set()
        for it, n in group:
            rest = repr(sorted((k, repr(v)) for k, v in it.callspec.params.items() if k != n))
            if rest in seen:
                continue
            seen.add(rest)
            try:
                it.callspec.params[n] = "cpu"
                own = list(getattr(it.callspec, "marks", ()) or ())
                it.own_markers[:] = [
                    m for m in it.own_markers if not (m.name in ("skip", "skipif") and any(m is x for x in own))
                ]
            except Exception:  # noqa: BLE001 - a pytest whose items differ: left as they are
                continue
            it._nnrag_on = "@cpu"
            changed.append(it)
    # tests skipped (skipif with a true condition) for want of a device: run on the CPU
    for it in items:
        if getattr(it, "_nnrag_on", None):
            continue
        dropped = False
        for node in it.listchain():
            marks = getattr(node, "own_markers", None)
            if not marks:
                dropped = dropped or getattr(node, "_nnrag_device_skips", False)
                continue
            keep = [m for m in marks if not device_skip(m)]
            if len(keep) < len(marks):
                marks[:] = keep
                node._nnrag_device_skips = True
            dropped = dropped or getattr(node, "_nnrag_device_skips", False)
        if dropped:
            it._nnrag_on = "@cpu"
            changed.append(it)
    return changed


# the reason of a skip for want of a device ("requires CUDA support", "test requires GPU")
DEVICE_REASON = re.compile(r"\b(cuda|gpus?|npu|mlu|musa|xpu|mps|hpu|accelerators?)\b", re.I)


def device_skip(mark):
    """A `skipif(<true>, reason=...)` mark whose reason names a device this machine lacks:
    the test is skipped only because its device is missing. What it builds before its
    first move to the device (the layer with valid arguments, often its inputs and a CPU
    reference run) is the repository's own use of the layer, so it runs on the CPU like a
    device-parametrized test does (cpu_stand_ins); a condition given as a string or false,
    or another reason, is left as pytest evaluates it."""
    if getattr(mark, "name", None) != "skipif":
        return False
    args = list(getattr(mark, "args", ()) or ())
    kwargs = dict(getattr(mark, "kwargs", {}) or {})
    cond = args[0] if args else kwargs.get("condition")
    reason = kwargs.get("reason") or (args[1] if len(args) > 1 else "")
    truth = isinstance(cond, bool) or type(cond).__name__ == "bool_"  # numpy's too
    return truth and bool(cond) and bool(DEVICE_REASON.search(str(reason)))


def wall_bound(cpu_seconds):
    """The wall-clock bound of a CPU budget: WALL_PER_CPU x + WALL_SLACK s (procs.py)."""
    return cpu_seconds * H.WALL_PER_CPU + H.WALL_SLACK


def teardown_towards(item, nextitem):
    """A test the Gate does not run still tears down what the test before it set up and
    the next does not share (pytest's runtestprotocol does this in the teardown of the
    item it runs): else a class's or module's fixtures stay set up into the next test of
    another class, which then fails ("previous item was not torn down properly")."""
    state = getattr(item.session, "_setupstate", None)
    try:
        if state is not None and hasattr(state, "teardown_exact"):
            state.teardown_exact(nextitem)
    except Exception:  # noqa: BLE001 - a fixture's teardown failing is the test suite's (a budget's timeout goes on)
        pass


def run_test_file(cfg, entry, repo_root, budget, t0, install, torch, deadline=None, meter=None, ended=None):
    """One test file through pytest (its own collection, fixtures and parametrization),
    the wrappers installed once collection imported what the tests use; each test's
    constructions are named by its node id. Returns counts and the tests stopped. A
    test's budget is `testSeconds` of counted work (`meter`, StepMeter) within the step's,
    backed up by BACKSTOP_PER_BUDGET x that of CPU time and wall_bound of that on the wall
    clock, within the step's timers (`budget` CPU seconds from `t0`, the wall clock until
    `deadline`; without a meter, `testSeconds` of CPU time)."""
    if deadline is None:
        deadline = time.monotonic() + wall_bound(budget)
    if ended is None:
        ended = {}

    def spent():
        # the step's counted work or memory is spent (checked again between tests: Python
        # work is not checked while it runs), or its timers' (this close to them, no test
        # is started)
        if meter is not None and meter.spent():
            return True
        if budget - (H.cpu_seconds() - t0) < 0.5 or deadline - time.monotonic() < 0.5:
            counts["spent"] = counts.get("spent") or "time"
            ended.setdefault("by", "cpu" if budget - (H.cpu_seconds() - t0) < 0.5 else "wall")
            return True
        return False

    import pytest

    per_test = float(cfg.get("testSeconds") or DEFAULT_TEST_SECONDS)
    # a test's timers: the backstop of its counted budget
    per_test_timer = per_test * (BACKSTOP_PER_BUDGET if meter is not None else 1.0)
    counts = {"collected": 0, "passed": 0, "failed": 0, "skipped": 0, "stopped": [], "errors": []}
    # classes with a called witness before this step (the harvest's greedy order says which)
    called_before = set(cfg.get("called") or ())
    # the files of the session (the harvest gives several test files one pytest session)
    files = list(cfg.get("files") or [entry["file"]])
    started, collected_files = set(), set()
    idle = {}  # per set of named classes: tests in a row that called no class new to the harvest

    class Gate(object):
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(self, item, nextitem):
            # the step's budget spent: this test is not run (a result other than None
            # ends the hook call, firstresult) and the session stops after it
            if spent():
                item.session.shouldstop = "the step's budget is spent"
                counts["unrun"] = counts.get("unrun", 0) + 1
                teardown_towards(item, nextitem)
                return True
            started.add(item.nodeid.split("::")[0])
            # greedy coverage per test: a test whose code names only classes that have
            # called witnesses (before this step or in it) is not run once IDLE_TESTS
            # tests naming the same classes ran without calling a class not called before
            # (the rest of a parametrized test, the tenth test of one layer; a test whose
            # flags reach other inner classes keeps its siblings running)
            sig = getattr(item, "_nnrag_reach", None)
            if sig and idle.get(sig, 0) >= IDLE_TESTS:
                called = set(rec_calls(install()))
                if all(c in called_before or c in called for c in sig):
                    item._nnrag_unneeded = True
                    counts["unneeded"] = counts.get("unneeded", 0) + 1
                    teardown_towards(item, nextitem)
                    return True
            return None

    class Plugin(object):
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, session, config, items):
            counts["onCpu"] = len(cpu_stand_ins(items, torch))

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            counts["collected"] = len(session.items)
            collected_files.update(i.nodeid.split("::")[0] for i in session.items)
            install()

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            left = budget - (H.cpu_seconds() - t0)
            if spent():
                yield
                return
            rec = install()
            rec.current = "test:" + item.nodeid + getattr(item, "_nnrag_on", "")
            state = {"timed_out": False}
            item._nnrag_reach = frozenset(test_reach(item, rec))
            before = set(rec_calls(rec))

            def test_alarm(signum, frame):
                # the step's own timers (CPU or wall clock) end the step; else the test's
                if H.cpu_seconds() - t0 >= budget - 0.05 or time.monotonic() >= deadline - 0.05:
                    counts["spent"] = "time"
                    ended.setdefault("by", "wall" if signum == signal.SIGALRM else "cpu")
                    raise H.EntryTimeout("step took longer than %.0f s" % budget)
                state["timed_out"] = True
                raise TestTimeout("test took longer than %.0f s" % per_test_timer)

            old = signal.signal(H.BUDGET_SIGNAL, test_alarm)
            old_wall = signal.signal(signal.SIGALRM, test_alarm)
            signal.setitimer(H.BUDGET_TIMER, max(0.1, min(per_test_timer, left)))
            signal.setitimer(signal.ITIMER_REAL, max(0.1, min(wall_bound(per_test_timer), deadline - time.monotonic())))
            torch.manual_seed(0)
            if meter is not None:
                # the test's counted budget within the step's, its operations counted
                meter.arm(per_test)
                meter.test_stopped = meter.memory_stopped = False
                meter.in_test = True
                meter.mode.__enter__()
            try:
                yield
            finally:
                if meter is not None:
                    meter.mode.__exit__(None, None, None)
                    meter.in_test = False
                signal.setitimer(H.BUDGET_TIMER, max(0.1, budget - (H.cpu_seconds() - t0)))
                signal.setitimer(signal.ITIMER_REAL, max(0.1, deadline - time.monotonic()))
                signal.signal(H.BUDGET_SIGNAL, old)
                signal.signal(signal.SIGALRM, old_wall)
                rec.current = "test:" + entry["file"]
                if meter is not None and meter.memory_stopped:
                    # an operation refused by the memory budget: stopped, the next runs
                    counts["stopped"].append(item.nodeid)
                    counts.setdefault("memory", []).append(item.nodeid)
                elif meter is not None and meter.test_stopped:
                    counts["stopped"].append(item.nodeid)
                elif state["timed_out"]:
                    # stopped by its timer, the backstop: another machine may stop it elsewhere
                    counts["stopped"].append(item.nodeid)
                    counts.setdefault("timedOut", []).append(item.nodeid)
                sig = item._nnrag_reach
                if sig and not getattr(item, "_nnrag_unneeded", False):
                    gained = set(rec_calls(rec)) - before - called_before
                    idle[sig] = 0 if gained else idle.get(sig, 0) + 1

        def pytest_runtest_logreport(self, report):
            if report.when == "call" or (report.when == "setup" and not report.passed):
                k = "passed" if report.passed else "skipped" if report.skipped else "failed"
                counts[k] += 1
                if report.failed and len(counts["errors"]) < 3:
                    msg = str(getattr(report, "longrepr", "") or "").strip().split("\n")[-1]
                    counts["errors"].append("%s: %s" % (report.nodeid, msg[:200]))

    args = [os.path.join(repo_root, f) for f in files] + [
        # a file that does not import is reported, the others run (pytest stops the whole
        # session at a collection error otherwise)
        "--continue-on-collection-errors",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--rootdir",
        repo_root,
        "-o",
        "console_output_style=classic",
        "--no-header",
        "--tb=line",
        # asserts as Python runs them, not rewritten for pytest's failure messages (the
        # step wants what the tests build, not why one failed): pytest otherwise rewrites
        # and compiles afresh, every step (no bytecode is written in the sandbox), each
        # test file, conftest and installed plugin module (an environment with hydra's
        # and anyio's pytest11 plugins: 1.2 s of CPU a session, 0.46 s with this)
        "--assert=plain",
    ]
    # tests run from the repository's root, as `pytest` is run there: a test reads its
    # data by a path relative to it ('tests/data/x.bin')
    cwd = os.getcwd()
    try:
        os.chdir(repo_root)
    except OSError:
        pass
    try:
        rc = pytest.main(args, plugins=[Plugin(), Gate()])
    finally:
        try:
            os.chdir(cwd)
        except OSError:
            pass
    counts["exit"] = int(rc)
    if len(files) > 1:
        counts["files"] = files
        # files none of whose tests started: the harvest gives them another step
        counts["unrunFiles"] = [f for f in files if f not in started and f in collected_files]
    return counts
