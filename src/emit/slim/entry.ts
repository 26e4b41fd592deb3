// Entry calls of slim's value analysis (values.ts): the calls of a block from outside its
// closure (call sites, the arguments it was validated with), as the atoms (atoms.ts) each
// literal argument is.
import type { Node } from 'web-tree-sitter';
import { parsePython } from '../../parse/parser.js';

/** One call of the block from outside the closure: the atoms each argument can be (an
 *  empty set for an argument that is no literal: it reaches nothing). */
export interface EntryCall {
  positional: Set<string>[];
  keywords: [string, Set<string>][];
}

/** The atom of a literal argument text (`None`, `2`, `'relu'`), else an empty set (a
 *  non-literal argument at a call site outside the closure reaches nothing). */
export function literalAtom(text: string): Set<string> {
  const t = text.trim();
  if (t === 'None' || t === 'True' || t === 'False') return new Set([t]);
  if (/^-?\d+$/.test(t)) return new Set([`n:i:${Number(t)}`]);
  if (/^-?(\d+\.\d*|\.\d+|\d+)(e-?\d+)?$/i.test(t)) return new Set([`n:f:${Number(t)}`]);
  const m = /^(['"])((?:(?!\1)[^\\])*)\1$/.exec(t);
  if (m) return new Set([`s:${m[2]}`]);
  return new Set();
}

/** Entry calls of the block from the texts of its call sites: `(64, 128, stride=2)` or a
 *  statement's text with the offset of the call's `(`; literal arguments only. */
export function entryCallFromText(text: string, offset?: number): EntryCall | null {
  const src = offset === undefined ? `f${text}` : text;
  const at = offset === undefined ? 1 : offset;
  const tree = parsePython(src);
  try {
    let node: Node | null = tree.rootNode.descendantForIndex(at, at + 1);
    while (node && node.type !== 'argument_list') node = node.parent;
    if (!node || node.startIndex !== at) return null;
    const call: EntryCall = { positional: [], keywords: [] };
    for (const a of node.namedChildren) {
      if (!a || a.type === 'comment') continue;
      if (a.type === 'keyword_argument')
        call.keywords.push([
          a.childForFieldName('name')?.text ?? '',
          literalAtom(a.childForFieldName('value')?.text ?? ''),
        ]);
      else if (a.type === 'list_splat' || a.type === 'dictionary_splat') break;
      else call.positional.push(literalAtom(a.text));
    }
    return call;
  } finally {
    tree.delete();
  }
}

/** The entry call of the arguments a module was validated with ({name: value}, or
 *  {args, kwargs}); JSON values as the harness encodes them (a class or an object is a
 *  string: its qualified name or repr, so an opaque truthy object here). */
export function entryCallFromArgs(args: unknown): EntryCall | null {
  if (!args || typeof args !== 'object') return null;
  const a = args as Record<string, unknown>;
  const atom = (v: unknown): Set<string> => {
    if (v === null) return new Set(['None']);
    if (typeof v === 'boolean') return new Set([v ? 'True' : 'False']);
    // JSON keeps no int/float distinction for integral values (Python's 1.0 reads as 1):
    // such a number is an int or a float of that value
    if (typeof v === 'number') return new Set(Number.isInteger(v) ? [`n:i:${v}`, `n:f:${v}`] : [`n:f:${v}`]);
    if (typeof v === 'string')
      return new Set([/^[A-Za-z_][\w.]*(\(.*\))?$/s.test(v) && /[.(]/.test(v) ? 'obj' : `s:${v}`]);
    if (Array.isArray(v) || typeof v === 'object') return new Set([Object.keys(v as object).length ? 'obj' : 'empty']);
    return new Set();
  };
  if (Array.isArray(a.args) && a.kwargs && typeof a.kwargs === 'object' && Object.keys(a).length === 2) {
    return { positional: a.args.map(atom), keywords: Object.entries(a.kwargs as object).map(([k, v]) => [k, atom(v)]) };
  }
  return { positional: [], keywords: Object.entries(a).map(([k, v]) => [k, atom(v)]) };
}
