/**
 * Contract §3: `detail` is scrubbed before it is recorded or sent, because it goes to a shared broker
 * and to logs that outlive the job. Order matters: secrets first (one may sit inside a path), then
 * paths, where the workspace root alone reads `<workspace>` and every other absolute path `<path>`.
 */
export interface ScrubOptions {
  workspaceRoot?: string | undefined;
  /** MQTT_PASSWORD, MAM_DISPATCH_SECRET, the job's token; unset or empty values are skipped. */
  secrets?: ReadonlyArray<string | undefined>;
}

// A path starts where a word cannot continue: the start, a space, a quote, an opening bracket, or a
// separator of key=value, PATH lists, `host:/dir` and shell redirects. A letter or digit before the
// slash means prose (`and/or`, `1/2`, `2024/01/02`), a `.` a relative path.
const BOUNDARY = String.raw`(?<=^|[\s"'\x60(\[{<>=:,;|])`;

// Path characters stop at what ends a token in prose or shell; `:` too, so `/a.ts:12:5` keeps its
// line number.
const PATH_CHAR = String.raw`[^\s"'\x60<>()\[\]{}|;,:]`;

// `/(?!/)` leaves the `//host` of a URL alone (its `:` is otherwise a boundary); `file:///x` is a path.
const ABSOLUTE = `(?:~|file://)?/(?!/)${PATH_CHAR}+`;

// Sentence punctuation after a path is prose, not part of it.
const TRAILING_PUNCTUATION = /[.!?]+$/;

export function scrubDetail(detail: string, options: ScrubOptions = {}): string {
  let out = detail;
  // Longest first, so a secret that contains another is redacted whole.
  const secrets = (options.secrets ?? []).filter((s): s is string => typeof s === 'string' && s !== '');
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join('<redacted>');
  }
  const root = workspaceRootOf(options.workspaceRoot);
  // The root is tried first and whole, so a root with a space or a `:` in it is not cut in two.
  const starts = root === undefined ? ABSOLUTE : `${escapeRegExp(root)}${PATH_CHAR}*|${ABSOLUTE}`;
  const paths = new RegExp(`${BOUNDARY}(?:${starts})`, 'g');
  return out.replace(paths, (match) => {
    const trailing = TRAILING_PUNCTUATION.exec(match)?.[0] ?? '';
    const path = match.slice(0, match.length - trailing.length);
    const isRoot = root !== undefined && (path === root || path === `${root}/`);
    return `${isRoot ? '<workspace>' : '<path>'}${trailing}`;
  });
}

function workspaceRootOf(root: string | undefined): string | undefined {
  const trimmed = root?.replace(/\/+$/, '');
  // A root of `/` would make every path "the workspace"; a relative one is not a path we can spot.
  return trimmed?.startsWith('/') && trimmed.length > 1 ? trimmed : undefined;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
