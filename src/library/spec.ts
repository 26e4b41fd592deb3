// The neutral spec of a library block (records/spec.ts `BlockSpec`): derived facts only, no
// source code. This file holds the pure pieces — parameter lists (parse/params.ts), the
// first docstring sentence, and the assembly of a spec from the block record's signature
// and its validation — while library.ts gathers the inputs.
import { initParser } from '../parse/parser.js';
import { parseParams } from '../parse/params.js';
import type { Param } from '../parse/types.js';

export { parseParams };
import type { ClassSignature, ProvenanceEntry } from '../records/block.js';
import type { ValidationRecord } from '../records/validation.js';
import { categorize, layerInventory } from './category.js';
import type { BlockSpec } from '../records/spec.js';
import { originUrl, revisionSwhid } from './swhid.js';

export type { Param };

/** Make sure the tree-sitter parser is ready (parseParams needs it). */
export async function initSpecParser(): Promise<void> {
  await initParser();
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
  const m = /^(.*?[.!?])(?=\s+[A-Z0-9"'`([]|$)/.exec(text);
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
  /** the block's class: bases, docstring, parameters (the record's `signature`; null when
   *  neither the record nor the index has the class) */
  signature: ClassSignature | null;
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
  const init = inp.signature?.init ?? [];
  const forward = inp.signature?.forward ?? [];
  const v = inp.validation;
  const layers = v?.layers ?? {};
  const bases = inp.signature?.bases ?? [];
  const { category } = categorize({
    name: className,
    docstring: inp.signature?.docstring ?? null,
    // the built instance's layers, else those its class body constructs
    layers: Object.keys(layers).length ? layers : inp.text ? layerInventory(inp.text, className) : {},
    bases,
    forwardParams: forward.map((p) => p.name),
    initParams: init.map((p) => p.name),
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
    summary: firstSentence(inp.signature?.docstring),
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
