import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { parseWireJson } from '../../src/core/wire/canonical-json.ts';
import { type RunResult, type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';

/**
 * Shared by the publisher and subscriber suites: a workspace pointed at a test broker, the job's
 * files as a script would read them, and the bins run asynchronously (the embedded broker lives in
 * the test process, so a blocking spawnSync would freeze it).
 */

export const TOPIC_ROOT = 'python/mqtt/jobs';
export const eventsTopicOf = (id: string): string => `${TOPIC_ROOT}/${id}/events`;
export const stateTopicOf = (id: string): string => `${TOPIC_ROOT}/${id}/state`;

export interface JobRecordOnDisk {
  job_id: string;
  status: string;
  last_seq: number;
  auth_token: string;
  dispatch_token: string;
  attempt_id: number;
  detail: string | null;
  [key: string]: unknown;
}

export interface AuditLine {
  type: string;
  [key: string]: unknown;
}

/** A workspace whose commands talk to 127.0.0.1:`port`; removed when the test ends. */
export function brokerWorkspace(port: number, extraEnv: NodeJS.ProcessEnv = {}): Workspace {
  const ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(port), ...extraEnv });
  onTestFinished(() => ws.cleanup());
  return ws;
}

/** A loopback port with nothing listening on it: every connection is refused at once. */
export function deadPort(): Promise<number> {
  return freePort();
}

export const recordPath = (ws: Workspace, id: string): string => path.join(ws.root, '.mam', 'jobs', `${id}.json`);
export const auditPath = (ws: Workspace, id: string): string => path.join(ws.root, '.mam', 'logs', id, 'events.ndjson');

export function recordOf(ws: Workspace, id: string): JobRecordOnDisk {
  return JSON.parse(readFileSync(recordPath(ws, id), 'utf8')) as JobRecordOnDisk;
}

export function auditOf(ws: Workspace, id: string): AuditLine[] {
  const file = auditPath(ws, id);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditLine);
}

export const auditText = (ws: Workspace, id: string): string => (existsSync(auditPath(ws, id)) ? readFileSync(auditPath(ws, id), 'utf8') : '');

/** `mam-register --job-id ID …`; fails the test unless it exits 0. */
export async function register(ws: Workspace, id: string, ...args: string[]): Promise<JobRecordOnDisk> {
  const r = await runBinAsync('mam-register', ['--job-id', id, ...args], ws);
  if (r.code !== 0) throw new Error(`mam-register ${id} exited ${r.code}: ${r.stderr}`);
  return recordOf(ws, id);
}

export function publish(ws: Workspace, id: string, event: string, ...args: string[]): Promise<RunResult> {
  return runBinAsync('mam-publish', ['--job', id, '--event', event, ...args], ws);
}

/** A publish that must succeed: exit 0, one JSON line on stdout, nothing on stderr. */
export async function publishOk(ws: Workspace, id: string, event: string, ...args: string[]): Promise<RunResult> {
  const r = await publish(ws, id, event, ...args);
  if (r.code !== 0 || r.stderr !== '') throw new Error(`mam-publish ${id} ${event} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** A wire payload as receivers read it (numbers kept as lexemes), or a plain-JSON view of it. */
export const wireParse = (text: string): unknown => parseWireJson(text);
export const plain = (text: string): Record<string, any> => JSON.parse(text) as Record<string, any>;

export function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'import json, hmac, hashlib'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// What the Python toolkit does with a payload off the wire (contract §3).
const PY_VERIFY = String.raw`
import hashlib, hmac, json, sys
case = json.load(sys.stdin)
payload = json.loads(case["wire"])
sig = payload["data"].pop("hmac_sig")
msg = json.dumps(payload, sort_keys=True, separators=(",", ":"))
expected = hmac.new(case["token"].encode("utf-8"), msg.encode("utf-8"), hashlib.sha256).hexdigest()
print("ok" if hmac.compare_digest(expected, sig) else "bad")
`;

/** Verifies one wire payload the way Python's json + hmac do: true when the signature holds. */
export function pythonVerifies(wire: string, token: string): boolean {
  const out = execFileSync('python3', ['-c', PY_VERIFY], { input: JSON.stringify({ wire, token }), encoding: 'utf8', timeout: 20_000 });
  return out.trim() === 'ok';
}
