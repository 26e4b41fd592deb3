// nnrag's library API (the package entry point): one function per CLI command, each
// returning what `nnrag <command> --json` prints (src/commands/; the CLI, src/cli/, only
// parses arguments and prints), the Workspace they work in, the block record and its
// schema, and the validator.
export {
  ready,
  index,
  stats,
  type IndexOptions,
  type IndexMode,
  type IndexProgress,
  type IndexReport,
  type StoreStats,
} from './commands/index-repos.js';
export {
  discover,
  storedBlocks,
  resolveBlockNames,
  selectBlocks,
  blockNames,
  type DiscoverOptions,
  type NameResolution,
  type Selection,
} from './commands/discover.js';
export {
  extract,
  validate,
  extractAndValidate,
  extractText,
  extractBlock,
  extractBlocks,
  callSites,
  dataSites,
  type ExtractCommandOptions,
  type ExtractOptions,
  type ExtractionRecord,
  type Extraction,
  type PipelineOptions,
  type SlimInputs,
} from './commands/extract.js';
export { demo, type DemoResult } from './commands/demo.js';
export { doctor, env, environmentNeeds, type EnvOptions } from './commands/environment.js';
export { witnesses, type WitnessesOptions, type RepoHarvest } from './commands/witnesses.js';
export { requirements, type RequirementsOptions } from './commands/requirements.js';
export { library, dedupBlocks as dedup, report, exportPairs } from './commands/library.js';
export { search, similar, serve, exportLibraryBlock as exportBlock } from './commands/search.js';
export { Workspace } from './workspace.js';
export type {
  BlockRecord,
  BlockStatus,
  EmissionProfile,
  EmissionFacts,
  SourceLocation,
  BlockRequirement,
} from './records/block.js';
export { BLOCK_RECORD_SCHEMA } from './library/record-schema.js';
export type { BlockSpec } from './records/spec.js';
export type { Block } from './discover/discover.js';
export type { FileFacts, StatementFacts, Ref, ImportEdge, ClassFacts } from './parse/types.js';
export type { Diagnostic } from './records/block.js';
export { ValidatorPool, findPython } from './validate/index.js';
export type {
  ValidationRequest,
  ValidationResult,
  PoolOptions,
  ArgumentsSource,
  DoctorReport,
} from './validate/index.js';
