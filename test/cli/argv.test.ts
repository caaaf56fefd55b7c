import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { closeCommand } from '../../src/cli/commands/close.ts';
import { briefCommand } from '../../src/cli/commands/brief.ts';
import { delegateCommand } from '../../src/cli/commands/delegate.ts';
import { doctorCommand } from '../../src/cli/commands/doctor.ts';
import { hookCommand } from '../../src/cli/commands/hook.ts';
import { jobsCommand } from '../../src/cli/commands/jobs.ts';
import { pickCommand } from '../../src/cli/commands/pick.ts';
import { publishCommand } from '../../src/cli/commands/publish.ts';
import { registerCommand } from '../../src/cli/commands/register.ts';
import { remoteCommand } from '../../src/cli/commands/remote.ts';
import { subscribeCommand } from '../../src/cli/commands/subscribe.ts';
import { type CommandSpec, parseArgv } from '../../src/cli/program.ts';
import { UsageError } from '../../src/core/errors.ts';

/**
 * Every command as a table of argv → the typed options its `run` receives (changesets' cli.test.ts
 * is the model): what each flag becomes, its defaults, and the argv that must be refused with a
 * usage error before anything runs. The commands themselves are tested by spawning the bins.
 */

const J = 'abcd1234';
const TOKEN = '0123456789abcdef0123456789abcdef';

type Row = [label: string, spec: CommandSpec<never>, argv: string[], options: Record<string, unknown>];

const accepted: Row[] = [
  ['register: defaults', registerCommand, ['--brief', 'b'], { brief: 'b', transport: 'herdr', dependsOn: [] }],
  [
    'register: every flag',
    registerCommand,
    [
      '--job-id',
      J,
      '--agent-session',
      's1',
      '--brief-file',
      'f.md',
      '--heartbeat',
      '1.5',
      '--heartbeat-misses',
      '3',
      '--ack-timeout',
      '9',
      '--idle-timeout',
      '7',
      '--timeout',
      '60',
      '--transport',
      'remote',
      '--depends-on',
      'aaaaaaaa',
      '--depends-on',
      'bbbbbbbb',
      '--registry',
      '/r',
      '--json',
    ],
    {
      jobId: J,
      agentSession: 's1',
      briefFile: 'f.md',
      heartbeat: 1.5,
      heartbeatMisses: 3,
      ackTimeout: 9,
      idleTimeout: 7,
      timeout: 60,
      transport: 'remote',
      dependsOn: ['aaaaaaaa', 'bbbbbbbb'],
      registry: '/r',
      json: true,
    },
  ],
  ['pick', pickCommand, ['--agent-session', 'S'], { agentSession: 'S' }],
  ['publish: defaults', publishCommand, ['--job', J, '--event', 'progress'], { job: J, event: 'progress', attempts: 3, data: undefined }],
  [
    'publish: started with a heartbeat and data',
    publishCommand,
    [
      '--job',
      J,
      '--event',
      'started',
      '--heartbeat',
      '30',
      '--watch-pid',
      '42',
      '--data',
      '{"n":1}',
      '--attempts',
      '1',
      '--expect-dispatch-token',
      TOKEN,
      '--attempt-id',
      '2',
      '--detail',
      'go',
    ],
    { job: J, event: 'started', heartbeat: 30, watchPid: 42, attempts: 1, expectDispatchToken: TOKEN, attemptId: 2, detail: 'go' },
  ],
  ['subscribe: one job', subscribeCommand, ['--job', J], { job: [J], all: false }],
  ['subscribe: a job named twice is watched once', subscribeCommand, ['--job', J, '--job', J, '--job', 'aaaaaaaa'], { job: [J, 'aaaaaaaa'] }],
  [
    'subscribe: --all with clocks (0 turns one off)',
    subscribeCommand,
    ['--all', '--timeout', '0', '--idle-timeout', '2.5', '--pretty'],
    { job: [], all: true, timeout: 0, idleTimeout: 2.5, pretty: true },
  ],
  ['close', closeCommand, ['--job', J, '--request', 'deadline_timeout'], { job: J, request: 'deadline_timeout' }],
  ['jobs: a status', jobsCommand, ['--status', 'running', '--json'], { status: 'running', json: true }],
  [
    'delegate: local, embedded broker by default',
    delegateCommand,
    ['--brief', 'b', '--exec', 'agent.sh'],
    { brief: 'b', exec: 'agent.sh', embeddedBroker: true },
  ],
  [
    'delegate: remote, no embedded broker',
    delegateCommand,
    ['--brief', 'b', '--remote', 'host-1', '--no-embedded-broker', '--json'],
    { remote: 'host-1', embeddedBroker: false, json: true },
  ],
  ['remote dispatch', remoteCommand, ['dispatch', '--job', J, '--session', 'h1'], { job: J, session: 'h1' }],
  ['remote run', remoteCommand, ['run', '--session', 'h1', '--exec', 'x', '--once'], { session: 'h1', exec: 'x', once: true }],
  ['remote run: --once defaults to off', remoteCommand, ['run', '--session', 'h1', '--exec', 'x'], { once: false }],
  ['remote run: a preset', remoteCommand, ['run', '--session', 'h1', '--agent', 'codex'], { agent: 'codex' }],
  ['delegate: a preset in a tmux pane', delegateCommand, ['--brief', 'b', '--agent', 'claude', '--pane', 'tmux'], { agent: 'claude', pane: 'tmux' }],
  ['brief', briefCommand, ['--job', J, '--preamble-only'], { job: J, preambleOnly: true }],
  ['hook: claude, fenced', hookCommand, ['--from', 'claude', '--job', J, '--attempt-id', '2'], { from: 'claude', job: J, attemptId: 2 }],
  ['hook: the wrapper at exit', hookCommand, ['--from', 'wrapper', '--job', J, '--on', 'exit', '--exit-code', '7'], { on: 'exit', exitCode: 7 }],
  ['doctor: nothing required', doctorCommand, [], {}],
  ['doctor: agents that must be installed', doctorCommand, ['--agent', 'claude,codex'], { agent: 'claude,codex' }],
];

