// What a `missing-extern` failure lacks, said as a requirement: the import name from the
// error, its distribution, the Debian package that would provide it, and whether the
// validation environment could have it (Debian has the package, it is not installed:
// `lacks`), cannot (no Debian package under dh-python's or the policy's names:
// `no-package`), has the package but another version of the API (`module 'x' has no
// attribute`: `version`), or that nnrag cannot tell (no apt to ask: `unknown`).
// Lookups are memoised per module name (one `apt-cache policy` per name and run).
import { aptCandidates } from '../environment/apt.js';
import { debianCandidatesFor, installedDebianPackages, readManifest } from '../environment/debian.js';
import { KNOWN_DISTRIBUTIONS } from '../environment/names.js';
import type { MissingRequirement } from '../records/validation.js';

/** The missing module of a missing-extern error: `No module named 'x.y'` → x (PEP 328
 *  names; relative imports never reach here), `module 'x' has no attribute` → x with the
 *  verdict `version`. */
export function missingModuleOf(error: string | null | undefined): { module: string; version: boolean } | null {
  if (!error) return null;
  const m = /No module named '([\w.]+)'/.exec(error);
  if (m) return { module: m[1].split('.')[0], version: false };
  const a = /module '([\w.]+)' has no attribute/.exec(error);
  if (a) return { module: a[1].split('.')[0], version: true };
  const c = /cannot import name '\w+' from '([\w.]+)'/.exec(error);
  if (c) return { module: c[1].split('.')[0], version: true };
  return null;
}

/** A memoised lookup for one validation environment (the host's Debian, or a root
 *  filesystem made by `nnrag env create`). */
export function missingLookup(env: {
  rootfs: string | null;
}): (error: string | null | undefined) => Promise<MissingRequirement | null> {
  const memo = new Map<string, Promise<MissingRequirement>>();
  let installed: Set<string> | null = null;
  const one = async (module: string): Promise<MissingRequirement> => {
    installed ??= new Set(installedDebianPackages(env.rootfs ?? '/').map((p) => p.split('=')[0]));
    // a root filesystem's manifest knows packages the names do not (found in Debian's
    // Contents index by `env create/sync`: cv2 → python3-opencv)
    const known = env.rootfs
      ? readManifest(env.rootfs)?.entries.find((e) => e.modules.includes(module) && e.package)
      : undefined;
    const distribution = known?.distribution ?? KNOWN_DISTRIBUTIONS[module] ?? module;
    const tries = [
      ...new Set([
        ...(known?.package ? [known.package] : []),
        ...debianCandidatesFor({ distribution, modules: [module] }),
      ]),
    ];
    const inst = tries.find((p) => installed!.has(p));
    if (inst) return { module, distribution, debian: inst, candidate: null, installed: true, verdict: 'version' };
    const policy = await aptCandidates(tries, env.rootfs);
    if (!policy)
      return { module, distribution, debian: tries[0], candidate: null, installed: false, verdict: 'unknown' };
    const found = tries.find((p) => policy.get(p));
    return found
      ? { module, distribution, debian: found, candidate: policy.get(found)!, installed: false, verdict: 'lacks' }
      : { module, distribution, debian: tries[0], candidate: null, installed: false, verdict: 'no-package' };
  };
  return async (error) => {
    const m = missingModuleOf(error);
    if (!m) return null;
    let p = memo.get(m.module);
    if (!p) memo.set(m.module, (p = one(m.module)));
    const r = await p;
    // an attribute error comes from a module that imported: another version of its API
    return m.version ? { ...r, verdict: 'version' } : r;
  };
}
