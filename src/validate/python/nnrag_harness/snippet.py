# Usage snippets (src/validate/README.md "Usage snippet"): the construction and call that
# passed validation, as Python a user can paste next to the exported module.
#
# Safe by construction: a snippet is rendered from recorded JSON values (values.encode:
# the witness's own record, or the live arguments encoded the same way), never from
# repr() of a live object (a str subclass can make repr() return anything). Values become
# a tiny IR (names of the module, attribute paths, numbers, strings, None/True/False,
# lists/tuples/dicts, calls of constructors the module or torch defines), rendered by
# this module only: strings through quote() (printable ASCII only, everything else
# escaped), numbers by their exact type. The text is then checked with `ast`
# (check_snippet: only Name / Attribute / Call / Constant / containers / keywords / unary
# minus, `import` of a few standard modules, one statement per line) and finally run in
# the candidate's process (run_snippet) before it is recorded.
#
# A value that is an object rebuilt from its fields (a NamedTuple, a plain class instance
# such as detr's NestedTensor, an attribute dict such as yacs's CfgNode or addict's Dict)
# is written as its class called with those fields when the constructor takes them by
# name; else as generated statements before the expression: `value1 = Class()` (or
# `value1 = Class.__new__(Class)` when the constructor needs arguments that are not its
# fields, as values.decode rebuilds it) then one `value1.field = <value>` per field (the
# same IR, names the renderer chose), never repr.
#
# A value naming a class or function the module does not define (its code never names
# it: a norm layer passed by class) has no spelling; usage_needs lists those names, and
# the pipeline adds them to the module's closure as usage roots and validates it again.
import contextlib
import keyword
import math
import re
import time

from .inputs import flatten_tensors, seed_all

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# longer snippets are not recorded (never cut: a cut snippet would not parse). A model
# built from a list of configuration objects (torchvision's MobileNetV3 takes about 15
# InvertedResidualConfig, 9 generated lines each) needs about 6,000 characters; the
# same bound is USAGE_MAX_CHARS in src/records/block.ts (pool and export check it again)
MAX_LEN = 8000
# a snippet one of whose lines is longer than this is laid out again (Renderer compact,
# laid_out): a model built from a nested configuration (a list of stages of block
# configurations) would otherwise be one line of thousands of characters. Its longest
# parts are then bound to named variables on lines of their own, built before the call,
# until each line keeps to this width where it can; a part shorter than LINE_PART stays
# where it is (a list of many short values is one line). Lines of the reference corpus's
# snippets are at most about 1,300 characters: they stay as they are
LINE_MAX = 2000
LINE_PART = 100
MAX_EXACT = 64  # integer / bool tensors up to this many elements are written by value
# a call that draws random numbers runs again under these seeds (run_snippet). An
# operation a random augmentation applies with probability 1/2 and that refuses the
# validated values is missed by k more draws with probability 2^-k: two let a quarter of
# such lines through (torchvision's RandomSolarize(threshold=32) on float images passed
# seeds 1-3 and failed on the fourth), six 1 in 64. Each run costs one forward, within
# the candidate's CPU budget (time_left)
RESEEDS = (2, 3, 4, 5, 6, 7)
# standard modules a snippet may import (functools.partial, argparse.Namespace, math.inf,
# random.seed in a seeded line)
IMPORTABLE = ("functools", "argparse", "math", "random")
# the generators a line may seed in its first statements after its imports (a seeded line,
# seeded_text), by the name run_snippet's moved_generators gives them, and the call that
# seeds each: torch's default CPU generator (torch.manual_seed, torch docs
# "Reproducibility") and Python's (random.seed, Library Reference "random"); NumPy's global
# generator is not among them (numpy is not a module a snippet imports)
SEEDERS = {"torch": ("torch", "manual_seed"), "random": ("random", "seed")}
# the seeds a seeded line tries, in order: 1 first, the seed run_snippet runs a line's call
# under (the draw that passed, when nothing before the call draws)
SEEDED_TRIES = (1, 2, 3, 4, 5)


class Unrenderable(Exception):
    pass


class NotInModule(Unrenderable):
    """A class or function a value names that the module does not define (the block's
    code never names it): the pipeline can add it to the module for the usage line
    (`usage_needs`)."""

    def __init__(self, module, qualname):
        Unrenderable.__init__(self, "%s.%s is not a name of the module" % (module, qualname))
        self.ref = [module, qualname]


# ---------------------------------------------------------------- rendering of the IR
# IR: ("name", id) | ("attr", node, id) | ("const", value) | ("list", [node])
#     | ("tuple", [node]) | ("dict", [(node, node)]) | ("call", node, [node], [(id, node)])
#     | ("from", module, id): a name `from module import id` binds (an installed distribution's)


def quote(s):
    """A Python string literal for the exact str `s` (Language Reference 2.4.1, string
    literals): printable ASCII kept, backslash and the double quote escaped, every other
    character as \\xNN / \\uNNNN / \\UNNNNNNNN, so the literal holds no line break of any
    kind (\\n, \\r, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, \\u2028, \\u2029) and no control
    character. A str subclass is read as its underlying str data (str.__str__), never
    through its own __repr__ / __str__ / __iter__."""
    s = str.__str__(s)
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == "\\" or ch == '"':
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif o <= 0xFF:
            out.append("\\x%02x" % o)
        elif o <= 0xFFFF:
            out.append("\\u%04x" % o)
        else:
            out.append("\\U%08x" % o)
    out.append('"')
    return "".join(out)


def ident(s):
    if type(s) is not str or not IDENT.match(s) or keyword.iskeyword(s) or s.startswith("__"):
        raise Unrenderable("not a plain identifier: %s" % (quote(s) if isinstance(s, str) else type(s).__name__))
    return s


def render(node):
    k = node[0]
    if k == "name":
        return ident(node[1])
    if k == "attr":
        return "%s.%s" % (render(node[1]), ident(node[2]))
    if k == "const":
        v = node[1]
        if v is None or v is True or v is False:
            return repr(v)
        if type(v) is int:
            return "%d" % v
        if type(v) is float:
            if not math.isfinite(v):
                return "float(%s)" % quote(float.__repr__(v))
            return float.__repr__(v)
        if isinstance(v, str):
            return quote(v)
        raise Unrenderable("constant of type %s" % type(v).__name__)
    if k == "list":
        return "[%s]" % ", ".join(render(x) for x in node[1])
    if k == "tuple":
        items = [render(x) for x in node[1]]
        return "(%s,)" % items[0] if len(items) == 1 else "(%s)" % ", ".join(items)
    if k == "dict":
        return "{%s}" % ", ".join("%s: %s" % (render(a), render(b)) for a, b in node[1])
    if k == "call":
        parts = [render(x) for x in node[2]] + ["%s=%s" % (ident(n), render(v)) for n, v in node[3]]
        return "%s(%s)" % (render(node[1]), ", ".join(parts))
    if k == "from":
        # a public name of an installed distribution, imported by a `from P import N`
        # line of the snippet (from_imports collects them)
        return ident(node[2])
    if k == "new":
        # an instance made without its constructor: `Class.__new__(Class)` (check_snippet
        # allows this one dunder call, as the value of an assignment only)
        c = render(node[1])
        return "%s.__new__(%s)" % (c, c)
    raise Unrenderable("unknown node %s" % k)


# ---------------------------------------------------------------- values -> IR


def const(v):
    return ("const", v)


def dotted(path):
    parts = path.split(".")
    node = ("name", parts[0])
    for p in parts[1:]:
        node = ("attr", node, p)
    return node


