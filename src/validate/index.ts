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
export { findPython, harnessPath, environmentId } from './environment.js';
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
} from './record.js';
// The vocabulary of the validator's results, defined with the validation record (src/records/).
export {
  STAGES,
  type Stage,
  type StageStatus,
  type FailureCategory,
  type ArgumentsSource,
  type JsonValue,
  type EquivalenceResult,
  type NamespaceResult,
  type EnvironmentFacts,
  type MissingRequirement,
  type ValidationRecord,
} from '../records/validation.js';
export { userWitness, parseInputShapes, USER_ENTRY } from './user-inputs.js';