const refused: Array<[label: string, spec: CommandSpec<never>, argv: string[], message: RegExp]> = [
  ['register: a job id not 8 lowercase hex', registerCommand, ['--job-id', 'ABCD1234'], /--job-id/],
  ['register: an unknown transport', registerCommand, ['--transport', 'pigeon'], /--transport/],
  ['register: a negative heartbeat', registerCommand, ['--heartbeat', '-1'], /--heartbeat/],
  ['register: misses of 0', registerCommand, ['--heartbeat-misses', '0'], /--heartbeat-misses/],
  ['publish: an unknown event', publishCommand, ['--job', J, '--event', 'done'], /--event/],
  ['publish: --heartbeat without started', publishCommand, ['--job', J, '--event', 'progress', '--heartbeat', '5'], /--heartbeat: only with --event started/],
  ['publish: --watch-pid without --heartbeat', publishCommand, ['--job', J, '--event', 'started', '--watch-pid', '5'], /--watch-pid: only with --heartbeat/],
  ['publish: --data not an object', publishCommand, ['--job', J, '--event', 'progress', '--data', '[1]'], /--data: must be a JSON object/],
  ['publish: --data with a reserved key', publishCommand, ['--job', J, '--event', 'progress', '--data', '{"hmac_sig":"x"}'], /reserved/],
  ['publish: a short dispatch token', publishCommand, ['--job', J, '--event', 'completed', '--expect-dispatch-token', 'abc'], /--expect-dispatch-token/],
  ['publish: 0 attempts', publishCommand, ['--job', J, '--event', 'progress', '--attempts', '0'], /--attempts/],
  ['subscribe: neither --job nor --all', subscribeCommand, [], /--job <id> or --all is required/],
  ['subscribe: both --job and --all', subscribeCommand, ['--all', '--job', J], /exclusive/],
  ['subscribe: a timeout that is not a number', subscribeCommand, ['--job', J, '--timeout', 'soon'], /--timeout/],
  ['close: an unknown request', closeCommand, ['--job', J, '--request', 'later'], /--request/],
  ['delegate: no agent at all', delegateCommand, ['--brief', 'b'], /exactly one of --agent, --exec and --remote/],
  ['delegate: both --exec and --remote', delegateCommand, ['--brief', 'b', '--exec', 'x', '--remote', 'y'], /exactly one of --agent, --exec and --remote/],
  ['delegate: both --agent and --exec', delegateCommand, ['--brief', 'b', '--agent', 'claude', '--exec', 'x'], /exactly one of --agent, --exec and --remote/],
  ['delegate: an unknown preset', delegateCommand, ['--brief', 'b', '--agent', 'cursor'], /--agent/],
  ['delegate: a pane for a remote job', delegateCommand, ['--brief', 'b', '--remote', 'h', '--pane', 'tmux'], /--pane: only for a local agent/],
  ['delegate: a pane of another kind', delegateCommand, ['--brief', 'b', '--exec', 'x', '--pane', 'screen'], /--pane/],
  ['remote run: neither --agent nor --exec', remoteCommand, ['run', '--session', 'h1'], /exactly one of --agent and --exec/],
  ['hook: an exit code that is no number', hookCommand, ['--from', 'wrapper', '--job', J, '--on', 'exit', '--exit-code', 'x'], /--exit-code/],
  ['remote run: a session with a space', remoteCommand, ['run', '--session', 'a b', '--exec', 'x'], /--session: no spaces/],
  ['doctor: an agent without a preset', doctorCommand, ['--agent', 'claude,cursor'], /--agent/],
  ['doctor: shell (nothing to check)', doctorCommand, ['--agent', 'shell'], /--agent/],
];

describe('argv → options', () => {
  it.each(accepted)('%s', async (_label, spec, argv, options) => {
    expect(await parseArgv(spec, argv)).toMatchObject(options);
  });

  it.each(refused)('%s: a usage error', async (_label, spec, argv, message) => {
    const err = await parseArgv(spec, argv).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(message);
  });

  it.each<[string, CommandSpec<never>, string[]]>([
    ['an unknown flag', pickCommand, ['--agent-session', 'S', '--bogus']],
    ['a missing required flag', publishCommand, ['--event', 'progress']],
    ['an excess argument', closeCommand, ['--job', J, '--request', 'cancelled', 'extra']],
  ])('%s: commander refuses it', async (_label, spec, argv) => {
    await expect(parseArgv(spec, argv)).rejects.toBeInstanceOf(CommanderError);
  });
});
