# nnrag validation harness (docs/ARCHITECTURE.md "Validation").
#
# Runs inside the validation environment (an interpreter whose `import torch` works),
# normally inside a bubblewrap sandbox started by src/validate/pool.ts. Two modes:
#
#   harness.py --probe            print interpreter facts as one JSON line (no torch import)
#   harness.py --worker CONFIG    a long-lived worker: import torch once, then for each
#                                 request (framed with a nonce, on descriptor 4; see
#                                 Channel) fork a child that runs the stages and answer
#                                 JSON lines carrying that nonce on descriptor 5.
#
# The worker never runs candidate code itself. Requests that carry an original module
# (equivalence) go to a per-repository "zygote", a fork of the worker that imported the
# original once and forks the candidates of that repository (see Zygote). Each child:
#   - gets its own session / process group, rlimits (address space, CPU seconds,
#     processes, file size, no core files), stdin/stdout/stderr away from the protocol;
#   - writes the module into a private scratch folder and runs the stages
#     parse, compile, import, namespace, instantiate, forward, equivalence,
#     reporting each stage on a pipe as it starts and ends, so a crash is attributed
#     to the stage that was running.
# The worker enforces the wall-clock deadline, kills the child and every descendant
# (it is a child subreaper, so double-forked processes come back to it), classifies
# how the child ended (signal, exit, timeout), and empties /tmp and /dev/shm before the
# next candidate.
#
# A request with `harvest` runs a witness-harvest step instead of the stages
# (nnrag_harness/harvest.py). Argument and input sources, failure classification and
# value encoding live in the package nnrag_harness/ next to this file (sent bundled in
# front of it into the sandbox, see _load_package).
#
# Must run on Python 3.8+ (Debian bookworm 3.11, trixie 3.13). No third-party imports
# besides torch, which is imported only in worker mode.

import ast
import gc
import inspect
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import types

# References kept before any candidate code runs, so a module that rebinds
# json.dumps or os.write cannot break reporting by accident.
_dumps = json.dumps
_loads = json.loads
_write = os.write
_getpid = os.getpid
_exit = os._exit
_monotonic = time.monotonic


def _load_package():
    """The harness's package (nnrag_harness/): from the bundle the pool puts in front of
    this file inside the sandbox (environment.ts harnessSource: a dict of module texts),
    else from the folder next to this file."""
    bundle = globals().get("_NNRAG_BUNDLE")
    if not bundle:
        here = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else ""
        if here and here not in sys.path:
            sys.path.insert(0, here)
        return
    pkg = types.ModuleType("nnrag_harness")
    pkg.__path__ = []
    pkg.__package__ = "nnrag_harness"
    sys.modules["nnrag_harness"] = pkg
    for name in sorted(bundle, key=lambda n: (n != "nnrag_harness", n)):
        if name == "nnrag_harness":
            exec(compile(bundle[name], "<nnrag_harness/__init__.py>", "exec"), pkg.__dict__)  # noqa: S102 - our own code
            continue
        m = types.ModuleType(name)
        m.__package__ = "nnrag_harness"
        sys.modules[name] = m
        setattr(pkg, name.split(".")[-1], m)
    for name in sorted(bundle):
        if name != "nnrag_harness":
            exec(compile(bundle[name], "<%s.py>" % name.replace(".", "/"), "exec"), sys.modules[name].__dict__)  # noqa: S102


_load_package()

from nnrag_harness import CANDIDATE_MODULE  # noqa: E402
from nnrag_harness.classify import Classifier, fmt_error, fmt_trace, tb_files  # noqa: E402
from nnrag_harness.namespace import check as namespace_check  # noqa: E402
from nnrag_harness.arguments import SCALAR_ERR, SEQ_ERR, arg_candidates, ctor_params, jsonable, scalar_variant, seq_variant, subscript_lengths, to_original  # noqa: E402
from nnrag_harness.inputs import flatten_tensors, forward_plan, fresh_inputs, input_candidates, make_inputs, repair_specs, seed_all, shapes_of, targets_as_tensors, usage_snippet  # noqa: E402

STAGES = ("parse", "compile", "import", "namespace", "instantiate", "forward", "equivalence")
MAX_PIPE_BYTES = 4 << 20



# --------------------------------------------------------------------------- probe

def installed_distributions():
    """Every installed distribution as "name==version" (PEP 503 name), sorted, from the
    names of the `name-version.dist-info` / `.egg-info` entries on sys.path (PEP 376,
    PEP 427: reading each METADATA costs 50 ms, the names alone well under 1 ms). Part
    of the environment id: installing, removing or upgrading a package changes it."""
    out = set()
    for d in sys.path:
        try:
            names = os.listdir(d or ".")
        except OSError:
            continue
        for f in names:
            if not f.endswith((".dist-info", ".egg-info")):
                continue
            stem = f.rsplit(".", 1)[0]
            name, _, version = stem.partition("-")
            version = version.split("-py")[0]  # egg-info names may end in -py3.11
            out.add("%s==%s" % (re.sub(r"[-_.]+", "-", name).lower(), version))
    return sorted(out)


def top_level_modules():
    """Top-level modules and packages importable from sys.path (pkgutil.iter_modules:
    the path entry finders' listing, PEP 302) and the built-in ones. The resolver keeps
    `import pkg` extern for a module object of an indexed package it finds here."""
    import pkgutil
    names = set(sys.builtin_module_names)
    try:
        names |= {m.name for m in pkgutil.iter_modules()}
    except Exception:  # noqa: BLE001 - an unreadable path entry
        pass
    return sorted(names)


