import type { MqttClient } from 'mqtt';
import { loadConfig } from '../config/config.ts';
import { CorruptRecord, NoSuchJob, TransitionRefused } from '../errors.ts';
import { newClientId, resolveBrokerTarget } from '../mqtt/broker-target.ts';
import { connectMqtt } from '../mqtt/mqtt-client.ts';
import { type PublishResult, commitEvent, wireMessages } from '../publisher/publisher.ts';
import { HEARTBEAT_DETAIL, isTerminalStatus } from '../vocabulary.ts';
import { Registry } from '../registry/registry.ts';
import { HeartbeatFiles } from './heartbeat-files.ts';
import { HeartbeatLoop } from './heartbeat-loop.ts';
import { isAlive } from './proc.ts';
import type { TimerArgs } from './timer-args.ts';

/** Reconnects to a broker that dropped us; a beat due while we are cut off is skipped, not queued. */
const RECONNECT_MS = 1_000;
/** A self-stop (timeout, agent gone, refused) waits this long for a beat stuck on a dead broker. */
const SETTLE_MS = 5_000;
/** DISCONNECT is a courtesy; a broker that does not answer does not keep the process alive. */
const END_MS = 1_000;

/** Why a beat's commit failed, when that ends the timer: the attempt is over or the job is gone. */
function finalReason(err: unknown): string | undefined {
  if (err instanceof TransitionRefused) return `refused: ${err.reason}`;
  if (err instanceof NoSuchJob || err instanceof CorruptRecord) return err.message;
  return undefined;
}

/**
 * The heartbeat timer process (contract §5): a `progress`/`heartbeat` event every period for one
 * attempt, committed on disk like any event — fenced with the attempt's dispatch token and id, and
 * refused once the attempt's barrier exists — then sent on one long-lived MQTT.js connection.
 * Resolves with the exit code once it has stopped; it never throws after its pidfile is written.
 */
export async function runTimer(args: TimerArgs, log: (line: string) => void = () => undefined): Promise<number> {
  const config = loadConfig();
  config.registryDir = args.registryDir;
  config.logDir = args.logDir;
  const registry = new Registry(config, log);
  const files = new HeartbeatFiles(registry.paths, args.jobId);
  // The terminal publish's SIGTERM: finish the beat in flight (it has its seq), then go. Handled
  // from the first moment, so that a stop during start-up still goes through the clean exit.
  let loop: HeartbeatLoop | undefined;
  let terminated = false;
  process.on('SIGTERM', () => {
    terminated = true;
    loop?.stop('terminated');
  });
  // Detached into its own session, the timer has no terminal; a stray hangup is not a stop.
  process.on('SIGHUP', () => undefined);
  try {
    await files.writePid(process.pid);
  } catch (err) {
    // A timer that no pidfile names could never be stopped by a terminal publish: it must not run.
    log(`cannot record pid in ${files.pidFile}: ${(err as Error).message}`);
    return 1;
  }
  let client: MqttClient | undefined;
  try {
    const record = registry.read(args.jobId);
    if (isTerminalStatus(record.status) || record.attempt_id !== args.attemptId) return 0;
    const target = resolveBrokerTarget(config.broker, record);
    // With a broker list, each reconnect goes to the next server (docs/cluster.md).
    client = connectMqtt(target, newClientId(target, 'hb'), { reconnectPeriod: RECONNECT_MS, clean: true });
    // Connection errors are retried by MQTT.js; without a listener an 'error' would crash the process.
    client.on('error', (err) => log(`mqtt: ${err.message}`));
    const mqtt = client;
    loop = new HeartbeatLoop(
      {
        stopReason: () => (isAlive(args.watchPid) ? undefined : `watched process ${args.watchPid} ended`),
        beat: async () => {
          // A beat is about liveness now; one held back for a reconnect would only add a seq gap.
          if (!mqtt.connected) return undefined;
          let result: PublishResult;
          try {
            result = await commitEvent(config, registry, {
              jobId: args.jobId,
              event: 'progress',
              detail: HEARTBEAT_DETAIL,
              source: 'heartbeat',
              expectDispatchToken: args.dispatchToken,
              expectAttemptId: args.attemptId,
              check: (current) => (files.fences(current.attempt_id) ? 'heartbeat barrier' : undefined),
            });
          } catch (err) {
            const reason = finalReason(err);
            if (reason === undefined) throw err;
            return reason;
          }
          // Both in order on one connection; resolved on PUBACK. A drop in between is resent by MQTT.js.
          await Promise.all(wireMessages(config, result).map((m) => mqtt.publishAsync(m.topic, m.payload, { qos: 1, retain: m.retain })));
          return undefined;
        },
      },
      { periodMs: args.periodSec * 1000, lifetimeMs: record.timeout_sec * 1000, settleMs: SETTLE_MS },
    );
    if (terminated) return 0;
    loop.start();
    log(`stopped: ${await loop.stopped}`);
    return 0;
  } catch (err) {
    log(`stopped: ${(err as Error).message}`);
    return 1;
  } finally {
    if (client) await Promise.race([client.endAsync(true).catch(() => undefined), new Promise((r) => setTimeout(r, END_MS).unref())]);
    files.removePidIf(process.pid);
  }
}
