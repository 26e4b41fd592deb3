# Recorded values as JSON and back (witnesses, src/validate/README.md "Witnesses").
#
# encode() turns what a class received when the repository built its own models into
# JSON: plain data as itself, tuples / dicts / floats that JSON cannot spell wrapped
# ({"$tuple": [...]}, {"$dict": {...}}, {"$float": "inf"}; a float of integral value
# too, {"$float": "2.0"}: JSON has one number type, and node reads `2.0` as 2, which
# comes back to Python as an int; a dict keyed by numbers or
# tuples of plain values as {"$map": [[key, value], ...]}), classes and functions by
# module and qualified name, functools.partial by its parts, tensors by shape, dtype and
# statistics (small integer / bool tensors by value: ids, masks), nn.Module instances (and
# other objects the harness built by calling their class: configuration objects) by
# their own recorded construction (re-creatable), dataclass / namespace / other plain
# objects (detr's NestedTensor) by their class and fields, attribute dicts (yacs CfgNode)
# by their items and class. decode() rebuilds a value
# with a caller's resolver for classes and functions (the copy's names in a candidate,
# the original's in the equivalence stage) and a seeded generator for tensors.
import dataclasses
import enum
import functools
import math
import types

import re
from .configs import AttrDict

ATTR_DICTS = re.compile(r"^(CN|CfgNode|ConfigNode|ConfigDict|AttrDict|EasyDict|edict)$")
MAX_DEPTH = 6
MAX_ITEMS = 64
MAX_EXACT = 4096  # integer / bool tensors up to this many elements are kept by value


class Unencodable(Exception):
    pass


class Unresolvable(Exception):
    """A class or function of the record that the resolver cannot give (the copy does
    not define it and it is not importable outside the repository)."""


