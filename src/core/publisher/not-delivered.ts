import { MamError } from '../errors.ts';
import type { PublishResult } from './publisher.ts';

/** The event is on disk (its seq taken, its audit line written), but the broker did not acknowledge it. */
export class NotDelivered extends MamError {
  constructor(
    readonly result: PublishResult,
    cause: Error,
  ) {
    super(`job ${result.record.job_id} seq ${result.seq}: recorded on disk but not delivered (${cause.message})`, { cause });
  }
}
