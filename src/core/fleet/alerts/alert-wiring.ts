import type { MamConfig } from '../../config/config.ts';
import { UsageError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import type { Registry } from '../../registry/registry.ts';
import { type Alert, alertText } from './alert.ts';
import { AlertMonitor } from './alert-monitor.ts';
import { WebhookNotifier, type WebhookTarget, parseWebhook } from './webhook-notifier.ts';

export interface RunningAlerts {
  onPrinted: (jobId: string, event: string | null, payload: unknown) => void;
  stop(): Promise<void>;
}

/**
 * `mam-subscribe --all --alerts [--notify URL]…`: the alert monitor, its lines on stdout (JSON, or a
 * human line with `--pretty`) and its webhooks. Returns the hook the watch feeds and the stop.
 */
export async function startAlerts(
  config: MamConfig,
  registry: Registry,
  log: Logger,
  opts: { notify: string[]; pretty?: boolean | undefined },
): Promise<RunningAlerts> {
  const targets: WebhookTarget[] = [];
  for (const [i, text] of opts.notify.entries()) {
    const target = parseWebhook(text, i + 1);
    if (typeof target === 'string') throw new UsageError(`--notify: ${target}`);
    targets.push(target);
  }
  const notifier = targets.length > 0 ? new WebhookNotifier(targets, { log }) : undefined;
  const print = (alert: Alert) => process.stdout.write(`${opts.pretty ? `ALERT ${alertText(alert)}` : JSON.stringify(alert)}\n`);
  const monitor = new AlertMonitor(config, registry, {
    log,
    emit: (alert) => {
      print(alert);
      notifier?.send(alert);
    },
  });
  monitor.start();
  return {
    onPrinted: (jobId, event, payload) => monitor.onPrinted(jobId, event, payload),
    async stop() {
      await monitor.stop();
      await notifier?.close();
    },
  };
}