class Renderer(object):
    """Turns encoded values (values.encode's JSON) into IR. `spell(module, qualname)`
    gives the IR of a class / function / dtype the snippet names (a name of the module,
    `torch.nn.X`, `functools.partial`) or raises Unrenderable; `imports` collects the
    standard modules the snippet needs; `stmts` the generated assignments (IR
    ("assign", target, node)) an object built field by field needs, in order, binding
    names not in `taken` (the names the snippet's namespace already has)."""

    def __init__(self, spell, taken=(), set_attrs=(), compact=False):
        self.spell = spell
        # a long snippet's layout (LINE_MAX): dataclass fields equal to their defaults left out
        self.compact = compact
        self.imports = set()
        self.stmts = []
        self.taken = set(taken) | {"torch"} | set(IMPORTABLE)
        # (class name, attribute): recorded attributes of nested modules written after
        # their construction (attributes_read)
        self.set_attrs = set(set_attrs)

    def value(self, enc, depth=0):
        if depth > 10:
            raise Unrenderable("too deep")
        if enc is None or isinstance(enc, bool) or type(enc) is int:
            return const(enc)
        if type(enc) is float:
            return const(enc)
        if isinstance(enc, str):
            return const(str.__str__(enc))
        if isinstance(enc, list):
            return ("list", [self.value(x, depth + 1) for x in enc])
        if not isinstance(enc, dict):
            raise Unrenderable("value of type %s" % type(enc).__name__)
        if "$float" in enc:
            f = float(str.__str__(enc["$float"]))
            return const(f)
        if "$tuple" in enc:
            return ("tuple", [self.value(x, depth + 1) for x in enc["$tuple"]])
        if "$dict" in enc:
            return ("dict", [(const(str.__str__(k)), self.value(x, depth + 1)) for k, x in enc["$dict"].items()])
        if "$items" in enc:
            items = []
            for k, x in enc["$items"]:
                if not (k is None or isinstance(k, (bool, int, str))):
                    raise Unrenderable("dict key")
                items.append((self.value(k, depth + 1), self.value(x, depth + 1)))
            return ("dict", items)
        if "$map" in enc:
            items = []
            for k, x in enc["$map"]:
                kt = k.get("$tuple") if isinstance(k, dict) else [k]
                if not isinstance(kt, list) or not all(i is None or isinstance(i, (bool, int, str)) for i in kt):
                    raise Unrenderable("dict key")
                items.append((self.value(k, depth + 1), self.value(x, depth + 1)))
            return ("dict", items)
        if "$tensor" in enc:
            return self.tensor(enc)
        if "$dtype" in enc:
            return ("attr", ("name", "torch"), ident(enc["$dtype"]))
        if "$device" in enc:
            return ("call", dotted("torch.device"), [const("cpu")], [])
        if "$ref" in enc:
            return self.spell(*enc["$ref"])
        if "$enum" in enc:
            return ("attr", self.spell(*enc["$enum"]), ident(enc["name"]))
        if "$partial" in enc:
            self.imports.add("functools")
            return (
                "call",
                dotted("functools.partial"),
                [self.value(enc["$partial"], depth + 1)] + [self.value(x, depth + 1) for x in enc.get("args", [])],
                self.keywords(enc.get("kwargs", {}), depth),
            )
        if "$module" in enc:
            # a nested module: its own recorded construction; attributes set after it
            # (detr's `model.num_channels = backbone.num_channels`) are written only when
            # the block reads them (set_attrs, from the snippet's run: attributes_read),
            # as generated statements after the construction
            made = (
                "call",
                self.spell(*enc["$module"]),
                [self.value(x, depth + 1) for x in enc.get("args", [])],
                self.keywords(enc.get("kwargs", {}), depth),
            )
            attrs = enc.get("attrs") if isinstance(enc.get("attrs"), dict) else {}
            cls_name = str(enc["$module"][1]).split(".")[-1]
            wanted = [(ident(k), v) for k, v in attrs.items() if (cls_name, k) in self.set_attrs]
            if not wanted:
                return made
            var = self.fresh()
            self.stmts.append(("assign", ("name", var), made))
            from .values import plain_value

            for k, v in wanted:
                v = plain_value(v)
                if v is not None and type(v) not in (bool, int, float, str):
                    raise Unrenderable("attribute of type %s" % type(v).__name__)
                self.stmts.append(("assign", ("attr", ("name", var), k), const(v)))
            return ("name", var)
        if "$dataclass" in enc:
            # PEP 557: a dataclass is built by keyword from its init fields
            fields = enc.get("fields", {})
            if self.compact and isinstance(fields, dict):
                fields = self.non_default(enc["$dataclass"], fields)
            return ("call", self.spell(*enc["$dataclass"]), [], self.keywords(fields, depth))
        if "$namespace" in enc:
            self.imports.add("argparse")
            return ("call", dotted("argparse.Namespace"), [], self.keywords(enc.get("fields", {}), depth))
        if "$namedtuple" in enc:
            # a named tuple's constructor takes its fields by name (collections.namedtuple,
            # typing.NamedTuple)
            return ("call", self.spell(*enc["$namedtuple"]), [], self.keywords(enc.get("fields", {}), depth))
        if "$object" in enc:
            return self.obj(enc, depth)
        if "$attrdict" in enc:
            return self.attrdict(enc, depth)
        raise Unrenderable("no plain spelling for %s" % sorted(enc)[:1])

    def non_default(self, ref, fields):
        """A dataclass's recorded init fields without those equal to the field's default
        (PEP 557: the generated __init__ gives an omitted field its `default`, or calls
        its `default_factory`; only the factories of the built-in containers are called
        here), compared as encodings (values.encode: 1 and 1.0 differ). Unchanged when
        the class cannot be looked up or is not a dataclass."""
        import dataclasses

        from .values import encode

        try:
            cls = lookup_of(self.spell)(*ref)
        except Unrenderable:
            return fields
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            return fields
        out = dict(fields)
        for f in dataclasses.fields(cls):
            if not f.init or f.name not in out:
                continue
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory in (list, dict, tuple, set):
                default = f.default_factory()
            else:
                continue
            try:
                same = _same_encoding(encode(default), out[f.name])
            except Exception:  # noqa: BLE001 - a default that does not encode is written
                same = False
            if same:
                del out[f.name]
        return out

    def fresh(self):
        """A name for a generated variable, unused by the snippet's namespace."""
        i = 1
        while "value%d" % i in self.taken:
            i += 1
        self.taken.add("value%d" % i)
        return "value%d" % i

    def obj(self, enc, depth):
        """A plain object rebuilt from its recorded fields: `Class(field=...)` when the
        constructor takes every field by name and needs no other argument (the usual
        container, `self.x = x`), else `valueN = Class()` (a constructor that needs no
        argument) and one attribute assignment per field, as generated statements."""
        cls_node = self.spell(*enc["$object"])
        fields = enc.get("fields") or {}
        if not isinstance(fields, dict):
            raise Unrenderable("object fields")
        cls = lookup_of(self.spell)(*enc["$object"])
        params = init_params(cls)
        if params is None:
            raise Unrenderable("no signature for %s" % ident(enc["$object"][1].split(".")[-1]))
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        required = {p.name for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if set(fields) <= named and required <= set(fields):
            return ("call", cls_node, [], self.keywords(fields, depth))
        values = [(ident(k), self.value(x, depth + 1)) for k, x in fields.items()]
        var = self.fresh()
        # a constructor that needs arguments other than the fields (torchvision's
        # InvertedResidualConfig(…, width_mult) computes its fields from them): the object
        # is made without running it, `object.__new__` as pickle and copy make instances
        # (Data Model §3.3.1, object.__new__), then given its recorded fields, as the
        # witness's value was rebuilt (values.decode)
        make = ("new", cls_node) if required else ("call", cls_node, [], [])
        self.stmts.append(("assign", ("name", var), make))
        for k, node in values:
            self.stmts.append(("assign", ("attr", ("name", var), k), node))
        return ("name", var)

    def attrdict(self, enc, depth):
        """A configuration read by attribute and by key (a dict subclass such as yacs's
        CfgNode, addict's Dict, easydict): its own class called with a dict of its items
        (dict's constructor convention, which these classes keep) when the snippet can
        name that class; else, keys being identifiers, an argparse.Namespace of them
        (attribute reads only: the run of the snippet says whether that is enough)."""
        items = enc["$attrdict"]
        if not isinstance(items, dict):
            raise Unrenderable("attribute dict items")
        ref = enc.get("class")
        cls_node = None
        if isinstance(ref, list) and len(ref) == 2:
            try:
                cls = lookup_of(self.spell)(*ref)
                if isinstance(cls, type) and issubclass(cls, dict):
                    cls_node = self.spell(*ref)
            except Unrenderable:
                cls_node = None
        if cls_node is not None:
            d = ("dict", [(const(str.__str__(k)), self.value(x, depth + 1)) for k, x in items.items()])
            return ("call", cls_node, [d], [])
        self.imports.add("argparse")
        return ("call", dotted("argparse.Namespace"), [], self.keywords(items, depth))

    def keywords(self, kw, depth):
        return [(ident(k), self.value(x, depth + 1)) for k, x in kw.items()]

    def tensor(self, enc):
        """A tensor of the recorded shape and dtype: floats from torch.randn, or, when
        every recorded value was non-negative (an image, a probability, a length: code
        may take its log or square root, or refuse negative pixels), uniform over the
        recorded range (torch.rand for [0, 1], else torch.empty(...).uniform_(lo, hi);
        torch.full when they were all one value);
        integer ids from torch.randint over the recorded range (by value when small),
        masks as ones / zeros (by value when small and mixed)."""
        shape = enc["$tensor"]
        if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
            raise Unrenderable("tensor shape")
        dtype = ident(enc.get("dtype", "float32"))
        dt = [("dtype", ("attr", ("name", "torch"), dtype))]
        dims = [const(s) for s in shape]
        size = ("tuple", dims)
        numel = 1
        for s in shape:
            numel *= s
        floating = dtype.startswith(("float", "bfloat", "complex", "half", "double"))
        if floating:
            fdt = [] if dtype == "float32" else dt
            lo, hi = enc.get("min"), enc.get("max")
            real = not dtype.startswith("complex")
            if real and type(lo) in (int, float) and type(hi) in (int, float) and 0 <= lo <= hi and math.isfinite(hi):
                if lo == hi:
                    return ("call", dotted("torch.full"), [size, const(float(lo))], fdt)
                if hi <= 1:
                    return ("call", dotted("torch.rand"), dims or [("tuple", [])], fdt)
                empty = ("call", dotted("torch.empty"), dims or [("tuple", [])], fdt)
                return ("call", ("attr", empty, "uniform_"), [const(float(lo)), const(float(hi))], [])
            return ("call", dotted("torch.randn"), dims or [("tuple", [])], fdt)
        vals = enc.get("values")
        if numel == 0:
            return ("call", dotted("torch.zeros"), [size], dt)
        if isinstance(vals, list) and vals and all(type(x) in (int, bool) for x in vals):
            lo, hi = int(min(vals)), int(max(vals))
            if dtype == "bool" and lo == hi:
                return ("call", dotted("torch.ones" if lo else "torch.zeros"), [size], dt)
            if numel <= MAX_EXACT:
                return ("call", dotted("torch.tensor"), [nested(vals, shape, dtype == "bool")], dt)
        else:
            lo, hi = enc.get("min", 0), enc.get("max", 1)
            if type(lo) is not int or type(hi) is not int:
                raise Unrenderable("tensor range")
        if dtype == "bool":
            return ("call", dotted("torch.ones"), [size], dt)
        return (
            "call",
            dotted("torch.randint"),
            [const(lo), const(max(hi + 1, lo + 1)), size],
            [] if dtype == "int64" else dt,
        )


REF_KEYS = ("$ref", "$module", "$dataclass", "$namedtuple", "$object", "$enum")
MAX_NEEDS = 8


def references(enc, out=None, depth=0):
    """The classes and functions an encoded value names ([module, qualname] of `$ref`,
    `$module`, `$dataclass`, `$namedtuple`, `$object`, `$enum`, an attribute dict's
    class), in the order they appear."""
    out = [] if out is None else out
    if depth > 12:
        return out
    if isinstance(enc, list):
        for x in enc:
            references(x, out, depth + 1)
    elif isinstance(enc, dict):
        for k in REF_KEYS:
            r = enc.get(k)
            if isinstance(r, list) and len(r) == 2 and all(type(x) is str for x in r):
                out.append(r)
        r = enc.get("class") if "$attrdict" in enc else None
        if isinstance(r, list) and len(r) == 2 and all(type(x) is str for x in r):
            out.append(r)
        for k, x in enc.items():
            if k not in REF_KEYS and k != "class":
                references(x, out, depth + 1)
    return out


def usage_needs(encs, spell):
    """The definitions the recorded values name that the module does not define
    ([module, qualname], spell raising NotInModule; at most MAX_NEEDS, each once): with
    them added to the module (the pipeline's usage roots), the snippet can name them."""
    out = []
    for ref in references(list(encs)):
        if ref in out:
            continue
        try:
            spell(*ref)
        except NotInModule:
            out.append(ref)
        except Unrenderable:
            pass
        if len(out) >= MAX_NEEDS:
            break
    return out


def lookup_of(spell):
    """The object a spelling stands for (spell_in's `lookup`), else a lookup that fails."""

    def none(module, qualname):
        raise Unrenderable("%s.%s cannot be looked up" % (module, qualname))

    return getattr(spell, "lookup", None) or none


def init_params(cls):
    """The parameters of a class's constructor after self, or None."""
    import inspect

    if not isinstance(cls, type):
        return None
    try:
        return list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return None


def nested(vals, shape, as_bool):
    """The flat values as nested lists of `shape` (row-major, as torch.tensor reads them)."""
    vals = [const(bool(v) if as_bool else int(v)) for v in vals]
    if not shape:
        return vals[0]

    def build(off, dims):
        if len(dims) == 1:
            return ("list", vals[off : off + dims[0]])
        step = 1
        for d in dims[1:]:
            step *= d
        return ("list", [build(off + i * step, dims[1:]) for i in range(dims[0])])

    return build(0, shape)


def from_imports(node, out, depth=0):
    """{name: module path} of the ("from", path, name) nodes of an IR tree (the names the
    snippet imports from installed distributions); Unrenderable when one name would come
    from two paths."""
    if depth > 40 or not isinstance(node, tuple) or not node:
        return out
    if node[0] == "from":
        if out.setdefault(node[2], node[1]) != node[1]:
            raise Unrenderable("%s imported from two modules" % ident(node[2]))
        return out
    if node[0] == "const":
        return out
    for x in node[1:]:
        if isinstance(x, tuple):
            from_imports(x, out, depth + 1)
        elif isinstance(x, list):
            for y in x:
                if isinstance(y, tuple) and len(y) == 2 and not isinstance(y[0], str):
                    from_imports(y[0], out, depth + 1)  # a dict's (key, value)
                    from_imports(y[1], out, depth + 1)
                elif isinstance(y, tuple) and len(y) == 2 and isinstance(y[0], str) and isinstance(y[1], tuple):
                    from_imports(y[1], out, depth + 1)  # a keyword (name, value)
                else:
                    from_imports(y, out, depth + 1)
    return out


def _same_encoding(a, b):
    """Whether two encoded values are the same encoding (JSON text with sorted keys: the
    type of a number matters, 1 is not 1.0)."""
    import json

    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def laid_out(node, hint, r, taken):
    """`node` (IR) with parts bound to named variables so that its rendering keeps to
    LINE_MAX where it can; its own parts are laid out first (innermost first). Of a call,
    the longest arguments are bound, one at a time, until it fits; of a list, tuple or
    dict, every element (of LINE_PART characters or more), so that its elements stay
    alike. Each is a generated statement `name = <part>` (r.stmts, in the order Python
    would have evaluated them; a part bound before its siblings that are not is evaluated
    before them, which the sandbox's run of the text checks). A part is named after its
    keyword (`cfg`), else after its parent and position (`blocks_2`), never a name of the
    module's namespace (`taken`)."""
    if len(render(node)) <= LINE_MAX:
        return node
    k = node[0]
    if k == "call":
        parts = [("%s_%d" % (hint, i + 1), a) for i, a in enumerate(node[2])] + list(node[3])
    elif k in ("list", "tuple"):
        parts = [("%s_%d" % (hint, i + 1), a) for i, a in enumerate(node[1])]
    elif k == "dict":
        parts = [("%s_%d" % (hint, i + 1), b) for i, (_, b) in enumerate(node[1])]
    else:
        return node
    parts = [(n, laid_out(v, n, r, taken)) for n, v in parts]

    def rebuild(ps):
        vals = [v for _, v in ps]
        if k == "call":
            n = len(node[2])
            return ("call", node[1], vals[:n], [(kw, v) for (kw, _), v in zip(node[3], vals[n:])])
        if k == "dict":
            return ("dict", [(a, v) for (a, _), v in zip(node[1], vals)])
        return (k, vals)

    sizes = [len(render(v)) for _, v in parts]
    bound = [False] * len(parts)
    if k == "call":
        while len(render(rebuild([(n, ("name", n) if bound[i] else v) for i, (n, v) in enumerate(parts)]))) > LINE_MAX:
            # the longest first, the leftmost of equals
            left = [(sizes[i], -i) for i in range(len(parts)) if not bound[i] and sizes[i] >= LINE_PART]
            if not left:
                break
            bound[-max(left)[1]] = True
    else:
        bound = [n >= LINE_PART for n in sizes]
    # bound in the order Python evaluates the parts (left to right)
    for i, (n, v) in enumerate(parts):
        if bound[i]:
            name = _fresh_name(n, taken)
            r.stmts.append(("assign", ("name", name), v))
            parts[i] = (n, ("name", name))
    return rebuild(parts)


def _fresh_name(base, taken):
    """`base` when it is an identifier no name of `taken` is (then taken), else `base_2`,
    `base_3`, ..."""
    base = base if IDENT.match(base) and not keyword.iskeyword(base) and not base.startswith("_") else "value"
    name, i = base, 1
    while name in taken:
        i += 1
        name = "%s_%d" % (base, i)
    taken.add(name)
    return name


def snippet_text(
    cls_name,
    args_enc,
    kwargs_enc,
    in_args_enc,
    in_kwargs_enc,
    spell,
    eval_mode=False,
    taken=(),
    set_attrs=(),
    packages=(),
):
    """The snippet's text: `import` lines the values need, `from P import N` lines of the
    public names of installed distributions it uses (`packages`), the generated
    assignments of objects built field by field (names not in `taken`; nested modules
    given the recorded attributes `set_attrs` names), then one expression
    `Block(args)(inputs)` (`Block(args).eval()(inputs)` when `eval_mode`). Raises
    Unrenderable."""
    text = _snippet_lines(
        cls_name, args_enc, kwargs_enc, in_args_enc, in_kwargs_enc, spell, eval_mode, taken, set_attrs
    )
    if max(len(line) for line in text.split("\n")) > LINE_MAX:
        # a long value becomes a few generated lines: its dataclasses without the fields
        # their defaults give, its parts bound to named variables before the call
        text = _snippet_lines(
            cls_name, args_enc, kwargs_enc, in_args_enc, in_kwargs_enc, spell, eval_mode, taken, set_attrs, True
        )
    if len(text) > MAX_LEN:
        raise Unrenderable("longer than %d characters" % MAX_LEN)
    check_snippet(text, packages)
    return text


def _snippet_lines(
    cls_name, args_enc, kwargs_enc, in_args_enc, in_kwargs_enc, spell, eval_mode, taken, set_attrs, compact=False
):
    """snippet_text's lines, one statement each (`compact`: laid out, laid_out)."""
    r = Renderer(spell, taken, set_attrs, compact)
    ctor = ("call", ("name", ident(cls_name)), [r.value(a) for a in args_enc], r.keywords(kwargs_enc, 0))
    if compact:
        r.taken.add(cls_name)
        ctor = laid_out(ctor, "arg", r, r.taken)
    if eval_mode:
        ctor = ("call", ("attr", ctor, "eval"), [], [])
    call = ("call", ctor, [r.value(a) for a in in_args_enc], r.keywords(in_kwargs_enc, 0))
    names = {}
    for _, _target, node in r.stmts:
        from_imports(node, names)
    from_imports(call, names)
    clash = [n for n in names if n in r.taken or n == cls_name]
    if clash:
        raise Unrenderable("%s is a name of the module" % ident(clash[0]))
    by_path = {}
    for n, path in names.items():
        by_path.setdefault(path, []).append(n)
    lines = (
        ["import %s" % m for m in sorted(r.imports)]
        + ["from %s import %s" % (path, ", ".join(sorted(ns))) for path, ns in sorted(by_path.items())]
        + ["%s = %s" % (render(target), render(node)) for _, target, node in r.stmts]
        + [render(call)]
    )
    return "\n".join(lines)


def imported_from(text):
    """The module paths of a snippet's `from P import N` lines (the installed
    distributions' modules it imports), in order."""
    out = []
    for line in text.split("\n"):
        m = re.match(r"^from ([A-Za-z_][A-Za-z0-9_.]*) import ", line)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


# ---------------------------------------------------------------- the check with ast


def check_snippet(text, packages=()):
    """Raise Unrenderable unless `text` is printable ASCII, one statement per line: `import`
    lines of IMPORTABLE and `from P import N, M` lines (Language Reference 7.11) of public
    names (no part starting with an underscore, no `as`, no `*`, not relative) of a module
    whose top-level package is one of `packages` (the installed distributions the
    block's module imports), then assignments (Language Reference 7.2) to a plain name or to
    an attribute (no dunder) of a name an earlier line assigned (a plain name's value may
    be `Class.__new__(Class)`, the one dunder allowed), then one expression;
    every value made only of names, attributes (no dunder), calls, keywords, constants
    (numbers, strings, None, True, False), lists, tuples, dicts and unary minus on a
    number (Language Reference 6, Expressions)."""
    import ast

    if not isinstance(text, str) or any(not (0x20 <= ord(c) < 0x7F or c == "\n") for c in text):
        raise Unrenderable("not printable ASCII")
    try:
        tree = ast.parse(text, mode="exec")
    except SyntaxError as e:
        raise Unrenderable("does not parse: %s" % e.msg) from None
    lines = text.split("\n")
    if len(tree.body) != len(lines) or not tree.body:
        raise Unrenderable("one statement per line")
    assigned = set()
    imported, seeded = set(), set()
    for i, st in enumerate(tree.body):
        if st.lineno != i + 1 or getattr(st, "end_lineno", i + 1) != i + 1:
            raise Unrenderable("one statement per line")
        if isinstance(st, ast.Import):
            if assigned or seeded or any(a.name not in IMPORTABLE or a.asname for a in st.names):
                raise Unrenderable("import of %s" % ",".join(a.name for a in st.names))
            imported |= {a.name for a in st.names}
            continue
        # `torch.manual_seed(1)`, `random.seed(1)` after the imports, before anything else
        # (a seeded line, seeded_text); `random` only when a line imported it
        gen = seed_statement(st)
        if gen is not None and i != len(tree.body) - 1:
            if assigned or gen in seeded or (gen != "torch" and gen not in imported):
                raise Unrenderable("seeding statement")
            seeded.add(gen)
            continue
        if isinstance(st, ast.ImportFrom):
            path = (st.module or "").split(".")
            if (
                assigned
                or seeded
                or st.level
                or path[0] not in packages
                or path[0] == "torch"
                or any(not IDENT.match(p) or p.startswith("_") or keyword.iskeyword(p) for p in path)
                or any(a.asname or not IDENT.match(a.name) or a.name.startswith("_") for a in st.names)
            ):
                raise Unrenderable("import from %s" % quote(st.module or "."))
            continue
        if isinstance(st, ast.Assign) and i != len(tree.body) - 1:
            if len(st.targets) != 1:
                raise Unrenderable("one target per assignment")
            t = st.targets[0]
            # `valueN = Class.__new__(Class)` only as a plain name's value (Renderer.obj)
            if not (isinstance(t, ast.Name) and _is_new(st.value)):
                _check_expr(st.value)
            if isinstance(t, ast.Name) and not t.id.startswith("__"):
                assigned.add(t.id)
            elif not (
                isinstance(t, ast.Attribute)
                and not t.attr.startswith("__")
                and isinstance(t.value, ast.Name)
                and t.value.id in assigned
            ):
                raise Unrenderable("assignment target")
            continue
        if not isinstance(st, ast.Expr) or i != len(tree.body) - 1:
            raise Unrenderable("not an expression statement")
        _check_expr(st.value)


def seed_statement(st):
    """The generator ("torch" | "random", SEEDERS) a statement seeds when it is exactly
    `torch.manual_seed(N)` or `random.seed(N)`, N a non-negative int literal and nothing
    else; else None."""
    import ast

    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)):
        return None
    c = st.value
    if c.keywords or len(c.args) != 1:
        return None
    n = c.args[0]
    if not (isinstance(n, ast.Constant) and type(n.value) is int and n.value >= 0):
        return None
    f = c.func
    for gen, (module, fn) in SEEDERS.items():
        if isinstance(f, ast.Attribute) and f.attr == fn and isinstance(f.value, ast.Name) and f.value.id == module:
            return gen
    return None


