// PEP 508 requirements for the extern imports of a block, read from the validation
// environment: one Python process maps each top-level import name to the distribution that
// provides it (`importlib.metadata.packages_distributions()`, Python ≥ 3.10; older Pythons
// scan `top_level.txt` / RECORD of every distribution) and its installed version
// (`importlib.metadata.version()`), e.g. `torch` → `torch==1.13.1`, `PIL` → `Pillow==9.4.0`.
// Standard-library modules (`sys.stdlib_module_names`, `sys.builtin_module_names`) need no
// requirement. An import that no installed distribution provides becomes a bare requirement
// (its distribution name from a small table of well-known mismatches, else the import name).
//
// Versions: PEP 440 local version labels (`1.13.0a0+gitunknown` of a distro build) are
// dropped by default, because `==1.13.0a0` already matches the local build (PEP 440 "Version
// matching": a specifier without a local label ignores the candidate's local label) while a
// pinned `+gitunknown` would be satisfiable nowhere else.
import { execFile } from 'node:child_process';
import { NnragError } from '../util/errors.js';

export interface Requirement {
  /** the top-level import name (`torch` for `import torch.nn.functional as F`) */
  importName: string;
  stdlib: boolean;
  /** providing distribution(s) as installed; empty when not installed / stdlib */
  distributions: string[];
  /** installed version of the chosen distribution */
  version: string | null;
  /** PEP 508 requirement string; null for stdlib modules */
  pep508: string | null;
  /** why the requirement is less than exact, if it is */
  note?: string;
}

export interface RequirementOptions {
  /** interpreter of the validation environment (default /usr/bin/python3) */
  python?: string;
  /** keep PEP 440 local version labels (`+gitunknown`) */
  keepLocalVersion?: boolean;
  timeoutMs?: number;
}

/** Import names whose distribution is named differently: src/environment/names.ts. */
import { KNOWN_DISTRIBUTIONS, normalizeDistName } from './names.js';

// Runs in the validation environment; reads a JSON list of top-level names on stdin.
const PROBE = `
import sys, json
import importlib.metadata as md
names = json.load(sys.stdin)
stdlib = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
if not getattr(sys, "stdlib_module_names", None):
    # Python < 3.10: approximate the stdlib by the modules found under the stdlib directory
    import sysconfig, pkgutil
    std = sysconfig.get_paths()["stdlib"]
    stdlib |= {m.name for m in pkgutil.iter_modules([std])} | {"__future__"}
try:
    pd = md.packages_distributions()
except AttributeError:
    pd = {}
    for d in md.distributions():
        tops = (d.read_text("top_level.txt") or "").split()
        if not tops:
            tops = {str(f).split("/")[0].split(".")[0] for f in (d.files or []) if not str(f).startswith("..")}
        for t in tops:
            pd.setdefault(t, []).append(d.metadata["Name"])
out = {}
for n in names:
    if n in stdlib:
        out[n] = {"stdlib": True, "dists": []}
        continue
    dists = []
    for d in dict.fromkeys(pd.get(n, [])):
        try:
            dists.append([d, md.version(d)])
        except Exception:
            dists.append([d, None])
    try:
        import importlib.util
        found = importlib.util.find_spec(n) is not None
    except Exception:
        found = False
    out[n] = {"stdlib": False, "dists": dists, "found": found}
json.dump({"python": sys.version.split()[0], "names": out}, sys.stdout)
`;

/** Drop a PEP 440 local version label: `1.13.0a0+gitunknown` → `1.13.0a0`. */
export function publicVersion(v: string): string {
  const i = v.indexOf('+');
  return i < 0 ? v : v.slice(0, i);
}

/** Top-level import name of a module path (`torch.nn.functional` → `torch`); relative → null. */
export function topLevelName(module: string): string | null {
  if (!module || module.startsWith('.')) return null;
  return module.split('.')[0];
}

