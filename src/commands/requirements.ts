// `nnrag requirements` (and the gaps `nnrag doctor` reports): what each indexed repository
// needs — requirements its packaging files declare, the imports of its emitted blocks —
// with the validation interpreter saying which distribution provides an import.
import { repositoryRequirements, type RepoRequirements } from '../environment/repo-requirements.js';
import { probeEnvironment } from '../environment/requirements.js';
import { KNOWN_DISTRIBUTIONS } from '../environment/names.js';
import { initParser } from '../parse/parser.js';
import { listExtractions } from '../store/records.js';
import { UsageError } from '../util/errors.js';
import type { Workspace } from '../workspace.js';
import { storedBlocks } from './discover.js';

export interface RequirementsOptions {
  /** only these repositories (all when empty) */
  repos?: string[];
  /** the validation interpreter */
  python?: string;
  onWarning?: (message: string) => void;
}

export async function requirements(ws: Workspace, opts: RequirementsOptions = {}): Promise<RepoRequirements[]> {
  await initParser(); // setup.py is read from its syntax tree
  const repos = ws.store.listRepos().filter((r) => !opts.repos?.length || opts.repos.includes(r.name));
  if (opts.repos?.length && !repos.length) throw new UsageError(`--repos: none of ${opts.repos.join(', ')} is indexed`);
  const repoOf = new Map(storedBlocks(ws).map((b) => [b.id, b.repo]));
  const blocks = listExtractions(ws.store).map((e) => ({ repo: repoOf.get(e.id) ?? '', externs: e.record.externs }));
  const names = [...new Set(blocks.flatMap((b) => b.externs.map((x) => x.split('.')[0])))].filter(Boolean);
  let probe: Awaited<ReturnType<typeof probeEnvironment>> | null = null;
  try {
    probe = names.length ? await probeEnvironment(names, { python: opts.python }) : null;
  } catch (e) {
    opts.onWarning?.(`${(e as Error).message}; import names are mapped by a table only`);
  }
  return repositoryRequirements(
    repos.map((r) => ({ name: r.name, root: r.root })),
    blocks,
    (m) => probe?.names[m]?.dists[0]?.[0] ?? KNOWN_DISTRIBUTIONS[m] ?? m,
    (m) => !!probe?.names[m]?.stdlib,
    probe ? (m) => !!probe!.names[m]?.found : undefined,
  );
}
