// Public API of the validator: the sandboxed worker pool, environment discovery,
// doctor, the sandboxed check of a root filesystem, and record helpers. (Making environments
// — PyPI, a Debian root filesystem — is the environment layer's, src/environment/.)
export * from './types.js';
export {
  ValidatorPool,
  resolveEnvironment,
  environmentIdOf,
  environmentFactsOf,
  factsForBlock,
  installedImports,
  requestRoots,
  type ProbedEnvironment,
  type WorkerInfo,
} from './pool.js';
export { findPython, harnessPath, harnessSource, environmentId, checkRootfs } from './environment.js';
export { doctor } from './doctor.js';
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
