// `nnrag doctor` and `nnrag env create|sync` as functions of the API: the validation
// environment (interpreter, torch, sandbox, limits, environment id) with what a store's
// repositories need that it lacks; a root filesystem made or synced with what a store
// needs (src/environment/rootfs.ts, debian.ts).
import {
  environmentGaps,
  environmentRequirements,
  torchFamilyImports,
  type EnvironmentGap,
  type RepoRequirements,
} from '../environment/repo-requirements.js';
import { normalizeDistName } from '../environment/names.js';
import { checkRootfs, doctor as checkEnvironment, type DoctorReport, type PoolOptions } from '../validate/index.js';
import { createRootfs } from '../environment/rootfs.js';
import { storeNeeds, syncEnvironment, type EnvNeed, type SyncResult } from '../environment/debian.js';
import type { Workspace } from '../workspace.js';
import { storeEnvironment } from '../pipeline/environment.js';
import { requirements } from './requirements.js';
import { KNOWN_DISTRIBUTIONS, REMOVED_MODULES } from '../environment/names.js';
import { TORCH_FAMILY } from '../environment/as-of.js';
import {
  nnragHome,
  syncPyPIEnvironment,
  type EnvManifestPyPI,
  type PyPINeeds,
  type PyPIOptions,
} from '../environment/pypi.js';
import { KV_KEYS } from '../store/kv.js';
import { shadowedPackages, type ShadowedPackage } from '../environment/shadowing.js';
import { createHash } from 'node:crypto';
import path from 'node:path';

/** `nnrag doctor`: the validation environment; with a store (and without a root
 *  filesystem), also the distributions its repositories need that the environment lacks
 *  (`missing`). */
export async function doctor(
  opts: PoolOptions = {},
  ws?: Workspace,
  onWarning?: (m: string) => void,
): Promise<DoctorReport & { missing?: EnvironmentGap[]; shadowed?: ShadowedPackage[] }> {
  const rep = await checkEnvironment(opts);
  if (!ws || !rep.distributions || rep.rootfs) return rep;
  const installed = new Set(rep.distributions.map((d) => normalizeDistName(d.split('==')[0])));
  // installed versions, for the declared specifiers (torch as imported: a source build
  // may register no distribution)
  const versions = new Map(
    rep.distributions.map((d) => [normalizeDistName(d.split('==')[0]), d.split('==')[1] ?? ''] as [string, string]),
  );
  if (rep.torch) {
    versions.set('torch', rep.torch);
    installed.add('torch');
  }
  const missing = await environmentGaps(
    await requirements(ws, { python: rep.python ?? undefined, onWarning }),
    installed,
    versions,
  );
  // a checkout validation puts ahead of an installed release whose compiled files it lacks
  const roots = new Map(ws.store.listRepos().map((r) => [r.name, r.root]));
  const shadowed = shadowedPackages(
    [...storePackages(ws)]
      .filter(([repo]) => roots.has(repo))
      .map(([repo, packages]) => ({
        repo,
        root: roots.get(repo)!,
        packages,
      })),
    rep.sysPath ?? [],
  );
  return { ...rep, missing, shadowed };
}

/** What a store's repositories need in a root filesystem (`env create/sync --store`): the
 *  distributions their blocks import or they declare, minus what the store indexes itself. */
export async function environmentNeeds(
  ws: Workspace,
  opts: { python?: string; onWarning?: (m: string) => void } = {},
): Promise<EnvNeed[]> {
  return storeNeeds(await requirements(ws, opts), indexedTopLevel(ws));
}

/** What a store asks of a PyPI environment: per repository, its declared requirements
 *  (install group, and those of other groups its blocks import: `environmentRequirements`;
 *  as written, markers included: the resolver evaluates them) and the
 *  distributions its blocks import without declaring them, when the distribution is known
 *  (installed metadata of the probing interpreter, or the table of known names), and
 *  torch's family that its packages import (torchFamilyImports); an import of an unknown
 *  name is reported, never installed on a guess. */
