// A CLI command's Workspace (the store plus the resolver built from it on demand), opened for
// the command and closed after it. Apart from context.ts because the Workspace module loads the
// resolver and slim emission: `nnrag index` runs through context.ts and opens its store
// without them (a cold index is a short process, and its parse workers start only after the
// modules it loads).
import { Workspace } from '../workspace.js';
import type { Ctx } from './context.js';

/** Only `index` creates a store (cli/index-command.ts, which opens it without a Workspace):
 *  every other command refuses a folder without one
 *  (a mistyped --store must not silently become an empty store). */
export function openWorkspace(ctx: Ctx, create = false): Workspace {
  return Workspace.open(ctx.store, { create });
}

export function withWorkspace<T>(ctx: Ctx, f: (ws: Workspace) => T): T {
  const ws = openWorkspace(ctx);
  try {
    return f(ws);
  } finally {
    ws.close();
  }
}

export async function withWorkspaceAsync<T>(ctx: Ctx, f: (ws: Workspace) => Promise<T>, create = false): Promise<T> {
  const ws = openWorkspace(ctx, create);
  try {
    return await f(ws);
  } finally {
    ws.close();
  }
}
