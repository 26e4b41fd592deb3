# The validation stages of one candidate, in a forked child of the worker or of a
# repository's zygote (harness.py): parse, compile, import, namespace, instantiate,
# forward, equivalence (Stages), each reported on a pipe as it starts and ends
# (Reporter); child_main sets the child up (limits, descriptors, working directory) and
# runs the stages or a witness-harvest step (harvest_step.harvest_main).
import ast
import inspect
import io
import os
import re
import signal
import sys
import types

from nnrag_harness import CANDIDATE_FILE, CANDIDATE_MODULE
from nnrag_harness.candidates import arg_candidates
from nnrag_harness.classify import Classifier, fmt_error, fmt_trace, tb_files
from nnrag_harness.namespace import check as namespace_check
from nnrag_harness.arguments import (
    SCALAR_ERR,
    SEQ_ERR,
    ctor_params,
    jsonable,
    scalar_variant,
    seq_variant,
    subscript_lengths,
    to_original,
)
from nnrag_harness.inputs import (
    flatten_tensors,
    forward_plan,
    fresh_inputs,
    given_variant,
    input_candidates,
    make_inputs,
    repair_specs,
    rows_variant,
    seed_all,
    shapes_of,
    targets_as_tensors,
)
from nnrag_harness import stash as _stash
from nnrag_harness.procs import (
    _dumps,
    _write,
    _getpid,
    _exit,
    _monotonic,
    apply_limits,
    enter_work_dir,
    double_cpu_budget,
    self_cpu,
)


