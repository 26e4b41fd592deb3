// Witnesses: what a repository's own model builds gave each of its classes (harvest.ts
// asks the sandboxed harness, store.ts caches per repository).
export * from './harvest.js';
export * from './store.js';
