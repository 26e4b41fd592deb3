# Witness harvesting (src/validate/README.md "Witnesses"): the repository knows how to
# build and call its blocks, so ask it. Runs in the sandbox, in a child of the
# repository's zygote (its modules imported once), one request per step:
#
#   list: import the repository's modules and list its entry points - model registries
#         (module-level dicts whose values are its factory functions or classes, such as
#         timm's @register_model table or segment-anything's sam_model_registry),
#         factory functions (build_* / create_* / get_*model*), nn.Module classes whose
#         constructor is satisfiable from defaults - and the configurations it ships
#         (dataclasses with defaults, argparse parsers' defaults read statically from
#         its scripts, YAML model files next to a `cfg='x.yaml'` default), plus, per
#         entry point, the classes it can reach (for greedy coverage in witness/harvest.ts).
#   run:  build one entry point with constructor wrappers on every class of the
#         repository and of torch.nn (bound arguments as called) and forward wrappers
#         (inputs, output shapes), call the model on a small input from its own defaults
#         (img_size, in_chans, vocab_size, block_size ...), and report per class the
#         recorded constructions and calls (values.encode).
#
# Pretrained weights are never fetched: torch.hub's download functions give an empty
# state that loading ignores (shapes, not weights, make a witness), and a `pretrained`
# parameter is passed False (the torchvision / timm convention). A device default that
# names CUDA is read as CPU (the sandbox has none).
import ast
import copy
import dataclasses
import functools
import inspect
import os
import re
import signal
import sys
import time

from . import values as V
from .procs import WALL_PER_CPU, WALL_SLACK, self_cpu
from . import configs as CF
from . import structured
from .inputs import flatten_tensors
from .classify import NO_CPU_KERNEL
from .stash import of_roots, root_prefixes

CLASS_FACTORY = re.compile(
    r"^(from_(name|config|cfg|args|params|arch|variant|size|type|preset|spec)|build|create|make)$"
)
FACTORY_NAME = re.compile(r"^(build|create|make)_\w+$|^get_\w*model|model", re.I)
CONFIG_PARAM = re.compile(r"^(cfg|config|conf|args|opt|opts|hparams|hp|params|model_cfg|model_config|cfg_dict)$", re.I)
SIZE_WORDS = [
    "nano",
    "pico",
    "atto",
    "femto",
    "tiny",
    "micro",
    "mini",
    "small",
    "little",
    "t",
    "n",
    "s",
    "base",
    "b",
    "medium",
    "m",
    "large",
    "l",
    "huge",
    "h",
    "giant",
    "g",
    "x",
    "xl",
    "xxl",
    "e",
]
MAX_WITNESSES_PER_CLASS = 3
MAX_SCRIPT_BYTES = 400_000
MAX_FILE_VARIANTS = 60


# The budgets of a harvest step count the CPU time of its process (user + system, its
# threads and waited-for children; os.times, times(2)) and stop it by ITIMER_PROF, which
# counts the same (setitimer(2)): a wall-clock budget covered less on a loaded machine
# (issue 27). The pool's wall-clock timeout of the step is only a backstop (a step that
# waits without computing).
BUDGET_TIMER = signal.ITIMER_PROF
BUDGET_SIGNAL = signal.SIGPROF
# A run step that waits without computing (a forward that sleeps) is stopped in the step
# too, by a wall-clock timer (ITIMER_REAL) of WALL_PER_CPU x its CPU slice + WALL_SLACK s
# (procs.py, as a validation's backstop): inside the pool's backstop (8 x + 15 s,
# witness/harvest.ts WALL_PER_CPU), so the step still reports the constructions it
# recorded instead of being killed with them.


def arm_budget(cpu_seconds_left):
    """Arm the step's CPU-time timer and its wall-clock one (0 disarms both)."""
    signal.setitimer(BUDGET_TIMER, cpu_seconds_left)
    signal.setitimer(signal.ITIMER_REAL, cpu_seconds_left * WALL_PER_CPU + WALL_SLACK if cpu_seconds_left > 0 else 0)


# CPU seconds of this process so far (procs.self_cpu): its threads and waited-for children
cpu_seconds = self_cpu


class EntryTimeout(BaseException):
    pass


def _under(path, roots):
    return isinstance(path, str) and any(path.startswith(r.rstrip("/") + "/") for r in roots)


def repo_modules(roots):
    """Imported modules whose file is in one of the repository roots (as _under, with
    the roots' prefixes made once: every step asks this of every module imported)."""
    prefixes = tuple(r.rstrip("/") + "/" for r in roots)
    out = {}
    for name, m in list(sys.modules.items()):
        try:
            f = getattr(m, "__file__", None)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(f, str) and f.startswith(prefixes):
            out[name] = m
    return out


# module name -> (module, number of its names when scanned, the nn.Module subclasses it
# defines): module_classes. A harvest zygote fills it once (warm_scans) and its run steps
# fork with it, instead of each step scanning every module's names again (for timm
# 90 ms a step, 11% of its harvest's CPU). A module whose number of names changed since
# is scanned again.
_SCANS = {}


def module_classes(name, m, nn):
    """The nn.Module subclasses bound to a name of module `name` that it defines
    (`__module__` is its name; a nested class only through such a name); [] for a module
    whose names cannot be listed."""
    try:
        names = vars(m)
    except TypeError:
        return []
    hit = _SCANS.get(name)
    if hit is not None and hit[0] is m and hit[1] == len(names):
        return hit[2]
    out = []
    for obj in list(names.values()):
        try:
            if isinstance(obj, type) and getattr(obj, "__module__", None) == name and issubclass(obj, nn.Module):
                out.append(obj)
        except Exception:  # noqa: BLE001 - odd metaclasses
            continue
    _SCANS[name] = (m, len(names), out)
    return out


def scanned_modules():
    """The modules Recorder.install wraps the classes of: every module but torch's own
    packages other than torch.nn.modules (torch.nn's classes and those of the libraries
    the repository builds on: a torchvision ResNet handed to a block is then re-creatable
    from its construction)."""
    return [
        (name, m)
        for name, m in list(sys.modules.items())
        if not (name.startswith("torch.") and not name.startswith("torch.nn.modules."))
    ]


def warm_scans(nn, modules=()):
    """Scan every module now (in a harvest zygote, before its run steps fork), and
    `modules` (name -> module: the repository's, stashed away from sys.modules)."""
    for name, m in scanned_modules() + list(dict(modules).items()):
        module_classes(name, m, nn)


def repo_classes(mods, nn):
    """Every nn.Module subclass defined at the top level of a repository module."""
    out = {}
    for name, m in mods.items():
        for obj in module_classes(name, m, nn):
            if "." not in obj.__qualname__:
                out["%s.%s" % (name, obj.__qualname__)] = obj
    return out


def size_rank(name):
    """Position of the first model-size word of a name (tiny before base before large):
    families are sampled at their smallest registered size first."""
    toks = [t for t in re.split(r"[^a-z]+", name.lower()) if t]  # a registry key's quotes too: `['swin_t']`
    for i, w in enumerate(SIZE_WORDS):
        if w in toks:
            return i
    return SIZE_WORDS.index("medium")  # no size word: after the explicitly small ones


# ------------------------------------------------------------------ configurations


def argparse_defaults(path):
    """`dest -> default` of the add_argument calls of one script, read with ast (the
    script is not run): literal defaults, store_true -> False, store_false -> True,
    otherwise None; dest from the first long option (PEP 389 / argparse docs)."""
    try:
        if os.path.getsize(path) > MAX_SCRIPT_BYTES:
            return {}
        with open(path, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    out = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        ):
            continue
        opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest = None
        if "dest" in kw and isinstance(kw["dest"], ast.Constant):
            dest = kw["dest"].value
        else:
            longs = [o for o in opts if o.startswith("--")]
            pos = [o for o in opts if not o.startswith("-")]
            name = longs[0][2:] if longs else (pos[0] if pos else (opts[0].lstrip("-") if opts else None))
            dest = name.replace("-", "_") if name else None
        if not dest or not dest.isidentifier():
            continue
        value = None
        action = kw.get("action")
        act = action.value if isinstance(action, ast.Constant) else None
        if "default" in kw:
            try:
                value = ast.literal_eval(kw["default"])
            except (ValueError, SyntaxError, TypeError):
                value = None
        elif act == "store_true":
            value = False
        elif act == "store_false":
            value = True
        if isinstance(value, str) and re.match(r"^cuda(:\d+)?$", value):
            value = "cpu"  # the sandbox has no GPU
        if "nargs" in kw and isinstance(value, (str, int, float)) and value is not None and "default" not in kw:
            value = [value]
        out.setdefault(dest, value)
    return out


def script_configs(roots, limit=400):
    """argparse namespaces from the repository's scripts: one per file with at least
    three add_argument calls."""
    out = []
    seen = 0
    for root in roots:
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in ("__pycache__", "node_modules"))
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                seen += 1
                if seen > limit:
                    return out
                p = os.path.join(d, f)
                try:
                    with open(p, "rb") as fh:
                        if b"add_argument" not in fh.read(MAX_SCRIPT_BYTES):
                            continue
                except OSError:
                    continue
                defaults = argparse_defaults(p)
                if len(defaults) >= 3:
                    out.append({"kind": "argparse", "file": os.path.relpath(p, root), "fields": defaults})
    return out


def dataclass_configs(mods):
    """Dataclasses of the repository whose every field has a default (GPTConfig())."""
    out = []
    for name, m in mods.items():
        for _attr, obj in list(vars(m).items()):
            if not (isinstance(obj, type) and obj.__module__ == name and dataclasses.is_dataclass(obj)):
                continue
            fields = [f for f in dataclasses.fields(obj) if f.init]
            if all(
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING for f in fields
            ):
                out.append(
                    {
                        "kind": "dataclass",
                        "ref": [name, obj.__qualname__],
                        "fields": [f.name for f in fields],
                        "flags": [f.name for f in fields if f.default is False],
                    }
                )
    return out


def callees_taking(obj, param):
    """The repository functions and classes obj's code names (globals of its module)
    that take a parameter called `param`: where obj passes the object on."""
    g = getattr(sys.modules.get(getattr(obj, "__module__", "") or ""), "__dict__", {})
    for code in code_objects(obj):
        for n in code.co_names:
            v = g.get(n)
            if v is None or v is obj or not (inspect.isfunction(v) or isinstance(v, type)):
                continue
            try:
                if param in inspect.signature(v).parameters:
                    yield v
            except (TypeError, ValueError):
                continue


