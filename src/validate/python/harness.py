# nnrag validation harness (docs/ARCHITECTURE.md "Validation").
#
# Runs inside the validation environment (an interpreter whose `import torch` works),
# normally inside a bubblewrap sandbox started by src/validate/pool.ts. Two modes:
#
#   harness.py --probe            print interpreter facts as one JSON line (no torch import)
#   harness.py --worker CONFIG    a long-lived worker: import torch once, then for each
#                                 request (framed with a nonce, on descriptor 4; see
#                                 nnrag_harness/worker.py Channel) fork a child that runs the stages and answer
#                                 JSON lines carrying that nonce on descriptor 5.
#
# The worker never runs candidate code itself. Requests that carry an original module
# (equivalence) go to a per-repository "zygote", a fork of the worker that imported the
# original once and forks the candidates of that repository (nnrag_harness/zygote.py). Each child:
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
# (nnrag_harness/harvest.py). This file is the entry point only: the worker, the
# zygotes, the stages, process housekeeping, argument and input sources, failure
# classification and value encoding live in the package nnrag_harness/ next to this
# file (sent bundled in front of it into the sandbox, see _load_package).
#
# Must run on Python 3.8+ (Debian bookworm 3.11, trixie 3.13). No third-party imports
# besides torch, which is imported only in worker mode.

import json
import os
import re
import sys
import types

# References kept before any candidate code runs, so a module that rebinds
# json.dumps or os.write cannot break reporting by accident.
_dumps = json.dumps
_loads = json.loads


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
    # the bundle lists the package first, then each module after those it imports at its
    # top level (environment.ts harnessSource): executed in that order, every top-level
    # `from . import x` finds x complete
    for name in bundle:
        if name == "nnrag_harness":
            exec(compile(bundle[name], "<nnrag_harness/__init__.py>", "exec"), pkg.__dict__)  # noqa: S102 - our own code
            continue
        m = types.ModuleType(name)
        m.__package__ = "nnrag_harness"
        sys.modules[name] = m
        setattr(pkg, name.split(".")[-1], m)
    for name in bundle:
        if name != "nnrag_harness":
            exec(compile(bundle[name], "<%s.py>" % name.replace(".", "/"), "exec"), sys.modules[name].__dict__)  # noqa: S102


_load_package()

from nnrag_harness.channel import Channel  # noqa: E402
from nnrag_harness.worker import Worker  # noqa: E402


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
    import sysconfig

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
        # the standard library's top-level names (Python 3.10+): what needs no distribution
        "stdlib": sorted(getattr(sys, "stdlib_module_names", ())),
        # the folders of the interpreter's installation scheme (sysconfig): the standard
        # library and the environment's site-packages, which stored texts name as
        # `<stdlib>` and `<site-packages>` (validate/places.ts)
        "paths": {
            k: v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib")
        },
    }
    if "--import-torch" in sys.argv:
        try:
            import torch

            info["torch"] = torch.__version__
        except BaseException as e:  # noqa: BLE001 - report anything
            info["torch"] = None
            info["torch_error"] = "%s: %s" % (type(e).__name__, e)
    sys.stdout.write(_dumps(info) + "\n")


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
