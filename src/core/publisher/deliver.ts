import { setTimeout as sleep } from 'node:timers/promises';
import type { BrokerTarget } from '../mqtt/broker-target.ts';
import { atServer, newClientId } from '../mqtt/broker-target.ts';
import { BrokerError } from '../mqtt/broker-errors.ts';
import { OneShotSession, type OutgoingMessage } from '../mqtt/one-shot-publish.ts';

/** Contract §3: the delay before try n+1 is min(0.5 × 2^(n−1), 8) s. */
export function retryDelayMs(failedTries: number): number {
  return Math.min(500 * 2 ** (failedTries - 1), 8_000);
}

export interface DeliveryOptions {
  attempts: number;
  /** A session already connecting (opened while the registry work ran), used for the first try. */
  firstSession?: { session: OneShotSession; connected: Promise<void> } | undefined;
  onRetry?: (failedTries: number, err: Error) => void;
}

/** Opens a session and starts its handshake; the handshake's failure is held until awaited. */
export function openSession(target: BrokerTarget, role: string): { session: OneShotSession; connected: Promise<void> } {
  const one = atServer(target, 0);
  const session = new OneShotSession(one, newClientId(one, role));
  const connected = session.connect();
  connected.catch(() => undefined); // awaited later; never an unhandled rejection
  return { session, connected };
}

/**
 * Delivers `messages` in order on one connection, trying up to `attempts` times on socket errors.
 * A refused CONNACK or TLS handshake is final at once: credentials do not get better by retrying.
 * With several servers, try n goes to server n (wrapping), after the same delays: the next node
 * of a cluster is the likeliest to answer, and the contract's back-off still bounds the whole.
 * `firstSession`, when given, was opened to the first server.
 */
export async function deliver(target: BrokerTarget, messages: OutgoingMessage[], options: DeliveryOptions): Promise<void> {
  let opened = options.firstSession;
  for (let tryNo = 1; ; tryNo++) {
    const { session, connected } = opened ?? openSession(atServer(target, tryNo - 1), 'pub');
    opened = undefined;
    try {
      await connected;
      await session.publish(messages);
      await session.end();
      return;
    } catch (err) {
      session.destroy();
      if ((err instanceof BrokerError && !err.transient) || tryNo >= options.attempts) throw err;
      options.onRetry?.(tryNo, err as Error);
      await sleep(retryDelayMs(tryNo));
    }
  }
}
