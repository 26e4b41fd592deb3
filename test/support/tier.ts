// Test tiers: `npm test` runs every test; `npm run test:fast` (NNRAG_TEST_FAST=1) runs the
// ones that need neither torch nor the sandbox. A test that needs either asks
// `needsTorch()` / `needsSandbox()` for its skip reason; test/support/fast-guard.ts makes
// any Python-with-torch, harness or bubblewrap process fail loudly in the fast tier, so a
// test that forgets to ask fails there instead of silently slowing the tier down.
export const FAST = process.env.NNRAG_TEST_FAST === '1';

/** The skip reason in the fast tier for tests that run torch (validation Python), else false. */
export function needsTorch(): string | false {
  return FAST ? 'fast tier (NNRAG_TEST_FAST=1): needs a Python with torch' : false;
}

/** The skip reason in the fast tier for tests that run the sandbox (bubblewrap), else false. */
export function needsSandbox(): string | false {
  return FAST ? 'fast tier (NNRAG_TEST_FAST=1): needs the sandbox' : false;
}
