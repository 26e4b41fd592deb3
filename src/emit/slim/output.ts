// The output of slim's value analysis (values.ts): the dead code of reachable functions
// that reads definitions (that is what shrinks the closure) becomes one marked
// `raise ValueError(…)` naming the test (an `if` clause, the code after an `if` that always
// leaves the function), or, for the side of a conditional expression (§6.13), an expression
// that raises the same way; bodies that only raise or pass stay as they are; prunes nested
// in an outer one go.
import type { CorpusModule } from '../../resolve/corpus.js';
import type { SlimAnalysis } from './analysis.js';
import type { DeadCode } from './fixpoint.js';
import { fnKey, type FnRef } from './scope.js';

/** One pruning of slim emission by values: replace [start, end) of statement `stmt`. */
export interface ValuePrune {
  mod: CorpusModule;
  stmt: number;
  start: number;
  end: number;
  text: string;
  lines: [number, number];
  what: string;
}

/** The prunes of the dead code `finalPrunes` holds for the copied functions `fns`. */
export function prunesOf(an: SlimAnalysis, fns: readonly FnRef[], finalPrunes: Map<string, DeadCode>): ValuePrune[] {
  const prunes: ValuePrune[] = [];
  const readsDefs = (mod: CorpusModule, stmt: number, a: number, b: number): boolean => an.readsDefs(mod, stmt, a, b);
  for (const f of fns) {
    const fp = finalPrunes.get(fnKey(f));
    for (const { site, part } of fp?.conds ?? []) {
      const [start, end] = site[part];
      if (!readsDefs(f.mod, f.fn.stmt, start, end)) continue;
      const what = `${part === 'body' ? 'true' : 'false'} side of if-expression ${site.testText}`;
      const [a, b] = site.lines[part];
      // an expression that raises (a statement cannot stand there, nor a comment: the
      // line may go on): throwing into a fresh generator raises at once
      prunes.push({
        mod: f.mod,
        stmt: f.fn.stmt,
        start,
        end,
        lines: [a, b],
        what,
        text: `(_ for _ in ()).throw(ValueError(${JSON.stringify(`nnrag slim: pruned, not reached with this block's defaults and validated arguments: the ${what} (${f.mod.path}:${a === b ? a : `${a}-${b}`}; the faithful module has it)`)}))`,
      });
    }
    for (const { site, clauses, rest } of fp?.prunes ?? []) {
      for (const c of clauses) {
        if (c.trivial || !readsDefs(f.mod, f.fn.stmt, c.bodyStart, c.bodyEnd)) continue;
        const what = c.kind === 'else' ? `else of if ${site.clauses[0].testText}` : `${c.kind} ${c.testText}`;
        prunes.push({
          mod: f.mod,
          stmt: f.fn.stmt,
          start: c.bodyStart,
          end: c.bodyEnd,
          lines: [c.startLine, c.endLine],
          what,
          text: `raise ValueError(${JSON.stringify(`nnrag slim: branch '${what}' is not reached with this block's defaults and validated arguments and was pruned (restore it from ${f.mod.path}, see the header); the faithful module has it`)})  # nnrag slim: pruned lines ${c.startLine}-${c.endLine}`,
        });
      }
      if (rest && site.rest && readsDefs(f.mod, f.fn.stmt, site.rest.start, site.rest.end)) {
        const what = `after if ${site.clauses[0].testText}`;
        prunes.push({
          mod: f.mod,
          stmt: f.fn.stmt,
          start: site.rest.start,
          end: site.rest.end,
          lines: [site.rest.startLine, site.rest.endLine],
          what,
          text: `raise ValueError(${JSON.stringify(`nnrag slim: the code ${what} is not reached with this block's defaults and validated arguments and was pruned (restore it from ${f.mod.path}, see the header); the faithful module has it`)})  # nnrag slim: pruned lines ${site.rest.startLine}-${site.rest.endLine}`,
        });
      }
    }
  }
  // nested prunes inside an outer one go
  prunes.sort((a, b) => (a.mod === b.mod ? a.start - b.start || b.end - a.end : a.mod.name.localeCompare(b.mod.name)));
  const out: ValuePrune[] = [];
  for (const p of prunes) {
    const last = out[out.length - 1];
    if (last && last.mod === p.mod && p.start < last.end) continue;
    out.push(p);
  }
  return out;
}