def reads_of(obj, param, depth=1):
    """Attribute names read as `param.x` in the source of obj (and, for a class, its
    methods): the fields a configuration object must have. A callable that passes the
    object on (`build(args)`) reads what the repository functions and classes it names
    read from a parameter of the same name (`depth` levels down)."""
    try:
        src = inspect.getsource(obj)
    except (OSError, TypeError):
        return set()
    out = set(re.findall(r"\b%s\.(\w+)" % re.escape(param), src))
    if depth > 0:
        for v in callees_taking(obj, param):
            out |= reads_of(v, param, depth - 1)
    return out


MAX_FLAG_VARIANTS = 6


def flag_variants(obj, param, config):
    """Boolean switches of a configuration that the callable reads and that are off by
    default (`--masks` store_true, `use_x: bool = False`): each turned on builds what the
    default configuration leaves out (a segmentation head), one variant per switch."""
    fields = config.get("fields")
    flags = config.get("flags") or ([k for k, v in fields.items() if v is False] if isinstance(fields, dict) else [])
    read = reads_of(obj, param)
    return [f for f in sorted(flags) if f in read][:MAX_FLAG_VARIANTS]


def source_of_callable(obj, param, depth=1):
    """The source of obj and of the repository callables it passes `param` to (as
    reads_of follows them)."""
    try:
        out = [inspect.getsource(obj)]
    except (OSError, TypeError):
        return []
    if depth > 0:
        for v in callees_taking(obj, param):
            out += source_of_callable(v, param, depth - 1)
    return out


def choice_variants(obj, param, config):
    """String settings the callable compares with a constant (`if args.dataset_file ==
    "coco_panoptic":`) other than their default: each value, with every off-by-default
    switch it reads turned on (the branch is often nested in one: a panoptic head only
    with masks), one variant per value."""
    fields = config.get("fields")
    if not isinstance(fields, dict):
        return []
    out = []
    for src in source_of_callable(obj, param):
        for field, value in re.findall(r"\b%s\.(\w+)\s*==\s*['\"]([^'\"]+)['\"]" % re.escape(param), src):
            if isinstance(fields.get(field), str) and fields[field] != value and (field, value) not in out:
                out.append((field, value))
    flags = {f: True for f in flag_variants(obj, param, config)}
    return [dict(flags, **{f: v}) for f, v in out[:MAX_FLAG_VARIANTS]]


def choose_configs(obj, param, configs):
    """Configurations for a config-like parameter, best first: those covering the most
    of the fields the callable reads from it (config objects by use)."""
    want = reads_of(obj, param)
    scored = []
    for i, c in enumerate(configs):
        fields = set(c["fields"]) if isinstance(c["fields"], list) else set(c["fields"])
        cover = len(want & fields)
        if want and cover == 0:
            continue
        # nothing read here (the callable passes it on): the fullest configuration
        scored.append((-cover, len(fields) if want else -len(fields), i))
    return [configs[i] for _, _, i in sorted(scored)[:2]]


def file_names(path):
    """Identifiers a (model) file mentions."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return set(re.findall(r"[A-Za-z_]\w*", f.read(200_000)))
    except OSError:
        return set()


def yaml_files(roots, limit=200):
    out = []
    for root in roots:
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for f in sorted(files):
                if f.endswith((".yaml", ".yml")):
                    out.append(os.path.join(d, f))
                    if len(out) >= limit:
                        return out
    return out


# --------------------------------------------------------------------------- list


def _own_type(ann):
    """An annotation naming a class that is neither builtin nor torch's nor typing's."""
    if ann is inspect.Parameter.empty or ann is None:
        return False
    if isinstance(ann, str):
        return bool(re.match(r"^[A-Z]\w*$", ann)) and ann not in ("Tensor", "Any", "Optional")
    mod = getattr(ann, "__module__", "") or ""
    return isinstance(ann, type) and mod.split(".")[0] not in ("builtins", "torch", "typing", "collections", "numpy")


def forward_keys(classes):
    """class id -> its module and forward's parameters (names and annotations), for
    classes defining a forward with parameters: interchangeable implementations of one
    interface in a module (sine and learned position embeddings) take the same inputs,
    so one's recorded inputs serve a sibling the model did not call (witness/harvest.ts)."""
    out = {}
    for cid, c in classes.items():
        f = c.__dict__.get("forward")
        if not inspect.isfunction(f):
            continue
        try:
            ps = list(inspect.signature(f).parameters.values())[1:]
        except (TypeError, ValueError):
            continue
        if not ps or not any(_own_type(p.annotation) for p in ps):
            # `forward(self, x)` says nothing of what x is: only a parameter annotated with
            # a class of its own (tensor_list: NestedTensor) makes two forwards one interface
            continue
        out[cid] = "%s|%s" % (
            c.__module__,
            ",".join(
                "%s:%s:%s" % (p.name, p.kind, p.annotation if p.annotation is not inspect.Parameter.empty else "")
                for p in ps
            ),
        )
    return out