def seeded_text(text, generators, seed, packages=()):
    """The snippet `text` made to seed `generators` (a subset of SEEDERS) with `seed` before
    it builds anything: `import random` among its imports when Python's generator is one,
    then `torch.manual_seed(seed)` / `random.seed(seed)` after the imports. A line whose
    values pass on some random draws only (a random augmentation validated with values its
    operation refuses, on a draw that skipped the operation: torchvision's RandomPosterize
    with bits=32) then runs as written, on the same draw every time (the generators it
    seeds are the ones its call draws from: run_snippet checks it). Raises Unrenderable
    for a generator a line cannot seed (NumPy's)."""
    if not generators or any(g not in SEEDERS for g in generators):
        raise Unrenderable("draws from a generator a line cannot seed: %s" % ", ".join(sorted(generators)))
    lines = text.split("\n")
    k = 0
    while k < len(lines) - 1 and re.match(r"^(import|from) ", lines[k]):
        k += 1
    imports = [ln for ln in lines[:k] if ln.startswith("import ")]
    froms = [ln for ln in lines[:k] if ln.startswith("from ")]
    if "random" in generators and "import random" not in imports:
        imports = sorted(imports + ["import random"])
    seeds = ["%s.%s(%d)" % (SEEDERS[g][0], SEEDERS[g][1], seed) for g in sorted(generators, key=list(SEEDERS).index)]
    out = "\n".join(imports + froms + seeds + lines[k:])
    if len(out) > MAX_LEN:
        raise Unrenderable("longer than %d characters" % MAX_LEN)
    check_snippet(out, packages)
    return out


