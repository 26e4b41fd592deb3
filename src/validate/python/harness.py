# nnrag validation harness (docs/ARCHITECTURE.md "Validation").
#
# Runs inside the validation environment (an interpreter whose `import torch` works),
# normally inside a bubblewrap sandbox started by src/validate/pool.ts. Two modes:
#
#   harness.py --probe            print interpreter facts as one JSON line (no torch import)
#   harness.py --worker CONFIG    a long-lived worker: import torch once, then for each
#                                 request (framed with a nonce, on descriptor 4; see
#                                 Channel) fork a child that runs the stages and answer
#                                 JSON lines carrying that nonce on descriptor 5.
#
# The worker never runs candidate code itself. Requests that carry an original module
# (equivalence) go to a per-repository "zygote", a fork of the worker that imported the
# original once and forks the candidates of that repository (see Zygote). Each child:
#   - gets its own session / process group, rlimits (address space, CPU seconds,
#     processes, file size, no core files), stdin/stdout/stderr away from the protocol;
#   - writes the module into a private scratch folder and runs the stages
#     parse, compile, import, namespace, instantiate, forward, equivalence,
#     reporting each stage on a pipe as it starts and ends, so a crash is attributed
#     to the stage that was running.
# The worker enforces the wall-clock deadline, kills the child and every descendant
# (it is a child subreaper, so double-forked processes come back to it), classifies
# how the child ended (signal, exit, timeout), and empties /tmp and /dev/shm before the
# next candidate.
#
# Must run on Python 3.8+ (Debian bookworm 3.11, trixie 3.13). No third-party imports
# besides torch, which is imported only in worker mode.

import ast
import errno
import gc
import inspect
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
import types

# References kept before any candidate code runs, so a module that rebinds
# json.dumps or os.write cannot break reporting by accident.
_dumps = json.dumps
_loads = json.loads
_write = os.write
_getpid = os.getpid
_exit = os._exit
_monotonic = time.monotonic

STAGES = ("parse", "compile", "import", "namespace", "instantiate", "forward", "equivalence")
CANDIDATE_MODULE = "nnrag_candidate"
MAX_PIPE_BYTES = 4 << 20
MAX_ERROR_CHARS = 2000
MAX_TRACE_CHARS = 6000

# errno values that mean "the sandbox or a limit said no" (PEP 3151 OSError subclasses
# carry these): read-only filesystem, permission, no network, resource limits.
SANDBOX_ERRNOS = {
    errno.EROFS, errno.EACCES, errno.EPERM, errno.ENETUNREACH, errno.ENETDOWN,
    errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.EAFNOSUPPORT, errno.EFBIG,
    errno.EAGAIN, errno.EADDRNOTAVAIL, errno.ENOSPC, errno.EDQUOT,
}


# --------------------------------------------------------------------------- probe

def installed_distributions():
    """Every installed distribution as "name==version" (PEP 503 name), sorted, from the
    names of the `name-version.dist-info` / `.egg-info` entries on sys.path (PEP 376,
    PEP 427: reading each METADATA costs 50 ms, the names alone well under 1 ms). Part
    of the environment id: installing, removing or upgrading a package changes it."""
    out = set()
    for d in sys.path:
        try:
            names = os.listdir(d or ".")
        except OSError:
            continue
        for f in names:
            if not f.endswith((".dist-info", ".egg-info")):
                continue
            stem = f.rsplit(".", 1)[0]
            name, _, version = stem.partition("-")
            version = version.split("-py")[0]  # egg-info names may end in -py3.11
            out.add("%s==%s" % (re.sub(r"[-_.]+", "-", name).lower(), version))
    return sorted(out)


def top_level_modules():
    """Top-level modules and packages importable from sys.path (pkgutil.iter_modules:
    the path entry finders' listing, PEP 302) and the built-in ones. The resolver keeps
    `import pkg` extern for a module object of an indexed package it finds here."""
    import pkgutil
    names = set(sys.builtin_module_names)
    try:
        names |= {m.name for m in pkgutil.iter_modules()}
    except Exception:  # noqa: BLE001 - an unreadable path entry
        pass
    return sorted(names)


