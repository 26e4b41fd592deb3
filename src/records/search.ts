// The search document of one library block (search/documents.ts builds it): what the search
// index, `similar`, `export` and the web catalog know about the block, a projection of its
// block record and spec. store/search.ts keeps it as JSON next to the FTS row. Low
// (src/records/, below the store) so that the store does not import search for it.
import type { ProvenanceEntry } from './block.js';

export interface SearchDoc {
  id: string;
  name: string;
  module: string;
  origin: { repo: string; path: string; line: number; revision: string | null; url: string | null };
  /** 'validated' | 'failed' | 'extracted' */
  status: string;
  params: number | null;
  category: string;
  summary: string | null;
  docstring: string | null;
  bases: string[];
  /** constructor parameter names */
  hyperparameters: string[];
  forwardParams: string[];
  /** layer type → count */
  layers: Record<string, number>;
  /** identifiers of the class body */
  identifiers: string[];
  /** names of the other top-level definitions copied into the module */
  copied: string[];
  /** interned modules */
  dependencies: string[];
  externs: string[];
  /** PEP 508 requirements when the spec knows them */
  requirements: string[] | null;
  lines: number;
  stages: Record<string, string> | null;
  provenance: ProvenanceEntry[];
  /** where the document came from */
  source: 'spec' | 'extraction';
  /** extraction hash (module content) */
  hash: string;
}
