# The call-site source of constructor arguments (sources.py): calls of the class found
# in the corpus, evaluated in their context (CallContext: the enclosing function's
# assignments replayed in a namespace of the module's globals, unknown names guessed by
# name), the calls whose arguments all evaluated first.
import ast
import copy
import inspect

from . import arguments as A
from .sources import Plan


class _Self(object):
    """Stands for `self` while a method's assignments before a call are replayed."""


def _names_in(node):
    """Names an expression reads; `self.x` counts as the name "self.x"."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            out.add("self." + n.attr)
        elif isinstance(n, ast.Name):
            out.add(n.id)
    return out


def _target_keys(t):
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
        return ["self." + t.attr]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [k for e in t.elts for k in _target_keys(e)]
    return []


def _assigned_keys(n):
    """The names (and self.x) an assignment, annotated or augmented assignment or for
    loop binds."""
    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
    return [k for t in targets for k in _target_keys(t)]


def _contains(node, target):
    return any(n is target for n in ast.walk(node))


def is_plain_data(v, depth=0):
    """Numbers, strings, booleans, None, and lists, tuples and dicts of them."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if depth > 4:
        return False
    if type(v) in (list, tuple):
        return len(v) <= 10000 and all(is_plain_data(x, depth + 1) for x in v)
    if type(v) is dict:
        return len(v) <= 10000 and all(
            is_plain_data(k, depth + 1) and is_plain_data(x, depth + 1) for k, x in v.items()
        )
    return False


# the name under which a call-site expression's calls are made (_RecordCalls)
_CALL = "__nnrag_call_site_call__"


