// Slim emission's package boundary: a module of another indexed repository than the
// block's is imported from the validation environment's installed distribution, instead
// of copied, when that distribution installed the indexed file's very bytes (its RECORD
// lists the file, PEP 376/627, with the sha256 of the bytes on disk, and their git blob id
// is the indexed one). The decision is per module file; the namespace stage then proves
// that each imported name denotes the original's object (src/validate/README.md).
import type { InstalledFiles } from '../../environment/installed.js';
import { gitBlobId } from '../../repos/git.js';
import type { InstalledSource, PackageUse } from '../../resolve/closure.js';
import type { CorpusModule } from '../../resolve/corpus.js';

export type InstalledLookup = (mod: CorpusModule) => InstalledSource | { copied: string };

/** The closure's `installed` lookup over one environment's installed files, its answers
 *  memoised per module (made per block: the files' RECORDs are read once, by `files`). */
export function installedLookup(files: InstalledFiles): InstalledLookup {
  const memo = new Map<CorpusModule, InstalledSource | { copied: string }>();
  return (mod) => {
    let r = memo.get(mod);
    if (!r) memo.set(mod, (r = decide(files, mod)));
    return r;
  };
}

function decide(files: InstalledFiles, mod: CorpusModule): InstalledSource | { copied: string } {
  const top = mod.name.split('.')[0];
  const m = files.module(mod.name, mod.isPackage);
  if (!m) return { copied: `no distribution installed in the validation environment lists these ${top} files` };
  const bytes = files.bytes(m);
  if (!bytes) return { copied: `the installed ${m.distribution} ${m.version} files differ from its RECORD` };
  if (gitBlobId(bytes) !== mod.blob)
    return {
      copied: `the installed ${m.distribution} ${m.version} has other bytes in these files than the indexed checkout`,
    };
  return { distribution: m.distribution, version: m.version };
}

/** The installed distributions a closure imports from: one entry per distribution, with
 *  its version, repository and the modules imported (sorted). */
export function importedPackages(
  uses: readonly PackageUse[],
): { distribution: string; version: string; repo: string; modules: string[] }[] {
  const by = new Map<string, { distribution: string; version: string; repo: string; modules: string[] }>();
  for (const u of uses) {
    if (u.copied !== undefined || !u.distribution || !u.version) continue;
    const k = `${u.distribution}==${u.version}`;
    let e = by.get(k);
    if (!e) by.set(k, (e = { distribution: u.distribution, version: u.version, repo: u.repo, modules: [] }));
    if (!e.modules.includes(u.module)) e.modules.push(u.module);
  }
  return [...by.values()]
    .map((e) => ({ ...e, modules: e.modules.sort() }))
    .sort((a, b) => a.distribution.localeCompare(b.distribution));
}

/** Header lines: the distributions imported instead of copied, and the modules of other
 *  repositories still copied with why (`copiedModules`: those the module holds code of). */
export function packagesHeader(uses: readonly PackageUse[], copiedModules: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const imported = importedPackages(uses);
  if (imported.length) {
    out.push('# Slim profile: imported from installed distributions (the same files as the indexed repositories):');
    for (const p of imported)
      out.push(`#   ${p.distribution}==${p.version} (${p.repo}): ${short(p.modules.join(', '))}`);
  }
  const copied = uses.filter((u) => u.copied !== undefined && copiedModules.has(`${u.repo}\0${u.module}`));
  if (copied.length) {
    out.push('# Slim profile: copied from other repositories (not imported):');
    const why = new Map<string, string[]>();
    for (const u of copied) {
      const k = `${u.repo}: ${u.copied}`;
      const l = why.get(k);
      if (l) l.push(u.module);
      else why.set(k, [u.module]);
    }
    for (const [k, mods] of why) out.push(`#   ${short(`${mods.join(', ')} (${k})`)}`);
  }
  return out;
}

function short(s: string): string {
  return s.length > 200 ? `${s.slice(0, 197)}...` : s;
}
