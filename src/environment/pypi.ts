// PyPI validation environments, built the way users build theirs: a virtual environment
// made with uv (https://docs.astral.sh/uv/) from a base interpreter the sandbox can read,
// torch 2.x and the requirements of the store's repositories resolved into a lock file
// (`uv pip compile`, pip's requirements format with exact pins), installed with
// `uv pip sync`, its bytecode compiled once everything is installed (the sandbox's file
// system is read-only; bytecode.ts shares it with the environments beside it),
// and the compiled operators of indexed repositories built once for the CPU against the
// environment's torch and cached as wheels.
//
// Layout of an environment folder DIR (`nnrag env create DIR`):
//   DIR/                     the shared virtual environment (DIR/bin/python)
//   DIR/nnrag-env.json       the manifest: groups, what each installs, what was reported
//   DIR/nnrag-lock.txt       the shared group's lock (its digest is part of the env id)
//   DIR/repos/<owner>__<name>/  a virtual environment of its own for a repository whose
//                            requirements do not resolve together with the others'
// Repositories whose requirements resolve together share DIR; each other one validates in
// the environment of its own universe (the repository and the indexed repositories its
// declared requirements name), and the manifest says which (`envFor`).
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NnragError } from '../util/errors.js';
import { unreachableForSandbox } from '../util/fs.js';
import { compileBytecode, donorEnvironments, sitePackagesOf, type BytecodeReport } from './bytecode.js';
import { runCmd } from './run.js';
import { normalizeDistName } from './names.js';
import { installableTree, type SourceTree } from './source-tree.js';
import { checkoutVersion } from './checkout-version.js';
import { meetsSpecifier, requirementName } from './requirements.js';
import { checkoutContentKey, DecisionCache, resolverIdentity } from './decisions.js';
import { indexState, STATE_MARGIN_MS } from './index-state.js';
import { PROBE_VERSION, probeImports, unmetBounds, type ImportConstraint, type ImportFailure } from './import-probe.js';
import {
  AS_OF_MARGIN_DAYS,
  asOfArgs,
  asOfHeader,
  asOfPlan,
  datedFailures,
  revisionDate,
  sourceOnlyPins,
  TORCH_FAMILY,
  type AsOfChoice,
  type AsOfContext,
  type AsOfPlan,
} from './as-of.js';

/** One requirement line of an environment, with why it is there. */
export interface EnvRequirement {
  /** PEP 508 requirement as given to the resolver */
  spec: string;
  /** repositories that declare or import it; `nnrag` for what validation itself needs */
  neededBy: string[];
  /** `name==version` of an indexed repository installed into the group from its checkout:
   *  resolved as that version (a wheel of its name and version only, never installed), so
   *  that a requirement of another version is a conflict, and left out of the lock */
  checkout?: boolean;
}

/** An indexed repository's distribution that a group takes from the index, at the
 *  version its repositories pin, because its checkout's version does not meet their pin
 *  (mmocr's `mmcv<2.2.0` against mmcv's checkout 2.2.0), or torch's family in a group
 *  without its repository (at the group's torch). Its checkout is then left off
 *  the sys.path of the group's originals: they import the installed version. */
export interface FromIndex {
  repo: string;
  distribution: string;
  version: string;
}

/** An indexed repository whose own build compiles C++ operators (a setup.py that builds
 *  torch.utils.cpp_extension extensions), built as a wheel for this environment. */
export interface NativeBuild {
  repo: string;
  /** folder of the setup.py (the repository root, or a nested package of operators) */
  dir: string;
  /** the wheel built and installed, when the build worked */
  wheel?: string;
  cached?: boolean;
  error?: string;
  /** the build failed because its operators need CUDA and this machine has no CUDA
   *  toolkit: a warning, not a failure of the environment (the blocks that call those
   *  operators fail validation as `native-extension` or `native-op-no-cpu`) */
  needsCuda?: boolean;
  seconds?: number;
  /** built from the index's source distribution of this version (`mmcv==2.1.0`), not from
   *  the repository's checkout: part of the wheel's cache key in place of the revision */
  source?: string;
}

/** An indexed repository installed into the environment from its checkout, because another
 *  repository declares it as a requirement (mmpretrain declares mmengine and mmcv): users
 *  have it installed, and the installed files are the indexed ones. */
export interface IndexedInstall {
  repo: string;
  distribution: string;
  root: string;
  /** installed from the whole tree at this revision, because the checkout is sparse */
  revision?: string;
  /** the checkout's revision when it was installed (with a digest of its changes) */
  checkout?: string;
  error?: string;
}

export interface EnvGroup {
  /** `shared`, or the repository a group of its own was made for */
  name: string;
  /** the virtual environment's folder */
  dir: string;
  repos: string[];
  requirements: EnvRequirement[];
  /** sha256 of the lock file's text */
  lockDigest: string;
  /** exact pins of the lock (`name==version`) */
  pins: string[];
  native: NativeBuild[];
  indexed: IndexedInstall[];
  /** when this group exists because the shared resolution failed: uv's reason */
  conflict?: string;
  /** indexed repositories' distributions installed from the index at another version */
  fromIndex?: FromIndex[];
  /** how its bytecode was made: shared from other environments or compiled */
  bytecode?: Omit<BytecodeReport, 'seconds'>;
  /** the dates its lock was resolved as of (as-of.ts; none with `--no-as-of`) */
  asOf?: GroupAsOf;
  /** imports of its repositories' requirements that failed once it was installed */
  importFailures?: ImportFailure[];
  /** the version of the probe that found them */
  importProbe?: number;
}

/** A version bound learnt from an import, and the repositories it was added to. */
export interface LearntConstraint extends ImportConstraint {
  repos: string[];
}

/** The dates of a group's resolution: uv's `--exclude-newer` for all, the distributions
 *  dated by the repositories that name them, those not dated, and those that fell back to
 *  the newest release, with why. */
export interface GroupAsOf {
  global?: string;
  dated: Record<string, string>;
  undated: string[];
  lifted: { distribution: string; reason: string }[];
}

export interface EnvManifestPyPI {
  version: 1;
  backend: 'pypi';
  created: string;
  updated: string;
  /** the base interpreter of every virtual environment */
  basePython: string;
  /** the torch requirement (`torch==2.6.*`, or `torch` for the newest) */
  torch: string;
  /** reuse the base interpreter's own torch (`--system-site-packages`) */
  systemTorch: boolean;
  /** what the resolution was dated by: the repositories' revisions (default), a date given
   *  with --as-of, or nothing (--no-as-of); absent in manifests from before it existed */
  asOf?: AsOfChoice;
  /** version bounds learnt from imports (import-probe.ts), applied as requirements */
  importConstraints?: LearntConstraint[];
  groups: EnvGroup[];
  /** imports no declared requirement or known name provides: never installed on a guess */
  unresolved: { module: string; candidates: string[]; neededBy: string[] }[];
}

/** What the store asks of an environment (commands/environment.ts builds it). */
export interface PyPINeeds {
  repos: {
    name: string;
    root: string;
    /** PEP 508 requirements the repository declares (install group, no markers dropped) */
    declared: string[];
    /** distributions its blocks import that it does not declare, when the name is known
     *  (installed metadata or the table of known mismatches) */
    imported: string[];
    /** top-level modules its blocks import that no requirement or known name provides */
    unknown: string[];
  }[];
  /** top-level module name → the indexed repository that provides it */
  indexed: Map<string, string>;
}

export interface PyPIOptions {
  /** base interpreter (default: the first of /usr/bin/python3, python3 the sandbox can read) */
  python?: string;
  /** `2.6` / `2.6.0` / a full specifier; default the newest stable */
  torch?: string;
  /** reuse the base interpreter's torch instead of installing one */
  systemTorch?: boolean;
  /** only uv's cache and local wheels */
  offline?: boolean;
  /** a folder of wheels (`--find-links`) */
  wheels?: string;
  /** extra requirements (`--packages`) */
  packages?: string[];
  /** build indexed repositories' compiled operators (default true) */
  native?: boolean;
  /** where built wheels are cached (default `<nnrag home>/wheels`) */
  wheelCache?: string;
  /** resolve as of the repositories' revisions (default, `revisions`), as of one date, or
   *  not dated (false); default what the environment was made with */
  asOf?: AsOfChoice;
  /** import the groups' requirements once installed and resolve again with the version
   *  bounds their imports enforce (import-probe.ts; default true) */
  probeImports?: boolean;
  /** where the decisions of earlier environments on this machine are kept and reused
   *  (decisions.ts; default `<nnrag home>/cache/env`); false: every one made afresh */
  decisions?: string | false;
  onLog?: (line: string) => void;
}

/** What validation itself needs in every environment: numpy (torch's tensors ↔ arrays),
 *  pytest (the test-suite witnesses collect with it). */
export const TOOL_REQUIREMENTS = ['numpy', 'pytest'];

/** nnrag's own folder for environments, tools and built wheels: NNRAG_HOME, else
 *  /var/lib/nnrag for root (the sandbox runs as uid 65534 there, which cannot enter
 *  /root), else ~/.local/share/nnrag. */
export function nnragHome(): string {
  if (process.env.NNRAG_HOME) return path.resolve(process.env.NNRAG_HOME);
  return machineHome();
}

/** nnrag's home when NNRAG_HOME names none: where scripts/setup.sh installs uv when the
 *  machine has none on PATH. */
function machineHome(): string {
  if (typeof process.getuid === 'function' && process.getuid() === 0) return '/var/lib/nnrag';
  return path.join(os.homedir(), '.local', 'share', 'nnrag');
}

/** The environment `scripts/setup.sh` builds and validation uses when none is named. */
export function defaultEnvDir(): string {
  return path.join(nnragHome(), 'envs', 'default');
}

/** The interpreter of a virtual environment folder. */
export function envPython(dir: string): string {
  return path.join(dir, 'bin', 'python');
}

/** uv: NNRAG_UV, else on PATH, else the copy setup.sh installs under nnrag's home
 *  (NNRAG_HOME's, then the machine's). */
export function findUv(): string | null {
  const cands = [
    process.env.NNRAG_UV,
    ...(process.env.PATH ?? '')
      .split(':')
      .filter(Boolean)
      .map((d) => path.join(d, 'uv')),
    path.join(nnragHome(), 'tools', 'bin', 'uv'),
    // the uv scripts/setup.sh installed is the machine's tool, whatever home NNRAG_HOME
    // names for the environments (a fresh home found no uv: "uv is not installed")
    path.join(machineHome(), 'tools', 'bin', 'uv'),
  ];
  for (const c of cands) {
    if (!c) continue;
    try {
      if (statSync(c).isFile()) return c;
    } catch {
      /* next */
    }
  }
  return null;
}

/** uv's environment: its cache where the user keeps it, no telemetry-like prompts. */
function uvEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, UV_NO_PROGRESS: '1', ...extra };
  delete env.VIRTUAL_ENV;
  return env;
}

/** The torch requirement for `--torch`: `2.6` → `torch==2.6.*`, `2.6.0` → `torch==2.6.0`,
 *  a specifier (`>=2.4`) as given, nothing → `torch` (the newest stable release). */
export function torchRequirement(v?: string): string {
  if (!v) return 'torch';
  if (/^[<>=!~]/.test(v)) return `torch${v}`;
  if (/^\d+\.\d+$/.test(v)) return `torch==${v}.*`;
  if (/^\d+\.\d+\.\d+([a-z0-9.+]*)?$/.test(v)) return `torch==${v}`;
  throw new NnragError(`--torch: ${JSON.stringify(v)} is not a torch version (e.g. 2.6 or 2.6.0)`);
}

/** A base interpreter the sandbox can run: the one given, else /usr/bin/python3, else the
 *  first python3 on PATH whose prefix the sandbox user can read. */
export function baseInterpreter(given?: string): string {
  const cands = given
    ? [given]
    : [
        '/usr/bin/python3',
        ...(process.env.PATH ?? '')
          .split(':')
          .filter(Boolean)
          .map((d) => path.join(d, 'python3')),
      ];
  for (const c of cands) {
    if (!existsSync(c)) continue;
    const real = realpathSync(c);
    if (!unreachableForSandbox(path.dirname(real))) return real;
    if (given)
      throw new NnragError(
        `--python ${given}: ${real} lies where the sandbox's user (uid 65534) cannot read it; give an interpreter under /usr or /opt`,
      );
  }
  throw new NnragError('no Python 3 interpreter found for the environment (install python3, or give --python)');
}

