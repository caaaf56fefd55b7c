import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';
import { shellQuote } from '../../src/core/bin-path.ts';
import type { TestBroker } from '../helpers/brokers.ts';
import { type RunResult, type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { tempDirForTest } from '../helpers/temp-dir.ts';
import { isolatedTmux, type IsolatedTmux } from './tmux-fixtures.ts';

export const STAND_IN_SESSION_AGENT = fileURLToPath(new URL('./stand-in-session-agent.mjs', import.meta.url));

/** A workspace for named sessions: its own tmux server, a broker, and `claude`/`codex` stand-ins first on PATH. */
export interface SessionWorld {
  ws: Workspace;
  tmux: IsolatedTmux;
  /** Each start of a stand-in: its argv and pid. */
  starts(): Array<{ as: string; argv: string[]; pid: number }>;
  /** Each turn a stand-in took. */
  turns(): Array<{ pid: number; session_id: string; turn: number; brief: string }>;
  stateDir: string;
  mam(args: string[], timeoutMs?: number): Promise<RunResult>;
  list(): Promise<Array<Record<string, unknown>>>;
}

const jsonLines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l))
    : [];

export function sessionWorld(broker: TestBroker): SessionWorld {
  const tmux = isolatedTmux();
  const dir = tempDirForTest('mam-session-world-');
  const bin = path.join(dir, 'bin');
  const stateDir = path.join(dir, 'state');
  mkdirSync(bin);
  mkdirSync(stateDir);
  for (const as of ['claude', 'codex', 'gemini']) {
    const file = path.join(bin, as);
    writeFileSync(file, `#!/bin/sh\nSTAND_IN_AS=${as} exec ${shellQuote(process.execPath)} ${shellQuote(STAND_IN_SESSION_AGENT)} "$@"\n`);
    chmodSync(file, 0o755);
  }
  const argvOut = path.join(dir, 'argv.ndjson');
  const log = path.join(dir, 'turns.ndjson');
  const ws = makeWorkspace({
    PATH: `${bin}${path.delimiter}${process.env.PATH}`,
    MQTT_BROKER: '127.0.0.1',
    MQTT_PORT: String(broker.port),
    TMUX_TMPDIR: tmux.dir,
    STAND_IN_ARGV_OUT: argvOut,
    STAND_IN_LOG: log,
    STAND_IN_STATE_DIR: stateDir,
  });
  onTestFinished(() => ws.cleanup());
  const mam = (args: string[], timeoutMs = 60_000) => runBinAsync('mam', args, ws, { timeoutMs });
  return {
    ws,
    tmux,
    stateDir,
    starts: () => jsonLines(argvOut),
    turns: () => jsonLines(log),
    mam,
    list: async () => {
      const r = await mam(['session', 'list', '--json']);
      if (r.code !== 0) throw new Error(`mam session list: ${r.code} ${r.stderr}`);
      return parseLines(r.stdout);
    },
  };
}

function parseLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The events a delegate printed (JSON lines on stdout). */
export const printedEvents = (stdout: string): string[] => parseLines(stdout).map((e) => String(e.event));

/** The job id a delegate registered. */
export const registeredJob = (stderr: string): string => {
  const id = /job ([0-9a-f]{8}) registered/.exec(stderr)?.[1];
  if (!id) throw new Error(`no job registered in: ${stderr}`);
  return id;
};
