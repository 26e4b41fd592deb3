# Configuration objects of the guess source (src/validate/README.md "Constructor arguments
# and inputs"): a required constructor parameter that takes a configuration object
# (`BertLayer(config)`: the layer reads `config.hidden_size`, `config.num_attention_heads`
# and hands `config` on to its sub-layers) gets an instance of the configuration class the
# code of its module names for that parameter, built from the class's own defaults:
#
#   isinstance(config, C)            the code checks that the parameter is a C
#   config = C(...), C.from_…(...)   the module binds a value of that name to a C it
#                                    makes (an alternative constructor: a classmethod
#                                    named `from_…`)
#   def f(config: C)                 a parameter of that name annotated with C (PEP 484)
#   config_class = C                 a class attribute naming the configuration class of
#                                    the module's models (the `config_class` convention
#                                    of model classes built from configuration objects),
#                                    for a parameter named like a configuration
#   C.from_dict(config)              the parameter is the mapping C is made from: it gets
#                                    a dict (the small widths below, or none: C's defaults)
#
# read with `ast` from the source of the block's original module (else the copy's), the
# names resolved in the copy's namespace, else the original module's. A class qualifies
# when it is neither a builtin, a torch class, nor an nn.Module, and its constructor needs
# no argument (every parameter has a default): `C()` is the configuration its author
# chose. A dataclass (PEP 557) is built as arguments.build_config builds one. Its
# width-like parameters with a wide default (768, 3072: arguments.is_wide_default) are
# first set to the guess's small width and heads (`C(hidden_size=32,
# num_attention_heads=4, intermediate_size=32)`), so the block builds small, then it is
# built from its defaults alone. An attribute the code reads that the class lacks (a
# field the author's configurations add: `config.encoder_width`) is given after the
# AttributeError names it, guessed by name (missing_attribute_variant).
import ast
import inspect
import re
import sys

from . import arguments as A
from . import configs as CF
from . import usage as U
from . import values as V

# an alternative constructor (classmethod) of a configuration class: `C.from_dict(...)`
ALT_CTOR_PREFIX = "from_"
# a class attribute that names a model's configuration class
CONFIG_CLASS_ATTRS = ("config_class",)


def _module_source(mod):
    try:
        return inspect.getsource(mod)
    except (OSError, TypeError):
        return None


def _names_for(tree, param):
    """(dotted name, form) pairs the module's code ties to a configuration parameter
    `param`, strongest evidence first: isinstance checks of `param`, the name bound to a
    construction (`param = C(...)`, `param = C.from_pretrained(...)`), annotations of a
    parameter named `param`, a `config_class = C` class attribute (for a parameter named
    like a configuration, arguments.CONFIG_NAMES); the form "instance". Then `C.from_dict(param)`:
    the parameter is the mapping C is made from, the form "dict"."""
    checks, binds, anns, attrs, dicts = [], [], [], [], []

    def dotted(e):
        parts = CF._attr_path(e)
        return ".".join(parts) if parts else None

    def made_class(call):
        """C of a call `C(...)` or `C.from_…(...)`."""
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr.startswith(ALT_CTOR_PREFIX):
            return dotted(f.value)
        return dotted(f)

    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance" and len(n.args) == 2:
            a, t = n.args
            if isinstance(a, ast.Name) and a.id == param:
                for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                    d = dotted(e)
                    if d:
                        checks.append(d)
        elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            if any(isinstance(t, ast.Name) and t.id == param for t in n.targets):
                call = n.value
                uses = any(isinstance(x, ast.Name) and x.id == param for x in ast.walk(call))
                d = made_class(call)
                f = call.func
                if d and not uses:
                    binds.append(d)
                elif d and uses and isinstance(f, ast.Attribute) and f.attr == "from_dict":
                    dicts.append(d)
        elif isinstance(n, ast.ClassDef) and A.CONFIG_NAMES.match(param):
            for st in n.body:
                if (
                    isinstance(st, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id in CONFIG_CLASS_ATTRS for t in st.targets)
                    and dotted(st.value)
                ):
                    attrs.append(dotted(st.value))
        elif isinstance(n, ast.arg) and n.arg == param and n.annotation is not None:
            d = dotted(n.annotation)
            if d:
                anns.append(d)
        if _from_dict_of(n, param):
            d = dotted(n.func.value)
            if d:
                dicts.append(d)
    out = []
    for d, form in [(d, "instance") for d in checks + binds + anns + attrs] + [(d, "dict") for d in dicts]:
        if (d, form) not in out:
            out.append((d, form))
    return out


