# The witness source of constructor arguments and forward inputs (sources.py): what the
# repository's own model builds gave the class (harvest.py), decoded against the copy's
# names (copy_resolver) or, for equivalence, against the original's (original_resolver).
from . import values as V
from .sources import Plan


class WitnessSource(object):
    """Plans from the witnesses of a validation request: one per witness whose arguments
    decode (its recorded inputs, when it has them, go with it); `skipped` says why the
    others did not."""

    name = "witness"

    def __init__(self, witnesses, resolve, torch):
        self.witnesses, self.resolve, self.torch = witnesses, resolve, torch
        self.skipped = []

    def plans(self, req=None):
        out, self.skipped = witness_candidates(self.witnesses, self.resolve, self.torch)
        for label, a, kw, w in out:
            yield Plan(self.name, label, a, kw, w)


def copy_resolver(namespace, repo_tops, originals=None, copy_names=None):
    """Resolver for witnesses in the candidate's process: the copy's own definitions
    by qualified name (under the copy's name when the module renamed it, `copy_names`: a
    snippet.CopyNames); modules outside the repository (torch, functools) by import; a
    class of the repository the copy does not define (a module instance passed in, such
    as detr's encoder_layer) from the original modules already imported by the zygote
    (`originals`: name -> module, or a function of the name), like a forward input it is
    scaffolding, not part of the block. A name of the copy that is another definition
    (the block's module has its own `Gate`, the witness passed `norms.Gate`) is not
    taken for it when the original's one can be had."""
    tops = set(repo_tops or ())
    base = V.module_resolver(namespace, lambda m: m.split(".")[0] not in tops)

    def original(module, qualname):
        m = originals(module) if callable(originals) else (originals or {}).get(module)
        if m is None:
            return None
        obj = m
        for p in qualname.split("."):
            obj = getattr(obj, p, None)
            if obj is None:
                return None
        return obj

    def resolve(module, qualname):
        top, _, rest = qualname.partition(".")
        if copy_names is not None and module.split(".")[0] != "torch":
            renamed = copy_names.name_of(module, top)
            if renamed is not None and renamed != top and renamed in namespace:
                return base(module, renamed + ("." + rest if rest else ""))
            if top in namespace and copy_names.other(top, module, top):
                obj = original(module, qualname)
                if obj is not None:
                    return obj
        try:
            return base(module, qualname)
        except V.Unresolvable:
            obj = original(module, qualname)
            if obj is None:
                raise
            return obj

    return resolve


def original_resolver():
    """Resolver for the equivalence stage: every recorded object from its own module."""
    return V.module_resolver({}, lambda m: True)


def witness_candidates(witnesses, resolve, torch):
    """(label, args, kwargs, witness) per witness whose arguments decode, and the
    reasons of those that do not."""
    out, skipped = [], []
    from .harvest import no_downloads

    restore = no_downloads(torch) if witnesses else None
    try:
        _decode_all(witnesses, resolve, torch, out, skipped)
    finally:
        if restore is not None:
            restore()
    return out, skipped


def _decode_all(witnesses, resolve, torch, out, skipped):
    """Nested modules of a witness are rebuilt as the harvest built them: pretrained
    weights are not fetched (harvest.no_downloads)."""
    for i, w in enumerate(witnesses or ()):
        try:
            gen = torch.Generator().manual_seed(0)
            args = V.decode(w.get("args") or [], resolve, torch, gen)
            kwargs = {k: V.decode(v, resolve, torch, gen) for k, v in (w.get("kwargs") or {}).items()}
        except V.Unresolvable as e:
            skipped.append(str(e)[:200])
            continue
        except Exception as e:  # noqa: BLE001 - a witness that does not rebuild is skipped
            skipped.append("%s: %s" % (type(e).__name__, str(e)[:160]))
            continue
        label = "witness %d %s" % (i + 1, w.get("entry", ""))
        out.append((label, list(args), dict(kwargs), w))


def witness_inputs(w, resolve, torch, seed=1):
    """The forward inputs a witness recorded, as (args, kwargs), or None."""
    inp = w.get("inputs")
    if not inp:
        return None
    gen = torch.Generator().manual_seed(seed)
    args = V.decode(inp.get("args") or [], resolve, torch, gen)
    kwargs = {k: V.decode(v, resolve, torch, gen) for k, v in (inp.get("kwargs") or {}).items()}
    return list(args), kwargs
