# The namespace stage's comparison (src/validate/README.md "Namespace"): every top-level
# name of the emitted copy that came from the original corpus must denote what it denotes
# in the original modules: the same object; a module by __name__; a class or function by
# qualified name and by where its code sits (Language Reference §4.2: a name denotes the
# object it is bound to); immutable plain data by value; anything else by type. The stage
# itself (importing the original, hiding its modules again) is in stages.py.
import os
import sys
import types

from . import CANDIDATE_MODULE
from .classify import fmt_error
from .stash import COPY_INSTALLED, INSTALLED, ORIGINAL_INSTALLED

MISSING = object()
PLAIN = (int, float, complex, str, bytes, bool, type(None))


def check(st, t0, mod, path, ns):
    """Compare every name of the copy (module `mod`, file `path`) with its origins in
    the original modules, already imported, and end the stage through `st` (the stage
    runner: pass, fail as rebound-name with the mismatches, or skip with the reason)."""
    import bisect
    import functools
    import importlib

    stmts = sorted((tuple(x) for x in ns.get("statements") or []), key=lambda x: x[0])
    starts = [x[0] for x in stmts]
    real = {}

    def realpath(f):
        # one realpath (a stat per path component) per file name, not per object
        r = real.get(f)
        if r is None:
            r = real[f] = os.path.realpath(f)
        return r

    cand_file = realpath(path)
    files = {}

    def module_file(name):
        if name not in files:
            m = sys.modules.get(name)
            f = getattr(m, "__file__", None) if m is not None else None
            files[name] = realpath(f) if isinstance(f, str) else None
        return files[name]

    def code_of(v):
        for _ in range(8):
            w = getattr(v, "__wrapped__", None)
            if w is None or w is v:
                break
            v = w
        return getattr(v, "__code__", None)

    def site(v, want_file):
        """(file, line) of a function's code, or of a class's methods defined in want_file."""
        if isinstance(v, type):
            lines = []
            try:
                members = list(vars(v).values())
            except TypeError:
                return None
            for m in members:
                if isinstance(m, (staticmethod, classmethod)):
                    m = m.__func__
                elif isinstance(m, property):
                    m = m.fget
                c = code_of(m) if callable(m) else None
                if c is not None and want_file is not None and realpath(c.co_filename) == want_file:
                    lines.append(c.co_firstlineno)
            return (want_file, min(lines)) if lines else None
        c = code_of(v)
        return (realpath(c.co_filename), c.co_firstlineno) if c is not None else None

    def copied_from(line):
        """The original statement a line of the copy was copied from: (module, first, last)."""
        i = bisect.bisect_right(starts, line) - 1
        if i >= 0 and stmts[i][0] <= line <= stmts[i][1]:
            return stmts[i][2], stmts[i][3], stmts[i][4]
        return None

    def tail(q):
        return (q or "").split(".")[1:]

    def same_def(c, o):
        """A class or function of the copy against the original's."""
        if tail(getattr(c, "__qualname__", None)) != tail(getattr(o, "__qualname__", None)):
            return False
        if getattr(c, "__module__", None) != CANDIDATE_MODULE:
            return False
        om = getattr(o, "__module__", None)
        osite = site(o, module_file(om) if isinstance(om, str) else None)
        csite = site(c, cand_file)
        if osite is None or csite is None:
            # no code to locate (a class without methods): the qualified name decides
            return csite is None and type(c) is type(o)
        src = copied_from(csite[1])
        if src is None or csite[0] != cand_file:
            return False
        omod, first, last = src
        return module_file(omod) == osite[0] and first <= osite[1] <= last

    def same_code(c, o, depth):
        """Two functions made from one code object: closures an extern factory returned
        (`_to_2tuple = _ntuple(2)`, where `_ntuple` is torch's), called once by the original
        and once by the copy. The same function when their closure cells hold the same
        (Language Reference §3.2, "Code objects" and "Cell objects")."""
        if not isinstance(c, types.FunctionType) or c.__code__ is not o.__code__:
            return False
        return same_cells(c, o, depth)

    def same_cells(c, o, depth):
        """The closure cells of two functions hold the same, in order (an empty cell is
        never the same)."""
        cc, oc = c.__closure__ or (), o.__closure__ or ()
        if len(cc) != len(oc):
            return False
        for x, y in zip(cc, oc):
            try:
                if not same(x.cell_contents, y.cell_contents, depth + 1):
                    return False
            except ValueError:  # an empty cell
                return False
        return True

    def same_closure(c, o, depth):
        """Two functions a copied factory made (`print_once = once(print)`, where `once`
        returns an inner function that functools.wraps gave the wrapped one's `__module__`,
        `__qualname__` and `__wrapped__`, Library Reference functools.update_wrapper): the
        copy's code object compiled from the original statement the original's code sits
        in, the same name, and closure cells holding the same (Language Reference §3.2,
        "Code objects" and "Cell objects")."""
        if not isinstance(c, types.FunctionType) or not isinstance(o, types.FunctionType):
            return False
        cc, oc = c.__code__, o.__code__
        if cc.co_name != oc.co_name or realpath(cc.co_filename) != cand_file:
            return False
        src = copied_from(cc.co_firstlineno)
        if src is None:
            return False
        omod, first, last = src
        if module_file(omod) != realpath(oc.co_filename) or not first <= oc.co_firstlineno <= last:
            return False
        return same_cells(c, o, depth)

    def plain(v, depth=0):
        if isinstance(v, PLAIN):
            return True
        if depth < 4 and type(v) in (tuple, frozenset) and len(v) <= 1000:
            return all(plain(x, depth + 1) for x in v)
        return False

    def equal(c, o):
        if type(c) is not type(o):
            return False
        if type(c) in (tuple, frozenset):
            if len(c) != len(o):
                return False
            if type(c) is frozenset:
                return c == o
            return all(equal(x, y) for x, y in zip(c, o))
        if isinstance(c, float) and c != c:
            return o != o
        return c == o

    def fresh_twin(c, o):
        """One definition of an installed package that the candidate imported afresh
        (stash.INSTALLED) and the original's import loaded before, or the other way round
        (stash.COPY_INSTALLED, the original's fresh ones: ORIGINAL_INSTALLED): the same
        module and qualified name."""
        m = getattr(o, "__module__", None)
        return (
            isinstance(m, str)
            and (m in INSTALLED or m in COPY_INSTALLED or m in ORIGINAL_INSTALLED)
            and getattr(c, "__module__", None) == m
            and getattr(c, "__qualname__", None) == getattr(o, "__qualname__", None)
        )

    def same(c, o, depth=0):
        if c is o:
            return True
        if c is MISSING or o is MISSING or depth > 4:
            return False
        if isinstance(o, types.ModuleType):
            return isinstance(c, types.ModuleType) and c.__name__ == o.__name__
        if isinstance(o, functools.partial):
            return (
                isinstance(c, functools.partial)
                and same(c.func, o.func, depth + 1)
                and len(c.args) == len(o.args)
                and all(same(x, y, depth + 1) for x, y in zip(c.args, o.args))
                and set(c.keywords) == set(o.keywords)
                and all(same(c.keywords[k], o.keywords[k], depth + 1) for k in o.keywords)
            )
        if isinstance(o, types.FunctionType) and (same_code(c, o, depth) or same_closure(c, o, depth)):
            return True
        if isinstance(o, type) or isinstance(o, types.FunctionType):
            return same_def(c, o) or fresh_twin(c, o)
        if plain(o):
            return equal(c, o)
        # other objects: the same kind of thing (their class, compared as a definition)
        return (
            type(c) is type(o)
            or (isinstance(type(o), type) and same_def(type(c), type(o)))
            or fresh_twin(type(c), type(o))
        )

    def describe(v, copy):
        if v is MISSING:
            return "unbound"
        if isinstance(v, types.ModuleType):
            return "module %s" % v.__name__
        if isinstance(v, type) or isinstance(v, types.FunctionType):
            kind = "class" if isinstance(v, type) else "function"
            q = getattr(v, "__qualname__", "?")
            if copy:
                s = site(v, cand_file)
                src = copied_from(s[1]) if s and s[0] == cand_file else None
                where = (" copied from %s lines %d-%d" % src) if src else ""
                return "%s %s%s" % (kind, q, where)
            return "%s %s.%s" % (kind, getattr(v, "__module__", "?"), q)
        if plain(v):
            r = repr(v)
            return r if len(r) <= 80 else r[:77] + "..."
        return "%s object" % type(v).__name__

    g = mod.__dict__
    checked, skipped, mismatches, reasons = 0, 0, [], {}
    for entry in ns.get("names") or []:
        name, origins = entry.get("name"), entry.get("origins") or []
        c = g.get(name, MISSING)
        for omod, attr in origins:
            try:
                om = sys.modules.get(omod) or importlib.import_module(omod)
            except BaseException as e:  # noqa: BLE001
                skipped += 1
                reasons.setdefault("module %s does not import: %s" % (omod, fmt_error(e)[:200]), 1)
                continue
            o = getattr(om, attr, MISSING)
            if c is MISSING and o is MISSING:
                skipped += 1  # bound in neither (TYPE_CHECKING imports, conditional code)
                continue
            checked += 1
            try:
                ok = same(c, o)
            except Exception:  # noqa: BLE001 - an object that cannot be compared
                ok = type(c) is type(o)
            if not ok and len(mismatches) < 20:
                mismatches.append(
                    {
                        "name": name,
                        "copy": describe(c, True),
                        "original": "%s.%s: %s" % (omod, attr, describe(o, False)),
                    }
                )
            elif not ok:
                mismatches.append(None)
    summary = {"checked": checked}
    if skipped:
        summary["skipped"] = skipped
    if mismatches:
        shown = [m for m in mismatches if m]
        summary["mismatches"] = shown
        err = "%d name(s) of the copy denote something else than in the original: %s" % (
            len(mismatches),
            "; ".join("%s is %s, originally %s" % (m["name"], m["copy"], m["original"]) for m in shown[:5]),
        )
        st.end("namespace", t0, "fail", category="rebound-name", error=err, namespace=summary)
    elif checked:
        st.end("namespace", t0, "pass", namespace=summary)
    else:
        summary["reason"] = next(iter(reasons), "no name of the copy came from the original corpus")
        st.end("namespace", t0, "skip", reason=summary["reason"], namespace=summary)
