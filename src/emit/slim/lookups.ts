// Computed keys of slim emission (docs/ARCHITECTURE.md "Slim emission"): an option dict
// (syntax.ts) keeps only the entries whose keys the code that stays reaches with a string
// literal; a lookup `d[k]`, `d.get(k, …)` or `d.pop(k, …)` whose key is computed at run time
// (`''.join(parts)`, an f-string, a value the evaluator cannot name) may ask for any entry,
// so slim.ts keeps such a dict whole instead of failing later with a KeyError. Here: the
// values (atoms.ts) the keys of the running lookups of each module-level definition take,
// by the evaluator where the lookup is in the body of a reachable copied function, else a
// string literal's own value or TOP.
import { union, type Vals } from './atoms.js';
import type { Evaluator } from './evaluator.js';
import type { ReachState } from './reach.js';
import type { BlockScope } from './scope.js';

/** The values of the keys of the running lookups, by the definition statement (stmtKey)
 *  looked up (null: unknown, a computed key). */
export function lookupKeys(scope: BlockScope, st: ReachState, ev: Evaluator): Map<string, Vals> {
  const out = new Map<string, Vals>();
  for (const [mod] of scope.byMod) {
    for (const l of scope.facts(mod).lookups) {
      if (!st.runs(mod, l.pos)) continue;
      const stmts = scope.denotedStmts(mod, l.obj);
      if (!stmts) continue;
      const f = l.direct ? scope.fnAt(mod, l.pos) : undefined;
      const v: Vals = f ? ev.evalIn(f, l.key, l.pos, 0) : l.key.k === 'lit' ? new Set([l.key.atom]) : null;
      for (const k of stmts) out.set(k, out.has(k) ? union(out.get(k)!, v) : v);
    }
  }
  return out;
}