def _is_new(node):
    """`Class.__new__(Class)`, the same plain name or dotted path twice (no dunder in it),
    no other argument: an instance made without running its constructor."""
    import ast

    def path(n):
        if isinstance(n, ast.Name) and not n.id.startswith("__"):
            return n.id
        if isinstance(n, ast.Attribute) and not n.attr.startswith("__"):
            p = path(n.value)
            return p and p + "." + n.attr
        return None

    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "__new__"
        and len(node.args) == 1
        and not node.keywords
        and path(node.func.value) is not None
        and path(node.func.value) == path(node.args[0])
    )


def _check_expr(node):
    import ast

    if isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Load) or node.id.startswith("__"):
            raise Unrenderable("name %s" % node.id)
    elif isinstance(node, ast.Attribute):
        if node.attr.startswith("__"):
            raise Unrenderable("attribute %s" % node.attr)
        _check_expr(node.value)
    elif isinstance(node, ast.Call):
        _check_expr(node.func)
        for a in node.args:
            _check_expr(a)
        for k in node.keywords:
            if k.arg is None:
                raise Unrenderable("** in a call")
            _check_expr(k.value)
    elif isinstance(node, ast.Constant):
        if not (node.value is None or type(node.value) in (bool, int, float, str)):
            raise Unrenderable("constant of type %s" % type(node.value).__name__)
    elif isinstance(node, (ast.List, ast.Tuple)):
        for x in node.elts:
            _check_expr(x)
    elif isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise Unrenderable("** in a dict")
            _check_expr(k)
            _check_expr(v)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub) or not (
            isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
        ):
            raise Unrenderable("unary operator")
    else:
        raise Unrenderable("%s in a snippet" % type(node).__name__)


