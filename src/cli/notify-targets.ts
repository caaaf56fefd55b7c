import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { parseWebhook } from '../core/fleet/alerts/webhook-notifier.ts';
import { UsageError } from '../core/errors.ts';

/**
 * `--notify` values as given, with each `@FILE` replaced by the targets it lists (docs/coordination.md):
 * one a line, blank lines and `#` comments skipped. The URLs are credentials, and argv is readable by
 * every user of the host (`ps`); a file keeps them out of it. Like ssh with a private key, the file
 * must be the user's own and open to no one else. No error repeats a URL.
 */
export function expandNotifyTargets(values: string[]): string[] {
  return values.flatMap((v) => (v.startsWith('@') ? readTargetsFile(v.slice(1)) : [v]));
}

function readTargetsFile(file: string): string[] {
  const where = `--notify @${file}`;
  let text: string;
  let fd: number | undefined;
  try {
    // Checked on the open file, not the path (no swap between check and read); O_NONBLOCK so that a
    // FIFO is refused below instead of waiting for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new UsageError(`${where}: not a regular file`);
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) throw new UsageError(`${where}: not yours`);
    if ((stat.mode & 0o077) !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
      throw new UsageError(`${where}: permissions are too open (mode ${mode}); chmod 600 it`);
    }
    text = readFileSync(fd, 'utf8');
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`${where}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const targets: string[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const target = parseWebhook(line, targets.length + 1, `line ${i + 1}`);
    if (typeof target === 'string') throw new UsageError(`${where}: ${target}`);
    targets.push(line);
  }
  if (targets.length === 0) throw new UsageError(`${where}: no target in it`);
  return targets;
}
