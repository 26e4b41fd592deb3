# Forward inputs (src/validate/README.md "Constructor arguments and inputs"): candidates
# from the first parameterized layers and the block's widths and token counts, shape
# repair from error messages, inputs made from specs (the usage snippet is snippet.py's).
import inspect
import re
import sys
import types

from . import CANDIDATE_MODULE  # noqa: F401


def layer_shapes(m, torch, nn):
    """Input candidates a layer accepts, from its type and sizes. Each candidate is a
    list of "specs": ("float", shape) or ("long", shape, high)."""
    c = []
    if isinstance(m, nn.Conv1d) or isinstance(m, nn.ConvTranspose1d):
        c.append([("float", (2, m.in_channels, 32))])
    elif isinstance(m, nn.Conv2d) or isinstance(m, nn.ConvTranspose2d):
        c.append([("float", (2, m.in_channels, 32, 32))])
        if m.in_channels == 3:
            c.append([("float", (1, 3, 224, 224))])  # an image stem of a whole network
        c.append([("float", (2, m.in_channels, 35, 35))])  # odd sizes for unpadded stride-2 branches
        c.append([("float", (2, m.in_channels, 17, 17))])
    elif isinstance(m, nn.Conv3d) or isinstance(m, nn.ConvTranspose3d):
        c.append([("float", (2, m.in_channels, 8, 16, 16))])
    elif isinstance(m, nn.Linear):
        c.append([("float", (2, 8, m.in_features))])
        c.append([("float", (2, m.in_features))])
        c.append([("float", (2, m.in_features, 16, 16))])
    elif isinstance(m, nn.Bilinear):
        c.append([("float", (2, m.in1_features)), ("float", (2, m.in2_features))])
    elif isinstance(m, nn.Embedding) or isinstance(m, nn.EmbeddingBag):
        c.append([("long", (2, 8), m.num_embeddings)])
    elif isinstance(m, nn.LayerNorm):
        shp = tuple(m.normalized_shape)
        c.append([("float", (2, 8) + shp)])
        c.append([("float", (2,) + shp)])
        if len(shp) == 1:
            c.append([("float", (2, 16, 16) + shp)])
    elif isinstance(m, nn.GroupNorm):
        c.append([("float", (2, m.num_channels, 16, 16))])
        c.append([("float", (2, m.num_channels, 32))])
    elif isinstance(m, nn.BatchNorm1d) or isinstance(m, nn.InstanceNorm1d):
        c.append([("float", (2, m.num_features, 16))])
        c.append([("float", (2, m.num_features))])
    elif isinstance(m, nn.BatchNorm2d) or isinstance(m, nn.InstanceNorm2d):
        c.append([("float", (2, m.num_features, 16, 16))])
    elif isinstance(m, nn.BatchNorm3d) or isinstance(m, nn.InstanceNorm3d):
        c.append([("float", (2, m.num_features, 4, 8, 8))])
    elif isinstance(m, nn.MultiheadAttention):
        e = m.embed_dim
        bf = getattr(m, "batch_first", False)
        shp = (2, 8, e) if bf else (8, 2, e)
        c.append([("float", shp)] * 3)
        c.append([("float", shp)])
    elif isinstance(m, (nn.RNN, nn.LSTM, nn.GRU)):
        c.append([("float", (2, 8, m.input_size))])
    elif isinstance(m, (nn.RNNCell, nn.LSTMCell, nn.GRUCell)):
        c.append([("float", (2, m.input_size))])
    else:
        ps = [p for p in m._parameters.values() if p is not None]
        if ps:
            p = ps[0]
            if p.dim() >= 1:
                last = p.shape[-1] if p.dim() > 1 else p.shape[0]
                c.append([("float", (2, 8, int(last)))])
                c.append([("float", (2, int(p.shape[0]), 16, 16))])
                if p.dim() > 1:
                    c.append(
                        [
                            (
                                "float",
                                (2, int(p.shape[1])) + ((16, 16) if p.dim() == 4 else (32,) if p.dim() == 3 else ()),
                            )
                        ]
                    )
    return c


def leaf_layers(model, nn, limit=3):
    out = []
    for m in model.modules():
        if m is model and any(True for _ in model.children()):
            continue
        if isinstance(m, (nn.Sequential, nn.ModuleList, nn.ModuleDict)):
            continue
        own = [p for p in m._parameters.values() if p is not None]
        known = isinstance(m, (nn.MultiheadAttention, nn.RNNBase))
        if own or known:
            out.append(m)
            if len(out) >= limit:
                break
    return out


