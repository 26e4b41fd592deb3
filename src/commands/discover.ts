// `nnrag discover` as a function of the API, and the naming of blocks every later command
// uses: discover the corpus's nn.Module blocks (src/discover) and store them; stored
// blocks; a name (`Mlp`, `layers.Mlp`, an id) to the one block it names; the selection
// of `extract` / `validate` (names or every block, `startFrom`, `limit`).
import { symbolMatches } from '../config/scope.js';
import { Discovery, type Block } from '../discover/discover.js';
import { parseBlockId } from '../discover/ids.js';
import { NnragError, UsageError } from '../util/errors.js';
import { suggest } from '../util/suggest.js';
import type { Workspace } from '../workspace.js';

// ---------------------------------------------------------------- discover

export interface DiscoverOptions {
  /** symbol patterns (`timm.layers.*`, `Mlp`) */
  symbols?: string[];
  repos?: string[];
}

/** Discover every block of the corpus, store them, and return those in scope. */
export function discover(ws: Workspace, opts: DiscoverOptions = {}): Block[] {
  const d = new Discovery(ws.corpus(), ws.resolver());
  const all = d.discover();
  const byRepo = new Map<string, Block[]>();
  for (const r of ws.store.listRepos()) byRepo.set(r.name, []);
  for (const b of all) byRepo.get(b.repo)?.push(b);
  for (const [repo, rows] of byRepo) ws.store.replaceBlocks(repo, rows);
  // symbol patterns match case-insensitively (`*attention` finds WindowAttention)
  const symbols = opts.symbols?.map((p) => p.toLowerCase());
  return all.filter(
    (b) =>
      (!symbols?.length ||
        symbolMatches(symbols, b.id.toLowerCase()) ||
        symbolMatches(symbols, `${b.module}.${b.name}`.toLowerCase()) ||
        symbolMatches(symbols, b.name.toLowerCase())) &&
      (!opts.repos?.length || opts.repos.includes(b.repo)),
  );
}

/** Stored blocks (discovering first when the store has none yet). */
export function storedBlocks(ws: Workspace): Block[] {
  const rows = ws.store.listBlocks();
  if (rows.length) return rows.map(({ data: _data, ...b }) => b);
  return discover(ws);
}

export interface NameResolution {
  id: string;
  requested: string;
}

/** Accept ids, `repo:module.Class`, `module.Class`, a dotted tail of it (`common.Conv`)
 *  or the bare class name, each only where it names one block. A name no block has is
 *  an NnragError ('unknown-block'); a name several blocks answer to is a UsageError
 *  (exit 2) listing the candidates with their repositories. */
export function resolveBlockNames(ws: Workspace, names: string[]): NameResolution[] {
  const blocks = storedBlocks(ws);
  const byId = new Map(blocks.map((b) => [b.id, b]));
  return names.map((requested) => {
    if (byId.has(requested)) return { id: requested, requested };
    const want = parseBlockId(requested);
    const cands = blocks.filter((b) => {
      if (want.repo !== null && want.repo !== b.repo) return false;
      const q = `${b.module}.${b.name}`;
      return q === want.qualified || b.name === want.qualified || q.endsWith(`.${want.qualified}`);
    });
    if (!cands.length) {
      if (!blocks.length) {
        const repos = ws.store.listRepos();
        // a repository without Python files has no blocks: say which, and where it is
        const empty = repos.filter((r) => !ws.store.listFiles(r.name).length);
        const hint = !repos.length
          ? 'nothing is indexed: run `nnrag index --repo PATH` first (or `nnrag extract --repo PATH --block NAME`)'
          : empty.length === repos.length
            ? `the indexed ${repos.length === 1 ? 'repository has' : 'repositories have'} no Python files (${empty.map((r) => `${r.name} at ${r.root}`).join('; ')}): give the folder that holds the .py files`
            : `no nn.Module subclasses were discovered in the indexed repositories${empty.length ? ` (without Python files: ${empty.map((r) => r.name).join(', ')})` : ''}`;
        throw new NnragError(`no block named ${JSON.stringify(requested)}: ${hint}`, 'unknown-block');
      }
      const near = suggest(
        want.qualified.split('.').pop()!,
        blocks.map((b) => b.name),
      );
      throw new NnragError(
        `no block named ${JSON.stringify(requested)}${near.length ? `; did you mean ${near.join(', ')}?` : ''} (\`nnrag discover\` lists the blocks)`,
        'unknown-block',
      );
    }
    if (cands.length > 1) {
      const list = cands.map((b) => `  ${b.id}  (${b.repo}, ${b.path}:${b.line})`).join('\n');
      throw new UsageError(
        `${JSON.stringify(requested)} is ambiguous: ${cands.length} blocks answer to it; give one of\n${list}`,
      );
    }
    return { id: cands[0].id, requested };
  });
}

export interface Selection {
  /** block names (ids, `module.Class`, a dotted tail, a bare class name); none: every block */
  names?: string[];
  /** start at this block (an id, or the tail of one) */
  startFrom?: string;
  /** at most this many blocks */
  limit?: number;
}

/** The ids `extract` / `validate` work on: the named blocks (resolveBlockNames), else every
 *  stored block; then `startFrom` and `limit`. */
export function selectBlocks(ws: Workspace, sel: Selection = {}): string[] {
  let ids = sel.names?.length ? resolveBlockNames(ws, sel.names).map((r) => r.id) : storedBlocks(ws).map((b) => b.id);
  if (sel.startFrom) {
    const start = sel.startFrom;
    const i = ids.findIndex((id) => id === start || id.endsWith(`.${start}`));
    if (i < 0) throw new UsageError(`--start-from ${start}: no such block in the selection`);
    ids = ids.slice(i);
  }
  if (sel.limit !== undefined) {
    if (!Number.isInteger(sel.limit) || sel.limit < 0) throw new UsageError('--limit takes a whole number');
    ids = ids.slice(0, sel.limit);
  }
  return ids;
}

/** Names for `discover --names-json`: the bare class name where one stored block has it,
 *  the id otherwise, so the list can be given back to `extract --names-json` without an
 *  ambiguous name. */
export function blockNames(ws: Workspace, blocks: Block[]): string[] {
  const count = new Map<string, number>();
  for (const b of storedBlocks(ws)) count.set(b.name, (count.get(b.name) ?? 0) + 1);
  return [...new Set(blocks.map((b) => (count.get(b.name) === 1 ? b.name : b.id)))].sort();
}
