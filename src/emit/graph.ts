// The module graph of an emitted block, computed once at extraction from what the
// closure resolved (resolve/closure.ts) and stored with its record (`moduleGraph`,
// records/block.ts); the catalog draws it (serve/graph.ts) without reading any source.
//
// - interned edges `[M, N]`: a copied statement of module M reads a name the resolver
//   bound to a definition of module N (following imports and re-exports to the module
//   whose statements define it, Language Reference §5.4.2, §7.11), or an import nested in
//   a copied statement of M names it; self-reads are not edges;
// - extern edges `[M, P]`: a copied statement of M reads a name that an extern import
//   binds, or keeps an import (in a compound statement or a function body), of the
//   top-level package P, a requirement of the block (`externs`).
import type { Closure, Binding, StmtNode } from '../resolve/closure.js';
import type { ModuleGraph } from '../records/block.js';

/** The module edges of a closure; `externs`: the block's extern top-level packages. */
export function moduleGraph(closure: Closure, externs: readonly string[]): ModuleGraph {
  const interned = new Set<string>();
  const extern = new Set<string>();
  const ext = new Set(externs);
  const edge = (from: StmtNode, b: Binding) => {
    const reader = from.mod.name;
    if (b.kind === 'def' && b.mod && b.mod.name !== reader) interned.add(`${reader}\0${b.mod.name}`);
    else if (b.kind === 'extern') for (const e of b.edges ?? []) packageEdge(reader, e.absModule);
  };
  const packageEdge = (reader: string, absModule: string | null) => {
    const top = absModule?.split('.')[0];
    if (top && ext.has(top)) extern.add(`${reader}\0${top}`);
  };
  for (const u of closure.uses) edge(u.node, u.binding);
  for (const r of closure.importRewrites) {
    for (const l of r.locals) edge(r.node, l.binding);
    for (const k of r.keep) packageEdge(r.node.mod.name, k.absModule);
  }
  const pairs = (s: Set<string>) => [...s].sort().map((k) => k.split('\0') as [string, string]);
  return { interned: pairs(interned), extern: pairs(extern) };
}
