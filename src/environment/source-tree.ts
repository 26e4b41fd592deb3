// The source tree an indexed repository is installed or built from. A checkout made for
// indexing is often sparse (git's sparse-checkout keeps the Python, config and C++ sources
// and leaves out the rest), and a build backend may need a file it left out: flit_core
// reads the LICENSE that pyproject.toml names, setuptools the README, a C++ build its
// headers. Users install a repository from its whole tree, so a sparse or incomplete
// checkout is installed from the whole tree at its revision, read from the repository's
// own objects (`git archive`), with the checkout's modified tracked files laid over it
// (the indexed files are the ones installed). A clone may lack those objects (a partial
// clone, `git clone --filter`, fetches them on demand, which is never done here; a copied
// or pruned object store just lacks them): the checkout is then used as it is, and the
// reason is given (`incomplete`), so that a build that fails for a missing file says why.
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NnragError } from '../util/errors.js';
import { runCmd, type Run } from './run.js';

export interface SourceTree {
  /** the folder to install or build from */
  dir: string;
  /** the whole tree was exported from the repository's objects (else `dir` is the checkout) */
  exported?: { revision: string; missingInCheckout: number };
  /** why the checkout, which lacks tracked files, is used as it is: the repository lacks
   *  their objects */
  incomplete?: string;
  /** removes an exported tree */
  dispose(): void;
}

/** git in `cwd`, never prompting. */
function git(cwd: string, args: string[]): Promise<Run> {
  return runCmd('git', ['-C', cwd, ...args], { env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
}

/** The tree to install `dir` (a folder of a git checkout, or any folder) from: the
 *  checkout itself when it holds every tracked file, else the whole tree at HEAD. */
export async function installableTree(dir: string): Promise<SourceTree> {
  const asIs: SourceTree = { dir, dispose: () => {} };
  const top = await git(dir, ['rev-parse', '--show-toplevel']);
  if (top.code !== 0) return asIs; // not in git: the folder is all there is
  const root = top.stdout.trim();
  // tracked files the work tree lacks: skip-worktree entries of a sparse checkout (`S`,
  // `git ls-files -v`) and deleted ones
  const listed = await git(root, ['ls-files', '-v', '-z']);
  const missing = listed.stdout.split('\0').filter((l) => /^S /.test(l)).length;
  const deleted = (await git(root, ['ls-files', '--deleted', '-z'])).stdout.split('\0').filter(Boolean).length;
  if (!missing && !deleted) return asIs;
  const rev = (await git(root, ['rev-parse', 'HEAD'])).stdout.trim();
  const incomplete = (what: string): SourceTree => ({
    ...asIs,
    incomplete: `${root} is a sparse checkout (${missing + deleted} tracked files not in it) of a clone that lacks ${what} of ${rev.slice(0, 12)}'s tree, so it is installed from the checkout as it is (\`git -C ${root} fetch --refetch\` gets them)`,
  });
  // a partial clone: the objects it lacks would be fetched on demand; listed instead
  // (`--missing=print` marks each absent object with `?` and fetches nothing)
  const promisor =
    (await git(root, ['config', '--get', 'extensions.partialClone'])).stdout.trim() ||
    (await git(root, ['config', '--get-regexp', '^remote\\..*\\.promisor$'])).stdout.trim();
  if (promisor) {
    const objs = await git(root, ['rev-list', '--objects', '--missing=print', rev]);
    const absent = objs.stdout.split('\n').filter((l) => l.startsWith('?')).length;
    if (objs.code !== 0 || absent) return incomplete(absent ? `${absent} objects` : 'objects');
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'nnrag-tree-'));
  const dispose = () => rmSync(tmp, { recursive: true, force: true });
  const tar = path.join(tmp, 'tree.tar');
  const tree = path.join(tmp, 'tree');
  mkdirSync(tree);
  const arch = await git(root, ['archive', '--format=tar', '-o', tar, rev]);
  const untar = arch.code === 0 ? (await runCmd('tar', ['-xf', tar, '-C', tree])).code : 1;
  rmSync(tar, { force: true });
  if (untar !== 0) {
    dispose();
    // an object store without the objects (`error: cannot read <id>`, or a promisor pack
    // whose remote cannot give them)
    if (/cannot read|invalid object|missing|bad object|could not fetch/i.test(arch.stderr))
      return incomplete('objects');
    throw new NnragError(
      `git archive of ${root} at ${rev.slice(0, 12)} failed: ${arch.stderr.trim().split('\n').slice(-2).join(' ')}`,
    );
  }
  // the checkout's modified tracked files, as indexed
  const changed = (await git(root, ['diff', '--name-only', '-z', 'HEAD'])).stdout.split('\0').filter(Boolean);
  for (const rel of changed) {
    try {
      mkdirSync(path.dirname(path.join(tree, rel)), { recursive: true });
      copyFileSync(path.join(root, rel), path.join(tree, rel));
    } catch {
      /* deleted in the checkout: the revision's file stays */
    }
  }
  return {
    dir: path.join(tree, path.relative(realpathSync(root), realpathSync(dir))),
    exported: { revision: rev, missingInCheckout: missing + deleted },
    dispose,
  };
}
