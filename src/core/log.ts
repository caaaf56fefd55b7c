import pino, { type DestinationStream, type Logger } from 'pino';

export type { DestinationStream, Logger };

/**
 * Diagnostic logs: pino JSON on stderr (contract §1), synchronous so a short process loses none.
 * `secrets` (configSecrets, webhook URLs) are replaced by `<redacted>` in every line, whatever
 * carried them there — an error message of a library, a payload at trace level — because a log
 * outlives the job and is pasted into issues.
 */
export function createLogger(
  name: string,
  level: string,
  secrets: ReadonlyArray<string | undefined> = [],
  destination: DestinationStream = pino.destination({ fd: 2, sync: true }),
): Logger {
  const redact = redactor(secrets);
  return pino({ name, level, base: { pid: process.pid }, ...(redact ? { hooks: { streamWrite: redact } } : {}) }, destination);
}

/** undefined without secrets; else a rewrite of a serialized line that knows JSON's escapes. */
function redactor(secrets: ReadonlyArray<string | undefined>): ((line: string) => string) | undefined {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (!s) continue;
    forms.add(s);
    // A secret holding `"`, `\` or a control character is written escaped inside a JSON string.
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  if (forms.size === 0) return undefined;
  // Longest first, so a secret that contains another is redacted whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  return (line) => {
    let out = line;
    for (const form of ordered) if (out.includes(form)) out = out.split(form).join('<redacted>');
    return out;
  };
}
