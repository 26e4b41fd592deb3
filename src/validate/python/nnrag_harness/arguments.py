# Constructor arguments (src/validate/README.md "Constructor arguments and inputs"): the
# guesses by name and annotation the sources share (guess_value), the constructor's
# parameters (ctor_params), the refinements candidates.py applies to the sources' plans,
# and the mapping of a candidate's values to the original module's objects for
# equivalence (to_original). Below sources.py and source_*.py, which import it.
import ast
import functools
import inspect
import re
import sys
import textwrap
import types

from . import CANDIDATE_MODULE  # noqa: F401


class Unguessable(Exception):
    pass


CONFIG_NAMES = re.compile(
    r"^(config|cfg|conf|configs|args|opt|opts|options|hparams|hp|params|settings|model_args|model_cfg|arch|spec|kwargs_dict)$",
    re.I,
)
HEADS = re.compile(r"^(num_?heads?|n_?heads?|heads|nhead|num_attention_heads|attn_heads|n_head)$", re.I)
HEAD_DIM = re.compile(r"^(head_?dim|dim_?head|head_size|d_head|attn_head_dim|d_k|d_v)$", re.I)
OUT_DIM = re.compile(
    r"^(out|oup|c2|c_out|dim_out|nout|n_out|output)(_?(ch|chs|chans|channels|planes|features|dim|size|width))?$|^out_",
    re.I,
)
DIM_WORDS = re.compile(
    r"^(in_?ch(s|ans|annels)?|in_?planes|inplanes|inp|ch|chs|channels?|c|c1|c_in|dim|d|d_model|n_embd|n_embed|"
    r"embed_?dim|emb_?dim|embedding_dim|hidden|width|planes|nf|nc|features|num_features|num_channels|n_feats?|"
    r"filters|units|model_dim|d_hidden|mid_?(ch|chs|channels)|n_in|nin|input_?(dim|size|channels|features))$"
    r"|(_|^)(dim|dims|channels|chs|chans|features|planes|size|width|hidden|ch|units|filters)$",
    re.I,
)


SEQ_OF_INT = re.compile(r"^(typing\.)?(List|Tuple|Sequence|list|tuple)\[int(, int)*(, \.\.\.)?\]$")
BUILTIN_TYPES = (int, float, str, bool, bytes, list, tuple, dict, set, type(None))


def ann_text(ann):
    if ann is inspect.Parameter.empty or ann is None:
        return ""
    if isinstance(ann, str):
        return ann
    if isinstance(ann, type):
        return ann.__name__
    return str(ann)


def resolve_annotation(ann, g):
    """An annotation object; a string annotation (PEP 563 `from __future__ import
    annotations`, or a quoted forward reference) is evaluated in the module namespace."""
    if isinstance(ann, str) and g is not None:
        try:
            return eval(ann, g)  # noqa: S307 - sandboxed
        except Exception:  # noqa: BLE001
            return ann
    return ann


def build_config(cls, d, h, nn, g, depth=0):
    """An instance of a configuration class named by an annotation (`cfg: RegNetCfg`):
    a dataclass (PEP 557) built from its field defaults, its required fields guessed
    from their names and types; another class only when its constructor needs nothing."""
    import dataclasses

    if depth > 3:
        raise Unguessable(cls.__name__)
    if dataclasses.is_dataclass(cls):
        try:
            import typing

            hints = typing.get_type_hints(cls, g)
        except Exception:  # noqa: BLE001
            hints = {}
        kw = {}
        for f in dataclasses.fields(cls):
            if not f.init or f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            kw[f.name] = guess_value(f.name, hints.get(f.name, f.type), d, h, nn, g, depth=depth + 1)
        try:
            return cls(**kw)
        except Exception:  # noqa: BLE001
            raise Unguessable(cls.__name__) from None
    params = ctor_params(cls)
    if params is not None and all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
    ):
        try:
            return cls()
        except Exception:  # noqa: BLE001
            pass
    raise Unguessable(cls.__name__)


