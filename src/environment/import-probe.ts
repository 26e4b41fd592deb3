// Version bounds a distribution enforces when it is imported but does not declare: mmdet
// asserts `mmcv>=2.0.0rc4,<2.2.0` in its __init__ while its metadata (Requires-Dist)
// names that range only under an extra, which no resolver applies. Such a bound cannot be
// known before the distribution's code runs, so after a group is installed its
// repositories' requirements are imported once, each in turn (one process, outside the
// sandbox: their builds ran outside it already), and an import that fails with a message
// naming a version specifier of another installed distribution that its installed
// version does not meet ("Please install mmcv>=2.0.0rc4, <2.2.0.", PEP 440 specifiers) is
// a constraint learnt from the package itself: the group is resolved again with it (as a
// requirement of the repositories that need the importing distribution). One message
// names no specifier but means one: NumPy 2's ABI error for an extension compiled against
// NumPy 1.x (numpy<2), and NumPy 2's error for a member of its main namespace that 2.0
// removed (`np.sctypes`, `np.float_`: numpy<2). What the packages declare comes first; this
// only adds what their own import insists on.
import { normalizeDistName } from './names.js';
import { meetsSpecifier } from './requirements.js';
import { runCmd } from './run.js';

/** The probe's version: results of an older probe are not reused (pypi.ts). */
export const PROBE_VERSION = 2;

/** An import of a distribution's top-level module that failed. */
export interface ImportFailure {
  distribution: string;
  module: string;
  /** the exception's type and message */
  error: string;
}

/** A bound learnt from an import: `requirement` (PEP 508, `mmcv>=2.0.0rc4,<2.2.0`) that
 *  the importing distribution (`by`, `mmdet==3.2.0`) enforces and the installed version
 *  (`installed`) does not meet. */
export interface ImportConstraint {
  requirement: string;
  distribution: string;
  by: string;
  installed: string;
  error: string;
}

// imports each distribution's top-level modules (top_level.txt, else the first part of its
// installed files) and its compiled extension modules in turn, printing one JSON line per failure as it comes (a later import
// that hangs or crashes the process loses nothing printed before it)
const PROBE = String.raw`
import sys, json, importlib, importlib.metadata as md, traceback
for name in json.loads(sys.argv[1]):
    try:
        d = md.distribution(name)
    except Exception:
        continue
    tops = (d.read_text("top_level.txt") or "").split()
    if not tops:
        tops = sorted({f.parts[0][:-3] if f.parts[0].endswith(".py") else f.parts[0]
                       for f in (d.files or []) if len(f.parts) and f.parts[0] != ".."
                       and not f.parts[0].endswith((".dist-info", ".data", ".pth", ".egg-info"))
                       and (f.suffix == ".py" and (len(f.parts) == 1 or f.parts[-1] == "__init__.py"))})
    mods = [m for m in tops if m.isidentifier() and not m.startswith("_") and m not in ("tests", "test", "docs", "examples")]
    # its compiled extension modules too (xtcocotools/_mask.*.so): where a binary
    # incompatibility shows, often not imported by the package's __init__
    for f in d.files or []:
        if f.suffix == ".so" and len(f.parts) > 1 and f.parts[0] in mods and all(p.isidentifier() for p in f.parts[:-1]):
            mods.append(".".join(f.parts[:-1] + (f.parts[-1].split(".")[0],)))
    for mod in mods:
        try:
            importlib.import_module(mod)
        except BaseException as e:
            print(json.dumps({"distribution": name, "module": mod, "error": type(e).__name__ + ": " + str(e)[:2000]}), flush=True)
`;

/** Import the top-level modules of `distributions` in a virtual environment's interpreter. */
export async function probeImports(
  python: string,
  distributions: string[],
  timeoutMs = 300_000,
): Promise<ImportFailure[]> {
  if (!distributions.length) return [];
  const r = await runCmd(python, ['-c', PROBE, JSON.stringify(distributions)], {
    cwd: '/',
    timeoutMs,
    env: { ...process.env, CUDA_VISIBLE_DEVICES: '', PYTHONDONTWRITEBYTECODE: '1', PYTHONPATH: '' },
  });
  const out: ImportFailure[] = [];
  for (const line of r.stdout.split('\n')) {
    try {
      const f = JSON.parse(line) as ImportFailure;
      if (f.distribution && f.module) out.push(f);
    } catch {
      /* not a line of ours: a module printing at import */
    }
  }
  return out;
}

/** The members of NumPy's main namespace that NumPy 2.0 removed (NEP 52, "Python API
 *  cleanup for NumPy 2.0"; the NumPy 2.0 migration guide, "Main namespace"): NumPy 2's own
 *  list, `numpy/_expired_attrs_2_0.py` (`__expired_attributes__`), whose `__getattr__`
 *  raises "`np.X` was removed in the NumPy 2.0 release." for each. */
