# The config-table source of constructor arguments (sources.py): entries of the block
# module's configuration tables (module-level dicts and lists of settings, request
# dataSites) given as the one parameter that takes a configuration.
import ast
import inspect
import re

from . import arguments as A
from .sources import Plan


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
        nodes = [
            (ast.literal_eval(k) if isinstance(k, ast.Constant) else None, v)
            for k, v in zip(value.keys, value.values)
            if k is not None
        ]
    elif (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and not value.args
    ):
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


def is_config_param(p, g):
    """A required constructor parameter that takes a configuration: named like one
    (cfg, config, block_cfg) or annotated with a class of the module (cfg: RegNetCfg)."""
    if p.default is not inspect.Parameter.empty or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
        return False
    if A.CONFIG_NAMES.match(p.name) or re.search(r"cfg|config", p.name, re.I):
        return True
    return A.is_config_class(A.resolve_annotation(p.annotation, g))


class ConfigTableSource(object):
    """Plans from the module's configuration tables: each entry (up to three per table)
    as the constructor's one configuration parameter, its other required parameters
    guessed by name."""

    name = "config-table"

    def plans(self, req):
        cfg_params = [p for p in req.fillable if is_config_param(p, req.mod_globals)] if req.data_sites else []
        if len(cfg_params) != 1:
            return
        cp = cfg_params[0]
        for site in req.data_sites:
            for key, value in table_entries(site.get("text", ""), req.mod_globals):
                kwargs = {cp.name: value}
                try:
                    for p in req.required:
                        if p is not cp:
                            kwargs[p.name] = A.guess_value(
                                p.name, p.annotation, 32, 4, req.nn, req.mod_globals, req.seq_len
                            )
                except A.Unguessable:
                    continue
                yield Plan(self.name, "config %s[%r]" % (site.get("name"), key), [], kwargs)