def probe():
    """Facts about this interpreter without importing torch (fast): where it lives, the
    folders it imports from (the sandbox must bind them) and whether torch is findable."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    info = {
        "executable": sys.executable,
        "realpath": os.path.realpath(sys.executable),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "exec_prefix": sys.exec_prefix,
        "path": [p for p in sys.path if p],
        "torch_spec": spec.origin if spec else None,
        "distributions": installed_distributions(),
        "modules": top_level_modules(),
    }
    if "--import-torch" in sys.argv:
        try:
            import torch
            info["torch"] = torch.__version__
        except BaseException as e:  # noqa: BLE001 - report anything
            info["torch"] = None
            info["torch_error"] = "%s: %s" % (type(e).__name__, e)
    sys.stdout.write(_dumps(info) + "\n")


# --------------------------------------------------------------------------- child

class Reporter:
    def __init__(self, fd, pid):
        self.fd = fd
        self.pid = pid

    def send(self, obj):
        # a process forked by candidate code shares this pipe: only the child itself reports
        if _getpid() != self.pid:
            _exit(0)
        data = (_dumps(obj, default=repr) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            try:
                n = _write(self.fd, view)
            except InterruptedError:
                continue
            view = view[n:]


def apply_limits(lim):
    def setl(res, soft, hard=None):
        try:
            resource.setrlimit(res, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass
    if lim.get("as_bytes"):
        setl(resource.RLIMIT_AS, lim["as_bytes"])
    if lim.get("cpu_seconds"):
        # the hard limit leaves room for the equivalence stage's own budget (see
        # Stages._equivalence, which raises the soft limit once)
        setl(resource.RLIMIT_CPU, lim["cpu_seconds"], 2 * lim["cpu_seconds"] + 2)
    if lim.get("nproc"):
        setl(resource.RLIMIT_NPROC, lim["nproc"])
    if lim.get("fsize_bytes"):
        setl(resource.RLIMIT_FSIZE, lim["fsize_bytes"])
    setl(resource.RLIMIT_CORE, 0)


def work_dir(scratch_root):
    """The working directory of import-time code: the same for the original (imported in
    a zygote) and for the copy, so a value computed from it at import
    (`sys.path.append(os.path.abspath('..'))`, a default data folder) is the same in
    both and the namespace stage compares like with like."""
    return os.path.join(scratch_root, "nnrag-cwd")


def enter_work_dir(scratch_root, fresh):
    """Enter the working directory; `fresh` (a candidate) first removes what the one
    before it left there, so nothing passes from one block to the next."""
    d = work_dir(scratch_root)
    if fresh:
        remove_tree(d)
    os.makedirs(d, mode=0o700, exist_ok=True)
    os.chdir(d)


def child_main(req, scratch, wfd, lim, masked):
    rep = Reporter(wfd, _getpid())
    try:
        os.setsid()
    except OSError:
        pass
    apply_limits(lim)
    # a write past the file-size limit fails with EFBIG instead of killing the child
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    log = os.open(os.path.join(scratch, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", 0), write_through=True)
    sys.dont_write_bytecode = True
    enter_work_dir(os.path.dirname(scratch), fresh=True)
    import torch
    torch.set_num_threads(1)
    if req.get("harvest"):
        harvest_main(req, rep, torch)
    else:
        Stages(req, scratch, rep, Classifier(masked), torch).run()
    rep.send({"ev": "done"})
    _exit(0)



def double_cpu_budget():
    """Equivalence and harvest run two models: twice the candidate's CPU seconds, within
    the hard limit (RLIMIT_CPU, setrlimit(2))."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if soft != resource.RLIM_INFINITY and hard != resource.RLIM_INFINITY:
            resource.setrlimit(resource.RLIMIT_CPU, (min(hard, 2 * soft), hard))
    except (ValueError, OSError):
        pass

def harvest_main(req, rep, torch):
    """A witness-harvest step (nnrag_harness.harvest) in a child of the repository's
    zygote: its modules are put back and its roots are on sys.path, its CPU budget is
    the doubled one of the equivalence stage."""
    from nnrag_harness import harvest
    for name, m in STASH.items():
        sys.modules.setdefault(name, m)
    cfg = req["harvest"]
    for p in reversed(cfg.get("roots") or []):
        if p not in sys.path:
            sys.path.insert(0, p)
    double_cpu_budget()
    try:
        if cfg.get("mode") == "list":
            rep.send({"ev": "harvest", "result": harvest.list_entries(cfg, torch)})
        else:
            harvest.run_entry(cfg, torch, rep.send)
    except BaseException as e:  # noqa: BLE001 - reported as the step's error
        rep.send({"ev": "harvest", "result": {"error": fmt_error(e), "traceback": fmt_trace(e)}})


class StageFailed(Exception):
    pass