export const NUMPY2_REMOVED = new Set([
  'DataSource',
  'Inf',
  'Infinity',
  'NINF',
  'NZERO',
  'NaN',
  'PINF',
  'PZERO',
  'add_docstring',
  'add_newdoc',
  'add_newdoc_ufunc',
  'alltrue',
  'asfarray',
  'byte_bounds',
  'cast',
  'cfloat',
  'clongfloat',
  'compare_chararrays',
  'complex_',
  'deprecate',
  'deprecate_with_doc',
  'fastCopyAndTranspose',
  'find_common_type',
  'float_',
  'format_parser',
  'get_array_wrap',
  'geterrobj',
  'infty',
  'issctype',
  'issubclass_',
  'issubsctype',
  'longcomplex',
  'longfloat',
  'lookfor',
  'mat',
  'maximum_sctype',
  'nbytes',
  'obj2sctype',
  'recfromcsv',
  'recfromtxt',
  'round_',
  'safe_eval',
  'sctype2char',
  'sctypes',
  'set_numeric_ops',
  'set_string_function',
  'seterrobj',
  'singlecomplex',
  'sometrue',
  'source',
  'string_',
  'tracemalloc_domain',
  'unicode_',
  'who',
]);

/** Whether an import error is NumPy 2's statement that the importing code needs NumPy 1:
 *  its own message for a removed member ("`np.sctypes` was removed in the NumPy 2.0
 *  release."), or Python's AttributeError for a member of the NumPy 2.0 removals
 *  ("module 'numpy' has no attribute 'float_'", as a NumPy without that message words
 *  it). Another missing attribute is not one: a typo, or a member removed later. */
export function numpy2Removal(error: string): boolean {
  if (/`np\.[A-Za-z_][A-Za-z0-9_]*` was removed in the NumPy 2\.0 release/.test(error)) return true;
  const m = /AttributeError: module 'numpy' has no attribute '([A-Za-z_][A-Za-z0-9_]*)'/.exec(error);
  return !!m && NUMPY2_REMOVED.has(m[1]);
}

/** The version specifiers an import error names for installed distributions (other than
 *  the importing one) that their installed versions do not meet. `installed`: PEP 503
 *  name → version. */
export function unmetBounds(
  failure: ImportFailure,
  installed: Map<string, string>,
): { distribution: string; requirement: string; installed: string }[] {
  const out: { distribution: string; requirement: string; installed: string }[] = [];
  const self = normalizeDistName(failure.distribution);
  // a name, then one or more PEP 440 clauses joined by commas: `mmcv>=2.0.0rc4, <2.2.0`
  const clause = String.raw`(?:===|==|!=|~=|<=|>=|<|>)\s*v?[0-9][A-Za-z0-9.*+!_-]*`;
  const re = new RegExp(
    String.raw`(?<![A-Za-z0-9._-])([A-Za-z][A-Za-z0-9._-]*)\s*(${clause}(?:\s*,\s*${clause})*)`,
    'g',
  );
  for (const m of failure.error.matchAll(re)) {
    const key = normalizeDistName(m[1]);
    const have = installed.get(key);
    if (!have || key === self) continue;
    const spec = m[2].replace(/\s+/g, '').replace(/(\d)[.,]+$/, '$1');
    const requirement = `${key}${spec}`;
    if (meetsSpecifier(have, requirement)) continue;
    if (!out.some((o) => o.requirement === requirement)) out.push({ distribution: key, requirement, installed: have });
  }
  // NumPy 2.0 changed its C ABI: an extension compiled against NumPy 1.x fails at import
  // under NumPy 2 ("numpy.dtype size changed, may indicate binary incompatibility", or
  // NumPy's own "A module that was compiled using NumPy 1.x cannot be run in NumPy 2");
  // NumPy 2.0 migration guide, "NumPy 2.0 ABI". The bound it needs is numpy<2.
  // A member of NumPy's main namespace that NumPy 2.0 removed (NEP 52; numpy2Removal) is
  // needed as well: numpy<2 (imgaug's `np.sctypes`).
  const numpy = installed.get('numpy');
  if (
    numpy &&
    !meetsSpecifier(numpy, 'numpy<2') &&
    self !== 'numpy' &&
    (/numpy\.dtype size changed, may indicate binary incompatibility|compiled using NumPy 1\.x cannot be run in\s+NumPy 2/.test(
      failure.error,
    ) ||
      numpy2Removal(failure.error)) &&
    !out.some((o) => o.distribution === 'numpy')
  )
    out.push({ distribution: 'numpy', requirement: 'numpy<2', installed: numpy });
  return out;
}
