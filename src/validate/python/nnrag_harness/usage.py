# What a forward does with its parameters, read from its code (ast), so that an input is
# made of the kind the code needs rather than guessed from the parameter's name:
#   "index"  the parameter is used as an integer index: a subscript's index (`x[p]`), the
#            `index` of torch's gather / scatter / index_select / index_add family
#            (positional or `index=`), the input of bincount / one_hot / embedding, or
#            the input of an nn.Embedding the model holds ("ids" then: below its size);
#   "pairs"  its rows are taken apart and used as indices (`row, col = p`, `x[p[0]]`):
#            a (2, E) integer tensor of index pairs (an edge list, a sparse matrix's
#            coordinates).
#            A parameter whose code requires an integer dtype (`assert p.dtype == torch.long`,
#            `if p.dtype not in (torch.int32, torch.int64): raise …`, Language Reference
#            §7.3 and §7.8: the statement fails for any other value) or whose annotation is
#            torch's integer tensor type (`LongTensor`, `IntTensor`) is an "index" too;
#            "pairs" when the same guards also require two rows (`p.size(0) != 2: raise`).
#            A selection from a parameter used as an index (`self.emb(y[mask])`) keeps the
#            parameter's dtype (torch indexing), so the parameter is an index as well.
#   "size"   the parameter (alone or in arithmetic, `j - i`) is an argument of range,
#            torch.arange or torch.linspace, whose bounds are numbers (a length: the
#            forward of a position bias table taking (i, j) sequence lengths), so an int.
# Calls to what the code can resolve — functions of its module's globals (or of a module
# it names there), the model's own methods — are followed a few levels, mapping the
# arguments onto the callee's parameters, so an index handed on to a helper counts too.
# Only reads code; runs nothing.
import ast
import functools
import inspect
import textwrap
import types