def probe():
    """Facts about this interpreter without importing torch (fast): where it lives, the
    folders it imports from (the sandbox must bind them) and whether torch is findable."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    info = {
        "executable": sys.executable,
        "realpath": os.path.realpath(sys.executable),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "exec_prefix": sys.exec_prefix,
        "path": [p for p in sys.path if p],
        "torch_spec": spec.origin if spec else None,
        "distributions": installed_distributions(),
        "modules": top_level_modules(),
    }
    if "--import-torch" in sys.argv:
        try:
            import torch
            info["torch"] = torch.__version__
        except BaseException as e:  # noqa: BLE001 - report anything
            info["torch"] = None
            info["torch_error"] = "%s: %s" % (type(e).__name__, e)
    sys.stdout.write(_dumps(info) + "\n")


# ------------------------------------------------------------------ classification

NATIVE_NAME = re.compile(r"(^|[._])(_C|_ext|_cuda|_cpp|_kernels?|cuda|_native|_ops)($|[._])|cuda|_cpp$|_ext$")
SHAPE_MSG = re.compile(
    r"shape|size mismatch|sizes? of tensors|must match the size|mat1 and mat2|cannot be multiplied|"
    r"invalid for input of size|dimension|expected .*(dim|channel|size|input)|"
    r"to have \d+ channels|out of range|not broadcastable|unflatten|but got .*(size|dim|channel)|"
    r"number of (elements|dims)|input.*(channels|features)|doesn't match|does not match",
    re.I,
)
MEMORY_MSG = re.compile(r"can't allocate memory|not enough memory|out of memory|DefaultCPUAllocator|std::bad_alloc|Cannot allocate memory", re.I)


class Classifier:
    def __init__(self, masked):
        # folders the sandbox hides (home folders): a missing file under one of them
        # is the sandbox saying no, not an ordinary missing file
        self.masked = [m.rstrip("/") for m in masked if m and m != "/"]

    def _masked_path(self, filename):
        if not isinstance(filename, str):
            return False
        f = os.path.abspath(os.path.expanduser(filename)) if filename.startswith("~") else filename
        return any(f == m or f.startswith(m + "/") for m in self.masked)

    def classify(self, e, stage, tb_files=()):
        msg = str(e)
        if isinstance(e, MemoryError) or MEMORY_MSG.search(msg):
            return "memory"
        if isinstance(e, RecursionError):
            return "runtime-error"
        if isinstance(e, NameError) and not isinstance(e, UnboundLocalError):
            return "unresolved-name"
        if any("cpp_extension" in f for f in tb_files):
            return "native-extension"
        if isinstance(e, ImportError):
            name = getattr(e, "name", None) or ""
            if re.search(r"\.so\b|shared object|undefined symbol|DLL load", msg):
                return "native-extension"
            if isinstance(e, ModuleNotFoundError) and name and NATIVE_NAME.search(name):
                return "native-extension"
            return "missing-extern"
        if isinstance(e, OSError):
            if re.search(r"shared object|\.so\b", msg):
                return "native-extension"
            if isinstance(e, (socket.gaierror, socket.herror)):
                return "sandbox-denied"
            if e.errno in SANDBOX_ERRNOS:
                return "sandbox-denied"
            if isinstance(e, FileNotFoundError) and (self._masked_path(e.filename) or self._masked_path(getattr(e, "filename2", None))):
                return "sandbox-denied"
        if isinstance(e, AttributeError) and re.match(r"module '[\w.]+' has no attribute", msg):
            # an extern module of another version lacks the API (torch.nn.RMSNorm on 1.13)
            return "missing-extern"
        if stage == "forward" and isinstance(e, (RuntimeError, ValueError, IndexError, TypeError, AssertionError)) and SHAPE_MSG.search(msg):
            return "forward-shape"
        if stage == "forward" and isinstance(e, ValueError) and "values to unpack" in msg:
            return "forward-shape"  # b, c, h, w = x.shape on a tensor of another rank
        if stage == "forward" and isinstance(e, AssertionError) and SHAPE_LINE.search(last_line(e)):
            return "forward-shape"  # assert x.shape[-1] == self.dim
        if stage == "parse" or stage == "compile":
            return "syntax" if isinstance(e, SyntaxError) else "runtime-error"
        return "runtime-error"


SHAPE_LINE = re.compile(r"shape|size|dim|\bH\b|\bW\b|len\(|numel|channels", re.I)


def last_line(e):
    """Source text of the line that raised e (the innermost frame)."""
    try:
        fr = traceback.extract_tb(e.__traceback__)
        return (fr[-1].line or "") if fr else ""
    except BaseException:  # noqa: BLE001
        return ""


def fmt_error(e):
    s = "%s: %s" % (type(e).__name__, e)
    return s[:MAX_ERROR_CHARS]


def fmt_trace(e):
    try:
        s = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    except BaseException:  # noqa: BLE001
        s = fmt_error(e)
    return s[-MAX_TRACE_CHARS:]


def tb_files(e):
    out = []
    tb = e.__traceback__
    while tb is not None:
        out.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return out


# ------------------------------------------------------------ constructor arguments

class Unguessable(Exception):
    pass


CONFIG_NAMES = re.compile(r"^(config|cfg|conf|configs|args|opt|opts|options|hparams|hp|params|settings|model_args|model_cfg|arch|spec|kwargs_dict)$", re.I)
HEADS = re.compile(r"^(num_?heads?|n_?heads?|heads|nhead|num_attention_heads|attn_heads|n_head)$", re.I)
HEAD_DIM = re.compile(r"^(head_?dim|dim_?head|head_size|d_head|attn_head_dim|d_k|d_v)$", re.I)
OUT_DIM = re.compile(r"^(out|oup|c2|c_out|dim_out|nout|n_out|output)(_?(ch|chs|chans|channels|planes|features|dim|size|width))?$|^out_", re.I)
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
            raise Unguessable(cls.__name__)
    params = ctor_params(cls)
    if params is not None and all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        try:
            return cls()
        except Exception:  # noqa: BLE001
            pass
    raise Unguessable(cls.__name__)


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
    return getattr(ann, "__module__", "").split(".")[0] not in ("torch", "typing", "builtins", "collections", "enum", "inspect", "numpy")


def guess_value(name, ann, d, h, nn, g=None, seq_len=None, depth=0):
    """A constructor value guessed from a parameter's name and annotation; `g` is the
    module namespace string annotations are evaluated in, `seq_len` the length of the
    sibling sequences (`channels=(64, 128, 256, 512)` makes `layers: List[int]` 4 long)."""
    ann = resolve_annotation(ann, g)
    # a configuration object of a class the module defines (cfg: CspModelCfg)
    if is_config_class(ann, nn):
        return build_config(ann, d, h, nn, g, depth)
    # a block class named by the annotation (block: Union[BasicBlock, Bottleneck],
    # block_fn: Type[ConvBlock]): the first nn.Module subclass it names, not nn.Module
    named = module_classes_in(ann, nn)
    if named:
        return named[0]
    text = ann_text(ann)
    if re.search(r"(List|Sequence|Tuple|list|tuple)\[float", text) and not re.search(r"Union\[float|Optional\[float|^float", text.replace("typing.", "")):
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
    return _guess_by_name(name, ann, d, h, nn)


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
    if n in ("depth", "num_layers", "n_layers", "layers", "num_blocks", "n_blocks", "nlayers", "num_block", "repeats", "n"):
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
    if re.search(r"seq_?len|max_?len|max_seq|max_length|num_positions|max_position|context_length|n_ctx|num_tokens_max", n):
        return 64
    if re.search(r"vocab|num_embeddings|n_vocab|num_tokens|n_tokens|num_codes|codebook", n):
        return 100
    at = ann_text(ann).replace("typing.", "")
    if re.match(r"(int|float|bool|Union\[int|Optional\[int|Tuple\[int|List\[int|Sequence\[int)", at):
        # a number by its annotation, whatever the name says (layer_per_block: int,
        # normalized_shape: Union[int, List[int]]): counts per block are small
        if re.search(r"(^|_)per(_|$)", n):
            return 2
        return 1.0 if at.startswith("float") else False if at.startswith("bool") else d
    if re.search(r"act|activation|nonlinearity", n):
        return nn.ReLU
    if re.search(r"norm", n):
        return nn.Identity
    if n in ("fn", "func", "module", "block", "layer", "m", "main", "shortcut", "branch", "body", "inner", "sublayer", "wrapped", "mod"):
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
        # the parameters are those of the first base that names its own (not nn.Module's)
        for base in cls.__mro__[1:]:
            init = base.__dict__.get("__init__")
            if init is None or getattr(base, "__module__", "").startswith("torch."):
                continue
            try:
                named = list(inspect.signature(init).parameters.values())[1:]
            except (TypeError, ValueError):
                continue
            if any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in named):
                return named
    return params


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
        return len(v) <= 10000 and all(is_plain_data(k, depth + 1) and is_plain_data(x, depth + 1) for k, x in v.items())
    return False


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
        col = len(text[text.rfind("\n", 0, offset) + 1:offset].encode("utf-8"))
        self.call, self.chain = None, []
        stack = [(self.tree, [])]
        while stack and self.call is None:
            node, anc = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call) and getattr(child.func, "end_lineno", None) == line and child.func.end_col_offset == col:
                    self.call, self.chain = child, anc + [node]
                    break
                stack.append((child, anc + [node]))
        if self.call is None:
            raise ValueError("call not found at offset %d" % offset)
        self.fn = next((n for n in reversed(self.chain) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
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
            code = compile(ast.Expression(node), "<call-site>", "eval")
            try:
                return eval(code, ns)  # noqa: S307 - sandboxed
            except NameError:
                g = data_ns() if data_ns is not None else None
                if g is None:
                    raise
                ons = dict(g)
                ons.update(local)
                ons["self"] = self_obj
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
                        for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
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
                return guess_value(pname or "x", p.annotation if p else inspect.Parameter.empty, d, h, nn, mod_globals)

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
                    kwargs.update({k: v for k, v in dict(extra).items() if k in by_name or any(p.kind == p.VAR_KEYWORD for p in params)})
                except Exception:  # noqa: BLE001
                    pass  # `**extra` that does not evaluate is left out
                continue
            kwargs[kw.arg] = value(kw.value, kw.arg)
        # required parameters the evaluated call leaves unset (they came from a `**extra`
        # that did not evaluate) are guessed like the others
        for i, p in enumerate(params):
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in kwargs:
                if p.kind == p.POSITIONAL_OR_KEYWORD and i < len(args):
                    continue
                guessed[0] += 1
                kwargs[p.name] = guess_value(p.name, p.annotation, d, h, nn, mod_globals)
        return args, kwargs, guessed[0]


def call_site_arguments(site, params, mod_globals, d, h, nn, data_ns=None):
    """(args, kwargs, guessed) from one call site (literal text or {text, offset}), or None."""
    try:
        if isinstance(site, str):
            # a literal argument list "(64, 128, stride=2)": the call `f(64, 128, stride=2)`
            text = site.strip()
            site = {"text": "f" + (text if text.startswith("(") else "(" + text + ")"), "offset": 1}
        return CallContext(site["text"], int(site["offset"])).arguments(mod_globals, params, d, h, nn, data_ns)
    except Unguessable:
        return None
    except (SyntaxError, ValueError, KeyError, TypeError, RecursionError):
        return None


def table_entries(text, g, limit=3):
    """Up to `limit` entries of a module-level configuration table that evaluate in the
    namespace `g`: the values of a dict display or a `dict(...)` call, the items of a
    list or tuple, else the assigned value itself. Entries are evaluated one by one, so
    an entry built by a helper the namespace lacks does not spoil the others."""
    try:
        st = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        return []
    value = st.value if isinstance(st, (ast.Assign, ast.AnnAssign)) else None
    if value is None:
        return []
    if isinstance(value, ast.Dict):
        nodes = [(ast.literal_eval(k) if isinstance(k, ast.Constant) else None, v) for k, v in zip(value.keys, value.values) if k is not None]
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and not value.args:
        nodes = [(k.arg, k.value) for k in value.keywords if k.arg]
    elif isinstance(value, (ast.List, ast.Tuple)):
        nodes = list(enumerate(value.elts))
    else:
        nodes = [(None, value)]
    out = []
    for key, node in nodes:
        try:
            out.append((key, eval(compile(ast.Expression(node), "<config-table>", "eval"), dict(g))))  # noqa: S307 - sandboxed
        except Exception:  # noqa: BLE001
            continue
        if len(out) >= limit:
            break
    return out


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
        if o is not None and type(o) is type(v) and getattr(o, "__qualname__", None) == v.__qualname__ and getattr(o, "__module__", "") == name:
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
        return functools.partial(to_original(v.func, om, depth + 1), *to_original(list(v.args), om, depth + 1), **to_original(dict(v.keywords), om, depth + 1))
    if isinstance(v, list):
        return [to_original(x, om, depth + 1) for x in v]
    if isinstance(v, tuple) and type(v) is tuple:
        return tuple(to_original(x, om, depth + 1) for x in v)
    if isinstance(v, dict) and type(v) is dict:
        return {k: to_original(x, om, depth + 1) for k, x in v.items()}
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and type(v).__module__ == CANDIDATE_MODULE:
        ocls = getattr(om, type(v).__name__, None)
        if ocls is not None and dataclasses.is_dataclass(ocls):
            return ocls(**{f.name: to_original(getattr(v, f.name), om, depth + 1) for f in dataclasses.fields(v) if f.init})
    return v


def is_config_param(p, g):
    """A required constructor parameter that takes a configuration: named like one
    (cfg, config, block_cfg) or annotated with a class of the module (cfg: RegNetCfg)."""
    if p.default is not inspect.Parameter.empty or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
        return False
    if CONFIG_NAMES.match(p.name) or re.search(r"cfg|config", p.name, re.I):
        return True
    return is_config_class(resolve_annotation(p.annotation, g))


def arg_candidates(cls, call_sites, mod_globals, nn, data_sites=None, data_ns=None):
    """Ordered, de-duplicated constructor candidates: (label, args, kwargs).
    1. defaults, when every parameter has one; 2. literal call sites from the corpus;
    3. name / annotation heuristics at a few widths (required parameters filled, and
    width-like parameters whose default is None)."""
    params = ctor_params(cls)
    out, seen = [], set()

    def add(label, args, kwargs):
        kwargs = fit_rates(kwargs)
        key = repr((args, sorted(kwargs.items(), key=lambda kv: kv[0])))
        if key not in seen:
            seen.add(key)
            out.append((label, args, kwargs))
            return True
        return False

    if params is None:
        add("defaults", [], {})
        return out, None
    fillable = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = [p for p in fillable if p.default is inspect.Parameter.empty]
    # the most common length of the sequences the signature defaults to (per-stage settings)
    lens = [len(p.default) for p in fillable if isinstance(p.default, (tuple, list)) and len(p.default) >= 2]
    seq_len = max(set(lens), key=lens.count) if lens else None
    if not required:
        add("defaults", [], {})
    # calls found in the corpus: those whose arguments all evaluated first
    sites = []
    for i, site in enumerate(call_sites or ()):
        r = call_site_arguments(site, params, mod_globals, 32, 4, nn, data_ns)
        if r is not None:
            sites.append((r[2], i, site, r[0], r[1]))
    for guessed, i, site, a, kw in sorted(sites, key=lambda t: (t[0], t[1])):
        label = "call-site %d" % (i + 1) + (" guessed=%d" % guessed if guessed else "")
        add(label, a, kw)
    # entries of the module's configuration tables as the configuration parameter
    cfg_params = [p for p in fillable if is_config_param(p, mod_globals)] if data_sites else []
    if len(cfg_params) == 1:
        cp = cfg_params[0]
        for site in data_sites:
            for key, value in table_entries(site.get("text", ""), mod_globals):
                kwargs = {cp.name: value}
                try:
                    for p in required:
                        if p is not cp:
                            kwargs[p.name] = guess_value(p.name, p.annotation, 32, 4, nn, mod_globals, seq_len)
                except Unguessable:
                    continue
                label = "config %s[%r]" % (site.get("name"), key)
                add(label, [], kwargs)
    unguessable = None
    for d, h in CANDIDATE_WIDTHS:
        kwargs, posargs = {}, []
        try:
            for p in fillable:
                if p.default is inspect.Parameter.empty:
                    v = guess_value(p.name, p.annotation, d, h, nn, mod_globals, seq_len)
                elif p.default is None and (DIM_WORDS.search(p.name) or OUT_DIM.search(p.name)) and required:
                    continue  # leave width-like Optional defaults alone while others are guessed
                else:
                    continue
                if p.kind == p.POSITIONAL_ONLY:
                    posargs.append(v)
                else:
                    kwargs[p.name] = v
        except Unguessable as u:
            unguessable = str(u)
            break
        add("heuristic d=%d h=%d" % (d, h), posargs, kwargs)
    # ResNet-style bottlenecks add the input to an output of planes * expansion
    # channels: make the input width match (inplanes = planes * cls.expansion)
    exp = getattr(cls, "expansion", None)
    names = [p.name for p in fillable]
    if isinstance(exp, int) and exp > 1 and "planes" in names:
        in_name = next((x for x in ("inplanes", "in_planes", "in_chs", "in_channels", "inp") if x in names), None)
        if in_name:
            for label, a, kw in list(out):
                if "planes" in kw and isinstance(kw["planes"], int) and not a:
                    kw2 = dict(kw)
                    kw2[in_name] = kw["planes"] * exp
                    out.insert(out.index((label, a, kw)), (label + " expansion", a, kw2))
                    seen.add(repr((a, sorted(kw2.items(), key=lambda kv: kv[0]))))
                    break
    # layer factories left at None (norm_layer=None, act_layer=None) that the block calls
    none_layers = [p for p in fillable if p.default is None and p.kind != p.POSITIONAL_ONLY and re.search(r"norm|act|layer$", p.name)]
    if none_layers and out:
        label, a, kw = out[0]
        kw2 = dict(kw)
        for p in none_layers:
            kw2[p.name] = guess_value(p.name, p.annotation, 32, 4, nn)
        add(label + " +layers", a, kw2)
    if not required:
        # defaults failed or did not run forward: also try width-like parameters set
        for d, h in CANDIDATE_WIDTHS[:2]:
            kwargs = {}
            for p in fillable:
                if p.kind != p.POSITIONAL_ONLY and (DIM_WORDS.search(p.name) or OUT_DIM.search(p.name) or HEADS.match(p.name)) and not isinstance(p.default, bool):
                    try:
                        own = len(p.default) if isinstance(p.default, (tuple, list)) and len(p.default) >= 2 else seq_len
                        kwargs[p.name] = guess_value(p.name, p.annotation, d, h, nn, mod_globals, own)
                    except Unguessable:
                        pass
            if kwargs:
                add("widths d=%d h=%d" % (d, h), [], kwargs)
        # a whole network whose defaults are wide (embed_dim=768): the same architecture
        # at small widths first, so building and running it fits the time limit
        if any(is_wide_default(p) for p in fillable):
            small = [c for c in out if c[0].startswith("widths")]
            out[:] = small + [c for c in out if not c[0].startswith("widths")]
    return out, (unguessable if not out or (required and unguessable) else None)


DEPTH_NAMES = re.compile(r"^(depth|num_blocks|n_blocks|num_layers|n_layers|layers|num_block)$")
RATE_NAMES = re.compile(r"drop|dpr|rate", re.I)


def fit_rates(kwargs):
    """Per-block rate lists (drop_path_rates=[0.0, 0.0]) as long as the block count they
    are indexed with (depth=3): a stage indexes them dpr[i] for i in range(depth)."""
    depth = max([v for k, v in kwargs.items() if DEPTH_NAMES.match(k) and isinstance(v, int) and not isinstance(v, bool)] or [0])
    out = kwargs
    for k, v in kwargs.items():
        if RATE_NAMES.search(k) and isinstance(v, list) and v and all(isinstance(x, float) for x in v) and len(v) < depth:
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


SEQ_ERR = re.compile(r"not subscriptable|has no len|not iterable|cannot unpack non-iterable|must be a tuple|must be a list|tuple index out of range", re.I)
SIZE_TUPLE = re.compile(r"(img|image|input|window|patch|feat|grid|pool|output)_?size$|^input_resolution$|^resolution$|^size$|^kernel_size$|^stride$", re.I)
SINGULAR_S = {"bias", "chs", "chans", "channels", "features", "heads", "num_heads", "planes", "groups", "classes", "num_classes",
              "tokens", "layers", "num_layers", "blocks", "num_blocks", "embeddings", "positions", "eps", "inplanes", "out_chs", "in_chs",
              "out_channels", "in_channels", "in_features", "out_features", "hidden_features", "num_features", "levels", "num_experts", "experts"}


def seq_variant(args, kwargs):
    """The same candidate with size-like values as (v, v) and plural-named values as
    [v, v]: for constructors that index or iterate a parameter (window_size[0],
    len(depths)). Returns None when nothing changes."""
    kw2, changed = {}, False
    for k, v in kwargs.items():
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


def jsonable(v, depth=0):
    if depth > 4:
        return repr(v)[:200]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x, depth + 1) for k, x in v.items()}
    if isinstance(v, type):
        return "%s.%s" % (v.__module__, v.__qualname__)
    return repr(v)[:200]


# ------------------------------------------------------------------------- inputs

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
                    c.append([("float", (2, int(p.shape[1])) + ((16, 16) if p.dim() == 4 else (32,) if p.dim() == 3 else ()))])
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


def forward_plan(model):
    """Which forward parameters get a tensor, which an int (H/W-style sizes), which
    None (masks): returns list of (name, kind) for the required parameters."""
    try:
        sig = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return [("x", "tensor")]
    if not sig.parameters:
        return []  # forward(self): a bias table, a positional embedding generator
    plan = []
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            if not plan:
                plan.append((p.name, "tensor"))
            continue
        if p.kind in (p.VAR_KEYWORD, p.KEYWORD_ONLY) or p.default is not inspect.Parameter.empty:
            continue
        n = p.name.lower()
        ann = p.annotation
        an = getattr(ann, "__name__", str(ann)) if ann is not inspect.Parameter.empty else ""
        if n in ("h", "w", "height", "width", "hh", "ww", "size_h", "size_w") or an == "int":
            plan.append((p.name, "int"))
        elif n in ("feat_size", "hw_shape", "hw_size", "size", "hw", "input_size", "shape", "resolution", "grid_size", "spatial_shape", "x_size", "thw") or "Tuple[int" in str(ann) or "List[int" in str(ann):
            plan.append((p.name, "hw"))
        elif re.search(r"(List|Sequence|Tuple)\[(torch\.)?Tensor", str(ann)):
            plan.append((p.name, "tensors"))  # torch.cat(x, 1) over a list of feature maps
        elif n in ("target", "targets", "label", "labels", "y_true", "gt", "classes"):
            plan.append((p.name, "target"))
        elif "mask" in n:
            plan.append((p.name, "none"))
        elif an == "bool":
            plan.append((p.name, "false"))
        else:
            plan.append((p.name, "tensor"))
    if not plan:
        plan.append(("x", "tensor"))
    return plan


def input_candidates(model, plan, width_values, torch, nn, spatial, hints=None):
    n_tensor = sum(1 for _, k in plan if k in ("tensor", "tensors"))
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
    for specs in expanded:
        if n_tensor > len(specs):
            specs = list(specs) + [specs[-1]] * (n_tensor - len(specs))
        elif n_tensor < len(specs):
            specs = list(specs[:n_tensor])
        key = repr(specs)
        if key not in seen:
            seen.add(key)
            out.append(specs)
    return out[:14]


TOKEN_ATTRS = ("window_size", "resolution", "input_resolution", "num_patches", "seq_len", "grid_size", "feat_size", "N", "num_tokens")


def token_counts(model, hints=None):
    """Token counts suggested by the block's attributes or constructor values, or by
    the configuration object it keeps (self.cfg.num_tokens of a dataclass config)."""
    import dataclasses
    out = []
    hints = hints or {}
    configs = [v for v in vars(model).values() if dataclasses.is_dataclass(v) and not isinstance(v, type) or isinstance(v, types.SimpleNamespace)]
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
NORM_MISMATCH = re.compile(r"normalized_shape=\[(\d+)\], expected input with shape \[\*, \1\], but got input of size\s*\[([\d, ]+)\]")


def repair_specs(specs, msg):
    """The same input with one dimension changed as a shape error says it should be:
    "size of tensor a (8) must match the size of tensor b (49)" (8 tokens → 49),
    "expected input[2, 16, 8, 8] to have 32 channels, but got 16", "mat1 and mat2 shapes
    cannot be multiplied (16x4 and 32x64)" (last dim 4 → 32), LayerNorm over the wrong
    last dim. Returns None when the message names no dimension of the input."""
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
        got, want = int(m.group(2)), int(m.group(3))
        return replace(dim_equal(got, (-1,)), got, want) if got != want else None
    m = NORM_MISMATCH.search(msg)
    if m:
        want = int(m.group(1))
        shape = [int(x) for x in m.group(2).split(",")]
        if len(shape) == 4 and shape[1] == want:
            # channels-first map given to a channels-last norm: the same map channels-last
            return replace(lambda shp: 1 if list(shp) == shape else None, want, shape[2]) and \
                [("float", (shape[0], shape[2], shape[3], want)) if sp[0] == "float" and list(sp[1]) == shape else sp for sp in specs]
        return None
    m = SIZE_MISMATCH.search(msg)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if a == b:
            return None
        r = replace(dim_equal(a), a, b)
        return r if r is not None else replace(dim_equal(b), b, a)
    return None


def make_inputs(specs, plan, torch):
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
        elif kind == "tensors":
            # a list the block concatenates along channels: the spec's channels in two halves
            t = tensors[ti] if ti < len(tensors) else tensors[-1]
            if t.is_floating_point() and t.dim() >= 2 and t.shape[1] % 2 == 0:
                args.append(list(t.chunk(2, dim=1)))
            else:
                args.append([t, t.clone()])
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


def py_expr(v, torch, depth=0):
    """Python source that rebuilds a constructor argument in the emitted module's own
    namespace (numbers, strings, containers, the module's own classes and functions,
    torch.nn classes), or None when it has no such spelling (then no usage snippet)."""
    if depth > 4:
        return None
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, float):
        return repr(v) if v == v and v not in (float("inf"), float("-inf")) else None
    if isinstance(v, (list, tuple)):
        items = [py_expr(x, torch, depth + 1) for x in v]
        if any(i is None for i in items):
            return None
        if isinstance(v, tuple):
            return "(%s)" % (items[0] + "," if len(items) == 1 else ", ".join(items))
        return "[%s]" % ", ".join(items)
    if isinstance(v, dict):
        items = [(py_expr(k, torch, depth + 1), py_expr(x, torch, depth + 1)) for k, x in v.items()]
        if any(a is None or b is None for a, b in items):
            return None
        return "{%s}" % ", ".join("%s: %s" % kv for kv in items)
    mod = getattr(v, "__module__", None)
    name = getattr(v, "__qualname__", None)
    if (isinstance(v, type) or inspect.isfunction(v)) and name and "<" not in name:
        if mod == CANDIDATE_MODULE:
            return name
        nn_v = getattr(torch.nn, getattr(v, "__name__", ""), None)
        if nn_v is v:
            return "torch.nn.%s" % v.__name__
    return None


def input_expr(a, torch, depth=0):
    """Python source for a forward input of the same shape and kind: random floats,
    integer ids within the range seen, masks, lists and tuples of those."""
    if depth > 3:
        return None
    if a is None:
        return "None"
    if isinstance(a, torch.Tensor):
        shape = ", ".join(str(int(d)) for d in a.shape)
        if a.dtype == torch.bool:
            return "torch.ones(%s, dtype=torch.bool)" % (shape or "()")
        if a.dtype.is_floating_point:
            return "torch.randn(%s)" % shape if shape else "torch.randn(())"
        high = int(a.max()) + 1 if a.numel() else 1
        return "torch.randint(0, %d, (%s%s))" % (max(1, high), shape, "," if a.dim() == 1 else "")
    if isinstance(a, (list, tuple)):
        items = [input_expr(x, torch, depth + 1) for x in a]
        if any(i is None for i in items):
            return None
        return ("[%s]" if isinstance(a, list) else "(%s,)" if len(items) == 1 else "(%s)") % ", ".join(items)
    if isinstance(a, (bool, int, float)):
        return repr(a)
    return None


def usage_snippet(cls_name, args, kwargs, inputs, torch):
    """`Block(dim=32, num_heads=4)(torch.randn(2, 16, 32))`: the construction and call
    that passed, as a line to paste next to the emitted module (None when some value has
    no plain spelling)."""
    pos = [py_expr(a, torch) for a in args]
    kw = [(k, py_expr(v, torch)) for k, v in kwargs.items()]
    ins = [input_expr(x, torch) for x in inputs]
    if None in pos or any(e is None for _, e in kw) or None in ins:
        return None
    return "%s(%s)(%s)" % (cls_name, ", ".join(pos + ["%s=%s" % kv for kv in kw]), ", ".join(ins))


def fresh_inputs(args, torch):
    """A copy of forward inputs (tensors cloned, lists copied): a forward that changes
    its input in place (x.add_(), features.append) must not change the next run's."""
    return [a.clone() if isinstance(a, torch.Tensor) else fresh_inputs(a, torch) if isinstance(a, list) else a for a in args]


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