class Stages:
    def __init__(self, req, scratch, rep, cls, torch):
        self.req = req
        self.scratch = scratch
        self.rep = rep
        self.classifier = cls
        self.torch = torch
        self.nn = torch.nn
        self._data_ns, self._data_ns_tried = None, False

    def start(self, stage):
        self.rep.send({"ev": "start", "stage": stage})
        return _monotonic()

    def end(self, stage, t0, status, **kw):
        d = {"ev": "end", "stage": stage, "status": status, "ms": round((_monotonic() - t0) * 1000, 3)}
        d.update(kw)
        self.rep.send(d)

    def fail(self, stage, t0, e, category=None):
        self.end(stage, t0, "fail", category=category or self.classifier.classify(e, stage, tb_files(e)),
                 error=fmt_error(e), traceback=fmt_trace(e))
        raise StageFailed()

    def run(self):
        try:
            self._run()
        except StageFailed:
            pass

    def _run(self):
        req, nn = self.req, self.nn
        path = os.path.join(self.scratch, CANDIDATE_MODULE + ".py")
        source = req.get("source", "")
        # 1. parse
        t0 = self.start("parse")
        try:
            tree = ast.parse(source, filename=path)
        except BaseException as e:  # noqa: BLE001
            self.fail("parse", t0, e)
        self.end("parse", t0, "pass")
        # 2. compile (symbol-table errors such as 'return' outside function appear here)
        t0 = self.start("compile")
        try:
            code = compile(tree, path, "exec", dont_inherit=True)
        except BaseException as e:  # noqa: BLE001
            self.fail("compile", t0, e)
        self.end("compile", t0, "pass")
        # 3. import: execute the module body as module `nnrag_candidate`
        t0 = self.start("import")
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            mod = types.ModuleType(CANDIDATE_MODULE)
            mod.__file__ = path
            sys.modules[CANDIDATE_MODULE] = mod
            exec(code, mod.__dict__)  # noqa: S102 - sandboxed candidate
        except BaseException as e:  # noqa: BLE001
            self.fail("import", t0, e)
        cls = mod.__dict__.get(req["className"])
        if cls is None:
            self.fail("import", t0, NameError("class %r is not defined by the module" % req["className"]), "unresolved-name")
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            self.fail("import", t0, TypeError("%r is not an nn.Module subclass" % req["className"]), "runtime-error")
        self.end("import", t0, "pass")
        # 4. namespace: every name of the copy means what it meant in the original
        namespace_stage(self, mod, path)
        want = set(req.get("stages") or STAGES)
        if "instantiate" not in want and "forward" not in want and "equivalence" not in want:
            return
        # 5 + 6. instantiate with candidate arguments, then forward on candidate inputs;
        # a candidate that constructs but fails forward moves on to the next one
        self._instantiate_forward(cls, mod, want)

    def _instantiate_forward(self, cls, mod, want):
        torch, nn = self.torch, self.nn
        t_inst = self.start("instantiate")
        # the repository's own constructions of the class (witnesses) first, then the
        # call sites, configuration tables, defaults and guesses of arg_candidates
        wits = self._witness_candidates(mod)
        try:
            cands, unguessable = arg_candidates(cls, self.req.get("callSites"), mod.__dict__, nn, self.req.get("dataSites"), self._data_namespace)
        except BaseException as e:  # noqa: BLE001
            if not wits:
                self.fail("instantiate", t_inst, e)
            cands, unguessable = [], None
        # witnesses with recorded inputs first; those without (the model's forward did not
        # reach the class) after the candidates of the class's own defaults, call sites
        # and configuration tables, before the guesses
        from nnrag_harness.sources import source_of
        cands = list(cands[:8])
        with_inputs = [c for c in wits if self._witness[c[0]].get("inputs")]
        without = [c for c in wits if not self._witness[c[0]].get("inputs")]
        params0 = ctor_params(cls) or []
        required0 = any(p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params0)
        # (a class built from its defaults: its own candidates first, small widths included)
        k = next((j for j, c in enumerate(cands) if source_of(c[0]) == "guess"), len(cands)) if required0 else len(cands)
        cands = with_inputs + cands[:k] + without + cands[k:]
        if not cands:
            self.fail("instantiate", t_inst, TypeError("cannot guess constructor argument(s): %s" % unguessable), "needs-args")
        params = ctor_params(cls) or []
        has_required = any(p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
        inst_errors = []
        fwd_errors = []
        model = None
        fwd_t0 = None
        forward_started = False
        attempts = 0
        i = 0
        while i < len(cands) and i < 12 + len(wits):
            label, args, kwargs = cands[i]
            i += 1
            torch.manual_seed(0)
            restore = None
            try:
                if label in self._witness:
                    # built as the harvest built it: pretrained weights are not fetched
                    from nnrag_harness.harvest import no_downloads
                    restore = no_downloads(torch)
                m = cls(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "instantiate", tb_files(e))
                # a witness built with a name the copy lacks (a model file naming a layer the
                # block never needs): the next candidate, not the end
                if cat in ("memory", "unresolved-name", "missing-extern", "native-extension", "sandbox-denied") and not (cat in ("memory", "unresolved-name") and label in self._witness):
                    self.fail("instantiate", t_inst, e, cat)
                if restore is not None:
                    restore()
                inst_errors.append((label, args, kwargs, e))
                if isinstance(e, (TypeError, IndexError, AssertionError, ValueError)) and SEQ_ERR.search(str(e)) and "seq" not in label:
                    v = seq_variant(args, kwargs, subscript_lengths(cls))
                    if v is not None:
                        cands.insert(i, (label + " seq", v[0], v[1]))
                elif isinstance(e, TypeError) and SCALAR_ERR.search(str(e)) and "scalar" not in label:
                    v = scalar_variant(args, kwargs)
                    if v is not None:
                        cands.insert(i, (label + " scalar", v[0], v[1]))
                continue
            if restore is not None:
                restore()
            if not isinstance(m, nn.Module):
                inst_errors.append((label, args, kwargs, TypeError("constructor returned %s" % type(m).__name__)))
                continue
            if model is None:
                # first successful construction: the instantiate stage passes
                self.end("instantiate", t_inst, "pass", args=self._args_json(args, kwargs))
            model = m
            if "forward" not in want and "equivalence" not in want:
                self.info(model, args, kwargs, None, None, label)
                return
            if not forward_started:
                fwd_t0 = self._fwd_t0 = self.start("forward")
                forward_started = True
            witness = self._witness.get(label)
            ok, res = self._forward(m, kwargs, args, witness)
            attempts += 1
            if ok:
                x, y = res
                self.rep.send({"ev": "end", "stage": "forward", "status": "pass",
                               "ms": round((_monotonic() - fwd_t0) * 1000, 3),
                               "args": self._args_json(args, kwargs)})
                self.info(m, args, kwargs, x, y, label)
                if "equivalence" in want or self.req.get("original"):
                    self._equivalence(cls, args, kwargs, x, witness if self._fwd_kwargs is not None else None, witness)
                return
            fwd_errors.append((label, args, kwargs, res))
            if attempts >= 4 + len(wits):
                break
        if model is None:
            label, args, kwargs, e = inst_errors[0] if inst_errors else (None, [], {}, TypeError("no candidate"))
            cat = "needs-args" if has_required else self.classifier.classify(e, "instantiate", tb_files(e))
            if not has_required and cat == "runtime-error" and isinstance(e, TypeError) and re.search(r"argument", str(e)):
                cat = "needs-args"
            self.rep.send({"ev": "info", "args": self._args_json(args, kwargs), "tried": len(inst_errors)})
            self.fail("instantiate", t_inst, e, cat)
        # every forward attempt failed: prefer an error that is not about shapes
        best = None
        for label, args, kwargs, (e, specs) in fwd_errors:
            cat = self.classifier.classify(e, "forward", tb_files(e))
            if best is None or (best[1] == "forward-shape" and cat != "forward-shape"):
                best = (e, cat, args, kwargs, specs)
        e, cat, args, kwargs, specs = best
        self.rep.send({"ev": "info", "args": self._args_json(args, kwargs),
                       "input_shapes": [list(s[1]) for s in specs]})
        self.fail("forward", fwd_t0, e, cat)

    def _args_json(self, args, kwargs):
        if args:
            return {"args": jsonable(list(args)), "kwargs": jsonable(kwargs)}
        return jsonable(kwargs)

    def _witness_candidates(self, mod):
        """Witness candidates (nnrag_harness.source_witness) and their witnesses by label."""
        from nnrag_harness import source_witness
        self._witness = {}
        wits = self.req.get("witnesses") or []
        if not wits:
            return []
        resolve = source_witness.copy_resolver(mod.__dict__, self.req.get("witnessRepoTops") or [], self._import_original)
        src = source_witness.WitnessSource(wits, resolve, self.torch)
        plans = list(src.plans())
        self._witness_resolve = resolve
        if src.skipped:
            self.rep.send({"ev": "info", "witnessSkipped": src.skipped[:3]})
        for plan in plans:
            self._witness[plan.label] = plan.witness
        return [(plan.label, plan.args, plan.kwargs) for plan in plans]

    def _import_original(self, module):
        """An original module for a witness value the copy does not define (a module
        instance or container passed in): the zygote's, else imported from the roots and
        hidden again from sys.modules (as in the namespace stage), or None."""
        import importlib
        import itertools
        m = STASH.get(module)
        if m is not None or not self.req.get("original"):
            return m
        before = len(sys.modules)
        saved_path = list(sys.path)
        try:
            for name, mm in STASH.items():
                sys.modules.setdefault(name, mm)
            for p in reversed(self.req["original"].get("sysPath") or []):
                if p not in sys.path:
                    sys.path.insert(0, p)
            return importlib.import_module(module)
        except BaseException:  # noqa: BLE001 - the witness is skipped
            return None
        finally:
            for name in list(itertools.islice(reversed(sys.modules), max(0, len(sys.modules) - before))):
                del sys.modules[name]
            sys.path[:] = saved_path

    def _forward(self, model, kwargs, args, witness=None):
        torch, nn = self.torch, self.nn
        model.eval()
        self._fwd_kwargs = None
        if witness is not None and witness.get("inputs"):
            # the inputs the repository's own model gave this construction
            from nnrag_harness import source_witness
            try:
                a, kw = source_witness.witness_inputs(witness, self._witness_resolve, torch)
                torch.manual_seed(1)
                with torch.no_grad():
                    out = model(*a, **kw)
                self._fwd_kwargs = kw
                return True, (a, out)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "forward", tb_files(e))
                if cat in ("unresolved-name", "missing-extern", "native-extension", "sandbox-denied"):
                    self.fail("forward", self._fwd_t0, e, cat)
                # else: the heuristic inputs below, with the witness's arguments
        plan = forward_plan(model)
        widths = [v for v in list(kwargs.values()) + list(args) if isinstance(v, int) and not isinstance(v, bool)]
        first_err = None
        hints = {}
        try:
            for p in inspect.signature(type(model).__init__).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    hints[p.name] = p.default
        except (TypeError, ValueError):
            pass
        hints.update(kwargs)
        # the image size the block is built for: its argument, its attribute, else its default
        spatial = 32
        for k in ("input_resolution", "image_resolution", "img_size", "image_size", "input_size", "resolution"):
            v = kwargs.get(k, getattr(model, k, hints.get(k)))
            if isinstance(v, int) and not isinstance(v, bool) and 4 <= v <= 512:
                spatial = v
            elif isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(i, int) for i in v) and 4 <= v[0] <= 512:
                spatial = v[0]
        cands = input_candidates(model, plan, widths, torch, nn, spatial, hints)
        # then the first candidates again with class-index targets as tensors like the
        # other inputs (a loss combining its arguments elementwise)
        alt = targets_as_tensors(plan)
        cands = [(plan, c) for c in cands] + ([(alt, c) for c in cands[:4]] if alt else [])
        tried, repairs, repaired_at = set(), 0, set()
        i = 0
        while i < len(cands):
            plan, specs = cands[i]
            i += 1
            if repr((plan, specs)) in tried:
                continue
            tried.add(repr((plan, specs)))
            repaired = i - 1 in repaired_at
            torch.manual_seed(1)
            try:
                inputs = make_inputs(specs, plan, torch, model)
                with torch.no_grad():
                    out = model(*inputs)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "forward", tb_files(e))
                if (repaired or witness is not None) and cat == "memory":
                    # a repaired input, or a witness's full-size block on a guessed input,
                    # too large for the limits: just a failed try
                    if first_err is None:
                        first_err = (e, specs)
                    continue
                if cat in ("memory", "unresolved-name", "missing-extern", "native-extension", "sandbox-denied"):
                    self.fail("forward", self._fwd_t0, e, cat)
                if first_err is None or (self.classifier.classify(first_err[0], "forward") == "forward-shape" and cat != "forward-shape"):
                    first_err = (e, specs)
                if cat == "forward-shape" and repairs < 4:
                    fixed = repair_specs(specs, str(e))
                    if fixed is not None and repr((plan, fixed)) not in tried:
                        repairs += 1
                        repaired_at = {j + 1 if j >= i else j for j in repaired_at} | {i}
                        cands.insert(i, (plan, fixed))  # try the repaired input next
                continue
            self._last_inputs = (specs, plan)
            return True, (inputs, out)
        if first_err is None:
            first_err = (RuntimeError("no input candidate for forward"), [])
        return False, first_err

    def info(self, model, args, kwargs, inputs, out, label=None):
        from nnrag_harness.sources import source_of
        torch = self.torch
        layers = {}
        for m in model.modules():
            if m is model:
                continue
            n = type(m).__name__
            layers[n] = layers.get(n, 0) + 1
        d = {"ev": "info", "args": self._args_json(args, kwargs),
             "params": int(sum(p.numel() for p in model.parameters())), "layers": layers,
             "argumentsSource": source_of(label)}
        if inputs is not None:
            d["input_shapes"] = shapes_of(inputs, torch)
            d["output_shapes"] = [list(t.shape) for t in flatten_tensors(out, torch)]
            try:
                d["usage"] = usage_snippet(type(model).__name__, args, kwargs, inputs, torch) if not getattr(self, "_fwd_kwargs", None) else None
            except Exception:  # noqa: BLE001 - a snippet is a convenience, never a failure
                d["usage"] = None
        self.rep.send(d)

    def _original_module(self):
        """The block's original module, imported from its repository (read-only in the
        sandbox); a zygote has imported it already (see Zygote)."""
        import importlib
        orig = self.req.get("original") or {}
        for name, m in STASH.items():
            sys.modules.setdefault(name, m)
        for p in reversed(orig.get("sysPath") or []):
            if p not in sys.path:
                sys.path.insert(0, p)
        return importlib.import_module(orig["module"])

    def _data_namespace(self):
        """The original module's namespace, for plain data the copy cannot compute (a
        helper it does not need builds a call site's drop-path rates); None without one.
        Imported on first use only (a child outside a zygote would import the repository)."""
        if not self._data_ns_tried:
            self._data_ns_tried = True
            if self.req.get("original"):
                try:
                    self._data_ns = self._original_module().__dict__
                except BaseException:  # noqa: BLE001
                    pass
        return self._data_ns

    def _equivalence(self, cls, args, kwargs, inputs, input_witness=None, arg_witness=None):
        torch = self.torch
        orig = self.req.get("original")
        t0 = self.start("equivalence")
        double_cpu_budget()
        if not orig:
            self.end("equivalence", t0, "skip", reason="no original module given")
            return
        try:
            om = self._original_module()
            ocls = getattr(om, orig["className"])
        except BaseException as e:  # noqa: BLE001
            self.end("equivalence", t0, "skip", reason="original does not import: " + fmt_error(e))
            return
        # the same argument values, with the copy's classes and functions swapped for the
        # original's (partial(ConvNormAct, padding=0) of the original module)
        try:
            oargs, okwargs = to_original(list(args), om), to_original(dict(kwargs), om)
        except Exception:  # noqa: BLE001
            oargs, okwargs = args, kwargs
        from nnrag_harness import source_witness as sources
        orig_resolve = sources.original_resolver()
        if arg_witness is not None:
            # a witness: the original gets the recorded values decoded with its own names
            try:
                _, oargs, okwargs, _ = sources.witness_candidates([arg_witness], orig_resolve, torch)[0][0]
            except BaseException as e:  # noqa: BLE001
                self.end("equivalence", t0, "skip", reason="witness does not rebuild for the original: " + fmt_error(e))
                return
            # and the copy a fresh build of its own (nested modules not shared)
            try:
                _, args, kwargs, _ = sources.witness_candidates([arg_witness], self._witness_resolve, torch)[0][0]
            except BaseException:  # noqa: BLE001
                pass

        def call(model, resolve):
            if input_witness is not None:
                a_, kw_ = sources.witness_inputs(input_witness, resolve, torch)
                seed_all(torch, 1)
                return model(*a_, **kw_)
            seed_all(torch, 1)
            return model(*fresh_inputs(inputs, torch))
        def build(ctor, a_, kw_):
            # seeded; a witness's nested modules are built as the harvest built them,
            # without fetching pretrained weights
            seed_all(torch, 0)
            restore = None
            if arg_witness is not None:
                from nnrag_harness.harvest import no_downloads
                restore = no_downloads(torch)
            try:
                return ctor(*a_, **kw_)
            finally:
                if restore is not None:
                    restore()
        try:
            a = build(ocls, oargs, okwargs)
        except BaseException as e:  # noqa: BLE001
            self.end("equivalence", t0, "skip", reason="original does not instantiate with the same arguments: " + fmt_error(e))
            return
        try:
            b = build(cls, args, kwargs)
            b.load_state_dict(a.state_dict(), strict=True)
        except BaseException as e:  # noqa: BLE001
            if self.classifier.classify(e, "equivalence") == "memory":
                self.end("equivalence", t0, "fail", reason="memory limit while building the copy: " + fmt_error(e),
                         category="memory", error=fmt_error(e))
                return
            self.end("equivalence", t0, "fail", reason="state_dict does not load strictly: " + fmt_error(e),
                     category="not-equivalent", error=fmt_error(e))
            return
        a.eval()
        b.eval()
        try:
            with torch.no_grad():
                ya = flatten_tensors(call(a, orig_resolve), torch)
        except BaseException as e:  # noqa: BLE001
            self.end("equivalence", t0, "skip", reason="original forward failed: " + fmt_error(e))
            return
        try:
            with torch.no_grad():
                yb = flatten_tensors(call(b, getattr(self, "_witness_resolve", None)), torch)
        except BaseException as e:  # noqa: BLE001
            mem = self.classifier.classify(e, "equivalence") == "memory"
            self.end("equivalence", t0, "fail", reason=("memory limit in the copy's forward: " if mem else "extracted forward failed: ") + fmt_error(e),
                     category="memory" if mem else "not-equivalent", error=fmt_error(e))
            return
        if len(ya) != len(yb) or any(list(x.shape) != list(y.shape) for x, y in zip(ya, yb)):
            r = "outputs differ in structure: %s vs %s" % ([list(t.shape) for t in ya], [list(t.shape) for t in yb])
            self.end("equivalence", t0, "fail", reason=r, category="not-equivalent", error=r)
            return
        maxdiff = 0.0
        ok = True
        for x, y in zip(ya, yb):
            if x.dtype != y.dtype:
                ok = False
                continue
            if x.numel() == 0:
                continue
            if x.is_floating_point() or x.is_complex():
                diff = (x.double() - y.double()).abs()
                nan_mismatch = bool((x.isnan() != y.isnan()).any())
                m = float(diff[~diff.isnan()].max()) if bool((~diff.isnan()).any()) else 0.0
                maxdiff = max(maxdiff, m)
                if nan_mismatch or not torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                    ok = False
            elif not torch.equal(x, y):
                ok = False
                maxdiff = max(maxdiff, float((x.double() - y.double()).abs().max()))
        if ok:
            self.end("equivalence", t0, "pass", maxAbsDiff=maxdiff)
        else:
            r = "outputs differ (max abs diff %.3g)" % maxdiff
            self.end("equivalence", t0, "fail", reason=r, maxAbsDiff=maxdiff, category="not-equivalent", error=r)


