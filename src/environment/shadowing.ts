// A repository checkout that shadows an installed package with compiled files. Validation
// puts an indexed repository's checkout on sys.path ahead of site-packages (its originals
// and harvests import the checkout), so a checkout of a package whose release ships
// compiled extension modules (PEP 3149 / importlib.machinery.EXTENSION_SUFFIXES: `.so`,
// `.pyd`) that the checkout lacks (an unbuilt source tree, the `.py` files of a wheel)
// fails at import (torchvision's `operator torchvision::nms does not exist`), in every
// harvest and equivalence that imports it. `doctor --store` names it with the fix.
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

export interface ShadowedPackage {
  repo: string;
  /** the package's folder in the checkout, relative to the repository root */
  package: string;
  /** the installed package's folder it shadows */
  installed: string;
  /** compiled files of the installed package the checkout lacks, relative to its folder */
  missing: string[];
}

const EXTENSION = /\.(so|pyd)$/;
/** how many files of an installed package are looked at (a package of thousands of files
 *  is still read in milliseconds; a pathological one is cut short) */
const MAX_FILES = 20000;

/** Compiled extension files under `dir`, relative to it (`_C.cpython-311-x86_64-linux-gnu.so`,
 *  `ops/_ext.so`), skipping `__pycache__`. */
function extensionFiles(dir: string): string[] {
  const out: string[] = [];
  let seen = 0;
  const walk = (d: string, rel: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names.sort()) {
      if (++seen > MAX_FILES) return;
      if (n === '__pycache__') continue;
      const p = path.join(d, n);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p, rel ? `${rel}/${n}` : n);
      else if (EXTENSION.test(n)) out.push(rel ? `${rel}/${n}` : n);
    }
  };
  walk(dir, '');
  return out;
}

/** An extension module's name: the file name up to its first dot (`_C` of
 *  `_C.cpython-311-x86_64-linux-gnu.so` or `_C.so`), which is what `import` looks up. */
const moduleOf = (rel: string) => {
  const slash = rel.lastIndexOf('/');
  const base = rel.slice(slash + 1);
  return `${rel.slice(0, slash + 1)}${base.split('.')[0]}`;
};

/** The repositories' packages (top-level package folders relative to each root) that
 *  shadow a package of the same name installed on `sysPath` whose compiled extension
 *  modules the checkout lacks. An installed package that is the checkout itself (an
 *  editable install) is not a shadow. */
export function shadowedPackages(
  repos: readonly { repo: string; root: string; packages: readonly string[] }[],
  sysPath: readonly string[],
): ShadowedPackage[] {
  const out: ShadowedPackage[] = [];
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  for (const r of repos) {
    const root = real(r.root);
    for (const pkg of r.packages) {
      const local = path.join(root, ...pkg.split('/'));
      if (pkg.endsWith('.py') || !existsSync(path.join(local, '__init__.py'))) continue;
      const name = path.basename(local);
      for (const entry of sysPath) {
        const installed = path.join(entry, name);
        if (!existsSync(path.join(installed, '__init__.py'))) continue;
        const realInstalled = real(installed);
        if (realInstalled === local || realInstalled.startsWith(root + path.sep)) break;
        const have = new Set(extensionFiles(local).map(moduleOf));
        const missing = extensionFiles(installed).filter((f) => !have.has(moduleOf(f)));
        if (missing.length) out.push({ repo: r.repo, package: pkg, installed, missing });
        break; // the first installed copy on sys.path is the one the checkout shadows
      }
    }
  }
  return out;
}
