import type { Logger } from '../../log.ts';
import { type Alert, alertText } from './alert.ts';

/**
 * `--notify URL` (docs/coordination-reference.md, "Webhooks"): each alert POSTed to each webhook,
 * in the shape its host expects. The URL is a secret (a Slack or Discord webhook URL is its own
 * credential), so it is never logged: a target is named by its position and kind (`#2 (discord)`).
 */
export type WebhookKind = 'slack' | 'discord' | 'json';

export interface WebhookTarget {
  kind: WebhookKind;
  url: string;
  /** 1-based, as given on the command line: how logs name it. */
  index: number;
}

/**
 * `slack:URL` / `discord:URL` force a shape; otherwise the host decides, and any other host gets both
 * keys and the alert. A refusal is a string that names the target by `label` (its place), never by
 * its text.
 */
export function parseWebhook(text: string, index: number, label = `target #${index}`): WebhookTarget | string {
  const forced = /^(slack|discord):(?=https?:)/.exec(text);
  const url = forced ? text.slice(forced[0].length) : text;
  let host: string;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `${label}: expected an http(s) URL`;
    host = parsed.hostname.toLowerCase();
  } catch {
    // The text itself is not repeated: it may be a webhook URL with a typo, still a secret.
    return `${label}: not a URL`;
  }
  const kind: WebhookKind = forced
    ? (forced[1] as WebhookKind)
    : host === 'hooks.slack.com' || host.endsWith('.slack.com')
      ? 'slack'
      : host === 'discord.com' || host === 'discordapp.com' || host.endsWith('.discord.com')
        ? 'discord'
        : 'json';
  return { kind, url, index };
}

export function webhookBody(kind: WebhookKind, alert: Alert): unknown {
  const text = alertText(alert);
  if (kind === 'slack') return { text };
  if (kind === 'discord') return { content: text };
  return { text, content: text, alert };
}

export interface NotifierOptions {
  log: Logger;
  /** Tries in total per alert and target (default 4). */
  attempts?: number;
  /** First retry delay; doubled each time (default 500 ms). */
  backoffMs?: number;
  /** One POST's limit (default 5 s): a slow target delays only its own queue. */
  timeoutMs?: number;
}

/** Alerts waiting per target beyond this are dropped, oldest first: a target down for hours must not grow memory. */
const MAX_QUEUE = 100;

/**
 * One queue per target, one POST in flight per target: a slow or dead webhook delays only its own
 * alerts, never another target's and never the watch (send() returns at once).
 */
export class WebhookNotifier {
  private readonly queues: Map<WebhookTarget, Alert[]> = new Map();
  private readonly busy = new Set<WebhookTarget>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    readonly targets: WebhookTarget[],
    private readonly opts: NotifierOptions,
  ) {
    for (const t of targets) this.queues.set(t, []);
  }

  send(alert: Alert): void {
    if (this.closed) return;
    for (const [target, queue] of this.queues) {
      queue.push(alert);
      if (queue.length > MAX_QUEUE) {
        queue.shift();
        this.opts.log.warn({ target: name(target) }, 'notify queue full: oldest alert dropped');
      }
      this.pump(target);
    }
  }

  /** Lets what is in flight finish for up to `ms`, then gives up on the rest (the process is ending). */
  async close(ms = 2_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      (async () => {
        while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
      })(),
      new Promise((r) => (timer = setTimeout(r, ms))),
    ]);
    clearTimeout(timer);
    this.closed = true;
  }

  private pump(target: WebhookTarget): void {
    if (this.busy.has(target)) return;
    const alert = this.queues.get(target)?.shift();
    if (!alert) return;
    this.busy.add(target);
    const run = this.deliver(target, alert).finally(() => {
      this.busy.delete(target);
      this.inFlight.delete(run);
      if (!this.closed) this.pump(target);
    });
    this.inFlight.add(run);
  }

  private async deliver(target: WebhookTarget, alert: Alert): Promise<void> {
    const attempts = this.opts.attempts ?? 4;
    const body = JSON.stringify(webhookBody(target.kind, alert));
    for (let n = 1; n <= attempts; n++) {
      const why = await post(target.url, body, this.opts.timeoutMs ?? 5_000);
      if (why === undefined) return;
      const last = n === attempts;
      this.opts.log.warn({ target: name(target), attempt: n, of: attempts, why }, last ? 'notify failed: alert dropped' : 'notify failed: will retry');
      if (last || this.closed) return;
      await new Promise((r) => setTimeout(r, (this.opts.backoffMs ?? 500) * 2 ** (n - 1)));
    }
  }
}

function name(t: WebhookTarget): string {
  return `#${t.index} (${t.kind})`;
}

/** undefined on a 2xx; else why, in words that hold no part of the URL. */
async function post(url: string, body: string, timeoutMs: number): Promise<string | undefined> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer().catch(() => undefined);
    return res.ok ? undefined : `HTTP ${res.status}`;
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
    return e.cause?.code ?? e.name;
  }
}
