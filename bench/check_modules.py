"""Bench helper: for each emitted module file, (1) pyflakes' undefined-name messages,
(2) whether it imports (executes its body) in this Python with torch. One process,
torch imported once; each module runs in a forked child with a time limit.

usage: /usr/bin/python3 check_modules.py OUT.json INPUT.json
INPUT.json: [{"file": emitted module, "originals": [source files it was copied from]}]
Undefined names that pyflakes also reports in the original files (e.g. names used only
in `# type:` comments that the original never imports) are reported apart.
"""

import json
import re
import os
import sys

from pyflakes import api as pyflakes_api
from pyflakes import messages as pm
from pyflakes import reporter as pr

import torch  # noqa: F401  (imported once, inherited by the children)

out = sys.argv[1]
inputs = json.load(open(sys.argv[2]))


class Collect(pr.Reporter):
    def __init__(self):
        self.undefined = []
        self.errors = []

    def unexpectedError(self, filename, msg):
        self.errors.append(str(msg))

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.errors.append(f"syntax error line {lineno}: {msg}")

    def flake(self, message):
        if isinstance(message, (pm.UndefinedName, pm.UndefinedExport, pm.UndefinedLocal)):
            self.undefined.append(str(message))


def import_in_child(path):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        import importlib.util
        import signal
        import warnings

        warnings.simplefilter("ignore")
        signal.alarm(20)
        msg = "ok"
        try:
            spec = importlib.util.spec_from_file_location("nnrag_candidate", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except BaseException as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}"[:300]
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode() or "crashed"


_orig_cache = {}


def undefined_in(path):
    if path not in _orig_cache:
        rep = Collect()
        try:
            with open(path) as fh:
                pyflakes_api.check(fh.read(), path, rep)
        except OSError:
            pass
        _orig_cache[path] = {
            m.group(1) for u in rep.undefined for m in [re.search(r"undefined name '([^']+)'", u)] if m
        }
    return _orig_cache[path]


results = {}
for item in inputs:
    f = item["file"]
    rep = Collect()
    with open(f) as fh:
        try:
            pyflakes_api.check(fh.read(), f, rep)
        except SyntaxError as e:  # e.g. a PEP 263 coding line pyflakes' tokenizer refuses
            rep.errors.append(f"syntax error: {e}")
    inherited = set()
    for o in item.get("originals", []):
        inherited |= undefined_in(o)
    new, old = [], []
    for u in rep.undefined:
        m = re.search(r"undefined name '([^']+)'", u)
        (old if m and m.group(1) in inherited else new).append(u)
    results[f] = {"undefined": new, "undefined_in_original": old, "errors": rep.errors, "import": import_in_child(f)}
with open(out, "w") as fh:
    json.dump(results, fh, indent=1)
