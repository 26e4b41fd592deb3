// Error types shared by every stage. A UsageError maps to exit code 2 (bad usage),
// any other NnragError to exit code 1 (a failure in the work).

export class NnragError extends Error {
  constructor(
    message: string,
    readonly code: string = 'error',
  ) {
    super(message);
    this.name = 'NnragError';
  }
}

export class UsageError extends NnragError {
  constructor(message: string) {
    super(message, 'usage');
    this.name = 'UsageError';
  }
}