# ---------------------------------------------------------------- names and values of a candidate


def star_namespace(mod):
    """The names `from module import *` gives (Language Reference 7.11: `__all__` when
    the module defines it, else the names not starting with an underscore)."""
    d = mod.__dict__ if hasattr(mod, "__dict__") else mod
    names = d.get("__all__")
    if isinstance(names, (list, tuple)) and all(type(n) is str for n in names):
        return {n: d[n] for n in names if n in d}
    return {n: v for n, v in d.items() if type(n) is str and not n.startswith("_")}


class CopyNames(object):
    """The emitted module's top-level names that came from the corpus (the request's
    `copyNames`: [{name, origins: [[module, name], ...]}], emitter.ts NamespaceMap), read
    both ways: the copy's name of an original definition (renamed when two definitions
    of the same name met in one module: `Gate_norms`), and whether a name of the copy is
    another definition than the one a recorded value names (the block's module defines
    its own `Gate`, the witness passed `norms.Gate`)."""

    def __init__(self, entries=None):
        self.by_origin = {}
        self.origins = {}
        for e in entries or ():
            if not isinstance(e, dict) or type(e.get("name")) is not str:
                continue
            pairs = []
            for o in e.get("origins") or ():
                if isinstance(o, (list, tuple)) and len(o) == 2 and all(type(x) is str for x in o):
                    pairs.append((o[0], o[1]))
                    self.by_origin.setdefault((o[0], o[1]), e["name"])
            self.origins[e["name"]] = pairs

    def names(self):
        return list(self.origins)

    def name_of(self, module, top):
        """The copy's name of the original `module.top`, or None."""
        return self.by_origin.get((module, top))

    def other(self, name, module, top):
        """True when the copy's `name` is known to come from another definition than
        `module.top`: its origins name other modules' definitions, none of which is that
        object under another module's name (a definition whose `__module__` says
        `module`, checked on the original modules already imported, never importing).
        A value of the copy itself (a live argument encoded in the candidate's process
        names the candidate module) is its own name."""
        from . import CANDIDATE_MODULE

        pairs = self.origins.get(name)
        if not pairs or (module, top) in pairs or module == CANDIDATE_MODULE:
            return False
        import sys

        from . import stash

        for m, n in pairs:
            mod = stash.STASH.get(m) or sys.modules.get(m)
            obj = getattr(mod, n, None) if mod is not None else None
            if (
                obj is not None
                and getattr(obj, "__module__", None) == module
                and str(getattr(obj, "__qualname__", "")).split(".")[0] == top
            ):
                return False
        return True


def usage_namespace(mod, class_name, cls, copy_names=None):
    """The names a usage snippet sees: what `from module import *` gives, plus the block's
    own class by its name when `*` leaves it out (a private `_Name`, or a name outside
    `__all__`), plus the module's other names that came from the corpus (`copy_names`, a
    CopyNames: a private usage root such as `_Shift`): export writes `from module import
    Name` for each such name the snippet uses (Language Reference 7.11). Unrenderable
    when the module does not bind the class's name to the class."""
    ns = star_namespace(mod)
    d = mod.__dict__ if hasattr(mod, "__dict__") else mod
    if d.get(class_name) is not cls:
        raise Unrenderable("the class is not the module's name %s" % ident(class_name))
    for name in copy_names.names() if copy_names is not None else ():
        if name not in ns and name in d and IDENT.match(name) and not name.startswith("__"):
            ns[name] = d[name]
    ns[class_name] = cls
    return ns


