import path from 'node:path';
import { appendLine, ensureDir } from '../registry/record-store.ts';

/**
 * `<log dir>/fleet.ndjson`: what the fleet's receivers refused (forged or malformed presence, bids)
 * and what they decided (turn claims). One whole line per `write(2)` with O_APPEND, as the jobs'
 * audit does, so concurrent writers interleave whole lines. Never holds a payload's signature key.
 */
export type FleetAuditType =
  | 'rejected'
  | 'claimed'
  | 'claim_lost'
  | 'turn_held'
  | 'turn_restored'
  | 'alert'
  | 'roundtable_invited'
  | 'counsel_given'
  | 'counsel_late';

export class FleetAudit {
  constructor(private readonly logDir: string) {}

  get file(): string {
    return path.join(this.logDir, 'fleet.ndjson');
  }

  /** `<log dir>/fleet-alerts.ndjson`: every alert a monitor raised; `mam inbox` reads it. */
  get alertsFile(): string {
    return path.join(this.logDir, 'fleet-alerts.ndjson');
  }

  append(type: FleetAuditType, entry: Record<string, unknown>): void {
    this.write(this.file, { type, ...entry, at: new Date().toISOString() });
  }

  appendAlert(alert: object): void {
    this.write(this.alertsFile, alert);
  }

  private write(file: string, line: object): void {
    try {
      ensureDir(this.logDir);
      appendLine(file, `${JSON.stringify(line)}\n`);
    } catch {
      // The audit is evidence, not a gate: a full or read-only disk must not stop a watch.
    }
  }
}