# -------------------------------------------------------------------------- namespace

def namespace_stage(st, mod, path):
    """The namespace stage: every top-level name of the copy that came from the original
    corpus must denote what it denotes in the original modules (req["namespace"]: the
    names with their origins `[module, attribute]`, and the copied statements' lines
    `[first, last, module, original first, original last]`). A module is the same by
    `__name__`; a class or function by qualified name and by where it is defined (the
    copy's line, mapped through the copied statements, must fall in the original's
    statement that defines the original object); immutable plain data by value; anything
    else (mutable containers that other code may fill, instances) by type, its class
    compared the same way. Objects shared by both (extern imports) are the same object.
    Runs only where the original imports; a mismatch fails the stage as `rebound-name`,
    the later stages still run."""
    req = st.req
    ns = req.get("namespace")
    if not ns:
        return
    t0 = st.start("namespace")
    if not req.get("original"):
        r = "no original module given"
        st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
        return
    # sys.modules keeps insertion order: what the stage adds is its tail. (A copy of the
    # whole dict would touch every key, and in a fork of the zygote every touched page is
    # copied: ~15 ms for timm's 1500 modules, against ~0.3 ms for the check itself.)
    if IN_ZYGOTE and req["original"].get("module") not in STASH:
        r = "original does not import: the repository's zygote did not import %s" % req["original"].get("module")
        st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
        return
    before = len(sys.modules)
    saved_path = list(sys.path)
    try:
        try:
            st._original_module()
        except BaseException as e:  # noqa: BLE001
            r = "original does not import: " + fmt_error(e)
            st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
            return
        namespace_check(st, t0, mod, path, ns)
    finally:
        # the original's modules are hidden again while the candidate runs (see STASH)
        import itertools
        for name in list(itertools.islice(reversed(sys.modules), max(0, len(sys.modules) - before))):
            del sys.modules[name]
        sys.path[:] = saved_path


