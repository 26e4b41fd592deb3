// The neutral spec of a library block (spec-types.ts `BlockSpec`): derived facts only, no
// source code. This file holds the pure pieces — parameter lists parsed with tree-sitter,
// the first docstring sentence, and the assembly of a spec from the class facts, the
// extraction record and its validation — while library.ts gathers the inputs.
//
// Parameter lists follow the Python grammar of `parameters` (Python reference, "Function
// definitions"; PEP 3102 keyword-only arguments after `*` or `*args`; PEP 570 positional-only
// parameters before `/`; PEP 3107 annotations). Defaults and annotations are kept as source
// text (whitespace runs across lines collapsed to one space), never evaluated.
import type { ProvenanceEntry } from '../emit/emitter.js';
import { initParser, parsePython, type Node } from '../parse/parser.js';
import type { ClassFacts } from '../parse/types.js';
import type { ValidationRecord } from '../validate/record.js';
import { categorize, layerInventory } from './category.js';
import type { BlockSpec } from './spec-types.js';
import { originUrl, revisionSwhid } from './swhid.js';

export type Param = BlockSpec['init'][number];

/** Make sure the tree-sitter parser is ready (parseParams needs it). */
export async function initSpecParser(): Promise<void> {
  await initParser();
}

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();

/**
 * Parse a parameter list as written, with its parentheses (`(self, dim, *, eps=1e-6)`), into
 * parameters. `dropFirst` removes the first parameter (the method's `self`/`cls`) when it is a
 * plain positional one. Call `initSpecParser()` first. Text that does not parse as a
 * parameter list gives [].
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
    const out: Param[] = [];
    let keywordOnly = false;
    for (const n of params.namedChildren) {
      if (!n || n.type === 'comment') continue;
      const p = paramOf(n, keywordOnly);
      if (n.type === 'keyword_separator') {
        keywordOnly = true; // bare `*` (PEP 3102)
        continue;
      }
      if (n.type === 'positional_separator') continue; // `/` (PEP 570): what came before stays positional
      if (!p) continue;
      if (p.kind === 'var-positional') keywordOnly = true; // after *args: keyword-only
      out.push(p);
    }
    if (opts.dropFirst && out.length && out[0].kind === 'positional') out.shift();
    return out;
  } finally {
    tree.delete();
  }
}

function paramOf(n: Node, keywordOnly: boolean): Param | null {
  const plainKind = keywordOnly ? 'keyword' : 'positional';
  const text = (x: Node | null | undefined) => (x ? oneLine(x.text) : null);
  switch (n.type) {
    case 'identifier':
      return { name: n.text, default: null, annotation: null, kind: plainKind };
    case 'default_parameter':
      return { name: n.childForFieldName('name')?.text ?? '', default: text(n.childForFieldName('value')), annotation: null, kind: plainKind };
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

/** A signature line `Name(a, b=2, *args, c: int = 3, **kw)` from parameters. */
export function formatSignature(name: string, params: readonly Param[]): string {
  const parts: string[] = [];
  let starShown = false;
  for (const p of params) {
    if (p.kind === 'keyword' && !starShown) {
      parts.push('*');
      starShown = true;
    }
    if (p.kind === 'var-positional') starShown = true;
    let s = p.kind === 'var-positional' ? `*${p.name}` : p.kind === 'var-keyword' ? `**${p.name}` : p.name;
    if (p.annotation) s += `: ${p.annotation}`;
    if (p.default !== null) s += p.annotation ? ` = ${p.default}` : `=${p.default}`;
    parts.push(s);
  }
  return `${name}(${parts.join(', ')})`;
}

/**
 * The first sentence of a docstring. The docstring is cleaned like `inspect.cleandoc`
 * (PEP 257 "Handling Docstring Indentation"), its first paragraph (up to a blank line) is
 * joined into one line, and the sentence ends at `.`, `!` or `?` followed by the end or by
 * white space and an upper-case letter, digit or opening quote/bracket — so `e.g. the` or
 * `v1.5` do not end it. At most 300 characters. Null for an empty docstring.
 */
