// Type tests of slim's value analysis (evaluator.ts): `isinstance(a, t)` and
// `issubclass(a, t)` of two atoms (atoms.ts), by the builtin type of a value and by the
// bases of the corpus's classes (depth first through the resolver's class facts); null
// when unknown.
import { baseClasses, classStatement } from '../../resolve/classes.js';
import { BUILTIN_TYPES, builtinType } from './atoms.js';
import type { BlockScope } from './scope.js';

export class TypeTests {
  constructor(private readonly scope: BlockScope) {}

  isInstance(a: string, t: string): boolean | null {
    const ty = builtinType(a);
    if (t.startsWith('b:')) {
      const tn = t.slice(2);
      if (!BUILTIN_TYPES.has(tn) && tn !== 'object') return null;
      if (tn === 'object') return true;
      if (!ty) return null;
      if (tn === ty) return true;
      if (tn === 'int' && ty === 'bool') return true;
      return ty === 'NoneType' ||
        ty === 'str' ||
        ty === 'int' ||
        ty === 'float' ||
        ty === 'bool' ||
        ty === 'function' ||
        (ty === 'type' && tn !== 'type') ||
        ['dict', 'list', 'tuple', 'set'].includes(ty)
        ? false
        : null;
    }
    if (t.startsWith('cls:') || t.startsWith('x:')) {
      // a value of a builtin type, a class object or a function is no instance of a
      // class of the corpus (nor of an extern class, unless that is a metaclass)
      if (ty === 'NoneType' || ty === 'str' || ty === 'int' || ty === 'float' || ty === 'bool' || ty === 'function')
        return t.startsWith('x:') && !/\.(Module|Tensor)$/.test(t) ? null : false;
      if (ty === 'type' && t.startsWith('cls:') && !this.isMeta(t)) return false;
      return null;
    }
    return null;
  }
  isMeta(t: string): boolean {
    const { mod, name } = this.scope.moduleOfAtom(t);
    const cf = mod ? classStatement(mod, name) : null;
    return !cf || cf.bases.some((b) => /\b(type|Meta)\b|Meta$/.test(b.text));
  }
  isSubclass(a: string, t: string): boolean | null {
    if (a.startsWith('x:') && t.startsWith('cls:')) return false; // an extern class derives from no corpus class
    if (!a.startsWith('cls:')) return null;
    if (a === t) return true;
    const anc = this.ancestors(a);
    if (!anc) return null;
    if (anc.set.has(t)) return true;
    return anc.closed && t.startsWith('cls:') ? false : null;
  }
  private readonly ancCache = new Map<string, { set: Set<string>; closed: boolean } | null>();
  ancestors(a: string): { set: Set<string>; closed: boolean } | null {
    if (this.ancCache.has(a)) return this.ancCache.get(a)!;
    this.ancCache.set(a, null);
    const { mod, name } = this.scope.moduleOfAtom(a);
    const cf = mod ? classStatement(mod, name) : null;
    if (!mod || !cf) return null;
    const set = new Set<string>();
    let closed = true;
    for (const bases of baseClasses(this.scope.an.resolver, mod, cf)) {
      if (bases.length !== 1) closed = false;
      for (const b of bases) {
        if (b.kind === 'extern') {
          set.add(`x:${b.qualified}`);
          continue;
        }
        const k = `cls:${b.module.repo}:${b.module.name}:${b.cls.name}`;
        set.add(k);
        const up = this.ancestors(k);
        if (!up) closed = false;
        else {
          for (const x of up.set) set.add(x);
          closed &&= up.closed;
        }
      }
    }
    if (cf.bases.length !== cf.bases.filter((b) => b.name).length) closed = false;
    const r = { set, closed };
    this.ancCache.set(a, r);
    return r;
  }
}