# -------------------------------------------------------------------------- worker

NONCE_LEN = 32
MADV_WIPEONFORK = 18  # <linux/mman.h>, Linux 4.14; not exported by the mmap module


class Channel(object):
    """A worker's end of the protocol with its parent (pool.ts; a worker for its
    zygotes). Requests arrive framed as NONCE (32 hex characters) + payload length
    (8 hex digits) + JSON, read unbuffered; every progress and result line answers with
    the nonce of its request and the parent accepts no line without it, so a line
    written by anyone else cannot answer for any request. The nonce is read straight into
    a private page the kernel wipes in forked children (MADV_WIPEONFORK), so no candidate
    ever holds the nonce of its own request, and a finished request's nonce is dead."""

    def __init__(self, rfd, wfd):
        import mmap
        self.rfd, self.wfd = rfd, wfd
        self.page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE)
        try:
            self.page.madvise(MADV_WIPEONFORK)
        except (AttributeError, OSError, ValueError):
            pass  # kernel before 4.14: a child sees its own request's nonce, no other
        self.nonce = memoryview(self.page)[:NONCE_LEN]

    def _fill(self, view):
        got = 0
        while got < len(view):
            try:
                n = os.readv(self.rfd, [view[got:]])
            except InterruptedError:
                continue
            if n == 0:
                return False
            got += n
        return True

    def read(self):
        """The next request (a dict; {} when unreadable), or None at the end of input."""
        head = bytearray(8)
        if not self._fill(self.nonce) or not self._fill(memoryview(head)):
            return None
        try:
            n = int(head.decode("ascii"), 16)
        except ValueError:
            return None
        data = bytearray(n)
        if not self._fill(memoryview(data)):
            return None
        try:
            msg = _loads(data.decode("utf-8", "replace"))
        except ValueError:
            return {}
        return msg if isinstance(msg, dict) else {}

    def send(self, obj):
        obj.pop("nonce", None)
        body = _dumps(obj, default=repr).encode("utf-8", "replace")
        if obj.get("type") in ("progress", "result") and body.startswith(b"{"):
            parts = [b'{"nonce":"', self.nonce, b'",' + body[1:] + b"\n"]
        else:
            parts = [body + b"\n"]
        while parts:
            try:
                n = os.writev(self.wfd, parts)
            except InterruptedError:
                continue
            while parts and n >= len(parts[0]):
                n -= len(parts[0])
                parts.pop(0)
            if parts and n:
                parts[0] = memoryview(parts[0])[n:]

    def close(self):
        for fd in (self.rfd, self.wfd):
            try:
                os.close(fd)
            except OSError:
                pass


