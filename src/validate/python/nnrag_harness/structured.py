# Structured forward arguments read from how the code uses them (src/validate/README.md
# "Witnesses"): a loss's `targets` that the code iterates (`for t in targets`,
# `len(targets)`, `zip(targets, ...)`) and subscripts with string constants
# (`t["labels"]`) is a list of dicts with those keys; keys only tested (`"k" in t`,
# `t.get("k")`) are optional and left out. Values come from the key's name (labels ->
# class indices, boxes -> (cx, cy, w, h) in [0, 1], sizes -> (H, W), image -> one image).
#
# Used by the harvest to call the companions an entry point built alongside its model
# (a criterion, a post-processor: modules returned next to the model, whose first
# forward parameter is the model's output), so that they and the modules they call are
# recorded with real inputs.
import ast
import inspect
import re
import sys

N_OBJECTS = 2  # objects per synthesized target


def _module_tree(mod):
    try:
        src = inspect.getsource(mod)
    except (OSError, TypeError):
        return None
    try:
        return ast.parse(src)
    except SyntaxError:
        return None


# the fields of a node that hold statements (a block's body, an else, a finally, an
# except clause, a match case): a function definition is a statement (Language Reference
# §8.7), so it is found among them and never inside an expression
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _functions(tree):
    """Every function definition of `tree`, at any depth (methods, nested functions),
    walking its statements only: a third of a whole-tree walk's nodes."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if isinstance(block, list):
                todo.extend(block)


def usage_in_function(fn, param):
    """How one function uses its parameter `param`: {"list": bool, "dict": bool,
    "keys": set, "optional": set} (keys of the dict itself or of its elements)."""
    names = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    if param not in names:
        return None
    whole, elems = {param}, set()
    u = {"list": False, "dict": False, "keys": set(), "optional": set()}

    def bind_elem(target, it):
        """`for T in IT`: the element names T takes from `param`."""
        if isinstance(it, ast.Name) and it.id in whole:
            u["list"] = True
            if isinstance(target, ast.Name):
                elems.add(target.id)
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("zip", "enumerate"):
            args = it.args
            if it.func.id == "enumerate" and args and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                bind_elem(target.elts[1], args[0])
            elif it.func.id == "zip" and isinstance(target, ast.Tuple):
                for t, a in zip(target.elts, args):
                    bind_elem(t, a)

    # two passes: element names first (loops and comprehensions), then their uses
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            bind_elem(node.target, node.iter)
        elif isinstance(node, ast.comprehension):
            bind_elem(node.target, node.iter)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
            a = node.args[0]
            if isinstance(a, ast.Name) and a.id in whole:
                u["list"] = True

    def const(sub):
        key = sub.slice
        if isinstance(key, ast.Index):  # Python < 3.9
            key = key.value
        return key.value if isinstance(key, ast.Constant) else None

    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Subscript)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in whole
            and isinstance(const(node.value), int)
            and isinstance(const(node), str)
        ):
            # `param[0]["labels"]`: an element read by position
            u["list"] = True
            u["keys"].add(const(node))
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            key = node.slice
            if isinstance(key, ast.Index):  # Python < 3.9
                key = key.value
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if node.value.id in elems:
                    u["keys"].add(key.value)
                elif node.value.id in whole:
                    u["dict"] = True
                    u["keys"].add(key.value)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            c = node.comparators[0]
            if (
                isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)
                and isinstance(c, ast.Name)
                and c.id in whole | elems
            ):
                u["optional"].add(node.left.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            v = node.func.value
            if (
                isinstance(v, ast.Name)
                and v.id in whole | elems
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                u["optional"].add(node.args[0].value)
    return u


def usage(modules, param):
    """The structure of `param` over every function of `modules` that takes a parameter
    of that name (a criterion hands `targets` to its matcher and its loss methods):
    ("list", keys) for a list of dicts, ("dict", keys) for a dict, else None."""
    agg = {"list": False, "dict": False, "keys": set(), "optional": set()}
    for mod in modules:
        tree = _module_tree(mod)
        if tree is None:
            continue
        for fn in _functions(tree):
            u = usage_in_function(fn, param)
            if u is None:
                continue
            for k in ("list", "dict"):
                agg[k] = agg[k] or u[k]
            agg["keys"] |= u["keys"]
            agg["optional"] |= u["optional"]
    keys = sorted(agg["keys"] - agg["optional"])
    if agg["list"] and keys:
        return ("list", keys)
    if agg["dict"] and keys:
        return ("dict", keys)
    return None


def value_for_key(key, hw, torch, gen):
    """A value for a dict entry from its key's name, for N_OBJECTS objects in an image of
    size hw = (H, W)."""
    k = key.lower()
    n = N_OBJECTS
    h, w = hw
    if re.search(r"label|class|cls|categor", k):
        return torch.randint(0, 2, (n,), generator=gen)
    if re.search(r"box", k):
        return torch.rand(n, 4, generator=gen) * 0.25 + 0.25  # (cx, cy, w, h), normalized
    if re.search(r"mask", k):
        return torch.rand(n, h, w, generator=gen) > 0.5
    if re.search(r"size|shape", k):
        return (h, w)
    if re.search(r"^image$|^img$|^images?$", k):
        return torch.randn(3, h, w, generator=gen)
    if re.search(r"point|coord|keypoint", k):
        return torch.rand(1, n, 2, generator=gen) * min(h, w)
    if re.search(r"(^|_)id$|index|idx", k):
        return torch.tensor([0])
    return torch.rand(n, generator=gen)


def structured_value(kind, keys, batch, hw, torch, gen):
    one = lambda: {k: value_for_key(k, hw, torch, gen) for k in keys}  # noqa: E731
    if kind == "list":
        return [one() for _ in range(batch)]
    return one()


def related_modules(obj):
    """The modules whose functions see a companion's arguments: its class's own module
    and bases', and those of the repository modules it holds (a criterion's matcher)."""
    mods = []
    for c in type(obj).__mro__:
        m = sys.modules.get(c.__module__)
        if m is not None and m not in mods and not c.__module__.startswith("torch"):
            mods.append(m)
    for v in list(vars(obj).get("_modules", {}).values()) + [v for v in vars(obj).values() if hasattr(v, "forward")]:
        m = sys.modules.get(type(v).__module__)
        if m is not None and m not in mods and not type(v).__module__.startswith("torch"):
            mods.append(m)
    return mods


OUTPUT_NAMES = re.compile(r"^(outputs?|out|preds?|predictions?|logits)$")
RESULT_NAMES = re.compile(r"^(results?|detections?)$")


def companion_args(companion, output, batch, hw, torch, gen, previous=None):
    """Positional arguments for a companion's forward: the model's output first (or
    where a parameter is named like it: `outputs`), what the companion before it
    returned for a parameter named `results` (post-processing steps chain: boxes, then
    masks), the other required parameters by use (a list of dicts for `targets`) or by
    name (sizes -> (B, 2) image sizes, flags annotated bool -> False); None when one is
    unknown."""
    try:
        sig = inspect.signature(companion.forward)
    except (TypeError, ValueError):
        return None
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty
    ]
    if not params:
        return None
    args = []
    mods = None
    for i, p in enumerate(params):
        if RESULT_NAMES.match(p.name) and previous is not None:
            args.append(previous)
            continue
        if OUTPUT_NAMES.match(p.name) or (i == 0 and not RESULT_NAMES.match(p.name)):
            args.append(output)
            continue
        if i == 0:
            return None
        if mods is None:
            mods = related_modules(companion)
        u = usage(mods, p.name)
        if u is not None:
            args.append(structured_value(u[0], u[1], batch, hw, torch, gen))
        elif re.search(r"sizes?$|shapes?$", p.name):
            args.append(torch.tensor([list(hw)] * batch))
        elif p.annotation is bool or p.annotation == "bool":
            args.append(False)
        else:
            return None
    return args


def companions(result, model, nn, depth=0):
    """Modules an entry point returned next to its model (tuple / list / dict values,
    one level of nesting): a criterion, post-processors."""
    out = []
    if depth > 2:
        return out
    items = result.values() if isinstance(result, dict) else result if isinstance(result, (list, tuple)) else []
    for v in items:
        if isinstance(v, nn.Module):
            if v is not model:
                out.append(v)
        elif isinstance(v, (dict, list, tuple)):
            out.extend(companions(v, model, nn, depth + 1))
    return out
