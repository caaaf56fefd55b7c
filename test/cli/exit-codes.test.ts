import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { type CommandOutcome, ExitCode, delegationExit, exitCodeOf, outcomeExit, reportError, runnerExit, watchExit } from '../../src/cli/exit-codes.ts';
import type { DelegationOutcome } from '../../src/core/delegate/delegation.ts';
import {
  ConfigError,
  CorruptRecord,
  LockTimeout,
  MamError,
  NoSuchJob,
  NothingPickable,
  TransitionRefused,
  UnsafePlace,
  UsageError,
} from '../../src/core/errors.ts';
import { BrokerRefusedConnection, BrokerUnreachable, SubscriptionRefused } from '../../src/core/mqtt/broker-errors.ts';
import { NoSuchSession, SessionRefused, SessionUnavailable } from '../../src/core/sessions/session-errors.ts';
import type { WatchOutcome } from '../../src/core/subscriber/subscriber.ts';

/** The one map from the core's errors and outcomes to the contract's exit codes (§1). */

describe('exitCodeOf', () => {
  it.each<[string, unknown, number]>([
    ['a usage error', new UsageError('x'), 64],
    ['a place others could tamper with', new UnsafePlace('/r: permissions are too open (mode 0777); chmod 700 /r'), 64],
    ['no such job', new NoSuchJob('abcd1234'), 66],
    ['nothing pickable', new NothingPickable('S'), 4],
    ['a refused transition', new TransitionRefused('abcd1234', 'job is already completed'), 5],
    ['no such session', new NoSuchSession('s1'), 66],
    ['a session state that forbids it', new SessionRefused('s1', 'is running'), 5],
    ['a busy session', new SessionUnavailable('session_busy', 'session s1 is busy'), 5],
    ['a broker that cannot be reached (a dispatch)', new BrokerUnreachable('mqtt://h:1', 'ECONNREFUSED'), 2],
    ['a refused CONNACK (a publish)', new BrokerRefusedConnection('mqtt://h:1', 'u', 5), 2],
    ['a corrupt record', new CorruptRecord('/r/x.json', 'not JSON'), 1],
    ['a lock timeout', new LockTimeout('/r/.lock', 'registry', 30_000), 1],
    ['configuration', new ConfigError('MQTT_PORT="x": expected a whole number'), 1],
    ['any other MAM error', new MamError('x'), 1],
    ['a bug', new TypeError('x is undefined'), 1],
    ['--help', new CommanderError(0, 'commander.helpDisplayed', ''), 0],
    ['an unknown option', new CommanderError(1, 'commander.unknownOption', ''), 64],
  ])('%s → %i', (_label, err, code) => {
    expect(exitCodeOf(err)).toBe(code);
  });

  it('reportError writes one ERROR line (the first of a multi-line message), no stack without MAM_DEBUG', () => {
    let out = '';
    const code = reportError(new MamError('first line\nsecond line'), (t) => (out += t));
    expect(code).toBe(1);
    expect(out).toBe('ERROR: first line\n');
  });
});

const outcome = (o: Partial<WatchOutcome>): WatchOutcome => ({
  reason: 'all_completed',
  monitor: false,
  unresolved: [],
  broker: 'mqtt://127.0.0.1:1883',
  ...o,
});

describe('watchExit (contract §4)', () => {
  it.each<[string, Partial<WatchOutcome>, number, RegExp | undefined]>([
    ['every job completed', { reason: 'all_completed' }, 0, undefined],
    ['a job failed', { reason: 'job_failed' }, 1, undefined],
    ['a --job watch interrupted', { reason: 'stopped' }, 1, undefined],
    ['a monitor stopped', { reason: 'stopped', monitor: true }, 0, undefined],
    ['a wall-clock timeout', { reason: 'wall_timeout', jobId: 'abcd1234' }, 2, /^job abcd1234: wall-clock timeout$/],
    ['an idle timeout', { reason: 'idle_timeout', jobId: 'abcd1234' }, 2, /^job abcd1234: idle timeout$/],
    [
      'no broker',
      { reason: 'broker_unreachable', unresolved: ['abcd1234'] },
      3,
      /^ERROR: broker mqtt:\/\/127\.0\.0\.1:1883 unreachable; unresolved: abcd1234$/,
    ],
    [
      'a denied subscription',
      { reason: 'broker_refused', failure: new SubscriptionRefused('mqtt://h:1', ['t/+/+']) },
      3,
      /^ERROR: broker mqtt:\/\/h:1 refused the subscription to t\/\+\/\+$/,
    ],
  ])('%s → %i', (_label, o, code, line) => {
    const exit = watchExit(outcome(o));
    expect(exit.code).toBe(code);
    if (line) expect(exit.line).toMatch(line);
    else expect(exit.line).toBeUndefined();
  });
});

