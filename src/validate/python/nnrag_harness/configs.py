# Configuration sources a repository ships, read statically with `ast` (never run), for
# the witness harvest (src/validate/README.md "Witnesses"):
#
#   yacs     `_C = CN()` / `CfgNode()` defaults files: `_C.MODEL.WIDTH = 96` assignments
#            become a nested configuration read by attribute (`cfg.MODEL.WIDTH`), as
#            yacs's CfgNode is, whether or not the CfgNode library is installed
#   dicts    `dict(type='X', …)` config files (OpenMMLab style): the repository class named
#            by `type`, called with the other keys (nested `dict(type=…)` stay dicts: the
#            class builds them through its registry)
#   snippets `if __name__ == "__main__":` blocks of library modules that build a model;
#            run in the module's namespace under the harvest's recorder and budget
import ast
import copy
import os
import re

MAX_BYTES = 400_000
CFG_CALLS = re.compile(r"^(CN|CfgNode|ConfigNode|Config|ConfigDict|AttrDict|EasyDict|edict)$")


class AttrDict(dict):
    """A nested configuration read by attribute or by key (what yacs's CfgNode and
    easydict give): `cfg.MODEL.WIDTH == cfg["MODEL"]["WIDTH"]`."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None

    def __setattr__(self, k, v):
        self[k] = v

    def clone(self):
        return to_attrdict(self)

    def freeze(self):
        return None

    def defrost(self):
        return None

    def is_frozen(self):
        return False


def to_attrdict(tree):
    if isinstance(tree, dict):
        return AttrDict((k, to_attrdict(v)) for k, v in tree.items())
    if isinstance(tree, list):
        return [to_attrdict(x) for x in tree]
    return tree


def _read(path):
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _literal(node, names=None):
    """A literal value (ast.literal_eval), with `dict(a=1)` calls as dicts; a device
    string naming CUDA reads as CPU (the sandbox has none). `names`: the values of the
    file's earlier module-level assignments, which a bare name reads (Language Reference
    §4.2.2: a name is looked up when the statement runs). Raises ValueError."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {k.arg: _literal(k.value, names) for k in node.keywords if k.arg}
    if isinstance(node, (ast.List, ast.Tuple)):
        vals = [_literal(e, names) for e in node.elts]
        return vals if isinstance(node, ast.List) else tuple(vals)
    if isinstance(node, ast.Dict):
        return {_literal(k, names): _literal(v, names) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.Name) and names is not None and node.id in names:
        return copy.deepcopy(names[node.id])
    v = ast.literal_eval(node)
    if isinstance(v, str) and re.match(r"^cuda(:\d+)?$", v):
        return "cpu"
    return v


def _attr_path(node):
    """`_C.MODEL.SWIN.DEPTH` -> ["_C", "MODEL", "SWIN", "DEPTH"], else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _call_name(node):
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def yacs_tree(src):
    """The nested defaults of a yacs-style file: {root name: tree} for each module-level
    `NAME = CN()`, filled by the module-level `NAME.A.B = literal` assignments (and
    `NAME.A = CN()` sub-nodes, `CN(new_allowed=True)` included). Values that are not
    literals are left out."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return {}
    roots = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        t, v = node.targets[0], node.value
        if isinstance(t, ast.Name) and CFG_CALLS.match(_call_name(v) or ""):
            roots[t.id] = {}
            continue
        path = _attr_path(t)
        if not path or path[0] not in roots or len(path) < 2:
            continue
        d = roots[path[0]]
        for p in path[1:-1]:
            d = d.setdefault(p, {})
            if not isinstance(d, dict):
                break
        if not isinstance(d, dict):
            continue
        if CFG_CALLS.match(_call_name(v) or ""):
            d.setdefault(path[-1], {})
            continue
        try:
            d[path[-1]] = _literal(v)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            continue
    return {k: v for k, v in roots.items() if v}


def _py_files(roots, limit):
    n = 0
    for root in roots:
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in ("__pycache__", "node_modules"))
            for f in sorted(files):
                if f.endswith(".py"):
                    n += 1
                    if n > limit:
                        return
                    yield root, os.path.join(d, f)


def yacs_configs(roots, limit=600):
    """Configurations from the repository's yacs-style defaults files: one per root
    node with at least three values."""
    out = []
    for root, p in _py_files(roots, limit):
        src = _read(p)
        if not src or not re.search(r"\b(CN|CfgNode|ConfigNode)\s*\(", src):
            continue
        for name, tree in yacs_tree(src).items():
            if _count(tree) >= 3:
                out.append(
                    {
                        "kind": "yacs",
                        "file": os.path.relpath(p, root),
                        "root": name,
                        "fields": sorted(tree),
                        "tree": tree,
                    }
                )
    return out


def _count(tree):
    return sum(_count(v) if isinstance(v, dict) else 1 for v in tree.values())


def dict_type_configs(roots, limit=4000, max_files=400, per_type=3):
    """`dict(type='X', …)` values of the repository's config files (a file that defines no
    function or class), each a constructor call in the registry convention: `type` names
    the class, the other keys are its keyword arguments. The module-level assignments
    (`model = dict(type='Net', …)`) and every such dict nested in them
    (`backbone=dict(type='ResNet', depth=50)`, which the outer class builds through its
    registry) are calls: (file, name, type, kwargs, types). A name a value reads is the
    file's earlier assignment of it (`norm_cfg = dict(type='BN')`, then
    `norm_cfg=norm_cfg`). Distinct calls only, at most `per_type` of one class, so that
    many classes have one."""
    out, seen, count = [], set(), {}

    def add(p, root, name, v):
        if not isinstance(v.get("type"), str):
            return
        kwargs = {k: x for k, x in v.items() if k != "type"}
        key = (v["type"], repr(kwargs))
        if key in seen or count.get(v["type"], 0) >= per_type:
            return
        seen.add(key)
        count[v["type"]] = count.get(v["type"], 0) + 1
        out.append(
            {
                "file": os.path.relpath(p, root),
                "name": name,
                "type": v["type"],
                "kwargs": kwargs,
                "types": sorted(_types_in(v)),
            }
        )

    def walk(p, root, name, v):
        if isinstance(v, dict):
            add(p, root, name, v)
            for k, x in v.items():
                walk(p, root, "%s.%s" % (name, k), x)
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(p, root, "%s[%d]" % (name, i), x)

    for root, p in _py_files(roots, limit):
        src = _read(p)
        if not src or "type=" not in src:
            continue
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) for n in tree.body):
            continue  # a module with code, not a config file
        names = {}
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            try:
                v = _literal(node.value, names)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                names.pop(node.targets[0].id, None)  # rebound to what is not read statically
                continue
            names[node.targets[0].id] = v
            walk(p, root, node.targets[0].id, v)
        if len(out) >= max_files:
            break
    return out[:max_files]


def _types_in(v):
    out = set()
    if isinstance(v, dict):
        if isinstance(v.get("type"), str):
            out.add(v["type"])
        for x in v.values():
            out |= _types_in(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            out |= _types_in(x)
    return out


def main_snippet(path):
    """The body of a module's `if __name__ == "__main__":` block (either operand order)
    as (code, names it reads), or None."""
    src = _read(path)
    if not src or "__main__" not in src:
        return None
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq)
        ):
            sides = [node.test.left] + node.test.comparators
            if any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
                isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
            ):
                body = ast.Module(body=node.body, type_ignores=[])
                names = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)} | {
                    n.attr for n in ast.walk(body) if isinstance(n, ast.Attribute)
                }
                return compile(body, path, "exec"), names
    return None
