# What a repository's zygote (zygote.py) imported, shared with the stages that run in
# its forks (stages.py): the original repository's modules hidden from sys.modules while
# a candidate runs (STASH), the zygote's own module (IN_ZYGOTE), the test of whether
# a module comes from the repository's roots, the packages whose installed
# distribution is the checkout's own code (same_as_installed: those stay importable,
# imported once), and the finder that gives a checkout the extension modules the
# environment compiled from it (BuiltExtensions). Below both, so neither imports the other.
import importlib.machinery
import importlib.util
import os
import sys
import types


# Modules of an original repository imported by a zygote, hidden from sys.modules while
# a candidate imports, instantiates and runs (so `import timm` in a candidate still fails
# when timm is not installed) and put back for the equivalence stage.
STASH = {}
# Set in a zygote (the module it imported): its candidates know which original modules
# imported there without trying again (a failing import can take seconds).
IN_ZYGOTE = []


# Modules of installed pure-Python packages that the zygote's import of the original
# loaded first (name -> module, isolable_installed): hidden from sys.modules while a
# candidate runs, so the copy that imports such a package (mmengine, whose registries the
# original's import filled: `MODELS.register_module('Conv2d', …)`) gets it afresh, as it
# would in a process of its own; put back for the equivalence stage (hide_installed,
# restore_installed).
INSTALLED = {}
_HIDDEN = {}
# The other way round: modules of installed pure-Python packages that the candidate's
# import loaded first (isolable_installed, the candidate's module left out), hidden while
# the original imports after it (namespace stage, a witness value's module, equivalence):
# the copy registered its classes in the installed mmengine's registry, and the
# original's module-level registration of the same names refuses a second one
# ("ConvModule is already registered"), as it would not in a process of its own. The
# original's own modules of those packages are kept aside (ORIGINAL_INSTALLED) and put
# back whenever it runs again (for_original, use_original_installed).
COPY_INSTALLED = {}
ORIGINAL_INSTALLED = {}


def _pure_python(m):
    """A module loaded from Python source or bytecode (not an extension module, which
    cannot be initialised a second time in one process)."""
    f = getattr(m, "__file__", None)
    return f is None or (isinstance(f, str) and f.endswith((".py", ".pyc")))


def _has_extensions(m):
    """Whether a package's folder holds an extension module anywhere below it (one loaded
    by a loader of its own under another name: opencv's `cv2` binary)."""
    paths = getattr(m, "__path__", None)
    try:
        paths = [str(x) for x in paths] if paths is not None else []
    except Exception:  # noqa: BLE001 - not a list of folders
        return True
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for p in paths:
        for _d, dirs, files in os.walk(p):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            if any(f.endswith(suffixes) for f in files):
                return True
    return False


def isolable_installed(before, roots, exclude=()):
    """{name: module} of the modules imported since `before` (a set of sys.modules' names)
    that belong to top-level packages the import loaded first, outside the repository's
    roots, the standard library (sys.stdlib_module_names), torch and the harness, whose
    every loaded module is pure Python and that no other module the import loaded and the
    candidate still sees refers to (`exclude`: modules neither taken nor counted as
    seeing, the candidate's own when the original is the one to import afresh)."""
    prefixes = root_prefixes(roots)
    std = set(getattr(sys, "stdlib_module_names", ())) | {"torch", "nnrag_harness", "__main__"}
    tops = {}
    for name, m in list(sys.modules.items()):
        if name in before or name in exclude:
            continue
        top = name.partition(".")[0]
        if top in before or top in std or top.startswith("_") or m is None:
            continue
        tops.setdefault(top, {})[name] = m
    out = {}
    for top, mods in tops.items():
        if any(of_roots(m, prefixes) or not _pure_python(m) for m in mods.values()):
            continue
        if _has_extensions(mods.get(top)):
            continue
        out.update(mods)
    # a package that a module staying visible to the candidate holds (torch's own
    # submodules the import loaded, a checkout installed from the same code) stays too:
    # their objects and a fresh import's would be two of everything (`isinstance` of one
    # against the other's class fails)
    kept = set()
    for name, m in list(sys.modules.items()):
        if name in before or name in out or name in exclude or m is None:
            continue
        if of_roots(m, prefixes) and not same_as_installed(name.partition(".")[0], roots):
            continue  # hidden from the candidate anyway (STASH)
        try:
            values = list(vars(m).values())
        except TypeError:
            continue
        for v in values:
            ref = v.__name__ if isinstance(v, type(sys)) else getattr(v, "__module__", None)
            if isinstance(ref, str):
                top = ref.partition(".")[0]
                if top != name.partition(".")[0]:
                    kept.add(top)
    out = {n: m for n, m in out.items() if n.partition(".")[0] not in kept}
    return _without_writers_into_visible(out, before, prefixes, roots, std)


