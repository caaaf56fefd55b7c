import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { delegateCommand } from '../../src/cli/commands/delegate.ts';
import { hookCommand } from '../../src/cli/commands/hook.ts';
import { sessionCommand } from '../../src/cli/commands/session.ts';
import { showCommand } from '../../src/cli/commands/show.ts';
import { type CommandSpec, parseArgv } from '../../src/cli/program.ts';
import { UsageError } from '../../src/core/errors.ts';

/** argv → options for the session verbs, `mam delegate --session`, `mam hook --session` and `mam show --events` (issue 25). */
const J = 'abcd1234';

describe('argv → options (named sessions)', () => {
  it.each<[string, CommandSpec<never>, string[], Record<string, unknown>]>([
    ['session create', sessionCommand, ['create', '--name', 's1', '--agent', 'claude'], { name: 's1', agent: 'claude' }],
    [
      'session create: workdir, ready timeout',
      sessionCommand,
      ['create', '--name', 's1', '--agent', 'shell', '--workdir', 'w', '--ready-timeout', '2'],
      { workdir: 'w', readyTimeout: 2 },
    ],
    ['session stop N (an operand)', sessionCommand, ['stop', 's1'], { name: 's1', purgeConversation: false }],
    ['session stop N --purge-conversation', sessionCommand, ['stop', 's1', '--purge-conversation'], { name: 's1', purgeConversation: true }],
    ['session resume N', sessionCommand, ['resume', 's1'], { name: 's1' }],
    ['session list --json', sessionCommand, ['list', '--json'], { json: true }],
    ['delegate --session', delegateCommand, ['--brief', 'b', '--session', 's1'], { session: 's1' }],
    ['delegate --session --wait-idle', delegateCommand, ['--brief', 'b', '--session', 's1', '--wait-idle', '0.5'], { session: 's1', waitIdle: 0.5 }],
    ['hook --session --generation', hookCommand, ['--from', 'claude', '--session', 's1', '--generation', '2'], { session: 's1', generation: 2 }],
    [
      'hook --session with --job (a shell job)',
      hookCommand,
      ['--from', 'wrapper', '--session', 's1', '--generation', '1', '--job', J, '--on', 'start'],
      { job: J },
    ],
    ['show --events', showCommand, ['--job', J, '--events'], { job: J, events: true }],
  ])('%s', async (_label, spec, argv, options) => {
    expect(await parseArgv(spec, argv)).toMatchObject(options);
  });

  it.each<[string, CommandSpec<never>, string[], RegExp]>([
    ['create: an agent that cannot host a session', sessionCommand, ['create', '--name', 's1', '--agent', 'aider'], /^--agent: /],
    ['create: a name that is no file name', sessionCommand, ['create', '--name', '../x', '--agent', 'shell'], /^--name: /],
    ['stop: a name with a dot', sessionCommand, ['stop', 'a.b'], /^--name: /],
    ['delegate: --session with --exec', delegateCommand, ['--brief', 'b', '--session', 's1', '--exec', 'x'], /exactly one of/],
    ['delegate: --session with --pane', delegateCommand, ['--brief', 'b', '--session', 's1', '--pane', 'tmux'], /^--pane: /],
    ['delegate: --wait-idle without --session', delegateCommand, ['--brief', 'b', '--exec', 'x', '--wait-idle', '1'], /^--wait-idle: only with --session/],
    ['hook: neither --job nor --session', hookCommand, ['--from', 'claude'], /--job or --session/],
    ['hook: --session without --generation', hookCommand, ['--from', 'claude', '--session', 's1'], /go together/],
  ])('%s: a usage error', async (_label, spec, argv, message) => {
    const err = await parseArgv(spec, argv).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(message);
  });

  it('session stop without a name: commander refuses it (exit 64)', async () => {
    await expect(parseArgv(sessionCommand, ['stop'])).rejects.toBeInstanceOf(CommanderError);
  });
});