# --------------------------------------------------------------------------- child

class Reporter:
    def __init__(self, fd, pid):
        self.fd = fd
        self.pid = pid

    def send(self, obj):
        # a process forked by candidate code shares this pipe: only the child itself reports
        if _getpid() != self.pid:
            _exit(0)
        data = (_dumps(obj, default=repr) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            try:
                n = _write(self.fd, view)
            except InterruptedError:
                continue
            view = view[n:]


def apply_limits(lim):
    def setl(res, soft, hard=None):
        try:
            resource.setrlimit(res, (soft, soft if hard is None else hard))
        except (ValueError, OSError):
            pass
    if lim.get("as_bytes"):
        setl(resource.RLIMIT_AS, lim["as_bytes"])
    if lim.get("cpu_seconds"):
        # the hard limit leaves room for the equivalence stage's own budget (see
        # Stages._equivalence, which raises the soft limit once)
        setl(resource.RLIMIT_CPU, lim["cpu_seconds"], 2 * lim["cpu_seconds"] + 2)
    if lim.get("nproc"):
        setl(resource.RLIMIT_NPROC, lim["nproc"])
    if lim.get("fsize_bytes"):
        setl(resource.RLIMIT_FSIZE, lim["fsize_bytes"])
    setl(resource.RLIMIT_CORE, 0)


def child_main(req, scratch, wfd, lim, masked):
    rep = Reporter(wfd, _getpid())
    try:
        os.setsid()
    except OSError:
        pass
    apply_limits(lim)
    # a write past the file-size limit fails with EFBIG instead of killing the child
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    log = os.open(os.path.join(scratch, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", 0), write_through=True)
    sys.dont_write_bytecode = True
    os.chdir(scratch)
    import torch
    torch.set_num_threads(1)
    Stages(req, scratch, rep, Classifier(masked), torch).run()
    rep.send({"ev": "done"})
    _exit(0)


class StageFailed(Exception):
    pass


class Stages:
    def __init__(self, req, scratch, rep, cls, torch):
        self.req = req
        self.scratch = scratch
        self.rep = rep
        self.classifier = cls
        self.torch = torch
        self.nn = torch.nn
        self._data_ns, self._data_ns_tried = None, False

    def start(self, stage):
        self.rep.send({"ev": "start", "stage": stage})
        return _monotonic()

    def end(self, stage, t0, status, **kw):
        d = {"ev": "end", "stage": stage, "status": status, "ms": round((_monotonic() - t0) * 1000, 3)}
        d.update(kw)
        self.rep.send(d)

    def fail(self, stage, t0, e, category=None):
        self.end(stage, t0, "fail", category=category or self.classifier.classify(e, stage, tb_files(e)),
                 error=fmt_error(e), traceback=fmt_trace(e))
        raise StageFailed()

    def run(self):
        try:
            self._run()
        except StageFailed:
            pass

    def _run(self):
        req, nn = self.req, self.nn
        path = os.path.join(self.scratch, CANDIDATE_MODULE + ".py")
        source = req.get("source", "")
        # 1. parse
        t0 = self.start("parse")
        try:
            tree = ast.parse(source, filename=path)
        except BaseException as e:  # noqa: BLE001
            self.fail("parse", t0, e)
        self.end("parse", t0, "pass")
        # 2. compile (symbol-table errors such as 'return' outside function appear here)
        t0 = self.start("compile")
        try:
            code = compile(tree, path, "exec", dont_inherit=True)
        except BaseException as e:  # noqa: BLE001
            self.fail("compile", t0, e)
        self.end("compile", t0, "pass")
        # 3. import: execute the module body as module `nnrag_candidate`
        t0 = self.start("import")
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            mod = types.ModuleType(CANDIDATE_MODULE)
            mod.__file__ = path
            sys.modules[CANDIDATE_MODULE] = mod
            exec(code, mod.__dict__)  # noqa: S102 - sandboxed candidate
        except BaseException as e:  # noqa: BLE001
            self.fail("import", t0, e)
        cls = mod.__dict__.get(req["className"])
        if cls is None:
            self.fail("import", t0, NameError("class %r is not defined by the module" % req["className"]), "unresolved-name")
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            self.fail("import", t0, TypeError("%r is not an nn.Module subclass" % req["className"]), "runtime-error")
        self.end("import", t0, "pass")
        # 4. namespace: every name of the copy means what it meant in the original
        namespace_stage(self, mod, path)
        want = set(req.get("stages") or STAGES)
        if "instantiate" not in want and "forward" not in want and "equivalence" not in want:
            return
        # 5 + 6. instantiate with candidate arguments, then forward on candidate inputs;
        # a candidate that constructs but fails forward moves on to the next one
        self._instantiate_forward(cls, mod, want)

    def _instantiate_forward(self, cls, mod, want):
        torch, nn = self.torch, self.nn
        t_inst = self.start("instantiate")
        try:
            cands, unguessable = arg_candidates(cls, self.req.get("callSites"), mod.__dict__, nn, self.req.get("dataSites"), self._data_namespace)
        except BaseException as e:  # noqa: BLE001
            self.fail("instantiate", t_inst, e)
        if not cands:
            self.fail("instantiate", t_inst, TypeError("cannot guess constructor argument(s): %s" % unguessable), "needs-args")
        params = ctor_params(cls) or []
        has_required = any(p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
        inst_errors = []
        fwd_errors = []
        model = None
        fwd_t0 = None
        forward_started = False
        attempts = 0
        cands = list(cands[:8])
        i = 0
        while i < len(cands) and i < 12:
            label, args, kwargs = cands[i]
            i += 1
            torch.manual_seed(0)
            try:
                m = cls(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "instantiate", tb_files(e))
                if cat in ("memory", "unresolved-name", "missing-extern", "native-extension", "sandbox-denied"):
                    self.fail("instantiate", t_inst, e, cat)
                inst_errors.append((label, args, kwargs, e))
                if isinstance(e, (TypeError, IndexError, AssertionError, ValueError)) and SEQ_ERR.search(str(e)) and "seq" not in label:
                    v = seq_variant(args, kwargs)
                    if v is not None:
                        cands.insert(i, (label + " seq", v[0], v[1]))
                continue
            if not isinstance(m, nn.Module):
                inst_errors.append((label, args, kwargs, TypeError("constructor returned %s" % type(m).__name__)))
                continue
            if model is None:
                # first successful construction: the instantiate stage passes
                self.end("instantiate", t_inst, "pass", args=self._args_json(args, kwargs))
            model = m
            if "forward" not in want and "equivalence" not in want:
                self.info(model, args, kwargs, None, None)
                return
            if not forward_started:
                fwd_t0 = self._fwd_t0 = self.start("forward")
                forward_started = True
            ok, res = self._forward(m, kwargs, args)
            attempts += 1
            if ok:
                x, y = res
                self.rep.send({"ev": "end", "stage": "forward", "status": "pass",
                               "ms": round((_monotonic() - fwd_t0) * 1000, 3),
                               "args": self._args_json(args, kwargs)})
                self.info(m, args, kwargs, x, y)
                if "equivalence" in want or self.req.get("original"):
                    self._equivalence(cls, args, kwargs, x)
                return
            fwd_errors.append((label, args, kwargs, res))
            if attempts >= 4:
                break
        if model is None:
            label, args, kwargs, e = inst_errors[0] if inst_errors else (None, [], {}, TypeError("no candidate"))
            cat = "needs-args" if has_required else self.classifier.classify(e, "instantiate", tb_files(e))
            if not has_required and cat == "runtime-error" and isinstance(e, TypeError) and re.search(r"argument", str(e)):
                cat = "needs-args"
            self.rep.send({"ev": "info", "args": self._args_json(args, kwargs), "tried": len(inst_errors)})
            self.fail("instantiate", t_inst, e, cat)
        # every forward attempt failed: prefer an error that is not about shapes
        best = None
        for label, args, kwargs, (e, specs) in fwd_errors:
            cat = self.classifier.classify(e, "forward", tb_files(e))
            if best is None or (best[1] == "forward-shape" and cat != "forward-shape"):
                best = (e, cat, args, kwargs, specs)
        e, cat, args, kwargs, specs = best
        self.rep.send({"ev": "info", "args": self._args_json(args, kwargs),
                       "input_shapes": [list(s[1]) for s in specs]})
        self.fail("forward", fwd_t0, e, cat)

    def _args_json(self, args, kwargs):
        if args:
            return {"args": jsonable(list(args)), "kwargs": jsonable(kwargs)}
        return jsonable(kwargs)

    def _forward(self, model, kwargs, args):
        torch, nn = self.torch, self.nn
        model.eval()
        plan = forward_plan(model)
        widths = [v for v in list(kwargs.values()) + list(args) if isinstance(v, int) and not isinstance(v, bool)]
        first_err = None
        hints = {}
        try:
            for p in inspect.signature(type(model).__init__).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    hints[p.name] = p.default
        except (TypeError, ValueError):
            pass
        hints.update(kwargs)
        # the image size the block is built for: its argument, its attribute, else its default
        spatial = 32
        for k in ("img_size", "image_size", "input_size", "resolution"):
            v = kwargs.get(k, getattr(model, k, hints.get(k)))
            if isinstance(v, int) and not isinstance(v, bool) and 4 <= v <= 512:
                spatial = v
            elif isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(i, int) for i in v) and 4 <= v[0] <= 512:
                spatial = v[0]
        cands = input_candidates(model, plan, widths, torch, nn, spatial, hints)
        tried, repairs, repaired_at = set(), 0, set()
        i = 0
        while i < len(cands):
            specs = cands[i]
            i += 1
            if repr(specs) in tried:
                continue
            tried.add(repr(specs))
            repaired = i - 1 in repaired_at
            torch.manual_seed(1)
            try:
                inputs = make_inputs(specs, plan, torch)
                with torch.no_grad():
                    out = model(*inputs)
            except BaseException as e:  # noqa: BLE001
                cat = self.classifier.classify(e, "forward", tb_files(e))
                if repaired and cat == "memory":
                    continue  # a repaired input too large for the limits: just a failed try
                if cat in ("memory", "unresolved-name", "missing-extern", "native-extension", "sandbox-denied"):
                    self.fail("forward", self._fwd_t0, e, cat)
                if first_err is None or (self.classifier.classify(first_err[0], "forward") == "forward-shape" and cat != "forward-shape"):
                    first_err = (e, specs)
                if cat == "forward-shape" and repairs < 4:
                    fixed = repair_specs(specs, str(e))
                    if fixed is not None and repr(fixed) not in tried:
                        repairs += 1
                        repaired_at = {j + 1 if j >= i else j for j in repaired_at} | {i}
                        cands.insert(i, fixed)  # try the repaired input next
                continue
            self._last_inputs = (specs, plan)
            return True, (inputs, out)
        if first_err is None:
            first_err = (RuntimeError("no input candidate for forward"), [])
        return False, first_err

    def info(self, model, args, kwargs, inputs, out):
        torch = self.torch
        layers = {}
        for m in model.modules():
            if m is model:
                continue
            n = type(m).__name__
            layers[n] = layers.get(n, 0) + 1
        d = {"ev": "info", "args": self._args_json(args, kwargs),
             "params": int(sum(p.numel() for p in model.parameters())), "layers": layers}
        if inputs is not None:
            d["input_shapes"] = shapes_of(inputs, torch)
            d["output_shapes"] = [list(t.shape) for t in flatten_tensors(out, torch)]
            try:
                d["usage"] = usage_snippet(type(model).__name__, args, kwargs, inputs, torch)
            except Exception:  # noqa: BLE001 - a snippet is a convenience, never a failure
                d["usage"] = None
        self.rep.send(d)

    def _original_module(self):
        """The block's original module, imported from its repository (read-only in the
        sandbox); a zygote has imported it already (see Zygote)."""
        import importlib
        orig = self.req.get("original") or {}
        for name, m in STASH.items():
            sys.modules.setdefault(name, m)
        for p in reversed(orig.get("sysPath") or []):
            if p not in sys.path:
                sys.path.insert(0, p)
        return importlib.import_module(orig["module"])

    def _data_namespace(self):
        """The original module's namespace, for plain data the copy cannot compute (a
        helper it does not need builds a call site's drop-path rates); None without one.
        Imported on first use only (a child outside a zygote would import the repository)."""
        if not self._data_ns_tried:
            self._data_ns_tried = True
            if self.req.get("original"):
                try:
                    self._data_ns = self._original_module().__dict__
                except BaseException:  # noqa: BLE001
                    pass
        return self._data_ns

    def _equivalence(self, cls, args, kwargs, inputs):
        torch = self.torch
        orig = self.req.get("original")
        t0 = self.start("equivalence")
        try:
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if soft != resource.RLIM_INFINITY and hard != resource.RLIM_INFINITY:
                resource.setrlimit(resource.RLIMIT_CPU, (min(hard, 2 * soft), hard))
        except (ValueError, OSError):
            pass
        if not orig:
            self.end("equivalence", t0, "skip", reason="no original module given")
            return
        try:
            om = self._original_module()
            ocls = getattr(om, orig["className"])
        except BaseException as e:  # noqa: BLE001
            self.end("equivalence", t0, "skip", reason="original does not import: " + fmt_error(e))
            return
        # the same argument values, with the copy's classes and functions swapped for the
        # original's (partial(ConvNormAct, padding=0) of the original module)
        try:
            oargs, okwargs = to_original(list(args), om), to_original(dict(kwargs), om)
        except Exception:  # noqa: BLE001
            oargs, okwargs = args, kwargs
        try:
            seed_all(torch, 0)
            a = ocls(*oargs, **okwargs)
        except BaseException as e:  # noqa: BLE001
            self.end("equivalence", t0, "skip", reason="original does not instantiate with the same arguments: " + fmt_error(e))
            return
        try:
            seed_all(torch, 0)
            b = cls(*args, **kwargs)
            b.load_state_dict(a.state_dict(), strict=True)
        except BaseException as e:  # noqa: BLE001
            if self.classifier.classify(e, "equivalence") == "memory":
                self.end("equivalence", t0, "fail", reason="memory limit while building the copy: " + fmt_error(e),
                         category="memory", error=fmt_error(e))
                return
            self.end("equivalence", t0, "fail", reason="state_dict does not load strictly: " + fmt_error(e),
                     category="not-equivalent", error=fmt_error(e))
            return
        a.eval()
        b.eval()
        try:
            with torch.no_grad():
                seed_all(torch, 1)
                ya = flatten_tensors(a(*fresh_inputs(inputs, torch)), torch)
        except BaseException as e:  # noqa: BLE001
            self.end("equivalence", t0, "skip", reason="original forward failed: " + fmt_error(e))
            return
        try:
            with torch.no_grad():
                seed_all(torch, 1)
                yb = flatten_tensors(b(*fresh_inputs(inputs, torch)), torch)
        except BaseException as e:  # noqa: BLE001
            mem = self.classifier.classify(e, "equivalence") == "memory"
            self.end("equivalence", t0, "fail", reason=("memory limit in the copy's forward: " if mem else "extracted forward failed: ") + fmt_error(e),
                     category="memory" if mem else "not-equivalent", error=fmt_error(e))
            return
        if len(ya) != len(yb) or any(list(x.shape) != list(y.shape) for x, y in zip(ya, yb)):
            r = "outputs differ in structure: %s vs %s" % ([list(t.shape) for t in ya], [list(t.shape) for t in yb])
            self.end("equivalence", t0, "fail", reason=r, category="not-equivalent", error=r)
            return
        maxdiff = 0.0
        ok = True
        for x, y in zip(ya, yb):
            if x.dtype != y.dtype:
                ok = False
                continue
            if x.numel() == 0:
                continue
            if x.is_floating_point() or x.is_complex():
                diff = (x.double() - y.double()).abs()
                nan_mismatch = bool((x.isnan() != y.isnan()).any())
                m = float(diff[~diff.isnan()].max()) if bool((~diff.isnan()).any()) else 0.0
                maxdiff = max(maxdiff, m)
                if nan_mismatch or not torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                    ok = False
            elif not torch.equal(x, y):
                ok = False
                maxdiff = max(maxdiff, float((x.double() - y.double()).abs().max()))
        if ok:
            self.end("equivalence", t0, "pass", maxAbsDiff=maxdiff)
        else:
            r = "outputs differ (max abs diff %.3g)" % maxdiff
            self.end("equivalence", t0, "fail", reason=r, maxAbsDiff=maxdiff, category="not-equivalent", error=r)


# -------------------------------------------------------------------------- namespace

_NS_MISSING = object()
_NS_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def namespace_stage(st, mod, path):
    """The namespace stage: every top-level name of the copy that came from the original
    corpus must denote what it denotes in the original modules (req["namespace"]: the
    names with their origins `[module, attribute]`, and the copied statements' lines
    `[first, last, module, original first, original last]`). A module is the same by
    `__name__`; a class or function by qualified name and by where it is defined (the
    copy's line, mapped through the copied statements, must fall in the original's
    statement that defines the original object); immutable plain data by value; anything
    else (mutable containers that other code may fill, instances) by type, its class
    compared the same way. Objects shared by both (extern imports) are the same object.
    Runs only where the original imports; a mismatch fails the stage as `rebound-name`,
    the later stages still run."""
    req = st.req
    ns = req.get("namespace")
    if not ns:
        return
    t0 = st.start("namespace")
    if not req.get("original"):
        r = "no original module given"
        st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
        return
    # sys.modules keeps insertion order: what the stage adds is its tail. (A copy of the
    # whole dict would touch every key, and in a fork of the zygote every touched page is
    # copied: ~15 ms for timm's 1500 modules, against ~0.3 ms for the check itself.)
    if IN_ZYGOTE and req["original"].get("module") not in STASH:
        r = "original does not import: the repository's zygote did not import %s" % req["original"].get("module")
        st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
        return
    before = len(sys.modules)
    saved_path = list(sys.path)
    try:
        try:
            st._original_module()
        except BaseException as e:  # noqa: BLE001
            r = "original does not import: " + fmt_error(e)
            st.end("namespace", t0, "skip", reason=r, namespace={"checked": 0, "reason": r})
            return
        _namespace_check(st, t0, mod, path, ns)
    finally:
        # the original's modules are hidden again while the candidate runs (see STASH)
        import itertools
        for name in list(itertools.islice(reversed(sys.modules), max(0, len(sys.modules) - before))):
            del sys.modules[name]
        sys.path[:] = saved_path


def _namespace_check(st, t0, mod, path, ns):
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

    def plain(v, depth=0):
        if isinstance(v, _NS_PLAIN):
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

    def same(c, o, depth=0):
        if c is o:
            return True
        if c is _NS_MISSING or o is _NS_MISSING or depth > 4:
            return False
        if isinstance(o, types.ModuleType):
            return isinstance(c, types.ModuleType) and c.__name__ == o.__name__
        if isinstance(o, functools.partial):
            return (isinstance(c, functools.partial) and same(c.func, o.func, depth + 1) and len(c.args) == len(o.args)
                    and all(same(x, y, depth + 1) for x, y in zip(c.args, o.args))
                    and set(c.keywords) == set(o.keywords) and all(same(c.keywords[k], o.keywords[k], depth + 1) for k in o.keywords))
        if isinstance(o, type) or isinstance(o, types.FunctionType):
            return same_def(c, o)
        if plain(o):
            return equal(c, o)
        # other objects: the same kind of thing (their class, compared as a definition)
        return type(c) is type(o) or (isinstance(type(o), type) and same_def(type(c), type(o)))

    def describe(v, copy):
        if v is _NS_MISSING:
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
        c = g.get(name, _NS_MISSING)
        for omod, attr in origins:
            try:
                om = sys.modules.get(omod) or importlib.import_module(omod)
            except BaseException as e:  # noqa: BLE001
                skipped += 1
                reasons.setdefault("module %s does not import: %s" % (omod, fmt_error(e)[:200]), 1)
                continue
            o = getattr(om, attr, _NS_MISSING)
            if c is _NS_MISSING and o is _NS_MISSING:
                skipped += 1  # bound in neither (TYPE_CHECKING imports, conditional code)
                continue
            checked += 1
            try:
                ok = same(c, o)
            except Exception:  # noqa: BLE001 - an object that cannot be compared
                ok = type(c) is type(o)
            if not ok and len(mismatches) < 20:
                mismatches.append({"name": name, "copy": describe(c, True), "original": "%s.%s: %s" % (omod, attr, describe(o, False))})
            elif not ok:
                mismatches.append(None)
    summary = {"checked": checked}
    if skipped:
        summary["skipped"] = skipped
    if mismatches:
        shown = [m for m in mismatches if m]
        summary["mismatches"] = shown
        err = "%d name(s) of the copy denote something else than in the original: %s" % (
            len(mismatches), "; ".join("%s is %s, originally %s" % (m["name"], m["copy"], m["original"]) for m in shown[:5]))
        st.end("namespace", t0, "fail", category="rebound-name", error=err, namespace=summary)
    elif checked:
        st.end("namespace", t0, "pass", namespace=summary)
    else:
        summary["reason"] = next(iter(reasons), "no name of the copy came from the original corpus")
        st.end("namespace", t0, "skip", reason=summary["reason"], namespace=summary)


# -------------------------------------------------------------------------- worker

NONCE_LEN = 32
MADV_WIPEONFORK = 18  # <linux/mman.h>, Linux 4.14; not exported by the mmap module


class Channel(object):
    """A worker's end of the protocol with its parent (pool.ts; a worker for its
    zygotes). Requests arrive framed as NONCE (32 hex characters) + payload length
    (8 hex digits) + JSON, read unbuffered; every progress and result line answers with
    the nonce of its request and the parent accepts no line without it, so a line
    written by anyone else cannot answer for any request. The nonce is read straight into
    a private page the kernel wipes in forked children (MADV_WIPEONFORK), so no candidate
    ever holds the nonce of its own request, and a finished request's nonce is dead."""

    def __init__(self, rfd, wfd):
        import mmap
        self.rfd, self.wfd = rfd, wfd
        self.page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE)
        try:
            self.page.madvise(MADV_WIPEONFORK)
        except (AttributeError, OSError, ValueError):
            pass  # kernel before 4.14: a child sees its own request's nonce, no other
        self.nonce = memoryview(self.page)[:NONCE_LEN]

    def _fill(self, view):
        got = 0
        while got < len(view):
            try:
                n = os.readv(self.rfd, [view[got:]])
            except InterruptedError:
                continue
            if n == 0:
                return False
            got += n
        return True

    def read(self):
        """The next request (a dict; {} when unreadable), or None at the end of input."""
        head = bytearray(8)
        if not self._fill(self.nonce) or not self._fill(memoryview(head)):
            return None
        try:
            n = int(head.decode("ascii"), 16)
        except ValueError:
            return None
        data = bytearray(n)
        if not self._fill(memoryview(data)):
            return None
        try:
            msg = _loads(data.decode("utf-8", "replace"))
        except ValueError:
            return {}
        return msg if isinstance(msg, dict) else {}

    def send(self, obj):
        obj.pop("nonce", None)
        body = _dumps(obj, default=repr).encode("utf-8", "replace")
        if obj.get("type") in ("progress", "result") and body.startswith(b"{"):
            parts = [b'{"nonce":"', self.nonce, b'",' + body[1:] + b"\n"]
        else:
            parts = [body + b"\n"]
        while parts:
            try:
                n = os.writev(self.wfd, parts)
            except InterruptedError:
                continue
            while parts and n >= len(parts[0]):
                n -= len(parts[0])
                parts.pop(0)
            if parts and n:
                parts[0] = memoryview(parts[0])[n:]

    def close(self):
        for fd in (self.rfd, self.wfd):
            try:
                os.close(fd)
            except OSError:
                pass


def frame(nonce, msg):
    """A request as Channel.read expects it (used towards a zygote)."""
    data = _dumps(msg).encode("utf-8")
    return nonce + ("%08x" % len(data)).encode("ascii") + data


def mount_points():
    """Mount points of this process's mount namespace (/proc/self/mountinfo, field 5,
    with the kernel's octal escapes for space, tab, newline and backslash)."""
    out = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split(" ")
                if len(parts) > 4:
                    out.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4]))
    except OSError:
        pass
    return out


