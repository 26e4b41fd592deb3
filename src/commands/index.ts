// The library API: one function per CLI command, each returning what the command prints
// with --json (the CLI, src/cli/, only parses arguments and prints). index, discover,
// extract and name resolution are in api.ts; extract with validation in pipeline.ts; the
// later stages in this folder.
export { ready, index, discover, storedBlocks, resolveBlockNames, extractText, extractBlock, extractBlocks } from './discover.js';
export { extractAndValidate as validate, extractAndValidate } from './extract.js';
export { requirements } from './requirements.js';
export { library, dedupBlocks as dedup, report, exportPairs } from './library.js';
export { search, similar, exportLibraryBlock as exportBlock } from './search.js';
