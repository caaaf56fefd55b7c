import { describe, expect, it } from 'vitest';
import { scrubDetail } from '../../../src/core/wire/scrub.ts';

const options = { workspaceRoot: '/work/main', secrets: ['s3cret-token', 'pw', undefined, ''] };
const scrub = (detail: string) => scrubDetail(detail, options);

describe('scrubDetail', () => {
  it.each([
    // the workspace root alone, as a whole token
    ['cd /work/main', 'cd <workspace>'],
    ['cd /work/main/', 'cd <workspace>'],
    ['in /work/main.', 'in <workspace>.'],
    ['"/work/main"', '"<workspace>"'],
    // paths inside the workspace, and any other absolute path
    ['wrote /work/main/src/a.ts', 'wrote <path>'],
    ['error at /work/main/src/a.ts:12:5', 'error at <path>:12:5'],
    ['see /work/mainframe/x', 'see <path>'],
    ['read /etc/passwd, then /tmp/x.log!', 'read <path>, then <path>!'],
    ['(/usr/bin/env)', '(<path>)'],
    ['PATH=/usr/bin:/bin', 'PATH=<path>:<path>'],
    ['host:/srv/data', 'host:<path>'],
    ['echo x >/tmp/out', 'echo x ><path>'],
    ['{"file":"/home/u/x.json"}', '{"file":"<path>"}'],
    ['~/notes.md and ~/.ssh/id_rsa', '<path> and <path>'],
    ['open file:///home/u/report.html', 'open <path>'],
    ['/leading/path at start', '<path> at start'],
    ['tabs\t/a/b\nnewline /c', 'tabs\t<path>\nnewline <path>'],
    // left alone
    ['see https://example.com/a/b?x=1', 'see https://example.com/a/b?x=1'],
    ['mqtt://broker:1883/topic', 'mqtt://broker:1883/topic'],
    ['half done: 1/2, 3/4', 'half done: 1/2, 3/4'],
    ['on 2024/01/02 and 12/25/2024', 'on 2024/01/02 and 12/25/2024'],
    ['read and/or write', 'read and/or write'],
    ['relative ./src/a.ts and ../b', 'relative ./src/a.ts and ../b'],
    ['src/a.ts', 'src/a.ts'],
    ['a / b', 'a / b'],
    ['', ''],
  ])('%j → %j', (detail, expected) => {
    expect(scrub(detail)).toBe(expected);
  });

  it('redacts secrets first, longest first, even inside paths and words', () => {
    expect(scrub('token s3cret-token and pw=pw')).toBe('token <redacted> and <redacted>=<redacted>');
    expect(scrubDetail('ab abc', { secrets: ['ab', 'abc'] })).toBe('<redacted> <redacted>');
    expect(scrub('/etc/s3cret-token/x')).toBe('<path><redacted><path>');
    // The path stops at the placeholder, so what is left of it is the root: nothing leaks either way.
    expect(scrub('/work/main/s3cret-token')).toBe('<workspace><redacted>');
  });

  it('handles a workspace root with spaces, a trailing slash or regex characters', () => {
    expect(scrubDetail('cd /home/me/My Project', { workspaceRoot: '/home/me/My Project/' })).toBe('cd <workspace>');
    expect(scrubDetail('at /home/me/My Project/a.ts', { workspaceRoot: '/home/me/My Project' })).toBe('at <path>');
    expect(scrubDetail('in /w/a+b (c)', { workspaceRoot: '/w/a+b' })).toBe('in <workspace> (c)');
  });

  it('treats every path alike without a usable workspace root', () => {
    expect(scrubDetail('cd /work/main')).toBe('cd <path>');
    expect(scrubDetail('cd /work/main', { workspaceRoot: '/' })).toBe('cd <path>');
    expect(scrubDetail('cd /work/main', { workspaceRoot: 'relative' })).toBe('cd <path>');
  });
});