def sweep_dir(d, keep):
    """Remove everything below `d` except the mount points in `keep` and the folders that
    lead to them. True when nothing else is left."""
    try:
        names = os.listdir(d)
    except OSError:
        return False
    clean = True
    for n in names:
        p = os.path.join(d, n)
        if p in keep:
            continue
        if any(k.startswith(p + "/") for k in keep):
            clean = sweep_dir(p, keep) and clean
            continue
        remove_tree(p)
        if os.path.lexists(p):
            clean = False
    return clean


class Worker:
    def __init__(self, cfg, proto):
        self.cfg = cfg
        self.proto = proto  # a Channel
        self.scratch_root = cfg.get("scratch") or "/tmp"
        self.masked = cfg.get("masked") or []
        self.seq = 0
        self.me = os.getpid()
        # kill(-1) is only safe when this worker is alone in a pid namespace made for it
        # (bwrap: init is pid 1, the worker pid 2); never without the sandbox
        self.pidns = bool(cfg.get("pidns")) and self.me <= 3
        self.zygotes = {}
        self.failed_zygotes = set()
        self.zygote_ok = not cfg.get("no_zygotes")
        self.extra_close = []
        self._eq_start = None  # when the running child's equivalence stage started (collect)
        self.discard = False  # set when a candidate left state this worker cannot remove

    def send(self, obj):
        self.proto.send(obj)

    def limits(self, vm_kb):
        lim = dict(self.cfg.get("limits") or {})
        mem_mb = lim.pop("memory_mb", 2048)
        # address space = what the worker already maps (interpreter + torch) + the budget
        lim["as_bytes"] = int(vm_kb * 1024 + mem_mb * 1024 * 1024)
        lim["nproc"] = count_my_tasks() + int(lim.pop("max_procs", 64))
        lim["fsize_bytes"] = int(lim.pop("file_size_mb", 64)) * 1024 * 1024
        return lim

    def run(self):
        t0 = _monotonic()
        import torch  # noqa: F401 - imported once; every child inherits it through fork
        try:
            torch.set_num_threads(1)
        except Exception:  # noqa: BLE001
            pass
        self.vm_kb = vm_size_kb()
        self.lim = self.limits(self.vm_kb)
        set_subreaper()
        set_undumpable()
        gc.collect()
        if hasattr(gc, "freeze"):
            gc.freeze()  # fewer copy-on-write pages after fork
        self.send({"type": "ready", "torch": torch.__version__, "python": "%d.%d.%d" % sys.version_info[:3],
                   "executable": sys.executable, "pid": os.getpid(), "vm_kb": self.vm_kb,
                   "limits": self.lim, "import_ms": round((_monotonic() - t0) * 1000, 1)})
        self.serve()

    def serve(self):
        while True:
            msg = self.proto.read()
            if msg is None or msg.get("type") == "exit":
                break
            if msg.get("type") == "validate":
                res = self.route(msg)
                self.send(res)
                if self.discard:
                    # something a candidate left could not be removed: end this worker
                    # (pool.ts starts a fresh sandbox) instead of running the next one
                    break

    def route(self, msg):
        """Requests with an original module run in a zygote that has imported the
        original repository once (see Zygote); the others fork from this worker."""
        req = msg.get("req") or {}
        orig = req.get("original")
        if self.zygote_ok and orig and orig.get("module") and orig.get("sysPath"):
            key = (tuple(orig["sysPath"]), orig["module"].split(".")[0])
            if key not in self.failed_zygotes:
                z = self.zygotes.get(key)
                if z is None or not z.alive():
                    z = self.new_zygote(key, orig)
                if z is not None:
                    res = z.ask(self, msg)
                    if res is not None:
                        # orphans re-parented to this worker die too, and a zygote that
                        # kept a thread or process of anything it ran is not used again
                        self.cleanup(None)
                        if not z.unchanged():
                            self.drop_zygote(key)
                        self.sweep()
                        return res
                    self.drop_zygote(key)
                    self.cleanup(None)
                    self.sweep()
                    if not z.clean:
                        # the repository's import left a thread running in the zygote:
                        # its requests import the original in their own child instead
                        self.failed_zygotes.add(key)
                        return self.validate(msg)
                    # the zygote died or hung: forget it, clean up its orphans, report
                    if z.never_answered:
                        self.failed_zygotes.add(key)
                    return z.failure(msg)
        res = self.validate(msg)
        self.sweep()
        return res

    def sweep(self):
        """Between candidates, empty the sandbox's writable places (/tmp, /dev/shm: each
        a size-limited tmpfs of this sandbox alone), so nothing a candidate wrote there
        reaches the next one. Without the sandbox only the candidate's own scratch folder
        is removed (validate). What cannot be removed discards this worker."""
        if not self.pidns:
            return
        # what bubblewrap mounted below them stays: a repository root or an interpreter
        # prefix that lives under /tmp is bound on top of the scratch tmpfs, read-only
        keep = mount_points()
        for d in (self.scratch_root, "/dev/shm"):
            try:
                os.chmod(d, 0o700)  # a candidate may have taken its owner's write permission
            except OSError:
                continue
            if not sweep_dir(d, keep):
                self.discard = True

    def new_zygote(self, key, orig):
        while len(self.zygotes) >= MAX_ZYGOTES:
            self.drop_zygote(next(iter(self.zygotes)))
        try:
            z = Zygote(self, list(orig["sysPath"]), orig["module"])
        except OSError:
            return None
        self.zygotes[key] = z
        return z

    def drop_zygote(self, key):
        z = self.zygotes.pop(key, None)
        if z is not None:
            z.kill()

    def validate(self, msg):
        rid = msg.get("rid")
        req = msg.get("req") or {}
        timeout = max(0.05, float(req.get("timeoutMs") or self.cfg.get("timeout_ms") or 20000) / 1000.0)
        self.seq += 1
        # an unpredictable name, created exclusively (mode 0700): nothing a candidate
        # left can stand in for the next one's scratch
        scratch = tempfile.mkdtemp(prefix="nnrag-", dir=self.scratch_root)
        t0 = _monotonic()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                self.proto.close()
                # no way for a candidate to reach a zygote's pipes or this zygote's requests
                for z in self.zygotes.values():
                    z.close_fds()
                for fd in self.extra_close:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                child_main(req, scratch, w, self.lim, self.masked)
            except BaseException:  # noqa: BLE001
                try:
                    os.write(w, (_dumps({"ev": "harness-error", "error": traceback.format_exc()[-2000:]}) + "\n").encode())
                except BaseException:  # noqa: BLE001
                    pass
            _exit(0)
        os.close(w)
        buf, timed_out, overflow, status = self.collect(pid, r, t0 + timeout, rid, timeout)
        if status is None:
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        strays = self.cleanup(pid)
        # drain whatever is still in the pipe, without waiting for stray holders of it
        try:
            os.set_blocking(r, False)
            while len(buf) < MAX_PIPE_BYTES:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                buf += chunk
        except (BlockingIOError, OSError):
            pass
        os.close(r)
        strays += self.cleanup(pid)
        elapsed = (_monotonic() - t0) * 1000
        out_tail = read_tail(os.path.join(scratch, "output.log"))
        remove_tree(scratch)
        events = []
        for ln in buf.split(b"\n"):
            if not ln.strip():
                continue
            try:
                events.append(_loads(ln.decode("utf-8", "replace")))
            except ValueError:
                continue
        return self.assemble(rid, req, events, status, timed_out, overflow, elapsed, timeout, strays, out_tail)

    def cleanup(self, child_pid):
        """Kill and reap every process the candidate left behind. Inside the sandbox's
        own pid namespace kill(-1) reaches all of them at once (everything but this
        worker and the namespace's init), which also stops a fork bomb that forks
        while we kill; without a sandbox only the candidate's process group and this
        worker's descendants are signalled. Returns how many were still alive."""
        me = os.getpid()
        keep = {z.pid for z in self.zygotes.values()}
        left = [p for p, st in descendants(me, keep) if st != "Z"]
        strays = len(left)
        for _ in range(500):
            if self.pidns and not keep:
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    pass
            else:
                if child_pid:
                    kill_group(child_pid)
                for p in left:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            reap_except(keep)
            rest = descendants(me, keep)
            if not rest:
                break
            left = [p for p, st in rest if st != "Z"]
            time.sleep(0.001)
        return strays

    def forward_progress(self, rid, buf, pos):
        """Relay stage start/end events to the TS side as they arrive, so that if this
        worker itself is killed the request is still attributed to its running stage."""
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                return pos
            line = buf[pos:nl]
            pos = nl + 1
            try:
                ev = _loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue
            if isinstance(ev, dict) and ev.get("ev") == "done":
                self._done = True
            if isinstance(ev, dict) and ev.get("ev") == "start" and ev.get("stage") == "equivalence" and self._eq_start is None:
                self._eq_start = _monotonic()
            if isinstance(ev, dict) and ev.get("ev") in ("start", "end") and ev.get("stage") in STAGES:
                self.send({"type": "progress", "rid": rid, "ev": ev["ev"], "stage": ev["stage"],
                           "status": ev.get("status")})

    def collect(self, pid, r, deadline, rid=None, eq_timeout=None):
        """Read the child's reports until it exits, the deadline passes (kill) or it
        floods the pipe (kill). Returns (bytes, timed_out, overflow, status or None).
        The equivalence stage, which builds and runs two copies, gets a wall-clock budget
        of its own (`eq_timeout` from its start, once)."""
        buf = b""
        self._eq_start = None
        extended = False
        timed_out = False
        overflow = False
        status = None
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                pidfd = None
        r_open = True
        pos = 0
        self._done = False
        try:
            while True:
                if self._eq_start is not None and not extended and eq_timeout:
                    extended = True
                    deadline = max(deadline, self._eq_start + eq_timeout)
                left = deadline - _monotonic()
                if left <= 0:
                    timed_out = True
                    kill_group(pid)
                    break
                watch = ([r] if r_open else []) + ([pidfd] if pidfd is not None else [])
                if pidfd is None:
                    done, st = os.waitpid(pid, os.WNOHANG)
                    if done:
                        status = st
                        break
                    wait = min(left, 0.002 if not r_open else 0.05)
                else:
                    wait = min(left, 0.5)
                ready = select.select(watch, [], [], wait)[0] if watch else time.sleep(wait) or []
                if r_open and r in ready:
                    chunk = os.read(r, 65536)
                    if not chunk:
                        r_open = False
                    else:
                        buf += chunk
                        pos = self.forward_progress(rid, buf, pos)
                        if self._done:
                            # the child has reported everything: do not wait for its
                            # exit (slow under a fork bomb), end it and its group now
                            kill_group(pid)
                            break
                        if len(buf) > MAX_PIPE_BYTES:
                            overflow = True
                            kill_group(pid)
                            break
                if pidfd is not None and pidfd in ready:
                    break
        finally:
            if pidfd is not None:
                os.close(pidfd)
        return buf, timed_out, overflow, status

    def assemble(self, rid, req, events, status, timed_out, overflow, elapsed, timeout, strays, out_tail):
        stages = {s: "skip" for s in STAGES}
        timings = {}
        res = {"type": "result", "rid": rid, "stages": stages, "timings": timings, "category": None,
               "error": None, "stage": None, "args": None, "input_shapes": None, "output_shapes": None,
               "params": None, "ms": round(elapsed, 3)}
        current = None
        done = False
        equivalence = None
        harness_error = None
        for ev in events:
            k = ev.get("ev")
            if k == "start" and ev.get("stage") in stages:
                current = ev["stage"]
            elif k == "end" and ev.get("stage") in stages:
                st = ev["stage"]
                stages[st] = ev.get("status", "fail")
                if "ms" in ev:
                    timings[st] = ev["ms"]
                if ev.get("args") is not None:
                    res["args"] = ev["args"]
                if st == "namespace" and isinstance(ev.get("namespace"), dict):
                    res["namespace"] = dict(ev["namespace"], status=ev.get("status"))
                if st == "equivalence":
                    equivalence = {"status": ev.get("status")}
                    if ev.get("reason"):
                        equivalence["reason"] = ev["reason"]
                    if ev.get("maxAbsDiff") is not None:
                        equivalence["maxAbsDiff"] = ev["maxAbsDiff"]
                if ev.get("status") == "fail" and res["stage"] is None:
                    res["stage"] = st
                    res["category"] = ev.get("category") or "runtime-error"
                    res["error"] = ev.get("error")
                    if ev.get("traceback"):
                        res["traceback"] = ev["traceback"]
                current = None
            elif k == "info":
                for key in ("args", "input_shapes", "output_shapes", "params", "layers", "usage"):
                    if key in ev and ev[key] is not None:
                        res[key] = ev[key]
            elif k == "done":
                done = True
            elif k == "harness-error":
                harness_error = ev.get("error")
        if equivalence is not None:
            res["equivalence"] = equivalence
        if not done and res["stage"] is None:
            # the child did not finish: attribute the ending to the running stage
            st = current or next((s for s in STAGES if stages[s] == "skip"), "import")
            stages[st] = "fail"
            res["stage"] = st
            if timed_out:
                res["category"] = "timeout"
                res["error"] = "wall-clock timeout after %d ms" % int(timeout * 1000)
            elif overflow:
                res["category"] = "crash"
                res["error"] = "candidate flooded the report pipe"
            elif status is not None and os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
                if sig == signal.SIGXCPU:
                    res["category"] = "timeout"
                    res["error"] = "CPU time limit exceeded (SIGXCPU)"
                elif sig == signal.SIGXFSZ:
                    res["category"] = "sandbox-denied"
                    res["error"] = "file size limit exceeded (SIGXFSZ)"
                else:
                    res["category"] = "crash"
                    res["error"] = "process killed by %s" % name
            elif harness_error:
                res["category"] = "crash"
                res["error"] = "harness error: " + harness_error
            else:
                code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
                res["category"] = "crash"
                res["error"] = "process exited with status %s during %s" % (code, st)
            if out_tail:
                res["output"] = out_tail
            if st == "equivalence" and equivalence is None:
                res["equivalence"] = {"status": "fail", "reason": res["error"]}
        if strays:
            res["strays_killed"] = strays

        return res