def frame(nonce, msg):
    """A request as Channel.read expects it (used towards a zygote)."""
    data = _dumps(msg).encode("utf-8")
    return nonce + ("%08x" % len(data)).encode("ascii") + data


def mount_points():
    """Mount points of this process's mount namespace (/proc/self/mountinfo, field 5,
    with the kernel's octal escapes for space, tab, newline and backslash)."""
    out = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split(" ")
                if len(parts) > 4:
                    out.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4]))
    except OSError:
        pass
    return out


def sweep_dir(d, keep):
    """Remove everything below `d` except the mount points in `keep` and the folders that
    lead to them. True when nothing else is left."""
    try:
        names = os.listdir(d)
    except OSError:
        return False
    clean = True
    for n in names:
        p = os.path.join(d, n)
        if p in keep:
            continue
        if any(k.startswith(p + "/") for k in keep):
            clean = sweep_dir(p, keep) and clean
            continue
        remove_tree(p)
        if os.path.lexists(p):
            clean = False
    return clean


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
        self.send({"type": "ready", "torch": torch.__version__, "python": "%d.%d.%d" % sys.version_info[:3],
                   "executable": sys.executable, "pid": os.getpid(), "vm_kb": self.vm_kb,
                   "limits": self.lim, "import_ms": round((_monotonic() - t0) * 1000, 1)})
        self.serve()

    def serve(self):
        while True:
            msg = self.proto.read()
            if msg is None or msg.get("type") == "exit":
                break
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
            if key not in self.failed_zygotes:
                z = self.zygotes.get(key)
                if z is None or not z.alive():
                    z = self.new_zygote(key, orig)
                elif z.modules is not None and orig["module"] != z.module and orig["module"] not in z.modules:
                    # the zygote imported a sibling module that does not import this
                    # one: its candidate imports the original in its own child
                    z = None
                    res = self.validate(msg)
                    self.sweep()
                    return res
                if z is not None:
                    res = z.ask(self, msg)
                    if res is not None:
                        # orphans re-parented to this worker die too, and a zygote that
                        # kept a thread or process of anything it ran is not used again
                        self.cleanup(None)
                        if not z.unchanged():
                            self.drop_zygote(key)
                        self.sweep()
                        return res
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
        res = self.validate(msg)
        self.sweep()
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

    def new_zygote(self, key, orig):
        while len(self.zygotes) >= MAX_ZYGOTES:
            self.drop_zygote(next(iter(self.zygotes)))
        try:
            z = Zygote(self, list(orig["sysPath"]), orig["module"])
        except OSError:
            return None
        self.zygotes[key] = z
        return z

    def drop_zygote(self, key):
        z = self.zygotes.pop(key, None)
        if z is not None:
            z.kill()

    def validate(self, msg):
        rid = msg.get("rid")
        req = msg.get("req") or {}
        timeout = max(0.05, float(req.get("timeoutMs") or self.cfg.get("timeout_ms") or 20000) / 1000.0)
        self.seq += 1
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
                for fd in self.extra_close:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                child_main(req, scratch, w, self.lim, self.masked)
            except BaseException:  # noqa: BLE001
                try:
                    os.write(w, (_dumps({"ev": "harness-error", "error": traceback.format_exc()[-2000:]}) + "\n").encode())
                except BaseException:  # noqa: BLE001
                    pass
            _exit(0)
        os.close(w)
        buf, timed_out, overflow, status = self.collect(pid, r, t0 + timeout, rid, timeout)
        if status is None:
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        strays = self.cleanup(pid)
        # drain whatever is still in the pipe, without waiting for stray holders of it
        try:
            os.set_blocking(r, False)
            while len(buf) < MAX_PIPE_BYTES:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                buf += chunk
        except (BlockingIOError, OSError):
            pass
        os.close(r)
        strays += self.cleanup(pid)
        elapsed = (_monotonic() - t0) * 1000
        out_tail = read_tail(os.path.join(scratch, "output.log"))
        remove_tree(scratch)
        events = []
        for ln in buf.split(b"\n"):
            if not ln.strip():
                continue
            try:
                events.append(_loads(ln.decode("utf-8", "replace")))
            except ValueError:
                continue
        return self.assemble(rid, req, events, status, timed_out, overflow, elapsed, timeout, strays, out_tail)

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
            if isinstance(ev, dict) and ev.get("ev") == "done":
                self._done = True
            if isinstance(ev, dict) and ev.get("ev") == "start" and ev.get("stage") == "equivalence" and self._eq_start is None:
                self._eq_start = _monotonic()
            if isinstance(ev, dict) and ev.get("ev") in ("start", "end") and ev.get("stage") in STAGES:
                self.send({"type": "progress", "rid": rid, "ev": ev["ev"], "stage": ev["stage"],
                           "status": ev.get("status")})

    def collect(self, pid, r, deadline, rid=None, eq_timeout=None):
        """Read the child's reports until it exits, the deadline passes (kill) or it
        floods the pipe (kill). Returns (bytes, timed_out, overflow, status or None).
        The equivalence stage, which builds and runs two copies, gets a wall-clock budget
        of its own (`eq_timeout` from its start, once)."""
        buf = b""
        self._eq_start = None
        extended = False
        timed_out = False
        overflow = False
        status = None
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                pidfd = None
        r_open = True
        pos = 0
        self._done = False
        try:
            while True:
                if self._eq_start is not None and not extended and eq_timeout:
                    extended = True
                    deadline = max(deadline, self._eq_start + eq_timeout)
                left = deadline - _monotonic()
                if left <= 0:
                    timed_out = True
                    kill_group(pid)
                    break
                watch = ([r] if r_open else []) + ([pidfd] if pidfd is not None else [])
                if pidfd is None:
                    done, st = os.waitpid(pid, os.WNOHANG)
                    if done:
                        status = st
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
                        if len(buf) > MAX_PIPE_BYTES:
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
        stages = {s: "skip" for s in STAGES}
        timings = {}
        res = {"type": "result", "rid": rid, "stages": stages, "timings": timings, "category": None,
               "error": None, "stage": None, "args": None, "input_shapes": None, "output_shapes": None,
               "params": None, "ms": round(elapsed, 3)}
        current = None
        done = False
        equivalence = None
        harness_error = None
        for ev in events:
            k = ev.get("ev")
            if k == "start" and ev.get("stage") in stages:
                current = ev["stage"]
            elif k == "end" and ev.get("stage") in stages:
                st = ev["stage"]
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
                for key in ("args", "input_shapes", "output_shapes", "params", "layers", "usage", "argumentsSource", "witnessSkipped"):
                    if key in ev and ev[key] is not None:
                        res[key] = ev[key]
            elif k == "harvest":
                res["harvest"] = ev.get("result")
            elif k == "done":
                done = True
            elif k == "harness-error":
                harness_error = ev.get("error")
        if equivalence is not None:
            res["equivalence"] = equivalence
        if not done and res["stage"] is None:
            # the child did not finish: attribute the ending to the running stage
            st = current or next((s for s in STAGES if stages[s] == "skip"), "import")
            stages[st] = "fail"
            res["stage"] = st
            if timed_out:
                res["category"] = "timeout"
                res["error"] = "wall-clock timeout after %d ms" % int(timeout * 1000)
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
                res["error"] = "process exited with status %s during %s" % (code, st)
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


