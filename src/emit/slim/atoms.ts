// Value sets of slim's value analysis (values.ts): a value is a finite set of atoms or null
// (unknown, TOP). Atoms: `None`, `True`/`False`, numbers `n:i:<v>`/`n:f:<v>`, strings
// `s:<text>`, some value of a type `t:int`/`t:float`/`t:bool`, corpus classes and functions
// `cls:`/`fn:<repo>:<module>:<name>`, builtins `b:<name>`, extern objects `x:<qualified>`,
// opaque truthy objects `obj`, `obj:<type>` and empty collections `empty:<type>`; an
// instance `i0:<repo>:<module>:<name>` of a plain class made without arguments (its
// attributes are the class-level values: evaluator.ts instanceAttr). Here:
// union, truthiness (§3.3.8), the builtin type of an atom, and ==, <, `is` of two atoms.

/** A set of atoms, or null: unknown. */
export type Vals = Set<string> | null;
export const MAX_ATOMS = 24;
export const NONE: Vals = new Set(['None']);
export const TF = (b: boolean | null): Vals =>
  b === null ? new Set(['True', 'False']) : new Set([b ? 'True' : 'False']);

export function union(a: Vals, b: Vals): Vals {
  if (!a || !b) return null;
  const s = new Set(a);
  for (const x of b) s.add(x);
  return s.size > MAX_ATOMS ? null : s;
}

/** Truthiness of an atom (§3.3.8 `__bool__`/`__len__`), null when unknown. */
export function truth(a: string): boolean | null {
  if (a === 'None' || a === 'False') return false;
  if (a === 'True') return true;
  if (a.startsWith('n:')) return Number(a.split(':')[2]) !== 0;
  if (a.startsWith('s:')) return a.length > 2;
  if (a.startsWith('empty')) return false;
  if (a.startsWith('obj:') && a !== 'obj:str') return true;
  if (a.startsWith('cls:') || a.startsWith('fn:') || a === 'obj') return true;
  // an instance of a plain class (scope.ts plainClass: no __bool__/__len__, §3.3.1)
  if (a.startsWith('i0:')) return true;
  return null;
}

/** The kind of a literal a caller passes for a required parameter: numbers and booleans
 *  become `t:int`/`t:float`/`t:bool` (some value of that type), the rest stays. */
export function kindOf(a: string): string {
  if (a === 'True' || a === 'False') return 't:bool';
  if (a.startsWith('n:i:')) return 't:int';
  if (a.startsWith('n:f:')) return 't:float';
  return a;
}

/** Python type of an atom for `isinstance` with builtins, or null when unknown. */
export function builtinType(a: string): string | null {
  if (a.startsWith('t:')) return a.slice(2);
  if (a === 'None') return 'NoneType';
  if (a === 'True' || a === 'False') return 'bool';
  if (a.startsWith('n:i:')) return 'int';
  if (a.startsWith('n:f:')) return 'float';
  if (a.startsWith('s:') || a === 'obj:str') return 'str';
  if (a.startsWith('obj:') || a.startsWith('empty:')) return a.split(':')[1];
  if (a === 'empty') return null;
  if (a.startsWith('cls:')) return 'type';
  if (a.startsWith('fn:')) return 'function';
  return null;
}

export const BUILTIN_TYPES = new Set([
  'str',
  'int',
  'float',
  'bool',
  'dict',
  'list',
  'tuple',
  'set',
  'type',
  'bytes',
  'complex',
  'frozenset',
]);

/** Equality of two atoms (`==`), null when unknown. */
export function eqAtoms(a: string, b: string): boolean | null {
  const simple = (x: string) =>
    x === 'None' || x === 'True' || x === 'False' || x.startsWith('n:') || x.startsWith('s:');
  if (simple(a) && simple(b)) {
    const x = numOf(a);
    const y = numOf(b);
    if (!Number.isNaN(x) && !Number.isNaN(y)) return x === y;
    return a === b;
  }
  if ((a.startsWith('cls:') || a.startsWith('fn:')) && (b.startsWith('cls:') || b.startsWith('fn:') || simple(b)))
    return a === b;
  if ((b.startsWith('cls:') || b.startsWith('fn:')) && simple(a)) return false;
  return null;
}

/** The number an atom is (a bool is an int, §3.2), NaN when it is none. */
export function numOf(a: string): number {
  return a === 'True' ? 1 : a === 'False' ? 0 : a.startsWith('n:') ? Number(a.split(':')[2]) : NaN;
}
/** `<`, `<=`, `>`, `>=` of two numbers (bool is an int, §3.2), null when unknown. */
export function orderAtoms(a: string, b: string, op: string): boolean | null {
  const x = numOf(a);
  const y = numOf(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return null;
  return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : op === '>=' ? x >= y : null;
}
/** `a is b` for a class or function atom: the same definition. */
export function identityAtoms(a: string, b: string): boolean | null {
  const def = (x: string) => x.startsWith('cls:') || x.startsWith('fn:');
  if (def(a) && def(b)) return a === b;
  if (
    (def(a) && (b === 'None' || b.startsWith('s:') || b.startsWith('n:'))) ||
    (def(b) && (a === 'None' || a.startsWith('s:') || a.startsWith('n:')))
  )
    return false;
  return null;
}

/** The truth values `res` as atoms (negated for `is not`, `!=`, `not in`). */
export function boolSet(res: Set<boolean>, negate: boolean): Vals {
  return new Set([...res].map((b) => (b !== negate ? 'True' : 'False')));
}
