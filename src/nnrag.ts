// nnrag's library API (package entry point): the same functions the CLI uses, one per
// command (src/commands/index.ts), the Workspace they work in, the block record and its
// schema, and the validator.
export * from './commands/index.js';
export { Workspace } from './workspace.js';
export { callSites } from './commands/extract.js';
export type { ExtractionRecord, ExtractOptions, IndexOptions, DiscoverOptions, NameResolution } from './commands/discover.js';
export type { PipelineOptions } from './commands/extract.js';
export type { BlockRecord, BlockStatus, EmissionProfile, EmissionFacts, SourceLocation, BlockRequirement } from './library/record.js';
export { BLOCK_RECORD_SCHEMA } from './library/record-schema.js';
export type { BlockSpec } from './library/spec-types.js';
export type { Block } from './discover/discover.js';
export type { FileFacts, StatementFacts, Ref, ImportEdge, ClassFacts } from './parse/types.js';
export type { Diagnostic } from './resolve/closure.js';
export { ValidatorPool, doctor, findPython } from './validate/index.js';
export type { ValidationRequest, ValidationResult, PoolOptions, ArgumentsSource } from './validate/index.js';
