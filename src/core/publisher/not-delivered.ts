import { MamError } from '../errors.ts';
import type { PublishResult } from './publisher.ts';

/** The event is on disk (its seq taken, its audit line written), but the broker did not acknowledge it. */
export class NotDelivered extends MamError {
  /** Not enumerable: `result.record` holds the job's auth_token, and an inspected or logged error must not show it. */
  declare readonly result: PublishResult;

  constructor(result: PublishResult, cause: Error) {
    super(`job ${result.record.job_id} seq ${result.seq}: recorded on disk but not delivered (${cause.message})`, { cause });
    Object.defineProperty(this, 'result', { value: result, enumerable: false });
  }
}
