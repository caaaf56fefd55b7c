import { z } from 'zod';

/** Shared zod pieces for flags: commander hands us strings. */
export const jobIdFlag = z.string().regex(/^[0-9a-f]{8}$/, 'job id must be 8 lowercase hex characters');

export const secondsFlag = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'expected a positive number of seconds')
  .transform(Number)
  .pipe(z.number().positive('expected a positive number of seconds'));

export const countFlag = z
  .string()
  .regex(/^\d+$/, 'expected a whole number')
  .transform(Number)
  .pipe(z.number().int().min(1, 'expected at least 1'));