def class_annotation(ann, nn, depth=0):
    """How a parameter annotated with nn.Module subclasses takes them (PEP 484, "The type
    of class objects": an annotation `C` means an instance of C, only `Type[C]` / `type[C]`
    the class object): ("class", [C, ...], None) for Type[C], type[C] and Callable[..., C]
    (a factory returning a C); ("instance", [C, ...], None) for C and a Union / Optional
    of such; ("list", [C], None) for a List / Sequence / Tuple / Iterable of C;
    ("dict", [C], K) for a Dict / Mapping[K, C]. None when the annotation names no
    nn.Module subclass other than nn.Module itself (`net: nn.Module`: any module)."""
    import collections.abc as cabc
    import typing

    if depth > 3:
        return None
    if isinstance(ann, type):
        if issubclass(ann, nn.Module) and ann is not nn.Module:
            return ("instance", [ann], None)
        return None
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is None:
        return None
    if origin is type:
        named = module_classes_in(ann, nn)
        return ("class", named, None) if named else None
    if origin is cabc.Callable:
        f = class_annotation(args[-1], nn, depth + 1) if args else None
        return ("class", f[1], None) if f and f[0] == "instance" else None
    if origin is typing.Union or origin is getattr(types, "UnionType", None):
        found = [f for f in (class_annotation(a, nn, depth + 1) for a in args if a is not type(None)) if f]
        if not found:
            return None
        kind, key = found[0][0], found[0][2]
        return (kind, [c for f in found if f[0] == kind for c in f[1]], key)
    if origin in (list, tuple, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection):
        inner = [a for a in args if a is not Ellipsis]
        f = class_annotation(inner[0], nn, depth + 1) if inner else None
        return ("list", f[1], None) if f and f[0] == "instance" else None
    if origin in (dict, cabc.Mapping, cabc.MutableMapping) and len(args) == 2:
        f = class_annotation(args[1], nn, depth + 1)
        return ("dict", f[1], args[0]) if f and f[0] == "instance" else None
    return None


@functools.lru_cache(maxsize=512)
def _unimplemented(fn):
    """A method whose body (after its docstring) is empty, `pass`, `...` or only `raise
    NotImplementedError…`: a placeholder for subclasses to fill, abstract by convention
    (the standard library's pattern besides abc.abstractmethod, PEP 3119)."""
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except Exception:  # noqa: BLE001 - no source: not known to be abstract
        return False
    body = [
        b
        for b in getattr(node, "body", [])
        if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)) and not isinstance(b, ast.Pass)
    ]
    if not body:
        return True
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    e = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(e, ast.Name) and e.id == "NotImplementedError"


def is_concrete_module(k, nn):
    """An nn.Module class that can stand for an instance: not abstract (abc, PEP 3119), a
    forward of its own or a base's (not nn.Module's unimplemented one) that is more than
    a placeholder (_unimplemented), and not a class local to a function."""
    if not (isinstance(k, type) and issubclass(k, nn.Module)) or inspect.isabstract(k):
        return False
    if "<locals>" in (getattr(k, "__qualname__", "") or ""):
        return False
    fwd = getattr(k, "forward", None)
    if fwd is None or fwd is nn.Module.forward:
        return False
    fwd = inspect.unwrap(getattr(fwd, "__func__", fwd))
    return not (isinstance(fwd, types.FunctionType) and _unimplemented(fwd))