def _ref(obj):
    return [getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")]


# id(instance) -> (weak reference to it, class, args, kwargs) of the modules the harness
# built itself: from a provider's witness (source_provider) or from guessed arguments
# (arguments.build_module). A usage line writes them as that construction
# (snippet.encode_live); their attributes alone do not say it (a UViT keeps no `dim`).
BUILT = {}


def record_built(inst, klass, args, kwargs):
    """Remember how the harness built `inst` (BUILT); an object without weak references
    is not recorded."""
    import weakref

    try:
        BUILT[id(inst)] = (weakref.ref(inst), klass, list(args), dict(kwargs))
    except TypeError:
        pass
    return inst


def encode(v, modules=None, depth=0):
    """JSON for `v`; `modules` maps id(module instance) -> (instance, class, args, kwargs)
    as the constructor wrappers recorded them. Raises Unencodable."""
    import torch

    if depth > MAX_DEPTH:
        raise Unencodable("too deep")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int) and type(v) is int:
        return v
    if isinstance(v, float) and type(v) is float:
        return _float(v)
    if isinstance(v, enum.Enum):
        return {"$enum": _ref(type(v)), "name": v.name}
    if type(v) is tuple:
        return {"$tuple": [encode(x, modules, depth + 1) for x in v[:MAX_ITEMS]]}
    if isinstance(v, tuple) and _named_fields(v) is not None:
        # a named tuple (collections.namedtuple, typing.NamedTuple): its class and fields
        if "<locals>" in type(v).__qualname__:
            raise Unencodable("local named tuple")
        return {
            "$namedtuple": _ref(type(v)),
            "fields": {k: encode(x, modules, depth + 1) for k, x in zip(_named_fields(v), v)},
        }
    if type(v) is list:
        if len(v) > MAX_ITEMS:
            raise Unencodable("long list")
        return [encode(x, modules, depth + 1) for x in v]
    if type(v) is dict:
        if all(isinstance(k, str) for k in v):
            if len(v) > MAX_ITEMS:
                raise Unencodable("long dict")
            return {"$dict": {k: encode(x, modules, depth + 1) for k, x in v.items()}}
        if (
            all(
                type(k) in (int, bool)
                and type(x) in (int, float, bool, str, type(None))
                and (type(x) is not float or math.isfinite(x))
                for k, x in v.items()
            )
            and len(v) <= MAX_EXACT
        ):
            # a table of plain values by number (detr's is_thing_map: class id -> bool)
            return {"$items": [[k, _float(x) if type(x) is float else x] for k, x in v.items()]}
        if all(_plain_key(k) for k in v) and len(v) <= MAX_ITEMS:
            # keys that are numbers or tuples of plain values (a typed name: a graph's
            # edge type ("paper", "cites", "paper") -> the module for it), any values
            return {"$map": [[encode(k, modules, depth + 1), encode(x, modules, depth + 1)] for k, x in v.items()]}
        raise Unencodable("dict with non-string keys")
    if (
        isinstance(v, dict)
        and ATTR_DICTS.match(type(v).__name__)
        and all(isinstance(k, str) for k in v)
        and len(v) <= MAX_ITEMS
    ):
        # a configuration read by attribute and key (yacs CfgNode, easydict, configs.AttrDict),
        # with its class (a usage snippet builds it again from its items)
        return {"$attrdict": {k: encode(x, modules, depth + 1) for k, x in v.items()}, "class": _ref(type(v))}
    if isinstance(v, torch.Tensor):
        return encode_tensor(v, torch)
    if isinstance(v, torch.dtype):
        return {"$dtype": str(v).replace("torch.", "")}
    if isinstance(v, torch.device):
        return {"$device": "cpu"}
    if isinstance(v, torch.Size):
        return {"$tuple": [int(x) for x in v]}
    if isinstance(v, type) or isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
        if "<locals>" in (getattr(v, "__qualname__", "") or "") or getattr(v, "__name__", "") == "<lambda>":
            raise Unencodable("local class or lambda")
        return {"$ref": _ref(v)}
    if isinstance(v, functools.partial):
        return {
            "$partial": encode(v.func, modules, depth + 1),
            "args": [encode(x, modules, depth + 1) for x in v.args],
            "kwargs": {k: encode(x, modules, depth + 1) for k, x in v.keywords.items()},
        }
    if isinstance(v, torch.nn.Module):
        rec = (modules or {}).get(id(v))
        if rec is None or rec[0] is not v:
            raise Unencodable("module instance built outside the record")
        _, cls, args, kwargs = rec
        out = {
            "$module": _ref(cls),
            "args": [encode(x, modules, depth + 1) for x in args],
            "kwargs": {k: encode(x, modules, depth + 1) for k, x in kwargs.items()},
        }
        # plain attributes it holds (some set after construction: detr's
        # `model.num_channels = backbone.num_channels`), put back when missing
        extra = {
            k: _float(x) if type(x) is float else x
            for k, x in vars(v).items()
            if not k.startswith("_") and type(x) in (int, float, str, bool)
        }
        if extra:
            out["attrs"] = extra
        return out
    rec = (modules or {}).get(id(v))
    if rec is not None and rec[0] is v and not isinstance(v, type):
        # another object built by calling its class with these arguments (a configuration
        # object the harness built, source_config.build): that construction, as a module's
        _, cls, args, kwargs = rec
        return {
            "$module": _ref(cls),
            "args": [encode(x, modules, depth + 1) for x in args],
            "kwargs": {k: encode(x, modules, depth + 1) for k, x in kwargs.items()},
        }
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = {f.name: encode(getattr(v, f.name), modules, depth + 1) for f in dataclasses.fields(v) if f.init}
        return {"$dataclass": _ref(type(v)), "fields": fields}
    if isinstance(v, types.SimpleNamespace) or type(v).__name__ == "Namespace" and type(v).__module__ == "argparse":
        return {"$namespace": _ref(type(v)), "fields": {k: encode(x, modules, depth + 1) for k, x in vars(v).items()}}
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict) and not callable(v) and len(d) <= MAX_ITEMS and "<locals>" not in type(v).__qualname__:
        # a plain container (detr's NestedTensor(tensors, mask)): rebuilt from its fields
        return {
            "$object": _ref(type(v)),
            "fields": {k: encode(x, modules, depth + 1) for k, x in d.items() if isinstance(k, str)},
        }
    raise Unencodable(type(v).__name__)


def _float(v):
    """A float as JSON that keeps it a float through any JSON reader: itself when its
    text has a fraction or exponent no reader turns into an integer, else {"$float":
    repr} (an integral value such as 2.0, which JavaScript's JSON.parse reads as the
    number 2 and writes back as `2`; inf and nan, which JSON cannot spell, RFC 8259
    section 6)."""
    if math.isfinite(v) and not v.is_integer():
        return v
    return {"$float": repr(v)}


def plain_value(x):
    """A scalar of a record ($items values, a module's attrs) as the value it encodes."""
    if isinstance(x, dict) and "$float" in x:
        return float(str.__str__(x["$float"]))
    return x