describe('delegationExit (contract §1, mam delegate)', () => {
  it.each<[DelegationOutcome['end'], number]>([
    ['completed', ExitCode.ok],
    ['failed', ExitCode.failure],
    ['agent_blocked', ExitCode.failure],
    ['agent_exited', ExitCode.failure],
    ['cancelled', ExitCode.failure],
    ['deadline_timeout', ExitCode.notDelivered],
    ['broker_unreachable', ExitCode.brokerDown],
    ['session_busy', ExitCode.refused],
    ['session_not_running', ExitCode.refused],
  ])('%s → %i', (end, code) => {
    expect(delegationExit({ jobId: 'abcd1234', end, status: 'error', watch: outcome({}) })).toBe(code);
  });

  it('mam-remote run: --once completed 0, failed 1; stopped 0', () => {
    expect([runnerExit('completed'), runnerExit('failed'), runnerExit('stopped')]).toEqual([0, 1, 0]);
  });
});

describe('outcomeExit: every outcome a command ends with, one table', () => {
  it.each<[string, CommandOutcome, number]>([
    ['done', { kind: 'done' }, 0],
    ['a watch whose jobs completed', { kind: 'watch', watch: outcome({}) }, 0],
    ['a watch without its broker', { kind: 'watch', watch: outcome({ reason: 'broker_unreachable' }) }, 3],
    ['a delegation that timed out', { kind: 'delegation', delegation: { jobId: 'abcd1234', end: 'deadline_timeout', status: 'error', watch: outcome({}) } }, 2],
    ['a runner whose job failed', { kind: 'runner', runner: 'failed' }, 1],
    ['a claim won', { kind: 'claim', won: true }, 0],
    ['a claim lost (not failed)', { kind: 'claim', won: false }, 4],
    ['a mention to answer', { kind: 'mention', action: 'respond' }, 0],
    ['a mention of others', { kind: 'mention', action: 'silent' }, 6],
    ['a mention race lost', { kind: 'mention', action: 'lost' }, 4],
    ['counsel given', { kind: 'counsel', result: 'given' }, 0],
    ['counsel given twice', { kind: 'counsel', result: 'already_given' }, 5],
    ['counsel uninvited', { kind: 'counsel', result: 'not_invited' }, 4],
    ['a roundtable shown', { kind: 'roundtable', found: true }, 0],
    ['no roundtable', { kind: 'roundtable', found: false }, 66],
    ['a doctor that found all well', { kind: 'doctor', allWell: true }, 0],
    ['a doctor that found a problem', { kind: 'doctor', allWell: false }, 1],
  ])('%s → %i', (_label, o, code) => {
    expect(outcomeExit(o)).toBe(code);
  });
});

describe('docs/contract.md §1 and ExitCode are one table', () => {
  it('every code in ExitCode has its row in the contract, and every row of the contract a code', async () => {
    const { readFileSync } = await import('node:fs');
    const contract = readFileSync(new URL('../../docs/contract.md', import.meta.url), 'utf8');
    const table = contract.slice(contract.indexOf('### Exit codes (all commands)'), contract.indexOf('MAM: this table is `ExitCode`'));
    const documented = [...table.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
    expect(new Set(documented)).toEqual(new Set(Object.values(ExitCode)));
    // `mam claim`'s loss is documented as a loss, apart from its failures.
    expect(table).toMatch(/^\| 4 \|.*`mam claim`.*lost, not failed/m);
    expect(table).toMatch(/^\| 5 \|.*`mam delegate --session`.*`session_busy`/m);
  });
});