export function firstSentence(doc: string | null | undefined): string | null {
  if (!doc) return null;
  const lines = doc.replace(/\r\n?/g, '\n').split('\n');
  const first = lines[0].trim();
  const rest = lines.slice(1);
  const indent = Math.min(...rest.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length), Infinity);
  const cleaned = [first, ...rest.map((l) => (Number.isFinite(indent) ? l.slice(indent) : l).trimEnd())];
  while (cleaned.length && !cleaned[0].trim()) cleaned.shift();
  const para: string[] = [];
  for (const l of cleaned) {
    if (!l.trim()) break;
    para.push(l.trim());
  }
  const text = para.join(' ').replace(/\s+/g, ' ').trim();
  if (!text) return null;
  const m = /^(.*?[.!?])(?=\s+[A-Z0-9"'`(\[]|$)/.exec(text);
  let s = m ? m[1] : text;
  if (s.length > 300) s = s.slice(0, 299).trimEnd() + '…';
  return s;
}

/** What a spec reads of a record's validation (`BlockRecord.validation`). */
export type ValidationFacts = Pick<ValidationRecord, 'stages' | 'params' | 'input_shapes' | 'output_shapes' | 'layers'>;


export interface SpecInput {
  id: string;
  status: string;
  lines: number;
  /** the class facts of the block (null when the module is no longer indexed) */
  cls: ClassFacts | null;
  /** constructor / forward parameter lists as written, possibly inherited from an indexed base */
  initParams: string | null;
  forwardParams: string | null;
  origin: { repo: string; module: string; path: string; line: number; revision: string | null; url: string | null };
  interned: string[];
  externs: string[];
  provenance: ProvenanceEntry[];
  validation: ValidationFacts | null;
  /** the emitted module, for the layers its class constructs when validation built none */
  text?: string;
  /** top-level import name → PEP 508 requirement (null for the standard library) */
  requirements: Map<string, string | null>;
}

const HEX40 = /^[0-9a-f]{40}$/i;

/** Assemble the neutral spec of one block. */
export function buildSpec(inp: SpecInput): BlockSpec {
  const className = inp.id.slice(inp.id.lastIndexOf('.') + 1);
  const init = parseParams(inp.initParams, { dropFirst: true });
  const forward = parseParams(inp.forwardParams, { dropFirst: true });
  const v = inp.validation;
  const layers = v?.layers ?? {};
  const bases = inp.cls?.bases.map((b) => b.text) ?? [];
  const { category } = categorize({
    name: className,
    docstring: inp.cls?.docstring ?? null,
    // the built instance's layers, else those its class body constructs
    layers: Object.keys(layers).length ? layers : inp.text ? layerInventory(inp.text, className) : {},
    bases,
    forwardParams: forward.map((p) => p.name),
  });
  const externs = [...new Set(inp.externs.map((e) => e.split('.')[0]).filter(Boolean))].sort();
  const requirements = [...new Set(externs.map((e) => inp.requirements.get(e)).filter((r): r is string => !!r))].sort();
  const revision = inp.origin.revision;
  return {
    id: inp.id,
    class: className,
    origin: { ...inp.origin, url: inp.origin.url ? originUrl(inp.origin.url) : null },
    init,
    forward,
    summary: firstSentence(inp.cls?.docstring),
    bases,
    layers,
    params: v?.params ?? null,
    input_shapes: v?.input_shapes ?? null,
    output_shapes: v?.output_shapes ?? null,
    category,
    dependencies: [...inp.interned].sort(),
    externs,
    requirements,
    hyperparameters: init.filter((p) => p.kind === 'positional' || p.kind === 'keyword').map((p) => p.name),
    status: inp.status,
    stages: v?.stages ?? null,
    lines: inp.lines,
    provenance: inp.provenance.map((p) => ({ path: p.path, swhid: p.swhid, lines: p.ranges })),
    revision_swhid: revision && HEX40.test(revision) ? revisionSwhid(revision) : null,
  };
}

export type { ProvenanceEntry };
