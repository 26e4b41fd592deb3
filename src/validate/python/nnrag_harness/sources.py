# Sources of constructor arguments and forward inputs (src/validate/README.md
# "Constructor arguments and inputs"). Every candidate the harness tries is
# (label, args, kwargs); the label's first word names its source, which the record keeps
# as `argumentsSource`:
#
#   witness       what the repository's own model builds gave the class (harvest.py),
#                 decoded against the copy's names; tried first, smallest first
#   call-site     a call of the class found in the corpus, evaluated in its context
#   config-table  an entry of the block module's configuration table
#   guess         the constructor's own defaults, name / annotation heuristics
#
# This module holds the witness source and the label -> source rule; the others are in
# harness.py (arg_candidates).
from . import values as V

SOURCES = ("witness", "call-site", "config-table", "guess")  # ArgumentsSource in types.ts


def source_of(label):
    """The argument source of a candidate label ('call-site 2 guessed=1' -> 'call-site')."""
    if not label:
        return None
    head = label.split(" ", 1)[0]
    if head == "witness":
        return "guess" if label.endswith(" seq") else "witness"
    if head == "call-site":
        return "call-site"
    if head == "config":
        return "config-table"
    return "guess"


def copy_resolver(namespace, repo_tops, originals=None):
    """Resolver for witnesses in the candidate's process: the copy's own definitions
    by qualified name; modules outside the repository (torch, functools) by import; a
    class of the repository the copy does not define (a module instance passed in, such
    as detr's encoder_layer) from the original modules already imported by the zygote
    (`originals`: name -> module, or a function of the name), like a forward input it is
    scaffolding, not part of the block."""
    tops = set(repo_tops or ())
    base = V.module_resolver(namespace, lambda m: m.split(".")[0] not in tops)

    def resolve(module, qualname):
        try:
            return base(module, qualname)
        except V.Unresolvable:
            m = originals(module) if callable(originals) else (originals or {}).get(module)
            if m is None:
                raise
            obj = m
            for p in qualname.split("."):
                obj = getattr(obj, p, None)
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
