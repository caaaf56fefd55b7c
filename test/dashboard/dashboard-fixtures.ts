import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { describe, it, onTestFinished } from 'vitest';
import { buildEventPayload } from '../../src/core/wire/payloads.ts';
import { signPayload } from '../../src/core/wire/signature.ts';
import type { LifecycleEvent } from '../../src/core/vocabulary.ts';
import { type Workspace, binPath } from '../helpers/cli.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';
import type { JobRecordOnDisk } from '../publisher/publish-fixtures.ts';

/** Debian's chromium; the browser suites need it (playwright-core downloads no browser). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * This machine's network refuses Google's hosts: everything that would call them is off, and each
 * launch gets a fresh profile.
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Chromium missing: skip loudly, except under CI=true, where a suite that did not run is a failure. */
export function chromiumMode(env: NodeJS.ProcessEnv = process.env): 'run' | 'skip' | 'fail' {
  const hidden = (env.MAM_TEST_HIDE_SERVERS ?? '').split(',').some((s) => s.trim() === 'chromium');
  if (!hidden && existsSync(CHROMIUM)) return 'run';
  return env.CI === 'true' ? 'fail' : 'skip';
}

/** A `describe` for the browser suites: runs, skips with a `SKIPPED:` line, or fails in CI (as test/helpers/brokers.ts's requireServer). */
export function describeWithChromium(title: string, fn: () => void): void {
  const mode = chromiumMode();
  if (mode === 'run') {
    describe(title, fn);
    return;
  }
  if (mode === 'fail') {
    describe(title, () => {
      it('requires chromium', () => {
        throw new Error(`${CHROMIUM} not installed, and CI=true forbids skipping the dashboard browser suites`);
      });
    });
    return;
  }
  try {
    // One line per run, not per file (the workers' parent is the vitest process).
    closeSync(openSync(join(tmpdir(), `mam-test-skipped-${process.ppid}-chromium`), 'wx'));
    process.stderr.write(`SKIPPED: dashboard browser suites — ${CHROMIUM} not installed\n`);
  } catch {
    // announced already
  }
  describe.skip(title, fn);
}

export async function launchChromium(): Promise<BrowserContext> {
  const { chromium } = await import('playwright-core');
  const profile = makeTempDir('mam-chromium-');
  const context = await chromium.launchPersistentContext(profile.path, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
  });
  const close = context.close.bind(context);
  context.close = async (...args) => {
    await close(...args);
    profile.cleanup();
  };
  return context;
}

export interface DashboardProcess {
  url: string;
  child: ChildProcess;
  readonly stderr: string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** `mam dashboard --port 0 …` as a user runs it; resolves once it printed its URL. Killed when the test ends. */
export function startDashboardProcess(ws: Workspace, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<DashboardProcess> {
  const child = spawn(process.execPath, [binPath('mam'), 'dashboard', '--port', '0', ...args], {
    cwd: ws.root,
    env: { ...ws.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mam dashboard did not start within 15 s: ${stderr}`)), 15_000);
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      const m = /mam dashboard on (http:\/\/\S+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1]!,
          child,
          get stderr() {
            return stderr;
          },
          async stop() {
            child.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`mam dashboard exited ${code} before listening: ${stderr}`));
    });
  });
}

/** A correctly signed event for the job's current attempt, as an agent that skipped seqs would send it. */
export function signedEvent(record: JobRecordOnDisk, seq: number, event: LifecycleEvent, detail: string): string {
  const payload = buildEventPayload({ jobId: record.job_id, seq, event, detail, dispatchToken: record.dispatch_token, attemptId: record.attempt_id });
  return JSON.stringify(signPayload(payload, record.auth_token));
}

/** A well-formed event that anyone could write: right schema, right topic, a signature made without the token. */
export function forgedEvent(record: JobRecordOnDisk, seq: number, event: LifecycleEvent, detail: string): string {
  const payload = buildEventPayload({ jobId: record.job_id, seq, event, detail, dispatchToken: record.dispatch_token, attemptId: record.attempt_id });
  return JSON.stringify(signPayload(payload, 'not-the-token-of-this-job'));
}
