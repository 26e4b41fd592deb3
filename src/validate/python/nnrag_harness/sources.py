# Sources of constructor arguments and forward inputs (src/validate/README.md
# "Constructor arguments and inputs"), behind one interface. A source has a `name` (the
# record's `argumentsSource`) and `plans(request)`, which yields Plans: (source, label,
# args, kwargs, witness) — constructor arguments, and the witness whose recorded inputs
# go with them (None: the inputs come from inputs.py). The sources, in the order
# validation tries them:
#
#   witness       what the repository's own model builds gave the class (harvest.py),
#                 decoded against the copy's names; tried first, smallest first
#                 (source_witness.py)
#   call-site     a call of the class found in the corpus, evaluated in its context
#                 (source_callsite.py)
#   config-table  an entry of the block module's configuration table (source_table.py)
#   guess         the constructor's own defaults, name / annotation heuristics
#                 (source_guess.py)
#
# candidates.arg_candidates orders the last three and refines their plans; the harness puts
# the witnesses in front (those without recorded inputs after the class's own defaults,
# call sites and tables). A candidate's label's first word names its source (source_of).
import collections
import inspect

from . import arguments

SOURCES = ("user", "witness", "call-site", "config-table", "guess")  # ArgumentsSource in types.ts
# the entry of a witness built from the user's --args / --input-shape (src/validate/user-inputs.ts)
USER_ENTRY = "user-supplied"


class Plan(collections.namedtuple("Plan", "source label args kwargs witness")):
    """One candidate construction: the source's name, a label (its first word names the
    source), positional and keyword arguments, and the witness record it came from."""

    __slots__ = ()

    def __new__(cls, source, label, args, kwargs, witness=None):
        return super().__new__(cls, source, label, list(args), dict(kwargs), witness)


class Request(object):
    """What a source plans from: the class and its module's globals, its constructor's
    parameters (None when it has no signature), the fillable and required ones, the
    common length of its sequence defaults, and the validation request's call sites, data
    sites (configuration tables) and data namespace, and `providers`: parameter -> a
    function building the module it takes (source_provider.module_providers)."""

    def __init__(
        self, cls, mod_globals, nn, call_sites=None, data_sites=None, data_ns=None, params=None, providers=None
    ):
        self.cls, self.mod_globals, self.nn = cls, mod_globals, nn
        self.providers = providers or {}
        self.call_sites, self.data_sites, self.data_ns = call_sites, data_sites, data_ns
        self.params = params
        ps = params or []
        self.fillable = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        self.required = [p for p in self.fillable if p.default is inspect.Parameter.empty]
        # the most common length of the sequences the signature defaults to (per-stage settings)
        lens = [len(p.default) for p in self.fillable if isinstance(p.default, (tuple, list)) and len(p.default) >= 2]
        self.seq_len = max(set(lens), key=lens.count) if lens else None


def request(cls, mod_globals, nn, call_sites=None, data_sites=None, data_ns=None, providers=None):
    """The Request for a class: its constructor's parameters read once."""
    return Request(cls, mod_globals, nn, call_sites, data_sites, data_ns, arguments.ctor_params(cls), providers)


def plans(req, sources):
    """Every plan of the sources, in their order."""
    for src in sources:
        for plan in src.plans(req):
            yield plan


DOC_SOURCES = ("test", "doctest", "readme", "example")
LABEL_SUFFIXES = (" expansion", " +layers", " seq")  # what candidates.arg_candidates appends


def _entry_of(label):
    origin = (label.split(" ", 2) + ["", ""])[2]
    for suf in LABEL_SUFFIXES:
        if origin.endswith(suf):
            origin = origin[: -len(suf)]
    return origin


def origin_of(label):
    """Where a witness from tests or documented examples came from: the test id, or the
    file and line ('witness 1 test:tests/x.py::t[1]' -> 'tests/x.py::t[1]'), else None."""
    if not label or not label.startswith("witness "):
        return None
    kind, _, rest = _entry_of(label).partition(":")
    return rest if kind in DOC_SOURCES and rest else None


def source_of(label):
    """The argument source of a candidate label ('call-site 2 guessed=1' -> 'call-site')."""
    if not label:
        return None
    head = label.split(" ", 1)[0]
    if head == "witness" and label.endswith(" " + USER_ENTRY):
        return "user"
    if head == "witness":
        if label.endswith(" seq"):
            return "guess"
        # a witness from the repository's tests or documented examples (harvest_docs):
        # its entry names the source ("test:tests/x.py::t[1]", "readme:README.md:40")
        return (origin_of(label) and _entry_of(label).split(":", 1)[0]) or "witness"
    if head == "call-site":
        return "call-site"
    if head == "config":
        return "config-table"
    return "guess"
