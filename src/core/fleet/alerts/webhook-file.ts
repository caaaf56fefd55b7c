import { type Stats, readFileSync, statSync } from 'node:fs';
import { UsageError } from '../../errors.ts';

/**
 * `--notify @FILE` (docs/coordination.md): webhook targets read from a file, one a line (blank
 * lines and `#` comments skipped), so that the URLs, each its own credential, stay out of the
 * process's argv, which every user of the host can read (`ps`). Like ssh with a private key, the
 * file must be the user's own and readable by no one else; the URLs themselves are never repeated
 * in an error.
 */
export function readWebhookFile(file: string): string[] {
  const where = `--notify @${file}`;
  let stat: Stats;
  let text: string;
  try {
    stat = statSync(file);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${where}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (!stat.isFile()) throw new UsageError(`${where}: not a file`);
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) throw new UsageError(`${where}: the file is not yours`);
  if ((stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw new UsageError(`${where}: others can read it (mode ${mode}); chmod 600 it`);
  }
  const targets = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  if (targets.length === 0) throw new UsageError(`${where}: no target in it`);
  return targets;
}

/** `--notify` values as given, with each `@FILE` replaced by the targets it holds, in order. */
export function expandWebhookTargets(values: string[]): string[] {
  return values.flatMap((v) => (v.startsWith('@') ? readWebhookFile(v.slice(1)) : [v]));
}
