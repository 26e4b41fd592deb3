// Search documents: what the search index, `similar`, `export` and the web catalog know
// about one library block — a projection of the block record. Built from the block's
// neutral spec when the library stage has stored one (`nnrag library`, `specs` table), else
// from the stored record (signature: docstring, bases, the parameters of __init__ and
// forward as extraction read them; provenance; validation) and a scan of the emitted module
// (layer types constructed, identifiers of the class body). Records made before the record
// carried a signature fall back to the class facts of the indexed file.
import { PYTHON_KEYWORDS } from '../util/python.js';
import { ownParams } from '../parse/params.js';
import { classStatement } from '../resolve/classes.js';
import { parseBlockId } from '../discover/ids.js';
import type { SearchDoc } from '../records/search.js';
import { createHash } from 'node:crypto';
import type { IndexStore } from '../store/store.js';
import { categorize, classSegment, layerInventory } from '../library/category.js';
import type { StoredExtraction } from '../store/records.js';
import { getSpec, specTexts } from '../store/specs.js';
import type { BlockSpec } from '../records/spec.js';
import type { ClassFacts, FileFacts } from '../parse/types.js';

/** Bump when the document layout, its derivation (layers, category) or tokenization changes: every row is rebuilt. */
export const DOC_VERSION = 4;

/** First sentence (or first paragraph line) of a docstring. */
export function firstSentence(doc: string | null | undefined): string | null {
  if (!doc) return null;
  const para = doc
    .trim()
    .split(/\n\s*\n/)[0]
    .replace(/\s+/g, ' ')
    .trim();
  const m = para.match(/^(.+?[.!?])(\s|$)/);
  return (m ? m[1] : para) || null;
}

