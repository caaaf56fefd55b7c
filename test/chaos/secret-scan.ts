import { existsSync, lstatSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { MqttClient } from 'mqtt';
import { expect } from 'vitest';
import { stopAllBrokers } from '../helpers/brokers.ts';
import type { Workspace } from '../helpers/cli.ts';
import { connectPlainClient } from '../helpers/mqtt-client.ts';
import { killAll, report, transcript } from './chaos-kit.ts';
import { registryDirOf } from './disk-invariants.ts';

/**
 * Contract §3/§7: tokens, the MQTT password and the dispatch secret never go on the wire in clear,
 * never into a log, an audit line or a command's output; record and log files are 0600, folders
 * 0700. A suite registers its secrets and workspaces here, captures the wire with a plain client on
 * `#` while it runs, and at the end greps everything it saw.
 */
export class SecretScan {
  private readonly secrets = new Map<string, string>();
  private readonly workspaces: Workspace[] = [];
  private readonly wire: string[] = [];
  private readonly texts: Array<{ label: string; text: string }> = [];
  private readonly clients: MqttClient[] = [];

  secret(label: string, value: string | undefined): this {
    if (value) this.secrets.set(value, label);
    return this;
  }

  workspace(ws: Workspace): Workspace {
    this.workspaces.push(ws);
    return ws;
  }

  text(label: string, text: string): void {
    this.texts.push({ label, text });
  }

  /** Subscribes `#` (QoS 1) on the broker and keeps every message for the scan, across reconnects. */
  async captureWire(url: string, auth?: { username: string; password: string }): Promise<void> {
    const client = await connectPlainClient(url, { ...(auth ?? {}), reconnectPeriod: 250 });
    client.on('message', (topic, payload) => this.wire.push(`${topic} ${payload.toString('utf8')}`));
    await client.subscribeAsync('#', { qos: 1 });
    this.clients.push(client);
  }

  /** Every message captured so far, as `<topic> <payload>`. */
  get wireCapture(): readonly string[] {
    return this.wire;
  }

  /**
   * Greps the wire capture, every process's stdout and stderr, and every file under each
   * workspace's `.mam` — records excepted, which are where the job tokens live — for every secret,
   * and checks the modes of that tree. The job tokens are read from the records themselves.
   */
  async finish(): Promise<{ leaks: string[]; modeProblems: string[]; scanned: { wire: number; outputs: number; files: number; secrets: number } }> {
    await Promise.all(this.clients.map((c) => c.endAsync(true).catch(() => undefined)));
    for (const ws of this.workspaces) {
      const dir = registryDirOf(ws);
      for (const name of existsSync(dir) ? readdirSync(dir) : []) {
        if (!/^[0-9a-f]{8}\.json$/.test(name)) continue;
        try {
          const token = (JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as { auth_token?: string }).auth_token;
          this.secret(`auth_token of ${name}`, token);
        } catch {
          // A record that does not parse is the crash checks' business.
        }
      }
    }
    const leaks: string[] = [];
    const grep = (where: string, text: string) => {
      for (const [value, label] of this.secrets) if (text.includes(value)) leaks.push(`${label} found in ${where}`);
    };
    this.wire.forEach((m, i) => grep(`wire message ${i}: ${m.slice(0, 80)}`, m));
    transcript.forEach((t, i) => grep(`process output ${i}: ${t.slice(0, 80)}`, t));
    for (const { label, text } of this.texts) grep(label, text);
    const modeProblems: string[] = [];
    let files = 0;
    for (const ws of this.workspaces) {
      const mam = path.join(ws.root, '.mam');
      if (!existsSync(mam)) continue;
      walk(mam, (file, isDir, mode) => {
        const name = path.basename(file);
        // Lock and breaker folders are empty mutexes made by mkdir(2) with the umask's mode;
        // they hold nothing to protect and exist only while a command holds them.
        if (isDir && (name.endsWith('.lock') || name.endsWith('.break'))) return;
        const want = isDir ? 0o700 : 0o600;
        if (mode !== want) modeProblems.push(`${file}: mode ${mode.toString(8)}, want ${want.toString(8)}`);
        if (isDir) return;
        files++;
        // The record (and a temp copy of it a killed write left behind) is where the token lives.
        if (path.dirname(file) === registryDirOf(ws) && /^[0-9a-f]{8}\.json(\.\d+)?$/.test(name)) return;
        grep(file, readFileSync(file, 'utf8'));
      });
    }
    return { leaks, modeProblems, scanned: { wire: this.wire.length, outputs: transcript.length + this.texts.length, files, secrets: this.secrets.size } };
  }
}

/**
 * How every chaos file ends (its afterAll): stop what still runs, scan, report the scan as a row of
 * docs/reliability.md's table when `fault` names one, stop the brokers, and fail on any finding.
 */
export async function endWithSecretScan(scan: SecretScan, fault?: string): Promise<void> {
  await killAll();
  const r = await scan.finish();
  if (fault !== undefined) {
    const problems = [...r.leaks, ...r.modeProblems];
    report({
      fault,
      injected: r.scanned.secrets,
      checked: `${r.scanned.wire} wire messages, ${r.scanned.outputs} outputs, ${r.scanned.files} files under .mam; modes 0600/0700`,
      result: problems.length === 0 ? 'pass' : `FAIL: ${problems.slice(0, 3).join('; ')}`,
    });
  }
  await stopAllBrokers();
  expect(r.leaks).toEqual([]);
  expect(r.modeProblems).toEqual([]);
}

function walk(dir: string, visit: (file: string, isDir: boolean, mode: number) => void): void {
  visit(dir, true, lstatSync(dir).mode & 0o777);
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const st = lstatSync(file);
    if (st.isDirectory()) walk(file, visit);
    else visit(file, false, st.mode & 0o777);
  }
}
