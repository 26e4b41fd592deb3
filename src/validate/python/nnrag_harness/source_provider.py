# Backbone parameters of the guess source (src/validate/README.md "Constructor arguments
# and inputs"): a required constructor parameter whose value the class's code uses as a
# module with attributes (a wrapper's `net`, a diffusion model's `model`: `net.attn_layers`,
# `model.channels`, read with ast by usage.attribute_reads), or whose annotation names an
# nn.Module class (PEP 484: an instance of it), gets an instance of a class of the same
# repository that has those attributes — set by its __init__ or a base's (`self.attr =
# ...`) or defined in its class body, a subclass of the annotated class — built from that
# class's own recorded witness (the request's `providers`: one witness per witnessed class
# of the repository, decoded like the witness source's); an annotated parameter no
# witness fits gets the annotated class or a concrete subclass built from guesses. The
# attributes read by name are what the class's code shows, not all it needs (an attribute
# of what a method returns: `base.get_classifier().weight`): the next fitting providers
# are further candidates, for a class that does not build or run with the first.
# Attribute access is duck typing (Language Reference 3.3.2, "Customizing attribute
# access"): any object with the attributes will do, so the rule names no repository.
import ast
import inspect

from . import arguments as A
from . import usage as U
from . import values as V

MAX_BUILDS = 3  # provider classes built per parameter before giving up


def _top(klass):
    return (getattr(klass, "__module__", None) or "").split(".")[0]


def _annotated_class(ann, mod_globals, nn):
    """The nn.Module class whose instance an annotation asks for (`conv: MessagePassing`,
    `Optional[Encoder]`: PEP 484, a class annotation means an instance of it; never
    `Type[C]`, the class object, arguments.class_annotation); a string annotation (PEP 563)
    is evaluated in the module's globals. nn.Module itself counts as no class (`net:
    Module`: any module)."""
    if isinstance(ann, str):
        ann = A.resolve_annotation(ann, mod_globals or {})
        if isinstance(ann, str):
            ann = (mod_globals or {}).get(ann.split(".")[-1])
    named = A.class_annotation(ann, nn)
    return named[1][0] if named and named[0] == "instance" else None


def wanted(req, nn):
    """{parameter: (attributes read, annotated class or None)} for the required parameters
    this rule fills: unannotated, annotated nn.Module, or annotated with (a Union /
    Optional of) an nn.Module class; read attributes that every nn.Module has
    (`parameters`, `training`) say nothing about the class and are left out. A parameter
    the class's code calls to build something (`block(inplanes, planes)`,
    usage.called_params) takes a class, not an instance, and is not this rule's."""
    reads = U.attribute_reads(req.cls)
    common = set(dir(nn.Module))
    factories = {p for p, how in U.called_params(req.cls).items() if how == "factory"}
    out = {}
    for p in req.required:
        ann = p.annotation
        cls = _annotated_class(ann, req.mod_globals, nn)
        if ann is not inspect.Parameter.empty and cls is None and ann not in (nn.Module, "Module", "nn.Module"):
            continue
        if p.name in factories:
            continue
        r = reads.get(p.name, set()) - common
        if r or cls is not None:
            out[p.name] = (r, cls)
    return out


def init_sets(klass):
    """Attributes a class's __init__, or a base's (outside torch), sets on self:
    `self.a = ...`, `self.a: T = ...`, `self.a += ...`, `self.a, self.b = ...`."""
    out = set()
    for c in getattr(klass, "__mro__", ()):
        if _top(c) in ("torch", "builtins"):
            continue
        _, node = U._function_node(vars(c).get("__init__"))
        if node is None:
            continue
        for n in ast.walk(node):
            targets = (
                n.targets
                if isinstance(n, ast.Assign)
                else [n.target]
                if isinstance(n, (ast.AnnAssign, ast.AugAssign))
                else []
            )
            stack = list(targets)
            while stack:
                t = stack.pop()
                if isinstance(t, (ast.Tuple, ast.List)):
                    stack.extend(t.elts)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out.add(t.attr)
    return out


