"""Bench helper: for each emitted module file, (1) pyflakes' undefined-name messages,
(2) whether it imports (executes its body) in this Python with torch. One process,
torch imported once; each module runs in a forked child with a time limit.

usage: /usr/bin/python3 check_modules.py OUT.json FILE...
"""
import json
import os
import sys

from pyflakes import api as pyflakes_api
from pyflakes import messages as pm
from pyflakes import reporter as pr

import torch  # noqa: F401  (imported once, inherited by the children)

out, files = sys.argv[1], sys.argv[2:]


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


results = {}
for f in files:
    rep = Collect()
    with open(f) as fh:
        pyflakes_api.check(fh.read(), f, rep)
    results[f] = {"undefined": rep.undefined, "errors": rep.errors, "import": import_in_child(f)}
with open(out, "w") as fh:
    json.dump(results, fh, indent=1)
