import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/core/config/config.ts';
import { CLI_CHECKS, listsFlag } from '../../src/core/doctor/agent-cli-checks.ts';
import { allWell, formatCheck, runDoctor } from '../../src/core/doctor/doctor.ts';
import { agentBinDir, cliProgram } from '../agents-real/real-clis.ts';
import { type TestBroker, startAedesBroker, useBrokerCleanup } from '../helpers/brokers.ts';
import { REPO_ROOT, type Workspace, makeWorkspace, runBinAsync } from '../helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';

const STAND_INS = path.join(REPO_ROOT, 'test/fixtures/agents/bin');
const installed = (['claude', 'codex', 'gemini'] as const).every((cli) => cliProgram(cli) !== undefined);

/** A fake CLI in `dir` that prints `version` and a `--help` naming only `flags`. */
function fakeCli(dir: string, name: string, version: string, flags: string[]): void {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  writeFileSync(
    file,
    `#!/bin/sh\ncase "$*" in *--version*) echo '${version}' ;; *) printf 'Usage: ${name}\\n${flags.map((f) => `  ${f} <x>  a flag`).join('\\n')}\\n' ;; esac\n`,
  );
  chmodSync(file, 0o755);
}

describe('mam doctor', () => {
  let broker: TestBroker;
  let ws: Workspace;
  useBrokerCleanup();
  beforeAll(async () => {
    broker = await startAedesBroker();
  });
  afterEach(() => ws?.cleanup());
  const doctor = (env: NodeJS.ProcessEnv, required?: string[]) => {
    const full = { ...ws.env, ...env };
    return runDoctor(loadConfig(full, ws.root), { env: full, required });
  };

  it.skipIf(!installed)('the real CLIs of node_modules and the aider stand-in, a broker that answers: every line ok, one per check', async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    const PATH = [agentBinDir(ws.root), STAND_INS, process.env.PATH].join(path.delimiter);
    const checks = await doctor({ PATH });
    process.stderr.write(`${checks.map(formatCheck).join('\n')}\n`);
    expect(checks.map((c) => [c.name, c.status])).toEqual([
      ['agent claude', 'ok'],
      ['agent codex', 'ok'],
      ['agent gemini', 'ok'],
      ['agent aider', 'ok'],
      ['broker', 'ok'],
      ['secrets', 'ok'],
    ]);
    expect(checks[0]!.detail).toMatch(
      /^\d+\.\d+\.\d+ \(Claude Code\) at .*claude; preset flags listed \(--print --settings --mcp-config --permission-prompt-tool\)$/,
    );
    expect(checks[1]!.detail).toMatch(/^codex-cli \d+\.\d+\.\d+ at /);
    expect(allWell(checks)).toBe(true);
  });

  it('a CLI whose --help lost a flag the preset passes: FAIL, naming the flag', async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    const bin = path.join(ws.root, 'bin');
    fakeCli(bin, 'claude', '9.9.9 (Claude Code)', ['--print', '--mcp-config', '--permission-prompt-tool']);
    const checks = await doctor({ PATH: `${bin}${path.delimiter}/usr/bin:/bin` });
    expect(formatCheck(checks[0]!)).toBe(`FAIL  agent claude: 9.9.9 (Claude Code) at ${bin}/claude: --help does not list --settings (the preset passes them)`);
    expect(allWell(checks)).toBe(false);
  });

  it('CLIs not installed are noted, not failed, unless named with --agent', async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    const empty = await doctor({ PATH: '/nonexistent' });
    expect(empty.slice(0, 4).map(formatCheck)).toEqual(
      ['claude', 'codex', 'gemini', 'aider'].map((a) => `-     agent ${a}: not on PATH: --agent ${a} cannot start`),
    );
    expect(allWell(empty)).toBe(true);
    const required = await doctor({ PATH: '/nonexistent' }, ['codex']);
    expect(required[1]!.status).toBe('fail');
    expect(allWell(required)).toBe(false);
  });

  it('a broker that does not answer, and a username without its password: FAIL lines', async () => {
    const port = await freePort();
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(port), MQTT_USERNAME: 'agent' });
    const checks = await doctor({ PATH: '/nonexistent' });
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(formatCheck(byName.broker!)).toMatch(new RegExp(`^FAIL  broker: broker mqtt://127\\.0\\.0\\.1:${port} unreachable: ECONNREFUSED$`));
    expect(byName.secrets!.status).toBe('fail');
    expect(byName.secrets!.detail).toContain('MQTT_USERNAME set, MQTT_PASSWORD not set');
    // The values of secrets are never printed.
    const withSecret = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port), MAM_DISPATCH_SECRET: 'hunter2-dispatch' });
    const env = { ...withSecret.env, PATH: '/nonexistent' };
    const lines = (await runDoctor(loadConfig(env, withSecret.root), { env })).map(formatCheck).join('\n');
    withSecret.cleanup();
    expect(lines).toContain('MAM_DISPATCH_SECRET set');
    expect(lines).not.toContain('hunter2');
  });

  it('listsFlag: an option line or a mention in a description, never a longer flag', () => {
    expect(listsFlag('  -c, --config <key=value>  Override', '--config')).toBe(true);
    expect(listsFlag('  --permission-prompts <t>  "host" (--permission-prompt-tool) or "none"', '--permission-prompt-tool')).toBe(true);
    expect(listsFlag('  --permission-prompts <t>  who answers', '--permission-prompt')).toBe(false);
    expect(listsFlag('  --settings-file <f>', '--settings')).toBe(false);
    expect(Object.keys(CLI_CHECKS).sort()).toEqual(['aider', 'claude', 'codex', 'gemini']);
  });

  it('as a command: one line per check on stdout; exit 0 when all is well, 1 otherwise', async () => {
    ws = makeWorkspace({ MQTT_BROKER: '127.0.0.1', MQTT_PORT: String(broker.port) });
    // Only the aider stand-in (and node, which runs it) on PATH.
    const bin = path.join(ws.root, 'bin');
    mkdirSync(bin);
    symlinkSync(path.join(STAND_INS, 'aider'), path.join(bin, 'aider'));
    const PATH = [bin, path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter);
    const ok = await runBinAsync('mam', ['doctor'], ws, { env: { PATH } });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    const lines = ok.stdout.trim().split('\n');
    expect(lines.at(-2)).toMatch(/^ok {4}broker: mqtt:\/\/127\.0\.0\.1:\d+: connected without credentials$/);
    expect(lines.find((l) => l.includes('agent aider'))).toMatch(/^ok {4}agent aider: aider 0\.86\.1 \(stand-in\) at /);
    const failing = await runBinAsync('mam', ['doctor', '--agent', 'aider'], ws, {
      env: { PATH: [path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter) },
    });
    expect(failing.code).toBe(1);
    expect(failing.stdout).toMatch(/^FAIL {2}agent aider: not on PATH/m);
    const bad = await runBinAsync('mam', ['doctor', '--agent', 'cursor'], ws);
    expect(bad.code).toBe(64);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});
