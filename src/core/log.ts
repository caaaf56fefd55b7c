import pino, { type Logger } from 'pino';

export type { Logger };

/** Diagnostic logs: pino JSON on stderr (contract §1), synchronous so a short process loses none. */
export function createLogger(name: string, level: string): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: true }));
}
