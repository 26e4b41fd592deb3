// Which folder a command's store is, where it keeps its database, and whether a folder
// holds one: apart from store.ts so that a caller can ask without loading SQLite (`nnrag
// index` decides whether an index is cold, and starts its parse workers, before it loads
// the rest: cli/index-early.ts).
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The database file in a store folder. */
export const STORE_FILE = 'index.sqlite';

/** The store folder of a command: `--store` when given, else $NNRAG_STORE, else ./.nnrag. */
export function storeFolder(given: string | undefined): string {
  return given ?? process.env.NNRAG_STORE ?? '.nnrag';
}

/** Does `dir` hold a store (its database file)? */
export function storeExists(dir: string): boolean {
  return existsSync(path.join(dir, STORE_FILE));
}
