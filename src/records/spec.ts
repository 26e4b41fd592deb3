// The neutral spec of a block (`<id>.spec.json`): derived facts only, no source code.
// Written by the library stage from the extraction record, the class facts and the
// validation result; read by search, similar, export, the report and the web catalog.
// With it, the de-duplication cluster the library stage stores next to the specs
// (library/dedup.ts computes them, store/specs.ts keeps them). Low (src/records/) so that
// the store and search import neither the library nor each other for them.

export type BlockCategory =
  | 'attention'
  | 'convolution'
  | 'transformer block'
  | 'pooling'
  | 'normalization'
  | 'loss'
  | 'architecture'
  | 'embedding'
  | 'wrapper'
  | 'utility';

export interface BlockSpec {
  /** qualified id `module.ClassName` */
  id: string;
  class: string;
  /** where it comes from: repository, module, path, line, revision, origin URL */
  origin: { repo: string; module: string; path: string; line: number; revision: string | null; url: string | null };
  /** constructor parameters (without self): name, default and annotation as source text */
  init: {
    name: string;
    default: string | null;
    annotation: string | null;
    kind: 'positional' | 'keyword' | 'var-positional' | 'var-keyword';
  }[];
  forward: {
    name: string;
    default: string | null;
    annotation: string | null;
    kind: 'positional' | 'keyword' | 'var-positional' | 'var-keyword';
  }[];
  /** first sentence of the class docstring */
  summary: string | null;
  bases: string[];
  /** module type → count in the instantiated block (from validation), {} when it did not instantiate */
  layers: Record<string, number>;
  params: number | null;
  input_shapes: number[][] | null;
  output_shapes: number[][] | null;
  category: BlockCategory;
  /** interned module names whose definitions were copied */
  dependencies: string[];
  /** extern top-level modules imported */
  externs: string[];
  /** PEP 508 requirements of the externs, e.g. `torch==1.13.1` (when known) */
  requirements: string[];
  /** constructor parameter names, for search */
  hyperparameters: string[];
  /** 'validated' | 'failed' | 'extracted' */
  status: string;
  /** stage → pass/fail/skip, when validated */
  stages: Record<string, string> | null;
  lines: number;
  /** SWHIDs of every contributing source file and of the revision */
  provenance: { path: string; swhid: string; lines: [number, number][] }[];
  revision_swhid: string | null;
}

/** How the members of a de-duplication cluster are alike: the same normal form, near
 *  (token shingles) or structural (AST shingles). */
export type DupKind = 'exact' | 'near' | 'structural';

export interface DedupCluster {
  kind: DupKind;
  representative: string;
  /** all members including the representative, sorted by id */
  members: string[];
  /** per member (same order as members): exact Jaccard of its near and structural shingle
   *  sets with the representative's, and whether the normal forms are identical. Members
   *  joined transitively may score below the thresholds. */
  scores?: { id: string; exact: boolean; near: number; structural: number }[];
}
