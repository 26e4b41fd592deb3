// nnrag's library API (package entry point): the same functions the CLI uses.
export { Workspace, ready, index, discover, storedBlocks, resolveBlockNames, extractText, extractBlock, extractBlocks } from './api.js';
export type { ExtractionRecord, ExtractOptions, IndexOptions, DiscoverOptions, NameResolution } from './api.js';
export { extractAndValidate, callSites } from './pipeline.js';
export type { PipelineOptions } from './pipeline.js';
export type { Block } from './discover/discover.js';
export type { FileFacts, StatementFacts, Ref, ImportEdge, ClassFacts } from './parse/types.js';
export type { Diagnostic } from './resolve/closure.js';
export { ValidatorPool, doctor, findPython } from './validate/index.js';
export type { ValidationRequest, ValidationResult, PoolOptions } from './validate/index.js';