/** Run the probe in the validation environment. */
export function probeEnvironment(
  names: readonly string[],
  opts: RequirementOptions = {},
): Promise<{
  python: string;
  names: Record<string, { stdlib: boolean; dists: [string, string | null][]; found?: boolean }>;
}> {
  const python = opts.python ?? '/usr/bin/python3';
  return new Promise((resolve, reject) => {
    // -I: isolated mode (no PYTHON* variables, no user site, no script dir on sys.path)
    const child = execFile(
      python,
      ['-I', '-c', PROBE],
      {
        timeout: opts.timeoutMs ?? 60_000,
        maxBuffer: 16 << 20,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
      },
      (err, stdout, stderr) => {
        if (err) {
          reject(new NnragError(`cannot read installed distributions with ${python}: ${stderr.trim() || err.message}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(new NnragError(`unexpected output from ${python}: ${stdout.slice(0, 200)}`));
        }
      },
    );
    child.stdin?.end(JSON.stringify([...names]));
  });
}

/**
 * Requirements for the given import names (module paths are reduced to their top-level
 * name; duplicates merged; result sorted by import name).
 */
export async function resolveRequirements(
  imports: readonly string[],
  opts: RequirementOptions = {},
): Promise<Requirement[]> {
  const names = [...new Set(imports.map(topLevelName).filter((n): n is string => !!n))].sort();
  if (names.length === 0) return [];
  const probe = await probeEnvironment(names, opts);
  return names.map((importName) => {
    const info = probe.names[importName] ?? { stdlib: false, dists: [] };
    if (info.stdlib) return { importName, stdlib: true, distributions: [], version: null, pep508: null };
    const dists = info.dists;
    if (dists.length === 0) {
      const dist = KNOWN_DISTRIBUTIONS[importName] ?? importName;
      return {
        importName,
        stdlib: false,
        distributions: [],
        version: null,
        pep508: dist,
        note: 'not installed in the validation environment; version unknown',
      };
    }
    // several distributions can provide one top-level name (namespace packages): prefer the
    // one named like the import, else the first in name order, and say so
    const sorted = [...dists].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const chosen = sorted.find(([d]) => normalizeDistName(d) === normalizeDistName(importName)) ?? sorted[0];
    const [dist, version] = chosen;
    const v = version === null ? null : opts.keepLocalVersion ? version : publicVersion(version);
    const req: Requirement = {
      importName,
      stdlib: false,
      distributions: sorted.map(([d]) => d),
      version: v,
      pep508: v ? `${dist}==${v}` : dist,
    };
    if (sorted.length > 1) req.note = `provided by several distributions: ${req.distributions.join(', ')}`;
    if (!v) req.note = (req.note ? req.note + '; ' : '') + 'installed version unknown';
    return req;
  });
}

/** A PEP 440 public version's parts ("Version scheme": `[N!]N(.N)*[{a|b|rc}N][.postN][.devN]`,
 *  in any of the spellings "Normalization" allows: `1.0-rc.1`, `1.0alpha`, `1.0-1`, `v1.0`),
 *  the local label dropped; null for a text that is not one. */
interface Pep440 {
  epoch: number;
  release: number[];
  pre: ['a' | 'b' | 'rc', number] | null;
  post: number | null;
  dev: number | null;
}
const PEP440 =
  /^\s*v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?(?:-(\d+)|[-_.]?(post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?\s*$/i;
export function parsePep440(version: string): Pep440 | null {
  const m = PEP440.exec(version);
  if (!m) return null;
  const letter = m[3]?.toLowerCase();
  const pre: Pep440['pre'] = letter
    ? [letter === 'a' || letter === 'alpha' ? 'a' : letter === 'b' || letter === 'beta' ? 'b' : 'rc', Number(m[4] || 0)]
    : null;
  return {
    epoch: Number(m[1] ?? 0),
    release: m[2].split('.').map(Number),
    pre,
    post: m[5] !== undefined ? Number(m[5]) : m[6] !== undefined ? Number(m[7] || 0) : null,
    dev: m[8] !== undefined ? Number(m[9] || 0) : null,
  };
}

/** A requirement pip accepts that says what was tested: a lower bound at the installed
 *  version, `dist>=X.Y.Z` (PEP 440 "Version specifiers"). The bound must admit the tested
 *  version itself: a pre-release or development release keeps its label (mmengine's
 *  `0.11.0rc0` is `>=0.11.0rc0`; `>=0.11.0` would exclude it, since 0.11.0rc0 < 0.11.0,
 *  PEP 440 "Summary of permitted suffixes and relative ordering"). A post-release is
 *  bounded at its release (`2024.1.post1` → `>=2024.1`, which admits it) and a local label
 *  is dropped (`2.9.1+cpu` → `>=2.9.1`; local labels are not permitted in `>=`, and a
 *  distribution's own build such as Debian's `1.13.0a0+gitunknown` exists on no index).
 *  No upper bound: one at the tested series would downgrade the distribution in any newer
 *  project, and only a known break justifies one. A version that is not PEP 440 is
 *  bounded at its leading release segment; one without any gives the bare name. */
export function testedPin(dist: string, version: string | null): string {
  const v = version ? parsePep440(version) : null;
  if (v) {
    const epoch = v.epoch ? `${v.epoch}!` : '';
    const pre = v.pre ? `${v.pre[0]}${v.pre[1]}` : '';
    // a development release of a post-release (`1.0.post1.dev0`) sorts after 1.0: the
    // release bounds it
    const dev = v.dev !== null && v.post === null ? `.dev${v.dev}` : '';
    return `${dist}>=${epoch}${v.release.join('.')}${pre}${dev}`;
  }
  const m = version ? /^\s*v?(\d+(?:\.\d+)*)/.exec(version) : null;
  return m ? `${dist}>=${m[1]}` : dist;
}

/** Compare two versions in PEP 440's order ("Summary of permitted suffixes and relative
 *  ordering": `1.0.dev0 < 1.0a1 < 1.0rc0 < 1.0 < 1.0.post1`; trailing zeros of the release
 *  do not count; local labels ignored). Versions that are not PEP 440 are compared on
 *  their release segments (compareRelease). */
export function compareVersions(a: string, b: string): number {
  const va = parsePep440(a);
  const vb = parsePep440(b);
  if (!va || !vb) return compareRelease(a, b);
  if (va.epoch !== vb.epoch) return va.epoch - vb.epoch;
  const r = compareRelease(va.release.join('.'), vb.release.join('.'));
  if (r) return r;
  // a development release with no pre- or post-release sorts before any pre-release
  const preKey = (v: Pep440): [number, number] =>
    v.pre ? [['a', 'b', 'rc'].indexOf(v.pre[0]), v.pre[1]] : v.post === null && v.dev !== null ? [-1, 0] : [3, 0];
  const [pa, pb] = [preKey(va), preKey(vb)];
  if (pa[0] !== pb[0]) return pa[0] - pb[0];
  if (pa[1] !== pb[1]) return pa[1] - pb[1];
  const postKey = (v: Pep440) => (v.post === null ? -1 : v.post);
  if (postKey(va) !== postKey(vb)) return postKey(va) - postKey(vb);
  const devKey = (v: Pep440) => (v.dev === null ? Number.POSITIVE_INFINITY : v.dev);
  return devKey(va) === devKey(vb) ? 0 : devKey(va) < devKey(vb) ? -1 : 1;
}

/** The distribution name a PEP 508 requirement starts with (`mmcv>=2.0.0rc4` → `mmcv`), as
 *  written (compare with normalizeDistName), or null. */
export function requirementName(spec: string): string | null {
  return /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(spec)?.[1] ?? null;
}

/** The requirement lines with each distribution a slim module imports from (instead of
 *  copying its code: `emission.packages`, src/emit/slim/packages.ts) pinned to the very
 *  version whose files it was emitted and validated against, `dist==version` (PEP 440
 *  version matching): another release may hold other code under the same names. A line
 *  naming the distribution (PEP 503 comparison) is replaced, else the pin is added. */
export function pinImportedPackages(
  lines: readonly string[],
  packages: readonly { distribution: string; version: string }[],
): string[] {
  const out = [...lines];
  for (const p of packages) {
    const pin = `${p.distribution}==${p.version}`;
    const key = normalizeDistName(p.distribution);
    const i = out.findIndex((l) => {
      const name = requirementName(l);
      return !!name && normalizeDistName(name) === key;
    });
    if (i >= 0) out[i] = pin;
    else out.push(pin);
  }
  return out;
}

/** Compare two PEP 440 release segments (`2.6.0` < `2.10`); trailing zeros do not count. */
export function compareRelease(a: string, b: string): number {
  const pa = (/^\s*v?(\d+(?:\.\d+)*)/.exec(a)?.[1] ?? '0').split('.').map(Number);
  const pb = (/^\s*v?(\d+(?:\.\d+)*)/.exec(b)?.[1] ?? '0').split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d;
  }
  return 0;
}

/** Whether an installed version meets a PEP 508 requirement's version specifiers
 *  (`torch>=2.0,<3`; PEP 440 "Version specifiers": `==` (with a `.*` prefix match), `!=`,
 *  `<`, `<=`, `>`, `>=`, `~=`, `===`), compared on release segments (pre-, post- and local
 *  labels ignored: `1.13.0a0+gitunknown` is 1.13.0). A requirement without specifiers, or
 *  one nnrag cannot read (a URL, markers only), is met. */
export function meetsSpecifier(version: string, requirement: string): boolean {
  const body = requirement
    .replace(/;.*$/, '')
    .replace(/^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?/, '')
    .replace(/[()]/g, '')
    .trim();
  if (!body || body.startsWith('@')) return true;
  for (const clause of body.split(',')) {
    const m = /^\s*(===|==|!=|~=|<=|>=|<|>)\s*([^\s,]+)\s*$/.exec(clause);
    if (!m) continue;
    const [, op, want] = m;
    if ((op === '==' || op === '!=') && want.endsWith('.*')) {
      const prefix = want.slice(0, -2).split('.');
      const have = (/^\s*v?(\d+(?:\.\d+)*)/.exec(version)?.[1] ?? '').split('.');
      const same = prefix.every((p, i) => Number(p) === Number(have[i] ?? 0));
      if (same !== (op === '==')) return false;
      continue;
    }
    const c = compareRelease(version, want);
    const ok =
      op === '>='
        ? c >= 0
        : op === '>'
          ? c > 0
          : op === '<='
            ? c <= 0
            : op === '<'
              ? c < 0
              : op === '!='
                ? c !== 0
                : op === '~='
                  ? c >= 0 && compatibleUpper(version, want)
                  : c === 0;
    if (!ok) return false;
  }
  return true;
}

/** `~=X.Y.Z` also requires the same X.Y (PEP 440 "Compatible release"). */
function compatibleUpper(version: string, want: string): boolean {
  const w = want.split('.');
  const prefix = w.slice(0, Math.max(1, w.length - 1)).join('.');
  return meetsSpecifier(version, `x==${prefix}.*`);
}

/** De-duplicated, sorted PEP 508 lines (requirements.txt body) for some requirements. */
export function requirementLines(reqs: readonly Requirement[]): string[] {
  const lines = new Map<string, string>();
  for (const r of reqs) if (r.pep508) lines.set(normalizeDistName(r.pep508.split('==')[0]), r.pep508);
  return [...lines.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, l]) => l);
}
