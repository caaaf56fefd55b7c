import { readdirSync } from 'node:fs';
import path from 'node:path';
import { CorruptRecord, MamError } from '../errors.ts';
import { NoSuchSession } from './session-errors.ts';
import { withDirLock } from '../registry/lock.ts';
import { ensureDir, readRegistryJson, writeJsonAtomic } from '../registry/record-store.ts';
import type { Registry } from '../registry/registry.ts';
import { type SessionRecord, assertSessionName, sessionRecordSchema } from './session-record.ts';

/**
 * Session records: `<registry>/sessions/<name>.json`, one file a session, each written atomically
 * (temp file, fsync, rename: a reader or a SIGKILL sees the old or the new file, never half of one)
 * under a lock of its own, `<name>.lock` (a proper-lockfile mkdir lock, as the registry's, taken over
 * within seconds when its holder died).
 *
 * Why a lock per session and not the registry lock: a session's writers are its hooks (one process
 * per agent event) and the delegates that deliver to it; they contend only with each other, and a
 * busy fleet's job publishes do not wait behind them. Why not SQLite WAL as the seed: the stack has
 * no SQLite, and one JSON file per session under a mkdir lock gives what WAL gave the seed here —
 * serialised read-modify-writes, readers that never block and never see a torn record, and
 * recovery from a killed writer — without a native module.
 *
 * Lock order: a session lock may be held while the registry lock is taken (a delivery registers
 * nothing under it, a reconcile closes the held job), never the other way round.
 */
export class SessionStore {
  readonly dir: string;
  readonly logDir: string;

  constructor(registry: { paths: Pick<Registry['paths'], 'registryDir' | 'logDir'> }) {
    this.dir = path.join(registry.paths.registryDir, 'sessions');
    this.logDir = path.join(registry.paths.logDir, 'sessions');
  }

  file(name: string): string {
    return path.join(this.dir, `${assertSessionName(name)}.json`);
  }

  /** The session's own folder among the logs: its agent settings and launch files. */
  sessionLogDir(name: string): string {
    return path.join(this.logDir, assertSessionName(name));
  }

  private lockPath(name: string): string {
    return path.join(this.dir, `${assertSessionName(name)}.lock`);
  }

  /** The record, or NoSuchSession; a file that does not parse or validate is a CorruptRecord naming it. */
  read(name: string): SessionRecord {
    const file = this.file(name);
    const parsed = sessionRecordSchema.safeParse(readRegistryJson(file, () => new NoSuchSession(name)));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new CorruptRecord(file, `${issue.path.join('.') || 'record'}: ${issue.message}`);
    }
    if (parsed.data.name !== name) throw new CorruptRecord(file, `name ${parsed.data.name} does not match the file name`);
    return parsed.data;
  }

  /** undefined when there is no such session. */
  find(name: string): SessionRecord | undefined {
    try {
      return this.read(name);
    } catch (err) {
      if (err instanceof NoSuchSession) return undefined;
      throw err;
    }
  }

  /** Every session, by name; corrupt records are reported, not fatal. */
  list(): { sessions: SessionRecord[]; corrupt: CorruptRecord[] } {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { sessions: [], corrupt: [] };
      throw err;
    }
    const sessions: SessionRecord[] = [];
    const corrupt: CorruptRecord[] = [];
    for (const file of names.sort()) {
      if (!file.endsWith('.json')) continue;
      const name = file.slice(0, -'.json'.length);
      try {
        sessions.push(this.read(assertSessionName(name)));
      } catch (err) {
        if (err instanceof CorruptRecord) corrupt.push(err);
        else if (!(err instanceof NoSuchSession)) corrupt.push(new CorruptRecord(path.join(this.dir, file), (err as Error).message));
      }
    }
    return { sessions, corrupt };
  }

  /** Runs `fn` holding the session's lock: every read-modify-write of its record goes through here. */
  withLock<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    ensureDir(this.dir);
    return withDirLock({ lockPath: this.lockPath(name), guards: this.file(name), what: `session ${name}` }, fn);
  }

  /** Writes a whole record; call it under the session's lock. What is written must read back. */
  async write(record: SessionRecord): Promise<SessionRecord> {
    const parsed = sessionRecordSchema.safeParse(record);
    if (!parsed.success) throw new MamError(`${this.file(record.name)}: not written, the record would be invalid (${parsed.error.issues[0]?.message})`);
    await writeJsonAtomic(this.file(record.name), record);
    return record;
  }

  /**
   * Read, change, write under the lock. `change` returns the new record, or undefined to leave it as
   * it is (the result is then the record as read).
   */
  update(name: string, change: (record: SessionRecord) => SessionRecord | undefined | Promise<SessionRecord | undefined>): Promise<SessionRecord> {
    return this.withLock(name, async () => {
      const record = this.read(name);
      const next = await change(record);
      if (next === undefined) return record;
      return this.write({ ...next, updated_at: new Date().toISOString() });
    });
  }
}

/** A session event line, stamped now. */
export function sessionEvent(type: string, detail?: string | null): SessionRecord['last_event'] {
  return { type, at: new Date().toISOString(), ...(detail === undefined ? {} : { detail }) };
}
