# What a repository's zygote (zygote.py) imported, shared with the stages that run in
# its forks (stages.py): the original repository's modules hidden from sys.modules while
# a candidate runs (STASH), the zygote's own module (IN_ZYGOTE), and the test of whether
# a module comes from the repository's roots. Below both, so neither imports the other.
import sys


# Modules of an original repository imported by a zygote, hidden from sys.modules while
# a candidate imports, instantiates and runs (so `import timm` in a candidate still fails
# when timm is not installed) and put back for the equivalence stage.
STASH = {}
# Set in a zygote (the module it imported): its candidates know which original modules
# imported there without trying again (a failing import can take seconds).
IN_ZYGOTE = []


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
        if of_roots(sys.modules.get(name), prefixes):
            STASH.setdefault(name, sys.modules.pop(name))