STAGES = ("parse", "compile", "import", "namespace", "instantiate", "forward", "equivalence")
MAX_PIPE_BYTES = 4 << 20


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
        from nnrag_harness.harvest_step import harvest_main

        harvest_main(req, rep, torch)
    else:
        Stages(req, scratch, rep, Classifier(masked), torch).run()
    rep.send({"ev": "done"})
    _exit(0)


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
        # the repository's inputs reached a compiled operator without a CPU kernel (forward)
        self._no_kernel = False
        # the CPU time the worker gives this candidate (before the equivalence stage's own),
        # counted as the worker counts it (procs.py): this process forked from zero
        self._deadline = self_cpu() + float(req.get("timeoutMs") or 20000) / 1000.0

    def start(self, stage):
        self.rep.send({"ev": "start", "stage": stage})
        return _monotonic()

    def end(self, stage, t0, status, **kw):
        d = {"ev": "end", "stage": stage, "status": status, "ms": round((_monotonic() - t0) * 1000, 3)}
        d.update(kw)
        self.rep.send(d)

    def fail(self, stage, t0, e, category=None):
        self.end(
            stage,
            t0,
            "fail",
            category=category or self.classifier.classify(e, stage, tb_files(e)),
            error=fmt_error(e),
            traceback=fmt_trace(e),
        )
        raise StageFailed()

    def run(self):
        try:
            self._run()
        except StageFailed:
            pass

    def _run(self):
        req, nn = self.req, self.nn
        path = os.path.join(self.scratch, CANDIDATE_FILE)
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
        # 3. import: execute the module body as module CANDIDATE_MODULE (a name no import
        # statement can spell, so no repository module can be or find the copy)
        t0 = self.start("import")
        # what the original's import did to installed packages (a registry it filled)
        # is not the copy's: their modules are imported afresh (stash.INSTALLED)
        _stash.hide_installed()
        loaded_before = set(sys.modules)
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            mod = types.ModuleType(CANDIDATE_MODULE)
            mod.__file__ = path
            sys.modules[CANDIDATE_MODULE] = mod
            exec(code, mod.__dict__)  # noqa: S102 - sandboxed candidate
        except BaseException as e:  # noqa: BLE001
            self.fail("import", t0, e)
        if req.get("original"):
            # and what the copy's import did to installed packages is not the original's,
            # which imports after it (stash.COPY_INSTALLED)
            try:
                _stash.COPY_INSTALLED.update(
                    _stash.isolable_installed(loaded_before, req["original"].get("sysPath"), exclude={CANDIDATE_MODULE})
                )
            except Exception:  # noqa: BLE001 - isolation is best effort
                pass
        cls = mod.__dict__.get(req["className"])
        if cls is None or (isinstance(cls, type) and getattr(cls, "__module__", None) != CANDIDATE_MODULE):
            # not bound, or bound to another module's class (`else: X = nn.X`)
            why = self._conditional_class(tree, req["className"])
            if why:
                self.fail("import", t0, NameError(why), "conditional-class")
        if cls is None:
            self.fail(
                "import", t0, NameError("class %r is not defined by the module" % req["className"]), "unresolved-name"
            )
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
        providers = self._providers(mod)
        if providers:
            self._report_providers_wanted(cls, mod)
        try:
            cands, unguessable = arg_candidates(
                cls,
                self.req.get("callSites"),
                mod.__dict__,
                nn,
                self.req.get("dataSites"),
                self._data_namespace,
                providers,
            )
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
        required0 = any(
            p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params0
        )
        # (a class built from its defaults: its own candidates first, small widths included)
        k = (
            next((j for j, c in enumerate(cands) if source_of(c[0]) == "guess"), len(cands))
            if required0
            else len(cands)
        )
        cands = with_inputs + cands[:k] + without + cands[k:]
        # what the user gave (--args / --input-shape, a witness with entry "user-supplied")
        # comes before everything else
        user = [c for c in cands if source_of(c[0]) == "user"]
        cands = user + [c for c in cands if source_of(c[0]) != "user"]
        if not cands:
            self.fail(
                "instantiate", t_inst, TypeError("cannot guess constructor argument(s): %s" % unguessable), "needs-args"
            )
        params = ctor_params(cls) or []
        has_required = any(
            p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
        )
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
            seed_all(torch, 0)
            restore = None
            t_cand = self_cpu()
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
                if cat in (
                    "memory",
                    "unresolved-name",
                    "missing-extern",
                    "native-extension",
                    "sandbox-denied",
                ) and not (
                    cat in ("memory", "unresolved-name")
                    and (label in self._witness or (cat == "memory" and self._no_kernel))
                ):
                    self.fail("instantiate", t_inst, e, cat)
                if restore is not None:
                    restore()
                inst_errors.append((label, args, kwargs, e))
                if (
                    isinstance(e, (TypeError, IndexError, AssertionError, ValueError))
                    and SEQ_ERR.search(str(e))
                    and "seq" not in label
                ):
                    v = seq_variant(args, kwargs, subscript_lengths(cls))
                    if v is not None:
                        cands.insert(i, (label + " seq", v[0], v[1]))
                elif isinstance(e, TypeError) and SCALAR_ERR.search(str(e)) and "scalar" not in label:
                    v = scalar_variant(args, kwargs)
                    if v is not None:
                        cands.insert(i, (label + " scalar", v[0], v[1]))
                elif isinstance(e, AttributeError) and label.count(" +attr") < 4:
                    # a configuration object the guess built lacks a field the code reads
                    from nnrag_harness.source_config import missing_attribute_variant

                    v = missing_attribute_variant(args, kwargs, e, self.nn)
                    if v is not None:
                        cands.insert(i, (label + " +attr", v[0], v[1]))
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
                self.rep.send(
                    {
                        "ev": "end",
                        "stage": "forward",
                        "status": "pass",
                        "ms": round((_monotonic() - fwd_t0) * 1000, 3),
                        "args": self._args_json(args, kwargs),
                    }
                )
                self.info(m, args, kwargs, x, y, label)
                # the usage snippet, checked by running it: the validated model is let go
                # first (the snippet builds its own), before equivalence, which has a
                # CPU budget of its own
                cost = self_cpu() - t_cand
                m = model = y = res = None
                # the arguments only (the pipeline's slim-first order, pipeline.ts
                # `slimOrFaithful`): every stage up to here ran as in a whole validation,
                # so the arguments and the stages' verdicts are that validation's; the
                # usage line is not run and equivalence not built, only the definitions
                # the line would lack are named (`usageNeeds`). When it names some, the
                # pipeline needs the whole validation anyway (its usage roots are chosen
                # from it): this child goes on as the whole request would from here (the
                # usage line, equivalence) rather than a second child building and running
                # the same module again, and says so (`whole`)
                if self.req.get("argumentsOnly"):
                    d = self._usage_info(cls, mod, args, kwargs, x, self._fwd_kwargs, witness, cost, run=False)
                    if not d.get("usageNeeds"):
                        self.rep.send(d)
                        return
                    self.rep.send({"ev": "info", "whole": True})
                self._send_usage(cls, mod, args, kwargs, x, self._fwd_kwargs, witness, cost)
                if "equivalence" in want or self.req.get("original"):
                    self._equivalence(cls, args, kwargs, x, witness if self._fwd_kwargs is not None else None, witness)
                return
            fwd_errors.append((label, args, kwargs, res))
            if attempts >= 4 + len(wits):
                break
        if model is None:
            label, args, kwargs, e = inst_errors[0] if inst_errors else (None, [], {}, TypeError("no candidate"))
            # a construction that asked for a GPU (nn.SyncBatchNorm outside a process
            # group, `.cuda()` in __init__) says what the block needs whatever the
            # arguments: that one is reported, not the first candidate's
            gpu = next(
                (
                    x
                    for x in inst_errors
                    if self.classifier.classify(x[3], "instantiate", tb_files(x[3])) == "needs-gpu"
                ),
                None,
            )
            if gpu is not None:
                label, args, kwargs, e = gpu
            cat = (
                "needs-gpu"
                if gpu is not None
                else "needs-args"
                if has_required
                else self.classifier.classify(e, "instantiate", tb_files(e))
            )
            if (
                not has_required
                and cat == "runtime-error"
                and isinstance(e, TypeError)
                and re.search(r"argument", str(e))
            ):
                cat = "needs-args"
            self.rep.send({"ev": "info", "args": self._args_json(args, kwargs), "tried": len(inst_errors)})
            self.fail("instantiate", t_inst, e, cat)
        # every forward attempt failed: prefer an error that is not about shapes
        best = None
        for _label, args, kwargs, (e, specs) in fwd_errors:
            cat = self.classifier.classify(e, "forward", tb_files(e))
            # a forward that asked for a GPU (`.cuda()`, a CUDA device) is reported as such
            # and one that reached a compiled operator without a CPU kernel says what the
            # block needs whatever the input (another candidate's error is a guess's)
            if (
                best is None
                or (best[1] == "forward-shape" and cat != "forward-shape")
                or (cat == "needs-gpu" and best[1] != "needs-gpu")
                or (cat == "native-op-no-cpu" and best[1] not in ("needs-gpu", "native-op-no-cpu"))
            ):
                best = (e, cat, args, kwargs, specs)
        e, cat, args, kwargs, specs = best
        self.rep.send(
            {"ev": "info", "args": self._args_json(args, kwargs), "input_shapes": [list(s[1]) for s in specs]}
        )
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
        resolve = source_witness.copy_resolver(
            mod.__dict__, self.req.get("witnessRepoTops") or [], self._import_original, self._copy_names()
        )
        src = source_witness.WitnessSource(wits, resolve, self.torch)
        plans = list(src.plans())
        self._witness_resolve = resolve
        if src.skipped:
            self.rep.send({"ev": "info", "witnessSkipped": src.skipped[:3]})
        for plan in plans:
            self._witness[plan.label] = plan.witness
        return [(plan.label, plan.args, plan.kwargs) for plan in plans]

    def _providers(self, mod):
        """(witnesses of other repository classes, resolver, torch) for parameters that
        take a module of the repository (nnrag_harness.source_provider), or None."""
        from nnrag_harness import source_witness

        provs = self.req.get("providers") or {}
        if not provs:
            return None
        resolve = source_witness.copy_resolver(
            mod.__dict__, self.req.get("witnessRepoTops") or [], self._import_original, self._copy_names()
        )
        return (provs, resolve, self.torch)

    def _report_providers_wanted(self, cls, mod):
        """Tell the pipeline which parameters the providers could fill (source_provider.wanted;
        empty: none, so the request's providers do not bear on the result and a change of
        them re-validates nothing, issue 27); None when that could not be worked out."""
        from nnrag_harness import source_provider, sources

        try:
            r = sources.request(cls, mod.__dict__, self.nn)
            wanted = sorted(source_provider.wanted(r, self.nn)) if r.params is not None else []
        except Exception:  # noqa: BLE001 - unknown: the pipeline counts the providers in
            wanted = None
        self.rep.send({"ev": "info", "providersWanted": wanted})

    def _copy_names(self):
        """The request's copy names (snippet.CopyNames: the emitted module's names and the
        original definitions they come from), read once."""
        from nnrag_harness import snippet as S

        if getattr(self, "_copy_names_read", None) is None:
            self._copy_names_read = S.CopyNames(self.req.get("copyNames"))
        return self._copy_names_read

    def _conditional_class(self, tree, name):
        """Why a class the module's import did not define does not exist in this
        environment, or None. Python runs a class statement only when the branch holding
        it is taken (`if IS_ACCELERATOR_AVAILABLE: class X`, `if torch_version < (1, 7):
        class X ... else: X = nn.X`): when the copy's class statement sits in an `if`,
        `try` or `with` of the module's top level and the original module does not define
        that class either (it lacks the name, or binds it to another object), the block
        does not exist here - neither the copy nor the original has it - which is not a
        name the copy lost (unresolved-name)."""
        test = None
        line = 0
        todo = [(st, None) for st in tree.body]
        while todo:
            st, cond = todo.pop(0)
            if isinstance(st, ast.ClassDef) and st.name == name:
                if cond is not None:
                    test, line = cond, st.lineno
                    break
                continue
            if isinstance(st, ast.If):
                for sub in st.body:
                    todo.append((sub, st.test))
                for sub in st.orelse:
                    todo.append((sub, ast.UnaryOp(ast.Not(), st.test)))
            elif isinstance(st, (ast.Try, ast.With)) or type(st).__name__ == "TryStar":
                for part in ("body", "orelse", "finalbody"):
                    for sub in getattr(st, part, ()) or ():
                        todo.append((sub, cond if cond is not None else st))
                for h in getattr(st, "handlers", ()) or ():
                    for sub in h.body:
                        todo.append((sub, cond if cond is not None else st))
        if test is None:
            return None
        orig = self.req.get("original") or {}
        if not orig.get("module"):
            return None
        try:
            om = self._import_original(orig["module"])  # the zygote's, else imported and hidden again
        except BaseException:  # noqa: BLE001
            om = None
        if om is None:
            return None  # the original cannot say: left a NameError
        bound = om.__dict__.get(name, None)
        if (
            isinstance(bound, type)
            and getattr(bound, "__module__", None) == om.__name__
            and getattr(bound, "__qualname__", None) == name
        ):
            return None  # the original defines it: the copy lost it
        try:
            cond = ast.unparse(test) if isinstance(test, ast.expr) else "a %s block" % type(test).__name__.lower()
        except Exception:  # noqa: BLE001
            cond = "a condition"
        if bound is None:
            there = "the original module %s does not define it either" % om.__name__
        else:
            there = "the original module %s binds %s to %s" % (
                om.__name__,
                name,
                getattr(bound, "__module__", "?") + "." + getattr(bound, "__qualname__", type(bound).__name__),
            )
        return "class %r is defined only under `%s` (line %d), false in this environment: %s" % (
            name,
            cond[:160],
            line,
            there,
        )

    def _import_original(self, module):
        """An original module for a witness value the copy does not define (a module
        instance or container passed in): the zygote's, else imported from the roots and
        hidden again from sys.modules (as in the namespace stage), or None."""
        import importlib

        m = _stash.STASH.get(module)
        if m is not None or not self.req.get("original"):
            return m
        before = len(sys.modules)
        saved_path = list(sys.path)
        try:
            for name, mm in _stash.STASH.items():
                sys.modules.setdefault(name, mm)
            for p in reversed(self.req["original"].get("sysPath") or []):
                if p not in sys.path:
                    sys.path.insert(0, p)
            with _stash.for_original():
                return importlib.import_module(module)
        except BaseException:  # noqa: BLE001 - the witness is skipped
            return None
        finally:
            _stash.hide_new_repository_modules(before, self.req["original"].get("sysPath"))
            sys.path[:] = saved_path

    def _forward(self, model, kwargs, args, witness=None):
        from nnrag_harness import snippet as S

        torch, nn = self.torch, self.nn
        self._fwd_kwargs = None
        self._kw_inputs = {}
        try:
            model.eval()
        except Exception as e:  # noqa: BLE001 - a module the constructor left half made
            # (an __init__ that never calls nn.Module.__init__ has no _modules): the
            # block's failure, not the harness's
            return False, (e, [])
        witness_err = None
        if witness is not None and witness.get("inputs"):
            # the inputs the repository's own model gave this construction
            from nnrag_harness import source_witness

            try:
                a, kw = source_witness.witness_inputs(witness, self._witness_resolve, torch)
                self._inputs_before = (S.snapshot(list(a), torch), S.snapshot(dict(kw), torch))
                seed_all(torch, 1)
                with torch.no_grad():
                    out = model(*a, **kw)
                self._fwd_kwargs = kw
                return True, (a, out)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "forward", tb_files(e))
                if cat in ("unresolved-name", "missing-extern", "native-extension", "sandbox-denied"):
                    self.fail("forward", self._fwd_t0, e, cat)
                if cat == "native-op-no-cpu":
                    # the repository's inputs reached a compiled operator without a CPU
                    # kernel: unless a guessed input passes, that is the block's failure,
                    # not the guesses' shape errors (nor a guess too large for memory,
                    # which is then just a failed try: _no_kernel)
                    witness_err = (e, [])
                    self._no_kernel = True
                # else: the heuristic inputs below, with the witness's arguments
        # required keyword-only parameters (PEP 3102) get inputs like positional ones
        # after them, passed by name
        kwplan = forward_plan(model, keywords=True)
        plan = forward_plan(model) + kwplan
        npos = len(plan) - len(kwplan)
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
            elif (
                isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(i, int) for i in v) and 4 <= v[0] <= 512
            ):
                spatial = v[0]
        cands = input_candidates(model, plan, widths, torch, nn, spatial, hints)
        # then the first candidates again with class-index targets as tensors like the
        # other inputs (a loss combining its arguments elementwise)
        alt = targets_as_tensors(plan)
        cands = [(plan, c) for c in cands] + ([(alt, c) for c in cands[:4]] if alt else [])
        # then masks and embedding ids per row of the first feature input (a node's
        # label, a token's mask), with candidates for that plan's tensor inputs
        rows = rows_variant(model, plan)
        if rows:
            cands += [(rows, c) for c in input_candidates(model, rows, widths, torch, nn, spatial, hints)]
        # then required Optional parameters given a value rather than None
        given = given_variant(model, plan)
        if given:
            cands += [(given, c) for c in input_candidates(model, given, widths, torch, nn, spatial, hints)]
        tried, repairs, repaired_at = set(), 0, set()
        i = 0
        while i < len(cands):
            plan, specs = cands[i]
            i += 1
            if repr((plan, specs)) in tried:
                continue
            tried.add(repr((plan, specs)))
            repaired = i - 1 in repaired_at
            seed_all(torch, 1)
            try:
                inputs = make_inputs(specs, plan, torch, model)
                kw_inputs = {name: v for (name, _), v in zip(kwplan, inputs[npos:])}
                inputs = inputs[:npos]
                self._inputs_before = (S.snapshot(list(inputs), torch), S.snapshot(dict(kw_inputs), torch))
                with torch.no_grad():
                    out = model(*inputs, **kw_inputs)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "forward", tb_files(e))
                if (repaired or witness is not None or self._no_kernel) and cat == "memory":
                    # a repaired input, or a witness's full-size block on a guessed input,
                    # too large for the limits: just a failed try
                    if first_err is None:
                        first_err = (e, specs)
                    continue
                if cat in ("memory", "unresolved-name", "missing-extern", "native-extension", "sandbox-denied"):
                    self.fail("forward", self._fwd_t0, e, cat)
                if first_err is None or (
                    self.classifier.classify(first_err[0], "forward") == "forward-shape" and cat != "forward-shape"
                ):
                    first_err = (e, specs)
                if cat == "forward-shape" and repairs < 4:
                    fixed = repair_specs(specs, str(e))
                    if fixed is not None and repr((plan, fixed)) not in tried:
                        repairs += 1
                        repaired_at = {j + 1 if j >= i else j for j in repaired_at} | {i}
                        cands.insert(i, (plan, fixed))  # try the repaired input next
                continue
            self._last_inputs = (specs, plan)
            self._kw_inputs = kw_inputs
            return True, (inputs, out)
        if witness_err is not None:
            return False, witness_err
        if first_err is None:
            first_err = (RuntimeError("no input candidate for forward"), [])
        return False, first_err

    def info(self, model, args, kwargs, inputs, out, label=None):
        from nnrag_harness.sources import origin_of, source_of

        torch = self.torch
        layers = {}
        for m in model.modules():
            if m is model:
                continue
            n = type(m).__name__
            layers[n] = layers.get(n, 0) + 1
        d = {
            "ev": "info",
            "args": self._args_json(args, kwargs),
            "params": int(sum(p.numel() for p in model.parameters())),
            "layers": layers,
            "argumentsSource": source_of(label),
            "argumentsOrigin": origin_of(label),
        }
        if inputs is not None:
            d["input_shapes"] = shapes_of(inputs, torch)
            d["output_shapes"] = [list(t.shape) for t in flatten_tensors(out, torch)]
        self.rep.send(d)

    def _send_usage(self, cls, mod, args, kwargs, inputs, fwd_kwargs, witness, cost, run=True):
        """Send the usage line's report (`_usage_info`)."""
        self.rep.send(self._usage_info(cls, mod, args, kwargs, inputs, fwd_kwargs, witness, cost, run))

    def _usage_info(self, cls, mod, args, kwargs, inputs, fwd_kwargs, witness, cost, run=True):
        """The usage snippet of the construction and call that passed (snippet.py),
        rendered from recorded JSON values (the witness's record, else the live values
        encoded as a witness would be) and checked with ast; then run as written here
        (`usageCheck: "ran"`; `.eval()` added when it only runs in eval mode, as
        validated), or, when building the block again would not fit in the CPU time
        left (`cost`: what this candidate's construction and forward took), its argument
        and input expressions evaluated and compared with the values the validated run
        received (`usageCheck: "values"`). Nothing is recorded when a value has no plain
        spelling or the check fails; a snippet never fails the block.
        With `run` false (an arguments-only request) no line is rendered or run: only
        the definitions the values name that the module lacks (`usageNeeds`, computed
        as a whole validation computes them when it records no line)."""
        from nnrag_harness import snippet as S

        torch = self.torch
        d = {"ev": "info"}
        encs, spell = None, None
        # the installed distributions the block's module imports (the request's
        # `usagePackages`): a value the module lacks may be imported from them
        packages = [p for p in self.req.get("usagePackages") or () if type(p) is str]
        loaded = set(sys.modules)
        # the inputs as they were before the forward (a forward may write into a list it
        # is given: YOLO's Detect puts its outputs into the list of feature maps)
        kw_inputs = dict(fwd_kwargs or getattr(self, "_kw_inputs", None) or {})
        before = getattr(self, "_inputs_before", None)
        if before is not None:
            inputs, kw_inputs = before
        try:
            if witness is not None:
                a_enc, kw_enc = witness.get("args") or [], witness.get("kwargs") or {}
            else:
                a_enc, kw_enc = S.encode_live(list(args), torch), S.encode_live(dict(kwargs), torch)["$dict"]
            if fwd_kwargs is not None and witness is not None and witness.get("inputs"):
                i_enc, ikw_enc = witness["inputs"].get("args") or [], witness["inputs"].get("kwargs") or {}
            else:
                i_enc, ikw_enc = S.encode_live(list(inputs), torch), S.encode_live(dict(kw_inputs), torch)["$dict"]
            encs = [a_enc, kw_enc, i_enc, ikw_enc]
            names = self._copy_names()
            ns = S.usage_namespace(mod, self.req["className"], cls, names)
            spell = S.spell_in(ns, torch, names, packages)
            if not run:
                pass
            elif 2 * cost + 1.0 < self._deadline - self_cpu():
                why = None

                def left():
                    return self._deadline - self_cpu()

                # as validated; then, when that run failed with an error saying its input
                # must have another dtype (S.wanted_dtype), with inputs of that dtype; when
                # it failed reading an attribute the repository set on a nested module
                # after building it (S.attributes_read), with that attribute set
                tries = [(i_enc, ikw_enc, ())]
                draw = None  # (text, OtherDraw) of the first line that failed on another draw
                for eval_mode in (False, True):
                    for n, (ins, ikws, attrs) in enumerate(tries):
                        if (eval_mode or n) and not 2 * cost + 1.0 < left():
                            break
                        text = S.snippet_text(
                            self.req["className"], a_enc, kw_enc, ins, ikws, spell, eval_mode, ns, attrs, packages
                        )
                        # as the validated block was built: pretrained weights are not
                        # fetched (no network in the sandbox; a user's run downloads them)
                        from nnrag_harness.harvest import no_downloads

                        restore = no_downloads(torch)
                        try:
                            S.run_snippet(text, ns, torch, S.RESEEDS, left, d.setdefault("usageParts", {}))
                            d["usage"], d["usageCheck"] = text, "ran"
                            break
                        except BaseException as e:  # noqa: BLE001 - the block's own error on this run (SystemExit included)
                            if isinstance(e, S.OtherDraw) and draw is None:
                                # kept for the seeded line below, without the frames its
                                # traceback holds (the line's block and its output, alive
                                # through equivalence otherwise)
                                draw = (text, S.without_frames(e))
                            why = why or (
                                str(e)[:240]
                                if isinstance(e, S.OtherDraw)
                                else "%s: %s" % (type(e).__name__, str(e)[:160])
                            )
                            fix = S.wanted_dtype(str(e)[:2000], S.tensor_dtypes([ins, ikws]))
                            if fix and not any(t[0] is not i_enc for t in tries):
                                tries.append((S.retyped(ins, *fix), S.retyped(ikws, *fix), attrs))
                            read = S.attributes_read(str(e)[:2000], [a_enc, kw_enc, ins, ikws])
                            if read and read not in attrs and len(tries) < 4:
                                tries.append((ins, ikws, tuple(attrs) + (read,)))
                        finally:
                            restore()
                    if "usage" in d:
                        break
                # a line that passed on the validated draw and fails on another with values
                # no repair above fixed (a random augmentation validated with values its
                # operation refuses, on a draw that skipped it): the line seeds the
                # generators its call draws from (S.seeded_text), so that it runs as
                # written, on one draw, every time; run as written to check it, under the
                # first seed of S.SEEDED_TRIES whose draw passes. The other draw's failure
                # is recorded with it (`usageDraws`), the validation's verdicts are not
                # touched.
                if "usage" not in d and draw is not None:
                    for seed in S.SEEDED_TRIES:
                        if not 2 * cost + 1.0 < left():
                            break
                        from nnrag_harness.harvest import no_downloads

                        restore = no_downloads(torch)
                        try:
                            text = S.seeded_text(draw[0], draw[1].moved, seed, packages)
                            S.run_snippet(text, ns, torch, S.RESEEDS, left, d.setdefault("usageParts", {}))
                            d["usage"], d["usageCheck"], d["usageDraws"] = text, "seeded", str(draw[1])[:240]
                            break
                        except (S.Unrenderable, S.Unseeded) as e:
                            why = "%s; no seeded line: %s" % (why, str(e)[:120])
                            break
                        except BaseException:  # noqa: BLE001 - this seed's draw fails too: the next one
                            pass
                        finally:
                            restore()
                if "usage" not in d:
                    d["usageSkipped"] = why
            elif self._deadline - self_cpu() > 1.0:
                from nnrag_harness.harvest import no_downloads

                text = S.snippet_text(
                    self.req["className"], a_enc, kw_enc, i_enc, ikw_enc, spell, taken=ns, packages=packages
                )
                restore = no_downloads(torch)
                try:
                    S.check_values(text, ns, torch, list(args), dict(kwargs), list(inputs), kw_inputs)
                finally:
                    restore()
                d["usage"], d["usageCheck"] = text, "values"
            else:
                d["usageSkipped"] = "no time left to check a snippet"
        except BaseException as e:  # noqa: BLE001 - no plain spelling (S.Unrenderable), a value that does not encode, the block's error
            d["usageSkipped"] = "%s: %s" % (type(e).__name__, str(e)[:160])
        if "usage" not in d and encs is not None and spell is not None:
            # the definitions the values name that the module lacks (its code never names
            # them): the pipeline adds them to the module and validates it again
            try:
                needs = S.usage_needs(encs, spell)
            except Exception:  # noqa: BLE001 - a malformed record: no needs
                needs = []
            if needs:
                d["usageNeeds"] = needs
        # the installed modules the snippet's imports loaded, where the original's of that
        # name are hidden (the equivalence stage puts those back)
        _stash.forget_imported(loaded, packages)
        return d

    def _original_module(self):
        """The block's original module, imported from its repository (read-only in the
        sandbox); a zygote has imported it already (see Zygote)."""
        import importlib

        orig = self.req.get("original") or {}
        for name, m in _stash.STASH.items():
            sys.modules.setdefault(name, m)
        for p in reversed(orig.get("sysPath") or []):
            if p not in sys.path:
                sys.path.insert(0, p)
        m = importlib.import_module(orig["module"])
        # the module must be the repository's own: a name the process already holds (the
        # harness's package, a module of the environment) would compare the copy with
        # something else, or with itself
        if not _stash.of_roots(m, _stash.root_prefixes(orig.get("sysPath"))):
            raise ImportError(
                "%s is not the repository's module: its name is taken by %s"
                % (orig["module"], getattr(m, "__file__", None) or getattr(m, "__name__", "?"))
            )
        return m

    def _data_namespace(self):
        """The original module's namespace, for plain data the copy cannot compute (a
        helper it does not need builds a call site's drop-path rates); None without one.
        Imported on first use only (a child outside a zygote would import the repository)."""
        if not self._data_ns_tried:
            self._data_ns_tried = True
            if self.req.get("original"):
                try:
                    with _stash.for_original():
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
        t_orig = _monotonic()
        # the original runs with its own modules of installed packages: those the
        # candidate's import loaded first are swapped out (stash.COPY_INSTALLED), the
        # zygote's put back
        _stash.use_original_installed()
        _stash.restore_installed()
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
            kw_inputs = getattr(self, "_kw_inputs", None) or {}
            return model(*fresh_inputs(inputs, torch), **{k: fresh_inputs([v], torch)[0] for k, v in kw_inputs.items()})

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
            self.end(
                "equivalence",
                t0,
                "skip",
                reason="original does not instantiate with the same arguments: " + fmt_error(e),
            )
            return
        # the cost of the original (its import and build), for `nnrag report`
        self.rep.send({"ev": "info", "originalMs": round((_monotonic() - t_orig) * 1000, 3)})
        try:
            b = build(cls, args, kwargs)
            b.load_state_dict(a.state_dict(), strict=True)
        except BaseException as e:  # noqa: BLE001
            if self.classifier.classify(e, "equivalence") == "memory":
                self.end(
                    "equivalence",
                    t0,
                    "fail",
                    reason="memory limit while building the copy: " + fmt_error(e),
                    category="memory",
                    error=fmt_error(e),
                )
                return
            self.end(
                "equivalence",
                t0,
                "fail",
                reason="state_dict does not load strictly: " + fmt_error(e),
                category="not-equivalent",
                error=fmt_error(e),
            )
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
            self.end(
                "equivalence",
                t0,
                "fail",
                reason=("memory limit in the copy's forward: " if mem else "extracted forward failed: ") + fmt_error(e),
                category="memory" if mem else "not-equivalent",
                error=fmt_error(e),
            )
            return
        if len(ya) != len(yb) or any(list(x.shape) != list(y.shape) for x, y in zip(ya, yb)):
            r = "outputs differ in structure: %s vs %s" % ([list(t.shape) for t in ya], [list(t.shape) for t in yb])
            self.end("equivalence", t0, "fail", reason=r, category="not-equivalent", error=r)
            return
        try:
            ok, maxdiff = compare_outputs(ya, yb, torch)
        except BaseException as e:  # noqa: BLE001
            if self.classifier.classify(e, "equivalence") != "memory":
                raise
            # the comparison itself did not fit the memory limit: that decides nothing
            # about the copy
            self.end("equivalence", t0, "skip", reason="not decided: memory limit comparing outputs: " + fmt_error(e))
            return
        if ok:
            self.end("equivalence", t0, "pass", maxAbsDiff=maxdiff)
        else:
            r = "outputs differ (max abs diff %.3g)" % maxdiff
            self.end("equivalence", t0, "fail", reason=r, maxAbsDiff=maxdiff, category="not-equivalent", error=r)


