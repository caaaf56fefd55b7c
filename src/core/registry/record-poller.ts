import { type FSWatcher, statSync, watch } from 'node:fs';
import { CorruptRecord, NoSuchJob } from '../errors.ts';
import type { JobRecord } from './job-record.ts';
import type { Registry } from './registry.ts';
import { listRecordIds } from './record-store.ts';

export interface RecordPollerEvents {
  changed(record: JobRecord): void;
  removed(jobId: string): void;
  /** A record that does not parse or validate: named, skipped, never fatal (contract §2). */
  corrupt(jobId: string, err: CorruptRecord): void;
}

/** How often the folder is looked at when no change notice came (another filesystem, a missed notice). */
export const POLL_INTERVAL_MS = 2_000;
/** Notices of a burst of writes (temp file, rename, lock) are taken together: at most a poll per 150 ms. */
const NOTICE_DEBOUNCE_MS = 150;

interface Seen {
  mtimeMs: number;
  size: number;
}

/**
 * Keeps a reader (the dashboard's board, the monitor's alerts) in step with records that other
 * processes write. A poll lists the folder and
 * stats each record; only files whose mtime or size changed are read and parsed, so a thousand
 * idle jobs cost a thousand stats, not a thousand parses. A change notice from the folder
 * (inotify) polls at once, so a pick or a close shows up within a moment; the timer covers the rest.
 */
export class RecordPoller {
  readonly #seen = new Map<string, Seen>();
  #timer: NodeJS.Timeout | undefined;
  #debounce: NodeJS.Timeout | undefined;
  #watcher: FSWatcher | undefined;
  #closed = false;

  constructor(
    private readonly registry: Registry,
    private readonly events: RecordPollerEvents,
    private readonly intervalMs: number = POLL_INTERVAL_MS,
  ) {}

  start(): void {
    this.poll();
    this.#timer = setInterval(() => this.poll(), this.intervalMs);
    this.#timer.unref();
  }

  poll(): void {
    if (this.#closed) return;
    this.#watchFolder();
    const ids = new Set(listRecordIds(this.registry.paths.registryDir));
    for (const id of this.#seen.keys()) {
      if (!ids.has(id)) {
        this.#seen.delete(id);
        this.events.removed(id);
      }
    }
    for (const id of ids) this.#check(id);
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    clearTimeout(this.#debounce);
    this.#watcher?.close();
  }

  #check(id: string): void {
    let stat: { mtimeMs: number; size: number };
    try {
      stat = statSync(this.registry.paths.record(id));
    } catch {
      return; // removed between the listing and the stat: the next poll says so
    }
    const seen = this.#seen.get(id);
    if (seen && seen.mtimeMs === stat.mtimeMs && seen.size === stat.size) return;
    this.#seen.set(id, { mtimeMs: stat.mtimeMs, size: stat.size });
    try {
      this.events.changed(this.registry.read(id));
    } catch (err) {
      if (err instanceof CorruptRecord) this.events.corrupt(id, err);
      else if (!(err instanceof NoSuchJob)) throw err;
    }
  }

  #watchFolder(): void {
    if (this.#watcher) return;
    try {
      this.#watcher = watch(this.registry.paths.registryDir, { persistent: false }, () => this.#notice());
      this.#watcher.on('error', () => {
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch {
      // No folder yet (no job registered): the timer polls until there is one.
    }
  }

  #notice(): void {
    if (this.#debounce || this.#closed) return;
    this.#debounce = setTimeout(() => {
      this.#debounce = undefined;
      this.poll();
    }, NOTICE_DEBOUNCE_MS);
  }
}
