import { MamError } from '../errors.ts';
import { type BrokerTarget, describeTarget } from './broker-target.ts';

/**
 * Why a broker could not be used, for every client of the package (the one-shot publisher, MQTT.js
 * in the subscriber, the heartbeat timer and the runner). What a failure means for a command — exit 2
 * for a publish, 3 for a watch — is decided in src/cli/exit-codes.ts, not here.
 */
export class BrokerError extends MamError {
  /** False when trying again changes nothing (credentials, TLS trust, an ACL). */
  readonly transient: boolean = true;
}

/** A socket-level failure: worth another try (contract §3 backoff). */
export class BrokerUnreachable extends BrokerError {
  constructor(broker: string, why: string) {
    super(`broker ${broker} unreachable: ${why}`);
  }
}

const CONNACK_REASONS: Record<number, string> = {
  1: 'unacceptable protocol version',
  2: 'client identifier rejected',
  3: 'server unavailable',
  4: 'bad user name or password',
  5: 'not authorized',
};

/**
 * The broker answered CONNACK with a refusal. Final (contract §3), except 3 "server unavailable":
 * that is the server saying it cannot serve right now — on a cluster, the next node may — not a
 * verdict on these credentials.
 */
export class BrokerRefusedConnection extends BrokerError {
  override readonly transient: boolean;
  constructor(broker: string, username: string | undefined, returnCode: number) {
    const who = username ? `user ${username}` : 'anonymous';
    super(`broker ${broker} refused ${who}: ${CONNACK_REASONS[returnCode] ?? `return code ${returnCode}`}`);
    this.transient = returnCode === 3;
  }
}

/** A TLS failure to trust the broker (or to be trusted by it): reported as what it is, never retried. */
export class BrokerTlsRefused extends BrokerError {
  override readonly transient = false;
  constructor(broker: string, code: string) {
    super(`broker ${broker}: TLS handshake failed (${code}): check MQTT_CA_CERTS, MQTT_CERTFILE and MQTT_KEYFILE`);
  }
}

/** The broker granted a subscription with the failure code (0x80): an ACL denies the topic. */
export class SubscriptionRefused extends BrokerError {
  override readonly transient = false;
  constructor(broker: string, topics: string[]) {
    super(`broker ${broker} refused the subscription to ${topics.join(', ')}`);
  }
}

const TLS_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_|ERR_TLS|ERR_SSL|alert|handshake/i;

/** True for errors of the TLS layer that no retry can fix. */
export function isTlsFailure(err: Error & { code?: unknown }): boolean {
  return (typeof err.code === 'string' && TLS_ERROR.test(err.code)) || /ssl|tls alert|certificate/i.test(err.message);
}

/**
 * A connection error as MQTT.js or a socket reports it, classified once for every client: a refused
 * CONNACK (MQTT.js puts its return code in `code`), a TLS failure, or anything else (unreachable).
 */
export function classifyConnectionError(target: BrokerTarget, err: Error & { code?: number | string }): BrokerError {
  const broker = describeTarget(target);
  if (typeof err.code === 'number' && err.code >= 1 && err.code <= 5) return new BrokerRefusedConnection(broker, target.username, err.code);
  if (target.tls && isTlsFailure(err)) return new BrokerTlsRefused(broker, String(err.code ?? err.message));
  return new BrokerUnreachable(broker, String(err.code ?? err.message));
}