def installed_spelling(module, parts, packages, namespace=()):
    """The IR of `module.qualname` (qualified name `parts`) imported from an installed
    distribution: `module`'s top-level package is one of `packages` (the distributions
    the block's module imports that the environment has installed, the request's
    `usagePackages`; export pins them), the installed object has the same module and
    qualified name as the value recorded (`__module__`, `__qualname__`: the same
    definition the witness used, PEP 3155), and a public module path exports it: the
    shortest dotted prefix of `module`, no part private, whose attribute of that name is
    the same object (`torchvision.models.ResNet`, `torchvision.models.resnet.Bottleneck`),
    written `from torchvision.models import ResNet` (a ("from", path, name) node). None
    otherwise, or when the name is one the snippet's namespace already binds."""
    import importlib

    top = module.split(".")[0]
    if top not in packages or top == "torch" or not parts or parts[0].startswith("_"):
        return None
    if parts[0] in namespace or parts[0] in ("torch",) + IMPORTABLE or any(p.startswith("_") for p in parts):
        return None
    try:
        mod = importlib.import_module(module)
        obj = mod
        for p in parts:
            obj = getattr(obj, p)
    except Exception:  # noqa: BLE001 - not importable as installed, or no such name there
        return None
    if getattr(obj, "__module__", None) != module or getattr(obj, "__qualname__", None) != ".".join(parts):
        return None
    head = getattr(mod, parts[0])
    mparts = module.split(".")
    for i in range(1, len(mparts) + 1):
        if mparts[i - 1].startswith("_") or not IDENT.match(mparts[i - 1]) or keyword.iskeyword(mparts[i - 1]):
            break
        path = ".".join(mparts[:i])
        try:
            pm = importlib.import_module(path)
        except Exception:  # noqa: BLE001 - a package whose import fails on its own
            continue
        if getattr(pm, parts[0], None) is head:
            node = ("from", path, parts[0])
            for p in parts[1:]:
                node = ("attr", node, p)
            return node
    return None


def spell_in(namespace, torch, copy_names=None, packages=()):
    """spell(module, qualname) for a snippet run where `namespace` (usage_namespace of the
    candidate) and `torch` are visible: a name of the module (first part of the qualified
    name; a witness recorded the original's module, the copy defines the same qualified
    name, under the name `copy_names` gives when the module renamed it), else a public
    torch path (`torch.nn.X`, `torch.nn.functional.f`, `torch.f`), else `functools.X` /
    `math.X` imported, else a public name of an installed distribution of `packages`
    (installed_spelling: `from torchvision.models import ResNet`). A name of the copy
    that `copy_names` shows to be another definition (the same name from another
    module) does not spell it: NotInModule (unless an installed distribution has it), so
    the pipeline can add the named one as a usage root."""
    import importlib

    packages = tuple(p for p in packages or () if type(p) is str and IDENT.match(p))

    def spell(module, qualname):
        if type(module) is not str or type(qualname) is not str:
            raise Unrenderable("bad reference")
        parts = qualname.split(".")
        for p in parts:
            ident(p)
        top = parts[0]
        if copy_names is not None and module.split(".")[0] != "torch":
            renamed = copy_names.name_of(module, parts[0])
            if renamed is not None and renamed in namespace:
                top = ident(renamed)
            elif parts[0] in namespace and copy_names.other(parts[0], module, parts[0]):
                node = installed_spelling(module, parts, packages, namespace)
                if node is not None:
                    return node
                raise NotInModule(module, qualname)

        def in_namespace():
            node, obj = ("name", top), namespace[top]
            for p in parts[1:]:
                node, obj = ("attr", node, p), getattr(obj, p, None)
            return node, obj

        if module.split(".")[0] == "torch":
            # a torch object: the module's own name for it only when it is the same object
            # (a module may define a class of the same name)
            try:
                obj = importlib.import_module(module)
                for p in parts:
                    obj = getattr(obj, p)
            except (ImportError, AttributeError):
                raise Unrenderable("%s.%s" % (module, qualname)) from None
            if parts[0] in namespace and parts[0] != "torch" and in_namespace()[1] is obj:
                return in_namespace()[0]
            if len(parts) == 1:
                for path in ("torch.nn", "torch.nn.functional", "torch"):
                    if getattr(importlib.import_module(path), parts[0], None) is obj:
                        return dotted(path + "." + parts[0])
            raise Unrenderable("no public torch spelling for %s" % qualname)
        if top in namespace and top != "torch":
            # the copy's definition of the qualified name (a witness names the original's
            # module; the candidate resolved it the same way, source_witness.copy_resolver)
            return in_namespace()[0]
        if module in ("functools", "math") and len(parts) == 1:
            return dotted(module + "." + parts[0])
        node = installed_spelling(module, parts, packages, namespace)
        if node is not None:
            return node
        raise NotInModule(module, qualname)

    def lookup(module, qualname):
        """The object spell(module, qualname) names (a class whose constructor decides
        how an object of it is written)."""
        node = spell(module, qualname)
        g = dict(namespace)
        g["torch"] = torch
        obj = None
        path = []
        while node[0] == "attr":
            path.append(node[2])
            node = node[1]
        if node[0] == "from":
            return _getattrs(getattr(importlib.import_module(node[1]), node[2]), reversed(path))
        if node[0] != "name":
            raise Unrenderable("bad reference")
        if node[1] in g:
            obj = g[node[1]]
        else:
            obj = importlib.import_module(node[1])
        for p in reversed(path):
            obj = getattr(obj, p)
        return obj

    spell.lookup = lookup
    return spell


def _getattrs(obj, names):
    for p in names:
        obj = getattr(obj, p)
    return obj


def encode_live(v, torch):
    """values.encode of a live argument; an nn.Module the harness built (from a provider's
    witness, or from guessed arguments: values.BUILT) as that construction; other nn.Module instances
    without a recorded construction are written as their class called with the constructor parameters they
    keep as plain attributes of the same name (the torch.nn convention: Linear keeps
    in_features, Conv2d kernel_size; Parameters, tensors and modules are not plain)."""
    from . import values as V
    import inspect

    modules = {}

    def walk(x, depth=0):
        if depth > 6:
            return
        if isinstance(x, torch.nn.Module):
            if id(x) in modules:
                return
            made = V.BUILT.get(id(x))
            if made is not None and made[0]() is x:
                # built from a provider's witness: that construction
                modules[id(x)] = (x, made[1], made[2], made[3])
                walk(made[2], depth + 1)
                walk(made[3], depth + 1)
                return
            kw = {}
            try:
                params = list(inspect.signature(type(x).__init__).parameters.values())[1:]
            except (TypeError, ValueError):
                params = []
            for p in params:
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                if p.name not in vars(x):
                    # `bias=False` leaves the parameter registered as None (torch.nn's
                    # register_parameter convention)
                    if p.default is True and p.name in x._parameters and x._parameters[p.name] is None:
                        kw[p.name] = False
                    continue
                a = vars(x)[p.name]
                if (
                    a is None
                    or type(a) in (bool, int, float, str)
                    or (type(a) is tuple and all(type(i) in (bool, int, float, str) for i in a))
                ):
                    if a != p.default or p.default is p.empty:
                        kw[p.name] = a
            modules[id(x)] = (x, type(x), [], kw)
        elif isinstance(x, (list, tuple)):
            for i in x:
                walk(i, depth + 1)
        elif isinstance(x, dict):
            for i in x.values():
                walk(i, depth + 1)
        else:
            # another object the harness built by calling its class (a configuration
            # object, source_config.build): that construction
            made = V.BUILT.get(id(x))
            if made is not None and made[0]() is x:
                modules[id(x)] = (x, made[1], made[2], made[3])
                # the modules its construction was given (a configuration object that
                # keeps a module instance as a field: torchvision's MBConvConfig(…,
                # block=…)) are written by their own constructions too
                walk(made[2], depth + 1)
                walk(made[3], depth + 1)
                return
            # a plain object rebuilt from its fields (values.encode's `$object`,
            # `$dataclass`, `$namespace`): the modules among its fields likewise
            d = getattr(x, "__dict__", None)
            if isinstance(d, dict) and not isinstance(x, type) and not callable(x):
                for i in list(d.values())[: V.MAX_ITEMS]:
                    walk(i, depth + 1)

    walk(v)
    return V.encode(v, modules)


