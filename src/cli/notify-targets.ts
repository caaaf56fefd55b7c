import { parseWebhook } from '../core/fleet/alerts/webhook-notifier.ts';
import { UsageError } from '../core/errors.ts';
import { readFlagFile } from './flag-file.ts';

/** A list of webhook URLs: a few lines; anything near this is not one. */
const MAX_TARGETS_FILE_BYTES = 64 * 1024;

/**
 * `--notify` values as given, with each `@FILE` replaced by the targets it lists
 * (docs/coordination-reference.md, "Webhooks"): one a line, blank lines and `#` comments skipped.
 * The URLs are credentials, and argv is readable by every user of the host (`ps`); a file keeps
 * them out of it. Like ssh with a private key, the file must be the user's own and open to no one
 * else. No error repeats a URL.
 */
export function expandNotifyTargets(values: string[]): string[] {
  return values.flatMap((v) => (v.startsWith('@') ? readTargetsFile(v.slice(1)) : [v]));
}

function readTargetsFile(file: string): string[] {
  const where = `--notify @${file}`;
  const text = readFlagFile(file, { where, maxBytes: MAX_TARGETS_FILE_BYTES, private: true });
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