def _is_state(v):
    """A module-level object that is state rather than code: not a module, class,
    function or method (a registry, a logger, a dict the package fills)."""
    return not isinstance(v, (type, type(sys), types.FunctionType, types.BuiltinFunctionType, types.MethodType))


def _without_writers_into_visible(out, before, prefixes, roots, std):
    """Leave out of `out` each package whose modules hold, at module level, state of
    another package that the import loaded and that stays visible to the candidate (a
    checkout kept because it is the installed code, an extension package, a package
    `kept` above): importing that package afresh runs its import-time code against the
    same state a second time (mmdet's `Registry('runner', parent=RUNNERS)` into the
    shared mmengine's root registry: "scope mmdet exists in runner registry"), which a
    process of its own never does. Repeated until nothing changes: a package left out
    stays visible in turn."""
    tops = {}
    for name, m in out.items():
        tops.setdefault(name.partition(".")[0], []).append(m)
    refs = {}
    for top, mods in tops.items():
        r = set()
        for m in mods:
            try:
                values = list(vars(m).values())
            except TypeError:
                continue
            for v in values:
                if not _is_state(v):
                    continue
                ref = getattr(type(v), "__module__", None)
                if isinstance(ref, str):
                    r.add(ref.partition(".")[0])
        refs[top] = r - {top}

    def visible(t):
        if t in std or t in before or t in tops or t.startswith("_"):
            return False
        m = sys.modules.get(t)
        if m is None:
            return False
        return not of_roots(m, prefixes) or same_as_installed(t, roots)

    changed = True
    while changed:
        changed = False
        for top in list(tops):
            if any(visible(t) for t in refs[top]):
                del tops[top]
                changed = True
    return {n: m for n, m in out.items() if n.partition(".")[0] in tops}


def hide_installed():
    """Take INSTALLED's modules out of sys.modules (a candidate is about to import)."""
    for name in INSTALLED:
        m = sys.modules.pop(name, None)
        if m is not None:
            _HIDDEN[name] = m


def restore_installed():
    """Put the zygote's modules of INSTALLED back (the equivalence stage runs the
    original, which was built against them)."""
    for name, m in _HIDDEN.items():
        sys.modules[name] = m
    _HIDDEN.clear()


def _tops(names):
    return {n.partition(".")[0] for n in names}


def use_original_installed():
    """Take COPY_INSTALLED's modules out of sys.modules and put the original's of the same
    packages (imported in an earlier for_original) back: the original imports or runs
    with its own."""
    for name in COPY_INSTALLED:
        sys.modules.pop(name, None)
    for name, m in ORIGINAL_INSTALLED.items():
        sys.modules[name] = m


class for_original(object):
    """A with-block in which the original imports against its own modules of the packages
    the candidate's import loaded first (use_original_installed); on leaving, what the
    original loaded of them is kept aside (ORIGINAL_INSTALLED) and the candidate's are
    put back. Nothing to do when the candidate loaded none."""

    def __enter__(self):
        if COPY_INSTALLED:
            use_original_installed()
        return self

    def __exit__(self, *exc):
        if COPY_INSTALLED:
            tops = _tops(COPY_INSTALLED)
            for name in list(sys.modules):
                if name.partition(".")[0] in tops:
                    ORIGINAL_INSTALLED[name] = sys.modules.pop(name)
            for name, m in COPY_INSTALLED.items():
                sys.modules[name] = m
        return False


def root_prefixes(roots):
    return [r.rstrip("/") + "/" for r in roots or []]


def of_roots(m, prefixes):
    """Whether a module of sys.modules was loaded from one of the repository roots (its
    file, or a folder of its package path, PEP 420 namespace packages included)."""
    # sys.modules may hold objects that are not modules (torch.classes namespaces
    # under torch 2.6: their __path__ is not a list of folders)
    try:
        f = getattr(m, "__file__", None) or ""
        paths = [str(x) for x in (getattr(m, "__path__", None) or [])]
    except Exception:  # noqa: BLE001
        return False
    if not isinstance(f, str):
        return False
    return any(f.startswith(pr) for pr in prefixes) or any(x.startswith(pr) for x in paths for pr in prefixes)