def forward_plan(model, keywords=False):
    """Which forward parameters get a tensor, which an int (H/W-style sizes), which
    None (masks): returns list of (name, kind) for the required parameters. With
    `keywords`, the same for the required keyword-only parameters (those after `*` or
    `*args` without a default, PEP 3102: a call must name them, `forward(x, *, cond)`),
    which the caller passes by name."""
    try:
        sig = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return [] if keywords else [("x", "tensor")]
    if not sig.parameters:
        return []  # forward(self): a bias table, a positional embedding generator
    plan = []
    try:  # what the forward's code does with each parameter (usage.py)
        from nnrag_harness.usage import param_uses

        uses = param_uses(type(model).forward, model)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        uses = {}
    try:  # parameters used only through attributes a tensor lacks: records of tensors
        import torch

        from nnrag_harness.usage import record_attrs

        records = record_attrs(type(model).forward, torch, model)
    except Exception:  # noqa: BLE001
        records = {}
    try:  # None defaults the code refuses (`if edge_index is None: raise`): required
        from nnrag_harness.usage import refused_none

        refused = refused_none(type(model).forward)
    except Exception:  # noqa: BLE001
        refused = set()
    try:
        objects = object_inputs(type(model).forward)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        objects = {}

    # a parameter is required when it has no default, or a None default the code refuses
    # (a value the call must give); one after a skipped default could only be passed by
    # name, so a positional one there is left to its default
    def needs_value(p):
        return p.default is inspect.Parameter.empty or p.name in refused

    required = [
        p
        for p in sig.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) and p.default is inspect.Parameter.empty
    ]
    all_optional = bool(required) and all(is_optional(p.annotation) for p in required)
    kw_required = [p for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY and needs_value(p)]
    if keywords:
        # classified like positional parameters that follow the positional ones
        positional = forward_plan(model)
        plan = list(positional)
    skipped = False
    for p in kw_required if keywords else sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            if not plan:
                plan.append((p.name, "tensor"))
            skipped = True  # what follows *args is keyword-only
            continue
        if p.kind == p.VAR_KEYWORD or not needs_value(p) or (skipped and p.kind != p.KEYWORD_ONLY):
            skipped = skipped or p.kind != p.KEYWORD_ONLY
            continue
        if p.kind == p.KEYWORD_ONLY and not keywords:
            continue
        n = p.name.lower()
        ann = p.annotation
        an = getattr(ann, "__name__", str(ann)) if ann is not inspect.Parameter.empty else ""
        if p.name in objects:
            # an object of a class the forward asserts (`assert isinstance(input,
            # SparseConvTensor)`) or its annotation names (PEP 484: an instance of it)
            plan.append((p.name, "object"))
        elif p.name in records and an in ("", "Any", "object"):
            # `batch.x = self.bn(batch.x)`: an object whose attributes (read by the code)
            # are tensors of the input's shape (make_inputs)
            # an attribute the code uses as an index (`self.conv(batch.x, batch.edge_index)`)
            # is an integer tensor: "attr=index" / "attr=pairs"
            plan.append(
                (
                    p.name,
                    "record:"
                    + ",".join(
                        a + ("=" + uses[p.name + "." + a] if uses.get(p.name + "." + a) in ("index", "pairs") else "")
                        for a in records[p.name]
                    ),
                )
            )
        elif is_optional(ann) and (plan or all_optional) and p.name not in refused:
            # Optional[X] accepts None (PEP 484): prompts a decoder may go without; the
            # first input stays a tensor unless every parameter is optional (a None the
            # code refuses is no choice: `edge_index: Optional[Tensor] = None` raising
            # when it is None gets a value like a required parameter)
            plan.append((p.name, "none"))
        elif (
            n in ("h", "w", "height", "width", "hh", "ww", "size_h", "size_w")
            or an == "int"
            or uses.get(p.name) == "size"
        ):
            plan.append((p.name, "int"))
        elif (
            n
            in (
                "feat_size",
                "hw_shape",
                "hw_size",
                "size",
                "hw",
                "input_size",
                "shape",
                "resolution",
                "grid_size",
                "spatial_shape",
                "x_size",
                "thw",
            )
            or "Tuple[int" in str(ann)
            or "List[int" in str(ann)
        ):
            plan.append((p.name, "hw"))
        elif re.search(r"(List|Sequence|Tuple|list|tuple)\[(torch\.)?Tensor", str(ann)):
            # (PEP 585's builtin generics too: `list[Tensor]`)
            plan.append((p.name, "tensors"))  # torch.cat(x, 1) over a list of feature maps
        elif plan and n == "rois" and roi_columns(model, p.name) in (None, 5):
            # regions of interest beside a feature map: Tensor[K, 5], each row a batch
            # index then a box (x1, y1, x2, y2) (torchvision.ops.roi_align's `boxes`,
            # the format RoI operators take)
            plan.append((p.name, "rois"))
        elif n in ("target", "targets", "label", "labels", "y_true", "gt", "classes"):
            plan.append((p.name, "target"))
        elif plan and TOKEN_IDS.match(n):
            plan.append((p.name, "ids"))  # token ids beside another input (image, text)
        elif "mask" in n:
            # a required mask (no default, not Optional: a call must pass a value, PEP 484
            # gives None only to Optional) is a tensor like the input: boolean when the code
            # uses it as one (`~mask`, `x[mask]`, masked_fill), else weights in [0, 1)
            plan.append((p.name, "bool-mask" if p.name in bool_masks(type(model).forward) else "mask"))
        elif an == "bool":
            plan.append((p.name, "false"))
        elif uses.get(p.name) in ("index", "pairs") or (plan and uses.get(p.name) == "ids"):
            # used as an integer index by the code: positions in the first input's rows
            plan.append((p.name, uses[p.name]))
        else:
            plan.append((p.name, "tensor"))
    if keywords:
        return plan[len(positional) :]
    if not plan:
        plan.append(("x", "tensor"))
    return plan


