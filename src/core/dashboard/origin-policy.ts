import * as z from 'zod/mini';
import '../zod-messages.ts';
import { UsageError } from '../errors.ts';

/**
 * Why `text` is not an origin as a browser writes one in its `Origin` header (scheme://host[:port],
 * lowercase, no default port, no path), or undefined when it is one. The comparison with the header
 * is exact, so a value that a browser would never send is refused at start rather than never matching.
 */
export function originProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not an origin: expected scheme://host[:port], such as https://mam.example.com`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${JSON.stringify(text)} is not an http or https origin`;
  if (url.origin !== text)
    return `${JSON.stringify(text)} is not an origin as a browser sends it: write ${url.origin} (no path, no trailing slash, no default port)`;
  return undefined;
}

/** `--trusted-origin` and each entry of `MAM_DASHBOARD_TRUSTED_ORIGINS`: one exact origin. */
export const trustedOriginSchema = z.pipe(
  z.string(),
  z.transform((text: string, ctx): string => {
    const problem = originProblem(text);
    if (problem === undefined) return text;
    ctx.issues.push({ code: 'custom', message: problem, input: text });
    return z.NEVER;
  }),
);

/** `MAM_DASHBOARD_TRUSTED_ORIGINS`: origins separated by commas, blanks ignored; the first bad one is the error. */
export function parseOriginList(text: string | undefined): string[] | { problem: string } {
  const origins = (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const origin of origins) {
    const problem = originProblem(origin);
    if (problem !== undefined) return { problem };
  }
  return origins;
}

/**
 * Which `Origin` a state-changing request (login, logout, an action) may carry. By default only the
 * server's own, as its `Host` header names it: a page elsewhere cannot post to it. Behind a reverse
 * proxy the browser names the proxy's origin (`https://mam.example.com`) while the proxy sends its
 * own `Host`, so the operator names the proxy's origins, exactly; nothing else is inferred from
 * headers a proxy or a client could set.
 */
export class OriginPolicy {
  readonly #trusted: ReadonlySet<string>;

  constructor(trusted: readonly string[] = []) {
    for (const origin of trusted) {
      const problem = originProblem(origin);
      if (problem !== undefined) throw new UsageError(`--trusted-origin: ${problem}`);
    }
    this.#trusted = new Set(trusted);
  }

  get trusted(): readonly string[] {
    return [...this.#trusted];
  }

  accepts(origin: string, host: string | undefined): boolean {
    return (host !== undefined && origin === `http://${host}`) || this.#trusted.has(origin);
  }
}
