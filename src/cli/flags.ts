import * as z from 'zod/mini';

/** Shared zod pieces for flags: commander hands us strings. */
export const jobIdFlag = z.string().check(z.regex(/^[0-9a-f]{8}$/, 'job id must be 8 lowercase hex characters'));

export const secondsFlag = z.pipe(z.pipe(z.string().check(z.regex(/^\d+(\.\d+)?$/, 'expected a positive number of seconds')), z.transform(Number)), z.number().check(z.positive('expected a positive number of seconds')));

export const countFlag = z.pipe(z.pipe(z.string().check(z.regex(/^\d+$/, 'expected a whole number')), z.transform(Number)), z.int().check(z.minimum(1, 'expected at least 1')));