def rng_state(torch):
    """The state of every random number generator a block may draw from: torch's CPU
    generator, Python's random, NumPy's when it is loaded."""
    import random
    import sys

    np = sys.modules.get("numpy")
    return (
        bytes(torch.random.get_rng_state().numpy().tobytes()),
        random.getstate(),
        np.random.get_state()[1].tobytes() if np is not None else None,
    )


# the generators rng_state reads, in its order
GENERATORS = ("torch", "random", "numpy")


def moved_generators(before, after):
    """The generators (GENERATORS) whose state differs between two rng_state readings."""
    return {g for g, b, a in zip(GENERATORS, before, after) if b != a}


def snapshot(v, torch, depth=0):
    """A call's inputs as they are before the call (a forward may write into a list it is
    given, as YOLO's Detect puts its outputs into the list of feature maps): lists,
    tuples and dicts copied, tensors cloned, anything else shared."""
    if depth > 6:
        return v
    if isinstance(v, torch.Tensor):
        return v.detach().clone()
    if type(v) is list:
        return [snapshot(x, torch, depth + 1) for x in v]
    if type(v) is tuple:
        return tuple(snapshot(x, torch, depth + 1) for x in v)
    if type(v) is dict:
        return {k: snapshot(x, torch, depth + 1) for k, x in v.items()}
    return v


def run_snippet(text, namespace, torch, reseeds=(), time_left=None, parts=None):
    """Run the snippet as a user would, in a fresh namespace holding the module's
    star-import names, `torch` and the builtins: the import lines, then the expression
    (its callee, then its arguments, then the call: the order Python evaluates a call
    in, Language Reference 6.3.4). Returns the call's value; raises what the snippet
    raises. When the call drew random numbers (a generator's state moved during it: a
    random augmentation picks its operations, dropout its mask) the inputs are built
    and the block called again under each seed of `reseeds` while `time_left()` leaves
    room for it: a block that works only for some draws (float images given to an
    augmentation whose operations take uint8) would fail its users at random, and
    raises here what such a draw raises.
    A line that seeds generators itself (seeded_text: `torch.manual_seed(1)` after its
    imports) is run exactly as written, once: it makes the same draw every time, provided
    every generator its call draws from is one it seeds (else Unseeded).
    `parts`, a dict, is given the wall and CPU time of each part of the run (spent):
    "build" (the import lines and the callee, which builds the block), "call" (the
    arguments, then the call) and "draws" (the calls under `reseeds`, with their count
    `n`), added to what it holds (a line tried several ways: stages.py `_usage_info`).
    The cost table shows them (issue 27: what the line's check costs, and why)."""
    import ast

    from nnrag_harness.procs import self_cpu

    g = dict(namespace)
    g["torch"] = torch
    tree = ast.parse(text, mode="exec")
    *stmts, last = tree.body
    own = {seed_statement(st) for st in stmts} - {None}
    start = rng_state(torch)
    call = last.value

    def ev(node):
        return eval(compile(ast.Expression(body=node), "<usage>", "eval"), g)  # noqa: S307 - checked snippet

    with _part(parts, "build"):
        if stmts:
            exec(compile(ast.Module(body=stmts, type_ignores=[]), "<usage>", "exec"), g)  # noqa: S102 - checked snippet
        if not own:
            torch.manual_seed(1)
        if not isinstance(call, ast.Call):
            return ev(call)
        fn = ev(call.func)

    def arguments():
        return [ev(a) for a in call.args], {k.arg: ev(k.value) for k in call.keywords}

    with _part(parts, "call"):
        args, kwargs = arguments()
        before = rng_state(torch)
        t0 = self_cpu()
        out = fn(*args, **kwargs)
        cost = self_cpu() - t0  # CPU seconds, as time_left() counts them
    after = rng_state(torch)
    moved = moved_generators(before, after)
    if own:
        # every generator the line's run drew from, building included, must be one it seeds
        drawn = moved_generators(start, after)
        if drawn - own:
            raise Unseeded(own, drawn)
        return out
    if not reseeds or not moved:
        return out
    # the first call's autograd graph (what its operations saved for a backward pass that
    # never runs here) is let go before the block runs again: a large block's two graphs at
    # once exceed a memory limit its one forward fits
    release_graph(out, torch)
    for n in reseeds:
        if time_left is not None and time_left() < 2 * cost + 1.0:
            break
        with _part(parts, "draws"):
            seed_all(torch, n)
            args, kwargs = arguments()
            try:
                fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - the block's own error on this draw
                raise OtherDraw(n, e, moved) from e
    return out


@contextlib.contextmanager
def _part(parts, name):
    """Adds the wall and CPU milliseconds of a part of run_snippet to `parts[name]`
    (`{"ms", "cpuMs", "n"}`: `n` the times the part ran), whether the part ends or
    raises; nothing when `parts` is None. CPU time is the process's
    (time.process_time: to the nanosecond, where self_cpu counts clock ticks)."""
    if parts is None:
        yield
        return
    t, c = time.monotonic(), time.process_time()
    try:
        yield
    finally:
        p = parts.setdefault(name, {"ms": 0.0, "cpuMs": 0.0, "n": 0})
        p["ms"] = round(p["ms"] + (time.monotonic() - t) * 1000, 3)
        p["cpuMs"] = round(p["cpuMs"] + (time.process_time() - c) * 1000, 3)
        p["n"] += 1


def release_graph(value, torch):
    """Let go of the autograd graph a call's output holds: each output tensor that has a
    grad_fn is detached in place (`Tensor.detach_`), so the value keeps its tensors and
    shapes and the saved activations are freed. A view cannot be detached in place; it
    keeps its graph."""
    for t in flatten_tensors(value, torch):
        if t.grad_fn is not None:
            try:
                t.detach_()
            except RuntimeError:
                pass


def without_frames(e):
    """The exception `e` with its traceback, and those of its causes and contexts, let go:
    a traceback keeps every frame it passed through alive, with their locals (the block,
    its inputs, the first call's output and graph), for as long as the exception is kept.
    Its message and fields are unchanged."""
    seen = set()
    x = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        x.__traceback__ = None
        x = x.__cause__ or x.__context__
    return e


class Unseeded(Exception):
    """A seeded line drew from a generator it does not seed (building the block or calling
    it): it would not make the same draw every time."""

    def __init__(self, own, moved):
        Exception.__init__(
            self,
            "the line seeds %s, it also draws from %s"
            % (", ".join(sorted(own)), ", ".join(sorted(set(moved) - set(own)))),
        )


class OtherDraw(Exception):
    """A random draw other than the validated one fails with the same values (run_snippet's
    `reseeds`): the validated arguments or inputs work for some draws only, so no line
    written from them runs for every draw. Its message keeps the block's own error (which
    wanted_dtype and attributes_read read) and says which draw raised it."""

    def __init__(self, seed, error, moved=()):
        Exception.__init__(
            self,
            "another random draw than the validated one (seed %d) fails with the validated values: %s: %s"
            % (seed, type(error).__name__, str(error)[:300]),
        )
        self.error = error
        # the generators the call drew from (moved_generators): what a seeded line seeds
        self.moved = set(moved)


# ATen's names of scalar types ("expected scalar type Byte but found Float")
ATEN_TYPES = {
    "Byte": "uint8",
    "Char": "int8",
    "Short": "int16",
    "Int": "int32",
    "Long": "int64",
    "Half": "float16",
    "Float": "float32",
    "Double": "float64",
    "BFloat16": "bfloat16",
    "Bool": "bool",
}
DTYPE_ERRORS = (
    # torchvision: "Only torch.uint8 image tensors are supported, but found torch.float32"
    re.compile(r"\bonly torch\.(\w+)\b[^\n]*?\bfound torch\.(\w+)", re.I),
    # "expected ... dtype torch.uint8 ... but got torch.float32"
    re.compile(r"\bexpected\b[^\n]*?\btorch\.(\w+)[^\n]*?\b(?:got|found)\b[^\n]*?\btorch\.(\w+)", re.I),
)
ATEN_ERROR = re.compile(r"\bexpected scalar type (\w+) but found (\w+)")


