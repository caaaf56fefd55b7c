import { AGENT_NAMES } from '../agents/presets.ts';
import type { MamConfig } from '../config/config.ts';
import { describeTarget, isPublicSandbox, newClientId, resolveBrokerTarget } from '../mqtt/broker-target.ts';
import { OneShotSession } from '../mqtt/one-shot-publish.ts';
import { CLI_CHECKS, type CliReport, checkAgentCli } from './agent-cli-checks.ts';

/**
 * `mam doctor`: is this machine ready to delegate? One line per check: each agent CLI a preset runs
 * (on PATH, its version, the preset's flags in its `--help`), the broker (a real CONNECT with the
 * configured credentials) and the secrets. `ok` is false for anything that would make a job fail;
 * an agent CLI that is not installed is only a note, unless the caller named it (`required`).
 */
export type CheckStatus = 'ok' | 'fail' | 'note';

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
}

export interface DoctorOptions {
  env: NodeJS.ProcessEnv;
  /** Agents that must be installed (`mam doctor --agent claude`). */
  required?: readonly string[] | undefined;
  /** How long one CLI may take to print its version or help. */
  cliTimeoutMs?: number | undefined;
}

function agentLine(report: CliReport, required: boolean): Check {
  const name = `agent ${report.agent}`;
  if (!report.found) {
    return { name, status: required ? 'fail' : 'note', detail: `not on PATH: --agent ${report.agent} cannot start` };
  }
  const version = report.version ?? 'version unknown';
  if (report.helpFailed) return { name, status: 'fail', detail: `${version} at ${report.path}: ${report.helpFailed}` };
  if (report.missingFlags.length > 0) {
    return { name, status: 'fail', detail: `${version} at ${report.path}: --help does not list ${report.missingFlags.join(', ')} (the preset passes them)` };
  }
  const flags = CLI_CHECKS[report.agent as keyof typeof CLI_CHECKS].flags;
  return { name, status: 'ok', detail: `${version} at ${report.path}${flags.length > 0 ? `; preset flags listed (${flags.join(' ')})` : ''}` };
}

/** A real CONNECT with the configured credentials: refused, unreachable or accepted. */
async function brokerLine(config: MamConfig): Promise<Check> {
  const target = resolveBrokerTarget(config.broker);
  const where = describeTarget(target);
  if (isPublicSandbox(config.broker.host)) {
    return { name: 'broker', status: 'fail', detail: `${where} is a PUBLIC sandbox broker: anyone can read the jobs' ids, events and details` };
  }
  const session = new OneShotSession(target, newClientId(target, 'doctor'));
  try {
    await session.connect();
    await session.end();
    const auth = target.username === undefined ? 'without credentials' : `as ${target.username}`;
    return { name: 'broker', status: 'ok', detail: `${where}: connected ${auth}${target.tls ? ' over TLS' : ''}` };
  } catch (err) {
    // A broker error names the broker already ("broker mqtt://h:p unreachable: …"): said once.
    const message = (err as Error).message;
    return { name: 'broker', status: 'fail', detail: message.includes(where) ? message : `${where}: ${message}` };
  } finally {
    session.destroy();
  }
}

/** Which secrets are set (never their values), and whether a set of them is half made. */
function secretsLine(config: MamConfig): Check {
  const { username, password } = config.broker;
  const set = (v: unknown) => (v ? 'set' : 'not set');
  const detail = [
    `MQTT_USERNAME ${set(username)}, MQTT_PASSWORD ${set(password)}`,
    `MAM_DISPATCH_SECRET ${set(config.dispatchSecret)} (needed for --remote)`,
    `MAM_FLEET_SECRET ${set(config.fleetSecret)} (needed for the fleet)`,
  ].join('; ');
  if ((username === undefined) !== (password === undefined)) {
    return { name: 'secrets', status: 'fail', detail: `${detail}: a username needs its password and the other way round` };
  }
  return { name: 'secrets', status: 'ok', detail };
}

export async function runDoctor(config: MamConfig, opts: DoctorOptions): Promise<Check[]> {
  const required = new Set(opts.required ?? []);
  const agents = AGENT_NAMES.filter((a): a is keyof typeof CLI_CHECKS => a !== 'shell');
  const [reports, broker] = await Promise.all([Promise.all(agents.map((a) => checkAgentCli(a, opts.env, opts.cliTimeoutMs))), brokerLine(config)]);
  return [...reports.map((r) => agentLine(r, required.has(r.agent))), broker, secretsLine(config)];
}

/** `ok    agent claude: 2.1.332 …`: the status, padded, then the check and what it found. */
export function formatCheck(check: Check): string {
  const label = check.status === 'ok' ? 'ok' : check.status === 'fail' ? 'FAIL' : '-';
  return `${label.padEnd(5)} ${check.name}: ${check.detail}`;
}

export const allWell = (checks: readonly Check[]): boolean => checks.every((c) => c.status !== 'fail');
