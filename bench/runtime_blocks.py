"""Runtime ground truth for discovery recall (bench only, never run on untrusted code
outside a throwaway checkout): import every module of a package and list the classes
defined in it that are concrete torch.nn.Module subclasses with a forward.

usage: python3 runtime_blocks.py ROOT PACKAGE OUT.json   (PACKAGE may be a plain module)
"""

import importlib
import inspect
import json
import pkgutil
import sys
import warnings

root, package, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, root)
warnings.simplefilter("ignore")
import torch.nn as nn  # noqa: E402

failed = {}
found = set()
pkg = importlib.import_module(package)
names = [package] + (
    [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".")] if hasattr(pkg, "__path__") else []
)
for name in names:
    try:
        mod = importlib.import_module(name)
    except BaseException as e:  # noqa: BLE001 - report every import failure
        failed[name] = f"{type(e).__name__}: {e}"[:200]
        continue
    for _attr, obj in list(vars(mod).items()):
        if not inspect.isclass(obj) or obj.__module__ != name or "." in obj.__qualname__:
            continue
        if not issubclass(obj, nn.Module) or inspect.isabstract(obj):
            continue
        if getattr(obj, "forward", None) is nn.Module.forward:
            continue
        found.add(f"{name}.{obj.__qualname__}")
with open(out, "w") as f:
    json.dump({"blocks": sorted(found), "import_failures": failed}, f, indent=1)