def concrete_classes(cls, nn, limit=200):
    """`cls` itself when concrete, then its concrete subclasses loaded in the process
    (type.__subclasses__, transitively) with the fewest required constructor parameters
    first (the smallest configuration to guess), then by module and name."""
    seen, order, stack = set(), [], [cls]
    while stack and len(order) < limit:
        k = stack.pop(0)
        if k in seen:
            continue
        seen.add(k)
        order.append(k)
        try:
            stack.extend(type.__subclasses__(k))
        except TypeError:
            pass

    def required(k):
        ps = ctor_params(k)
        if ps is None:
            return (1 << 20, 0)
        fill = [p for p in ps if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        return (sum(p.default is inspect.Parameter.empty for p in fill), len(fill))

    rest = sorted(
        (k for k in order[1:] if is_concrete_module(k, nn)),
        key=lambda k: (required(k), k.__module__ or "", k.__qualname__),
    )
    return ([cls] if is_concrete_module(cls, nn) else []) + rest


MAX_INSTANCE_TRIES = 8  # concrete classes built per annotated parameter before giving up


def build_module(k, d, h, nn, depth=0):
    """An instance of nn.Module class `k`, its required parameters guessed by name and
    annotation (in its own module's namespace) at width d, heads h."""
    if depth > 3:
        raise Unguessable(k.__name__)
    params = ctor_params(k)
    if params is None:
        return k()
    g = getattr(sys.modules.get(k.__module__), "__dict__", None)
    args, kwargs = [], {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not inspect.Parameter.empty:
            continue
        v = guess_value(p.name, p.annotation, d, h, nn, g, depth=depth + 1)
        if p.kind == p.POSITIONAL_ONLY:
            args.append(v)
        else:
            kwargs[p.name] = v
    # how it was built, for the usage line (values.BUILT)
    from .values import record_built

    return record_built(k(*args, **kwargs), k, args, kwargs)


def instance_of(classes, d, h, nn, depth=0, reads=(), fits=None):
    """An instance for a parameter annotated with a class (PEP 484): of the first class
    named, or of a concrete subclass of it, that builds from guessed arguments and has
    every attribute in `reads` (what the constructor reads of it: `conv.in_channels`);
    `fits(klass)` passes over classes that cannot have them before building any.
    Raises Unguessable when none does."""
    tries = 0
    for c in classes:
        for k in concrete_classes(c, nn):
            if tries >= MAX_INSTANCE_TRIES:
                break
            if fits is not None and not fits(k):
                continue
            tries += 1
            try:
                inst = build_module(k, d, h, nn, depth)
            except Exception:  # noqa: BLE001 - the next class
                continue
            if all(hasattr(inst, a) for a in reads):
                return inst
    raise Unguessable("an instance of %s" % "/".join(c.__name__ for c in classes))


def guess_key(ann):
    """A dict key for a Dict[K, V] annotation: a string for str, a tuple of them for
    Tuple[str, ...] (a typed name), an int for int."""
    import typing

    if ann is int:
        return 0
    args = typing.get_args(ann)
    if typing.get_origin(ann) is tuple and args:
        n = 2 if Ellipsis in args else len(args)
        return tuple(guess_key(args[0]) for _ in range(n))
    return "a"


def module_classes_in(ann, nn, depth=0):
    """nn.Module subclasses (other than nn.Module itself) an annotation names, through
    Union / Optional / Type[...] (typing.get_args, PEP 484)."""
    import typing

    if depth > 3:
        return []
    if isinstance(ann, type):
        return [ann] if issubclass(ann, nn.Module) and ann is not nn.Module else []
    out = []
    for a in getattr(typing, "get_args", lambda x: ())(ann) or ():
        out += module_classes_in(a, nn, depth + 1)
    return out


def is_config_class(ann, nn=None):
    """A class named by an annotation that is neither a builtin, a torch or typing type,
    an nn.Module, nor inspect's "no annotation" marker: a configuration class."""
    if not isinstance(ann, type) or ann is inspect.Parameter.empty or issubclass(ann, BUILTIN_TYPES):
        return False
    if nn is not None and issubclass(ann, nn.Module):
        return False
    return getattr(ann, "__module__", "").split(".")[0] not in (
        "torch",
        "typing",
        "builtins",
        "collections",
        "enum",
        "inspect",
        "numpy",
    )


def guess_value(name, ann, d, h, nn, g=None, seq_len=None, depth=0, how=None):
    """A constructor value guessed from a parameter's name and annotation; `g` is the
    module namespace string annotations are evaluated in, `seq_len` the length of the
    sibling sequences (`channels=(64, 128, 256, 512)` makes `layers: List[int]` 4 long),
    `how` what the class's code does with it (usage.called_params: "factory" when it
    builds with it)."""
    ann = resolve_annotation(ann, g)
    # a configuration object of a class the module defines (cfg: CspModelCfg)
    if is_config_class(ann, nn):
        return build_config(ann, d, h, nn, g, depth)
    # nn.Module classes named by the annotation (class_annotation, PEP 484): the class
    # object for Type[C] (block_fn: Type[ConvBlock]) and for an annotation `C` the code
    # calls to build (a factory annotated as its class); else an instance of C or of a
    # concrete subclass (conv: MessagePassing), in a list or a dict when the annotation
    # says so (convs: Dict[EdgeType, MessagePassing])
    named = class_annotation(ann, nn)
    if named:
        kind, classes, key = named
        if kind == "class" or how == "factory":
            return classes[0]
        try:
            inst = instance_of(classes, d, h, nn, depth)
        except Unguessable:
            return classes[0]  # nothing builds: the class, as the annotation's text reads
        if kind == "list":
            return [inst]
        if kind == "dict":
            return {guess_key(key): inst}
        return inst
    text = ann_text(ann)
    if re.search(r"(List|Sequence|Tuple|list|tuple)\[float", text) and not re.search(
        r"Union\[float|Optional\[float|^float", text.replace("typing.", "")
    ):
        # per-block rates (drop_path_rates: List[float]); fit_rates makes them depth long
        v = _guess_by_name(name, "float", d, h, nn)
        if isinstance(v, float):
            return [v] * (seq_len or 2)
    m = SEQ_OF_INT.match(text.replace("typing.", ""))
    if m:
        # a sequence of ints (layers: List[int], depths: Tuple[int, int, int, int])
        n = text.count("int") if "..." not in text and text.count("int") > 1 else (seq_len or 4)
        # one element per stage, guessed from the name, else from the singular name
        # when the plural tells nothing more than "a number" (depths → depth)
        v = _guess_by_name(name, "int", d, h, nn)
        if name.endswith("s") and v == d:
            w = _guess_by_name(name[:-1], "int", d, h, nn)
            if isinstance(w, int) and not isinstance(w, bool):
                v = w
        if isinstance(v, int) and not isinstance(v, bool):
            return [v] * n
    v = _guess_by_name(name, ann, d, h, nn)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and re.fullmatch(r"(torch\.)?Tensor", text):
        # annotated exactly `Tensor` (PEP 484: an instance of torch.Tensor; code that
        # checks isinstance(v, Tensor) refuses a number): the guessed number as a float
        # tensor of two values, one per sample of a batch of two or a pair (x, y)
        import torch

        return torch.full((2,), float(v))
    return v


def _guess_by_name(name, ann, d, h, nn):
    n = name.lower()
    if CONFIG_NAMES.match(n):
        raise Unguessable(name)
    if HEADS.match(n):
        return h
    if HEAD_DIM.match(n):
        return d // h
    if n in ("kernel_size", "kernel", "k", "ks", "ksize", "kernel_sizes", "conv_kernel_size", "dw_kernel_size"):
        return 3
    if n in ("stride", "s", "strides", "conv_stride"):
        return 1
    if n in ("padding", "pad", "pad_size"):
        return 1
    if n in ("dilation", "dilation_rate", "groups", "g", "num_layers_per_block"):
        return 1
    if n in ("num_groups", "n_groups", "group_num", "groups_norm", "gn_groups", "num_norm_groups"):
        return 4
    if re.search(r"drop|dropout|^p$|^rate$", n):
        return 0.0
    if n in ("eps", "epsilon", "norm_eps", "layer_norm_eps", "ln_eps", "bn_eps"):
        return 1e-5
    if n in ("momentum", "bn_momentum"):
        return 0.1
    if re.search(r"mlp_ratio|ffn_ratio|expansion|expand_ratio|exp_ratio|mult|ff_mult|expand", n):
        return 4
    if n in ("rd_ratio", "se_ratio", "squeeze_ratio", "ratio"):
        return 0.25
    if re.search(r"reduction|^rd_|squeeze", n):
        return 4
    if re.search(r"num_classes|n_classes|num_labels|classes|n_class|num_outputs", n):
        return 10
    if n in (
        "depth",
        "num_layers",
        "n_layers",
        "layers",
        "num_blocks",
        "n_blocks",
        "nlayers",
        "num_block",
        "repeats",
        "n",
    ):
        return 2
    if re.search(r"window_?size|win_size|^ws$", n):
        return 4
    if re.search(r"patch_?size|^ps$", n):
        return 4
    if n in ("input_resolution", "resolution_hw", "feat_size", "grid_size", "hw"):
        return (8, 8)
    if re.search(r"img_?size|image_?size|resolution|^res$|img_res", n):
        return 32
    if n in ("block_size", "upscale_factor", "scale_factor", "downscale_factor", "bs"):
        return 2
    if re.search(
        r"seq_?len|max_?len|max_seq|max_length|num_positions|max_position|context_length|n_ctx|num_tokens_max", n
    ):
        return 64
    if re.search(r"vocab|num_embeddings|n_vocab|num_tokens|n_tokens|num_codes|codebook", n):
        return 100
    at = ann_text(ann).replace("typing.", "")
    if re.match(r"(int|float|bool|(Union|Optional)\[(int|float)|Tuple\[int|List\[int|Sequence\[int)", at):
        # a number by its annotation, whatever the name says (layer_per_block: int,
        # normalized_shape: Union[int, List[int]]): counts per block are small; a float
        # also when a Union or Optional (PEP 484) names float first (`factor: Union[float,
        # Tensor]`: a code that checks isinstance(v, float) refuses an int)
        if re.search(r"(^|_)per(_|$)", n):
            return 2
        if re.match(r"((Union|Optional)\[)?float", at):
            return 1.0
        return False if at.startswith("bool") else d
    if re.search(r"act|activation|nonlinearity", n):
        return nn.ReLU
    if re.search(r"norm", n):
        return nn.Identity
    if n in (
        "fn",
        "func",
        "module",
        "block",
        "layer",
        "m",
        "main",
        "shortcut",
        "branch",
        "body",
        "inner",
        "sublayer",
        "wrapped",
        "mod",
    ):
        # an nn.Module instance the block wraps and calls: an identity module works
        return nn.Identity()
    if re.search(r"(^|_)(layer|block|module|fn|func|op|cls)$", n):
        # a layer *class* (factory) the block instantiates: nn.Identity accepts any arguments
        return nn.Identity
    if OUT_DIM.search(n):
        return d
    if DIM_WORDS.search(n):
        return d
    # by annotation
    a = ann if isinstance(ann, str) else getattr(ann, "__name__", "") if ann is not inspect.Parameter.empty else ""
    a = str(a).lower()
    if a in ("bool",):
        return False
    if a in ("float",):
        return 1.0
    if a in ("str",):
        raise Unguessable(name)
    if "tuple" in a or "sequence" in a or "list" in a:
        return (d, d)
    return d


CANDIDATE_WIDTHS = ((32, 4), (16, 2), (64, 4), (32, 2))


def ctor_params(cls):
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())[1:]  # drop self
    if params and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        # a forwarding constructor, __init__(self, *args, **kwargs) → super().__init__(...):
        # the parameters are those of the first base that names its own, a torch layer
        # too (a wrapper of nn.Conv2d forwards to its in_channels, out_channels, …), never
        # nn.Module's own or object's
        for base in cls.__mro__[1:]:
            init = base.__dict__.get("__init__")
            if (
                init is None
                or base is object
                or (base.__module__, base.__name__) == ("torch.nn.modules.module", "Module")
            ):
                continue
            try:
                named = list(inspect.signature(init).parameters.values())[1:]
            except (TypeError, ValueError):
                continue
            if any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in named):
                return named
    return params


