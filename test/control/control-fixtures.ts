import { readFileSync } from 'node:fs';
import { expect, onTestFinished, vi } from 'vitest';
import { type MamConfig, loadConfig } from '../../src/core/config/config.ts';
import type { JobRecord } from '../../src/core/registry/job-record.ts';
import { Registry } from '../../src/core/registry/registry.ts';
import { type RunResult, type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';

/**
 * Shared by the permission suites: a workspace pointed at a test broker, its configuration and
 * registry in this process (the asking side runs here, as a hook or the MCP server would), the
 * operator's side as the built `mam` bin, and the job's audit as a script reads it.
 */

export const TOPIC_ROOT = 'python/mqtt/jobs';
export const controlTopicOf = (id: string): string => `${TOPIC_ROOT}/${id}/control`;

export interface Side {
  ws: Workspace;
  config: MamConfig;
  registry: Registry;
}

/** A workspace whose commands talk to 127.0.0.1:`port`; removed when the test ends. */
export function brokerSide(port: number, extraEnv: NodeJS.ProcessEnv = {}): Side {
  const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(port), ...extraEnv });
  onTestFinished(() => ws.cleanup());
  const config = loadConfig(ws.env, ws.root);
  return { ws, config, registry: new Registry(config) };
}

export async function registerJob(side: Side, id: string): Promise<JobRecord> {
  return side.registry.register({
    jobId: id,
    brief: 'test job',
    transport: 'herdr',
    dependsOn: [],
    heartbeatSec: 30,
    heartbeatMisses: 4,
    ackTimeoutSec: 180,
    timeoutSec: 3600,
  });
}

export function mam(side: Side, ...args: string[]): Promise<RunResult> {
  return runBinAsync('mam', args, side.ws);
}

export interface AuditLine {
  type: string;
  [key: string]: unknown;
}

export function auditOf(side: Side, id: string): AuditLine[] {
  let text: string;
  try {
    text = readFileSync(side.registry.paths.events(id), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditLine);
}

/** Waits for the audit line that `match` picks, and returns it. */
export async function auditLine(side: Side, id: string, match: (l: AuditLine) => boolean, timeout = 10_000): Promise<AuditLine> {
  let found: AuditLine | undefined;
  await vi.waitFor(
    () => {
      found = auditOf(side, id).find(match);
      expect(found, `audit line of ${id}: ${JSON.stringify(auditOf(side, id).map((l) => l.type))}`).toBeDefined();
    },
    { timeout, interval: 20 },
  );
  return found!;
}

/** The `published` line of the job's `permission_required` with this seq, once it is written. */
export const permissionPublished = (side: Side, id: string, seq?: number): Promise<AuditLine> =>
  auditLine(side, id, (l) => l.type === 'published' && l.event === 'permission_required' && (seq === undefined || l.seq === seq));

/** One line, ending in a newline: what a command prints to stdout or stderr. */
export function oneLine(text: string): string {
  expect(text.endsWith('\n')).toBe(true);
  const lines = text.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}