def _lookup(dotted, namespaces):
    for ns in namespaces:
        if not ns:
            continue
        parts = dotted.split(".")
        obj = ns.get(parts[0])
        for p in parts[1:]:
            obj = getattr(obj, p, None)
        if obj is not None:
            return obj
    return None


def _qualifies(c, nn):
    if not isinstance(c, type) or issubclass(c, A.BUILTIN_TYPES) or issubclass(c, nn.Module):
        return False
    if (getattr(c, "__module__", "") or "").split(".")[0] in ("torch", "builtins", "typing"):
        return False
    import dataclasses

    if dataclasses.is_dataclass(c):
        return True
    params = A.ctor_params(c)
    return params is not None and all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
    )


def config_classes(cls, param, mod_globals, data_ns=None, nn=None):
    """(class, form) for the configuration classes the code of `cls`'s module names for
    its parameter `param`, strongest evidence first (_names_for; form "instance": a C,
    "dict": the mapping `C.from_dict` takes); `data_ns` the original module's namespace
    (a dict, or None)."""
    if nn is None:
        import torch.nn as nn
    trees = []
    for ns in (data_ns, mod_globals):
        if not ns:
            continue
        name = ns.get("__name__")
        mod = sys.modules.get(name) if name else None
        src = _module_source(mod) if mod is not None else None
        if src is None and ns.get("__file__"):
            try:
                with open(ns["__file__"], encoding="utf-8") as f:
                    src = f.read()
            except OSError:
                src = None
        if src:
            try:
                trees.append(ast.parse(src))
            except SyntaxError:
                pass
    out = []
    for tree in trees:
        for d, form in _names_for(tree, param):
            c = _lookup(d, (mod_globals, data_ns))
            if c is not None and (c, form) not in out and _qualifies(c, nn):
                out.append((c, form))
    return out


def small_kwargs(c, d, h):
    """Keyword arguments that build configuration class `c` small: each width-like
    parameter with a wide int default (arguments.is_wide_default) set to width `d`,
    each heads-like one to `h`."""
    params = A.ctor_params(c) or []
    kw = {}
    for p in params:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or type(p.default) is not int:
            continue
        if A.HEADS.match(p.name) and p.default > h:
            kw[p.name] = h
        elif A.is_wide_default(p):
            kw[p.name] = d
    return kw


# id(value) -> (value, class) of the configuration values build() made (their missing
# attributes may be given: with_attribute)
MADE = {}


def _made(v, c):
    MADE[id(v)] = (v, c)
    return v


MISSING_ATTR = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def _attribute_value(name, nn):
    """A value for an attribute a configuration class lacks, guessed by its name at the
    guess's first width (arguments._guess_by_name): plain data only."""
    v = A._guess_by_name(name, inspect.Parameter.empty, A.CANDIDATE_WIDTHS[0][0], A.CANDIDATE_WIDTHS[0][1], nn)
    if v is None or type(v) in (bool, int, float, str):
        return v
    raise A.Unguessable(name)


def missing_attribute_variant(args, kwargs, error, nn):
    """After `AttributeError: 'C' object has no attribute 'a'` where a configuration value
    build() made is a C (or the mapping a C is made from): the same arguments with that
    value given `a`, guessed by name (the code reads an attribute its author's
    configurations add to C's defaults: a model's own field); None when none applies."""
    m = MISSING_ATTR.search(str(error))
    if not m:
        return None
    cname, attr = m.groups()
    try:
        val = _attribute_value(attr, nn)
    except A.Unguessable:
        return None

    def fix(v):
        made = MADE.get(id(v))
        if made is None or made[0] is not v or made[1].__name__ != cname:
            return None
        c = made[1]
        if isinstance(v, dict):
            out = dict(v)
            out[attr] = val
            return _made(out, c)
        rec = V.BUILT.get(id(v))
        params = A.ctor_params(c) or []
        if rec is not None and rec[0]() is v and any(p.kind == p.VAR_KEYWORD for p in params):
            kw = dict(rec[3])
            kw[attr] = val
            new = c(**kw)
            if getattr(new, attr, object()) == val:
                return _made(V.record_built(new, c, [], kw), c)
        import copy

        new = copy.copy(v)
        setattr(new, attr, val)
        return _made(new, c)

    changed = False
    args2, kwargs2 = list(args), dict(kwargs)
    for i, v in enumerate(args2):
        f = fix(v)
        if f is not None:
            args2[i], changed = f, True
    for k, v in kwargs2.items():
        f = fix(v)
        if f is not None:
            kwargs2[k], changed = f, True
    return (args2, kwargs2) if changed else None