def wanted_dtype(message, present):
    """(found, wanted) when an error message says a tensor must have another dtype than
    the one it has ("Only torch.uint8 image tensors are supported, but found
    torch.float32"; ATen's "expected scalar type Byte but found Float"), and `found` is
    a dtype of the snippet's inputs (`present`); else None."""
    for rx in DTYPE_ERRORS:
        m = rx.search(message)
        if m:
            want, found = m.group(1), m.group(2)
            break
    else:
        m = ATEN_ERROR.search(message)
        if not m:
            return None
        want, found = ATEN_TYPES.get(m.group(1)), ATEN_TYPES.get(m.group(2))
    if not want or not found or want == found or found not in present:
        return None
    import torch

    if not isinstance(getattr(torch, want, None), torch.dtype):
        return None
    return found, want


ATTRIBUTE_ERROR = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def attributes_read(message, encs, depth=0):
    """(class name, attribute) when an error says a module lacks an attribute ("'Joiner'
    object has no attribute 'num_channels'", the AttributeError of Language Reference
    6.3.1) that a nested module of that class in the recorded values had (its `attrs`:
    set after construction, as detr's build does); else None."""
    m = ATTRIBUTE_ERROR.search(message)
    if not m:
        return None
    cls_name, attr = m.group(1), m.group(2)

    def find(enc, depth):
        if depth > 12:
            return False
        if isinstance(enc, list):
            return any(find(x, depth + 1) for x in enc)
        if not isinstance(enc, dict):
            return False
        ref = enc.get("$module")
        attrs = enc.get("attrs")
        if (
            isinstance(ref, list)
            and len(ref) == 2
            and str(ref[1]).split(".")[-1] == cls_name
            and isinstance(attrs, dict)
            and attr in attrs
        ):
            return True
        return any(find(x, depth + 1) for x in enc.values())

    return (cls_name, attr) if find(list(encs), 0) else None


def tensor_dtypes(enc, out=None, depth=0):
    """The dtypes of the tensors in an encoded value."""
    out = set() if out is None else out
    if depth > 12:
        return out
    if isinstance(enc, list):
        for x in enc:
            tensor_dtypes(x, out, depth + 1)
    elif isinstance(enc, dict):
        if "$tensor" in enc:
            out.add(enc.get("dtype", "float32"))
        else:
            for x in enc.values():
                tensor_dtypes(x, out, depth + 1)
    return out


def retyped(enc, found, want, depth=0):
    """The encoded value with its `found`-dtype tensors made `want` tensors of the same
    shape: uint8 over its whole range (an 8-bit image's pixels), another integer type
    over the recorded range rounded out (never below 0 for an unsigned one), a bool as
    ones, a floating type over the recorded range (Renderer.tensor)."""
    if depth > 12:
        return enc
    if isinstance(enc, list):
        return [retyped(x, found, want, depth + 1) for x in enc]
    if not isinstance(enc, dict):
        return enc
    if "$tensor" not in enc:
        return {k: retyped(x, found, want, depth + 1) for k, x in enc.items()}
    if enc.get("dtype", "float32") != found:
        return enc
    out = {"$tensor": enc["$tensor"], "dtype": want}
    lo, hi = enc.get("min"), enc.get("max")
    if isinstance(enc.get("values"), list) and enc["values"]:
        lo, hi = min(enc["values"]), max(enc["values"])
    if want == "uint8":
        out["min"], out["max"] = 0, 255
    elif want == "bool":
        out["values"] = [1]
    elif want.startswith(("int", "uint")):
        lo = math.floor(lo) if type(lo) in (int, float) and math.isfinite(lo) else 0
        hi = math.ceil(hi) if type(hi) in (int, float) and math.isfinite(hi) else 1
        out["min"], out["max"] = (max(lo, 0), max(hi, 0)) if want.startswith("uint") else (lo, hi)
    elif type(lo) in (int, float) and type(hi) in (int, float):
        out["min"], out["max"] = float(lo), float(hi)
    return out


def check_values(text, namespace, torch, args, kwargs, inputs, input_kwargs):
    """The check when building the block again does not fit in the time left: the
    snippet's argument and input expressions (not the block's construction nor its call)
    are evaluated as written and must equal what the validated run received (same_value).
    Raises Unrenderable."""
    import ast

    g = dict(namespace)
    g["torch"] = torch
    tree = ast.parse(text, mode="exec")
    *stmts, last = tree.body
    if stmts:
        exec(compile(ast.Module(body=stmts, type_ignores=[]), "<usage>", "exec"), g)  # noqa: S102 - checked snippet
    call = last.value
    ctor = call.func
    if isinstance(ctor, ast.Call) and isinstance(ctor.func, ast.Attribute) and ctor.func.attr == "eval":
        ctor = ctor.func.value
    if not isinstance(ctor, ast.Call):
        raise Unrenderable("not a construction and a call")

    def ev(node):
        return eval(compile(ast.Expression(body=node), "<usage>", "eval"), g)  # noqa: S307 - checked snippet

    pairs = [(ev(a), v) for a, v in zip(ctor.args, args)] + [
        (ev(k.value), kwargs.get(k.arg, _MISSING)) for k in ctor.keywords
    ]
    pairs += [(ev(a), v) for a, v in zip(call.args, inputs)] + [
        (ev(k.value), input_kwargs.get(k.arg, _MISSING)) for k in call.keywords
    ]
    if (
        len(ctor.args) != len(args)
        or len(ctor.keywords) != len(kwargs)
        or len(call.args) != len(inputs)
        or len(call.keywords) != len(input_kwargs)
    ):
        raise Unrenderable("argument count")
    for got, want in pairs:
        if not same_value(got, want, torch):
            raise Unrenderable("a value of the snippet differs from the validated one")


_MISSING = object()


def same_value(a, b, torch, depth=0):
    """Whether a value the snippet builds stands for the validated one: plain data equal
    (a str subclass by its str data), tensors of the same shape and dtype, nested
    modules of the same class, dataclasses / partials / containers item by item,
    classes and functions identical."""
    if depth > 10 or b is _MISSING:
        return False
    if isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    if isinstance(b, torch.nn.Module):
        return type(a) is type(b)
    if isinstance(b, str):
        return type(a) is str and a == str.__str__(b)
    if isinstance(b, bool) or b is None:
        return a is b
    if isinstance(b, (int, float)) and type(b) in (int, float):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    if type(b) in (list, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same_value(x, y, torch, depth + 1) for x, y in zip(a, b))
    if isinstance(b, dict):
        # a dict, or an attribute dict (CfgNode, addict's Dict) rebuilt as its class
        return type(a) is type(b) and list(a) == list(b) and all(same_value(a[k], b[k], torch, depth + 1) for k in b)
    if isinstance(b, tuple) and isinstance(getattr(type(b), "_fields", None), tuple):
        # a named tuple: the same class, field by field
        return type(a) is type(b) and all(same_value(x, y, torch, depth + 1) for x, y in zip(a, b))
    import dataclasses
    import functools

    if dataclasses.is_dataclass(b) and not isinstance(b, type):
        return type(a) is type(b) and all(
            same_value(getattr(a, f.name), getattr(b, f.name), torch, depth + 1) for f in dataclasses.fields(b)
        )
    if isinstance(b, functools.partial):
        return (
            isinstance(a, functools.partial)
            and a.func is b.func
            and same_value(list(a.args), list(b.args), torch, depth + 1)
            and same_value(dict(a.keywords), dict(b.keywords), torch, depth + 1)
        )
    if isinstance(b, type) or callable(b):
        return a is b
    d = getattr(b, "__dict__", None)
    if isinstance(d, dict) and type(b).__eq__ is object.__eq__:
        # a plain object rebuilt from its fields (values.encode's $object): field by field
        da = getattr(a, "__dict__", None)
        return (
            type(a) is type(b)
            and isinstance(da, dict)
            and sorted(da) == sorted(d)
            and all(same_value(da[k], d[k], torch, depth + 1) for k in d)
        )
    return type(a) is type(b) and a == b
