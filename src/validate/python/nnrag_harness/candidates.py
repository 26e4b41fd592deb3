# Constructor candidates (src/validate/README.md "Constructor arguments and inputs"):
# arg_candidates orders the call-site, config-table and guess sources (source_*.py, one
# interface in sources.py) and refines their plans with arguments.py's helpers. Above the
# sources, which import arguments.py and sources.py.
import re

from . import source_callsite, source_guess, source_provider, source_table, sources
from .arguments import fit_rates, guess_value, is_wide_default


def arg_candidates(cls, call_sites, mod_globals, nn, data_sites=None, data_ns=None, providers=None):
    """Ordered, de-duplicated constructor candidates: (label, args, kwargs), from the
    sources of sources.py in their order: 1. the constructor's defaults, when every
    parameter has one; 2. call sites from the corpus; 3. configuration-table entries;
    4. name / annotation heuristics at a few widths (required parameters filled, and
    width-like parameters whose default is None); then the refinements below. Returns
    (candidates, why the heuristics could not fill a parameter, or None). `providers`:
    (witnesses of other repository classes by class id, resolver, torch), for the
    parameters that take a module of the repository (source_provider.py)."""
    req = sources.request(cls, mod_globals, nn, call_sites, data_sites, data_ns)
    if req.params is not None and req.required:
        # a parameter taking a module: built from another class's witness, else (annotated
        # with a class) from guessed arguments (source_provider.py)
        wits, resolve, torch = providers if providers else (None, None, None)
        if torch is None:
            import torch
        req.providers = source_provider.module_providers(req, wits, resolve, torch, nn)
    out, seen = [], set()

    def add(label, args, kwargs):
        kwargs = fit_rates(kwargs)
        key = repr((args, sorted(kwargs.items(), key=lambda kv: kv[0])))
        if key not in seen:
            seen.add(key)
            out.append((label, args, kwargs))
            return True
        return False

    if req.params is None:
        add("defaults", [], {})
        return out, None
    guess = source_guess.GuessSource()
    for src in (
        source_guess.DefaultsSource(),
        source_callsite.CallSiteSource(),
        source_table.ConfigTableSource(),
        guess,
    ):
        for plan in src.plans(req):
            add(plan.label, plan.args, plan.kwargs)
    fillable, required = req.fillable, req.required
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
    none_layers = [
        p
        for p in fillable
        if p.default is None and p.kind != p.POSITIONAL_ONLY and re.search(r"norm|act|layer$", p.name)
    ]
    if none_layers and out:
        label, a, kw = out[0]
        kw2 = dict(kw)
        for p in none_layers:
            kw2[p.name] = guess_value(p.name, p.annotation, 32, 4, nn)
        add(label + " +layers", a, kw2)
    if not required:
        # defaults failed or did not run forward: also try width-like parameters set
        for plan in source_guess.WidthsSource().plans(req):
            add(plan.label, plan.args, plan.kwargs)
        # a whole network whose defaults are wide (embed_dim=768): the same architecture
        # at small widths first, so building and running it fits the time limit
        if any(is_wide_default(p) for p in fillable):
            small = [c for c in out if c[0].startswith("widths")]
            out[:] = small + [c for c in out if not c[0].startswith("widths")]
    unguessable = guess.unguessable
    return out, (unguessable if not out or (required and unguessable) else None)