export async function pypiNeeds(
  ws: Workspace,
  opts: { python?: string; onWarning?: (m: string) => void } = {},
): Promise<PyPINeeds> {
  const reqs = await requirements(ws, opts);
  const indexed = indexedTopLevel(ws);
  const roots = new Map(ws.store.listRepos().map((r) => [r.name, r.root]));
  // torch is the environment's own; an import the probing interpreter has is known by its
  // installed metadata, else by the table, else it is a guess
  const open = (i: RepoRequirements['imports'][number]) =>
    !i.declared && !indexed.has(i.module) && i.module !== 'torch';
  const known = (i: RepoRequirements['imports'][number]) =>
    !!KNOWN_DISTRIBUTIONS[i.module] || !!REMOVED_MODULES[i.module] || !!i.importable;
  const packages = storePackages(ws);
  return {
    indexed,
    repos: reqs
      .map((r) => {
        const root = roots.get(r.repo) ?? '';
        // torch's family, imported anywhere in the repository's packages (not its own
        // package): kept even when an indexed repository provides it, for a group without
        // that repository takes it from the index at its torch's version (pypi.ts
        // groupRequirements); a declaration of it in any group gives its versions
        const family = root
          ? torchFamilyImports(
              root,
              packages.get(r.repo) ?? [],
              TORCH_FAMILY.filter((m) => m !== 'torch' && indexed.get(m) !== r.repo),
            )
          : [];
        // an import of a module its distribution removed asks for a release before the
        // removal, declared or not (names.ts REMOVED_MODULES)
        const imported = [
          ...r.imports.filter((i) => open(i) && known(i) && !REMOVED_MODULES[i.module]).map((i) => i.distribution),
          ...r.imports
            .filter((i) => REMOVED_MODULES[i.module] && !indexed.has(i.module))
            .map((i) => REMOVED_MODULES[i.module]),
        ];
        const has = new Set([...r.declared.map((d) => d.key), ...imported.map((d) => normalizeDistName(d))]);
        for (const m of family) if (!has.has(normalizeDistName(m))) imported.push(m);
        return {
          name: r.repo,
          root,
          declared: environmentRequirements(r.declared, [...r.imports.map((i) => i.distribution), ...family]).map(
            (d) => d.spec,
          ),
          imported,
          unknown: r.imports.filter((i) => open(i) && !known(i)).map((i) => i.module),
        };
      })
      .filter((r) => r.root),
  };
}

/** Per repository, its top-level packages the store indexes, as paths relative to its root:
 *  the folder of a package (`mmocr`, `projects/ABCNet/abcnet`) or a top-level module's file
 *  (`models_vit.py`), read from the stored files' paths and module names. */
function storePackages(ws: Workspace): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const f of [...ws.store.listFiles(), ...ws.store.listSupportFiles()]) {
    if (!f.module) continue;
    const mod = f.module.split('.');
    const parts = f.path.replace(/\.py$/, '').split('/');
    const init = parts[parts.length - 1] === '__init__';
    if (init) parts.pop();
    const top =
      mod.length === 1 && !init ? f.path : parts.slice(0, Math.max(1, parts.length - mod.length + 1)).join('/');
    const set = out.get(f.repo) ?? new Set<string>();
    set.add(top);
    out.set(f.repo, set);
  }
  return new Map([...out].map(([r, s]) => [r, [...s].sort()]));
}

/** `nnrag env create|sync DIR` with the PyPI backend (the default): a virtual environment
 *  made with uv, locked, with the store's requirements (null: torch and the tools). */
export async function pypiEnv(
  target: string,
  needs: PyPINeeds | null,
  opts: PyPIOptions,
  ws?: Workspace,
): Promise<EnvManifestPyPI> {
  const m = await syncPyPIEnvironment(target, needs, opts);
  if (ws) ws.store.setKV(KV_KEYS.environment, JSON.stringify(target));
  return m;
}

/** What went wrong in making a PyPI environment, split by whether the environment is
 *  usable: an indexed repository that did not install, or an operator build that failed
 *  for another reason, is a failure (`env create` exits 1); an operator build that needs
 *  CUDA on a machine without a CUDA toolkit is optional there, so a warning (its blocks
 *  fail validation as `native-extension` or `native-op-no-cpu`, as they would for any
 *  user of a CPU-only machine). */
