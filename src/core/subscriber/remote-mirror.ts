import { TransitionRefused } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Registry } from '../registry/registry.ts';
import { type LifecycleEvent, isTerminalEvent } from '../vocabulary.ts';

/**
 * `--remote` (contract §4): the agent's host keeps its own registry; ours learns `started` and the
 * outcome from verified events, copied in by CAS. The writes run in the background and are awaited
 * before the process ends, or the outcome would be lost.
 */
export class RemoteMirror {
  private readonly writes = new Set<Promise<unknown>>();

  constructor(
    private readonly registry: Registry,
    private readonly log: Logger,
  ) {}

  mirror(jobId: string, event: LifecycleEvent, seq: number, payload: unknown): void {
    if (event !== 'started' && !isTerminalEvent(event)) return;
    const data = (payload as { data?: { dispatch_token?: string; attempt_id?: unknown } }).data;
    const attemptId = typeof data?.attempt_id === 'object' || typeof data?.attempt_id === 'number' ? Number(String(data.attempt_id)) : undefined;
    const write = this.registry
      .update(jobId, { kind: 'mirror', event, seq, dispatchToken: data?.dispatch_token, attemptId }, 'remote')
      .catch((err: unknown) => {
        // Refused: the record is already terminal or on a newer attempt; nothing to copy.
        if (!(err instanceof TransitionRefused)) this.log.warn({ err: (err as Error).message, job: jobId }, 'mirror failed');
      })
      .finally(() => this.writes.delete(write));
    this.writes.add(write);
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.writes]);
  }
}