def keep_floats(v, depth=0):
    """Plain JSON data (the harvest's entry plans: argparse defaults, config values) with
    each float written as _float does, so that it comes back a float from node
    (plain_floats)."""
    if type(v) is float:
        return _float(v)
    if depth > 40:
        return v
    if isinstance(v, list):
        return [keep_floats(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {k: keep_floats(x, depth + 1) for k, x in v.items()}
    return v


def plain_floats(v, depth=0):
    """keep_floats undone: each {"$float": text} (and nothing else) a float again."""
    if isinstance(v, dict):
        if len(v) == 1 and isinstance(v.get("$float"), str):
            try:
                return float(v["$float"])
            except ValueError:
                return v
        if depth > 40:
            return v
        return {k: plain_floats(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list) and depth <= 40:
        return [plain_floats(x, depth + 1) for x in v]
    return v


def _plain_key(k):
    """A dict key encode() can spell and decode() gives back hashable: None, a bool, an
    int or a string, or a plain tuple of such."""
    if k is None or type(k) in (bool, int, str):
        return True
    return type(k) is tuple and len(k) <= MAX_ITEMS and all(x is None or type(x) in (bool, int, str) for x in k)


def _named_fields(v):
    """A named tuple's field names (its class's `_fields`, collections.namedtuple), or None."""
    f = getattr(type(v), "_fields", None)
    if isinstance(f, tuple) and len(f) == len(v) and all(type(n) is str for n in f):
        return f
    return None


def encode_tensor(t, torch):
    t = t.detach()
    out = {"$tensor": [int(s) for s in t.shape], "dtype": str(t.dtype).replace("torch.", "")}
    if t.numel() == 0 or t.is_meta:
        return out  # a meta tensor (a shapes-only run) has no values
    if t.dtype == torch.bool or not (t.is_floating_point() or t.is_complex()):
        if t.numel() <= MAX_EXACT:
            out["values"] = (
                t.reshape(-1).tolist() if t.dtype != torch.bool else [int(x) for x in t.reshape(-1).tolist()]
            )
        else:
            out["min"], out["max"] = int(t.min()), int(t.max())
        return out
    if t.is_floating_point():
        f = t.float()
        # the finite values in order, in a fresh buffer: with none left out (the usual
        # case) a flat copy holds exactly what the mask's gather would, so its min, max,
        # mean and std are the same bits; min and max propagate NaN and reach an
        # infinity, so both finite says none was left out. (isfinite, the gather's
        # nonzero pass and its indexing were most of a recorded forward's overhead.)
        finite = f.reshape(-1).clone()
        lo, hi = finite.min(), finite.max()
        if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
            finite = f[f.isfinite()]
            if finite.numel():
                lo, hi = finite.min(), finite.max()
        if finite.numel():
            out["min"], out["max"] = float(lo), float(hi)
            out["mean"] = float(finite.mean())
            out["std"] = float(finite.std()) if finite.numel() > 1 else 0.0
    return out


def size_of(enc):
    """Elements of the tensors in an encoded value (to order witnesses smallest first)."""
    if isinstance(enc, list):
        return sum(size_of(x) for x in enc)
    if not isinstance(enc, dict):
        return 0
    if "$tensor" in enc:
        n = 1
        for s in enc["$tensor"]:
            n *= s
        return n
    return sum(size_of(x) for k, x in enc.items() if k != "$ref")


def decode(enc, resolve, torch, gen=None, depth=0):
    """The value of `enc`; `resolve(module, qualname)` gives classes and functions
    (raises Unresolvable); tensors come from `gen` (a torch.Generator) so that the copy
    and the original get the same ones when decoded with the same seed."""
    if depth > MAX_DEPTH + 2:
        raise Unresolvable("too deep")
    if enc is None or isinstance(enc, (bool, int, float, str)):
        return enc
    if isinstance(enc, list):
        return [decode(x, resolve, torch, gen, depth + 1) for x in enc]
    if not isinstance(enc, dict):
        raise Unresolvable("bad value")
    if "$float" in enc:
        return float(enc["$float"])
    if "$tuple" in enc:
        return tuple(decode(x, resolve, torch, gen, depth + 1) for x in enc["$tuple"])
    if "$dict" in enc:
        return {k: decode(x, resolve, torch, gen, depth + 1) for k, x in enc["$dict"].items()}
    if "$items" in enc:
        return {k: plain_value(x) for k, x in enc["$items"]}
    if "$map" in enc:
        out = {}
        for k, x in enc["$map"]:
            k = decode(k, resolve, torch, gen, depth + 1)
            if isinstance(k, list) or not (k is None or isinstance(k, (bool, int, str, tuple))):
                raise Unresolvable("dict key")
            out[k] = decode(x, resolve, torch, gen, depth + 1)
        return out
    if "$namedtuple" in enc:
        cls = resolve(*enc["$namedtuple"])
        return cls(**{k: decode(x, resolve, torch, gen, depth + 1) for k, x in enc["fields"].items()})
    if "$attrdict" in enc:
        items = [(k, decode(x, resolve, torch, gen, depth + 1)) for k, x in enc["$attrdict"].items()]
        # the recorded configuration class when it resolves (a yacs CfgNode is built from
        # a dict of its items): code dispatches on its type, as a constructor decorated to
        # accept a configuration does (`isinstance(args[0], CfgNode)`); else a plain
        # attribute dict, which reads the same
        ref = enc.get("class")
        klass = None
        if isinstance(ref, list) and len(ref) == 2:
            try:
                klass = resolve(*ref)
            except Exception:  # noqa: BLE001 - not resolvable here
                klass = None
        if isinstance(klass, type) and issubclass(klass, dict) and klass is not AttrDict:
            klass = _class_here(klass, resolve)
            try:
                return klass(dict(items))
            except Exception:  # noqa: BLE001 - a constructor that takes no mapping
                pass
        return AttrDict(items)
    if "$tensor" in enc:
        return decode_tensor(enc, torch, gen)
    if "$dtype" in enc:
        return getattr(torch, enc["$dtype"])
    if "$device" in enc:
        return torch.device("cpu")
    if "$ref" in enc:
        return resolve(*enc["$ref"])
    if "$enum" in enc:
        return getattr(resolve(*enc["$enum"]), enc["name"])
    if "$partial" in enc:
        return functools.partial(
            decode(enc["$partial"], resolve, torch, gen, depth + 1),
            *[decode(x, resolve, torch, gen, depth + 1) for x in enc.get("args", [])],
            **{k: decode(x, resolve, torch, gen, depth + 1) for k, x in enc.get("kwargs", {}).items()},
        )
    if "$module" in enc:
        cls = resolve(*enc["$module"])
        obj = cls(
            *[decode(x, resolve, torch, gen, depth + 1) for x in enc.get("args", [])],
            **{k: decode(x, resolve, torch, gen, depth + 1) for k, x in enc.get("kwargs", {}).items()},
        )
        for k, x in (enc.get("attrs") or {}).items():
            if not hasattr(obj, k):
                setattr(obj, k, plain_value(x))
        return obj
    if "$dataclass" in enc:
        fields = {k: decode(x, resolve, torch, gen, depth + 1) for k, x in enc["fields"].items()}
        try:
            cls = resolve(*enc["$dataclass"])
        except Unresolvable:
            # a configuration read by attribute: its fields are what the block reads
            return types.SimpleNamespace(**fields)
        return cls(**fields)
    if "$namespace" in enc:
        import argparse

        return argparse.Namespace(**{k: decode(x, resolve, torch, gen, depth + 1) for k, x in enc["fields"].items()})
    if "$object" in enc:
        cls = resolve(*enc["$object"])
        obj = cls.__new__(cls)
        for k, x in enc["fields"].items():
            setattr(obj, k, decode(x, resolve, torch, gen, depth + 1))
        return obj
    raise Unresolvable("unknown record %s" % sorted(enc)[:3])


def _class_here(klass, resolve):
    """`klass`, or the first of its bases (below dict) that the resolver gives as another
    class object: a class of the original's that derives from an installed package's the
    candidate imported afresh (stash.INSTALLED: detectron2's CfgNode, from the zygote, on
    fvcore's) is foreign to the candidate's code, which checks `isinstance(cfg,
    fvcore's CfgNode)` against its own import; the candidate's base class is then what
    reads and dispatches the same."""
    for base in klass.__mro__[1:]:
        if base is dict or base is object:
            break
        try:
            here = resolve(base.__module__, base.__qualname__)
        except Exception:  # noqa: BLE001 - not resolvable here
            continue
        if here is not base and isinstance(here, type) and issubclass(here, dict):
            return here
    return klass


def decode_tensor(enc, torch, gen=None):
    shape = enc["$tensor"]
    dtype = getattr(torch, enc.get("dtype", "float32"))
    if "values" in enc:
        t = torch.tensor(enc["values"], dtype=torch.int64 if dtype != torch.bool else torch.int64).reshape(shape)
        return t.to(dtype)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=torch.bool)
    if not (dtype.is_floating_point or dtype.is_complex):
        lo, hi = enc.get("min", 0), enc.get("max", 1)
        return torch.randint(lo, hi + 1, shape, generator=gen).to(dtype)
    t = torch.randn(shape, generator=gen)
    if "mean" in enc:
        t = t * enc.get("std", 1.0) + enc["mean"]
        t = t.clamp(enc["min"], enc["max"])
    return t.to(dtype)


def module_resolver(namespace, importable):
    """A resolver for decode(): a qualified name defined in `namespace` (the copy's
    module dict: classes keep their qualified name when copied), else an importable
    module's attribute when `importable(module)` allows importing it (packages outside
    the repository: torch, functools)."""
    import importlib

    def resolve(module, qualname):
        parts = qualname.split(".")
        obj = namespace.get(parts[0])
        if obj is not None:
            for p in parts[1:]:
                obj = getattr(obj, p, None)
                if obj is None:
                    break
            if obj is not None:
                return obj
        if module and importable(module):
            try:
                obj = importlib.import_module(module)
                for p in parts:
                    obj = getattr(obj, p)
                return obj
            except (ImportError, AttributeError) as e:
                raise Unresolvable("%s.%s: %s" % (module, qualname, e)) from None
        raise Unresolvable("%s.%s is not defined by the module" % (module, qualname))

    return resolve
