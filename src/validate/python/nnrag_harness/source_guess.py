# The guess source of constructor arguments (sources.py): the constructor's own
# defaults (when every parameter has one), then name / annotation heuristics at a few
# widths, and for a class built from its defaults the width-like parameters set small.
import inspect

from . import arguments as A
from . import source_config as SC
from . import usage as U
from .sources import Plan


class DefaultsSource(object):
    """The constructor's defaults, when every parameter has one (tried before the call
    sites: the class as its author configured it)."""

    name = "guess"

    def plans(self, req):
        if req.params is None or not req.required:
            yield Plan(self.name, "defaults", [], {})


class GuessSource(object):
    """Required parameters (and width-like ones defaulting to None) guessed by name and
    annotation at each of arguments.CANDIDATE_WIDTHS (width d, heads h); a parameter taking a
    configuration object the module's code names (`isinstance(config, BertConfig)`)
    gets that class built small, then from its defaults (source_config.py); a parameter the
    constructor reads attributes of gets an instance of a repository class that has them,
    built from its witness (req.providers, source_provider.py), else a torch.nn instance
    that has them (duck typing); a parameter the constructor tests for membership in a
    table (usage.member_choices) gets one of the table's members. The next fitting
    providers follow, each in the first width's plan (the class may need more of the
    module than the attributes its code names).
    A parameter no rule fills ends the plans: `unguessable` says which."""

    name = "guess"

    def __init__(self):
        self.unguessable = None

    def plans(self, req):
        if req.params is None:
            return
        # parameters taking a configuration object the module's code names (source_config.py)
        try:
            configs = SC.config_params(req, req.nn)
        except Exception:  # noqa: BLE001 - reading the code is best effort
            configs = {}
        ducks = A.duck_modules(req.cls, req.required, req.nn)
        # parameters the class's code calls: a factory or a callable, never a number
        calls = U.called_params(req.cls)
        # parameters its constructor tests for membership in a table: one of its members
        try:
            members = U.member_choices(req.cls)
        except Exception:  # noqa: BLE001 - reading the code is best effort
            members = {}
        first = None  # the first width's plan: (d, h, posargs, kwargs)
        for d, h in A.CANDIDATE_WIDTHS:
            kwargs, posargs = {}, []
            try:
                for p in req.fillable:
                    if p.default is inspect.Parameter.empty and p.name in configs:
                        # `isinstance(config, BertConfig)`, `BertConfig.from_dict(config)`:
                        # that class built from its defaults, small first
                        v = self._config(configs[p.name], d, h, req)
                    elif p.default is inspect.Parameter.empty and p.name in req.providers:
                        # a module whose attributes the code reads: a repository class
                        # built from its own witness (source_provider.py)
                        v = req.providers[p.name][0]()
                    elif p.default is inspect.Parameter.empty and p.name in ducks:
                        v = ducks[p.name]()
                    elif p.default is inspect.Parameter.empty and p.name in members:
                        # `if depth not in self.arch_settings: raise KeyError(...)`
                        v = members[p.name]
                    elif p.default is inspect.Parameter.empty:
                        v = A.guess_value(
                            p.name, p.annotation, d, h, req.nn, req.mod_globals, req.seq_len, how=calls.get(p.name)
                        )
                        v = U.callable_value(v, calls.get(p.name), req.nn)
                    elif (
                        p.default is None and (A.DIM_WORDS.search(p.name) or A.OUT_DIM.search(p.name)) and req.required
                    ):
                        continue  # leave width-like Optional defaults alone while others are guessed
                    else:
                        continue
                    if p.kind == p.POSITIONAL_ONLY:
                        posargs.append(v)
                    else:
                        kwargs[p.name] = v
            except A.Unguessable as u:
                self.unguessable = str(u)
                return
            yield Plan(self.name, "heuristic d=%d h=%d" % (d, h), posargs, kwargs)
            if d == A.CANDIDATE_WIDTHS[0][0]:
                first = (d, h, posargs, kwargs)
            if configs and d == A.CANDIDATE_WIDTHS[0][0]:
                # the configuration objects from their defaults alone (the author's sizes)
                full = dict(kwargs)
                try:
                    for name, classes in configs.items():
                        if name in full:
                            full[name] = self._config(classes, d, h, req, small=False)
                except A.Unguessable:
                    continue
                yield Plan(self.name, "heuristic config defaults", posargs, full)

        if first is not None:
            yield from self._next_providers(req, *first)

    def _next_providers(self, req, d, h, posargs, kwargs):
        """The first width's plan again with the k-th fitting provider of each parameter
        that has one (k = 2, 3, ...; source_provider.module_providers): one that does not
        build or lacks an attribute is left out."""
        more = {n: bs[1:] for n, bs in req.providers.items() if len(bs) > 1 and n in kwargs}
        for k in range(max((len(bs) for bs in more.values()), default=0)):
            kw, changed = dict(kwargs), False
            for n, bs in more.items():
                if k < len(bs):
                    try:
                        kw[n] = bs[k]()
                        changed = True
                    except Exception:  # noqa: BLE001 - that provider is no candidate
                        pass
            if changed:
                yield Plan(self.name, "heuristic d=%d h=%d provider %d" % (d, h, k + 2), posargs, kw)

    @staticmethod
    def _config(classes, d, h, req, small=True):
        """The first configuration class of `classes` that builds (source_config.build)."""
        for c, form in classes:
            try:
                return SC.build(c, form, d, h, req.nn, req.mod_globals, small=small)
            except Exception:  # noqa: BLE001 - the next class
                continue
        raise A.Unguessable("a configuration object (%s)" % "/".join(c.__name__ for c, _ in classes))


class WidthsSource(object):
    """A class whose every parameter has a default, again with its width-like parameters
    (dims, output widths, heads) set to small values: its defaults failed or are too
    wide to run within the limits."""

    name = "guess"

    def plans(self, req):
        if req.params is None or req.required:
            return
        for d, h in A.CANDIDATE_WIDTHS[:2]:
            kwargs = {}
            for p in req.fillable:
                if (
                    p.kind != p.POSITIONAL_ONLY
                    and (A.DIM_WORDS.search(p.name) or A.OUT_DIM.search(p.name) or A.HEADS.match(p.name))
                    and not isinstance(p.default, bool)
                ):
                    try:
                        own = (
                            len(p.default)
                            if isinstance(p.default, (tuple, list)) and len(p.default) >= 2
                            else req.seq_len
                        )
                        kwargs[p.name] = A.guess_value(p.name, p.annotation, d, h, req.nn, req.mod_globals, own)
                    except A.Unguessable:
                        pass
            if kwargs:
                yield Plan(self.name, "widths d=%d h=%d" % (d, h), [], kwargs)