# top-level name -> whether the environment's installed package of that name is the
# checkout's own code (same_as_installed); decided once per process
_SAME = {}


def _code_files(top_dir):
    """Relative paths of a package folder's importable files (the suffixes of
    importlib.machinery.all_suffixes(): source, bytecode-only and extension modules).
    Only names an import can spell: each part of a dotted module name is an identifier
    (Language Reference 2.3, 5.2), so a folder such as `.mim` (package data a wheel
    carries: OpenMMLab's configs) or `__pycache__`, and a file such as `setup-cfg.py`,
    hold nothing importable."""
    suffixes = tuple(importlib.machinery.all_suffixes())
    out = set()
    for d, dirs, files in os.walk(top_dir):
        dirs[:] = [x for x in dirs if x.isidentifier() and x != "__pycache__"]
        for f in files:
            if f.endswith(suffixes) and f.partition(".")[0].isidentifier():
                out.add(os.path.relpath(os.path.join(d, f), top_dir))
    return out


def _same_bytes(a, b):
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def _compare_builds(mine, theirs):
    """How the package folder `theirs` (the environment's installed package) holds the
    code of the package folder `mine` (the checkout's): None when a file both hold
    differs or one holds nothing; else (installed, extra), `installed` whether every
    importable file of `theirs` is the checkout's (the checkout may hold more: a wheel
    leaves out what its package data does not list, the configuration modules of a
    `configs/` folder, which no import of the installed package can reach) save the
    extension modules its build compiled (setuptools' ext_modules: the checkout, never
    built in place, has none), and `extra` whether `theirs` holds each of the checkout's
    files (a build may copy more in: detectron2's model-zoo configs)."""
    files = _code_files(mine)
    built = _code_files(theirs)
    if not files or not built:
        return None
    if not all(_same_bytes(os.path.join(mine, f), os.path.join(theirs, f)) for f in files & built):
        return None
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    only_built = built - files
    return all(f.endswith(suffixes) for f in only_built), files <= built


def _installed_folder(m, prefixes):
    """The checkout's folder of the package `m` (loaded from the repository's roots) and
    the folder `import` finds for its name without those roots (the environment's
    installed package), or None when there is no such pair (a plain module, a namespace
    package (PEP 420), one folder for both)."""
    mine = getattr(m, "__path__", None)
    try:
        mine = [str(x) for x in mine] if mine is not None else None
    except Exception:  # noqa: BLE001 - not a list of folders
        return None
    if not mine or len(mine) != 1 or not of_roots(m, prefixes):
        return None
    top = m.__name__.partition(".")[0]
    # where `import top` resolves without the repository's roots: the installed package
    path = [p for p in sys.path if not any((p.rstrip("/") + "/").startswith(pr) for pr in prefixes)]
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, path)
    except Exception:  # noqa: BLE001
        spec = None
    locs = list(getattr(spec, "submodule_search_locations", None) or [])
    if len(locs) != 1 or os.path.realpath(locs[0]) == os.path.realpath(mine[0]):
        return None
    return mine[0], locs[0]


def same_as_installed(top, roots):
    """Whether the top-level module `top`, imported from the repository's roots, is the
    same code as the package of that name installed in the environment (a checkout the
    environment installed, as `pip install .` does): every importable file of the
    installed package is the checkout's file of that path, with the same bytes, save the
    extension modules its build compiled, which the checkout's package gets from the
    installed one (BuiltExtensions). Then the installed copy is not hidden behind the
    checkout's: a candidate whose `import top.sub` resolves to the installed distribution
    gets the modules the zygote already imported. Importing that package a second time,
    from the other folder, would run its import-time code again against what stayed in
    the process: torch's functional DataPipe names and the shared registries of installed
    libraries refuse the second registration ("Unable to add DataPipe function name …
    as it is already taken"). A package whose installed files differ otherwise (another
    version, modules its build copied in) is hidden as before."""
    if top in _SAME:
        return _SAME[top]
    _SAME[top] = False
    m = sys.modules.get(top) or STASH.get(top)
    pair = _installed_folder(m, root_prefixes(roots))
    got = _compare_builds(*pair) if pair else None
    same = bool(got and got[0])
    _SAME[top] = same
    return same


