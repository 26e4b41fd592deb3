// Parameter lists read from the syntax tree, once: the binder reads `__init__` and
// `forward` of every class when it parses a file (ClassFacts.init / .forward), and
// library/spec.ts reads a list given as text the same way. The grammar is Python's
// `parameters` (Language Reference, "Function definitions"): PEP 3102 keyword-only
// parameters after `*` or `*args`, PEP 570 positional-only parameters before `/`, PEP 3107
// annotations. Defaults and annotations are kept as source text (whitespace runs across
// lines collapsed to one space), never evaluated.

/** What the reader needs of a syntax node: tree-sitter's nodes and the binder's copies
 *  (parse/syntax.ts) both have it. */
export interface ParamNode {
  readonly type: string;
  readonly text: string;
  readonly namedChildren: readonly (ParamNode | null)[];
  childForFieldName(field: string): ParamNode | null;
}

import { parsePython, parserReady } from './parser.js';
import type { ClassFacts, Param } from './types.js';

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();

/** The parameters of a `parameters` node. `dropFirst` removes the first parameter (the
 *  method's `self` / `cls`) when it is a plain positional one. */
export function paramsOf(params: ParamNode, opts: { dropFirst?: boolean } = {}): Param[] {
  const out: Param[] = [];
  let keywordOnly = false;
  for (const n of params.namedChildren) {
    if (!n || n.type === 'comment') continue;
    if (n.type === 'keyword_separator') {
      keywordOnly = true; // bare `*` (PEP 3102)
      continue;
    }
    if (n.type === 'positional_separator') continue; // `/` (PEP 570): what came before stays positional
    const p = paramOf(n, keywordOnly);
    if (!p) continue;
    if (p.kind === 'var-positional') keywordOnly = true; // after *args: keyword-only
    out.push(p);
  }
  if (opts.dropFirst && out.length && out[0].kind === 'positional') out.shift();
  return out;
}

function paramOf(n: ParamNode, keywordOnly: boolean): Param | null {
  const plainKind = keywordOnly ? 'keyword' : 'positional';
  const text = (x: ParamNode | null | undefined) => (x ? oneLine(x.text) : null);
  switch (n.type) {
    case 'identifier':
      return { name: n.text, default: null, annotation: null, kind: plainKind };
    case 'default_parameter':
      return {
        name: n.childForFieldName('name')?.text ?? '',
        default: text(n.childForFieldName('value')),
        annotation: null,
        kind: plainKind,
      };
    case 'typed_default_parameter':
      return {
        name: n.childForFieldName('name')?.text ?? '',
        default: text(n.childForFieldName('value')),
        annotation: text(n.childForFieldName('type')),
        kind: plainKind,
      };
    case 'typed_parameter': {
      // `x: int`, `*args: int`, `**kw: Any`: the first named child is the name or the splat
      const inner = n.namedChildren.find((c) => !!c && c.type !== 'type') ?? null;
      const annotation = text(n.childForFieldName('type'));
      if (!inner) return null;
      const p = paramOf(inner, keywordOnly);
      return p ? { ...p, annotation } : null;
    }
    case 'list_splat_pattern': {
      const id = n.namedChildren.find((c) => c?.type === 'identifier');
      return id ? { name: id.text, default: null, annotation: null, kind: 'var-positional' } : null;
    }
    case 'dictionary_splat_pattern': {
      const id = n.namedChildren.find((c) => c?.type === 'identifier');
      return id ? { name: id.text, default: null, annotation: null, kind: 'var-keyword' } : null;
    }
    default:
      return null;
  }
}

/**
 * Parse a parameter list as written, with its parentheses (`(self, dim, *, eps=1e-6)`).
 * Needs `initParser()` to have resolved. Text that does not parse as a parameter list
 * gives [].
 */
export function parseParams(text: string | null | undefined, opts: { dropFirst?: boolean } = {}): Param[] {
  if (!text) return [];
  const t = text.trim();
  if (!t.startsWith('(')) return [];
  const tree = parsePython(`def _f${t}:\n    pass\n`);
  try {
    const def = tree.rootNode.namedChildren[0];
    const params = def?.type === 'function_definition' ? def.childForFieldName('parameters') : null;
    if (!params || tree.rootNode.hasError) return [];
    return paramsOf(params, opts);
  } finally {
    tree.delete();
  }
}

/** `__init__` or `forward` parameters (without self) a class defines itself; null when it
 *  does not define the method. Facts stored before the binder read them (FACTS_VERSION 4)
 *  have only the text, read here when the parser is loaded. */
export function ownParams(cls: ClassFacts, which: 'init' | 'forward'): Param[] | null {
  const read = cls[which];
  if (read !== undefined) return read;
  const text = which === 'init' ? cls.initParams : cls.forwardParams;
  if (text === null) return null;
  return parserReady() ? parseParams(text, { dropFirst: true }) : null;
}