/** Docstring of the class in a segment (the first string statement of the body). */
function docstringFromSegment(seg: string): string | null {
  const m =
    seg.match(/:\s*\n\s+[rRuU]?("""|''')([\s\S]*?)\1/) ?? seg.match(/:\s*\n\s+[rRuU]?(["'])((?:\\.|(?!\1).)*)\1/);
  return m ? m[2].trim() : null;
}

/** words an identifier list of a class body leaves out: the keywords, and `self` / `super` */
const PY_KEYWORDS = new Set([...PYTHON_KEYWORDS, 'self', 'super']);

function identifiersOf(seg: string): string[] {
  const code = seg.replace(/#.*$/gm, '');
  const set = new Set<string>();
  for (const m of code.matchAll(/[A-Za-z_]\w*/g)) if (!PY_KEYWORDS.has(m[0]) && m[0].length > 1) set.add(m[0]);
  return [...set];
}

function copiedNames(text: string, className: string): string[] {
  const set = new Set<string>();
  for (const m of text.matchAll(
    /^(?:class|def|async\s+def)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)/gm,
  )) {
    const n = m[1] ?? m[2];
    if (n && n !== className) set.add(n);
  }
  return [...set];
}

/** The stored spec of a block, if the library stage (`nnrag library`) wrote one. */
export function storedSpec(store: IndexStore, id: string): BlockSpec | null {
  return getSpec(store, id);
}

/** Class facts of a discovered block, read from the stored facts of its file. */
export function classFacts(
  store: IndexStore,
  id: string,
  cache?: Map<string, FileFacts | null>,
): { facts: ClassFacts | null; row: { repo: string; path: string; line: number; module: string } | null } {
  const row = store.getBlock(id);
  if (!row) return { facts: null, row: null };
  const blob = store.indexedBlob(row.repo, row.path);
  let ff: FileFacts | null = null;
  if (blob) {
    if (cache?.has(blob)) ff = cache.get(blob)!;
    else {
      ff = store.getFacts(blob);
      cache?.set(blob, ff);
    }
  }
  const facts = classStatement(ff ? { facts: ff } : null, row.name);
  return { facts, row };
}

/** Identity of the inputs a document is built from: a changed extraction (module hash,
 *  status, or a re-validation, which rewrites the row's `updated` time) or spec gives a
 *  different key and the row is rebuilt. */
export function docKey(e: { hash: string; status: string; updated: string }, specRaw: string | null): string {
  const h = createHash('sha1');
  h.update(`${DOC_VERSION}|${e.hash}|${e.status}|${e.updated}|${specRaw ?? ''}`);
  return h.digest('hex');
}

/** The stored spec JSON by id, for change detection without parsing. */
export function specRows(store: IndexStore): Map<string, string> {
  return specTexts(store);
}

/** Build the search document of one stored extraction. */
export function buildDoc(
  store: IndexStore,
  e: StoredExtraction,
  spec: BlockSpec | null,
  factsCache?: Map<string, FileFacts | null>,
): SearchDoc {
  const rec = e.record;
  const id = e.id;
  const { className: name, module } = parseBlockId(id);
  const seg = classSegment(e.text, name);
  const provenance = rec.provenance ?? [];
  const own = provenance.find((p) => p.module === module) ?? provenance[provenance.length - 1];
  const identifiers = identifiersOf(seg);
  const copied = copiedNames(e.text, name);
  if (spec) {
    return {
      id,
      name: spec.class,
      module: spec.origin.module,
      origin: {
        repo: spec.origin.repo,
        path: spec.origin.path,
        line: spec.origin.line,
        revision: spec.origin.revision,
        url: spec.origin.url,
      },
      status: e.status,
      params: spec.params ?? rec.validation?.params ?? null,
      category: spec.category,
      summary: spec.summary,
      docstring: docstringFromSegment(seg) ?? spec.summary,
      bases: spec.bases,
      hyperparameters: spec.hyperparameters?.length ? spec.hyperparameters : spec.init.map((p) => p.name),
      forwardParams: spec.forward.map((p) => p.name),
      layers: Object.keys(spec.layers ?? {}).length ? spec.layers : layerInventory(e.text, name),
      identifiers,
      copied,
      dependencies: spec.dependencies ?? rec.interned ?? [],
      externs: spec.externs ?? rec.externs ?? [],
      requirements: spec.requirements ?? null,
      lines: e.lines,
      stages: spec.stages ?? rec.validation?.stages ?? null,
      provenance,
      source: 'spec',
      hash: e.hash,
    };
  }
  const { facts, row } = classFacts(store, id, factsCache);
  // the class as extraction recorded it; records made before it: the indexed class
  const sig = rec.signature;
  const docstring = sig?.docstring ?? facts?.docstring ?? docstringFromSegment(seg);
  const bases =
    sig?.bases ??
    (facts
      ? facts.bases.map((b) => b.text)
      : (seg.match(/^class\s+\w+\s*\(([^)]*)\)/)?.[1] ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean));
  const init = sig?.init ?? (facts ? ownParams(facts, 'init') : null) ?? [];
  const forward = sig?.forward ?? (facts ? ownParams(facts, 'forward') : null) ?? [];
  // the layers of an instance when validation built one, else those the class's own code
  // constructs
  const built = rec.validation?.layers;
  const layers = built && Object.keys(built).length ? built : layerInventory(e.text, name);
  const forwardParams = forward.map((p) => p.name);
  const repoRow = row ? store.getRepo(row.repo) : null;
  return {
    id,
    name,
    module,
    origin: {
      repo: row?.repo ?? own?.repo ?? '',
      path: row?.path ?? own?.path ?? '',
      line: row?.line ?? own?.ranges?.[0]?.[0] ?? 0,
      revision: own?.revision ?? repoRow?.revision ?? null,
      url: own?.url ?? (repoRow && !repoRow.local ? repoRow.url : null),
    },
    status: e.status,
    params: rec.validation?.params ?? null,
    category: categorize({ name, docstring, layers, bases, forwardParams, initParams: init.map((p) => p.name) })
      .category,
    summary: firstSentence(docstring),
    docstring,
    bases,
    hyperparameters: init.map((p) => p.name),
    forwardParams,
    layers,
    identifiers,
    copied,
    dependencies: rec.interned ?? [],
    externs: rec.externs ?? [],
    requirements: null,
    lines: e.lines,
    stages: rec.validation?.stages ?? null,
    provenance,
    source: 'extraction',
    hash: e.hash,
  };
}
