// Classes of the corpus, looked up one way everywhere:
// - `classStatement`: which class statement is "the" `module.Class`. A module's code runs
//   top to bottom and each `class C:` statement rebinds `C` (Language Reference §4.2.2,
//   "Resolution of names"; §8.8, class definitions are executed statements), so the
//   module attribute after import is the LAST top-level class statement with that name.
//   Discovery, closure, the spec and the search document all use this rule.
// - `baseClasses`: the base expressions of a class resolved like any eager read of its
//   module, to indexed class statements (by the same rule) or extern names; the one walk
//   over bases that discovery (is it an nn.Module?) and the signature (inherited
//   `__init__` / `forward` parameters) share.
// - `classSignature`: what extraction records of the block's class (bases, docstring,
//   constructor and forward parameters), so the spec, the search document and the catalog
//   read it from the record instead of deriving it again.
import { ownParams } from '../parse/params.js';
import type { BaseExpr, ClassFacts, Param } from '../parse/types.js';
import type { CorpusModule } from './corpus.js';
import type { Resolver, Target } from './names.js';
import type { ClassSignature } from '../records/block.js';

/** The class statement Python binds for `module.Class` (the last top-level definition),
 *  or null when the module defines no such class. */
export function classStatement(
  mod: { facts: { classes: readonly ClassFacts[] } } | null | undefined,
  name: string,
): ClassFacts | null {
  if (!mod) return null;
  const all = mod.facts.classes;
  for (let i = all.length - 1; i >= 0; i--) if (all[i].name === name && !all[i].nested) return all[i];
  return null;
}

/** One resolved base of a class: an indexed class statement, or an extern qualified name. */
export type BaseTarget =
  | { kind: 'class'; module: CorpusModule; cls: ClassFacts }
  | { kind: 'extern'; qualified: string };

/** The resolution of one base expression (`name.attr…`) read eagerly in `mod`. */
export function resolveBase(
  resolver: Resolver,
  mod: CorpusModule,
  b: BaseExpr,
): { targets: Target[]; consumed: number } {
  if (!b.name) return { targets: [], consumed: 0 };
  return resolver.resolveRef(mod, {
    name: b.name,
    start: 0,
    end: 0,
    eager: true,
    attrs: b.attrs,
    attrEnds: b.attrs.map(() => 0),
  });
}

/** The bases of a class, left to right, each resolved to what it denotes (an unresolvable
 *  base gives nothing). */
export function baseClasses(resolver: Resolver, mod: CorpusModule, cls: ClassFacts): BaseTarget[][] {
  return cls.bases.map((b) => {
    const { targets, consumed } = resolveBase(resolver, mod, b);
    const out: BaseTarget[] = [];
    for (const t of targets) {
      if (t.kind === 'extern') {
        const rest = b.attrs.slice(consumed);
        out.push({ kind: 'extern', qualified: rest.length ? `${t.qualified}.${rest.join('.')}` : t.qualified });
      } else if (t.kind === 'def') {
        const base = classStatement(t.module, t.name);
        if (base) out.push({ kind: 'class', module: t.module, cls: base });
      }
    }
    return out;
  });
}

/** The parameters of `__init__` or `forward` of a class, or of the first indexed base class
 *  that defines the method (depth-first, left to right: the MRO for single inheritance and
 *  simple diamonds); null when none does (an extern base is not looked into). */
export function inheritedParams(
  resolver: Resolver,
  mod: CorpusModule,
  cls: ClassFacts,
  which: 'init' | 'forward',
  depth = 0,
): Param[] | null {
  const own = ownParams(cls, which);
  if (own !== null) return own;
  if (depth > 12) return null;
  for (const targets of baseClasses(resolver, mod, cls)) {
    for (const t of targets) {
      if (t.kind !== 'class') continue;
      const p = inheritedParams(resolver, t.module, t.cls, which, depth + 1);
      if (p !== null) return p;
    }
  }
  return null;
}

export function classSignature(resolver: Resolver, mod: CorpusModule, cls: ClassFacts): ClassSignature {
  return {
    bases: cls.bases.map((b) => b.text),
    docstring: cls.docstring,
    init: inheritedParams(resolver, mod, cls, 'init') ?? [],
    forward: inheritedParams(resolver, mod, cls, 'forward') ?? [],
  };
}