export function environmentProblems(m: EnvManifestPyPI): { failures: string[]; warnings: string[] } {
  const failures: string[] = [];
  const warnings: string[] = [];
  for (const g of m.groups) {
    for (const x of g.indexed)
      if (x.error)
        failures.push(
          `${x.distribution} from the indexed ${x.repo} did not install: ${x.error.split('\n').slice(-1)[0]}`,
        );
    for (const b of g.native) {
      if (!b.error) continue;
      if (b.needsCuda)
        warnings.push(
          `the compiled operators of ${b.repo} in ${b.source ?? b.dir} need CUDA, which this machine does not have: not built (the environment is usable; blocks calling them fail validation)`,
        );
      else
        failures.push(
          `the compiled operators of ${b.repo} in ${b.source ?? b.dir} did not build: ${b.error.split('\n')[0]}`,
        );
    }
  }
  return { failures, warnings };
}

/** Failure categories a PyPI environment made for the store can remove: a requirement the
 *  environment lacks, a torch of another release, an operator its build compiles. */
const ENVIRONMENT_FIXES = new Set(['missing-extern', 'torch-version', 'native-extension']);

/** The one command that gives a store's blocks what they lack, when some failed for it:
 *  `nnrag env create DIR --store S` (a folder under nnrag's home named for the store), or
 *  `env sync` of the environment the store already has. The store remembers the
 *  environment, so the same extract or validate command then validates in it. */
export function environmentNextStep(
  ws: Workspace,
  records: { validation?: { category?: string | null } | null }[],
): string | null {
  const n = records.filter((r) => r.validation?.category && ENVIRONMENT_FIXES.has(r.validation.category)).length;
  if (!n) return null;
  const store = path.resolve(ws.storeDir);
  const made = storeEnvironment(ws);
  if (made)
    return `${n} blocks failed for what the environment lacks: \`nnrag env sync ${made} --store ${store}\` adds what the store's repositories need since it was made; then run this command again`;
  const dir = path.join(
    nnragHome(),
    'envs',
    `${path.basename(path.dirname(store)) || 'store'}-${createHash('sha256').update(store).digest('hex').slice(0, 8)}`,
  );
  return `${n} blocks failed for what the environment lacks (requirements, torch release, compiled operators): \`nnrag env create ${dir} --store ${store}\` makes a PyPI environment with what the store's repositories need; then run this command again (the store remembers the environment)`;
}

/** Top-level module names of the store's indexed repositories → repository. */
function indexedTopLevel(ws: Workspace): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of [...ws.store.listFiles(), ...ws.store.listSupportFiles()]) {
    const top = f.module?.split('.')[0];
    if (top && !out.has(top)) out.set(top, f.repo);
  }
  return out;
}

export interface EnvOptions {
  /** what a store needs (environmentNeeds); null: no store */
  needs: EnvNeed[] | null;
  /** Debian packages to add */
  packages?: string[];
  /** a folder of wheels for what Debian does not package */
  wheels?: string;
  onLog?: (line: string) => void;
}

/** `nnrag env create DIR` / `nnrag env sync DIR`: make the root filesystem (create), then
 *  install what the store needs, the packages and the wheels. `create` without a store and
 *  without wheels installs the packages with debootstrap and returns no sync result. */
export async function env(
  sub: 'create' | 'sync',
  target: string,
  opts: EnvOptions,
): Promise<{ rootfs: string } & Partial<SyncResult>> {
  const withStore = opts.needs !== null;
  const packages = opts.packages ?? [];
  if (sub === 'create')
    await createRootfs(target, { packages: withStore ? [] : packages, onLog: opts.onLog, check: checkRootfs });
  if (sub === 'create' && !withStore && !opts.wheels) return { rootfs: target };
  const r = await syncEnvironment(target, opts.needs ?? [], { packages, wheels: opts.wheels, onLog: opts.onLog });
  return { rootfs: target, ...r };
}