def _plain_class(c):
    """A class whose instances a forward may take as a structured input: defined outside
    torch, numpy, typing and the builtins, not an nn.Module, not an enum or a protocol."""
    import enum

    if not isinstance(c, type) or c is inspect.Parameter.empty or issubclass(c, (enum.Enum, BaseException)):
        return False
    top = (getattr(c, "__module__", "") or "").split(".")[0]
    if top in ("torch", "numpy", "typing", "builtins", "collections", "abc", "types", "inspect"):
        return False
    return not any(b.__name__ == "Module" and b.__module__.startswith("torch.nn") for b in c.__mro__)


def object_inputs(fn):
    """{parameter: class} for the forward parameters that must be an instance of a class
    of the code's own: annotated with it (PEP 484), or checked with `assert
    isinstance(p, C)` / `if not isinstance(p, C): raise …` at the forward's top level.
    Read with ast; the class looked up in the function's globals."""
    import ast

    from nnrag_harness.usage import _function_node, _params

    fn, node = _function_node(fn)
    if node is None:
        return {}
    positional, keyword_only = _params(node)
    params = set(positional + keyword_only) - {"self", "cls"}
    g = getattr(fn, "__globals__", {})
    out = {}
    for name in params:
        try:
            ann = inspect.signature(fn).parameters[name].annotation
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(ann, str):
            ann = g.get(ann.split(".")[-1], ann)
        if _plain_class(ann):
            out[name] = ann

    def checked(test):
        if (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)
            and test.args[0].id in params
            and isinstance(test.args[1], ast.Name)
        ):
            c = g.get(test.args[1].id)
            if _plain_class(c):
                out.setdefault(test.args[0].id, c)

    for st in node.body:
        if isinstance(st, ast.Assert):
            checked(st.test)
        elif (
            isinstance(st, ast.If)
            and isinstance(st.test, ast.UnaryOp)
            and isinstance(st.test.op, ast.Not)
            and st.body
            and isinstance(st.body[0], ast.Raise)
        ):
            checked(st.test.operand)
    return out


INTEGER_NAMES = re.compile(r"(^|_)(index|indices|idx|ids|coords?|coordinates|positions?)$", re.I)