def has_attributes(klass, reads):
    """Every attribute of `reads` set by the class's __init__ (or a base's) or defined in
    its class body."""
    if not reads:
        return True
    sets = init_sets(klass)
    return all(hasattr(klass, a) or a in sets for a in reads)


def _same_class(a, b):
    """`a` is `b` or a subclass of it, also across the copy and the original (the same
    qualified name: the copy keeps a class's name)."""
    return any(
        c is b or (c.__qualname__ == b.__qualname__ and "torch" not in (_top(b), _top(c)))
        for c in getattr(a, "__mro__", ())
    )


def candidates(reads, ann_cls, providers, resolve):
    """(class, witness) of the providers that fit: a subclass of the annotated class, or
    a class having every read attribute (its __init__ sets it, or its class defines it);
    the annotated class first, then those with recorded inputs (their forward ran), then
    the smallest (fewest parameters)."""
    out = []
    for cid, w in (providers or {}).items():
        module, _, qual = cid.rpartition(".")
        try:
            klass = resolve(module, qual)
        except Exception:  # noqa: BLE001 - a provider the copy cannot rebuild is no candidate
            continue
        if not isinstance(klass, type):
            continue
        if ann_cls is not None and not _same_class(klass, ann_cls):
            continue
        if not has_attributes(klass, reads):
            continue
        out.append((klass, w))
    out.sort(key=lambda kw: (not kw[1].get("inputs"), kw[1].get("params") or 0))
    return out


class NoFit(Exception):
    """A provider's instance lacks an attribute the class reads (set only on some paths)."""


def module_providers(req, providers, resolve, torch, nn):
    """{parameter: [builder, ...]}: zero-argument functions making a fresh instance of a
    fitting provider class from its witness. The first is the first fitting class that
    builds and has the attributes (checked on the instance: an __init__ may set one only
    on some paths); the others, up to MAX_BUILDS classes in all, are the fitting classes
    after it, checked when they are built (NoFit). A parameter annotated with a class that
    no witnessed provider fits gets an instance of that class or of a concrete subclass
    loaded in the process, built from guessed arguments and having the attributes
    (arguments.instance_of: the fewest required parameters first)."""
    out = {}
    for name, (reads, ann_cls) in wanted(req, nn).items():
        fits = candidates(reads, ann_cls, providers, resolve)[:MAX_BUILDS] if providers else []
        for klass, w in fits:
            if name in out:
                out[name].append(_builder(klass, w, reads, resolve, torch, check=True))
                continue
            build = _builder(klass, w, reads, resolve, torch)
            try:
                inst = build()
            except Exception:  # noqa: BLE001 - the next provider
                continue
            if all(hasattr(inst, a) for a in reads):
                out[name] = [build]
        if name in out or ann_cls is None:
            continue

        def guessed(ann_cls=ann_cls, reads=reads):
            return A.instance_of([ann_cls], 32, 4, nn, reads=reads, fits=lambda k: has_attributes(k, reads))

        try:
            guessed()
        except A.Unguessable:
            continue

        out[name] = [guessed]
    return out


def _builder(klass, w, reads, resolve, torch, check=False):
    """A function building a fresh instance of `klass` from its witness `w`; with `check`,
    raising NoFit when the instance lacks an attribute of `reads`."""

    def build():
        from .harvest import no_downloads

        restore = no_downloads(torch)  # built as the harvest built it: no weights fetched
        try:
            gen = torch.Generator().manual_seed(0)
            args = V.decode(w.get("args") or [], resolve, torch, gen)
            kwargs = {k: V.decode(v, resolve, torch, gen) for k, v in (w.get("kwargs") or {}).items()}
            # how it was built, for the usage line (values.BUILT)
            inst = V.record_built(klass(*args, **kwargs), klass, args, kwargs)
        finally:
            restore()
        if check and not all(hasattr(inst, a) for a in reads):
            raise NoFit(klass.__name__)
        return inst

    return build