def list_entries(cfg, torch):
    nn = torch.nn
    # entry points and classes of the repository itself ("own"); the other roots are
    # what it imports from (timm for Swin-Transformer)
    roots = cfg.get("own") or cfg["roots"]
    t0 = cpu_seconds()
    w0 = time.monotonic()
    import importlib

    failed = {}
    installed = InstalledImports(cfg["roots"])
    with installed:
        for name in cfg.get("modules") or []:
            # the import budget counts CPU seconds, as the steps' budgets do
            if cpu_seconds() - t0 > cfg.get("importBudget", 60):
                failed[name] = "import budget spent"
                continue
            try:
                importlib.import_module(name)
            except BaseException as e:  # noqa: BLE001 - a module that does not import is reported
                failed[name] = "%s: %s" % (type(e).__name__, str(e)[:200])
    mods = repo_modules(roots)
    classes = repo_classes(mods, nn)
    class_ids = {id(c): k for k, c in classes.items()}
    by_name = {}
    for k, c in classes.items():
        by_name.setdefault(c.__name__, []).append(k)
    configs = dataclass_configs(mods) + script_configs(roots) + CF.yacs_configs(roots)
    yamls = yaml_files(roots)
    entries = []
    seen = set()

    def reach(obj):
        return reachable(obj, class_ids, roots)

    def add(kind, module, qualname, obj, via=None):
        key = (module, qualname)
        if key in seen:
            return
        here = os.path.dirname(getattr(sys.modules.get(getattr(obj, "__module__", "") or ""), "__file__", "") or "")
        near = [f for f in yamls if here and f.startswith(here + "/")] or yamls
        plan = call_plan(obj, configs, near)
        if plan is None:
            return
        seen.add(key)
        files = [k for k, v in plan.items() if "file" in v]
        if files:
            # a model file by name: one entry point per file of the repository below the
            # module that reads it (the sizes and variants of its architectures)
            own = reach(obj)
            for f in sorted(near, key=lambda f: (size_rank(os.path.basename(f).rsplit(".", 1)[0]), f))[
                :MAX_FILE_VARIANTS
            ]:
                p2 = dict(plan)
                p2[files[0]] = {"file": f}
                # what the file builds: the repository classes it names (a model file
                # lists its layers by class name), so greedy coverage can choose files
                named = file_names(f) & by_name.keys()
                if not named:
                    continue
                r = sorted(({class_ids[id(obj)]} & set(own)) | {c for n in named for c in by_name[n]})
                entries.append(
                    {
                        "kind": kind,
                        "module": getattr(obj, "__module__", module),
                        "qualname": getattr(obj, "__qualname__", qualname),
                        "plan": p2,
                        "reach": r,
                        "rank": size_rank(os.path.basename(f)),
                        "variant": True,
                        "via": "%s.%s(%s=%r)"
                        % (
                            getattr(obj, "__module__", module),
                            getattr(obj, "__qualname__", qualname),
                            files[0],
                            os.path.relpath(f, here or "/"),
                        ),
                        "family": "%s.%s" % (module, qualname),
                    }
                )
            return
        e = {
            "kind": kind,
            "module": getattr(obj, "__module__", module),
            "qualname": getattr(obj, "__qualname__", qualname),
            "plan": plan,
            "reach": reach(obj),
            "rank": size_rank(qualname if via is None else via),
            "family": via.split("[")[0] if via else (getattr(obj, "__module__", module) if kind == "factory" else None),
        }
        if via:
            e["via"] = via
        entries.append(e)
        for pname, spec in plan.items():
            if "config" not in spec:
                continue
            for flag in flag_variants(obj, pname, spec["config"]):
                p2 = dict(plan)
                p2[pname] = dict(spec, set={flag: True})
                v = dict(
                    e,
                    plan=p2,
                    rank=e["rank"] + 1,
                    variant=True,
                    switch="%s.%s" % (pname, flag),
                    via="%s(%s.%s=True)" % (entry_name(e), pname, flag),
                    family=e["family"] or entry_name(e),
                )
                entries.append(v)
            for choice in choice_variants(obj, pname, spec["config"]):
                p2 = dict(plan)
                p2[pname] = dict(spec, set=choice)
                label = ",".join("%s.%s=%r" % (pname, k, x) for k, x in sorted(choice.items()))
                v = dict(
                    e,
                    plan=p2,
                    rank=e["rank"] + 2,
                    variant=True,
                    switch=label,
                    via="%s(%s)" % (entry_name(e), label),
                    family=e["family"] or entry_name(e),
                )
                entries.append(v)

    # `dict(type='X', ...)` config files: the class named X with the other keys
    for dc in CF.dict_type_configs(roots):
        for cid in by_name.get(dc["type"], [])[:1]:
            r = sorted({cid} | {c for n in dc["types"] for c in by_name.get(n, [])})
            entries.append(
                {
                    "kind": "config",
                    "module": classes[cid].__module__,
                    "qualname": classes[cid].__qualname__,
                    "plan": {k: {"value": v} for k, v in dc["kwargs"].items()},
                    "reach": r,
                    "rank": size_rank(os.path.basename(dc["file"]).rsplit(".", 1)[0]),
                    "family": dc["file"],
                    "via": "%s:%s(type=%r)" % (dc["file"], dc["name"], dc["type"]),
                }
            )
    # `if __name__ == "__main__":` snippets of library modules: what they build and run
    for name, m in sorted(mods.items()):
        f = getattr(m, "__file__", None)
        sn = CF.main_snippet(f) if f else None
        if sn is None:
            continue
        named = sorted(c for n in sn[1] for c in by_name.get(n, []))
        if named:
            entries.append(
                {
                    "kind": "snippet",
                    "module": name,
                    "qualname": "__main__",
                    "plan": {},
                    "reach": named,
                    "rank": size_rank(name),
                    "family": None,
                    "via": "%s (__main__ snippet)" % name,
                }
            )
    for name, m in sorted(mods.items()):
        for attr, obj in list(vars(m).items()):
            if isinstance(obj, dict) and 0 < len(obj) <= 5000:
                # a registry: a module-level dict of the repository's factories / classes
                vals = [
                    v
                    for v in obj.values()
                    if callable(v)
                    and _under(getattr(sys.modules.get(getattr(v, "__module__", "") or ""), "__file__", None), roots)
                ]
                if len(vals) >= max(1, len(obj) // 2):
                    for k, v in list(obj.items()):
                        if callable(v) and isinstance(k, str):
                            add(
                                "registry",
                                getattr(v, "__module__", name),
                                getattr(v, "__qualname__", k),
                                v,
                                via="%s.%s[%r]" % (name, attr, k),
                            )
                continue
            if (
                isinstance(obj, type)
                and obj.__module__ == name
                and issubclass(obj, nn.Module)
                and "." not in obj.__qualname__
            ):
                if not inspect.isabstract(obj):
                    add("class", name, obj.__qualname__, obj)
                    # classmethod constructors (`Model.from_name('...-b0')`, `from_config`):
                    # a factory of the class itself
                    for mname, v in list(vars(obj).items()):
                        if isinstance(v, classmethod) and CLASS_FACTORY.match(mname):
                            bound = getattr(obj, mname)
                            before = len(entries)
                            add("factory", name, "%s.%s" % (obj.__qualname__, mname), bound)
                            for e in entries[before:]:
                                e["reach"] = sorted(set(e["reach"]) | {class_ids[id(obj)]})
            elif (
                inspect.isfunction(obj)
                and obj.__module__ == name
                and FACTORY_NAME.search(attr)
                and not attr.startswith("_")
            ):
                add("factory", name, obj.__qualname__, obj)
    # the repository's tests and documented examples (harvest_docs.py)
    from . import harvest_docs as HD

    docs, notes = HD.doc_entries(cfg.get("repoRoot"), classes, by_name, HD.pytest_importable())
    entries.extend(docs)
    return {
        "classes": sorted(classes),
        "entries": entries,
        "configs": len(configs),
        "importFailures": failed,
        "preload": installed.names(),
        "forwardKeys": forward_keys(classes),
        "notes": notes,
        "ms": round((time.monotonic() - w0) * 1000, 1),
        "cpuMs": round((cpu_seconds() - t0) * 1000, 1),
    }


# The most modules a list step names for the run steps' zygote to import first
MAX_PRELOAD = 400


class InstalledImports:
    """The modules outside the repository's roots (installed packages, the standard
    library) that the repository's own code imports by absolute name while the list step
    imports its modules, and that the zygote had not imported already: what every run
    step's import of an entry module would otherwise import again in its own child (~4 s
    of CPU for a detection repository's pandas, OpenCV, matplotlib and SciPy, each step).
    The run steps' zygote imports them before the repository (zygote.py `preload`).

    Recorded at the import statement (builtins.__import__, Language Reference §7.11): the
    importer's globals name a file under the roots, the import is absolute (level 0), and
    the module it binds is not under the roots; `from pkg import sub` names `pkg.sub`
    when that is a module (importlib's _handle_fromlist imports it). importlib's
    `import_module` calls and imports run inside functions the list step never called are
    not seen: those run steps import them as before."""

    def __init__(self, roots):
        self.roots = [r for r in roots if r]
        self.prefixes = root_prefixes(self.roots)
        self.found = set()
        self.before = set()
        self.real = None

    def _outside(self, name):
        m = sys.modules.get(name)
        return m is not None and name not in self.before and not of_roots(m, self.prefixes)

    def __enter__(self):
        import builtins

        self.before = set(sys.modules)
        self.real = real = builtins.__import__

        def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
            mod = real(name, globals, locals, fromlist, level)
            try:
                if level == 0 and isinstance(globals, dict) and _under(globals.get("__file__"), self.roots):
                    if self._outside(name):
                        self.found.add(name)
                    for item in fromlist or ():
                        if isinstance(item, str) and item != "*" and self._outside(name + "." + item):
                            self.found.add(name + "." + item)
            except Exception:  # noqa: BLE001 - recording never changes the import's outcome
                pass
            return mod

        builtins.__import__ = recording_import
        return self

    def __exit__(self, *exc):
        import builtins

        builtins.__import__ = self.real
        return False

    def names(self):
        """The modules found, still outside the roots, in import order of their names
        (a package before its submodules)."""
        return sorted(n for n in self.found if self._outside(n) and n != "__main__")[:MAX_PRELOAD]


def reachable(obj, class_ids, roots):
    """Repository classes a callable can reach: the global names its code (and the code
    of what those name) reads, followed through the repository's functions and classes.
    A decorated function is followed into what it wraps (`__wrapped__`, set by
    functools.wraps) and into the functions and classes its closure holds: a registry's
    values are often such wrappers, whose own code names nothing of the model."""
    found, todo, seen_ids = set(), [obj], set()

    def ours(v):
        return id(v) in class_ids or (
            inspect.isfunction(v) and _under(getattr(sys.modules.get(v.__module__ or ""), "__file__", None), roots)
        )

    while todo and len(seen_ids) < 2000:
        o = todo.pop()
        if id(o) in seen_ids:
            continue
        seen_ids.add(id(o))
        if id(o) in class_ids:
            found.add(class_ids[id(o)])
            todo.extend(b for b in o.__mro__[1:] if id(b) in class_ids)  # its repository bases
        if inspect.isfunction(o):
            w = getattr(o, "__wrapped__", None)
            if w is not None and (inspect.isfunction(w) or isinstance(w, type)):
                todo.append(w)
            for cell in o.__closure__ or ():
                try:
                    v = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if ours(v):
                    todo.append(v)
        g = getattr(sys.modules.get(getattr(o, "__module__", "") or ""), "__dict__", {})
        for code in code_objects(o):
            for n in code.co_names:
                v = g.get(n)
                if v is not None and ours(v):
                    todo.append(v)
    return sorted(found)


def code_objects(o):
    """Code objects of a function or of a class's methods, nested code included."""
    out = []
    fns = []
    o = getattr(o, "__func__", o)  # a bound classmethod: its function
    if inspect.isfunction(o):
        fns = [o]
    elif isinstance(o, type):
        for k in ("__init__", "forward"):
            f = o.__dict__.get(k)
            if inspect.isfunction(f):
                fns.append(f)
    stack = [getattr(f, "__code__", None) for f in fns if inspect.isfunction(f)]
    while stack:
        c = stack.pop()
        if c is None:
            continue
        out.append(c)
        stack.extend(x for x in c.co_consts if hasattr(x, "co_names"))
    return out


def call_plan(obj, configs, yamls):
    """How to call an entry point: {param: spec} for the parameters it needs, or None
    when one cannot be satisfied. Specs: {"false": 1} for `pretrained`, a configuration
    (dataclass / argparse namespace) for a config-like parameter, a YAML file of the
    repository for a `cfg='x.yaml'` default."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    plan = {}
    missing = []  # required parameters no rule gives: a defaults function may (defaults_provider)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if re.match(r"^pretrained(_backbone)?$", p.name):
            plan[p.name] = {"value": False}
            continue
        if p.default is not inspect.Parameter.empty:
            if (
                isinstance(p.default, str)
                and p.default.endswith((".yaml", ".yml"))
                and not os.path.isabs(p.default)
                and yamls
            ):
                # a model file given by name: the repository's own files of that kind,
                # smallest first (one family's sizes)
                picks = sorted(yamls, key=lambda f: (size_rank(os.path.basename(f).rsplit(".", 1)[0]), f))[:1]
                plan[p.name] = {"file": picks[0]}
            continue
        if CONFIG_PARAM.match(p.name) or re.search(r"cfg|config", p.name, re.I):
            picks = choose_configs(obj, p.name, configs)
            if not picks:
                own = default_config_method(obj)
                if own is None:
                    missing.append(p.name)
                    continue
                picks = [own]
            c = picks[0]
            plan[p.name] = {"config": c}
            continue
        if p.annotation is bool or p.annotation == "bool":
            plan[p.name] = {"value": False}  # a required switch: off
            continue
        if NAME_PARAM.search(p.name):
            name = smallest_known_name(obj)
            if name is not None:
                plan[p.name] = {"value": name}
                continue
        if isinstance(obj, type) and MODEL_PARAM.match(p.name) and _module_annotation(p.annotation):
            # a wrapper of a whole model (an EMA copy, a feature extractor, an inference
            # wrapper): given a model the repository's own entry point built (witness/harvest.ts)
            plan[p.name] = {"instance": True}
            continue
        missing.append(p.name)
    if missing:
        # only a factory function takes the defaults dict (a class is reached through it)
        spec = defaults_provider(obj, sig, missing, plan) if inspect.isfunction(obj) else None
        if spec is None:
            return None
        plan["**"] = spec
    return plan


DEFAULTS_FN = re.compile(r"(^|_)defaults?($|_)", re.I)


def defaults_provider(obj, sig, missing, plan):
    """A module-level function of the callable's module that returns a dict of defaults
    its required parameters are keys of: the `create_model(**model_defaults())`
    convention (keyword unpacking of a mapping, Language Reference 6.3.4 "Calls"). The
    function is named for defaults (`*_defaults`, `default_*`), takes no argument and
    is called here, in the sandbox's list step; among those whose keys cover every
    missing parameter, the one giving the most of the callable's parameters. A plan spec
    {"defaults": [module, qualname], "keys": [...]} (the keys the callable takes, those
    the plan gives itself left out), or None."""
    fn = getattr(obj, "__func__", obj)
    mod = sys.modules.get(getattr(fn, "__module__", "") or "")
    if mod is None:
        return None
    top = mod.__name__.split(".")[0]
    takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    named = {p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    best = None
    for name, f in sorted(vars(mod).items()):
        if not (inspect.isfunction(f) and DEFAULTS_FN.search(name) and (f.__module__ or "").split(".")[0] == top):
            continue
        try:
            fsig = inspect.signature(f)
        except (TypeError, ValueError):
            continue
        if any(
            p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in fsig.parameters.values()
        ):
            continue
        d = _defaults_of(f)
        if not isinstance(d, dict) or not all(m in d for m in missing):
            continue
        keys = sorted(k for k in d if isinstance(k, str) and (takes_any or k in named) and k not in plan)
        if best is None or len(keys) > len(best[1]):
            best = ((f.__module__, f.__qualname__), keys)
    if best is None:
        return None
    return {"defaults": list(best[0]), "keys": best[1]}


_DEFAULTS_SEEN = {}


def _defaults_of(f):
    """What a defaults function returns (called once per function), or None when it raises."""
    if id(f) not in _DEFAULTS_SEEN:
        try:
            _DEFAULTS_SEEN[id(f)] = f()
        except Exception:  # noqa: BLE001 - a defaults function that fails gives no plan
            _DEFAULTS_SEEN[id(f)] = None
    return _DEFAULTS_SEEN[id(f)]


DEFAULT_CONFIG_METHOD = re.compile(r"^_?(get_)?default_(config|cfg|conf|hparams|params|args)$|^get_(config|cfg)$")
NAME_PARAM = re.compile(r"(^|_)(name|arch|variant|model_type|preset|version)$")


def default_config_method(cls):
    """A class's own default configuration, when the class makes one: a classmethod or
    staticmethod named like `get_default_config` that takes no argument (minGPT's
    `GPT.get_default_config()` then `GPT(config)`). A configuration spec, or None."""
    if not isinstance(cls, type):
        return None
    for klass in cls.__mro__:
        for name, v in vars(klass).items():
            if isinstance(v, (classmethod, staticmethod)) and DEFAULT_CONFIG_METHOD.match(name):
                try:
                    sig = inspect.signature(getattr(cls, name))
                except (TypeError, ValueError):
                    continue
                if all(
                    p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                    for p in sig.parameters.values()
                ):
                    return {"kind": "method", "ref": [cls.__module__, "%s.%s" % (cls.__qualname__, name)], "fields": []}
    return None


def smallest_known_name(obj):
    """The name a `name` / `arch` / `variant` parameter takes, from the module-level
    collection of strings the callable's code checks it against (`if model_name not in
    VALID_MODELS`, a dict of per-name settings): its smallest member (size words, then
    numbers: `-b0` before `-b7`), or None."""
    fn = getattr(obj, "__func__", obj)
    g = getattr(sys.modules.get(getattr(fn, "__module__", "") or ""), "__dict__", {})
    best = None
    for code in code_objects(fn):
        for n in code.co_names:
            v = g.get(n)
            if isinstance(v, dict):
                v = list(v.keys())
            if (
                isinstance(v, (list, tuple, set, frozenset))
                and 1 < len(v) <= 2000
                and all(isinstance(x, str) for x in v)
            ):
                for x in v:
                    num = re.findall(r"\d+", x)
                    k = (size_rank(x), int(num[0]) if num else 0, len(x), x)
                    if best is None or k < best[0]:
                        best = (k, x)
    return best[1] if best else None


MODEL_PARAM = re.compile(r"^(model|module|net|network|base|base_model|backbone|teacher|student|wrapped|inner)$")
WRAPPED_PARAM = re.compile(
    r"^(model|module|net|network|base_model|teacher|student|wrapped|inner)$"
)  # runs the whole model


def _module_annotation(ann):
    """No annotation, or one naming nn.Module (or a subclass): a model instance fits."""
    if ann is inspect.Parameter.empty:
        return True
    try:
        import torch.nn as nn

        return isinstance(ann, type) and issubclass(ann, nn.Module) or "Module" in str(ann)
    except Exception:  # noqa: BLE001
        return False


# ---------------------------------------------------------------------------- run


class Recorder:
    """Constructor and forward wrappers on every class of the repository and of
    torch.nn, installed in the harvest child only."""

    def __init__(self, torch, classes, roots):
        self.torch = torch
        self.built = {}  # id(instance) -> (instance, class, args, kwargs)
        self.order = []
        self.calls = {}  # id(instance) -> [(args, kwargs, out_shapes)] (encoded)
        self.active = set()
        self.repo = classes
        self.repo_types = set(classes.values())
        self.roots = roots
        self.patched = []
        self.done = set()  # ids of instances whose outermost __init__ returned
        self.meta = False  # a shapes-only run on the meta device is under way
        self.too_slow = set()  # ids of instances whose forward was running when the budget ran out
        self.bases = []  # [id, base class, args, kwargs, returned] of super().__init__ calls
        self.current = None  # the test or example running (harvest_docs): what built an instance
        self.origin = {}  # id(instance) -> the test or example that built it
        self.no_kernel = set()  # ids of instances whose recorded call raised for want of a CPU kernel
        self.running = None  # during a counted shapes-only run: id(instance) -> forwards of it under way

    def install(self, nn):
        import torch.nn.modules as nnm

        targets = set(self.repo.values())
        for name, m in scanned_modules():
            targets.update(module_classes(name, m, nn))
        del nnm
        for cls in targets:
            if "__init__" in cls.__dict__:
                self._patch_init(cls)
            if cls in self.repo.values() and "forward" in cls.__dict__:
                self._patch_forward(cls)
        self.nn = nn

    def watch_imports(self):
        """Wrap the classes of repository modules imported after install() as well: a test
        that imports its layer inside the test function (`from pkg.ops import Layer` in
        the body, the usual way to keep collection fast or an optional dependency out of
        it) builds a class no module imported at collection defined. A finder first on
        sys.meta_path (PEP 451) asks the finders after it for the spec of each import and,
        for a Python source file under the repository's roots, wraps that loader
        instance's exec_module: once the module body has run, its classes get the
        wrappers, before the statement that imported it returns."""
        rec = self

        class LateImports(object):
            busy = False

            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if cls.busy:
                    return None
                cls.busy = True
                try:
                    for f in list(sys.meta_path):
                        if f is cls or not hasattr(f, "find_spec"):
                            continue
                        spec = f.find_spec(name, path, target)
                        if spec is not None:
                            break
                    else:
                        return None
                finally:
                    cls.busy = False
                loader = spec.loader
                origin = spec.origin or ""
                if loader is None or not origin.endswith(".py") or not _under(origin, rec.roots):
                    return spec
                orig_exec = getattr(loader, "exec_module", None)
                if orig_exec is None or getattr(loader, "_nnrag_late", False):
                    return spec

                def exec_module(module):
                    orig_exec(module)
                    rec.adopt(module)

                try:
                    loader.exec_module = exec_module  # this module's loader instance only
                    loader._nnrag_late = True
                except (AttributeError, TypeError):
                    pass
                return spec

        sys.meta_path.insert(0, LateImports)
        return LateImports

    def adopt(self, module):
        """The wrappers on the classes of a repository module imported after install()."""
        try:
            new = repo_classes({module.__name__: module}, self.nn)
        except Exception:  # noqa: BLE001 - recording never changes what the tests do
            return
        for k, cls in new.items():
            if k in self.repo or cls in self.repo_types:
                continue
            self.repo[k] = cls
            self.repo_types.add(cls)
            if "__init__" in cls.__dict__:
                self._patch_init(cls)
            if "forward" in cls.__dict__:
                self._patch_forward(cls)
        # harvest_docs caches the class keys per recorder
        self.__dict__.pop("_class_keys", None)

    def _patch_init(self, cls):
        orig = cls.__dict__["__init__"]
        rec = self

        @functools.wraps(orig)
        def __init__(self, *args, **kwargs):
            k = id(self)
            base = None
            if k not in rec.built:
                rec.built[k] = (self, type(self), args, kwargs)
                rec.order.append(k)
                if rec.current:
                    rec.origin[k] = rec.current
                outer = True
            else:
                outer = False
                if cls is not type(self) and cls in rec.repo_types:
                    # super().__init__(...) of a repository base class: the base's own
                    # construction, a witness of the base class
                    base = [k, cls, args, kwargs, False]
                    rec.bases.append(base)
            orig(self, *args, **kwargs)
            # only completed constructions are witnesses: one whose __init__ raised
            # neither covers its class nor is tried in validation
            if outer:
                rec.done.add(k)
            elif base is not None:
                base[4] = True

        cls.__init__ = __init__
        self.patched.append((cls, "__init__", orig))

    def _patch_forward(self, cls):
        orig = cls.__dict__["forward"]
        rec = self

        @functools.wraps(orig)
        def forward(self, *args, **kwargs):
            running = rec.running
            if running is None:
                return record(self, args, kwargs)
            # a counted shapes-only run (meta_forward): the work done under way of each
            # instance's forward is counted for it, recorded or not
            k = id(self)
            running[k] = running.get(k, 0) + 1
            try:
                return record(self, args, kwargs)
            finally:
                running[k] -= 1
                if not running[k]:
                    del running[k]

        def record(self, args, kwargs):
            k = id(self)
            if (
                k in rec.active
                or type(self) not in rec.repo_types
                or len(rec.calls.get(k, ())) >= 1
                or (rec.meta and k in rec.too_slow)
            ):
                return orig(self, *args, **kwargs)
            try:
                enc = (V.encode(list(args), rec.built), {n: V.encode(v, rec.built) for n, v in kwargs.items()})
            except V.Unencodable:
                enc = None
            except Exception:  # noqa: BLE001 - recording never changes what the model does
                enc = None
            rec.active.add(k)
            try:
                out = orig(self, *args, **kwargs)
            except BaseException as e:
                if isinstance(e, EntryTimeout) or is_memory_error(e):
                    # running when the budget or the memory ran out: too expensive to
                    # validate on these inputs, so the shapes-only run does not record it
                    rec.too_slow.add(k)
                if rec.meta and enc is not None:
                    # a shapes-only run stops at an operation meta tensors cannot do
                    # (data-dependent): the inputs that reached this module still hold
                    rec.calls.setdefault(k, []).append((enc[0], enc[1], []))
                elif enc is not None and NO_CPU_KERNEL.search(str(e)):
                    # the inputs reached a compiled operator that has no CPU kernel (a
                    # test of a GPU-only operator run on the CPU): they passed the
                    # layer's own checks, and validation on them says what the block
                    # needs (native-op-no-cpu), not a shape error of guessed inputs
                    rec.calls.setdefault(k, []).append((enc[0], enc[1], []))
                    rec.no_kernel.add(k)
                raise
            finally:
                rec.active.discard(k)
            if enc is not None:
                shapes = [list(t.shape) for t in flatten_tensors(out, rec.torch)]
                rec.calls.setdefault(k, []).append((enc[0], enc[1], shapes))
            return out

        cls.forward = forward
        self.patched.append((cls, "forward", orig))

    def witnesses(self, entry_name):
        """Per repository class id: witnesses of the instances built (arguments as
        called), with the first call's inputs and output shapes when one was recorded."""
        by_class = {}
        ids = {c: k for k, c in self.repo.items()}
        todo = [(k,) + self.built[k] for k in self.order if k in self.done]
        for k, cls, args, kwargs, ok in self.bases:
            if ok and k in self.done:
                todo.append((k, self.built[k][0], cls, args, kwargs))
        for k, inst, cls, args, kwargs in todo:
            cid = ids.get(cls)
            if cid is None:
                continue
            lst = by_class.setdefault(cid, [])
            try:
                w = {
                    "args": [V.encode(a, self.built) for a in args],
                    "kwargs": {n: V.encode(v, self.built) for n, v in kwargs.items()},
                }
            except V.Unencodable as e:
                lst.append({"unencodable": str(e)[:100]})
                continue
            except Exception as e:  # noqa: BLE001
                lst.append({"unencodable": "%s: %s" % (type(e).__name__, str(e)[:80])})
                continue
            try:
                w["params"] = int(sum(p.numel() for p in inst.parameters()))
            except Exception:  # noqa: BLE001
                w["params"] = 0
            calls = self.calls.get(k)
            if calls and cls is not type(inst) and not _inherits_forward(type(inst), cls):
                calls = None  # the subclass's own forward received these inputs, not the base's
            if calls:
                a, kw, shapes = calls[0]
                w["inputs"] = {"args": a, "kwargs": kw}
                w["outputs"] = shapes
                if k in self.no_kernel:
                    w["raised"] = "native-op-no-cpu"
            w["entry"] = self.origin.get(k, entry_name)
            lst.append(w)
        out = {}
        for cid, lst in by_class.items():
            good = [w for w in lst if "unencodable" not in w]
            uniq, seen = [], set()
            # called ones first, then smallest
            for w in sorted(good, key=lambda w: ("inputs" not in w, w["params"], V.size_of(w.get("inputs")))):
                key = repr((w["args"], w["kwargs"], w.get("inputs")))
                if key in seen:
                    continue
                seen.add(key)
                uniq.append(w)
            out[cid] = {
                "witnesses": uniq[:MAX_WITNESSES_PER_CLASS],
                "built": len(lst),
                "called": sum(1 for w in good if "inputs" in w),
                "unencodable": sorted({w["unencodable"] for w in lst if "unencodable" in w})[:3],
            }
        return out


def _inherits_forward(sub, base):
    """Whether `sub` runs the forward `base` runs (defined in base or above it)."""
    owner = next((c for c in sub.__mro__ if "forward" in c.__dict__), None)
    return owner is not None and owner in base.__mro__


class _NoWeights(dict):
    """What torch.hub's download functions give during a harvest: no weights."""


def no_downloads(torch):
    """Pretrained weights are not fetched (no network; shapes, not weights, make a
    witness): torch.hub.load_state_dict_from_url (also where a module imported it by
    name, as torchvision does, and torch.utils.model_zoo.load_url) gives an empty
    mapping that load_state_dict ignores. Returns a function that puts everything back
    (validation rebuilds a witness's nested modules under it, then undoes it)."""
    import torch.hub as hub

    def load_state_dict_from_url(*a, **k):
        return _NoWeights()

    def download_url_to_file(*a, **k):
        raise OSError("no network during a witness harvest")

    repl = {
        id(hub.load_state_dict_from_url): load_state_dict_from_url,
        id(hub.download_url_to_file): download_url_to_file,
    }
    undo = []
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for k in ("load_state_dict_from_url", "download_url_to_file", "load_url"):
            v = d.get(k)
            if v is not None and id(v) in repl:
                try:
                    setattr(m, k, repl[id(v)])
                    undo.append((m, k, v))
                except Exception:  # noqa: BLE001
                    pass
    orig = torch.nn.Module.load_state_dict

    def load_state_dict(self, state_dict, *a, **k):
        if isinstance(state_dict, _NoWeights):
            return None
        return orig(self, state_dict, *a, **k)

    torch.nn.Module.load_state_dict = load_state_dict
    undo.append((torch.nn.Module, "load_state_dict", orig))

    def restore():
        for m, k, v in reversed(undo):
            try:
                setattr(m, k, v)
            except Exception:  # noqa: BLE001
                pass

    return restore


def repository_config(spec):
    """The configuration object a yacs-style defaults file builds (`_C = CN()` filled by
    `_C.MODEL.X = …`), imported from the repository and copied (its `clone()`, else a deep
    copy): an instance of the repository's own configuration class, which code may
    dispatch on (`isinstance(cfg, CfgNode)` in a constructor decorated to take a
    configuration); None when the module does not import or the name is no mapping (the
    statically read tree is used then)."""
    import importlib

    f = (spec.get("file") or "").replace(os.sep, "/")
    if not f.endswith(".py"):
        return None
    name = f[: -len(".py")].replace("/", ".")
    if name.endswith(".__init__"):
        name = name[: -len(".__init__")]
    try:
        m = importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - a module that does not import
        return None
    mf = (getattr(m, "__file__", None) or "").replace(os.sep, "/")
    if not mf.endswith(f):
        return None  # another module of that name
    obj = getattr(m, spec.get("root") or "", None)
    if not isinstance(obj, dict):
        return None
    try:
        clone = getattr(obj, "clone", None)
        out = clone() if callable(clone) else copy.deepcopy(obj)
    except Exception:  # noqa: BLE001
        return None
    cpu_devices(out)
    return out


def cpu_devices(node, depth=0):
    """A device that names CUDA read as CPU, in place (the sandbox has none), as the
    statically read tree's literals are (configs._literal)."""
    if depth > 20:
        return
    for k, v in list(node.items()):
        if isinstance(v, str) and re.match(r"^cuda(:\d+)?$", v):
            node[k] = "cpu"
        elif isinstance(v, dict):
            cpu_devices(v, depth + 1)


def merge_config(node, overrides):
    """`node` with `overrides` (a nested dict) set key by key, sub-nodes kept as they are."""
    for k, v in overrides.items():
        if isinstance(v, dict) and isinstance(node.get(k), dict):
            merge_config(node[k], v)
        else:
            node[k] = v
    return node


def make_config(spec, torch, overrides=None):
    import importlib

    if spec["kind"] == "dataclass":
        mod, qn = spec["ref"]
        obj = importlib.import_module(mod)
        for p in qn.split("."):
            obj = getattr(obj, p)
        return obj(**(overrides or {}))
    if spec["kind"] == "argparse":
        import argparse

        return argparse.Namespace(**dict(spec["fields"], **(overrides or {})))
    if spec["kind"] == "method":
        # the class's own default configuration (default_config_method), settings applied
        mod, qn = spec["ref"]
        obj = importlib.import_module(mod)
        for p in qn.split("."):
            obj = getattr(obj, p)
        c = obj()
        for k, v in (overrides or {}).items():
            setattr(c, k, v)
        return c
    if spec["kind"] == "yacs":
        own = repository_config(spec)
        if own is not None:
            return merge_config(own, overrides or {})
        return CF.to_attrdict(dict(spec["tree"], **(overrides or {})))
    raise ValueError("unknown configuration kind %r" % spec["kind"])


def model_hints(model, built, torch, depth=0):
    """Input-size facts of a whole model from its own settings: its constructor
    arguments (and the fields of configuration objects among them), then its attributes,
    then those of a model it wraps (a module passed to its constructor)."""
    hints = {}
    rec = built.get(id(model))
    sources = []
    if rec is not None:
        _, cls, args, kwargs = rec
        try:
            bound = inspect.signature(cls.__init__).bind_partial(model, *args, **kwargs)
            sources.append({k: v for k, v in bound.arguments.items() if k != "self"})
            for p in inspect.signature(cls.__init__).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    sources[-1].setdefault(p.name, p.default)
        except (TypeError, ValueError):
            sources.append(dict(kwargs))
        for v in list(sources[0].values()):
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                sources.append({f.name: getattr(v, f.name) for f in dataclasses.fields(v)})
            elif hasattr(v, "__dict__") and type(v).__name__ == "Namespace":
                sources.append(vars(v))
    sources.append({k: v for k, v in vars(model).items() if not k.startswith("_")})
    keys = {
        "img": ("img_size", "image_size", "input_size", "image_resolution", "resolution", "input_resolution", "imgsz"),
        "chans": ("in_chans", "in_channels", "in_ch", "input_channels", "ch", "num_channels", "in_chs"),
        "vocab": ("vocab_size", "n_vocab", "num_tokens", "vocab"),
        "seq": (
            "block_size",
            "context_length",
            "max_seq_len",
            "n_positions",
            "max_position_embeddings",
            "seq_len",
            "n_ctx",
        ),
    }
    for src in sources:
        for kind, names in keys.items():
            if kind in hints:
                continue
            for n in names:
                v = src.get(n)
                if isinstance(v, (list, tuple)) and len(v) >= 1 and all(isinstance(x, int) for x in v):
                    v = v[0] if kind == "img" else None
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    hints[kind] = v
                    break
    if depth == 0 and rec is not None and not hints:
        # a wrapper of a whole model (the parameter says so: `model`, `module`, ...), not
        # a model built from parts (detr's `backbone` has 2048 output channels)
        for k, v in list(sources[0].items()):
            if WRAPPED_PARAM.match(k) and isinstance(v, torch.nn.Module) and id(v) in built:
                hints = model_hints(v, built, torch, 1)
                if hints:
                    break
    return hints


CLIP_FRAMES = 16  # frames of a video clip (the common clip length of video models)


def first_conv(model, torch):
    """The model's first convolution (registration order: a stem is registered first),
    or None."""
    nn = torch.nn
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            return m
    return None


def input_candidates(model, hints, torch):
    """Whole-model inputs from its own defaults, smallest first. A model whose first
    convolution is 3-d (video: N, C, T, H, W) or 1-d (signals: N, C, L) is first given an
    input of that rank; its input channels are that convolution's unless the model names
    them."""
    cands = []
    if "vocab" in hints:
        t = min(hints.get("seq", 16), 16)
        cands.append([torch.randint(0, hints["vocab"], (1, t))])
    conv = first_conv(model, torch)
    c = hints.get("chans", conv.in_channels if conv is not None and conv.in_channels <= 16 else 3)
    sizes = [hints["img"]] if "img" in hints and hints["img"] <= 1024 else []
    sizes += [s for s in (64, 224) if s not in sizes]
    if isinstance(conv, torch.nn.Conv3d):
        cands += [[torch.randn(1, c, CLIP_FRAMES, s, s)] for s in sizes]
    elif isinstance(conv, torch.nn.Conv1d):
        cands += [[torch.randn(1, c, s)] for s in sizes]
    for s in sizes:
        cands.append([torch.randn(1, c, s, s)])
    return cands


def structured_candidates(model, hints, torch):
    """Inputs of a whole model whose forward reads its first parameter as a list of dicts
    or a dict (`for record in batched_input: record["image"]`, structured.py): that
    structure from the keys its code reads, for one 64-pixel image; its other required
    parameters False when annotated bool, else no candidate."""
    try:
        params = [
            p
            for p in inspect.signature(model.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty
        ]
    except (TypeError, ValueError):
        return []
    if not params:
        return []
    u = structured.usage(structured.related_modules(model), params[0].name)
    if u is None:
        return []
    args = [structured.structured_value(u[0], u[1], 1, (64, 64), torch, torch.Generator().manual_seed(1))]
    for p in params[1:]:
        if p.annotation is bool or p.annotation == "bool":
            args.append(False)
        else:
            return []
    return [args]


# torch's CPU allocator refusing an allocation (under RLIMIT_AS), in a RuntimeError's text
ALLOCATOR_REFUSED = r"can't allocate memory|DefaultCPUAllocator|not enough memory"


def is_memory_error(e):
    """MemoryError, or torch's CPU allocator refusing (under RLIMIT_AS)."""
    return isinstance(e, MemoryError) or (
        isinstance(e, RuntimeError) and re.search(ALLOCATOR_REFUSED, str(e)) is not None
    )


def to_meta(v, torch, depth=0):
    if isinstance(v, torch.Tensor):
        return v.to("meta")
    if depth > 4:
        return v
    if isinstance(v, list):
        return [to_meta(x, torch, depth + 1) for x in v]
    if isinstance(v, tuple):
        return tuple(to_meta(x, torch, depth + 1) for x in v)
    if isinstance(v, dict):
        return {k: to_meta(x, torch, depth + 1) for k, x in v.items()}
    return v


# An instance whose forward does at least this share of the model's work (counted in the
# shapes-only run) is too expensive to validate on the inputs that were too costly for
# the model: its recorded call is dropped (meta_forward).
HEAVY_SHARE = 0.5


def _macs_rules(torch):
    """Per matmul-like torch function, an estimate of its multiply-adds from its operands'
    and output's shapes (a GEMM of an [m, k] and a [k, n] operand: m*n*k): the arithmetic
    that dominates a model's forward, where the elements an operation returns (its output's
    size) undercount it by the contracted dimension. Functions a torch version lacks are
    left out."""
    F = torch.nn.functional
    T = torch.Tensor

    def numel(out):
        return out.numel() if isinstance(out, torch.Tensor) else 0

    def last(i):
        # out * K, K the last dimension of the left operand (matmul, mm, bmm, linear: the
        # weight's in_features, addmm / baddbmm: the first product operand)
        def rule(args, kwargs, out):
            a = args[i] if len(args) > i else None
            if not isinstance(a, torch.Tensor) or a.dim() == 0:
                return numel(out)
            return numel(out) * int(a.shape[-1])

        return rule

    def conv(args, kwargs, out):
        # each output element: in_channels / groups x kernel size multiply-adds (weight
        # [out, in / groups, *kernel])
        w = args[1] if len(args) > 1 else kwargs.get("weight")
        if not isinstance(w, torch.Tensor) or w.dim() == 0 or not w.shape[0]:
            return numel(out)
        return numel(out) * (w.numel() // int(w.shape[0]))

    def conv_transpose(args, kwargs, out):
        # each input element: out_channels / groups x kernel size (weight [in, out / groups, *kernel])
        x = args[0] if args else kwargs.get("input")
        w = args[1] if len(args) > 1 else kwargs.get("weight")
        if not isinstance(w, torch.Tensor) or not isinstance(x, torch.Tensor) or w.dim() == 0 or not w.shape[0]:
            return numel(out)
        return x.numel() * (w.numel() // int(w.shape[0]))

    def convolution(args, kwargs, out):
        transposed = args[6] if len(args) > 6 else kwargs.get("transposed", False)
        return conv_transpose(args, kwargs, out) if transposed else conv(args, kwargs, out)

    def addbmm(args, kwargs, out):
        b = args[1] if len(args) > 1 else kwargs.get("batch1")
        if not isinstance(b, torch.Tensor) or b.dim() != 3:
            return numel(out)
        return numel(out) * int(b.shape[0]) * int(b.shape[2])

    def rmatmul(args, kwargs, out):
        return last(1)(args, kwargs, out)

    def einsum(args, kwargs, out):
        # the product of every index's size (ellipsis dimensions: the largest operand's)
        eq = args[0] if args and isinstance(args[0], str) else None
        ops = list(args[1:])
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
        if eq is None or not all(isinstance(o, torch.Tensor) for o in ops):
            return numel(out)
        terms = eq.split("->")[0].replace(" ", "").split(",")
        if len(terms) != len(ops):
            return numel(out)
        sizes, ell = {}, 1
        for term, o in zip(terms, ops):
            shape = [int(x) for x in o.shape]
            if "..." in term:
                pre, post = term.split("...", 1)
                n_ell = len(shape) - len(pre) - len(post)
                e = 1
                for x in shape[len(pre) : len(pre) + max(0, n_ell)]:
                    e *= x
                ell = max(ell, e)
                pairs = list(zip(pre, shape)) + list(zip(post, shape[len(shape) - len(post) :]))
            else:
                pairs = zip(term, shape)
            for c, x in pairs:
                sizes[c] = max(sizes.get(c, 1), x)
        n = ell
        for s in sizes.values():
            n *= s
        return max(n, numel(out))

    def tensordot(args, kwargs, out):
        # out x K with K^2 = |a| |b| / |out|
        a = args[0] if args else None
        b = args[1] if len(args) > 1 else None
        o = numel(out)
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or not o:
            return o
        return int(o * (a.numel() * b.numel() / o) ** 0.5)

    def sdpa(args, kwargs, out):
        # q [..., L, E], k [..., S, E], v [..., S, Ev]: L x S x (E + Ev) per batch and head
        q, k, v = (list(args[:3]) + [kwargs.get(n) for n in ("query", "key", "value")[len(args) :]])[:3]
        if not all(isinstance(t, torch.Tensor) and t.dim() >= 2 for t in (q, k, v)):
            return numel(out)
        return (q.numel() // max(1, int(q.shape[-1]))) * int(k.shape[-2]) * (int(q.shape[-1]) + int(v.shape[-1]))

    def mha(args, kwargs, out):
        # query [L, N, E], key / value [S, N, E]: the q, k, v and output projections (E x E
        # each) and the attention itself (2 x L x S x E per batch element)
        q, k, v = args[:3] if len(args) >= 3 else (kwargs.get("query"), kwargs.get("key"), kwargs.get("value"))
        if not all(isinstance(t, torch.Tensor) and t.dim() >= 2 for t in (q, k, v)):
            return numel(out)
        e = int(q.shape[-1])
        lq, sk, sv = q.numel() // e, k.numel() // e, v.numel() // max(1, int(v.shape[-1]))
        return 2 * lq * e * e + (sk + sv) * e * e + 2 * lq * int(k.shape[0]) * e

    rules = {}
    for owner, names, rule in (
        (torch, ("matmul", "mm", "bmm", "mv", "dot", "inner"), last(0)),
        (T, ("matmul", "__matmul__", "mm", "bmm", "mv", "dot", "inner"), last(0)),
        (T, ("__rmatmul__",), rmatmul),
        (torch, ("addmm", "baddbmm", "addmv"), last(1)),
        (T, ("addmm", "baddbmm", "addmv", "addmm_", "baddbmm_"), last(1)),
        (torch, ("addbmm",), addbmm),
        (T, ("addbmm",), addbmm),
        (F, ("linear", "bilinear"), last(0)),
        (torch, ("conv1d", "conv2d", "conv3d"), conv),
        (F, ("conv1d", "conv2d", "conv3d"), conv),
        (torch, ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"), conv_transpose),
        (F, ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"), conv_transpose),
        (torch, ("convolution",), convolution),
        (torch, ("einsum",), einsum),
        (torch, ("tensordot",), tensordot),
        (F, ("scaled_dot_product_attention",), sdpa),
        (F, ("multi_head_attention_forward",), mha),
    ):
        for n in names:
            f = getattr(owner, n, None)
            if f is not None:
                rules[f] = rule
    return rules


# The real forwards' work budget per second of the step's CPU budget (work_counter): a
# step of 30 s may count 1.5e11 (multiply-adds and elements) in its real forwards.
# Measured on the dev set (timm, detr, segment-anything, Swin, yolov9, CLIP, nanoGPT;
# torch 2.15, one 2-core x86 machine): forwards dominated by large matmuls and
# convolutions count 1.8-3.2e10 per second of CPU, forwards of many small operations
# 4-7e9. Every forward that completed there counted at most 6.2e10 (timm's
# eva_large_patch14_196; detr, yolov9, Swin, nanoGPT at most 4.6e9), while the four that
# their CPU slice stopped or nearly stopped (Gemma4 ViTs, VisionTransformerSAM on a
# 1024 x 1024 image: 3.2-4.0e11 at 15-19 s of CPU) now stop after 6-8 s of CPU, a third
# to a half of their slice. The budget is a fixed rate, never a measured speed: the same
# forward stops at the same operation on a faster or a slower machine.
FORWARD_WORK_PER_SECOND = 5e9


# how a step's reported error tells a stop by the work budget from one by the CPU timer
# (budget_stop)
WORK_STOP = "timeout: the real forward's counted work passed its share"


class WorkBudgetSpent(EntryTimeout):
    """The real forward's counted work passed its budget (work_counter)."""


class MemoryBudgetSpent(EntryTimeout):
    """The bytes of live tensor storages passed their budget (work_counter's `memory_limit`)."""


# how a step's reported error tells a stop by the counted memory budget (budget_stop)
MEMORY_STOP = "memory: the live tensors passed their budget"


def work_counter(torch, rec=None, limit=None, op_work=0, memory_limit=None, on_limit=None, backward=0):
    """A TorchFunctionMode (torch.overrides, torch >= 1.12; None without one) that counts the
    work of a forward, a machine-independent measure of it: per torch function and tensor
    method called, the multiply-adds of a matmul-like one (linear, matmul, conv, einsum,
    attention: _macs_rules, from the shapes), else the elements it returns, plus `op_work`
    per call (the cost of calling an operation at all, which the elements of a small
    tensor undercount: a test session's many small operations). Meta tensors give the same
    count without computing anything. With `backward` (a test session), a call of autograd
    (`Tensor.backward`, `torch.autograd.backward` / `grad`), whose operations run in C++
    unseen, counts `backward` x the work of the operations whose results required grad
    since the last such call: the gradients of a matmul's inputs and of its weights are two
    products the size of the forward's.

    With `rec.running` set (the shapes-only run, meta_forward), the work is also counted
    per instance whose forward is under way. With a `limit` (the real forward's work
    budget, FORWARD_WORK_PER_SECOND x the step's budget), the operation that takes the
    total (with what `extra()` adds, set by the caller: a test session's Python calls) past
    it raises EntryTimeout, as the CPU timer does (or calls `on_limit("work")`, which
    raises what its caller wants): the same model and inputs stop at the same operation on
    every machine, in every run. (A function mode, not a
    dispatch mode: the first dispatch mode imports some 400 modules, sympy among them,
    ~0.8 s of CPU per step. A function mode sees what Python calls: a torch function
    written in Python is seen as itself, not the functions it calls, which is why
    multi_head_attention_forward has its own rule.)

    With a `memory_limit` (bytes), the bytes of the live tensor storages the operations
    returned are counted too (`bytes`, `peak`): a storage counts once, from the first
    operation that returned a tensor on it (a view, an in-place result or a Parameter
    made of it adds nothing) until it is freed (a weak reference to the storage, whose
    Python object torch keeps for as long as the storage lives, torch >= 2.0); an
    operation whose result takes the live bytes past the limit raises (`on_limit("memory")`,
    else MemoryBudgetSpent), every such operation, as an allocator refuses an allocation
    past the address-space limit. The count follows what the program allocates and frees, in
    the order it does, so it stops at the same operation in every run, whatever the
    process inherited (the address-space limit, RLIMIT_AS, counts the heap's layout
    too). `memory_limit` False counts nothing; without weak references to storages (torch
    1.13) `bytes` stays None."""
    try:
        from torch.overrides import TorchFunctionMode
    except ImportError:
        return None
    import weakref

    rules = _macs_rules(torch)
    Tensor = torch.Tensor
    scalars = (bool, int, float, str, torch.Size, torch.dtype, torch.device)
    track = memory_limit is not None and hasattr(Tensor, "untyped_storage")
    autograd = {
        f
        for f in (
            getattr(Tensor, "backward", None),
            getattr(torch.autograd, "backward", None),
            getattr(torch.autograd, "grad", None),
        )
        if f is not None
    }
    # under torch.jit.trace every tensor query is recorded in the traced graph: counting
    # (numel, the storage) would add nodes to what the model's own code traces (a test
    # that analyses a traced graph failed on them), so only the operation is counted there
    tracing = getattr(torch._C, "_get_tracing_state", lambda: None)
    # while torch.compile's dynamo traces a function it traces this mode's Python too, and
    # a `fullgraph=True` compile fails on what it cannot put in a graph (the counting's
    # dicts and weak references): the documented test, torch.compiler.is_compiling, is
    # True there and False in eager code, so the traced mode only calls the function
    # (what the compiled code then does is not counted; the CPU timer is its backstop)
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)

    def outputs(out):
        if isinstance(out, Tensor):
            return (out,)
        if out is None or isinstance(out, scalars):
            return ()
        return flatten_tensors(out, torch)

    class WorkCounter(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.total = 0
            self.ops = 0
            self.graph = 0  # work of the operations whose results required grad, since the last backward
            self.backward_work = 0  # what the backward calls counted
            self.by = {}
            self.limit = limit
            self.extra = None  # () -> work counted elsewhere (a test session's Python calls)
            self.on_limit = on_limit
            self.memory_limit = memory_limit if track else None
            self.bytes = 0 if track else None
            self.peak = 0 if track else None
            self.live = {}  # id(storage) -> [weak reference, bytes counted]

        def _freed(self, key):
            e = self.live.pop(key, None)
            if e is not None:
                self.bytes -= e[1]

        def _storages(self, ts):
            # the storages of the tensors an operation returned: a new one counts its
            # bytes until it is freed; one that grew (resize_, out=) counts the growth
            grew = False
            for t in ts:
                try:
                    if t.is_meta:
                        continue
                    s = t.untyped_storage()
                    k = id(s)
                    n = s.nbytes()
                except Exception:  # noqa: BLE001 - sparse, nested, a subclass without storage
                    continue
                e = self.live.get(k)
                if e is None:
                    self.live[k] = [weakref.ref(s, lambda _r, k=k: self._freed(k)), n]
                    self.bytes += n
                    grew = True
                elif n > e[1]:
                    self.bytes += n - e[1]
                    e[1] = n
                    grew = True
            if grew and self.bytes > self.peak:
                self.peak = self.bytes

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if compiling is not None and compiling():
                return func(*args, **(kwargs or {}))
            out = func(*args, **(kwargs or {}))
            self.ops += 1
            try:
                if tracing() is not None:
                    raise LookupError("tracing")
                rule = rules.get(func)
                ts = outputs(out) if (rule is None or track) else ()
                if rule is not None:
                    n = rule(args, kwargs or {}, out)
                else:
                    n = 0
                    for t in ts:
                        n += t.numel()
                if track:
                    self._storages(ts)
                if backward:
                    if func in autograd:
                        b = int(backward * self.graph)
                        n += b
                        self.backward_work += b
                        self.graph = 0
                    elif n and isinstance(out, Tensor) and out.requires_grad:
                        self.graph += n
            except Exception:  # noqa: BLE001 - counting never changes what the model does
                n = 0
            n = max(0, n) + op_work
            if n:
                self.total += n
                running = rec.running if rec is not None else None
                if running:
                    for k in running:
                        self.by[k] = self.by.get(k, 0) + n
                if self.limit is not None and self.total + (self.extra() if self.extra else 0) > self.limit:
                    self.limit = None  # raised once: what handles it may call torch again
                    if self.on_limit is not None:
                        self.on_limit("work")
                    raise WorkBudgetSpent("the real forward's counted work passed its budget")
            if self.memory_limit is not None and self.bytes > self.memory_limit:
                # refused as an allocator refuses past RLIMIT_AS: the result is dropped here
                # (the exception's traceback keeps this frame: pytest holds it), its storage
                # freed, and the next operation that fits goes on
                out = ts = t = None  # noqa: F841
                if self.on_limit is not None:
                    self.on_limit("memory")
                raise MemoryBudgetSpent(MEMORY_STOP)
            return out

    return WorkCounter()


def meta_forward(model, inputs, rec, torch, recorded_before=None):
    """A forward too expensive for the budget, again on the meta device: shapes only, no
    arithmetic, so every module it reaches records the shapes of its inputs (values.py
    keeps no values for meta tensors; validation draws them). The model's own tensors are
    moved to meta (it is not used for anything after). `repeat_interleave` by an int is
    given its output size, which its meta kernel needs (torch 1.13).

    Where the real forward stopped (which block was running when the CPU timer fired or
    the allocator refused under RLIMIT_AS) depends on the machine, its load and the heap
    the process started with. When the shapes-only run gets through the whole forward,
    nothing of the interrupted one is kept: the calls it recorded (those not in
    `recorded_before`, the ids recorded before it) give way to the shapes-only run's, and
    the instances too expensive to validate on these inputs are decided from that run:
    those doing at least HEAVY_SHARE of its counted work (the model and its wrappers; one
    of twelve blocks is not). The same model and inputs then give the same records on
    every machine. When it stops short (an operation meta tensors cannot do: `if
    mask.any():`), the modules after that point are known only from the interrupted
    forward, so its records stay, and the instances that were running at its stop are the
    too expensive ones, as without a function mode to count with."""
    counter = work_counter(torch, rec) if recorded_before is not None else None
    interrupted = {}
    at_stop = set(rec.too_slow)
    if counter is not None:
        # set aside: the shapes-only run records these instances afresh
        for k in [k for k in rec.calls if k not in recorded_before]:
            interrupted[k] = rec.calls.pop(k)
        rec.too_slow = set()
    orig_ri = torch.repeat_interleave
    tensor_ri = torch.Tensor.repeat_interleave

    def repeat_interleave(input, repeats=None, dim=None, *a, **k):
        if isinstance(input, torch.Tensor) and input.is_meta and isinstance(repeats, int) and "output_size" not in k:
            if dim is None:
                return orig_ri(input.reshape(-1), repeats, 0, output_size=input.numel() * repeats)
            return orig_ri(input, repeats, dim, output_size=input.shape[dim] * repeats)
        return orig_ri(input, repeats, dim, *a, **k) if repeats is not None else orig_ri(input, *a, **k)

    rec.meta = True
    torch.repeat_interleave = repeat_interleave
    torch.Tensor.repeat_interleave = lambda self, *a, **k: repeat_interleave(self, *a, **k)
    try:
        model.to("meta")
        with torch.no_grad():
            if counter is None:
                model(*to_meta(list(inputs), torch))
            else:
                rec.running = {}
                through = False
                try:
                    with counter:
                        model(*to_meta(list(inputs), torch))
                    through = True
                finally:
                    rec.running = None
                    if through:
                        heavy = {k for k, n in counter.by.items() if counter.total and n >= HEAVY_SHARE * counter.total}
                        for k in interrupted:
                            rec.no_kernel.discard(k)
                    else:
                        heavy = at_stop
                        rec.calls.update(interrupted)
                    rec.too_slow = heavy
                    # the too expensive ones keep no inputs from the shapes-only run (a
                    # record from before the forward, or the interrupted one's kept, stays)
                    kept = recorded_before if through else recorded_before | set(interrupted)
                    for k in heavy - kept:
                        rec.calls.pop(k, None)
    finally:
        torch.repeat_interleave = orig_ri
        torch.Tensor.repeat_interleave = tensor_ri
        rec.meta = False


def shapes_of_input(inputs):
    return [list(x.shape) if hasattr(x, "shape") else type(x).__name__ for x in inputs]


def root_module(result, rec, nn):
    """The model an entry point built: what it returned (the first module of a tuple,
    list or dict), else the largest repository module built that no other contains."""
    if isinstance(result, nn.Module):
        return result
    if isinstance(result, (tuple, list)):
        for x in result:
            if isinstance(x, nn.Module):
                return x
    if isinstance(result, dict):
        for x in result.values():
            if isinstance(x, nn.Module):
                return x
    repo_types = set(rec.repo.values())
    insts = [rec.built[k][0] for k in rec.order if rec.built[k][1] in repo_types]
    children = set()
    for m in insts:
        for c in m.children():
            children.add(id(c))
    tops = [m for m in insts if id(m) not in children]
    if not tops:
        return None
    return max(tops, key=lambda m: sum(p.numel() for p in m.parameters()))


def call_companions(result, model, out, inputs, torch):
    """Call what the entry point built alongside its model (a criterion, post-processors)
    on the model's output and targets made from how their code reads them
    (structured.py); their calls, and those of the modules they use (a matcher), are
    recorded like the model's. Returns per companion class: called or why not."""
    nn = torch.nn
    report = {}
    x = inputs[0] if inputs else None
    batch = int(x.shape[0]) if hasattr(x, "shape") and x.dim() >= 1 else 1
    hw = tuple(int(s) for s in x.shape[-2:]) if hasattr(x, "shape") and x.dim() >= 3 else (64, 64)
    previous = None
    for c in structured.companions(result, model, nn):
        name = type(c).__name__
        gen = torch.Generator().manual_seed(2)
        try:
            args = structured.companion_args(c, out, batch, hw, torch, gen, previous)
        except EntryTimeout:
            raise
        except Exception as e:  # noqa: BLE001
            report[name] = "%s: %s" % (type(e).__name__, str(e)[:120])
            continue
        if args is None:
            report[name] = "arguments unknown"
            continue
        try:
            with torch.no_grad():
                torch.manual_seed(3)
                previous = c(*args)
            report[name] = "called"
        except EntryTimeout:
            raise
        except BaseException as e:  # noqa: BLE001 - a companion that fails is reported
            report[name] = "%s: %s" % (type(e).__name__, str(e)[:120])
    return report


def build_entry(entry, torch):
    """Call a (registry, factory, class) entry point with its plan; returns what it built."""
    import importlib

    obj = importlib.import_module(entry["module"])
    for p in entry["qualname"].split("."):
        obj = getattr(obj, p)
    kwargs = plan_kwargs(entry.get("plan") or {}, torch)
    torch.manual_seed(0)
    return obj(**kwargs)


def plan_kwargs(plan, torch):
    """The keyword arguments a plan gives directly: plain values, files, configurations
    (an `instance` entry, a model to wrap, is the caller's)."""
    kwargs = {}
    for name, spec in plan.items():
        if "defaults" in spec:
            # `**defaults()`: the function's dict, the keys the callable takes (defaults_provider)
            import importlib

            f = importlib.import_module(spec["defaults"][0])
            for part in spec["defaults"][1].split("."):
                f = getattr(f, part)
            d = f()
            kwargs.update({k: d[k] for k in spec["keys"] if k in d})
        elif "value" in spec:
            kwargs[name] = spec["value"]
        elif "file" in spec:
            kwargs[name] = spec["file"]
        elif "config" in spec:
            kwargs[name] = make_config(spec["config"], torch, spec.get("set"))
    return kwargs


def proc_status_kb(field):
    """A memory figure of this process from /proc/self/status (VmSize, VmRSS, VmHWM), kB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def limit_memory(mb):
    """The entry point's memory budget: its address space may grow by `mb` MB from here
    (RLIMIT_AS, setrlimit(2), lowered only: the child's own limit stays the ceiling). An
    allocation past it fails (MemoryError, torch's allocator refusing) instead of the
    kernel killing the process. Returns the limit set, or None."""
    import resource

    vm = proc_status_kb("VmSize")
    if not mb or vm is None:
        return None
    want = vm * 1024 + int(mb) * (1 << 20)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft <= want:
            return None
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
        return want
    except (ValueError, OSError):
        return None


def memory_used_mb(rss0_kb):
    """How far this process's resident memory rose above `rss0_kb` at its peak (VmHWM: a
    forked child's high-water mark starts at its size at the fork), MB."""
    hwm = proc_status_kb("VmHWM")
    if hwm is None or rss0_kb is None:
        return None
    return round(max(0, hwm - rss0_kb) / 1024.0, 1)


def run_entry(cfg, torch, send):
    """Build one entry point and run its model; sends one {"ev": "harvest"} event."""
    import importlib

    nn = torch.nn
    roots = cfg.get("own") or cfg["roots"]
    entry = cfg["entry"]
    budget = float(cfg.get("budgetSeconds", 30))
    t0 = cpu_seconds()
    w0 = time.monotonic()
    res = {"entry": entry_name(entry), "built": False, "forward": False, "error": None}
    rss0 = proc_status_kb("VmRSS")
    limit_memory(cfg.get("memoryMb"))
    # the entry point's module (and what it imports; the zygote's modules are back in
    # sys.modules): not every module of the repository again, the list step did that
    for m in [entry["module"]] + ([cfg["provider"]["module"]] if cfg.get("provider") else []):
        try:
            importlib.import_module(m)
        except BaseException:  # noqa: BLE001 - reported by the call below
            pass
    mods = repo_modules(roots)
    classes = repo_classes(mods, nn)
    rec = Recorder(torch, classes, roots)
    rec.install(nn)
    no_downloads(torch)

    def alarm(signum, frame):
        raise EntryTimeout("entry point took longer than %.0f s" % budget)

    signal.signal(BUDGET_SIGNAL, alarm)
    signal.signal(signal.SIGALRM, alarm)
    arm_budget(budget)
    result = None
    try:
        obj = importlib.import_module(entry["module"])
        if entry.get("kind") == "snippet":
            # the module's `if __name__ == "__main__":` block, in a copy of its namespace
            code = CF.main_snippet(obj.__file__)[0]
            ns = dict(vars(obj))
            ns["__name__"] = "__main__"
            saved_argv = sys.argv
            sys.argv = [obj.__file__]  # an argparse in the snippet sees no arguments: its defaults
            try:
                torch.manual_seed(0)
                exec(code, ns)  # noqa: S102 - the repository's own snippet, in the sandbox
            finally:
                sys.argv = saved_argv
            obj = None
        for p in entry["qualname"].split(".") if obj is not None else ():
            obj = getattr(obj, p)
        kwargs = {}
        plan = entry.get("plan") or {}
        if any("instance" in spec for spec in plan.values()):
            # a model the repository's own entry point builds (the provider: what a run
            # before this one built and ran), recorded like everything else
            prov = cfg.get("provider")
            if prov is None:
                raise RuntimeError("no model built yet to wrap")
            inst = build_entry(prov, torch)
            model0 = root_module(inst, rec, nn)
            if model0 is None:
                raise RuntimeError("the provider built no module")
            kwargs.update({name: model0 for name, spec in plan.items() if "instance" in spec})
        kwargs.update(plan_kwargs(plan, torch))
        torch.manual_seed(0)
        result = obj(**kwargs) if obj is not None else None
        res["built"] = True
    except EntryTimeout as e:
        res["error"] = "timeout: %s" % e
    except BaseException as e:  # noqa: BLE001 - a failed entry point is reported, never fatal
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    res["buildMs"] = round((time.monotonic() - w0) * 1000, 1)
    model = None
    meter = None
    try:
        model = root_module(result, rec, nn)
    except Exception:  # noqa: BLE001
        model = None
    # a construction stopped by the budget or the memory limit: what it built before the
    # stop (the largest module, which the forward would run) depends on where the stop
    # fell, which depends on the machine; its completed constructions stay witnesses
    if model is not None and not budget_stop(str(res["error"] or "")):
        try:
            model.eval()
            hints = model_hints(model, rec.built, torch)
            res["hints"] = hints
            # the real forwards' work budget, shared by the input candidates: a pure
            # function of the request, so that a forward too expensive for it stops at
            # the same operation on every machine (work_counter); None without a
            # function mode (torch < 1.12): the CPU timer alone
            meter = work_counter(torch, limit=FORWARD_WORK_PER_SECOND * budget)
            for inputs in structured_candidates(model, hints, torch) + input_candidates(model, hints, torch):
                # keep a third of what is left for a shapes-only run, in case the real
                # forward is too expensive for the budget or the memory limit; the CPU
                # timer is the backstop of the work budget (pure-Python loops, operations
                # the function mode does not see)
                arm_budget(max(0.5, (budget - (cpu_seconds() - t0)) * 2 / 3))
                too_costly = None
                recorded_before = set(rec.calls)
                try:
                    with torch.no_grad():
                        torch.manual_seed(1)
                        if meter is None:
                            out = model(*inputs)
                        else:
                            with meter:
                                out = model(*inputs)
                    res["forward"] = True
                    res.pop("forwardError", None)  # an earlier input candidate's failure: not why it stopped
                    res["input"] = shapes_of_input(inputs)
                    res["companions"] = call_companions(result, model, out, inputs, torch)
                    break
                except WorkBudgetSpent:
                    too_costly = "%s of %.0f s" % (WORK_STOP, budget)
                except EntryTimeout:
                    too_costly = "timeout: the real forward took longer than its share of %.0f s" % budget
                except BaseException as e:  # noqa: BLE001
                    res["forwardError"] = "%s: %s" % (type(e).__name__, str(e)[:300])
                    if is_memory_error(e):
                        too_costly = res["forwardError"]
                finally:
                    arm_budget(max(0.5, budget - (cpu_seconds() - t0)))
                if too_costly:
                    res["forwardError"] = too_costly
                    try:
                        meta_forward(model, inputs, rec, torch, recorded_before)
                        res["metaForward"] = "ran"
                    except EntryTimeout:
                        raise
                    except BaseException as e:  # noqa: BLE001
                        res["metaForward"] = "%s: %s" % (type(e).__name__, str(e)[:200])
                    break
        except EntryTimeout as e:
            res["forwardError"] = "timeout: %s" % e
        except BaseException as e:  # noqa: BLE001 - the model's own eval() or hints failed: no forward, reported
            # (a model whose train() takes other arguments fails in eval(), PyTorch's
            # Module.eval calls self.train(False)); the constructions stay witnesses
            res["forwardError"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    arm_budget(0)
    if meter is not None and meter.total:
        # the step's budget the real forwards' counted work needed (harvest.ts reusable)
        res["workSeconds"] = round(meter.total / FORWARD_WORK_PER_SECOND, 3)
    res["ms"] = round((time.monotonic() - w0) * 1000, 1)
    res["cpuMs"] = round((cpu_seconds() - t0) * 1000, 1)
    res["memoryMb"] = memory_used_mb(rss0)
    # why the entry point stopped short, when a budget stopped it: its time or its memory
    errs = [str(res.get("error") or ""), str(res.get("forwardError") or "")]
    stops = [budget_stop(e) for e in errs]
    if "time" in stops:
        res["stopped"] = "time"
    elif "work" in stops:
        res["stopped"] = "work"
    elif "memory" in stops:
        res["stopped"] = "memory"
    res["classes"] = rec.witnesses(res["entry"])
    send({"ev": "harvest", "result": res})


def budget_stop(error):
    """ "time" or "memory" when a step's reported error is its CPU budget running out or
    the address-space limit refusing an allocation (MemoryError, torch's allocator) or
    the live tensors passing their counted budget (MEMORY_STOP); "work" when the real
    forward's counted work passed its budget (work_counter: the same stop on every
    machine); else None."""
    if error.startswith(WORK_STOP):
        return "work"
    if error.startswith(MEMORY_STOP):
        return "memory"
    if error.startswith("timeout"):
        return "time"
    if re.match(r"MemoryError|RuntimeError: .*(%s)" % ALLOCATOR_REFUSED, error):
        return "memory"
    return None


def entry_name(entry):
    return entry.get("via") or "%s.%s" % (entry["module"], entry["qualname"])