def build_object(cls, t, torch):
    """An instance of a structured-input class (object_inputs) from its constructor's
    required parameters, by annotation and name: a tensor the input `t` (integer-named
    ones — indices, coordinates — zeros with t's rows and one column per spatial size
    plus the batch index; 0 … N-1, one per row, when the constructor requires one
    dimension, `if node_index.dim() != 1: raise`), an int 1 (one sample), a float 1.0, a bool False, a
    sequence of ints [8, 8, 8]. Raises TypeError when a parameter is none of these."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return cls()
    try:  # the rank the constructor requires of a tensor (`if index.dim() != 1: raise`)
        from nnrag_harness.usage import param_ranks

        ranks = param_ranks(cls.__init__)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        ranks = {}
    seqs = 3
    kwargs = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not inspect.Parameter.empty:
            continue
        text = str(p.annotation).replace("typing.", "") if p.annotation is not inspect.Parameter.empty else ""
        a = getattr(p.annotation, "__name__", text) if isinstance(p.annotation, type) else text
        if "Tensor" in a:
            rows = int(t.shape[0]) if t.dim() else 1
            if INTEGER_NAMES.search(p.name) and ranks.get(p.name) == 1:
                kwargs[p.name] = torch.arange(rows)  # one index per row, each its own
            elif INTEGER_NAMES.search(p.name):
                kwargs[p.name] = torch.zeros((rows, seqs + 1), dtype=torch.int32)
            elif ranks.get(p.name) == 1:
                kwargs[p.name] = t.reshape(t.shape[0], -1)[:, 0].contiguous()
            else:
                kwargs[p.name] = t.reshape(t.shape[0], -1) if t.dim() > 2 else t
        elif a in ("int",):
            kwargs[p.name] = 1
        elif a in ("float",):
            kwargs[p.name] = 1.0
        elif a in ("bool",):
            kwargs[p.name] = False
        elif re.search(r"List|Tuple|Sequence|list|tuple", a):
            kwargs[p.name] = [8] * seqs
        else:
            raise TypeError("cannot build %s: parameter %s" % (cls.__name__, p.name))
    return cls(**kwargs)


MASK_BOOL_CALLS = {"masked_fill", "masked_fill_", "masked_select", "masked_scatter", "where", "logical_not"}


def bool_masks(fn):
    """The parameters of `fn` its code uses as booleans: inverted (`~p`, `not`-like
    `logical_not(p)`), a subscript's index (`x[p]`, boolean indexing), the mask of
    masked_fill / masked_select / masked_scatter, the condition of torch.where, or
    converted with `.bool()`. Read with ast; runs nothing."""
    import ast

    from nnrag_harness.usage import _function_node, _params

    fn, node = _function_node(fn)
    if node is None:
        return set()
    positional, keyword_only = _params(node)
    params = set(positional + keyword_only) - {"self", "cls"}
    out = set()

    def name(e):
        return e.id if isinstance(e, ast.Name) and e.id in params else None

    for e in ast.walk(node):
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Invert) and name(e.operand):
            out.add(name(e.operand))
        elif isinstance(e, ast.Subscript) and name(e.slice):
            out.add(name(e.slice))
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
            if e.func.attr == "bool" and name(e.func.value):
                out.add(name(e.func.value))
            elif e.func.attr in MASK_BOOL_CALLS:
                # x.masked_fill(mask, v) / torch.where(mask, a, b) / torch.masked_fill(x, mask, v)
                is_method = not (isinstance(e.func.value, ast.Name) and e.func.value.id == "torch")
                pos = 0 if (is_method or e.func.attr in ("where", "logical_not")) else 1
                if len(e.args) > pos and name(e.args[pos]):
                    out.add(name(e.args[pos]))
                for kw in e.keywords:
                    if kw.arg in ("mask", "condition") and name(kw.value):
                        out.add(name(kw.value))
    return out


TOKEN_IDS = re.compile(r"^(text|texts|tokens|token_ids|input_ids|ids|tokenized|captions?)$")
SEQ_ATTRS = ("context_length", "block_size", "max_seq_len", "n_ctx", "seq_len", "max_position_embeddings")


def is_optional(ann):
    """typing.Optional[X] / Union[X, None] (PEP 484) or `X | None` (PEP 604), as an object
    or a string."""
    if ann is inspect.Parameter.empty:
        return False
    t = str(ann).replace("typing.", "")
    if re.search(r"(^|\|)\s*None(Type)?\s*(\||$)", t) and "|" in t:
        return True  # PEP 604: `Tensor | None` (str() of the union, or the annotation's text)
    return t.startswith("Optional[") or (t.startswith("Union[") and "NoneType" in t or t.endswith(", None]"))


def targets_as_tensors(plan):
    """The plan with class-index targets made inputs like the others: losses that
    combine their arguments elementwise (a soft label of the prediction's shape)."""
    if not any(k == "target" for _, k in plan):
        return None
    return [(n, "tensor" if k == "target" else k) for n, k in plan]


ROW_KINDS = {"ids": "row-ids", "mask": "row-mask", "bool-mask": "row-bool-mask"}


def rows_variant(model, plan):
    """The plan with its masks and embedding ids made per row of the first feature input
    (its shape without the last, feature, dimension), or None when it has neither: a
    label or a mask per node or per token (`x[mask] += self.emb(y[mask])`: a boolean
    index selects along the leading dimensions whose shape it has, and an embedding
    maps each id to a feature vector, so ids shaped like the rows give features shaped
    like the input). A first parameter the code only looks up in an embedding the model
    holds (`x = self.emb(x)` beside other inputs) is such ids too. Tried after the plan's
    own candidates, whose masks have the input's whole shape."""
    try:
        from nnrag_harness.usage import param_uses

        uses = param_uses(type(model).forward, model)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        uses = {}
    out, changed = [], False
    for i, (name, kind) in enumerate(plan):
        if kind in ROW_KINDS:
            out.append((name, ROW_KINDS[kind]))
            changed = True
        elif i == 0 and kind == "tensor" and uses.get(name) == "ids" and any(k == "tensor" for _, k in plan[1:]):
            out.append((name, "row-ids"))
            changed = True
        else:
            out.append((name, kind))
    return out if changed else None


def given_variant(model, plan):
    """The plan with its required Optional parameters given a value instead of None (an
    index when the code uses them as one, else a tensor like the others), or None when it
    has none: PEP 484's Optional says None is accepted by the annotation, not that the
    code works without the value (`batch: Optional[Tensor]` sorted by a callee). Tried
    after the plan's own candidates."""
    if not any(k == "none" for _, k in plan):
        return None
    try:
        from nnrag_harness.usage import param_uses

        uses = param_uses(type(model).forward, model)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        uses = {}
    return [(n, (uses[n] if uses.get(n) in ("index", "pairs") else "tensor") if k == "none" else k) for n, k in plan]


def input_candidates(model, plan, width_values, torch, nn, spatial, hints=None):
    n_tensor = sum(
        1 for _, k in plan if k in ("tensor", "tensors", "mask", "bool-mask", "object") or k.startswith("record:")
    )
    if not plan:
        return [[]]
    has_hw = sum(1 for _, k in plan if k == "int") >= 2 or any(k == "hw" for _, k in plan)
    cands = []
    for m in leaf_layers(model, nn):
        for specs in layer_shapes(m, torch, nn):
            cands.append(specs)
    widths = []
    for w in list(width_values) + [3, 16, 32, 64]:
        if isinstance(w, int) and not isinstance(w, bool) and 0 < w <= 4096 and w not in widths:
            widths.append(w)
    for w in widths[:4]:
        cands.append([("float", (2, w, spatial, spatial))])
        cands.append([("float", (2, 8, w))])
        cands.append([("float", (2, w))])
        cands.append([("float", (2, w, 32))])
    # token counts the block is built for (window_size 7 → 49 tokens, resolution 14 →
    # 196, num_patches): the same token candidates with that many tokens
    counts = token_counts(model, hints)
    if counts:
        extra = []
        for specs in cands:
            f = specs[0]
            if f[0] == "float" and len(f[1]) == 3 and f[1][1] == 8:
                for n in counts:
                    extra.append([("float", (f[1][0], n, f[1][2]))] + list(specs[1:]))
        cands = cands[:1] + extra + cands[1:]
    # rewrite to the forward's tensor count; token layout when forward takes (x, H, W)
    out, seen = [], set()
    expanded = []
    for specs in cands:
        if has_hw:
            f = [s for s in specs if s[0] == "float"]
            if f:
                shp = f[0][1]
                c = shp[1] if len(shp) == 4 else shp[2] if len(shp) == 3 else None
                if c is not None:
                    # H·W tokens for (8, 8), and H·W + 1 for blocks that carry a class token
                    expanded.append([("float", (shp[0], 64, c))])
                    expanded.append([("float", (shp[0], 65, c))])
                    continue
        expanded.append(specs)
    # the rank the code states for a tensor input (`b, c, h, w = x.shape`,
    # `rearrange(t, 'b -> b 1')`, usage.param_ranks): that input's spec made of that rank
    try:
        from nnrag_harness.usage import param_ranks

        ranks = param_ranks(type(model).forward, model)
    except Exception:  # noqa: BLE001 - reading the code is best effort
        ranks = {}
    consumers = [
        (name, kind)
        for name, kind in plan
        if kind in ("tensor", "tensors", "mask", "bool-mask", "object") or kind.startswith("record:")
    ]
    for specs in expanded:
        if n_tensor > len(specs):
            specs = list(specs) + [specs[-1]] * (n_tensor - len(specs))
        elif n_tensor < len(specs):
            specs = list(specs[:n_tensor])
        if ranks:
            specs = [
                with_rank(sp, ranks[c[0]]) if c[1] == "tensor" and c[0] in ranks else sp
                for sp, c in zip(specs, consumers)
            ]
        key = repr(specs)
        if key not in seen:
            seen.add(key)
            out.append(specs)
    return out[:14]


def with_rank(spec, r):
    """The input spec `spec` made `r`-dimensional, keeping its batch and its features (the
    second dimension of a channels-first map, else the last): (B,), (B, C), (B, 8, C),
    (B, C, H, W), (B, C, 4, H, W) with the map's H, W when it has them, else 8."""
    shp = tuple(spec[1])
    if len(shp) == r or not shp or r < 1 or r > 6:
        return spec
    b = shp[0]
    c = shp[1] if len(shp) >= 4 else shp[-1] if len(shp) >= 2 else 8
    hw = tuple(shp[-2:]) if len(shp) >= 4 else (8, 8)
    new = {1: (b,), 2: (b, c), 3: (b, 8, c), 4: (b, c) + hw}.get(r) or (b, c) + (4,) * (r - 4) + hw
    return (spec[0], new) + tuple(spec[2:])


TOKEN_ATTRS = (
    "window_size",
    "resolution",
    "input_resolution",
    "num_patches",
    "seq_len",
    "grid_size",
    "feat_size",
    "N",
    "num_tokens",
)


def token_counts(model, hints=None):
    """Token counts suggested by the block's attributes or constructor values, or by
    the configuration object it keeps (self.cfg.num_tokens of a dataclass config)."""
    import dataclasses

    out = []
    hints = hints or {}
    configs = [
        v
        for v in vars(model).values()
        if dataclasses.is_dataclass(v) and not isinstance(v, type) or isinstance(v, types.SimpleNamespace)
    ]
    # then the direct sub-modules (self.attn.N of a block whose attention fixes its tokens)
    configs += list(model.children())[:8]
    for name in TOKEN_ATTRS:
        v = getattr(model, name, None)
        if v is None:
            v = hints.get(name)
        for c in configs:
            if v is None:
                v = getattr(c, name, None)
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and 1 < v <= 4096:
            n = v if name in ("num_patches", "seq_len", "N", "num_tokens") else v * v
        elif isinstance(v, (tuple, list)) and v and all(isinstance(i, int) for i in v):
            n = 1
            for i in v:
                n *= i
        else:
            continue
        if 1 < n <= 4096 and n not in out:
            out.append(n)
    return out[:2]


SIZE_MISMATCH = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
CHANNELS_MISMATCH = re.compile(r"expected input\[([\d, ]+)\] to have (\d+) channels, but got (\d+) channels")
MATMUL_MISMATCH = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
# torch.nn.RNN / LSTM / GRU on an input whose features are not the layer's input_size
RNN_MISMATCH = re.compile(r"input\.size\(-1\) must be equal to input_size\. Expected (\d+), got (\d+)")
NORM_MISMATCH = re.compile(
    r"normalized_shape=\[(\d+)\], expected input with shape \[\*, \1\], but got input of size\s*\[([\d, ]+)\]"
)


def repair_specs(specs, msg):
    """The same input with one dimension changed as a shape error says it should be:
    "size of tensor a (8) must match the size of tensor b (49)" (8 tokens → 49),
    "expected input[2, 16, 8, 8] to have 32 channels, but got 16", "mat1 and mat2 shapes
    cannot be multiplied (16x4 and 32x64)" (last dim 4 → 32), a recurrent layer's
    "input.size(-1) must be equal to input_size. Expected 32, got 3" (last dim 3 → 32),
    LayerNorm over the wrong last dim. Returns None when the message names no dimension of the input."""

    def replace(pred, old, new):
        if new > 4096:
            return None
        out, done = [], False
        for sp in specs:
            if not done and sp[0] == "float":
                shp = list(sp[1])
                idx = pred(shp)
                if idx is not None:
                    shp[idx] = new
                    numel = 1
                    for x in shp:
                        numel *= x
                    if numel > (1 << 22):
                        return None  # 4M elements: a repair that big is not a plausible input
                    done = True
                    out.append((sp[0], tuple(shp)) + tuple(sp[2:]))
                    continue
            out.append(sp)
        return out if done else None

    def dim_equal(v, prefer=(1, -1, 2, 3)):
        def pred(shp):
            for j in prefer:
                if -len(shp) <= j < len(shp) and j != 0 and shp[j] == v:
                    return j
            return None

        return pred

    m = CHANNELS_MISMATCH.search(msg)
    if m:
        shape = [int(x) for x in m.group(1).split(",")]
        want, got = int(m.group(2)), int(m.group(3))
        r = replace(lambda shp: 1 if list(shp) == shape and len(shp) > 1 else None, got, want)
        return r if r is not None else replace(dim_equal(got, (1,)), got, want)
    m = MATMUL_MISMATCH.search(msg)
    if m:
        rows, got, want = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if got == want:
            return None

        def flattened(shp):
            # a Linear flattens its input's leading dimensions into mat1's rows: the
            # input whose rows match is the one that failed (another may share its width)
            n = 1
            for x in shp[:-1]:
                n *= x
            return -1 if shp and shp[-1] == got and n == rows else None

        r = replace(flattened, got, want)
        return r if r is not None else replace(dim_equal(got, (-1,)), got, want)
    m = RNN_MISMATCH.search(msg)
    if m:
        want, got = int(m.group(1)), int(m.group(2))
        return replace(dim_equal(got, (-1,)), got, want) if got != want else None
    m = NORM_MISMATCH.search(msg)
    if m:
        want = int(m.group(1))
        shape = [int(x) for x in m.group(2).split(",")]
        if len(shape) == 4 and shape[1] == want:
            # channels-first map given to a channels-last norm: the same map channels-last
            return replace(lambda shp: 1 if list(shp) == shape else None, want, shape[2]) and [
                ("float", (shape[0], shape[2], shape[3], want)) if sp[0] == "float" and list(sp[1]) == shape else sp
                for sp in specs
            ]
        return None
    m = SIZE_MISMATCH.search(msg)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if a == b:
            return None
        r = replace(dim_equal(a), a, b)
        return r if r is not None else replace(dim_equal(b), b, a)
    return None


def ids_shape(model, nn, batch):
    """(B, L) token ids for a model: L its context length (a positional table is that
    long), else 8; the ids below its first embedding's size."""
    n = None
    for a in SEQ_ATTRS:
        v = getattr(model, a, None)
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 4096:
            n = v
            break
    vocab = next((m.num_embeddings for m in model.modules() if isinstance(m, nn.Embedding)), 2)
    return (batch, n or 8), vocab


def index_input(kind, x, torch):
    """Positions among the rows of `x` (the first input: a node, a token, a box): for
    "index" a vector of one per row, sorted, half as many distinct (a batch assignment
    works too); for "pairs" a (2, N) tensor linking each row to the next (a ring of
    edges). int64, torch's index dtype."""
    n = max(1, int(x.shape[0]) if x is not None and x.dim() >= 1 else 2)
    r = torch.arange(n)
    return r // 2 if kind == "index" else torch.stack([r, (r + 1) % n])


DOC_SHAPE = r"[\(\[]\s*\w+\s*,\s*(\d+)\s*[\)\]]"


def roi_columns(model, name):
    """The column count the class's or its forward's docstring gives the parameter `name`
    (`rois with shape (n, 6)`, `rois (Tensor): [N, 7]`): 5 when one of the shapes it names
    has 5 columns, else the first; None when it names none."""
    docs = " ".join(
        d for d in (inspect.getdoc(type(model)) or "", inspect.getdoc(type(model).forward) or "") if d
    ).split()
    text = " ".join(docs)
    cols = [
        int(c)
        for m in re.finditer(r"\b%s\b(.{0,120})" % re.escape(name), text)
        for c in re.findall(DOC_SHAPE, m.group(1))
    ]
    if not cols:
        return None
    return 5 if 5 in cols else cols[0]


def rois_input(x, torch, k=4):
    """`k` regions of interest of the feature map `x` (B, C, H, W): Tensor[k, 5] of a
    batch index in [0, B) then a box (x1, y1, x2, y2) inside the map, x1 < x2 and
    y1 < y2, in the map's own coordinates; the dtype of `x`."""
    b, h, w = (int(x.shape[0]), int(x.shape[-2]), int(x.shape[-1])) if x is not None and x.dim() >= 3 else (1, 8, 8)
    g = torch.Generator().manual_seed(0)
    idx = torch.arange(k) % max(1, b)
    x1 = torch.rand(k, generator=g) * (w / 2)
    y1 = torch.rand(k, generator=g) * (h / 2)
    x2 = x1 + 1 + torch.rand(k, generator=g) * (w / 2 - 1)
    y2 = y1 + 1 + torch.rand(k, generator=g) * (h / 2 - 1)
    out = torch.stack([idx.float(), x1, y1, x2, y2], dim=1)
    return out.to(x.dtype) if x is not None and x.is_floating_point() else out


def make_inputs(specs, plan, torch, model=None):
    tensors = []
    for s in specs:
        if s[0] == "long":
            tensors.append(torch.randint(0, max(1, int(s[2])), s[1], dtype=torch.long))
        else:
            tensors.append(torch.randn(*s[1]))
    args, ti = [], 0
    for _, kind in plan:
        if kind == "tensor":
            args.append(tensors[ti] if ti < len(tensors) else tensors[-1])
            ti += 1
        elif kind == "object":
            t = tensors[ti] if ti < len(tensors) else tensors[-1]
            cls = object_inputs(type(model).forward).get(plan[len(args)][0]) if model is not None else None
            args.append(build_object(cls, t, torch) if cls is not None else t)
            ti += 1
        elif kind in ("mask", "bool-mask"):
            # a required mask: of this input's shape, booleans or weights in [0, 1)
            t = tensors[ti] if ti < len(tensors) else tensors[-1]
            if t.is_floating_point():
                t = t > 0 if kind == "bool-mask" else torch.sigmoid(t)
            args.append(t)
            ti += 1
        elif kind == "tensors":
            # a list the block concatenates along channels: the spec's channels in two halves
            t = tensors[ti] if ti < len(tensors) else tensors[-1]
            if t.is_floating_point() and t.dim() >= 2 and t.shape[1] % 2 == 0:
                args.append(list(t.chunk(2, dim=1)))
            else:
                args.append([t, t.clone()])
            ti += 1
        elif kind.startswith("record:"):
            # a record of tensors (types.SimpleNamespace): each attribute the code reads
            # a tensor of this input's shape
            import types

            t = tensors[ti] if ti < len(tensors) else tensors[-1]
            fields = {}
            for a in kind[len("record:") :].split(","):
                a, _, how = a.partition("=")
                fields[a] = index_input(how, t, torch) if how else t.clone()
            args.append(types.SimpleNamespace(**fields))
            ti += 1
        elif kind == "int":
            args.append(8)
        elif kind == "hw":
            args.append((8, 8))
        elif kind == "target":
            # class indices for a loss: one per sample, below the last dim of the first input
            x = tensors[0] if tensors else None
            ncls = int(x.shape[-1]) if x is not None and x.dim() >= 1 else 2
            nb = int(x.shape[0]) if x is not None and x.dim() >= 1 else 2
            args.append(torch.randint(0, max(1, ncls), (nb,), dtype=torch.long))
        elif kind == "false":
            args.append(False)
        elif kind in ("index", "pairs"):
            args.append(index_input(kind, tensors[0] if tensors else None, torch))
        elif kind == "rois":
            args.append(rois_input(tensors[0] if tensors else None, torch))
        elif kind in ROW_KINDS.values():
            # one per row of the first feature input (rows_variant): ids below the first
            # embedding's size, booleans, or weights in [0, 1)
            x = next((t for t in tensors if t.is_floating_point()), tensors[0] if tensors else None)
            rows = tuple(x.shape[:-1] if x.dim() >= 2 else x.shape) if x is not None else (2,)
            if kind == "row-ids":
                _, vocab = ids_shape(model, torch.nn, 1) if model is not None else (None, 2)
                args.append(torch.randint(0, max(1, vocab), rows, dtype=torch.long))
            elif kind == "row-bool-mask":
                args.append(torch.rand(rows) < 0.5)
            else:
                args.append(torch.rand(rows))
        elif kind == "ids":
            x = tensors[0] if tensors else None
            nb = int(x.shape[0]) if x is not None and x.dim() >= 1 else 2
            shape, vocab = ids_shape(model, torch.nn, nb) if model is not None else ((nb, 8), 2)
            args.append(torch.randint(0, max(1, vocab), shape, dtype=torch.long))
        else:
            args.append(None)
    return args


def shapes_of(args, torch):
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(list(a.shape))
        elif isinstance(a, list):
            out.extend(list(t.shape) for t in a if isinstance(t, torch.Tensor))
    return out


def fresh_inputs(args, torch):
    """A copy of forward inputs (tensors cloned, lists copied, a record of tensors made
    again): a forward that changes its input in place (x.add_(), features.append,
    batch.x = …) must not change the next run's."""
    import types

    def one(a):
        if isinstance(a, torch.Tensor):
            return a.clone()
        if isinstance(a, list):
            return fresh_inputs(a, torch)
        if type(a) is types.SimpleNamespace:
            return types.SimpleNamespace(**{k: one(v) for k, v in vars(a).items()})
        return a

    return [one(a) for a in args]


def seed_all(torch, n):
    """Seed every random number generator a block may draw from (torch, Python's
    random, NumPy when loaded), so the original and the copy see the same draws."""
    torch.manual_seed(n)
    import random

    random.seed(n)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(n)


def flatten_tensors(v, torch, out=None, depth=0):
    if out is None:
        out = []
    if len(out) >= 64 or depth > 5:
        return out
    if isinstance(v, torch.Tensor):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            flatten_tensors(x, torch, out, depth + 1)
    elif isinstance(v, dict):
        for x in v.values():
            flatten_tensors(x, torch, out, depth + 1)
    elif hasattr(v, "__dict__") and not isinstance(v, type):
        for x in vars(v).values():
            flatten_tensors(x, torch, out, depth + 1)
    return out
