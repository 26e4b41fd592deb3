// The parse workers of a cold `nnrag index`, started by the executable (bin.ts) before it
// loads the command's modules (SQLite, the indexer, the CLI's runner): each worker's start
// (a Node thread, then tree-sitter) then overlaps with that loading instead of following it.
// Only the plain case starts early: an index with no --workers (the pool's default size),
// not in `skip` mode, without --help, into a store folder that holds no database yet. The
// command (index-command.ts) decides again with its parsed options and uses these workers
// only when it would have started the same pool; otherwise it closes them.
import { parseArgs } from 'node:util';
import { ParsePool } from '../indexer/pool.js';
import { storeExists, storeFolder } from '../store/location.js';

/** Start the parse workers for `nnrag index <args>` when the index is certainly cold. */
export function earlyIndexPool(args: string[]): ParsePool | undefined {
  let values: Record<string, unknown>;
  try {
    // not strict: the other options are the command's to check (index-command.ts)
    values = parseArgs({
      args,
      options: {
        store: { type: 'string' },
        mode: { type: 'string' },
        workers: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: false,
      allowPositionals: true,
    }).values;
  } catch {
    return undefined;
  }
  if (values.help || values.workers !== undefined || values.mode === 'skip') return undefined;
  const store = storeFolder(typeof values.store === 'string' ? values.store : undefined);
  if (storeExists(store)) return undefined;
  const pool = new ParsePool();
  pool.warm();
  return pool;
}