class _RecordCalls(ast.NodeTransformer):
    """`f(a, *b, k=c, **d)` rewritten `__nnrag_call_site_call__(f, a, *b, k=c, **d)`: the
    same evaluation order (the callee, then the arguments left to right: Python Language
    Reference 6.3.4 "Calls") and the same call, so that a module the expression builds
    can be recorded with its construction (_call)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        return ast.copy_location(
            ast.Call(func=ast.Name(id=_CALL, ctx=ast.Load()), args=[node.func] + node.args, keywords=node.keywords),
            node,
        )


def _call(f, *args, **kwargs):
    """Call `f`; an nn.Module it constructs (f is its class) is remembered with its
    arguments (values.BUILT), so that a usage line writes that construction and not the
    attributes the instance keeps (guided diffusion's `Unet(dim=64, ...)` keeps no
    `dim`)."""
    out = f(*args, **kwargs)
    if isinstance(f, type) and type(out) is f:
        import torch

        if isinstance(out, torch.nn.Module):
            from .values import record_built

            record_built(out, f, args, kwargs)
    return out


def _compile_recorded(node):
    """An expression node compiled with its calls made through _call."""
    tree = _RecordCalls().visit(ast.Expression(body=copy.deepcopy(node)))
    return compile(ast.fix_missing_locations(tree), "<call-site>", "eval")


class CallContext(object):
    """The arguments of one call of the class, evaluated as the enclosing function
    would evaluate them: a replay of the reaching definitions before the call.
    Python's own rules, approximated without running the function: parameters are
    bound to their defaults (evaluated in the module namespace, as `def` does); the
    statements before the call run in order when they are assignments to names the
    call needs (transitively), `if` tests that evaluate choose their branch, an
    enclosing `for` binds its target to the first item of its iterable, and
    `self.x = …` assignments are kept on a stand-in `self`. A name whose reaching
    definition does not evaluate is unknown: an argument that reads it is guessed
    from the parameter name instead (never taken from a same-named module global)."""

    def __init__(self, text, offset):
        self.tree = ast.parse(text)
        line = text.count("\n", 0, offset) + 1
        col = len(text[text.rfind("\n", 0, offset) + 1 : offset].encode("utf-8"))
        self.call, self.chain = None, []
        stack = [(self.tree, [])]
        while stack and self.call is None:
            node, anc = stack.pop()
            for child in ast.iter_child_nodes(node):
                if (
                    isinstance(child, ast.Call)
                    and getattr(child.func, "end_lineno", None) == line
                    and child.func.end_col_offset == col
                ):
                    self.call, self.chain = child, anc + [node]
                    break
                stack.append((child, anc + [node]))
        if self.call is None:
            raise ValueError("call not found at offset %d" % offset)
        self.fn = next(
            (n for n in reversed(self.chain) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
        )
        # names the call needs, closed over every assignment of the function (any order)
        need = set()
        for a in list(self.call.args) + [k.value for k in self.call.keywords]:
            need |= _names_in(a)
        assigns = [n for n in ast.walk(self.fn)] if self.fn is not None else []
        assigns = [n for n in assigns if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
        changed = True
        while changed:
            changed = False
            for n in assigns:
                if any(k in need for k in _assigned_keys(n)):
                    more = _names_in(n.value) - need
                    if more:
                        need |= more
                        changed = True
        self.need = need

    def evaluate(self, mod_globals, data_ns=None):
        """(namespace, unknown names, evaluator) at the call. `data_ns()` (the original
        module's namespace, asked for only when needed) computes what the copy's namespace
        cannot, when the result is plain data (numbers, strings, lists of them): never a
        class or function of the original."""
        ns = dict(mod_globals)
        unknown = set()
        local = {}
        self_obj = _Self()

        def ev(node):
            if _names_in(node) & unknown:
                raise NameError("unknown at the call site")
            code = _compile_recorded(node)
            ns[_CALL] = _call
            try:
                return eval(code, ns)  # noqa: S307 - sandboxed
            except NameError:
                g = data_ns() if data_ns is not None else None
                if g is None:
                    raise
                ons = dict(g)
                ons.update(local)
                ons["self"] = self_obj
                ons[_CALL] = _call
                v = eval(code, ons)  # noqa: S307 - sandboxed
                if not is_plain_data(v):
                    raise
                return v

        def bind(key, value):
            if key.startswith("self."):
                setattr(self_obj, key[5:], value)
            else:
                ns[key] = value
                local[key] = value
            unknown.discard(key)

        def forget(keys):
            for k in keys:
                if k in self.need:
                    unknown.add(k)

        def forget_all(st, kinds):
            for n in ast.walk(st):
                if isinstance(n, kinds):
                    forget(_assigned_keys(n))

        def bind_first(target, iterable, on_fail):
            """A loop or comprehension target takes the first item of its iterable."""
            keys = _target_keys(target)
            try:
                first = next(iter(ev(iterable)))
                if isinstance(target, ast.Name):
                    bind(target.id, first)
                else:
                    for k, v in zip(keys, first):
                        bind(k, v)
            except Exception:  # noqa: BLE001
                on_fail(keys)

        fn = self.fn
        if fn is not None:
            a = fn.args
            pos = list(getattr(a, "posonlyargs", [])) + list(a.args)
            defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
            for i, (p, dflt) in enumerate(zip(pos, defaults)):
                if i == 0 and p.arg in ("self", "cls"):
                    ns[p.arg] = self_obj
                    continue
                if dflt is None:
                    unknown.add(p.arg)
                    continue
                try:
                    ns[p.arg] = ev(dflt)
                except Exception:  # noqa: BLE001
                    unknown.add(p.arg)
            for p, dflt in zip(a.kwonlyargs, a.kw_defaults):
                try:
                    if dflt is None:
                        raise NameError(p.arg)
                    ns[p.arg] = ev(dflt)
                except Exception:  # noqa: BLE001
                    unknown.add(p.arg)
            if a.vararg is not None:
                ns[a.vararg.arg] = ()
            if a.kwarg is not None:
                ns[a.kwarg.arg] = {}

        def run(stmts):
            for st in stmts:
                if _contains(st, self.call):
                    if isinstance(st, (ast.For, ast.AsyncFor)) and any(_contains(b, self.call) for b in st.body):
                        bind_first(st.target, st.iter, forget)
                        run(st.body)
                    elif isinstance(st, ast.If):
                        run(st.body if any(_contains(b, self.call) for b in st.body) else st.orelse)
                    elif isinstance(st, (ast.With, ast.AsyncWith, ast.While)):
                        run(st.body)
                    elif isinstance(st, ast.Try):
                        for part in (st.body, st.orelse, st.finalbody):
                            if any(_contains(b, self.call) for b in part):
                                run(part)
                                return
                        for h in st.handlers:
                            if _contains(h, self.call):
                                run(h.body)
                    return
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                    keys = _assigned_keys(st)
                    if not any(k in self.need for k in keys):
                        continue
                    try:
                        v = ev(st.value)
                        for t in st.targets if isinstance(st, ast.Assign) else [st.target]:
                            if isinstance(t, (ast.Tuple, ast.List)):
                                for k, x in zip(_target_keys(t), v):
                                    bind(k, x)
                            else:
                                for k in _target_keys(t):
                                    bind(k, v)
                    except Exception:  # noqa: BLE001
                        forget(keys)
                elif isinstance(st, ast.If):
                    try:
                        branch = st.body if ev(st.test) else st.orelse
                    except Exception:  # noqa: BLE001
                        forget_all(st, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                        continue
                    run(branch)
                else:
                    # loops, augmented assignments, with-blocks...: what they bind is unknown
                    forget_all(st, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For))

        run(fn.body if fn is not None else self.tree.body)
        ns["self"] = self_obj
        # a call inside a comprehension: its targets take the first item of their iterables
        for node in self.chain:
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                for gen in node.generators:
                    bind_first(gen.target, gen.iter, unknown.update)
        return ns, unknown, ev

    def arguments(self, mod_globals, params, d, h, nn, data_ns=None):
        """(args, kwargs, number of guessed arguments) or None when unusable."""
        ns, unknown, ev = self.evaluate(mod_globals, data_ns)
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        by_name = {p.name: p for p in params}
        guessed = [0]

        def value(node, pname):
            try:
                return ev(node)
            except Exception:  # noqa: BLE001
                guessed[0] += 1
                p = by_name.get(pname)
                return A.guess_value(
                    pname or "x", p.annotation if p else inspect.Parameter.empty, d, h, nn, mod_globals
                )

        args, kwargs = [], {}
        for a in self.call.args:
            if isinstance(a, ast.Starred):
                try:
                    args.extend(ev(a.value))
                except Exception:  # noqa: BLE001
                    return None
                continue
            pname = positional[len(args)].name if len(args) < len(positional) else None
            args.append(value(a, pname))
        for kw in self.call.keywords:
            if kw.arg is None:
                try:
                    extra = ev(kw.value)
                    kwargs.update(
                        {
                            k: v
                            for k, v in dict(extra).items()
                            if k in by_name or any(p.kind == p.VAR_KEYWORD for p in params)
                        }
                    )
                except Exception:  # noqa: BLE001
                    pass  # `**extra` that does not evaluate is left out
                continue
            kwargs[kw.arg] = value(kw.value, kw.arg)
        # required parameters the evaluated call leaves unset (they came from a `**extra`
        # that did not evaluate) are guessed like the others
        for i, p in enumerate(params):
            if (
                p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and p.name not in kwargs
            ):
                if p.kind == p.POSITIONAL_OR_KEYWORD and i < len(args):
                    continue
                guessed[0] += 1
                kwargs[p.name] = A.guess_value(p.name, p.annotation, d, h, nn, mod_globals)
        return args, kwargs, guessed[0]


def call_site_arguments(site, params, mod_globals, d, h, nn, data_ns=None):
    """(args, kwargs, guessed) from one call site (literal text or {text, offset}), or None."""
    try:
        if isinstance(site, str):
            # a literal argument list "(64, 128, stride=2)": the call `f(64, 128, stride=2)`
            text = site.strip()
            site = {"text": "f" + (text if text.startswith("(") else "(" + text + ")"), "offset": 1}
        return CallContext(site["text"], int(site["offset"])).arguments(mod_globals, params, d, h, nn, data_ns)
    except A.Unguessable:
        return None
    except (SyntaxError, ValueError, KeyError, TypeError, RecursionError):
        return None


class CallSiteSource(object):
    """Plans from the calls of the class the corpus holds (request callSites): evaluated
    in their context, those needing the fewest guesses first."""

    name = "call-site"

    def plans(self, req):
        sites = []
        for i, site in enumerate(req.call_sites or ()):
            r = call_site_arguments(site, req.params, req.mod_globals, 32, 4, req.nn, req.data_ns)
            if r is not None:
                sites.append((r[2], i, site, r[0], r[1]))
        for guessed, i, _site, a, kw in sorted(sites, key=lambda t: (t[0], t[1])):
            label = "call-site %d" % (i + 1) + (" guessed=%d" % guessed if guessed else "")
            yield Plan(self.name, label, a, kw)
