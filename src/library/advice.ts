// What to do about a failed validation: one next step, from the failure's category, its
// message and what the pipeline learnt about it (validate/missing.ts's verdict on the
// missing module, the repository's declared torch requirement). Shown on the catalog's
// block page and with the failure on the command line. Every step it prints is one that
// works: an `apt-get install` only for a package Debian has (the verdict `lacks`, from
// `apt-cache policy`, the same lookup `doctor` uses), never a guessed package name.
import type { MissingRequirement } from '../records/validation.js';

/** What advice reads of a validation record. */
export interface AdviceInput {
  category?: string | null;
  error?: string | null;
  missing?: MissingRequirement;
  /** the torch requirement the block's repository declares (`torch>=2.0`, file:line) */
  torchRequired?: { spec: string; file: string; line: number };
}

/** The way to build an environment with what the store needs, where Debian lacks it or
 *  another version is needed: a PyPI environment (`env create`, src/environment/pypi.ts),
 *  offline from local wheels with `--wheels W`; or any virtual environment with `--python`. */
export const ENVIRONMENT_STEP =
  '`nnrag env create DIR --store S` (a PyPI environment; `--wheels W` installs from local wheels), then validate with `--env DIR`; or a virtual environment of your own given with `--python`';

/** The next step for a failure, or null when nnrag has none to give. `id` is put into the
 *  commands it prints (default `ID`). */
export function nextStep(v: AdviceInput | null | undefined, id = 'ID'): string | null {
  if (!v) return null;
  const err = v.error ?? '';
  const category = v.category ?? null;
  const again = `\`nnrag validate ${id} --force\``;
  if (category === 'torch-version') {
    const what =
      /has no attribute '(\w+)'/.exec(err)?.[1] ??
      /cannot import name '(\w+)'/.exec(err)?.[1] ??
      /No module named '([\w.]+)'/.exec(err)?.[1];
    const declared = v.torchRequired
      ? `; the repository declares \`${v.torchRequired.spec}\` (${v.torchRequired.file}:${v.torchRequired.line})`
      : '';
    return `this torch lacks ${what ? `\`${what}\`` : 'an API the block uses'}${declared}: validate in an environment with ${v.torchRequired ? `\`${v.torchRequired.spec}\`` : 'a newer torch'}: ${ENVIRONMENT_STEP}`;
  }
  // a keyword a newer torch.nn class takes (LayerNorm(bias=…) since torch 2.1)
  if (/unexpected keyword argument/.test(err) && /torch/.test(err + category))
    return `the block was written for a newer torch: validate in a torch 2 environment: ${ENVIRONMENT_STEP}`;
  if (category === 'missing-extern' || /No module named '/.test(err)) {
    const m = v.missing;
    if (m) {
      switch (m.verdict) {
        case 'lacks':
          return `the validation environment lacks \`${m.module}\` (distribution ${m.distribution}): \`apt-get install ${m.debian}\` (Debian ${m.candidate}), then ${again}`;
        case 'no-package':
          return `the validation environment lacks \`${m.module}\` (distribution ${m.distribution}) and Debian has no package for it: ${ENVIRONMENT_STEP}; then ${again}`;
        case 'version':
          return `\`${m.module}\` is installed (${m.debian}) but in another version than the block was written for: ${ENVIRONMENT_STEP}`;
        default:
          return `the validation environment lacks \`${m.module}\` (distribution ${m.distribution}): install it there (${ENVIRONMENT_STEP}), then ${again}`;
      }
    }
    const mod = /No module named '([^'.]+)/.exec(err)?.[1];
    return `the validation environment lacks ${mod ? `the module \`${mod}\`` : 'a third-party package'}: \`nnrag doctor --store S\` says whether Debian has it; else ${ENVIRONMENT_STEP}; then ${again}`;
  }
  switch (category) {
    case 'needs-args':
      return `no default, call site or configuration gave the constructor all its arguments: give them, \`nnrag validate ${id} --force --args '{"dim": 64}'\` (or \`--args @FILE\`)`;
    case 'forward-shape':
      return `no synthesized input fitted: give the input shape its repository uses, \`nnrag validate ${id} --force --input-shape 1,3,224,224\``;
    case 'unresolved-name':
      return 'a name of the original is missing from the module: see the diagnostics, and report the block';
    case 'timeout':
      return `the check ran out of time: \`nnrag validate ${id} --force --timeout 120\``;
    case 'memory':
      return `the check ran out of memory: \`nnrag validate ${id} --force --memory 8192\``;
    case 'native-extension':
      return "the block needs a compiled extension of its repository (CUDA or C++ ops), which a standalone module cannot carry: `nnrag env create DIR --store S` builds the repository's operators for the CPU where its build can";
    case 'native-op-no-cpu':
      return "the block calls a compiled operator that has no CPU kernel: it runs only where the repository's GPU build does";
    case 'needs-gpu':
      return 'the block only runs on a GPU (CUDA tensors, nn.SyncBatchNorm): validate it on a machine with one';
    case 'conditional-class':
      return 'the class is defined only under a condition this environment does not meet (a device or version check), and the original module lacks it too: validate it where that condition holds';
    default:
      return null;
  }
}