def original_named(v, om):
    """The original's object for a class or function of the copy: the same name in the
    block's module, else the one object of that name (same kind, same qualified name)
    defined in a module of the original's top-level package (a copied dependency the
    block's module does not import by name)."""
    o = getattr(om, v.__name__, None)
    if o is not None:
        return o
    top = om.__name__.split(".")[0] + "."
    found = set()
    for name, m in list(sys.modules.items()):
        if not (name + ".").startswith(top) or m is None:
            continue
        o = getattr(m, v.__name__, None)
        if (
            o is not None
            and type(o) is type(v)
            and getattr(o, "__qualname__", None) == v.__qualname__
            and getattr(o, "__module__", "") == name
        ):
            found.add(o)
    return found.pop() if len(found) == 1 else v


def to_original(v, om, depth=0):
    """`v` with every class or function of the candidate module replaced by the original
    module's object of the same name, through partials, containers and dataclass
    instances; other values (numbers, torch classes, module instances) are kept."""
    import dataclasses
    import functools

    if depth > 6:
        return v
    if isinstance(v, (type, types.FunctionType)) and getattr(v, "__module__", None) == CANDIDATE_MODULE:
        return original_named(v, om)
    if isinstance(v, functools.partial):
        return functools.partial(
            to_original(v.func, om, depth + 1),
            *to_original(list(v.args), om, depth + 1),
            **to_original(dict(v.keywords), om, depth + 1),
        )
    if isinstance(v, list):
        return [to_original(x, om, depth + 1) for x in v]
    if isinstance(v, tuple) and type(v) is tuple:
        return tuple(to_original(x, om, depth + 1) for x in v)
    if isinstance(v, dict) and type(v) is dict:
        return {k: to_original(x, om, depth + 1) for k, x in v.items()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and type(v).__module__ == CANDIDATE_MODULE:
        ocls = getattr(om, type(v).__name__, None)
        if ocls is not None and dataclasses.is_dataclass(ocls):
            return ocls(
                **{f.name: to_original(getattr(v, f.name), om, depth + 1) for f in dataclasses.fields(v) if f.init}
            )
    return v


def duck_modules(cls, params, nn):
    """Parameter -> torch.nn class, for unannotated required parameters the constructor
    reads attributes of (`self.reduction = loss_fcn.reduction`) that an instance of a
    torch.nn class built without arguments has (duck typing: a loss function wrapped by
    a focal loss). Losses first when the name says loss / criterion / fcn."""
    try:
        src = inspect.getsource(cls.__init__)
    except (OSError, TypeError):
        return {}
    out = {}
    for p in params:
        if p.annotation is not inspect.Parameter.empty or CONFIG_NAMES.match(p.name.lower()):
            continue
        reads = set(re.findall(r"\b%s\.(\w+)\b(?!\s*\()" % re.escape(p.name), src))
        if not reads:
            continue
        import torch.nn.modules.loss as L

        # elementwise losses first: they take any two inputs of one shape
        first = ("MSELoss", "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss")
        losses = sorted(
            (n for n in dir(L) if n.endswith("Loss") and not n.startswith("_")),
            key=lambda n: (n not in first, first.index(n) if n in first else 0, n),
        )
        order = [getattr(L, n) for n in losses] if re.search(r"loss|crit|fcn|fn$", p.name, re.I) else []
        order += [
            getattr(nn, n)
            for n in dir(nn)
            if isinstance(getattr(nn, n, None), type) and issubclass(getattr(nn, n), nn.Module)
        ]
        for c in order:
            try:
                inst = c()
            except Exception:  # noqa: BLE001 - needs arguments
                continue
            if all(hasattr(inst, r) for r in reads):
                out[p.name] = c
                break
    return out


DEPTH_NAMES = re.compile(r"^(depth|num_blocks|n_blocks|num_layers|n_layers|layers|num_block)$")
RATE_NAMES = re.compile(r"drop|dpr|rate", re.I)


def fit_rates(kwargs):
    """Per-block rate lists (drop_path_rates=[0.0, 0.0]) as long as the block count they
    are indexed with (depth=3): a stage indexes them dpr[i] for i in range(depth)."""
    depth = max(
        [v for k, v in kwargs.items() if DEPTH_NAMES.match(k) and isinstance(v, int) and not isinstance(v, bool)] or [0]
    )
    out = kwargs
    for k, v in kwargs.items():
        if (
            RATE_NAMES.search(k)
            and isinstance(v, list)
            and v
            and all(isinstance(x, float) for x in v)
            and len(v) < depth
        ):
            if out is kwargs:
                out = dict(kwargs)
            out[k] = v + [v[-1]] * (depth - len(v))
    return out


def is_wide_default(p):
    """A width-like parameter whose default is 384 or more (or a list of such)."""
    if isinstance(p.default, bool) or not (DIM_WORDS.search(p.name) or OUT_DIM.search(p.name)):
        return False
    vals = p.default if isinstance(p.default, (tuple, list)) else [p.default]
    return any(isinstance(v, int) and not isinstance(v, bool) and v >= 384 for v in vals)


SEQ_ERR = re.compile(
    r"not subscriptable|has no len|not iterable|cannot unpack non-iterable|must be a tuple|must be a list|tuple index out of range",
    re.I,
)
SIZE_TUPLE = re.compile(
    r"(img|image|input|window|patch|feat|grid|pool|output)_?size$|^input_resolution$|^resolution$|^size$|^kernel_size$|^stride$",
    re.I,
)
SINGULAR_S = {
    "bias",
    "chs",
    "chans",
    "channels",
    "features",
    "heads",
    "num_heads",
    "planes",
    "groups",
    "classes",
    "num_classes",
    "tokens",
    "layers",
    "num_layers",
    "blocks",
    "num_blocks",
    "embeddings",
    "positions",
    "eps",
    "inplanes",
    "out_chs",
    "in_chs",
    "out_channels",
    "in_channels",
    "in_features",
    "out_features",
    "hidden_features",
    "num_features",
    "levels",
    "num_experts",
    "experts",
}


SCALAR_ERR = re.compile(
    r"unsupported operand type\(s\) for .+: '(tuple|list)' and '(int|float)'|unsupported operand type\(s\) for .+: '(int|float)' and '(tuple|list)'"
)


def subscript_lengths(cls):
    """Parameter -> length, for constructor parameters the constructor indexes with
    integer constants (`layers[0]` … `layers[3]`: a sequence of 4)."""
    out = {}
    try:
        src = inspect.getsource(cls.__init__)
    except (OSError, TypeError):
        return out
    for name, idx in re.findall(r"\b([A-Za-z_]\w*)\[(\d+)\]", src):
        out[name] = max(out.get(name, 0), int(idx) + 1)
    return out


def scalar_variant(args, kwargs):
    """The same candidate with guessed pairs (v, v) as v: a constructor that does
    arithmetic with a size (`input_resolution // patch_size`) takes a number."""
    kw2, changed = {}, False
    for k, v in kwargs.items():
        if (
            isinstance(v, (tuple, list))
            and len(v) == 2
            and v[0] == v[1]
            and isinstance(v[0], int)
            and not isinstance(v[0], bool)
        ):
            kw2[k] = v[0]
            changed = True
        else:
            kw2[k] = v
    return (list(args), kw2) if changed else None


def seq_variant(args, kwargs, lengths=None):
    """The same candidate with size-like values as (v, v) and plural-named values as
    [v, v]: for constructors that index or iterate a parameter (window_size[0],
    len(depths)); a parameter indexed with constants up to k (`lengths`, from
    subscript_lengths) becomes k+1 long whatever its name. Returns None when nothing
    changes."""
    kw2, changed = {}, False
    lengths = lengths or {}
    for k, v in kwargs.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and lengths.get(k, 0) >= 2:
            kw2[k] = [v] * lengths[k]
            changed = True
            continue
        if isinstance(v, int) and not isinstance(v, bool):
            if SIZE_TUPLE.search(k):
                kw2[k] = (v, v)
                changed = True
                continue
            if k.endswith("s") and k.lower() not in SINGULAR_S:
                kw2[k] = [v, v]
                changed = True
                continue
        if isinstance(v, float) and (k.endswith("s") or k in ("dpr",)) and k.lower() not in SINGULAR_S:
            kw2[k] = [v, v]  # per-block rates: drop_path_rates
            changed = True
            continue
        kw2[k] = v
    return (list(args), kw2) if changed else None


# the object's address in CPython's default repr (object.__repr__, a function's or a bound
# method's: `<function f at 0x7f…>`): it differs from process to process, and a record
# must not (the same block validated twice, or by another worker, records the same)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _repr(v):
    return _ADDRESS.sub("", repr(v))[:200]


def jsonable(v, depth=0):
    """A constructor argument as JSON for the record: plain values as they are, a class or
    function by its qualified name, anything else by its repr without addresses."""
    if depth > 4:
        return _repr(v)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType)):
        return "%s.%s" % (v.__module__, v.__qualname__)
    return _repr(v)