MAX_ZYGOTES = 3
ZYGOTE_UNCLEAN = 75  # exit status of a zygote whose import left a thread running
# Modules of an original repository imported by a zygote, hidden from sys.modules while
# a candidate imports, instantiates and runs (so `import timm` in a candidate still fails
# when timm is not installed) and put back for the equivalence stage.
STASH = {}
# Set in a zygote (the module it imported): its candidates know which original modules
# imported there without trying again (a failing import can take seconds).
IN_ZYGOTE = []


def zygote_main(cfg, roots, module, req_fd, res_fd):
    """A forked copy of the worker that imports the original repository once; the
    candidates of that repository fork from here, so equivalence does not re-import
    the repository for every block. The repository's import-time code runs here, in the
    same sandbox, never in the worker that serves other repositories."""
    try:
        _libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
    except Exception:  # noqa: BLE001
        pass
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    # processes the import starts, double-forked or not, come back to this zygote
    set_subreaper()
    handlers = {}
    for sig in signal.valid_signals() if hasattr(signal, "valid_signals") else ():
        try:
            handlers[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            pass
    import importlib
    for p in reversed(roots):
        if p not in sys.path:
            sys.path.insert(0, p)
    sys.dont_write_bytecode = True
    IN_ZYGOTE.append(module)
    try:
        importlib.import_module(module)
    except BaseException:  # noqa: BLE001 - the equivalence stage reports it
        pass
    prefixes = [r.rstrip("/") + "/" for r in roots]
    for name, m in list(sys.modules.items()):
        # sys.modules may hold objects that are not modules (torch.classes namespaces
        # under torch 2.6: their __path__ is not a list of folders)
        try:
            f = getattr(m, "__file__", None) or ""
            paths = [str(x) for x in (getattr(m, "__path__", None) or [])]
        except Exception:  # noqa: BLE001
            continue
        if not isinstance(f, str):
            continue
        if any(f.startswith(pr) for pr in prefixes) or any(x.startswith(pr) for x in paths for pr in prefixes):
            STASH[name] = sys.modules.pop(name)
    for p in roots:
        while p in sys.path:
            sys.path.remove(p)
    importlib.invalidate_caches()
    # nothing of the import may act later, between or inside other blocks' runs: its
    # processes (daemons) are killed, signal handlers it set are put back, the zygote is
    # made non-dumpable again (candidates cannot open its /proc/PID/fd or memory), and a
    # zygote left with a thread is reported unclean and not used (see Worker.route)
    for sig, h in handlers.items():
        try:
            if signal.getsignal(sig) is not h:
                signal.signal(sig, h)
        except (OSError, ValueError, TypeError):
            pass
    set_undumpable()
    kill_descendants(os.getpid())
    threads = count_threads(os.getpid())
    zcfg = dict(cfg)
    zcfg["pidns"] = False
    zcfg["no_zygotes"] = True
    w = Worker(zcfg, Channel(req_fd, res_fd))
    w.vm_kb = vm_size_kb()
    w.lim = w.limits(w.vm_kb)
    gc.collect()
    if hasattr(gc, "freeze"):
        gc.freeze()
    w.extra_close = [req_fd]
    if threads != 1:
        # said by the exit status: a thread of the import may be writing into the pipe
        _exit(ZYGOTE_UNCLEAN)
    w.send({"type": "zygote-ready", "threads": threads})
    w.serve()


class Zygote:
    def __init__(self, worker, roots, module):
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(req_w)
                os.close(res_r)
                for z in worker.zygotes.values():
                    z.close_fds()
                worker.proto.close()
                zygote_main(worker.cfg, roots, module, req_r, res_w)
            except BaseException:  # noqa: BLE001
                pass
            _exit(0)
        os.close(req_r)
        os.close(res_w)
        self.pid = pid
        self.w = req_w
        self.r = res_r
        self.buf = b""
        self.never_answered = True
        self.progress = {}
        self.running = None
        self.clean = True
        self.reaped = False
        self.threads = None  # after its import (zygote-ready)

    def unchanged(self):
        """Still as it was when it became ready: alive, the same threads, no process
        left below it (its own cleanup runs after each candidate)."""
        if not self.alive() or self.threads is None or count_threads(self.pid) != self.threads:
            return False
        return not [p for p, st in descendants(self.pid) if st != "Z"]

    def close_fds(self):
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass

    def alive(self):
        if self.reaped:
            return False
        try:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            done = self.pid
        self.reaped = done != 0
        return done == 0

    def kill(self):
        if self.reaped:
            # its pid may already name another process: what it left is the worker's
            # (its subreaper) to clean up
            self.close_fds()
            return
        for p, _ in descendants(self.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.close_fds()

    def ask(self, worker, msg):
        """Send one request; relay its progress lines; return its result, or None when
        the zygote died or did not answer in time (its first answer may include the
        repository import)."""
        rid = msg.get("rid")
        req = msg.get("req") or {}
        timeout = max(0.05, float(req.get("timeoutMs") or worker.cfg.get("timeout_ms") or 20000) / 1000.0)
        # the first answer includes the repository import; stay inside the TS watchdog
        # (request timeout + 10 s)
        deadline = _monotonic() + timeout + (8.0 if self.never_answered else 5.0)
        self.progress = {}
        self.running = None
        # a fresh token for this request: the zygote answers with it, lines without it
        # (left in the pipe, or written for another request) are ignored
        token = os.urandom(NONCE_LEN // 2).hex()
        self.buf = b""
        try:
            data = frame(token.encode("ascii"), {"type": "validate", "rid": rid, "req": req})
            while data:
                n = os.write(self.w, data)
                data = data[n:]
        except OSError:
            return None
        while True:
            nl = self.buf.find(b"\n")
            while nl >= 0:
                line = self.buf[:nl]
                self.buf = self.buf[nl + 1:]
                try:
                    obj = _loads(line.decode("utf-8", "replace"))
                except ValueError:
                    obj = None
                if isinstance(obj, dict):
                    t = obj.get("type")
                    if t == "zygote-ready" and self.threads is None:
                        self.threads = obj.get("threads")
                    elif obj.get("nonce") != token:
                        pass
                    elif t == "progress" and obj.get("rid") == rid:
                        if obj.get("ev") == "start":
                            self.running = obj.get("stage")
                            if obj.get("stage") == "equivalence":
                                # the zygote's child has an equivalence budget of its own
                                deadline = max(deadline, _monotonic() + timeout + 5.0)
                        else:
                            self.progress[obj.get("stage")] = obj.get("status")
                            self.running = None
                        worker.send(obj)
                    elif t == "result" and obj.get("rid") == rid:
                        self.never_answered = False
                        return obj
                nl = self.buf.find(b"\n")
            left = deadline - _monotonic()
            if left <= 0:
                self.timed_out = True
                return None
            ready = select.select([self.r], [], [], min(left, 0.5))[0]
            if ready:
                chunk = os.read(self.r, 65536)
                if not chunk:
                    self.ended()
                    return None
                self.buf += chunk

    def ended(self):
        """The zygote closed its pipe: collect how it ended (unclean import or death)."""
        try:
            pid, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return
        self.reaped = True
        if pid and os.WIFEXITED(status) and os.WEXITSTATUS(status) == ZYGOTE_UNCLEAN:
            self.clean = False

    def failure(self, msg):
        stages = {s: self.progress.get(s, "skip") for s in STAGES}
        st = self.running or next((s for s in STAGES if stages[s] == "skip"), "import")
        stages[st] = "fail"
        hung = getattr(self, "timed_out", False)
        return {"type": "result", "rid": msg.get("rid"), "stages": stages, "timings": {},
                "category": "timeout" if hung else "crash",
                "error": ("the original repository's import did not finish in time" if hung and self.never_answered
                          else "validation process did not answer in time" if hung
                          else "validation process (repository zygote) died while validating"),
                "stage": st, "args": None, "input_shapes": None, "output_shapes": None, "params": None, "ms": 0}


def remove_tree(path):
    """Remove a file or folder a candidate may have made hard to remove (folders
    without write or search permission for their owner)."""
    def fix(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.chmod(path, 0o700)
            except OSError:
                pass
            shutil.rmtree(path, onerror=fix)
        else:
            os.unlink(path)
    except (OSError, RecursionError):
        pass


def read_tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def vm_size_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 1 << 20


def count_my_tasks():
    """Tasks (threads) already owned by this uid: RLIMIT_NPROC counts them too."""
    uid = os.getuid()
    n = 0
    try:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.stat("/proc/" + name).st_uid != uid:
                    continue
                n += len(os.listdir("/proc/%s/task" % name))
            except OSError:
                continue
    except OSError:
        return 0
    return n


def count_threads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


def kill_descendants(pid):
    """SIGKILL and reap every descendant of `pid` (this process, a subreaper)."""
    for _ in range(200):
        left = [p for p, st in descendants(pid) if st != "Z"]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not left and not descendants(pid):
            return
        time.sleep(0.002)


def _libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


def set_subreaper():
    # PR_SET_CHILD_SUBREAPER (36): orphaned descendants of candidates are re-parented
    # to this worker, so kill_descendants() finds double-forked processes too
    try:
        _libc().prctl(36, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def set_undumpable():
    # PR_SET_DUMPABLE (4) = 0: /proc/<worker>/fd and ptrace are closed to the
    # candidates (same uid), so they cannot write into the protocol pipe
    try:
        _libc().prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def proc_table():
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                s = f.read().decode("ascii", "replace")
            rest = s.rsplit(")", 1)[1].split()
            table[int(name)] = (int(rest[1]), rest[0])
        except (OSError, IndexError, ValueError):
            continue
    return table


def _children_files(pid):
    """Direct children of every thread of `pid` (/proc/PID/task/TID/children, Linux 3.5+)."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
            out.extend(int(x) for x in f.read().split())
    return out


def _state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def descendants(root, exclude=()):
    """[(pid, state)] of every descendant of root, not entering the subtrees of
    `exclude`: through the children files when the kernel has them (cheap), else by
    scanning /proc."""
    try:
        out, stack = [], [root]
        while stack:
            p = stack.pop()
            try:
                kids = _children_files(p)
            except FileNotFoundError:
                if p == root:
                    raise
                kids = []
            for c in kids:
                if c in exclude:
                    continue
                out.append((c, _state(c)))
                stack.append(c)
        return out
    except OSError:
        pass
    table = proc_table()
    kids = {}
    for pid, (ppid, state) in table.items():
        kids.setdefault(ppid, []).append((pid, state))
    out, stack = [], [root]
    while stack:
        p = stack.pop()
        for c, state in kids.get(p, ()):
            if c in exclude:
                continue
            out.append((c, state))
            stack.append(c)
    return out


def reap_except(keep):
    """Reap dead children, but never a zygote's status (its owner waits for it)."""
    if not keep:
        reap()
        return
    for p, state in descendants(os.getpid(), keep):
        if state == "Z":
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass


def reap():
    while True:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            return


def kill_group(pid):
    """SIGKILL the candidate and its process group (it made itself a session leader)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def main():
    if "--probe" in sys.argv:
        probe()
        return
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        cfg = _loads(sys.argv[i + 1]) if i + 1 < len(sys.argv) else {}
        # requests and results travel on their own descriptors (cfg "fds", above 2:
        # bubblewrap's pid 1, visible to candidates, keeps only 0-2 open); stdout goes
        # to stderr so that anything printed during `import torch` cannot corrupt them
        rfd, wfd = cfg.get("fds") or (os.dup(0), os.dup(1))
        os.set_inheritable(rfd, False)
        os.set_inheritable(wfd, False)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        Worker(cfg, Channel(rfd, wfd)).run()
        return
    sys.stderr.write("usage: harness.py --probe | --worker CONFIG_JSON\n")
    sys.exit(2)


if __name__ == "__main__":
    main()
