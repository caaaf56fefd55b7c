import path from 'node:path';
import { UsageError } from '../errors.ts';
import { isJobId } from '../vocabulary.ts';

/** Job ids become file names, so they are checked before any path is built from them. */
export function assertJobId(jobId: string): string {
  if (!isJobId(jobId)) throw new UsageError(`job id must be 8 lowercase hex characters, got ${JSON.stringify(jobId)}`);
  return jobId;
}

/** Every file the registry owns (contract §2), in one place. */
export class RegistryPaths {
  constructor(
    readonly registryDir: string,
    readonly logDir: string,
  ) {}

  get lock(): string {
    return path.join(this.registryDir, '.lock');
  }

  /** The pick index (see pick-index.ts); a cache of the records, rebuilt when missing or stale. */
  get pickIndex(): string {
    return path.join(this.registryDir, '.pick-index.json');
  }

  record(jobId: string): string {
    return path.join(this.registryDir, `${assertJobId(jobId)}.json`);
  }

  heartbeat(jobId: string, what: 'pid' | 'lock' | 'barrier'): string {
    return path.join(this.registryDir, `${assertJobId(jobId)}.heartbeat.${what}`);
  }

  jobLogDir(jobId: string): string {
    return path.join(this.logDir, assertJobId(jobId));
  }

  meta(jobId: string): string {
    return path.join(this.jobLogDir(jobId), 'meta.json');
  }

  status(jobId: string): string {
    return path.join(this.jobLogDir(jobId), 'status.json');
  }

  events(jobId: string): string {
    return path.join(this.jobLogDir(jobId), 'events.ndjson');
  }

  /** What the job's watcher (`mam delegate`) printed, as JSON lines: `mam show --events` reads it back. */
  subscriberOut(jobId: string): string {
    return path.join(this.jobLogDir(jobId), 'subscriber.out');
  }
}

/** Record file names in the registry folder: `<job id>.json`, nothing else. */
export function jobIdOfRecordFile(name: string): string | undefined {
  const id = name.endsWith('.json') ? name.slice(0, -'.json'.length) : '';
  return isJobId(id) ? id : undefined;
}
