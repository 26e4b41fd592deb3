// Public API of the validator: the sandboxed worker pool, environment discovery,
// doctor, root filesystem creation, and record helpers.
export * from './types.js';
export {
  ValidatorPool,
  resolveEnvironment,
  environmentIdOf,
  environmentFactsOf,
  factsForBlock,
  type ProbedEnvironment,
  type WorkerInfo,
} from './pool.js';
export { findPython, harnessPath, harnessSource, environmentId } from './environment.js';
export { doctor } from './doctor.js';
export { createRootfs, BASE_PACKAGES, type CreateRootfsOptions } from './rootfs.js';
export {
  syncEnvironment,
  storeNeeds,
  readManifest,
  installedDebianPackages,
  type EnvManifest,
  type EnvNeed,
  type ManifestEntry,
  type SyncResult,
} from './env-packages.js';
export {
  toRecord,
  forStorage,
  validationKey,
  passesStages,
  MAX_STORED_ERROR,
  type ValidationRecord,
} from './record.js';
export { userWitness, parseInputShapes, USER_ENTRY } from './user-inputs.js';
