import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { RegisterInput } from '../../../src/core/registry/registry.ts';
import { Registry } from '../../../src/core/registry/registry.ts';
import { tempDirForTest } from '../../helpers/temp-dir.ts';

export interface TestRegistry {
  registry: Registry;
  warnings: string[];
  root: string;
}

/** A Registry on a fresh temp folder (removed after the test); warnings are collected, not printed. */
export function tempRegistry(): TestRegistry {
  const root = tempDirForTest('mam-registry-');
  const warnings: string[] = [];
  const registry = new Registry({ registryDir: path.join(root, '.mam', 'jobs'), logDir: path.join(root, '.mam', 'logs') }, (m) => warnings.push(m));
  return { registry, warnings, root };
}

export function input(patch: Partial<RegisterInput> = {}): RegisterInput {
  return { brief: 'do the thing', heartbeatSec: 30, heartbeatMisses: 4, ackTimeoutSec: 180, timeoutSec: 3600, transport: 'herdr', dependsOn: [], ...patch };
}

export const mode = (file: string): number => statSync(file).mode & 0o777;
export const bytes = (file: string): Buffer => readFileSync(file);

export function auditLines(registry: Registry, jobId: string): Array<Record<string, unknown>> {
  return readFileSync(registry.paths.events(jobId), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The error a call throws (sync or async), for checking its class and message together. */
export async function caught(fn: () => unknown): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

/** Distinct created_at values: registration order must not tie on the millisecond. */
export const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 3));