# elements compared at a time: the comparison in double precision needs 8 bytes per
# element of each output (an output of 32 x 64 x 128 x 128 floats is 256 MiB as doubles),
# which a block's memory limit may not have beside the two models and their outputs
COMPARE_CHUNK = 1 << 20


def compare_outputs(ya, yb, torch):
    """Whether two lists of output tensors are equal (floating: torch.allclose with rtol
    1e-5, atol 1e-6 and NaN where the other has NaN; others exactly; the same dtypes),
    and the largest absolute difference, compared COMPARE_CHUNK elements at a time (both
    conditions are element-wise, so the verdict is that of the whole tensors)."""
    maxdiff = 0.0
    ok = True
    for x, y in zip(ya, yb):
        if x.dtype != y.dtype:
            ok = False
            continue
        if x.numel() == 0:
            continue
        fx, fy = x.reshape(-1), y.reshape(-1)
        floating = x.is_floating_point() or x.is_complex()
        for i in range(0, fx.numel(), COMPARE_CHUNK):
            a, b = fx[i : i + COMPARE_CHUNK], fy[i : i + COMPARE_CHUNK]
            if floating:
                diff = (a.double() - b.double()).abs()
                nan_mismatch = bool((a.isnan() != b.isnan()).any())
                m = float(diff[~diff.isnan()].max()) if bool((~diff.isnan()).any()) else 0.0
                maxdiff = max(maxdiff, m)
                if nan_mismatch or not torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
                    ok = False
            elif not torch.equal(a, b):
                ok = False
                maxdiff = max(maxdiff, float((a.double() - b.double()).abs().max()))
    return ok, maxdiff


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
    if _stash.IN_ZYGOTE and req["original"].get("module") not in _stash.STASH:
        r = "original does not import: the repository's zygote did not import %s" % req["original"].get("module")
        st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
        return
    before = len(sys.modules)
    saved_path = list(sys.path)
    try:
        try:
            with _stash.for_original():
                st._original_module()
        except BaseException as e:  # noqa: BLE001
            r = "original does not import: " + fmt_error(e)
            st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
            return
        namespace_check(st, t0, mod, path, ns)
    finally:
        # the original's modules are hidden again while the candidate runs (see STASH)
        _stash.hide_new_repository_modules(before, req["original"].get("sysPath"))
        sys.path[:] = saved_path