# Tensor methods and torch functions whose `index` argument selects positions
# (torch docs: Tensor.index_select(dim, index), torch.gather(input, dim, index), …):
# the index is the second positional argument of the method, the third of the function
INDEX_METHODS = {
    "index_select",
    "gather",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "scatter_reduce_",
    "index_add",
    "index_add_",
    "index_copy",
    "index_copy_",
    "index_fill",
    "index_fill_",
    "index_reduce",
    "index_reduce_",
    "take_along_dim",
}
# functions whose first argument is integer-valued: counts, one-hot, embedding lookups
INDEX_FIRST = {"bincount", "one_hot", "embedding"}
# functions whose positional arguments are numbers: start, end, step, count
SIZE_FUNCS = {"range", "arange", "linspace"}
# torch's integer dtypes (torch docs, "torch.dtype"), by the attribute torch names them
INT_DTYPES = {"uint8", "int8", "int16", "short", "int32", "int", "int64", "long"}
# torch's integer tensor types, as an annotation names them (`edge: torch.LongTensor`)
INT_TENSOR_TYPES = {"LongTensor", "IntTensor", "ShortTensor", "ByteTensor", "CharTensor"}
# a parameter used several ways takes the most specific: pairs, then an index, then ids,
# then a size (a tensor holding one number is also a valid index)
RANK = {"size": -0.5, "ids": 0, "index": 1, "pairs": 2}
# torch functions whose result has their first argument's dtype (torch docs: "the same
# size as input", dtype defaulting to input's), and Tensor methods whose result has the
# tensor's dtype (clone, detach, the new_* constructors unless given a dtype)
LIKE_FUNCS = {"empty_like", "zeros_like", "ones_like", "full_like", "clone"}
SAME_DTYPE_METHODS = {"clone", "detach", "contiguous", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"}
# a loop over `self.children()`, as _loop_bindings reports it (no attribute has this name)
CHILDREN = "()"


def _function_node(fn):
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    if not isinstance(fn, types.FunctionType):
        return None, None
    return fn, _parsed(fn)


@functools.lru_cache(maxsize=256)
def _parsed(fn):
    """The function's definition node, parsed once (a helper called from several places
    of a forward is read once)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _params(node):
    a = node.args
    return [p.arg for p in a.posonlyargs + a.args], [p.arg for p in a.kwonlyargs]


def _enter(fn, depth, seen):
    """Where a walker that follows calls starts on `fn`: (fn unwrapped, its definition
    node, the functions seen with it added, its parameters other than self and cls), or
    None when it has no source, is already on the walk (recursion) or `depth` is spent."""
    seen = set() if seen is None else seen
    fn, node = _function_node(fn)
    if node is None or id(fn) in seen or depth < 0:
        return None
    positional, keyword_only = _params(node)
    return fn, node, seen | {id(fn)}, set(positional + keyword_only) - {"self", "cls"}


def _passed_args(call, callee, bound):
    """[(callee parameter, argument expression)] for what `call` passes to `callee` (a
    bound method when `bound`: self is not among its parameters): by position up to the
    first starred argument, after which positions are unknown, and by keyword (Language
    Reference §6.3.4, "Calls"); [] when the callee has no source."""
    _, cnode = _function_node(callee)
    if cnode is None:
        return []
    cpos, _ = _params(cnode)
    if bound and cpos:
        cpos = cpos[1:]
    out = []
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred) or i >= len(cpos):
            break
        out.append((cpos[i], a))
    return out + [(kw.arg, kw.value) for kw in call.keywords if kw.arg]


def record_attrs(fn, torch, owner=None, depth=4, _seen=None):
    """{parameter: [attribute, ...]} for the forward parameters that the code uses only
    through attributes that a tensor does not have (`batch.x = self.bn(batch.x)`, `return
    batch.x, batch.y`), and may hand back whole (`return batch`): a record of tensors (a
    graph batch, a data object), never a tensor itself (an attribute reference reads the
    object's attribute, Language Reference §6.3.1). It may also be passed on whole to a
    sub-module the model holds or to a method of the model (`batch = layer(batch)` in
    `for layer in self.children()`) and rebound to what that returns: the attributes the
    callee reads of it count too (followed `depth` levels; `owner` is the model). Any other
    use of the name (passed to anything else, subscripted, compared, an attribute a tensor
    has, such as `.shape` or `.size`) and it is not.
    A callee that tests the value with `isinstance(p, torch.Tensor)` accepts a tensor
    (torchvision's `F.resize(img)`: tensors one way, PIL images the other): what it reads of
    the value in its other branch (`img.getbands()`) names the record's fields when
    something else makes it a record, but makes none by itself."""
    attrs, other, strong = _record_reads(fn, torch, owner, depth, _seen)
    return {p: a for p, a in attrs.items() if a and p not in other and p in strong}


def _tests_tensor(node, name, g, torch):
    """Does the function's code test parameter `name` with `isinstance(name, T)` where T
    (or a member of a tuple T) is torch.Tensor, read from its globals (`torch.Tensor`,
    `Tensor`)?"""

    def is_tensor(e):
        if isinstance(e, ast.Tuple):
            return any(is_tensor(x) for x in e.elts)
        try:
            if isinstance(e, ast.Name):
                return g.get(e.id) is torch.Tensor
            if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
                return getattr(g.get(e.value.id), e.attr, None) is torch.Tensor
        except Exception:  # noqa: BLE001 - a lookup that fails is no test
            pass
        return False

    for n in ast.walk(node):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "isinstance"
            and len(n.args) == 2
            and isinstance(n.args[0], ast.Name)
            and n.args[0].id == name
            and is_tensor(n.args[1])
        ):
            return True
    return False


def _record_reads(fn, torch, owner, depth, _seen):
    """({parameter: [attribute, ...]}, {parameter used otherwise}, {parameter a read makes a
    record}) for record_attrs: the attributes a tensor lacks read of each parameter (here
    and by the callees it is passed on to whole), the parameters some other use rules out
    as records, and those whose reads make them one (the function's own, or a callee's
    that does not accept a tensor for it: _tests_tensor)."""
    entry = _enter(fn, depth, _seen)
    if entry is None:
        return {}, set(), set()
    fn, node, _seen, params = entry
    g = getattr(fn, "__globals__", {})
    loops = _loops(node, owner)
    # where each parameter is first rebound (`batch = layer(batch)`: the end of the
    # statement, whose value is evaluated first, §7.2): what is read of it after that is
    # read of the new value; a rebound parameter is a record only on evidence before
    first_store = {}
    for st in ast.walk(node):
        if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With)):
            for n in ast.walk(st.target if isinstance(st, (ast.For, ast.AsyncFor)) else st):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in params:
                    end = (
                        (st.iter.end_lineno, st.iter.end_col_offset)
                        if isinstance(st, (ast.For, ast.AsyncFor))
                        else (st.end_lineno, st.end_col_offset)
                    )
                    first_store[n.id] = min(first_store.get(n.id, end), end)
    evidence = set()  # parameters read as a record before they are rebound

    def before_rebinding(p, n):
        return p not in first_store or (n.lineno, n.col_offset) < first_store[p]

    attrs, other, strong = {}, set(), set()
    fine = set()  # Name nodes used as an attribute's object, as `return name`, rebound
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in params:
            fine.add(id(n.value))
            if hasattr(torch.Tensor, n.attr):
                if before_rebinding(n.value.id, n):
                    other.add(n.value.id)
            elif isinstance(n.ctx, ast.Load) and n.attr not in attrs.setdefault(n.value.id, []):
                attrs[n.value.id].append(n.attr)
            if not hasattr(torch.Tensor, n.attr):
                strong.add(n.value.id)
            if isinstance(n.ctx, ast.Load) and not hasattr(torch.Tensor, n.attr) and before_rebinding(n.value.id, n):
                evidence.add(n.value.id)
        elif isinstance(n, ast.Return) and isinstance(n.value, ast.Name):
            fine.add(id(n.value))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            fine.add(id(n))  # `batch = layer(batch)`: rebound to what the callee returns
        elif isinstance(n, ast.Call) and owner is not None and depth > 0:
            # passed on whole to a held module or a method of the model: its reads count
            callee, bound = _callee(n.func, g, owner)
            held = _held_module(n.func, owner, loops)
            if held is not None and callee is None:
                callee, bound = type(held).forward, True
            if not isinstance(callee, types.FunctionType):
                continue
            passed = [(c, a) for c, a in _passed_args(n, callee, bound) if isinstance(a, ast.Name) and a.id in params]
            if not passed:
                continue
            # what the callee reads of it, whatever else it does with it (a callee that
            # also takes a tensor: `if isinstance(batch, Tensor): … else: batch.x`)
            sub, _, sub_strong = _record_reads(callee, torch, held if held is not None else owner, depth - 1, _seen)
            cfn, cnode = _function_node(callee)
            for c, a in passed:
                fine.add(id(a))
                if sub.get(c) and before_rebinding(a.id, a):
                    evidence.add(a.id)
                if (
                    sub.get(c)
                    and c in sub_strong
                    and not (cnode is not None and _tests_tensor(cnode, c, getattr(cfn, "__globals__", {}), torch))
                ):
                    strong.add(a.id)
                for attr in sub.get(c, ()):
                    if attr not in attrs.setdefault(a.id, []):
                        attrs[a.id].append(attr)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in params and id(n) not in fine:
            other.add(n.id)
    # a rebound parameter whose record reads all come after it was rebound: those read the
    # new value (`x = self.backbone(x); return x.last_hidden_state`), not the input
    other |= {p for p in first_store if p not in evidence}
    return attrs, other, strong


def _loops(node, owner):
    """{name: module} for the names `for` statements of the function bind to the first
    module of a module list the model holds (_loop_bindings)."""
    loops = {}
    if owner is None:
        return loops
    for st in ast.walk(node):
        if isinstance(st, ast.For):
            for target, held in _loop_bindings(st.target, st.iter):
                first = _first_held(owner, held)
                if first is not None:
                    loops[target] = first
    return loops


def param_uses(fn, owner=None, depth=6, _seen=None):
    """{parameter: "index" | "pairs" | "ids" | "size"} for the parameters of `fn` (and
    {"parameter.attribute": …} for attributes of them used so: a record's) (a function or a
    bound method; `owner` is the model whose methods and attributes it may reach),
    following calls into module-level functions, the model's own methods and the forward
    of the sub-modules it holds (`self.conv(x, edge)`, `self.convs[0](…)`, `for conv in
    self.convs: conv(x, edge)`), `depth` levels deep."""
    entry = _enter(fn, depth, _seen)
    if entry is None:
        return {}
    fn, node, _seen, params = entry
    g = getattr(fn, "__globals__", {})
    # parameters annotated `int`: a row number when they subscript another (`p[dim]`)
    ints = {
        a.arg
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        if isinstance(a.annotation, ast.Name) and a.annotation.id == "int"
    }
    # names bound to a row of a parameter (`row, col = p`, `src = p[0]`)
    rows = {}
    for st in ast.walk(node):
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t, v = st.targets[0], st.value
            if isinstance(t, ast.Tuple) and isinstance(v, ast.Name) and v.id in params and len(t.elts) == 2:
                for e in t.elts:
                    if isinstance(e, ast.Name):
                        rows[e.id] = v.id
            elif isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts):
                for e, x in zip(t.elts, v.elts):
                    p = _row_of(x, params, rows, ints)
                    if isinstance(e, ast.Name) and p:
                        rows[e.id] = p
            elif isinstance(t, ast.Name):
                p = _row_of(v, params, rows, ints)
                if p:
                    rows[t.id] = p
    # names bound to a tensor of a parameter's dtype (`cluster = torch.empty_like(batch)`,
    # `batch.clone()`, `batch.new_zeros(n)`: torch's *_like functions, clone and the
    # Tensor.new_* constructors keep the dtype): used as an index, the parameter is one
    same_dtype = {}
    for st in ast.walk(node):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
            continue
        v = st.value
        if not isinstance(v, ast.Call) or not isinstance(v.func, ast.Attribute):
            continue
        f = v.func
        if any(k.arg == "dtype" for k in v.keywords):
            continue
        if f.attr in LIKE_FUNCS and v.args and isinstance(v.args[0], ast.Name) and v.args[0].id in params:
            if isinstance(f.value, ast.Name) and isinstance(g.get(f.value.id), types.ModuleType):
                same_dtype[st.targets[0].id] = v.args[0].id
        elif f.attr in SAME_DTYPE_METHODS and isinstance(f.value, ast.Name) and f.value.id in params:
            same_dtype[st.targets[0].id] = f.value.id
    uses = {}
    # names bound by `for conv in self.convs:` (an nn.ModuleList / nn.Sequential the
    # model holds): its first module; also through zip and enumerate (`for conv, lin in
    # zip(self.convs, self.lins)`, `for i, conv in enumerate(self.convs)`: the builtins
    # pair the iterables' items, Library Reference "Built-in Functions")
    loops = _loops(node, owner)

    def mark(expr, how="index"):
        """`expr` is used as an index (how="index"/"ids") or as index pairs ("pairs"); an
        attribute of a parameter (`batch.edge_index`, a record of tensors) is recorded
        as "p.attr"."""
        if isinstance(expr, ast.Name) and expr.id in params:
            if RANK[how] > RANK.get(uses.get(expr.id), -1):
                uses[expr.id] = how
            return
        if isinstance(expr, ast.Name) and expr.id in same_dtype and how in ("index", "ids"):
            mark(ast.Name(id=same_dtype[expr.id]), how)
            return
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in params:
            key = expr.value.id + "." + expr.attr
            if RANK[how] > RANK.get(uses.get(key), -1):
                uses[key] = how
            return
        p = _row_of(expr, params, rows, ints)
        if p and how != "pairs":
            uses[p] = "pairs"
        elif (
            p is None
            and how in ("index", "ids")
            and isinstance(expr, ast.Subscript)
            and isinstance(expr.value, ast.Name)
            and expr.value.id in params
        ):
            # a selection of the parameter (`y[mask]`, `p[:, 0]`) keeps its dtype
            mark(expr.value, how)

    for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
        # `edge: torch.LongTensor`: torch's integer tensor type
        ann = a.annotation
        name = ann.attr if isinstance(ann, ast.Attribute) else ann.id if isinstance(ann, ast.Name) else None
        if name in INT_TENSOR_TYPES and a.arg in params:
            mark(ast.Name(id=a.arg), "index")
    for p, how in _dtype_guards(node, params).items():
        mark(ast.Name(id=p), how)

    for n in ast.walk(node):
        if isinstance(n, ast.Subscript):
            sl = n.slice
            items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            for it in items:  # x[p], x[:, p], x[p[0]]
                mark(it)
        elif isinstance(n, ast.Call):
            f = n.func
            for kw in n.keywords:
                if kw.arg == "index":
                    mark(kw.value)
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            on_module = (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and isinstance(g.get(f.value.id), types.ModuleType)
            )
            if name in INDEX_METHODS:
                pos = 2 if on_module else 1
                if len(n.args) > pos:
                    mark(n.args[pos])
            elif name in INDEX_FIRST and n.args:
                mark(n.args[0])
            elif name in SIZE_FUNCS and (on_module or isinstance(f, ast.Name)):
                for a in n.args:
                    for x in ast.walk(a):  # `j - i`, `n + 1`, `-i`: the operands too
                        if isinstance(x, ast.Name) and x.id in params:
                            mark(x, "size")
                        elif not isinstance(x, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)):
                            break
            callee, bound = _callee(f, g, owner)
            if isinstance(callee, _Embedding):
                if n.args:
                    mark(n.args[0], "ids")
                continue
            # a sub-module the model holds, called on the parameter (`self.conv(x, edge)`,
            # or `conv(x, edge)` in `for conv in self.convs`): its own forward's uses
            held = _held_module(f, owner, loops)
            if held is not None and callee is None:
                callee, bound = type(held).forward, True
            if callee is None or depth == 0:
                continue
            sub = param_uses(callee, held if held is not None else owner, depth - 1, _seen)
            if not sub:
                continue
            for c, a in _passed_args(n, callee, bound):
                if c in sub:
                    mark(a, sub[c])
                if isinstance(a, ast.Name) and a.id in params:
                    # a record passed on whole: what the callee does with its attributes
                    # (`batch.edge_index` there is `batch.edge_index` here)
                    for key, how in sub.items():
                        if key.startswith(c + "."):
                            mark(ast.Attribute(value=a, attr=key[len(c) + 1 :], ctx=ast.Load()), how)
    return uses


# einops operations whose pattern's left side names the input's axes (einops docs:
# rearrange / repeat / reduce take (tensor, pattern, **axes_lengths))
EINOPS_OPS = {"rearrange", "repeat", "reduce"}


def pattern_rank(pattern):
    """The number of axes the left side of an einops pattern gives its input (`b c h w`,
    `b (h w) c` → 3, `b -> b 1` → 1: a parenthesized group is one axis, `1` and `()` an
    axis of size one); None when it has an ellipsis (any rank) or cannot be read."""
    if not isinstance(pattern, str) or "->" not in pattern:
        return None
    left = pattern.split("->")[0]
    if "..." in left or "…" in left:
        return None
    n, depth = 0, 0
    for tok in left.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
            if depth == 0:
                n += 1
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0:
            n += 1
    return n if depth == 0 and n > 0 else None


def _is_einops(v):
    return (getattr(v, "__module__", None) or "").split(".")[0] == "einops"


# torch.nn modules whose output has their input's rank (elementwise activations, layers
# over the last dimension, dropout): an nn.Sequential's rank is stated past them
RANK_KEEPING = {"activation", "linear", "dropout"}


def _first_rank_stating(seq):
    """The first module of an nn.Sequential (nested ones entered) that is not one of
    torch.nn's rank-keeping layers (RANK_KEEPING modules, LayerNorm), or None."""
    for m in seq:
        t = type(m)
        if t.__name__ == "Sequential":
            inner = _first_rank_stating(m)
            if inner is not None:
                return inner
            continue
        mod = t.__module__ or ""
        if mod.startswith("torch.nn.modules.") and (mod.split(".")[-1] in RANK_KEEPING or t.__name__ == "LayerNorm"):
            continue
        return m
    return None


def param_ranks(fn, owner=None, depth=4, _seen=None):
    """{parameter: number of dimensions} for the tensor parameters whose rank the code
    states before it rebinds them, in the statements run first (the top level, and the
    bodies of `for` and `with` statements, not branches): required by a
    check (`if p.dim() != 1: raise …`, `assert p.ndim == 4`, `len(p.shape)`), unpacked from
    its shape (`b, c, h, w = x.shape`, `x.size()`: the unpacking fails for any other rank,
    Language Reference §7.2), or the input of an einops rearrange / repeat / reduce
    (`rearrange(x, 'b -> b 1')`: the pattern's left side, `pattern_rank`) or of an einops
    layer the model holds; followed into the model's methods and the sub-modules it holds
    (an nn.Sequential's input is its first module's), `depth` levels deep."""
    entry = _enter(fn, depth, _seen)
    if entry is None:
        return {}
    fn, node, _seen, live = entry
    g = getattr(fn, "__globals__", {})
    loops = _loops(node, owner)
    ranks, shapes = {}, {}

    def note(p, r):
        if p in live and r and p not in ranks:
            ranks[p] = r

    def rank_test(test, positive):
        """(parameter, rank) of `p.dim() == k`, `p.ndim == k`, `len(p.shape) == k` (!= when
        not `positive`), else None."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        if not isinstance(test.ops[0], ast.Eq if positive else ast.NotEq):
            return None
        left, right = test.left, test.comparators[0]
        if not (isinstance(right, ast.Constant) and isinstance(right.value, int) and not isinstance(right.value, bool)):
            return None
        if isinstance(left, ast.Call) and not left.args and isinstance(left.func, ast.Attribute):
            if left.func.attr == "dim" and isinstance(left.func.value, ast.Name):
                return left.func.value.id, right.value
        if isinstance(left, ast.Attribute) and left.attr == "ndim" and isinstance(left.value, ast.Name):
            return left.value.id, right.value
        if (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "len"
            and len(left.args) == 1
            and isinstance(left.args[0], ast.Attribute)
            and left.args[0].attr == "shape"
            and isinstance(left.args[0].value, ast.Name)
        ):
            return left.args[0].value.id, right.value
        return None

    def statements(body):
        """The statements run in order from the start: the top level, and the bodies of
        `for` and `with` statements (a loop over held modules runs its body first)."""
        for st in body:
            yield st
            if isinstance(st, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
                yield from statements(st.body)

    for st in statements(node.body):
        # a rank the code requires: `if p.dim() != 1: raise …`, `assert p.ndim == 4`
        # (§7.3, §7.8: any other rank fails the statement)
        guard = None
        if isinstance(st, ast.If) and any(isinstance(b, ast.Raise) for b in st.body):
            guard = rank_test(st.test, False)
        elif isinstance(st, ast.Assert):
            guard = rank_test(st.test, True)
        if guard:
            note(*guard)
        simple = not isinstance(st, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.AsyncFor, ast.AsyncWith))
        if simple:
            if (
                isinstance(st, ast.Assign)
                and len(st.targets) == 1
                and isinstance(st.targets[0], (ast.Tuple, ast.List))
                and not any(isinstance(e, ast.Starred) for e in st.targets[0].elts)
            ):
                v = st.value
                if isinstance(v, ast.Name) and v.id in shapes:
                    note(shapes[v.id], len(st.targets[0].elts))  # `shape = x.shape` … `b, c = shape`
                if isinstance(v, ast.Call) and not v.args and not v.keywords:
                    v = v.func if isinstance(v.func, ast.Attribute) and v.func.attr == "size" else None
                if isinstance(v, ast.Attribute) and v.attr in ("shape", "size") and isinstance(v.value, ast.Name):
                    note(v.value.id, len(st.targets[0].elts))
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                # names bound to a parameter's shape: `orig_shape = x.shape`, `res, s = x, x.shape`
                t, v = st.targets[0], st.value
                pairs = zip(t.elts, v.elts) if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) else [(t, v)]
                for tn, tv in pairs:
                    if (
                        isinstance(tn, ast.Name)
                        and isinstance(tv, ast.Attribute)
                        and tv.attr == "shape"
                        and isinstance(tv.value, ast.Name)
                        and tv.value.id in live
                    ):
                        shapes[tn.id] = tv.value.id
            for c in ast.walk(st):
                if not isinstance(c, ast.Call) or not c.args or not isinstance(c.args[0], ast.Name):
                    continue
                f, a0 = c.func, c.args[0].id
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                if name in EINOPS_OPS and len(c.args) > 1 and isinstance(c.args[1], ast.Constant):
                    fv = (
                        g.get(f.id)
                        if isinstance(f, ast.Name)
                        else g.get(f.value.id)
                        if isinstance(f.value, ast.Name)
                        else None
                    )
                    if _is_einops(fv) or (isinstance(fv, types.ModuleType) and fv.__name__.startswith("einops")):
                        note(a0, pattern_rank(c.args[1].value))
                    continue
                if owner is None or depth == 0 or a0 not in live:
                    continue
                callee, bound = _callee(f, g, owner)
                held = _held_module(f, owner, loops)
                if held is not None and callee is None and type(held).__name__ == "Sequential":
                    # nn.Sequential hands its input to its first module, and each one's
                    # output to the next: past the layers that keep the rank
                    held = _first_rank_stating(held)
                if held is not None and callee is None:
                    if _is_einops(type(held)):
                        note(a0, pattern_rank(getattr(held, "pattern", None)))
                        continue
                    callee, bound = type(held).forward, True
                if not isinstance(callee, types.FunctionType):
                    continue
                sub = param_ranks(callee, held if held is not None else owner, depth - 1, _seen)
                passed = _passed_args(c, callee, bound)
                if passed and passed[0][1] is c.args[0] and passed[0][0] in sub:
                    note(a0, sub[passed[0][0]])
        # a parameter rebound here (anywhere in the statement, a compound one's body
        # included) is no longer the input; a `for` or `with` body's own statements come
        # next, so only their headers count here
        header = [st.target, st.iter] if isinstance(st, (ast.For, ast.AsyncFor)) else [st]
        if isinstance(st, (ast.With, ast.AsyncWith)):
            header = [i.optional_vars for i in st.items if i.optional_vars is not None]
        for h in header:
            for n in ast.walk(h):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    live.discard(n.id)
    return ranks


def _is_not_none_test(f):
    """True for a function of one parameter whose body is `return v is not None` (a
    module's `exists(v)` helper)."""
    f, node = _function_node(f) if isinstance(f, types.FunctionType) else (None, None)
    if node is None or len(node.args.args) != 1 or len(node.body) != 1:
        return False
    r = node.body[0]
    v = r.value if isinstance(r, ast.Return) else None
    return (
        isinstance(v, ast.Compare)
        and len(v.ops) == 1
        and isinstance(v.ops[0], ast.IsNot)
        and isinstance(v.left, ast.Name)
        and v.left.id == node.args.args[0].arg
        and isinstance(v.comparators[0], ast.Constant)
        and v.comparators[0].value is None
    )


def refused_none(fn):
    """The parameters of `fn` with a None default that its code refuses as None, so a call
    must pass a value: an `if` whose body raises when its test holds, the test being `p is
    None` (`if not self.training and edge_index is None: raise ValueError(…)`), or an
    `assert` whose test is `p is not None` or a call of a module function that tests
    exactly that (`assert exists(p)`) (Language Reference §7.3, §6.11). Through
    `and` / `or`: every parameter of an `or` of such tests in an `if` (any of them None
    raises) and of an `and` in an `assert`; only the first of an `and` in an `if` (`if a
    is None and b is None: raise`: either one given suffices) and of an `or` in an
    `assert`. Only the function's top-level statements count, and only for parameters it
    has not rebound before. Read with ast; runs nothing."""
    fn, node = _function_node(fn)
    if node is None:
        return set()
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set()
    nones = {n for n, p in sig.parameters.items() if p.default is None}
    return _refused(node, nones, getattr(fn, "__globals__", {}))


def _refused(node, nones, g):
    """refused_none on a function's syntax node: `nones` its parameters with a None
    default, `g` its globals."""

    def needed(test, raises_when):
        """The parameters that must not be None for `test` to be `not raises_when`."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return needed(test.operand, not raises_when)
        if isinstance(test, ast.BoolOp):
            parts = [needed(v, raises_when) for v in test.values]
            # raising when all hold (`and` raising, `or` passing): one None test avoided suffices
            if isinstance(test.op, ast.And) == raises_when:
                return next((p for p in parts if p), set())
            return set().union(*parts)
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Name)
            and test.left.id in nones
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
            and isinstance(test.ops[0], ast.Is) == raises_when
        ):
            return {test.left.id}
        if (
            not raises_when
            and isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and len(test.args) == 1
            and not test.keywords
            and isinstance(test.args[0], ast.Name)
            and test.args[0].id in nones
            and _is_not_none_test(g.get(test.func.id))
        ):
            return {test.args[0].id}  # `assert exists(p)`, exists(v) being `v is not None`
        return set()

    # the function's own top-level statements (a check nested in a branch holds only on
    # that branch: `if not exists(x): assert exists(prepend)`), for parameters it never
    # rebinds before (`steps = default(steps, …)` first replaces the None it then checks)
    rebound, out = set(), set()
    for st in node.body:
        if isinstance(st, ast.If) and any(isinstance(b, ast.Raise) for b in st.body):
            out |= needed(st.test, True) - rebound
        elif isinstance(st, ast.Assert):
            out |= needed(st.test, False) - rebound
        rebound |= {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def _row_of(expr, params, rows, ints=()):
    """The parameter whose row `expr` is: `p[0]`, `p[i]` (a plain name: a row number; a
    parameter only when annotated `int`, `ints`), a name bound to one, else None."""
    if isinstance(expr, ast.Name):
        return rows.get(expr.id)
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and expr.value.id in params:
        sl = expr.slice
        if isinstance(sl, ast.Constant) and isinstance(sl.value, int) and not isinstance(sl.value, bool):
            return expr.value.id
        if isinstance(sl, ast.Name) and (sl.id not in params or sl.id in ints):
            return expr.value.id
    return None


def _loop_bindings(target, it):
    """(name, attribute of self) for the names a `for` statement binds to the items of a
    module list the model holds: `for m in self.ms`, `for a, b in zip(self.as, self.bs)`,
    `for i, m in enumerate(self.ms)`; CHILDREN for the model's own sub-modules (`for m in
    self.children()`); (attribute, k) for the k-th name unpacked from each item (`for attn,
    ff in self.layers`, items that are module lists)."""

    def held(e):
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
            return e.attr
        if (
            isinstance(e, ast.Call)
            and not e.args
            and isinstance(e.func, ast.Attribute)
            and e.func.attr == "children"
            and isinstance(e.func.value, ast.Name)
            and e.func.value.id == "self"
        ):
            return CHILDREN  # nn.Module.children(): the model's own sub-modules, in order
        return None

    if isinstance(target, ast.Name):
        return [(target.id, held(it))] if held(it) else []
    if isinstance(target, ast.Tuple) and held(it) and held(it) != CHILDREN:
        # `for attn, ff in self.layers`: each item a module list, unpacked (§7.2): the
        # names are the first item's modules, in order
        return [(e.id, (held(it), k)) for k, e in enumerate(target.elts) if isinstance(e, ast.Name)]
    if not (isinstance(target, ast.Tuple) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)):
        return []
    names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
    if it.func.id == "zip" and len(it.args) == len(names):
        return [(n, held(a)) for n, a in zip(names, it.args) if n and held(a)]
    if it.func.id == "enumerate" and it.args and len(names) == 2 and names[1] and held(it.args[0]):
        return [(names[1], held(it.args[0]))]
    return []


def _int_dtype_expr(e, local):
    """True when `e` names torch integer dtypes only: `torch.long`, a tuple / list / set
    of them, or a name the function binds to one (`int_dtypes = (torch.int32, …)`)."""
    if isinstance(e, ast.Name) and e.id in local:
        return _int_dtype_expr(local[e.id], {})
    if isinstance(e, ast.Attribute):
        return e.attr in INT_DTYPES and isinstance(e.value, ast.Name) and e.value.id == "torch"
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return bool(e.elts) and all(_int_dtype_expr(x, local) for x in e.elts)
    return False


def _guarded_param(e, params, attr):
    """The parameter of `p.<attr>`, `p.<attr>()` or `p.<attr>(0)`, else None."""
    if isinstance(e, ast.Call) and not e.keywords:
        if e.args and not (isinstance(e.args[0], ast.Constant) and e.args[0].value == 0):
            return None
        e = e.func
    if isinstance(e, ast.Attribute) and e.attr == attr and isinstance(e.value, ast.Name) and e.value.id in params:
        return e.value.id
    return None


def _dtype_guards(node, params):
    """{parameter: "index" | "pairs"} for the parameters the function requires to be
    integer tensors: an `assert` that their dtype is one of torch's integer dtypes (==,
    in), or an `if` that raises when it is not (!=, not in). "pairs" when the guards also
    require a first dimension of 2 (`p.size(0) != 2`, `p.shape[0] != 2`)."""
    local = {}
    for st in ast.walk(node):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            local[st.targets[0].id] = st.value
    ints, two_rows = set(), set()

    def compares(test, positive):
        for c in ast.walk(test):
            if not (isinstance(c, ast.Compare) and len(c.ops) == 1):
                continue
            op, right = c.ops[0], c.comparators[0]
            wanted = (ast.Eq, ast.In, ast.Is) if positive else (ast.NotEq, ast.NotIn, ast.IsNot)
            if not isinstance(op, wanted):
                continue
            p = _guarded_param(c.left, params, "dtype")
            if p and _int_dtype_expr(right, local):
                ints.add(p)
            left = c.left
            if isinstance(left, ast.Subscript) and isinstance(left.slice, ast.Constant) and left.slice.value == 0:
                left = left.value  # p.shape[0]
            p = _guarded_param(left, params, "size") or _guarded_param(left, params, "shape")
            if p and isinstance(right, ast.Constant) and right.value == 2:
                two_rows.add(p)

    for st in ast.walk(node):
        if isinstance(st, ast.Assert):
            compares(st.test, True)
        elif isinstance(st, ast.If) and any(isinstance(b, ast.Raise) for b in st.body):
            compares(st.test, False)
    return {p: "pairs" if p in two_rows else "index" for p in ints}


class _Embedding:
    pass


_EMBEDDING = _Embedding()


def _first_held(owner, attr):
    """The first module of the module list (nn.ModuleList, nn.Sequential) the model holds
    as `attr` (the model's own first sub-module for CHILDREN), or None."""
    if isinstance(attr, tuple):  # (list, k): the k-th module of the list's first item
        first = _first_held(owner, attr[0])
        items = list(getattr(first, "_modules", {}).values())
        return items[attr[1]] if attr[1] < len(items) else None
    seq = owner if attr == CHILDREN else getattr(owner, "_modules", {}).get(attr)
    return next(iter(getattr(seq, "_modules", {}).values()), None) if seq is not None else None


def _held_module(f, owner, loops):
    """The sub-module (not an nn.Embedding, which _callee answers) a call's function
    expression denotes: `self.<name>` of the model's registered modules, the first module
    of a module list it subscripts (`self.convs[i]`), or a name bound by a loop over one
    (`loops`); else None."""
    sub = None
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and owner is not None:
        sub = getattr(owner, "_modules", {}).get(f.attr)
    elif (
        isinstance(f, ast.Subscript)
        and isinstance(f.value, ast.Attribute)
        and isinstance(f.value.value, ast.Name)
        and f.value.value.id == "self"
        and owner is not None
    ):
        # `self.convs[0](x, edge)`, `self.convs[i](…)`: a module of the list (the first)
        sub = _first_held(owner, f.value.attr)
    elif isinstance(f, ast.Name):
        sub = loops.get(f.id)
    if sub is None or not isinstance(getattr(type(sub), "forward", None), types.FunctionType):
        return None
    if type(sub).__name__ == "Embedding" and type(sub).__module__.startswith("torch.nn"):
        return None
    return sub


def _callee(f, g, owner):
    """(function, bound) for a call's function expression when it can be resolved without
    running anything: a module-level function, a function of a module named in the
    globals, a method of the model (`self.m`); `_EMBEDDING` for an nn.Embedding the model
    holds (`self.emb(p)`)."""
    try:
        if isinstance(f, ast.Name):
            v = g.get(f.id)
            return (v, False) if isinstance(v, types.FunctionType) else (None, False)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            base = f.value.id
            if base == "self" and owner is not None:
                m = inspect.getattr_static(type(owner), f.attr, None)
                if isinstance(m, (staticmethod, classmethod)):
                    return (m.__func__, isinstance(m, classmethod))
                if isinstance(m, types.FunctionType):
                    return (m, True)
                sub = getattr(owner, "_modules", {}).get(f.attr)
                if (
                    sub is not None
                    and type(sub).__name__ == "Embedding"
                    and type(sub).__module__.startswith("torch.nn")
                ):
                    return (_EMBEDDING, False)
                return (None, False)
            mod = g.get(base)
            if isinstance(mod, types.ModuleType):
                v = getattr(mod, f.attr, None)
                return (v, False) if isinstance(v, types.FunctionType) else (None, False)
    except Exception:  # noqa: BLE001 - a lookup that fails resolves nothing
        pass
    return (None, False)


def _init_parameters(cls):
    """(__init__'s syntax node, its parameter names, {self attribute: parameter} for each
    `self.x = p` in it), or (None, set(), {}) when its source cannot be read."""
    fn, node = _function_node(getattr(cls, "__init__", None))
    if node is None:
        return None, set(), {}
    positional, keyword_only = _params(node)
    params = set(positional + keyword_only) - {"self", "cls"}
    stored = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params:
            for t in n.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    stored[t.attr] = n.value.id
    return node, params, stored


def _other_method_nodes(cls):
    """Every syntax node of the class's own methods other than __init__."""
    for name, member in vars(cls).items():
        if name == "__init__" or not isinstance(member, types.FunctionType):
            continue
        _, m = _function_node(member)
        if m is not None:
            yield from ast.walk(m)


def member_choices(cls):
    """{parameter: value} for the constructor parameters of `cls` that __init__ tests for
    membership (`assert mode in self.table`, `if depth not in self.arch_settings: raise
    KeyError`, `assert kind in ['collect', 'distribute']`; Language Reference §6.10.2) in
    a list, tuple or set display of constants, or in a dict, list, tuple or set that is an
    attribute of the class or a global of its module: one of its members, the smallest
    when they compare (a ResNet's smallest depth), else the first. Any other value fails
    the test."""
    fn = getattr(cls, "__init__", None)
    node, params, _ = _init_parameters(cls)
    if node is None:
        return {}
    g = getattr(inspect.unwrap(getattr(fn, "__func__", fn)), "__globals__", {})

    def container(e):
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            try:
                return [ast.literal_eval(x) for x in e.elts]
            except ValueError:
                return None
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in ("self", "cls"):
            v = inspect.getattr_static(cls, e.attr, None)
        elif isinstance(e, ast.Name):
            v = g.get(e.id)
        else:
            return None
        if isinstance(v, dict):
            return list(v.keys())
        if isinstance(v, (list, tuple, set, frozenset)):
            return list(v)
        return None

    out = {}
    for n in ast.walk(node):
        if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn))):
            continue
        if not (isinstance(n.left, ast.Name) and n.left.id in params) or n.left.id in out:
            continue
        members = [m for m in container(n.comparators[0]) or [] if isinstance(m, (int, float, str))]
        if members:
            try:
                out[n.left.id] = min(members)
            except TypeError:
                out[n.left.id] = members[0]
    return out


def called_params(cls):
    """{parameter: "factory" | "callable"} for the constructor parameters of `cls` that its
    code calls: called in __init__, directly or through the attribute it is stored in
    (`self.act = act_layer()`: something that builds — a class, a factory), or stored on
    self and called in another method (`self.fn = fn` … `self.fn(x)`: something called on
    the inputs — a function, a module instance). A number or a string there fails with
    "'int' object is not callable"; the guess source uses this to give a callable."""
    node, params, stored = _init_parameters(cls)
    if node is None:
        return {}
    out = {}
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Name) and f.id in params:
            out[f.id] = "factory"
        elif (
            isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in stored
        ):
            out.setdefault(stored[f.attr], "factory")
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            # handed on to a method of the class that calls it (`self._make_layer(block,
            # 64, 2)` … `block(inplanes, planes)`): a factory too, one level deep
            for p in _called_in_method(cls, f.attr, n, params):
                out.setdefault(p, "factory")
    if stored:
        for n in _other_method_nodes(cls):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
                and n.func.attr in stored
            ):
                out.setdefault(stored[n.func.attr], "callable")
    return out


def _called_in_method(cls, name, call, params):
    """The parameters of __init__ among `params` that the call `self.name(...)` passes
    (by position or keyword) to a method of `cls` whose body calls them."""
    try:
        raw = inspect.getattr_static(cls, name)
    except AttributeError:
        return []
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    fn, node = _function_node(fn)
    if node is None:
        return []
    positional, _ = _params(node)
    if not isinstance(raw, staticmethod):
        positional = positional[1:]  # self / cls
    bound = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            break
        if isinstance(a, ast.Name) and a.id in params and i < len(positional):
            bound[positional[i]] = a.id
    for kw in call.keywords:
        if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in params:
            bound[kw.arg] = kw.value.id
    return [
        bound[n.func.id]
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in bound
    ]


def callable_value(v, how, nn):
    """A guessed value `v` made fit for how the code calls it: a factory is a class (an
    instance's class, else nn.Identity, which takes any arguments and builds a module that
    returns its input); a callable on inputs is an instance (of a class that builds
    without arguments, else nn.Identity()). Anything else is returned unchanged."""
    if how == "factory":
        if isinstance(v, type) or (callable(v) and not isinstance(v, nn.Module)):
            return v
        if isinstance(v, nn.Module):
            try:
                type(v)()
                return type(v)
            except Exception:  # noqa: BLE001 - needs arguments
                return nn.Identity
        return nn.Identity
    if how == "callable":
        if isinstance(v, type) and issubclass(v, nn.Module):
            try:
                return v()
            except Exception:  # noqa: BLE001
                return nn.Identity()
        if callable(v) and not isinstance(v, type):
            return v
        return nn.Identity()
    return v


def attribute_reads(cls):
    """{parameter: set of attribute names} for the constructor parameters of `cls` whose
    value its code uses as an object with attributes: `p.attr` read in __init__ (also as
    the start of a chain, `net.attn_layers.dim` reads `attn_layers`), and `self.x.attr`
    in the class's other methods when __init__ stored the parameter as `self.x = p`. A
    call's method name counts too (`net.parameters()`); the caller drops what every
    nn.Module has."""
    node, params, stored = _init_parameters(cls)
    if node is None:
        return {}
    out = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in params:
            out.setdefault(n.value.id, set()).add(n.attr)
    if stored:
        for n in _other_method_nodes(cls):
            # `self.net.attn_layers`: an Attribute whose value is `self.<stored>`
            v = n.value if isinstance(n, ast.Attribute) else None
            if (
                isinstance(v, ast.Attribute)
                and isinstance(v.value, ast.Name)
                and v.value.id == "self"
                and v.attr in stored
            ):
                out.setdefault(stored[v.attr], set()).add(n.attr)
    return out