MAX_ZYGOTES = 3
ZYGOTE_UNCLEAN = 75  # exit status of a zygote whose import left a thread running
# Modules of an original repository imported by a zygote, hidden from sys.modules while
# a candidate imports, instantiates and runs (so `import timm` in a candidate still fails
# when timm is not installed) and put back for the equivalence stage.
STASH = {}
# Set in a zygote (the module it imported): its candidates know which original modules
# imported there without trying again (a failing import can take seconds).
IN_ZYGOTE = []


def zygote_main(cfg, roots, module, req_fd, res_fd):
    """A forked copy of the worker that imports the original repository once; the
    candidates of that repository fork from here, so equivalence does not re-import
    the repository for every block. The repository's import-time code runs here, in the
    same sandbox, never in the worker that serves other repositories."""
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
    handlers = {}
    for sig in signal.valid_signals() if hasattr(signal, "valid_signals") else ():
        try:
            handlers[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            pass
    import importlib
    for p in reversed(roots):
        if p not in sys.path:
            sys.path.insert(0, p)
    sys.dont_write_bytecode = True
    try:
        enter_work_dir(cfg.get("scratch") or "/tmp", fresh=False)
    except OSError:
        pass
    IN_ZYGOTE.append(module)
    try:
        importlib.import_module(module)
    except BaseException:  # noqa: BLE001 - the equivalence stage reports it
        pass
    prefixes = [r.rstrip("/") + "/" for r in roots]
    for name, m in list(sys.modules.items()):
        # sys.modules may hold objects that are not modules (torch.classes namespaces
        # under torch 2.6: their __path__ is not a list of folders)
        try:
            f = getattr(m, "__file__", None) or ""
            paths = [str(x) for x in (getattr(m, "__path__", None) or [])]
        except Exception:  # noqa: BLE001
            continue
        if not isinstance(f, str):
            continue
        if any(f.startswith(pr) for pr in prefixes) or any(x.startswith(pr) for x in paths for pr in prefixes):
            STASH[name] = sys.modules.pop(name)
    for p in roots:
        while p in sys.path:
            sys.path.remove(p)
    importlib.invalidate_caches()
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
    threads = count_threads(os.getpid())
    zcfg = dict(cfg)
    zcfg["pidns"] = False
    zcfg["no_zygotes"] = True
    w = Worker(zcfg, Channel(req_fd, res_fd))
    w.vm_kb = vm_size_kb()
    w.lim = w.limits(w.vm_kb)
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    w.extra_close = [req_fd]
    if threads != 1:
        # said by the exit status: a thread of the import may be writing into the pipe
        _exit(ZYGOTE_UNCLEAN)
    # the original modules this zygote holds: a request whose original module is not
    # among them (a sibling module the package's __init__ does not import) is validated
    # outside the zygote, where its original is imported for it (Worker.route)
    w.send({"type": "zygote-ready", "threads": threads, "modules": sorted(STASH)})
    w.serve()


class Zygote:
    def __init__(self, worker, roots, module):
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
                zygote_main(worker.cfg, roots, module, req_r, res_w)
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

    def unchanged(self):
        """Still as it was when it became ready: alive, the same threads, no process
        left below it (its own cleanup runs after each candidate)."""
        if not self.alive() or self.threads is None or count_threads(self.pid) != self.threads:
            return False
        return not [p for p, st in descendants(self.pid) if st != "Z"]

    def close_fds(self):
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass

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
        # the first answer includes the repository import; stay inside the TS watchdog
        # (request timeout + 10 s)
        deadline = _monotonic() + timeout + (8.0 if self.never_answered else 5.0)
        self.progress = {}
        self.running = None
        # a fresh token for this request: the zygote answers with it, lines without it
        # (left in the pipe, or written for another request) are ignored
        token = os.urandom(NONCE_LEN // 2).hex()
        self.buf = b""
        try:
            data = frame(token.encode("ascii"), {"type": "validate", "rid": rid, "req": req})
            while data:
                n = os.write(self.w, data)
                data = data[n:]
        except OSError:
            return None
        while True:
            nl = self.buf.find(b"\n")
            while nl >= 0:
                line = self.buf[:nl]
                self.buf = self.buf[nl + 1:]
                try:
                    obj = _loads(line.decode("utf-8", "replace"))
                except ValueError:
                    obj = None
                if isinstance(obj, dict):
                    t = obj.get("type")
                    if t == "zygote-ready" and self.threads is None:
                        self.threads = obj.get("threads")
                        self.modules = frozenset(obj.get("modules") or ())
                    elif obj.get("nonce") != token:
                        pass
                    elif t == "progress" and obj.get("rid") == rid:
                        if obj.get("ev") == "start":
                            self.running = obj.get("stage")
                            if obj.get("stage") == "equivalence":
                                # the zygote's child has an equivalence budget of its own
                                deadline = max(deadline, _monotonic() + timeout + 5.0)
                        else:
                            self.progress[obj.get("stage")] = obj.get("status")
                            self.running = None
                        worker.send(obj)
                    elif t == "result" and obj.get("rid") == rid:
                        self.never_answered = False
                        return obj
                nl = self.buf.find(b"\n")
            left = deadline - _monotonic()
            if left <= 0:
                self.timed_out = True
                return None
            ready = select.select([self.r], [], [], min(left, 0.5))[0]
            if ready:
                chunk = os.read(self.r, 65536)
                if not chunk:
                    self.ended()
                    return None
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
        stages = {s: self.progress.get(s, "skip") for s in STAGES}
        st = self.running or next((s for s in STAGES if stages[s] == "skip"), "import")
        stages[st] = "fail"
        hung = getattr(self, "timed_out", False)
        return {"type": "result", "rid": msg.get("rid"), "stages": stages, "timings": {},
                "category": "timeout" if hung else "crash",
                "error": ("the original repository's import did not finish in time" if hung and self.never_answered
                          else "validation process did not answer in time" if hung
                          else "validation process (repository zygote) died while validating"),
                "stage": st, "args": None, "input_shapes": None, "output_shapes": None, "params": None, "ms": 0}


def remove_tree(path):
    """Remove a file or folder a candidate may have made hard to remove (folders
    without write or search permission for their owner)."""
    def fix(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)
            except OSError:
                pass
            shutil.rmtree(path, onerror=fix)
        else:
            os.unlink(path)
    except (OSError, RecursionError):
        pass


def read_tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def vm_size_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 1 << 20


def count_my_tasks():
    """Tasks (threads) already owned by this uid: RLIMIT_NPROC counts them too."""
    uid = os.getuid()
    n = 0
    try:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.stat("/proc/" + name).st_uid != uid:
                    continue
                n += len(os.listdir("/proc/%s/task" % name))
            except OSError:
                continue
    except OSError:
        return 0
    return n


def count_threads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


def kill_descendants(pid):
    """SIGKILL and reap every descendant of `pid` (this process, a subreaper)."""
    for _ in range(200):
        left = [p for p, st in descendants(pid) if st != "Z"]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not left and not descendants(pid):
            return
        time.sleep(0.002)


def _libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


def set_subreaper():
    # PR_SET_CHILD_SUBREAPER (36): orphaned descendants of candidates are re-parented
    # to this worker, so kill_descendants() finds double-forked processes too
    try:
        _libc().prctl(36, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def set_undumpable():
    # PR_SET_DUMPABLE (4) = 0: /proc/<worker>/fd and ptrace are closed to the
    # candidates (same uid), so they cannot write into the protocol pipe
    try:
        _libc().prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def proc_table():
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                s = f.read().decode("ascii", "replace")
            rest = s.rsplit(")", 1)[1].split()
            table[int(name)] = (int(rest[1]), rest[0])
        except (OSError, IndexError, ValueError):
            continue
    return table


def _children_files(pid):
    """Direct children of every thread of `pid` (/proc/PID/task/TID/children, Linux 3.5+)."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
            out.extend(int(x) for x in f.read().split())
    return out


def _state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def descendants(root, exclude=()):
    """[(pid, state)] of every descendant of root, not entering the subtrees of
    `exclude`: through the children files when the kernel has them (cheap), else by
    scanning /proc."""
    try:
        out, stack = [], [root]
        while stack:
            p = stack.pop()
            try:
                kids = _children_files(p)
            except FileNotFoundError:
                if p == root:
                    raise
                kids = []
            for c in kids:
                if c in exclude:
                    continue
                out.append((c, _state(c)))
                stack.append(c)
        return out
    except OSError:
        pass
    table = proc_table()
    kids = {}
    for pid, (ppid, state) in table.items():
        kids.setdefault(ppid, []).append((pid, state))
    out, stack = [], [root]
    while stack:
        p = stack.pop()
        for c, state in kids.get(p, ()):
            if c in exclude:
                continue
            out.append((c, state))
            stack.append(c)
    return out


def reap_except(keep):
    """Reap dead children, but never a zygote's status (its owner waits for it)."""
    if not keep:
        reap()
        return
    for p, state in descendants(os.getpid(), keep):
        if state == "Z":
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass


def reap():
    while True:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            return


def kill_group(pid):
    """SIGKILL the candidate and its process group (it made itself a session leader)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def main():
    if "--probe" in sys.argv:
        probe()
        return
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        cfg = _loads(sys.argv[i + 1]) if i + 1 < len(sys.argv) else {}
        # requests and results travel on their own descriptors (cfg "fds", above 2:
        # bubblewrap's pid 1, visible to candidates, keeps only 0-2 open); stdout goes
        # to stderr so that anything printed during `import torch` cannot corrupt them
        rfd, wfd = cfg.get("fds") or (os.dup(0), os.dup(1))
        os.set_inheritable(rfd, False)
        os.set_inheritable(wfd, False)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        Worker(cfg, Channel(rfd, wfd)).run()
        return
    sys.stderr.write("usage: harness.py --probe | --worker CONFIG_JSON\n")
    sys.exit(2)


if __name__ == "__main__":
    main()
