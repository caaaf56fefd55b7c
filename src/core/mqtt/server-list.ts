/**
 * Broker lists as people write them (`MQTT_BROKER=h1:1883,h2:1883,h3`, `MQTT_SERVERS`, a job's
 * `broker.host`): parsed once here for the configuration and for job records. No imports: the
 * configuration loads this on every command's start-up.
 */

/** One broker of a list. */
export interface BrokerServer {
  host: string;
  port: number;
}

/** An entry as written: the port is absent when the entry named none (MQTT_PORT then applies). */
export interface WrittenServer {
  host: string;
  port?: number | undefined;
}

const NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
// Bare IPv6 needs two colons at least (`::1`, `fd00::5`): `host:port` has one.
const IPV6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/;
const PORT = /^\d{1,5}$/;

/**
 * `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address, separated by commas; spaces
 * around entries are ignored. Returns the entries, or why the text is not a list (one line).
 */
export function parseServerList(text: string): WrittenServer[] | string {
  const entries = text.split(',').map((e) => e.trim());
  const out: WrittenServer[] = [];
  for (const entry of entries) {
    if (entry === '') return entries.length > 1 ? 'empty entry in the list' : 'expected a host name';
    const parsed = parseEntry(entry);
    if (typeof parsed === 'string') return `${JSON.stringify(entry)}: ${parsed}`;
    const twice = out.find((s) => s.host === parsed.host && s.port === parsed.port);
    if (twice) return `${JSON.stringify(entry)} is listed twice`;
    out.push(parsed);
  }
  return out;
}

const SHAPE = 'expected host, host:port or [IPv6]:port (no scheme, path or user)';

function parseEntry(entry: string): WrittenServer | string {
  // `mqtt://host:1883` and `user@host` would otherwise split at their last colon and be blamed on the port.
  if (/[/@\s]/.test(entry)) return SHAPE;
  let host = entry;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(entry);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2];
    if (!IPV6.test(host)) return 'expected an IPv6 address inside [ ]';
  } else if (!IPV6.test(entry)) {
    const colon = entry.lastIndexOf(':');
    if (colon >= 0) {
      host = entry.slice(0, colon);
      portText = entry.slice(colon + 1);
    }
    if (!NAME.test(host)) return SHAPE;
  }
  if (portText === undefined) return { host };
  const port = PORT.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) return 'expected a port from 1 to 65535 after ":"';
  return { host, port };
}

/** The entries with `defaultPort` where none was written. */
export function withPorts(list: WrittenServer[], defaultPort: number): BrokerServer[] {
  return list.map((s) => ({ host: s.host, port: s.port ?? defaultPort }));
}

export function sameServer(a: BrokerServer, b: BrokerServer): boolean {
  return a.host.toLowerCase() === b.host.toLowerCase() && a.port === b.port;
}

/** `host:port`, `[v6]:port`: the form the list is written in, for messages. */
export function formatServer(s: BrokerServer): string {
  return `${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}`;
}
