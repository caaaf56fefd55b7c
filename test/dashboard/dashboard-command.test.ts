import { describe, expect, it } from 'vitest';
import { DEFAULT_DASHBOARD_PORT, dashboardCommand } from '../../src/cli/commands/dashboard.ts';
import { parseArgv } from '../../src/cli/program.ts';
import { UsageError } from '../../src/core/errors.ts';

/** `mam dashboard`'s argv → options, as test/cli/argv.test.ts has it for the other commands. */
describe('mam dashboard: argv → options', () => {
  it.each<[string, string[], Record<string, unknown>]>([
    ['defaults: loopback, port 6260, read-only', [], { port: DEFAULT_DASHBOARD_PORT, host: '127.0.0.1' }],
    ['every flag', ['--port', '0', '--host', '0.0.0.0', '--allow-actions', '--registry', 'r'], { port: 0, host: '0.0.0.0', allowActions: true, registry: 'r' }],
    [
      '--trusted-origin, repeated',
      ['--trusted-origin', 'https://mam.example.com', '--trusted-origin', 'http://10.0.0.5:8080'],
      { trustedOrigin: ['https://mam.example.com', 'http://10.0.0.5:8080'] },
    ],
  ])('%s', async (_label, argv, options) => {
    const parsed = await parseArgv(dashboardCommand, argv);
    expect(parsed).toMatchObject(options);
    if (!argv.includes('--allow-actions')) expect((parsed as { allowActions?: boolean }).allowActions).toBeUndefined();
  });

  it.each<[string, string[], RegExp]>([
    ['a port that is no number', ['--port', 'web'], /--port/],
    ['a port out of range', ['--port', '70000'], /--port/],
    ['an empty host', ['--host', ''], /--host/],
    ['an origin with a path', ['--trusted-origin', 'https://mam.example.com/dash'], /^--trusted-origin: .* write https:\/\/mam\.example\.com /],
    ['an origin with its default port', ['--trusted-origin', 'https://mam.example.com:443'], /^--trusted-origin: .* write https:\/\/mam\.example\.com /],
    ['an origin in capitals', ['--trusted-origin', 'https://MAM.example.com'], /^--trusted-origin: .* write https:\/\/mam\.example\.com /],
    ['a host without a scheme', ['--trusted-origin', 'mam.example.com'], /^--trusted-origin: .* expected scheme:\/\/host\[:port\]/],
  ])('%s: a usage error', async (_label, argv, message) => {
    const err = await parseArgv(dashboardCommand, argv).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toMatch(message);
  });
});