/** Folders of a repository holding a setup.py that builds C++ extensions with
 *  torch.utils.cpp_extension (the repository root first). Read as text, never run. */
export function nativeBuildDirs(root: string, maxDepth = 6): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    if (names.includes('setup.py')) {
      try {
        const text = readFileSync(path.join(dir, 'setup.py'), 'utf8');
        if (/\b(CppExtension|CUDAExtension|BuildExtension)\b/.test(text)) out.push(dir);
      } catch {
        /* unreadable */
      }
    }
    if (depth >= maxDepth) return;
    for (const n of names.sort()) {
      if (n.startsWith('.') || n === 'node_modules' || n === 'build' || n === 'dist') continue;
      const p = path.join(dir, n);
      try {
        if (statSync(p).isDirectory()) walk(p, depth + 1);
      } catch {
        /* gone */
      }
    }
  };
  walk(root, 0);
  return out;
}

/** A repository's distribution name as its packaging declares it (setup.py `name=`,
 *  setup.cfg `[metadata] name`, pyproject `[project] name`), read as text. */
export function declaredDistributionName(root: string): string | null {
  const read = (f: string) => {
    try {
      return readFileSync(path.join(root, f), 'utf8');
    } catch {
      return null;
    }
  };
  const pyproject = read('pyproject.toml');
  const m1 = pyproject && /^\[project\][^[]*?^name\s*=\s*["']([^"']+)["']/ms.exec(pyproject);
  if (m1) return m1[1];
  const cfg = read('setup.cfg');
  const m2 = cfg && /^\[metadata\][^[]*?^name\s*=\s*(\S+)/ms.exec(cfg);
  if (m2) return m2[1];
  const setup = read('setup.py');
  const m3 = setup && /\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']/.exec(setup);
  return m3 ? m3[1] : null;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The lock's exact pins (`name==version`, PEP 503 names), sorted. */
export function lockPins(lock: string): string[] {
  const out: string[] = [];
  for (const line of lock.split('\n')) {
    const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)/.exec(line.trim());
    if (m) out.push(`${normalizeDistName(m[1])}==${m[3]}`);
  }
  return out.sort();
}

export function manifestPath(dir: string): string {
  return path.join(dir, 'nnrag-env.json');
}

export function readPyPIManifest(dir: string): EnvManifestPyPI | null {
  try {
    const m = JSON.parse(readFileSync(manifestPath(dir), 'utf8')) as EnvManifestPyPI;
    return m.backend === 'pypi' ? m : null;
  } catch {
    return null;
  }
}

/** Which virtual environment of an environment folder validates a repository's blocks
 *  (the manifest read once): the group made for it (a group of its own is named for
 *  its repository), else the shared one. A group's `repos` also lists the indexed
 *  repositories it installs for its own repository (mmocr's group installs mmengine's
 *  checkout): that makes it the environment of neither, unless no other group lists the
 *  repository. */
export function envGroups(dir: string): (repo: string | undefined) => string {
  const own = new Map<string, string>();
  const shared = new Set<string>();
  const installedBy = new Map<string, string>();
  for (const g of readPyPIManifest(dir)?.groups ?? []) {
    if (g.name === 'shared') for (const r of g.repos) shared.add(r);
    else {
      own.set(g.name, g.dir);
      for (const r of g.repos) if (!installedBy.has(r)) installedBy.set(r, g.dir);
    }
  }
  return (repo) => {
    if (!repo) return dir;
    return own.get(repo) ?? (shared.has(repo) ? dir : (installedBy.get(repo) ?? dir));
  };
}

/** The indexed repositories that the group of an environment folder (the shared one, or
 *  `repos/<name>` of its own) installs from the index at another version than their
 *  checkouts' (EnvGroup.fromIndex), read from the manifest once per folder. */
const fromIndexMemo = new Map<string, Set<string>>();
export function fromIndexRepos(groupDir: string): Set<string> {
  const dir = path.resolve(groupDir);
  let out = fromIndexMemo.get(dir);
  if (out) return out;
  out = new Set();
  for (const top of [dir, path.dirname(path.dirname(dir))]) {
    const g = readPyPIManifest(top)?.groups.find((x) => path.resolve(x.dir) === dir);
    if (g) {
      for (const f of g.fromIndex ?? []) out.add(f.repo);
      break;
    }
  }
  fromIndexMemo.set(dir, out);
  return out;
}

/** The virtual environment that validates one repository's blocks (envGroups). */
export function envFor(dir: string, repo: string | undefined): string {
  return envGroups(dir)(repo);
}

/** The lock digest of a virtual environment made by nnrag (null for any other). */
export function lockDigestOf(prefix: string): string | null {
  try {
    return sha256(readFileSync(path.join(prefix, 'nnrag-lock.txt'), 'utf8')).slice(0, 16);
  } catch {
    return null;
  }
}

/** An `--env` query as the environments' labels name it: a folder holding a PyPI
 *  environment nnrag made is named by its lock in records (validate/pool.ts
 *  environmentFactsOf: `PyPI environment, lock <digest> (…)`), so such a folder is asked
 *  for as `lock <digest>`; any other query as it is. */
export function environmentQuery(query: string): string {
  const lock = query.includes('/') ? lockDigestOf(path.resolve(query)) : null;
  return lock ? `lock ${lock}` : query;
}

/** The requirements of a group: torch, the tools, the repositories' declared and known
 *  imported requirements, minus what an indexed repository provides (it is put on the
 *  path or installed from its checkout instead), except torch's family in a group without
 *  its repository (fromIndexFamily: from the index, at the group's torch). */
export function groupRequirements(
  needs: PyPINeeds,
  repos: string[],
  torch: string,
  extra: string[],
  systemTorch: boolean,
): EnvRequirement[] {
  const byKey = new Map<string, EnvRequirement>();
  const add = (given: string, by: string, checkout = false) => {
    // a requirements-file line may carry pip's per-requirement options after the PEP 508
    // part (`xtcocotools --no-binary xtcocotools`, `--hash=…`): the resolver takes the
    // requirement alone
    const spec = given.replace(/\s+--?[a-z].*$/i, '').trim();
    const name = requirementName(spec);
    if (!name) return;
    const key = normalizeDistName(name);
    if (systemTorch && key === 'torch') return;
    // every distinct specifier is a line of its own: the resolver intersects them, so two
    // repositories that pin one distribution differently do not resolve together
    const line = `${checkout ? 'checkout ' : ''}${key} ${spec.slice(spec.indexOf(name) + name.length).replace(/\s+/g, '')}`;
    const r = byKey.get(line);
    if (r) {
      if (!r.neededBy.includes(by)) r.neededBy.push(by);
      return;
    }
    byKey.set(line, { spec, neededBy: [by], ...(checkout ? { checkout } : {}) });
  };
  if (!systemTorch) add(torch, 'nnrag');
  for (const t of TOOL_REQUIREMENTS) add(t, 'nnrag');
  for (const p of extra) add(p, 'nnrag');
  const indexedDists = indexedDistributions(needs);
  // the indexed repositories installed from their checkouts, each at its checkout's version
  const pinned = checkoutPins(needs, repos);
  for (const c of pinned.values()) add(`${c.distribution}==${c.version}`, c.repo, true);
  for (const r of needs.repos.filter((x) => repos.includes(x.name))) {
    for (const d of r.declared) {
      const name = requirementName(d);
      const hit = name ? indexedDists.get(normalizeDistName(name)) : undefined;
      if (!hit || hit.repo === r.name || !packaged(hit.root)) continue;
      // a declared requirement of an indexed repository: against its checkout's version
      // when the group has the checkout (the resolver intersects them), else from the
      // index (the checkout's version does not meet it); a checkout whose version cannot
      // be read is taken as it is
      if (pinned.has(normalizeDistName(name!)) || !repos.includes(hit.repo)) add(d, r.name);
    }
    for (const d of [...r.declared, ...r.imported]) {
      const name = requirementName(d);
      if (!name) continue;
      const key = normalizeDistName(name);
      // torch is the environment's: a repository's torch pin does not choose it (its
      // declared range is checked by doctor), but its torchvision follows torch
      if (key === 'torch') continue;
      const hit = indexedDists.get(key);
      if (hit && !(fromIndexFamily(key, systemTorch) && !repos.includes(hit.repo))) continue;
      add(d, r.name);
    }
  }
  return [...byKey.values()];
}

/** Whether a distribution is of torch's family other than torch (torchvision,
 *  torchaudio), which a group that does not hold its indexed repository takes from the
 *  index: the release that requires the group's torch (each of their releases pins the
 *  torch it was built with), whose compiled operators match that torch, as PyTorch's
 *  install command gives them (`pip install torch torchvision`). A checkout of the family
 *  is another build (another torch, or none of its operators built). With the base
 *  interpreter's torch (systemTorch), the family is the interpreter's too. */
function fromIndexFamily(key: string, systemTorch: boolean): boolean {
  return !systemTorch && key !== 'torch' && TORCH_FAMILY.includes(key);
}

/** PEP 503 names of the distributions the store's indexed repositories are (read from
 *  their packaging files once per `needs`). */
const distsOf = new WeakMap<PyPINeeds, Map<string, { repo: string; root: string; name: string }>>();
function indexedDistributions(needs: PyPINeeds): Map<string, { repo: string; root: string; name: string }> {
  const known = distsOf.get(needs);
  if (known) return known;
  const out = new Map<string, { repo: string; root: string; name: string }>();
  distsOf.set(needs, out);
  for (const r of needs.repos) {
    const name = declaredDistributionName(r.root);
    if (name) out.set(normalizeDistName(name), { repo: r.name, root: r.root, name });
  }
  // an import name that is a top-level module of an indexed repository is that repository
  for (const [mod, repo] of needs.indexed) {
    const r = needs.repos.find((x) => x.name === repo);
    if (r && !out.has(normalizeDistName(mod))) out.set(normalizeDistName(mod), { repo, root: r.root, name: mod });
  }
  return out;
}

/** A checkout with packaging files; one without (sources only) cannot be installed: it
 *  stays on the path. */
function packaged(root: string): boolean {
  return ['setup.py', 'pyproject.toml', 'setup.cfg'].some((f) => existsSync(path.join(root, f)));
}

/** The indexed repositories installed into a group from their checkouts (without their
 *  dependencies: those are in the lock): those its repositories declare as requirements,
 *  and each repository itself when it is a package named for its distribution (PEP 503
 *  names: mmpretrain's `mmpretrain`, pytorch_geometric's `torch_geometric` as
 *  torch-geometric). Such a repository's code imports its own package at run time (a
 *  registry importing the modules of its scope, a function importing a sibling module,
 *  `import pkg.sub as sub`), and its users have it installed (`pip install .`), so its
 *  environment does too. A repository whose setup.py compiles operators at its root is
 *  installed by that build instead (buildNative), and a flat checkout of scripts
 *  (top-level `models/`, `utils/`) is not its distribution's package: it stays on the path. */
export function indexedInstalls(needs: PyPINeeds, repos: string[]): IndexedInstall[] {
  const dists = indexedDistributions(needs);
  const out = new Map<string, IndexedInstall>();
  for (const r of needs.repos.filter((x) => repos.includes(x.name))) {
    for (const d of r.declared) {
      const name = requirementName(d);
      const hit = name ? dists.get(normalizeDistName(name)) : undefined;
      // a checkout whose version does not meet every requirement the repository declares
      // of it (mmpose's `mmcv>=2.0.0,<3.0.0` and a learnt `mmcv<2.2.0`) is not installed:
      // the version they pin comes from the index (groupRequirements)
      const all = r.declared.filter((x) => normalizeDistName(requirementName(x) ?? '') === normalizeDistName(name!));
      if (
        hit &&
        packaged(hit.root) &&
        hit.repo !== r.name &&
        !out.has(hit.repo) &&
        all.every((x) => checkoutMeets(hit, x))
      )
        out.set(hit.repo, { repo: hit.repo, distribution: hit.name, root: hit.root });
    }
    const own = ownInstall(needs, r);
    if (own && !out.has(own.repo)) out.set(own.repo, own);
  }
  return [...out.values()];
}

/** The version a checkout's build gives its distribution (checkout-version.ts), once per
 *  folder and process. */
const versions = new Map<string, string | null>();
function versionOf(root: string, distribution: string): string | null {
  const key = `${root}\0${distribution}`;
  if (!versions.has(key)) versions.set(key, checkoutVersion(root, distribution));
  return versions.get(key)!;
}

/** Whether an indexed repository's checkout meets a requirement of it (PEP 440 version
 *  specifiers; a version that cannot be read meets every requirement). */
function checkoutMeets(hit: { root: string; name: string }, requirement: string): boolean {
  const v = versionOf(hit.root, hit.name);
  return !v || meetsSpecifier(v, requirement);
}

/** The indexed repositories of a group that are distributions (packaging files naming
 *  them), by PEP 503 name, with their checkouts' versions: each is resolved as
 *  `name==version` with the group's other requirements. The group installs them from their
 *  checkouts (those its repositories declare, packages named for their distribution, a
 *  root setup.py building operators) or validates their blocks from them: either way that
 *  checkout is the version the group has. */
export function checkoutPins(
  needs: PyPINeeds,
  repos: string[],
): Map<string, { repo: string; distribution: string; version: string }> {
  const out = new Map<string, { repo: string; distribution: string; version: string }>();
  const put = (repo: string, distribution: string, root: string) => {
    const version = versionOf(root, distribution);
    if (version) out.set(normalizeDistName(distribution), { repo, distribution, version });
  };
  for (const x of indexedInstalls(needs, repos)) put(x.repo, x.distribution, x.root);
  for (const r of needs.repos.filter((x) => repos.includes(x.name))) {
    const name = r.root && packaged(r.root) ? declaredDistributionName(r.root) : null;
    if (name && !out.has(normalizeDistName(name))) put(r.name, name, r.root);
  }
  return out;
}

/** The repository itself as an install from its checkout, when it is a package named for
 *  its distribution and no build of its compiled operators installs it. */
function ownInstall(needs: PyPINeeds, r: PyPINeeds['repos'][number]): IndexedInstall | null {
  if (!r.root || !packaged(r.root)) return null;
  const name = declaredDistributionName(r.root);
  if (!name) return null;
  const key = normalizeDistName(name);
  const named = [...needs.indexed].some(([mod, repo]) => repo === r.name && normalizeDistName(mod) === key);
  if (!named || nativeBuildDirs(r.root, 0).length) return null;
  return { repo: r.name, distribution: name, root: r.root };
}

/** Whether a distribution is installed in a virtual environment (a `<name>-<version>
 *  .dist-info` folder, PEP 503 names compared). */
function distInstalled(env: string, distribution: string): boolean {
  const want = normalizeDistName(distribution);
  return sitePackagesOf(env).some((site) => {
    try {
      return readdirSync(site).some(
        (d) => d.endsWith('.dist-info') && normalizeDistName(d.replace(/-[^-]*\.dist-info$/, '')) === want,
      );
    } catch {
      return false;
    }
  });
}

/** The repositories whose operator build at their root installed them whole (the wheel
 *  of a setup.py at the repository's root is the repository's distribution). */
function installedByBuild(needs: PyPINeeds, native: NativeBuild[]): Set<string> {
  const out = new Set<string>();
  for (const b of native) {
    const root = needs.repos.find((r) => r.name === b.repo)?.root;
    if (b.wheel && root && path.resolve(b.dir) === path.resolve(root)) out.add(b.repo);
  }
  return out;
}

/** The universe of a repository in the store: itself and the indexed repositories it
 *  declares (transitively). */
function universe(needs: PyPINeeds, repo: string): string[] {
  const out = [repo];
  for (let i = 0; i < out.length; i++)
    for (const x of indexedInstalls(needs, [out[i]])) if (!out.includes(x.repo)) out.push(x.repo);
  return out;
}

/** The repositories a resolver's error names: those with a requirement of their own (not
 *  torch, not the tools every environment has) whose distribution name appears in the
 *  error as a word (`poseval` in "unable to access 'https://github.com/…/poseval.git/'"). */
export function blamedRepos(needs: PyPINeeds, repos: string[], error: string): string[] {
  const common = new Set(['torch', ...TOOL_REQUIREMENTS].map(normalizeDistName));
  const text = error.toLowerCase();
  const named = (name: string) => {
    const forms = new Set([name.toLowerCase(), normalizeDistName(name), normalizeDistName(name).replace(/-/g, '_')]);
    return [...forms].some((f) => new RegExp(`(^|[^a-z0-9_.-])${f.replace(/[.]/g, '\\.')}($|[^a-z0-9_-])`).test(text));
  };
  return repos.filter((r) => {
    const x = needs.repos.find((y) => y.name === r);
    if (!x) return false;
    return [...x.declared, ...x.imported].some((d) => {
      const name = requirementName(d);
      return !!name && !common.has(normalizeDistName(name)) && named(name);
    });
  });
}

/** How a resolution is dated (as-of.ts): `plain` not at all (torch's own requirements),
 *  `dated` by the revisions, `final` dated and checked for releases of their date that
 *  would be built from source here (a group's lock, before it is installed). */
type CompileMode = 'plain' | 'dated' | 'final';

/** The resolution dates of one `env create`/`env sync` (kept per options object, like the
 *  build fixes). */
const asOfOf = new WeakMap<PyPIOptions, AsOfContext>();

/** The resolutions that worked in one `env create`/`env sync` pass, by their input. */
const resolvedOf = new WeakMap<PyPIOptions, Map<string, Awaited<ReturnType<typeof runCmd>>>>();

/** The decisions of earlier environments (decisions.ts) and the resolver's identity, per
 *  `env create`/`env sync` (its options object). */
const reuseOf = new WeakMap<PyPIOptions, { cache: DecisionCache; machine: unknown }>();

/** What one resolution found, kept for the next resolution of the same input: the
 *  distributions that fell back to the newest release (in the order found, with why), the
 *  digest of uv's output when it resolved, and whether that output was checked for
 *  releases without a wheel here (`final`). */
interface ResolveDecision {
  lifted: [string, string][];
  lockDigest?: string;
  wheelsChecked?: boolean;
  /** uv's answer (the lock without nnrag's header), kept with the state of the index
   *  (index-state.ts) of the distributions it did not date, as of `stateBefore` */
  output?: string;
  undated?: string[];
  stateBefore?: number;
  state?: string;
}

/** How the repositories of one input were grouped: the shared group, those with a group of
 *  their own (and the resolver's reason), the fallbacks, undated distributions and build
 *  fixes known once the groups were found (in the order found), and what was logged on
 *  the way: the state the resolutions after the grouping start from. */
interface GroupsDecision {
  shared: string[];
  own: { repo: string; conflict: string }[];
  lifted: [string, string][];
  /** the distributions never dated once the groups were found (asOfPlan adds the
   *  checkouts of each resolution it plans: the later plans depend on them) */
  exempt: string[];
  fixes: { legacy: boolean; extra: [string, string[]][] };
  log: string[];
}

const AS_OF_MARGIN_MS = AS_OF_MARGIN_DAYS * 86_400_000;

/** The bounds the passes of an earlier environment learnt, and the pass it ended with. */
interface BoundsDecision {
  bounds: LearntConstraint[];
  pass: number;
}

/** Passes of resolve, install and import at most: the bounds the first import teaches can
 *  change a group (mmpose's gets a group of its own with mmcv<2.2.0), whose import then
 *  teaches another (its xtcocotools: numpy<2). */
export const IMPORT_PASSES = 3;

/** The store's needs as key material (decisions.ts): each repository's requirements, its
 *  packaging as read here (distribution name, version, operators to build), and with
 *  `content` the content of its checkout (installed and imported by the probe); null when
 *  a checkout's content cannot be named (outside git). */
async function needsMaterial(n: PyPINeeds, content: boolean, opts: PyPIOptions): Promise<unknown> {
  const repos: unknown[] = [];
  for (const r of n.repos) {
    const name = r.root && packaged(r.root) ? declaredDistributionName(r.root) : null;
    const item: unknown[] = [
      r.name,
      r.declared,
      r.imported,
      r.unknown,
      name,
      name ? versionOf(r.root, name) : null,
      nativeDirsOf(r.root, opts),
    ];
    if (content) {
      const c = await contentOf(r.root, opts);
      if (!c) return null;
      item.push(c);
    }
    repos.push(item);
  }
  return [repos, [...n.indexed].sort(([a], [b]) => a.localeCompare(b))];
}

/** The folders of a checkout's operator builds (nativeBuildDirs, relative), once per folder
 *  and `env create`/`env sync` (nextPass): a walk of the whole checkout. */
const nativeDirsMemo = new WeakMap<PyPIOptions, Map<string, string[]>>();
function nativeDirsOf(root: string, opts: PyPIOptions): string[] {
  let m = nativeDirsMemo.get(opts);
  if (!m) nativeDirsMemo.set(opts, (m = new Map()));
  let d = m.get(root);
  if (!d) m.set(root, (d = nativeBuildDirs(root).map((x) => path.relative(root, x))));
  return d;
}

/** The options of the next pass of one `env create`/`env sync`: what a pass decides (the
 *  fallbacks, the uv answers of its inputs) is its own, but the checkouts are read once for
 *  all passes (their content and operator folders do not change while nnrag runs). */
function nextPass(opts: PyPIOptions): PyPIOptions {
  const next = { ...opts };
  if (!contentsOf.has(opts)) contentsOf.set(opts, new Map());
  if (!nativeDirsMemo.has(opts)) nativeDirsMemo.set(opts, new Map());
  contentsOf.set(next, contentsOf.get(opts)!);
  nativeDirsMemo.set(next, nativeDirsMemo.get(opts)!);
  return next;
}

/** checkoutContentKey once per folder and `env create`/`env sync` (all its passes). */
const contentsOf = new WeakMap<PyPIOptions, Map<string, Promise<string | null>>>();
function contentOf(root: string, opts: PyPIOptions): Promise<string | null> {
  let m = contentsOf.get(opts);
  if (!m) contentsOf.set(opts, (m = new Map()));
  let c = m.get(root);
  if (!c) m.set(root, (c = checkoutContentKey(root)));
  return c;
}

/** Resolve requirements into a lock with `uv pip compile` (no install). Dated (as-of.ts):
 *  a distribution the resolver reports it filtered by date so that nothing resolves, or
 *  failed to build at the release of its date, and (`final`) one whose release of its
 *  date has no wheel for this interpreter, is resolved again without its date, and why is
 *  kept in the context. The lock's header names the dates. */
async function compile(
  uv: string,
  python: string,
  reqs: EnvRequirement[],
  opts: PyPIOptions,
  workDir: string,
  mode: CompileMode = 'dated',
): Promise<{ lock: string; plan: AsOfPlan } | { error: string }> {
  mkdirSync(workDir, { recursive: true });
  const input = path.join(workDir, 'requirements.in');
  // a checkout's pin is a wheel of its name and version only (PEP 427: METADATA, WHEEL,
  // RECORD), given by path (PEP 508 direct reference): the resolver meets every other
  // requirement of that distribution against exactly that version, and fetches nothing
  const stubs: string[] = [];
  const lines: string[] = [];
  for (const r of reqs) {
    if (!r.checkout) {
      lines.push(r.spec);
      continue;
    }
    const [name, version] = r.spec.split('==');
    const wheel = await checkoutWheel(python, path.join(workDir, 'checkouts'), name, version);
    lines.push(`${name} @ file://${wheel}`);
    stubs.push(name);
  }
  writeFileSync(input, lines.join('\n') + '\n');
  const args = [
    'pip',
    'compile',
    input,
    '--python',
    python,
    '--quiet',
    '--no-header',
    '--annotation-style',
    'line',
    '--python-platform',
    'linux',
  ];
  for (const s of stubs) args.push('--no-emit-package', s);
  if (opts.offline) args.push('--offline');
  if (opts.wheels) args.push('--find-links', opts.wheels);
  const ctx = mode === 'plain' ? undefined : asOfOf.get(opts);
  const named = reqs.map((r) => ({ ...r, name: requirementName(r.spec) }));
  const log = opts.onLog ?? (() => {});
  const lift = (key: string, why: string) => {
    ctx!.lifted.set(key, why);
    learnt.push([key, why]);
    log(`  ${key}: ${why}`);
  };
  // the fallbacks an earlier resolution of exactly this input found (decisions.ts), taken
  // at once: the rounds that found them are not run again, and the plan they give is the
  // one those rounds reached. The key: the input lines (a checkout's stand-in by its name
  // and version), the options, the dates as planned now (the fallbacks so far among them),
  // the build fixes known, the mode, and the resolver's identity
  const reuse = reuseOf.get(opts);
  const learnt: [string, string][] = [];
  const fixesAt = buildFixesOf.get(opts);
  const key = reuse
    ? reuse.cache.key('resolve', [
        reuse.machine,
        mode,
        reqs.map((r) => [r.spec, !!r.checkout]),
        ctx ? asOfArgs(asOfPlan(named, ctx)) : null,
        fixesAt ? [fixesAt.legacy, [...fixesAt.extra].map(([d, m]) => [d, [...m]])] : null,
      ])
    : null;
  const known = reuse?.cache.get<ResolveDecision>(key);
  if (known && ctx) for (const [k, why] of known.lifted) if (!ctx.lifted.has(k)) lift(k, why);
  // uv's answer of an earlier resolution of exactly this input, when the index still offers
  // the same files of every distribution the answer did not date (index-state.ts): the
  // resolver would answer the same (a lock checked for wheels, when this one must be)
  const started = Date.now();
  const earlier =
    known?.output !== undefined &&
    known.state &&
    known.stateBefore !== undefined &&
    known.undated &&
    (mode !== 'final' || known.wheelsChecked) &&
    !opts.offline &&
    (await indexState(known.undated, known.stateBefore)) === known.state
      ? known
      : null;
  const remember = async (outcome: { output?: string; wheelsChecked?: boolean; dated?: (k: string) => boolean }) => {
    if (!reuse || !key) return;
    const undated = outcome.output
      ? lockPins(outcome.output)
          .map((p) => p.split('==')[0])
          .filter((k) => !outcome.dated?.(k))
      : [];
    const before = started - STATE_MARGIN_MS;
    const state =
      outcome.output === undefined
        ? null
        : earlier && earlier.output === outcome.output
          ? earlier.state!
          : opts.offline
            ? null
            : await indexState(undated, before);
    reuse.cache.put(key, {
      lifted: learnt,
      ...(outcome.output !== undefined ? { lockDigest: sha256(outcome.output) } : {}),
      ...(outcome.wheelsChecked ? { wheelsChecked: true } : {}),
      ...(outcome.output !== undefined && state
        ? {
            output: outcome.output,
            undated,
            stateBefore: earlier && earlier.output === outcome.output ? earlier.stateBefore : before,
            state,
          }
        : {}),
    } satisfies ResolveDecision);
  };
  if (earlier) log(`  (uv's answer of an earlier resolution of the same input: the index has the same files since)`);
  for (let round = 0; ; round++) {
    const plan: AsOfPlan = ctx ? asOfPlan(named, ctx) : { packages: new Map() };
    const dated = asOfArgs(plan);
    const isDated = (k: string) =>
      !ctx!.exempt.has(k) &&
      !ctx!.lifted.has(k) &&
      (plan.packages.has(k) ? plan.packages.get(k) !== false : !!plan.global);
    const dateOf = (k: string) => (plan.packages.get(k) as string | undefined) ?? plan.global;
    // the same input resolved before in this pass (a group's lock resolved, then resolved
    // again to be checked for wheels): uv's answer of then
    const runs = resolvedOf.get(opts) ?? new Map<string, Awaited<ReturnType<typeof runCmd>>>();
    resolvedOf.set(opts, runs);
    const memo = JSON.stringify([args, lines, dated]);
    const r =
      runs.get(memo) ??
      (round === 0 && earlier
        ? { code: 0, stdout: earlier.output!, stderr: '' }
        : await withBuildFixes((extra) => runCmd(uv, [...args, ...dated, ...extra], { env: uvEnv() }), workDir, opts));
    if (r.code === 0) runs.set(memo, r);
    if (r.code !== 0) {
      const { filtered, unbuilt } = ctx ? datedFailures(r.stderr) : { filtered: [], unbuilt: [] };
      const newly = [...filtered.filter(isDated), ...unbuilt.filter((k) => isDated(k) && !filtered.includes(k))];
      if (ctx && newly.length && round < 8) {
        for (const k of filtered.filter(isDated))
          lift(
            k,
            `no release before ${dateOf(k)} meets the requirements: resolved without a date (the newest release)`,
          );
        for (const k of unbuilt.filter((x) => isDated(x) && !filtered.includes(x)))
          lift(k, `its release of ${dateOf(k)} did not build here: resolved without a date (the newest release)`);
        continue;
      }
      await remember({});
      return { error: r.stderr.trim().split('\n').slice(-12).join('\n') || `uv pip compile exited ${r.code}` };
    }
    // the same lock as the earlier resolution that checked its wheels: checked
    // the lock names its input file (`# via -r …/requirements.in`) by its path in this
    // environment's work folder: written relative, so the same resolution gives the same
    // lock and digest (the environment id) in any folder and on any machine
    const output = r.stdout.split(input).join('requirements.in');
    let checked = !!known?.wheelsChecked && known.lockDigest === sha256(output);
    if (ctx && mode === 'final' && (plan.global || plan.packages.size) && round < 8 && !checked) {
      // the same resolution as a PEP 751 lock: its wheels are those that install on this
      // interpreter and platform, so a dated release with none would be built from source
      // (a release from before CPython 3.11 had wheels)
      const pl = await withBuildFixes(
        (extra) => runCmd(uv, [...args, ...dated, ...extra, '--format', 'pylock.toml'], { env: uvEnv() }),
        workDir,
        opts,
      );
      const src = pl.code === 0 ? sourceOnlyPins(pl.stdout).filter((p) => isDated(p.name)) : [];
      checked = !src.length;
      if (src.length) {
        for (const p of src)
          lift(
            p.name,
            `${p.name} ${p.version}, its release before ${dateOf(p.name)}, has no wheel for this interpreter (it would be built from source): resolved without a date`,
          );
        continue;
      }
    }
    const present = new Set([
      ...lockPins(r.stdout).map((p) => p.split('==')[0]),
      ...named.map((x) => normalizeDistName(x.name ?? '')),
    ]);
    await remember({ output, wheelsChecked: checked, dated: ctx ? isDated : undefined });
    return { lock: (ctx ? asOfHeader(plan, ctx, present) : '') + output, plan };
  }
}

/** What the builds of source distributions need beyond what they declare, learnt from
 *  uv's errors during one `env create`/`env sync` (kept per options object, so the
 *  resolution and the install of a lock build alike). */
interface BuildFixes {
  /** setuptools before 81: a legacy setup.py imports pkg_resources */
  legacy: boolean;
  /** distribution → modules its setup.py imports without declaring them as build
   *  requirements (chumpy's `pip`), given to uv as `extra-build-dependencies` */
  extra: Map<string, Set<string>>;
}
const buildFixesOf = new WeakMap<PyPIOptions, BuildFixes>();

/** Run a uv command that may build source distributions; when a build fails for an
 *  import its setup.py does not declare (uv's hint: "`chumpy@0.70` depends on `pip`, but
 *  doesn't declare it as a build dependency"), run it again with that build dependency
 *  added (pkg_resources: setuptools before 81, which still has it), a few times. */
async function withBuildFixes(
  run: (extra: string[]) => Promise<Awaited<ReturnType<typeof runCmd>>>,
  dir: string,
  opts: PyPIOptions,
): Promise<Awaited<ReturnType<typeof runCmd>>> {
  let fx = buildFixesOf.get(opts);
  if (!fx) buildFixesOf.set(opts, (fx = { legacy: false, extra: new Map() }));
  const args = (): string[] => [
    ...(fx.legacy ? ['--build-constraints', legacyBuildConstraints(dir)] : []),
    ...(fx.extra.size ? ['--config-file', extraBuildConfig(dir, fx.extra)] : []),
  ];
  for (let round = 0; ; round++) {
    const r = await run(args());
    if (r.code === 0 || round >= 4) return r;
    let changed = false;
    if (/pkg_resources/.test(r.stderr) && !fx.legacy) changed = fx.legacy = true;
    for (const m of r.stderr.matchAll(
      /`([A-Za-z0-9][A-Za-z0-9._-]*)@[^`]*` depends on `([A-Za-z0-9][A-Za-z0-9._-]*)`, but doesn't declare it as a build dependency/g,
    )) {
      if (m[2] === 'pkg_resources') continue;
      const mods = fx.extra.get(m[1]) ?? new Set<string>();
      if (mods.has(m[2])) continue;
      mods.add(m[2]);
      fx.extra.set(m[1], mods);
      changed = true;
    }
    if (!changed) return r;
  }
}

/** A uv configuration file (uv.toml) of extra build dependencies. */
function extraBuildConfig(dir: string, extra: Map<string, Set<string>>): string {
  mkdirSync(dir, { recursive: true });
  const f = path.join(dir, 'uv-extra-build-dependencies.toml');
  const lines = [...extra].map(([d, mods]) => `${JSON.stringify(d)} = ${JSON.stringify([...mods])}`);
  writeFileSync(f, `[extra-build-dependencies]\n${lines.join('\n')}\n`);
  return f;
}

/** A build-constraints file holding setuptools before 81, the release that removed
 *  pkg_resources, which legacy setup.py files import. */
function legacyBuildConstraints(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const f = path.join(dir, 'build-constraints-legacy.txt');
  writeFileSync(f, 'setuptools<81\n');
  return f;
}

/** The wheel that stands for a checkout in a resolution: its name and version, no files,
 *  no requirements (the checkout's own are the group's requirements already). */
async function checkoutWheel(python: string, dir: string, name: string, version: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  // PEP 427 file name: the name with runs of -_. as one underscore
  const stem = `${name.replace(/[-_.]+/g, '_')}-${version}`;
  const file = path.join(dir, `${stem}-py3-none-any.whl`);
  if (existsSync(file)) return file;
  const script = [
    'import sys, zipfile',
    'f, stem, name, version = sys.argv[1:5]',
    'with zipfile.ZipFile(f, "w") as z:',
    '    z.writestr(stem + ".dist-info/METADATA", "Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n" % (name, version))',
    '    z.writestr(stem + ".dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: nnrag\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")',
    '    z.writestr(stem + ".dist-info/RECORD", "")',
  ].join('\n');
  const r = await runCmd(python, ['-c', script, file, stem, name, version]);
  if (r.code !== 0)
    throw new NnragError(`writing the resolution wheel of ${name} ${version}: ${r.stderr.trim().slice(-400)}`);
  return file;
}

/** The indexed repositories whose distribution a group's lock pins: taken from the index,
 *  because the checkout's version does not meet a pin of the group's repositories (the
 *  checkouts the group installs are resolved as themselves and left out of the lock), or
 *  because it is of torch's family and the group does not hold its repository
 *  (fromIndexFamily; a checkout of sources only too: its originals import the installed
 *  release, whose operators match the group's torch, not the checkout). */
export function fromIndexOf(needs: PyPINeeds, repos: string[], pins: string[]): FromIndex[] {
  const dists = indexedDistributions(needs);
  const out: FromIndex[] = [];
  for (const p of pins) {
    const [key, version] = p.split('==');
    const hit = dists.get(key);
    if (hit && !repos.includes(hit.repo) && (packaged(hit.root) || fromIndexFamily(key, false)))
      out.push({ repo: hit.repo, distribution: hit.name, version });
  }
  return out;
}

/** The source distribution (sdist) of a release, unpacked under nnrag's folder of built
 *  wheels: from `--wheels DIR` when it holds `<name>-<version>.tar.gz`, else from the
 *  index uv uses (UV_DEFAULT_INDEX, UV_INDEX_URL, else PyPI) through its JSON simple API
 *  (PEP 691), its sha256 checked. */
async function sourceDistribution(
  name: string,
  version: string,
  opts: PyPIOptions,
): Promise<{ dir: string } | { error: string }> {
  const root = path.join(opts.wheelCache ?? path.join(nnragHome(), 'wheels'), 'sdists');
  const stem = `${normalizeDistName(name).replace(/-/g, '_')}-${version}`;
  const dest = path.join(root, stem);
  const unpacked = () => {
    const dirs = existsSync(dest) ? readdirSync(dest).filter((d) => statSync(path.join(dest, d)).isDirectory()) : [];
    return dirs.length === 1 ? path.join(dest, dirs[0]) : null;
  };
  const have = unpacked();
  if (have) return { dir: have };
  mkdirSync(root, { recursive: true });
  const archive = path.join(root, `${stem}.tar.gz`);
  const local = opts.wheels
    ? readdirSync(opts.wheels).find((f) => f.toLowerCase() === `${stem.toLowerCase()}.tar.gz`)
    : undefined;
  if (local) cpSync(path.join(opts.wheels!, local), archive);
  else {
    if (opts.offline) return { error: `no source distribution of ${name} ${version} in --wheels (offline)` };
    try {
      // PEP 691: the simple repository API as JSON, on the index uv uses
      const index = (process.env.UV_DEFAULT_INDEX ?? process.env.UV_INDEX_URL ?? 'https://pypi.org/simple').replace(
        /\/+$/,
        '',
      );
      const page = `${index}/${normalizeDistName(name)}/`;
      const res = await fetch(page, { headers: { Accept: 'application/vnd.pypi.simple.v1+json' } });
      if (!res.ok) return { error: `${page}: HTTP ${res.status}` };
      const meta = (await res.json()) as { files?: { filename: string; url: string; hashes: { sha256?: string } }[] };
      const want = new Set([`${stem}.tar.gz`, `${name}-${version}.tar.gz`].map((f) => f.toLowerCase()));
      const sdist = meta.files?.find((f) => want.has(f.filename.toLowerCase()));
      if (!sdist) return { error: `the index has no source distribution of ${name} ${version}` };
      const bytes = Buffer.from(await (await fetch(new URL(sdist.url, page))).arrayBuffer());
      if (sdist.hashes.sha256 && createHash('sha256').update(bytes).digest('hex') !== sdist.hashes.sha256)
        return { error: `the source distribution of ${name} ${version} does not match its sha256` };
      writeFileSync(archive, bytes);
    } catch (e) {
      return { error: `fetching the source distribution of ${name} ${version}: ${(e as Error).message}` };
    }
  }
  const tmp = `${dest}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const r = await runCmd('tar', ['-xzf', archive, '-C', tmp]);
  rmSync(archive, { force: true });
  if (r.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    return { error: `unpacking the source distribution of ${name} ${version}: ${r.stderr.trim().slice(-300)}` };
  }
  rmSync(dest, { recursive: true, force: true });
  renameSync(tmp, dest);
  return unpacked() ? { dir: unpacked()! } : { error: `the source distribution of ${name} ${version} has no folder` };
}

/** Make (or reuse) a virtual environment at `dir` for `base`. */
async function makeVenv(uv: string, base: string, dir: string, systemTorch: boolean): Promise<void> {
  if (existsSync(path.join(dir, 'pyvenv.cfg'))) return;
  const args = ['venv', '--quiet', '--python', base, '--no-managed-python', '--no-python-downloads', dir];
  if (systemTorch) args.push('--system-site-packages');
  const r = await runCmd(uv, args, { env: uvEnv() });
  if (r.code !== 0) throw new NnragError(`uv venv ${dir} failed: ${r.stderr.trim().slice(-800)}`);
}

/** Install a lock exactly (`uv pip sync`: adds, upgrades and removes to match). Bytecode
 *  is made once the group is installed (groupBytecode). */
async function syncLock(uv: string, dir: string, lockFile: string, opts: PyPIOptions): Promise<void> {
  const args = ['pip', 'sync', lockFile, '--python', envPython(dir)];
  if (opts.offline) args.push('--offline');
  if (opts.wheels) args.push('--find-links', opts.wheels);
  // keep what nnrag installs beside the lock (indexed checkouts, built operators): sync
  // would remove them; they are installed again after it
  const run = (extra: string[]) =>
    runCmd(uv, [...args, ...extra], {
      env: uvEnv(),
      onLine: opts.onLog
        ? (l) =>
            /^\s*(Installed|Uninstalled|Prepared|Resolved|Downloading|Downloaded)/.test(l) &&
            opts.onLog!(`  ${l.trim()}`)
        : undefined,
    });
  // the lock pins exact versions, and an index never serves other bytes under a file's name
  // (PyPI refuses a file name uploaded before): what uv's cache holds of them is installed
  // first without asking the index (an index whose responses carry no cache headers is
  // fetched again otherwise, and uv builds its source distributions again), and the index
  // is asked only when the cache lacks one
  if (!opts.offline) {
    const cached = await withBuildFixes((extra) => run(['--offline', ...extra]), path.dirname(lockFile), opts);
    if (cached.code === 0) return;
  }
  const r = await withBuildFixes(run, path.dirname(lockFile), opts);
  if (r.code !== 0)
    throw new NnragError(`installing ${lockFile} failed: ${r.stderr.trim().split('\n').slice(-10).join('\n')}`);
}

/** The compiler that builds operators (part of a built wheel's cache key). */
async function compilerId(): Promise<string> {
  const r = await runCmd(process.env.CXX ?? 'c++', ['--version']);
  return r.code === 0 ? r.stdout.split('\n')[0].trim() : 'none';
}

/** The git revision of a checkout (or the content of its setup.py when not in git). */
async function revisionOf(dir: string): Promise<string> {
  const r = await runCmd('git', ['-C', dir, 'rev-parse', 'HEAD']);
  if (r.code === 0) {
    const d = await runCmd('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no', '.']);
    return r.stdout.trim() + (d.stdout.trim() ? '+' + sha256(d.stdout).slice(0, 8) : '');
  }
  try {
    return 'setup:' + sha256(readFileSync(path.join(dir, 'setup.py'), 'utf8')).slice(0, 16);
  } catch {
    return 'unknown';
  }
}

/** The C++ standard an environment's torch headers require (`#error C++20 or later
 *  compatible compiler is required to use ATen.`), when they say. */
export function torchCxxStandard(env: string): string | null {
  for (const site of sitePackagesOf(env)) {
    try {
      const text = readFileSync(path.join(site, 'torch', 'include', 'ATen', 'ATen.h'), 'utf8');
      const m = /#error C\+\+(\d+) or later compatible compiler is required/.exec(text);
      if (m) return m[1];
    } catch {
      /* no torch headers here */
    }
  }
  return null;
}

/** The CUDA toolkit's compiler, when this machine has one: `$CUDA_HOME/bin/nvcc` (or
 *  `$CUDA_PATH`), `nvcc` on PATH, `/usr/local/cuda/bin/nvcc` — where
 *  torch.utils.cpp_extension looks for it. */
export function cudaToolkit(env: NodeJS.ProcessEnv = process.env): string | null {
  const cands = [
    ...[env.CUDA_HOME, env.CUDA_PATH].filter((d): d is string => !!d).map((d) => path.join(d, 'bin', 'nvcc')),
    ...(env.PATH ?? '')
      .split(':')
      .filter(Boolean)
      .map((d) => path.join(d, 'nvcc')),
    '/usr/local/cuda/bin/nvcc',
  ];
  return cands.find((c) => existsSync(c)) ?? null;
}

/** Whether a failed operator build failed for want of CUDA on a machine without a CUDA
 *  toolkit: its error lines name CUDA (a setup.py that raises "CUDA_HOME is None" or "Cuda is
 *  not available" when torch.cuda.is_available() is false, or a CUDAExtension that finds
 *  no nvcc). Such an extension is optional on a CPU-only machine: the environment is
 *  usable without it. */
export function failedForCuda(output: string, toolkit: string | null = cudaToolkit()): boolean {
  return !toolkit && /\bcuda(_home|_path)?\b|\bnvcc\b|CUDAExtension/i.test(output);
}

/** Build one repository's operators as a wheel (cached by revision, torch and compiler),
 *  for the CPU, against the environment's torch (no build isolation: these setup.py files
 *  import torch), then install it without dependencies. */
async function buildNative(
  uv: string,
  env: string,
  b: NativeBuild,
  torchVersion: string,
  opts: PyPIOptions,
): Promise<void> {
  const cacheRoot = opts.wheelCache ?? path.join(nnragHome(), 'wheels');
  const key = sha256(
    JSON.stringify([
      b.repo,
      path.basename(b.dir),
      b.source ?? (await revisionOf(b.dir)),
      torchVersion,
      await compilerId(),
      process.arch,
    ]),
  ).slice(0, 16);
  const cacheDir = path.join(cacheRoot, key);
  const find = () =>
    existsSync(cacheDir)
      ? readdirSync(cacheDir)
          .filter((f) => f.endsWith('.whl'))
          .map((f) => path.join(cacheDir, f))[0]
      : undefined;
  let wheel = find();
  const t0 = Date.now();
  // a build that failed for want of CUDA fails the same way on this machine next time:
  // its verdict is kept beside the wheels, under the same key
  const noCuda = `${cacheDir}.needs-cuda`;
  if (!wheel && !cudaToolkit() && existsSync(noCuda)) {
    b.error = readFileSync(noCuda, 'utf8');
    b.needsCuda = true;
    b.cached = true;
    return;
  }
  if (!wheel) {
    opts.onLog?.(
      `  building the compiled operators of ${b.repo} (${b.dir}) for the CPU against torch ${torchVersion}: this can take many minutes, once per machine`,
    );
    const tmp = `${cacheDir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const py = envPython(env);
    const pip = await runCmd(
      uv,
      ['pip', 'install', '--python', py, 'setuptools', 'wheel', 'ninja', ...(opts.offline ? ['--offline'] : [])],
      { env: uvEnv() },
    );
    if (pip.code !== 0) {
      b.error = `build tools: ${pip.stderr.trim().slice(-400)}`;
      return;
    }
    const jobs = String(Math.max(1, os.cpus().length));
    // the build runs on a copy: a checkout stays untouched (no build/ or egg-info in it);
    // a sparse checkout's is the whole tree at its revision (source-tree.ts)
    let tree: SourceTree;
    try {
      tree = await installableTree(b.dir);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      b.error = (e as Error).message;
      return;
    }
    const src = tree.exported ? tree.dir : path.join(tmp, 'src');
    if (!tree.exported) cpSync(b.dir, src, { recursive: true, filter: (p) => path.basename(p) !== '.git' });
    const builder: [string, string[]] = [
      uv,
      ['build', '--wheel', '--no-build-isolation', '--python', py, '--out-dir', tmp, src],
    ];
    const runBuild = (extra: Record<string, string> = {}) =>
      runCmd(builder[0], builder[1], {
        env: uvEnv({
          ...extra,
          FORCE_CUDA: '0',
          CUDA_VISIBLE_DEVICES: '',
          MAX_JOBS: jobs,
          TORCH_CUDA_ARCH_LIST: '',
          VIRTUAL_ENV: env,
          PATH: `${path.join(env, 'bin')}:${process.env.PATH ?? ''}`,
        }),
        onLine: opts.onLog
          ? (l) =>
              /^(building|running build|\[\d+\/\d+\])/.test(l.trim()) && opts.onLog!(`    ${l.trim().slice(0, 160)}`)
          : undefined,
        timeoutMs: 3 * 3_600_000,
      });
    // the compiler is wrapped so that flags of ours come last on each command line (for
    // -std and -g the last one wins): the C++ standard torch's headers require, because
    // they refuse an older one (ATen.h: "#error C++20 or later compatible compiler is
    // required") and a setup.py written for an older torch may pin one (`-std=c++17` in
    // its extra_compile_args, after every flag the environment could add); and no debug
    // information (-g0), which validation never reads and which the interpreter's own
    // build flags (sysconfig's CFLAGS: -g) would make the compiler write for every
    // object, a large part of compiling torch's headers
    const std = torchCxxStandard(env);
    const wrapper = path.join(tmp, 'cxx-nnrag');
    writeFileSync(wrapper, `#!/bin/sh\nexec ${process.env.CXX ?? 'c++'} "$@" -g0${std ? ` -std=c++${std}` : ''}\n`, {
      mode: 0o755,
    });
    const wrapped: Record<string, string> = { CXX: wrapper };
    let build = await runBuild(wrapped);
    // a legacy setup.py that imports pkg_resources needs a setuptools from before its
    // removal (setuptools 81): installed for the build, and the build tried once more
    if (build.code !== 0 && /No module named 'pkg_resources'/.test(build.stderr + build.stdout)) {
      opts.onLog?.('    the build imports pkg_resources: building again with setuptools<81');
      const old = await runCmd(
        uv,
        ['pip', 'install', '--python', py, 'setuptools<81', ...(opts.offline ? ['--offline'] : [])],
        { env: uvEnv() },
      );
      if (old.code === 0) build = await runBuild(wrapped);
    }
    tree.dispose();
    const built = existsSync(tmp) ? readdirSync(tmp).filter((f) => f.endsWith('.whl')) : [];
    if (build.code !== 0 || !built.length) {
      rmSync(tmp, { recursive: true, force: true });
      const tail = (build.stderr + build.stdout)
        .trim()
        .split('\n')
        .filter((l) => /error|Error|NotImplemented|not available/.test(l))
        .slice(-6)
        .join('\n');
      b.error = tail || `the build exited ${build.code}`;
      // the error lines, not the whole output: torch's build prints "No CUDA runtime is
      // found" on every CPU machine, whatever then fails
      if (failedForCuda(tail)) {
        b.needsCuda = true;
        mkdirSync(cacheRoot, { recursive: true });
        writeFileSync(noCuda, b.error);
      }
      return;
    }
    rmSync(cacheDir, { recursive: true, force: true });
    renameSync(tmp, cacheDir);
    wheel = find();
    b.seconds = (Date.now() - t0) / 1000;
  } else b.cached = true;
  const inst = await runCmd(uv, ['pip', 'install', '--python', envPython(env), '--no-deps', '--reinstall', wheel!], {
    env: uvEnv(),
  });
  if (inst.code !== 0) b.error = `installing ${wheel}: ${inst.stderr.trim().slice(-400)}`;
  else b.wheel = wheel;
}

/** The folder of a checkout's wheel built for an environment's interpreter and torch,
 *  keyed by the checkout's content (null outside git: never kept). */
async function checkoutWheelDir(
  env: string,
  x: IndexedInstall,
  opts: PyPIOptions,
  torchVersion: string,
): Promise<string | null> {
  const content = await contentOf(x.root, opts);
  return content
    ? path.join(
        opts.wheelCache ?? path.join(nnragHome(), 'wheels'),
        'checkouts',
        sha256(
          JSON.stringify([x.repo, x.distribution, content, await interpreterId(envPython(env)), torchVersion]),
        ).slice(0, 16),
      )
    : null;
}

/** The wheel of a checkout built before for this interpreter and torch, if kept. */
async function cachedCheckoutWheel(
  env: string,
  x: IndexedInstall,
  opts: PyPIOptions,
  torchVersion: string,
): Promise<{ wheel: string; meta: { revision?: string } } | null> {
  const dir = await checkoutWheelDir(env, x, opts, torchVersion);
  return dir ? builtWheel(dir) : null;
}

/** Install an indexed repository from its checkout, without dependencies and without
 *  building its operators (a build of its own does that): the files users import. The
 *  wheel its build makes is kept under nnrag's folder of built wheels, keyed by the
 *  repository, the content of its checkout (decisions.ts: revision, changes, untracked
 *  files), the interpreter and the environment's torch (a build without isolation imports
 *  it), like the operators' wheels: another environment installs that wheel instead of
 *  building again, and installs the very same files (uv's cache hardlinks them), whose
 *  bytecode it then shares (bytecode.ts). A checkout outside git is built every time. */
async function installIndexed(
  uv: string,
  env: string,
  x: IndexedInstall,
  opts: PyPIOptions,
  torchVersion: string,
): Promise<void> {
  const cacheDir = await checkoutWheelDir(env, x, opts, torchVersion);
  const cached = cacheDir ? builtWheel(cacheDir) : null;
  if (cached) {
    if (cached.meta.revision) x.revision = cached.meta.revision;
    const r = await installWheel(uv, env, cached.wheel, opts);
    if (r.code === 0) {
      opts.onLog?.(`    the wheel built from this revision before (${path.basename(cached.wheel)})`);
      return;
    }
  }
  // a sparse checkout is installed from its whole tree (source-tree.ts): a build backend
  // may need a file the checkout left out (flit_core the LICENSE its pyproject names)
  let tree: SourceTree;
  try {
    tree = await installableTree(x.root);
  } catch (e) {
    x.error = (e as Error).message;
    return;
  }
  if (tree.exported) x.revision = tree.exported.revision;
  if (tree.incomplete) opts.onLog?.(`    ${tree.incomplete}`);
  const out = `${cacheDir ?? path.join(os.tmpdir(), 'nnrag-checkout-wheel')}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  try {
    await buildTree(uv, env, x, tree.dir, out, opts);
  } finally {
    tree.dispose();
  }
  const wheel = x.error ? undefined : readdirSync(out).find((f) => f.endsWith('.whl'));
  if (!x.error && !wheel) x.error = `building ${x.root} made no wheel`;
  if (x.error) {
    rmSync(out, { recursive: true, force: true });
    if (tree.incomplete) x.error = `${x.error}\n(${tree.incomplete})`;
    return;
  }
  writeFileSync(path.join(out, 'nnrag-built.json'), JSON.stringify({ revision: x.revision ?? null }) + '\n');
  let file = path.join(out, wheel!);
  if (cacheDir) {
    rmSync(cacheDir, { recursive: true, force: true });
    renameSync(out, cacheDir);
    file = path.join(cacheDir, wheel!);
  }
  const r = await installWheel(uv, env, file, opts);
  if (r.code !== 0) x.error = r.stderr.trim().split('\n').slice(-4).join('\n');
  if (!cacheDir) rmSync(out, { recursive: true, force: true });
}

/** The wheel kept in a folder of built wheels, and what was kept beside it. */
function builtWheel(dir: string): { wheel: string; meta: { revision?: string } } | null {
  try {
    const wheel = readdirSync(dir).find((f) => f.endsWith('.whl'));
    if (!wheel) return null;
    const meta = JSON.parse(readFileSync(path.join(dir, 'nnrag-built.json'), 'utf8')) as { revision?: string | null };
    return { wheel: path.join(dir, wheel), meta: meta.revision ? { revision: meta.revision } : {} };
  } catch {
    return null;
  }
}

/** Install one wheel into an environment, without its dependencies (the lock has them). */
function installWheel(uv: string, env: string, wheel: string, opts: PyPIOptions) {
  return installWheels(uv, env, [wheel], opts);
}

/** Install wheels into an environment, without their dependencies (those are in its
 *  lock), replacing what is installed of their names. */
function installWheels(uv: string, env: string, wheels: string[], opts: PyPIOptions) {
  return runCmd(
    uv,
    [
      'pip',
      'install',
      '--python',
      envPython(env),
      '--no-deps',
      '--reinstall',
      ...wheels,
      ...(opts.offline ? ['--offline'] : []),
    ],
    { env: uvEnv() },
  );
}

/** The interpreter of an environment as a key: its version, platform and the interpreter
 *  it was made from (once per interpreter and process). */
const interpreters = new Map<string, Promise<string>>();
function interpreterId(python: string): Promise<string> {
  let id = interpreters.get(python);
  if (!id) {
    id = runCmd(python, [
      '-c',
      'import sys, platform; print(sys.version, platform.machine(), sys.implementation.cache_tag, sys._base_executable)',
    ]).then((r) => r.stdout.trim());
    interpreters.set(python, id);
  }
  return id;
}

/** Build a checkout's wheel into `out` (`uv build --wheel`, no dependencies installed). */
async function buildTree(
  uv: string,
  env: string,
  x: IndexedInstall,
  dir: string,
  out: string,
  opts: PyPIOptions,
): Promise<void> {
  // its build backend from PyPI in an isolated build first (a pyproject's pdm-backend,
  // hatchling); a setup.py that imports torch needs the environment's (no isolation), and
  // a legacy one that imports pkg_resources a setuptools from before 81
  const attempt = (isolated: boolean) =>
    runCmd(
      uv,
      [
        'build',
        '--wheel',
        '--python',
        envPython(env),
        ...(isolated ? [] : ['--no-build-isolation']),
        '--out-dir',
        out,
        dir,
        ...(opts.offline ? ['--offline'] : []),
      ],
      {
        env: uvEnv({ FORCE_CUDA: '0', CUDA_VISIBLE_DEVICES: '', VIRTUAL_ENV: env }),
      },
    );
  let r = await attempt(true);
  if (r.code !== 0) {
    if (/pkg_resources/.test(r.stderr))
      await runCmd(
        uv,
        ['pip', 'install', '--python', envPython(env), 'setuptools<81', ...(opts.offline ? ['--offline'] : [])],
        { env: uvEnv() },
      );
    r = await attempt(false);
  }
  if (r.code !== 0) x.error = r.stderr.trim().split('\n').slice(-4).join('\n');
}

/** The bytecode of a group's environment, made once everything is installed: the sandbox
 *  binds it read-only, so what is not compiled now is compiled again at every import.
 *  Bytecode that an environment of the same interpreter beside it (or under nnrag's own
 *  folder of environments) has for the very same installed file is hardlinked instead of
 *  compiled (bytecode.ts): a second environment with the same torch compiles none of
 *  torch. */
async function groupBytecode(dir: string, log: (l: string) => void): Promise<Omit<BytecodeReport, 'seconds'>> {
  const donors = donorEnvironments(dir, [path.join(nnragHome(), 'envs')]);
  const { seconds, ...rep } = await compileBytecode(dir, { donors });
  log(
    `  bytecode: ${rep.sources} source files, ${rep.linked} shared from ${rep.donors.length ? rep.donors.join(', ') : 'no other environment'}, ${rep.compiled} compiled, ${rep.valid} already compiled (${seconds.toFixed(1)} s)`,
  );
  return rep;
}

/** The dates of one `env create`/`env sync`: each repository's revision date, and what is
 *  never dated: torch's family, torch's own requirements (resolved once, undated: the torch
 *  the user asked pins them) and --packages. */
async function asOfContext(
  uv: string,
  py: string,
  n: PyPINeeds,
  choice: Exclude<AsOfChoice, false>,
  torch: string,
  extra: string[],
  systemTorch: boolean,
  opts: PyPIOptions,
  work: string,
): Promise<AsOfContext> {
  const dates = new Map<string, Date | null>();
  for (const r of n.repos) dates.set(r.name, await revisionDate(r.root));
  const exempt = new Set(TORCH_FAMILY);
  for (const p of extra) {
    const name = requirementName(p);
    if (name) exempt.add(normalizeDistName(name));
  }
  if (!systemTorch) for (const p of await torchPins(uv, py, torch, opts, work)) exempt.add(p.split('==')[0]);
  return { choice, dates, exempt, lifted: new Map(), now: new Date() };
}

/** torch's own requirements, resolved once per process for the same torch, interpreter,
 *  index and options (the second pass after a learnt bound asks again). */
const torchPinsMemo = new Map<string, Promise<string[]>>();
function torchPins(uv: string, py: string, torch: string, opts: PyPIOptions, work: string): Promise<string[]> {
  const key = JSON.stringify([
    uv,
    py,
    torch,
    !!opts.offline,
    opts.wheels ?? null,
    Object.entries(process.env).filter(([k]) => k.startsWith('UV_')),
  ]);
  let pins = torchPinsMemo.get(key);
  if (!pins) {
    pins = compile(uv, py, [{ spec: torch, neededBy: ['nnrag'] }], opts, path.join(work, 'torch'), 'plain').then((t) =>
      'lock' in t ? lockPins(t.lock) : [],
    );
    torchPinsMemo.set(key, pins);
  }
  return pins;
}

/** The needs with learnt bounds added to the declared requirements of their repositories. */
function withConstraints(needs: PyPINeeds, learnt: LearntConstraint[]): PyPINeeds {
  if (!learnt.length) return needs;
  return {
    ...needs,
    repos: needs.repos.map((r) => {
      const add = learnt.filter((c) => c.repos.includes(r.name)).map((c) => c.requirement);
      return add.length ? { ...r, declared: [...r.declared, ...add.filter((a) => !r.declared.includes(a))] } : r;
    }),
  };
}

/** What a group's manifest says of its dates. */
function groupAsOf(plan: AsOfPlan, ctx: AsOfContext, pins: string[]): GroupAsOf {
  const dated: Record<string, string> = {};
  const undated: string[] = [];
  // what the group resolved: a fallback learnt in another group is not this one's
  const here = new Set(pins.map((p) => p.split('==')[0]));
  for (const [k, v] of [...plan.packages].sort(([a], [b]) => a.localeCompare(b)))
    if (v === false) {
      if (here.has(k)) undated.push(k);
    } else dated[k] = v;
  return {
    ...(plan.global ? { global: plan.global } : {}),
    dated,
    undated,
    lifted: [...ctx.lifted]
      .filter(([k]) => plan.packages.get(k) === false && here.has(k))
      .map(([distribution, reason]) => ({ distribution, reason })),
  };
}

/** The torch version a lock pins (or the base interpreter's, with systemTorch). */
function torchOf(pins: string[]): string {
  return pins.find((p) => p.startsWith('torch=='))?.slice('torch=='.length) ?? 'system';
}

/**
 * `nnrag env create DIR` / `env sync DIR` with the PyPI backend: resolve the groups, lock
 * each, install each lock, install the indexed repositories that other repositories
 * declare and the packaged repositories themselves (indexedInstalls), build the compiled
 * operators of the indexed repositories, write the manifest.
 * `needs` null: torch and the tools only.
 */
export async function syncPyPIEnvironment(
  dir: string,
  needs: PyPINeeds | null,
  opts: PyPIOptions = {},
  learnt?: LearntConstraint[],
  chain: { pass: number; boundsKey: string | null } = { pass: 1, boundsKey: null },
): Promise<EnvManifestPyPI> {
  const uv = findUv();
  if (!uv) throw new NnragError('uv is not installed: run scripts/setup.sh (it installs uv), or `pip install uv`');
  const target = path.resolve(dir);
  if (unreachableForSandbox(target))
    throw new NnragError(
      `${target} lies where the sandbox's user (uid 65534) cannot read it; choose a folder outside /root (e.g. ${path.join(nnragHome(), 'envs', path.basename(target))})`,
    );
  const previous = readPyPIManifest(target);
  const base = baseInterpreter(opts.python ?? previous?.basePython);
  // what was asked now, else what the environment was made with
  const systemTorch = opts.systemTorch ?? previous?.systemTorch ?? false;
  const torch = systemTorch ? 'system' : opts.torch ? torchRequirement(opts.torch) : (previous?.torch ?? 'torch');
  const log = opts.onLog ?? (() => {});
  mkdirSync(target, { recursive: true });
  // the bounds earlier imports taught (import-probe.ts), as requirements of the
  // repositories that need the distribution enforcing them
  const constraints = learnt ?? (opts.probeImports === false ? [] : (previous?.importConstraints ?? []));
  const n: PyPINeeds = withConstraints(needs ?? { repos: [], indexed: new Map() }, constraints);
  const work = path.join(target, '.nnrag-work');
  // groups: every repository together first; the repositories whose requirements do not
  // resolve with the shared set get an environment of their own universe
  await makeVenv(uv, base, target, systemTorch);
  const py = envPython(target);
  const allRepos = n.repos.map((r) => r.name);
  const groups: EnvGroup[] = [];
  const extra = opts.packages ?? [];
  // resolution as of the repositories' revisions (as-of.ts): what was asked now, else what
  // the environment was made with
  const asOf: AsOfChoice = opts.asOf ?? previous?.asOf ?? 'revisions';
  // the decisions of earlier environments on this machine (decisions.ts), keyed by every
  // input of this one: the resolver's identity, the options, torch's pins, the dates
  // (torch's own resolution, below, is one of them)
  const cache = new DecisionCache(
    opts.decisions === false ? null : (opts.decisions ?? path.join(nnragHome(), 'cache', 'env')),
  );
  const reuse = cache.enabled ? { cache, machine: await resolverIdentity(uv, base, opts) } : null;
  if (reuse) reuseOf.set(opts, reuse);
  const asOfCtx: AsOfContext =
    asOf === false
      ? { choice: false, dates: new Map(), exempt: new Set(), lifted: new Map(), now: new Date() }
      : await asOfContext(uv, py, n, asOf, torch, extra, systemTorch, opts, work);
  asOfOf.set(opts, asOfCtx);
  const options = [
    torch,
    systemTorch,
    extra,
    asOf,
    opts.native !== false,
    systemTorch ? [] : await torchPins(uv, py, torch, opts, work),
    [...asOfCtx.dates].map(([r, d]) => [
      r,
      d?.toISOString() ?? null,
      !!d && d.getTime() + AS_OF_MARGIN_MS < Date.now(),
    ]),
  ];
  // the bounds an earlier environment of the same input learnt at import: a first pass
  // without them would install everything only to learn them again (the last pass of
  // that environment is this one's only one)
  const raw = needs ?? { repos: [], indexed: new Map() };
  const boundsKey =
    reuse && !learnt && opts.probeImports !== false && !constraints.length
      ? await needsMaterial(raw, true, opts).then((m) =>
          m ? reuse.cache.key('bounds', [reuse.machine, m, options]) : null,
        )
      : chain.boundsKey;
  const knownBounds = learnt ? undefined : reuse?.cache.get<BoundsDecision>(boundsKey);
  if (knownBounds?.bounds.length) {
    for (const c of knownBounds.bounds)
      log(
        `  ${c.by} enforces ${c.requirement} at import (installed: ${c.distribution} ${c.installed}), learnt by an earlier environment of the same requirements: a requirement of ${c.repos.join(', ')}`,
      );
    // at the pass that environment ended with
    return syncPyPIEnvironment(dir, needs, nextPass(opts), knownBounds.bounds, {
      pass: knownBounds.pass,
      boundsKey: null,
    });
  }
  // which repositories share a group, and the fallbacks and build fixes found on the way,
  // as an earlier environment of the same input found them: the resolutions that failed
  // are not run again (the groups' locks are resolved below as always)
  const fixes = (): BuildFixes => {
    let fx = buildFixesOf.get(opts);
    if (!fx) buildFixesOf.set(opts, (fx = { legacy: false, extra: new Map() }));
    return fx;
  };
  const groupsKey = reuse
    ? await needsMaterial(n, false, opts).then((m) =>
        reuse.cache.key('groups', [
          reuse.machine,
          m,
          options,
          [...asOfCtx.exempt].sort(),
          [...asOfCtx.lifted],
          [fixes().legacy, [...fixes().extra].map(([d, x]) => [d, [...x]])],
        ]),
      )
    : null;
  const knownGroups = reuse?.cache.get<GroupsDecision>(groupsKey);
  let shared = allRepos;
  let sharedLock: Awaited<ReturnType<typeof compile>> | null = null;
  const own: { repo: string; conflict: string }[] = [];
  const groupLog: string[] = [];
  if (
    knownGroups?.exempt &&
    [...knownGroups.shared, ...knownGroups.own.map((o) => o.repo)].every((r) => allRepos.includes(r))
  ) {
    shared = knownGroups.shared;
    own.push(...knownGroups.own);
    for (const k of knownGroups.exempt) asOfCtx.exempt.add(k);
    for (const [k, why] of knownGroups.lifted)
      if (!asOfCtx.lifted.has(k)) {
        asOfCtx.lifted.set(k, why);
        log(`  ${k}: ${why}`);
      }
    fixes().legacy = knownGroups.fixes.legacy;
    for (const [d, mods] of knownGroups.fixes.extra) fixes().extra.set(d, new Set(mods));
    for (const l of knownGroups.log) log(l);
    log(
      `  (the groups an earlier environment of the same requirements found: ${own.length ? `${own.map((o) => o.repo).join(', ')} of their own` : 'all together'})`,
    );
  } else {
    sharedLock = await compile(uv, py, groupRequirements(n, shared, torch, extra, systemTorch), opts, work);
    const log = (l: string) => {
      groupLog.push(l);
      opts.onLog?.(l);
    };
    await (async () => {
      if (!('error' in sharedLock)) return;
      const firstError = sharedLock.error;
      // the repositories whose own requirements the resolver's error names (one that cannot
      // be fetched or built, a version no index has) are set aside: the others usually
      // resolve together at once, and each set-aside repository is then tried with them,
      // as the one-by-one order below would (1 + 1 + k resolutions instead of 1 + 1 + all).
      // The resolver reports one reason at a time: while the others do not resolve, the
      // repositories their error names are set aside too (a few rounds)
      const blamed = blamedRepos(n, allRepos, firstError);
      const othersOf = () => [...new Set(allRepos.filter((r) => !blamed.includes(r)).flatMap((r) => universe(n, r)))];
      let others = othersOf();
      // a repository (with its universe) joins the shared group when the group still
      // resolves with it; otherwise it gets an environment of its own
      const addIfResolves = async (r: string) => {
        const tryLock = await compile(
          uv,
          py,
          groupRequirements(n, [...shared, ...universe(n, r)], torch, extra, systemTorch),
          opts,
          work,
        );
        if ('error' in tryLock) own.push({ repo: r, conflict: tryLock.error });
        else {
          shared.push(...universe(n, r).filter((x) => !shared.includes(x)));
          sharedLock = tryLock;
        }
      };
      let sorted = false;
      for (
        let round = 0;
        round < 4 && blamed.length && others.length && !others.some((r) => blamed.includes(r));
        round++
      ) {
        const rest = await compile(uv, py, groupRequirements(n, others, torch, extra, systemTorch), opts, work);
        if ('error' in rest) {
          const more = blamedRepos(n, others, rest.error).filter((r) => !blamed.includes(r));
          if (!more.length) break;
          blamed.push(...more);
          others = othersOf();
          continue;
        }
        log(
          `the requirements of all ${allRepos.length} repositories do not resolve together; the resolver's errors name requirements of ${blamed.join(', ')}; the other ${others.length} resolve together`,
        );
        shared = others;
        sharedLock = rest;
        for (const r of blamed) await addIfResolves(r);
        sorted = true;
        break;
      }
      if (!sorted) {
        // add repositories one at a time, in the store's order, keeping those that resolve
        log(
          `the requirements of all ${allRepos.length} repositories do not resolve together; resolving them one by one`,
        );
        shared = [];
        sharedLock = await compile(uv, py, groupRequirements(n, [], torch, extra, systemTorch), opts, work);
        if ('error' in sharedLock) throw new NnragError(`torch and the tools do not resolve: ${sharedLock.error}`);
        for (const r of allRepos) await addIfResolves(r);
      }
      if (!own.length) log(`(resolved after all: ${firstError.split('\n')[0]})`);
    })();
    reuse?.cache.put(groupsKey, {
      shared,
      own,
      lifted: [...asOfCtx.lifted],
      exempt: [...asOfCtx.exempt],
      fixes: { legacy: fixes().legacy, extra: [...fixes().extra].map(([d, x]) => [d, [...x]]) },
      log: groupLog,
    } satisfies GroupsDecision);
  }
  const installGroup = async (
    name: string,
    gdir: string,
    repos: string[],
    lock: string,
    conflict?: string,
    plan?: AsOfPlan,
  ): Promise<EnvGroup> => {
    await makeVenv(uv, base, gdir, systemTorch);
    const pins = lockPins(lock);
    const fromIndex = fromIndexOf(n, repos, pins);
    // an indexed repository taken from the index whose root setup.py builds operators
    // (mmcv) is built from its source distribution like its checkout is (operators for the
    // CPU against this torch), not by the lock's install, which would build it without them
    // (torch's family is not: its wheels carry operators built for the torch they pin)
    const sdistBuilt =
      opts.native === false
        ? []
        : fromIndex.filter(
            (f) =>
              !fromIndexFamily(normalizeDistName(f.distribution), false) &&
              nativeBuildDirs(n.repos.find((r) => r.name === f.repo)!.root, 0).length,
          );
    const lockFile = path.join(gdir, 'nnrag-lock.txt');
    const before = existsSync(lockFile) ? readFileSync(lockFile, 'utf8') : null;
    const prevGroup = previous?.groups.find((g) => g.dir === gdir);
    if (before === lock && prevGroup)
      log(
        `${name === 'shared' ? 'the shared environment' : `the environment of ${name}`} is up to date with its lock (${lockPins(lock).length} distributions)`,
      );
    else {
      log(
        `installing ${name === 'shared' ? 'the shared environment' : `the environment of ${name}`} (${lockPins(lock).length} distributions) into ${gdir}`,
      );
      const pending = path.join(gdir, 'nnrag-lock.pending.txt');
      writeFileSync(pending, lock);
      const skip = new Set(sdistBuilt.map((f) => normalizeDistName(f.distribution)));
      const toSync = path.join(gdir, 'nnrag-lock.sync.txt');
      writeFileSync(
        toSync,
        lock
          .split('\n')
          .filter((l) => !skip.has(normalizeDistName(/^([A-Za-z0-9][A-Za-z0-9._-]*)==/.exec(l)?.[1] ?? '')))
          .join('\n'),
      );
      await syncLock(uv, gdir, toSync, opts);
      rmSync(toSync, { force: true });
      // the lock names what is installed only once the install worked
      renameSync(pending, lockFile);
    }
    // the compiled operators first: a repository whose setup.py at its root builds them
    // (mmcv, detectron2) is installed by that build's wheel, not again from its checkout
    // (where a build without them, or a second build of them, would replace it)
    const native: NativeBuild[] = [];
    if (opts.native !== false) {
      for (const repo of repos) {
        const r = n.repos.find((x) => x.name === repo);
        if (!r) continue;
        for (const d of nativeBuildDirs(r.root)) native.push({ repo, dir: d });
      }
      for (const f of sdistBuilt) {
        const b: NativeBuild = { repo: f.repo, dir: '', source: `${f.distribution}==${f.version}` };
        native.push(b);
        const src = await sourceDistribution(f.distribution, f.version, opts);
        if ('error' in src) b.error = src.error;
        else b.dir = src.dir;
      }
      for (const b of native) {
        if (b.dir) await buildNative(uv, gdir, b, torchOf(pins), opts);
        const where = b.source
          ? `${b.source} from the index`
          : path.relative(n.repos.find((x) => x.name === b.repo)!.root, b.dir) || '.';
        log(
          `  operators of ${b.repo} (${where}): ${b.error ? `not built${b.needsCuda ? ' (they need CUDA, which this machine does not have)' : ''}: ${b.error.split('\n')[0]}` : b.cached ? 'from the cache' : `built in ${b.seconds?.toFixed(0)} s`}`,
        );
        // without its operators the distribution is still installed, as the index has it
        if (b.source && !b.wheel) {
          const r = await runCmd(
            uv,
            [
              'pip',
              'install',
              '--python',
              envPython(gdir),
              '--no-deps',
              b.source,
              '--build-constraints',
              legacyBuildConstraints(work),
              ...(opts.offline ? ['--offline'] : []),
              ...(opts.wheels ? ['--find-links', opts.wheels] : []),
            ],
            { env: uvEnv() },
          );
          log(
            `    ${b.source} installed from the index without its operators${r.code === 0 ? '' : `: failed: ${r.stderr.trim().split('\n').slice(-1)[0]}`}`,
          );
        }
      }
    }
    const builtWhole = installedByBuild(n, native);
    const indexed = indexedInstalls(n, repos).filter((x) => !builtWhole.has(x.repo));
    const revisions = await Promise.all(indexed.map((x) => revisionOf(x.root)));
    // the checkouts whose wheel was built before are installed by one uv command
    const cached: { x: IndexedInstall; wheel: string; revision?: string }[] = [];
    for (const [i, x] of indexed.entries()) {
      // the same revision of the checkout installed here before, and still installed: kept
      x.checkout = revisions[i];
      const before = prevGroup?.indexed.find((y) => y.repo === x.repo);
      if (before && !before.error && before.checkout === x.checkout && distInstalled(gdir, x.distribution)) {
        Object.assign(x, { revision: before.revision });
        log(`  ${x.distribution} from the indexed ${x.repo} is installed at its checkout's revision`);
        continue;
      }
      log(`  installing ${x.distribution} from the indexed ${x.repo} (${x.root})`);
      const c = await cachedCheckoutWheel(gdir, x, opts, torchOf(pins));
      if (c) cached.push({ x, wheel: c.wheel, revision: c.meta.revision });
      else await installIndexed(uv, gdir, x, opts, torchOf(pins));
    }
    if (cached.length) {
      const r = await installWheels(
        uv,
        gdir,
        cached.map((c) => c.wheel),
        opts,
      );
      for (const c of cached) {
        if (r.code === 0) {
          if (c.revision) c.x.revision = c.revision;
          log(`    ${c.x.distribution}: the wheel built from this revision before (${path.basename(c.wheel)})`);
        } else await installIndexed(uv, gdir, c.x, opts, torchOf(pins));
      }
    }
    const bytecode = await groupBytecode(gdir, log);
    return {
      name,
      dir: gdir,
      repos,
      requirements: groupRequirements(n, repos, torch, extra, systemTorch),
      lockDigest: sha256(lock),
      pins,
      native,
      indexed,
      ...(conflict ? { conflict } : {}),
      ...(fromIndex.length ? { fromIndex } : {}),
      bytecode,
      ...(plan && asOf !== false ? { asOf: groupAsOf(plan, asOfCtx, pins) } : {}),
    };
  };
  // the groups' locks, dated, checked for releases that would be built from source here
  if (asOf !== false) {
    const fin = await compile(uv, py, groupRequirements(n, shared, torch, extra, systemTorch), opts, work, 'final');
    if ('lock' in fin) sharedLock = fin;
    else
      log(
        `the shared lock checked for wheels did not resolve; kept as resolved: ${fin.error.split('\n').slice(-1)[0]}`,
      );
  }
  // the groups were an earlier environment's: the shared lock is resolved here
  if (!sharedLock || 'error' in sharedLock)
    sharedLock = await compile(uv, py, groupRequirements(n, shared, torch, extra, systemTorch), opts, work);
  if ('error' in sharedLock) throw new NnragError(`the shared group does not resolve: ${sharedLock.error}`);
  const sl = sharedLock;
  groups.push(await installGroup('shared', target, shared, sl.lock, undefined, sl.plan));
  for (const o of own) {
    const repos = universe(n, o.repo);
    const lock = await compile(uv, py, groupRequirements(n, repos, torch, extra, systemTorch), opts, work, 'final');
    if ('error' in lock) {
      log(
        `${o.repo}: its own requirements do not resolve either; it validates in the shared environment: ${lock.error.split('\n').slice(-1)[0]}`,
      );
      groups[0].repos.push(o.repo);
      // the indexed repositories it declares, and itself, go into the environment it
      // validates in
      const builtWhole = installedByBuild(n, groups[0].native);
      for (const x of indexedInstalls(n, [o.repo])) {
        if (groups[0].indexed.some((y) => y.repo === x.repo) || builtWhole.has(x.repo)) continue;
        log(`  installing ${x.distribution} from the indexed ${x.repo} (${x.root})`);
        await installIndexed(uv, target, x, opts, torchOf(groups[0].pins));
        groups[0].indexed.push(x);
      }
      groups[0].bytecode = await groupBytecode(target, log);
      continue;
    }
    groups.push(
      await installGroup(
        o.repo,
        path.join(target, 'repos', o.repo.replace(/\//g, '__')),
        repos,
        lock.lock,
        o.conflict,
        lock.plan,
      ),
    );
  }
  rmSync(work, { recursive: true, force: true });
  const unresolved = new Map<string, { module: string; candidates: string[]; neededBy: string[] }>();
  for (const r of n.repos) {
    for (const m of r.unknown) {
      const u = unresolved.get(m) ?? {
        module: m,
        candidates: [m, m.replace(/_/g, '-')].filter((x, i, a) => a.indexOf(x) === i),
        neededBy: [],
      };
      if (!u.neededBy.includes(r.name)) u.neededBy.push(r.name);
      unresolved.set(m, u);
    }
  }
  const now = new Date().toISOString();
  const manifest: EnvManifestPyPI = {
    version: 1,
    backend: 'pypi',
    created: previous?.created ?? now,
    updated: now,
    basePython: base,
    torch,
    systemTorch,
    asOf,
    ...(constraints.length ? { importConstraints: constraints } : {}),
    groups,
    unresolved: [...unresolved.values()].sort((a, b) => a.module.localeCompare(b.module)),
  };
  // the groups' requirements imported once: a bound an import enforces that the installed
  // version does not meet is learnt, and everything is resolved again with it (up to
  // IMPORT_PASSES passes: a group the bound changes, mmpose's own, may show another)
  if (opts.probeImports !== false) {
    const fresh: LearntConstraint[] = [];
    const skip = new Set([...TORCH_FAMILY, ...TOOL_REQUIREMENTS]);
    // the distributions a repository declares or imports (PEP 503 names)
    const namedBy = new Map(
      n.repos.map((x) => [
        x.name,
        new Set([...x.declared, ...x.imported].map((d) => normalizeDistName(requirementName(d) ?? ''))),
      ]),
    );
    for (const g of groups) {
      const prev = previous?.groups.find((x) => x.dir === g.dir);
      const same =
        prev?.importFailures &&
        prev.importProbe === PROBE_VERSION &&
        prev.lockDigest === g.lockDigest &&
        JSON.stringify(prev.indexed.map((x) => x.checkout)) === JSON.stringify(g.indexed.map((x) => x.checkout));
      const installed = new Map(g.pins.map((p) => p.split('==') as [string, string]));
      for (const c of checkoutPins(n, g.repos).values()) installed.set(normalizeDistName(c.distribution), c.version);
      const dists = [
        ...new Set(
          g.requirements
            .filter((r) => !r.checkout && r.neededBy.some((x) => x !== 'nnrag'))
            .map((r) => normalizeDistName(requirementName(r.spec) ?? ''))
            .filter((k) => k && installed.has(k) && !skip.has(k)),
        ),
      ].sort();
      const t0 = Date.now();
      // what the probe found in an earlier environment of the same lock, checkouts,
      // operators and interpreter: the same files import alike
      const probeKey =
        reuse && !same
          ? reuse.cache.key('probe', [
              reuse.machine,
              PROBE_VERSION,
              g.lockDigest,
              g.indexed.map((x) => [x.repo, x.checkout, !!x.error]),
              g.native.map((b) => [
                b.repo,
                b.dir && path.relative(n.repos.find((r) => r.name === b.repo)?.root ?? '/', b.dir),
                b.source ?? null,
                b.wheel ? path.relative(path.dirname(path.dirname(b.wheel)), b.wheel) : null,
              ]),
              g.fromIndex ?? [],
              dists,
            ])
          : null;
      const probed = reuse?.cache.get<ImportFailure[]>(probeKey);
      g.importFailures = same ? prev!.importFailures! : (probed ?? (await probeImports(envPython(g.dir), dists)));
      g.importProbe = PROBE_VERSION;
      if (!same && !probed) reuse?.cache.put(probeKey, g.importFailures);
      if (!same)
        log(
          `  imported ${dists.length} requirements of ${g.name === 'shared' ? 'the shared environment' : g.name}: ${g.importFailures.length} failed (${probed ? 'as in an earlier environment of the same lock' : `${((Date.now() - t0) / 1000).toFixed(0)} s`})`,
        );
      for (const f of g.importFailures) {
        const by = `${normalizeDistName(f.distribution)}==${installed.get(normalizeDistName(f.distribution)) ?? '?'}`;
        for (const b of unmetBounds(f, installed)) {
          if ([...constraints, ...fresh].some((c) => c.requirement === b.requirement && c.by === by)) continue;
          const named = g.repos.filter((r) => namedBy.get(r)?.has(normalizeDistName(f.distribution)));
          const c: LearntConstraint = { ...b, by, error: f.error.slice(0, 400), repos: named.length ? named : g.repos };
          fresh.push(c);
          log(
            `  ${by} enforces ${b.requirement} at import (installed: ${b.distribution} ${b.installed}): ${chain.pass < IMPORT_PASSES ? 'resolving again with it' : `not applied (resolved ${chain.pass} times already; \`env sync\` applies it)`} as a requirement of ${c.repos.join(', ')}`,
          );
        }
      }
    }
    if (fresh.length && chain.pass < IMPORT_PASSES) {
      // what the passes learnt, for the next environment of the same input: it starts
      // at the next pass
      const all = [...constraints, ...fresh];
      reuse?.cache.put(boundsKey, { bounds: all, pass: chain.pass + 1 } satisfies BoundsDecision);
      // what this pass installed is the previous state of the next: what it left
      // unchanged (locks, checkouts at the same revision) is not installed again
      writeFileSync(manifestPath(target), JSON.stringify(manifest, null, 1) + '\n');
      return syncPyPIEnvironment(dir, needs, nextPass(opts), all, { pass: chain.pass + 1, boundsKey });
    }
    // the last pass's: kept in the manifest, for env sync to apply
    if (fresh.length) manifest.importConstraints = [...constraints, ...fresh];
  }
  writeFileSync(manifestPath(target), JSON.stringify(manifest, null, 1) + '\n');
  return manifest;
}