def build(c, form, d, h, nn, g=None, small=True):
    """An instance of configuration class `c`: small (small_kwargs) or from its defaults;
    a dataclass as arguments.build_config builds it. Recorded as its construction
    (values.BUILT: a usage line writes `C(hidden_size=32, ...)`). The form "dict" gives
    the mapping instead: the small keyword arguments (`C.from_dict` takes the others'
    defaults), checked to build a C."""
    import dataclasses

    if form == "instance" and dataclasses.is_dataclass(c):
        return A.build_config(c, d, h, nn, g)
    kw = small_kwargs(c, d, h) if small else {}
    if form == "dict":
        c.from_dict(dict(kw))
        return _made(dict(kw), c)
    return _made(V.record_built(c(**kw), c, [], kw), c)


# a parameter named like a configuration object (`config`, `med_config`, `cfg`)
CONFIG_PARAM = re.compile(r"(^|_)(config|cfg|conf|configuration)$", re.I)


def config_params(req, nn):
    """{parameter: [(class, form), ...]} for the required parameters of the request's class that
    take a configuration object its module's code names (config_classes): named like one
    (CONFIG_PARAM, arguments.CONFIG_NAMES) or read by attribute in the class's code
    (usage.attribute_reads), unannotated or annotated with something that is no class (a
    string the module cannot evaluate). The copy's own module is read first; the
    original module (`req.data_ns`, imported in the candidate's process) only when the
    copy names no class for it. A class the module makes from a mapping is a candidate
    instance too; the mapping comes first only for a class whose own __init__ makes the
    configuration from it (converts)."""
    out = {}
    data_ns = None
    tried = False
    reads = None
    for p in req.required:
        if p.annotation is not inspect.Parameter.empty and isinstance(
            A.resolve_annotation(p.annotation, req.mod_globals), type
        ):
            continue  # an annotation naming a class: guess_value's rules
        if not (CONFIG_PARAM.search(p.name) or A.CONFIG_NAMES.match(p.name)):
            if reads is None:
                try:
                    reads = U.attribute_reads(req.cls)
                except Exception:  # noqa: BLE001 - reading the code is best effort
                    reads = {}
            if not reads.get(p.name):
                continue
        try:
            cs = config_classes(req.cls, p.name, req.mod_globals, None, nn)
            if not cs:
                if not tried:
                    tried = True
                    try:
                        data_ns = req.data_ns() if callable(req.data_ns) else req.data_ns
                    except Exception:  # noqa: BLE001 - the original does not import
                        data_ns = None
                if data_ns:
                    cs = config_classes(req.cls, p.name, req.mod_globals, data_ns, nn)
        except Exception:  # noqa: BLE001 - reading the code is best effort
            cs = []
        if not cs:
            continue
        # a class the module converts a mapping into is also what its layers take once
        # converted (`config = C.from_dict(config)`, then `Layer(config)`)
        for c, form in list(cs):
            if form == "dict" and (c, "instance") not in cs:
                cs.append((c, "instance"))
        cs.sort(key=lambda x: x[1] != ("dict" if converts(req.cls, p.name) else "instance"))
        out[p.name] = cs
    return out


def _from_dict_of(n, param):
    """Whether the node is a call `C.from_dict(param)` (the parameter is the mapping a
    configuration class is made from)."""
    return (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "from_dict"
        and bool(n.args)
        and isinstance(n.args[0], ast.Name)
        and n.args[0].id == param
    )


def converts(cls, param):
    """Whether the class's own __init__ makes its configuration from the parameter
    (`param = C.from_dict(param)`): then the parameter is the mapping."""
    _, node = U._function_node(getattr(cls, "__init__", None))
    if node is None:
        return False
    for n in ast.walk(node):
        if _from_dict_of(n, param):
            return True
    return False
