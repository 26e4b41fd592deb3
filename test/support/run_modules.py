"""Test support: check emitted modules in a real Python with torch.

Reads a JSON list of {"name", "file", "run"} from the file named by argv[1] and writes
{name: {"undefined": [...], "syntax": [...], "result": "ok" | "<error>"}} to argv[2].
pyflakes reports undefined names (method bodies included); then each module is
imported in a forked child (torch is imported once, here) and `run` is executed with the
module bound to `m`. With --no-run (the fast test tier, which runs no torch) only pyflakes
runs, and each result says the module was not run.
"""

import json
import os
import sys

from pyflakes import api as pyflakes_api
from pyflakes import messages as pm
from pyflakes import reporter as pr

NO_RUN = "--no-run" in sys.argv[1:]
args = [a for a in sys.argv[1:] if a != "--no-run"]
NOT_RUN = "not run (fast tier: no torch)"
if not NO_RUN:
    import torch  # noqa: F401

cases = json.load(open(args[0]))


class Collect(pr.Reporter):
    def __init__(self):
        self.undefined, self.syntax = [], []

    def unexpectedError(self, filename, msg):
        self.syntax.append(str(msg))

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.syntax.append(f"line {lineno}: {msg}")

    def flake(self, message):
        if isinstance(message, (pm.UndefinedName, pm.UndefinedExport, pm.UndefinedLocal)):
            self.undefined.append(str(message))


def run_in_child(path, code):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        import importlib.util
        import signal
        import traceback

        signal.alarm(60)
        msg = "ok"
        try:
            spec = importlib.util.spec_from_file_location("emitted", path)
            m = importlib.util.module_from_spec(spec)
            sys.modules["emitted"] = m
            spec.loader.exec_module(m)
            if code:
                exec(code, {"m": m})
        except BaseException:  # noqa: BLE001 - every failure is reported
            msg = traceback.format_exc(limit=3)[-1500:]
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        c = os.read(r, 65536)
        if not c:
            break
        chunks.append(c)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode() or "child died without a result"


out = {}
for c in cases:
    rep = Collect()
    with open(c["file"]) as fh:
        pyflakes_api.check(fh.read(), c["file"], rep)
    out[c["name"]] = {
        "undefined": rep.undefined,
        "syntax": rep.syntax,
        "result": NOT_RUN if NO_RUN else run_in_child(c["file"], c.get("run", "")),
    }
with open(args[1], "w") as fh:
    json.dump(out, fh, indent=1)