class BuiltExtensions(object):
    """A meta path finder (PEP 451), last on sys.meta_path, for the extension modules a
    checkout's own build compiles. A package whose setup compiles C/C++ operators
    (setuptools' ext_modules: mmcv's `mmcv._ext`, detectron2's `detectron2._C`) holds
    them beside its sources only once built in place (`pip install -e .`,
    `setup.py build_ext --inplace`): its users, working in the checkout, have built it
    so. The checkout validation imports originals from is read-only and unbuilt, and the
    environment installed the wheel built from it (environment/pypi.ts buildNative). A
    submodule the checkout's package lacks (every finder before this one found nothing)
    is the installed build's extension module of the same relative path, when the
    installed package is a build of the checkout's code (_compare_builds: the files both
    hold have the same bytes, and one holds all of the other's, extension modules
    aside); the same file is loaded, so the
    original and a candidate that imported the installed package share one module.
    Anything else is left to fail as it would."""

    _pairs = {}  # top-level package folder (checkout) -> installed build's folder or None

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        parent, _, last = name.rpartition(".")
        if not parent or not path:
            return None
        top = name.partition(".")[0]
        m = sys.modules.get(top)
        mine = getattr(m, "__path__", None)
        try:
            mine = [str(x) for x in mine] if mine is not None else []
        except Exception:  # noqa: BLE001 - not a list of folders
            return None
        if len(mine) != 1:
            return None
        key = os.path.realpath(mine[0])
        if key not in cls._pairs:
            cls._pairs[key] = None
            # the folder holding the checkout's package stands in for the repository's
            # root: the installed copy is found without it
            pair = _installed_folder(m, root_prefixes([os.path.dirname(mine[0])]))
            got = _compare_builds(*pair) if pair else None
            if got and (got[0] or got[1]):
                cls._pairs[key] = pair[1]
        theirs = cls._pairs[key]
        if theirs is None:
            return None
        try:
            here = os.path.realpath(str(list(path)[0]))
        except Exception:  # noqa: BLE001 - not a list of folders
            return None
        rel = os.path.relpath(here, key)
        if rel.startswith(".."):
            return None
        folder = os.path.normpath(os.path.join(theirs, rel))
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            f = os.path.join(folder, last + suffix)
            if os.path.isfile(f):
                loader = importlib.machinery.ExtensionFileLoader(name, f)
                return importlib.util.spec_from_file_location(name, f, loader=loader)
        return None


def serve_built_extensions():
    """Put BuiltExtensions last on sys.meta_path (once per process; forks inherit it)."""
    if BuiltExtensions not in sys.meta_path:
        sys.meta_path.append(BuiltExtensions)


def hide_new_repository_modules(before, roots):
    """After a step that imported the original (namespace stage, a witness value's
    module): take the repository's modules it added out of sys.modules again (sys.modules
    keeps insertion order, so what the step added is its tail), so a candidate that
    imports the original package still fails. Everything else it imported stays: torch's
    own submodules above all. Dropping those breaks the process: `import torch._dynamo`
    run a second time re-registers torch._inductor.test_operators' operator library and
    aborts (torch 2), and a C extension cannot be initialised twice.
    The repository's modules are kept in STASH (put back for the equivalence stage, as a
    zygote's are), not dropped: importing them a second time runs their import-time code
    again against what stayed, and an installed package the original shares with the copy
    (slim's package boundary: mmcv registering its transforms in the installed mmengine's
    registry) then refuses the second registration."""
    import itertools

    prefixes = root_prefixes(roots)
    tail = list(itertools.islice(reversed(sys.modules), max(0, len(sys.modules) - before)))
    for name in tail:
        m = sys.modules.get(name)
        if of_roots(m, prefixes):
            STASH.setdefault(name, m)
            if not same_as_installed(name.partition(".")[0], roots):
                del sys.modules[name]


def forget_imported(before, paths):
    """After a usage snippet ran its `from P import N` lines (an installed distribution's
    public names, snippet.installed_spelling): take out of sys.modules the modules of
    those top-level packages that the run loaded (names not in `before`) when the
    original repository's modules of that name are hidden in STASH, so that the
    equivalence stage, which puts STASH back with setdefault, imports the repository's
    modules and not the installed ones the snippet loaded (the repository's own package
    installed in the environment: mmengine's ToyModel). Packages the original never
    loaded stay: a fresh import of an extension module cannot run twice in a process."""
    tops = {p.partition(".")[0] for p in paths}
    stashed = {n.partition(".")[0] for n in STASH}
    for name in list(sys.modules):
        top = name.partition(".")[0]
        if name not in before and top in tops and top in stashed:
            del sys.modules[name]
