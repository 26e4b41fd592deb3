// `nnrag doctor` for the validator: which interpreter would run candidates, its torch
// version, whether bubblewrap is there and actually works here, the limits in force,
// and the environment id that stored validation results are keyed by.
import {
  defaultLimits,
  environmentId,
  findBwrap,
  locatePython,
  probeInSandbox,
  sandboxIds,
  type Probe,
} from './environment.js';
import type { DoctorReport, PoolOptions } from './types.js';
import path from 'node:path';
import { installedDebianPackages, readManifest } from '../environment/debian.js';

export async function doctor(opts: PoolOptions = {}): Promise<DoctorReport> {
  const limits = defaultLimits(opts);
  const problems: string[] = [];
  const bw = await findBwrap();
  const rootfs = opts.rootfs ? path.resolve(opts.rootfs) : null;
  const ids = sandboxIds();
  const report: DoctorReport = {
    python: null,
    pythonVersion: null,
    torch: null,
    pythonSource: null,
    rootfs,
    sandbox: {
      bwrap: bw?.path ?? null,
      version: bw?.version ?? null,
      working: false,
      uid: ids.uid ?? process.getuid?.() ?? null,
    },
    limits,
    envId: null,
    problems,
  };
  if (!bw)
    problems.push(
      'bubblewrap (bwrap) not found: validation refuses to run repository code unless --no-sandbox is given',
    );
  let realpath: string | null = null;
  let used: Probe | null = null;
  if (rootfs) {
    report.pythonSource = 'rootfs';
    report.debianPackages = installedDebianPackages(rootfs);
    report.environment = readManifest(rootfs);
    const python = opts.python ?? process.env.NNRAG_PYTHON ?? '/usr/bin/python3';
    report.python = python;
    if (bw) {
      const { probe, error } = await probeInSandbox(
        { python, probe: null, rootfs, roots: [], limits, bwrap: bw.path },
        true,
      );
      if (probe) {
        report.sandbox.working = true;
        report.pythonVersion = probe.version;
        report.torch = probe.torch ?? null;
        realpath = probe.realpath;
        used = probe;
        if (!probe.torch) {
          report.torchError = probe.torch_error;
          problems.push(`${python} in ${rootfs} cannot import torch: ${probe.torch_error}`);
        }
      } else {
        report.sandbox.error = error;
        problems.push(`cannot run ${python} inside ${rootfs}: ${error}`);
      }
    } else problems.push('--rootfs needs bubblewrap');
  } else {
    const loc = await locatePython(opts.python, false);
    if (!loc) problems.push('no Python with torch found: pass --python, set NNRAG_PYTHON, or install python3-torch');
    else {
      report.python = loc.python;
      report.pythonSource = loc.source;
      report.pythonVersion = loc.probe.version;
      report.torch = loc.probe.torch ?? null;
      realpath = loc.probe.realpath;
      used = loc.probe;
      if (loc.torchError) {
        report.torchError = loc.torchError;
        problems.push(`${loc.python} cannot import torch: ${loc.torchError}`);
      }
      if (bw) {
        const { probe, error } = await probeInSandbox(
          { python: loc.python, probe: loc.probe, rootfs: null, roots: [], limits, bwrap: bw.path },
          false,
        );
        report.sandbox.working = !!probe;
        if (!probe) {
          report.sandbox.error = error;
          problems.push(`bubblewrap is installed but the sandbox does not start: ${error}`);
        }
      }
    }
  }
  if (report.python && report.torch && report.pythonVersion) {
    report.envId = environmentId({
      python: realpath ?? report.python,
      pythonVersion: report.pythonVersion,
      torch: report.torch,
      sandbox: opts.sandbox !== false,
      rootfs,
      probe: used,
    });
    report.distributions = used?.distributions ?? [];
    if (!rootfs && used?.path) report.sysPath = used.path;
  }
  return report;
}
