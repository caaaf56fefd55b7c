import * as z from 'zod/mini';

/**
 * Numbers and switches written as text — environment variables, `.mam.env` lines and flags alike —
 * as zod schemas, so every command reads `30`, `0.5` or `yes` the same way.
 */

const TRUE_WORDS = ['1', 'true', 'yes', 'on'];
const SWITCH_WORDS = ['', '0', 'false', 'no', 'off', ...TRUE_WORDS];

/** `MAM_DEBUG=1` and its kin, read without zod where the configuration may not load (runMain, the timer). */
export function isTrueText(value: string | undefined): boolean {
  return TRUE_WORDS.includes((value ?? '').trim().toLowerCase());
}

/** `1/true/yes/on` or `0/false/no/off` (empty: false). */
export const switchText = z.pipe(
  z
    .string()
    .check(z.trim())
    .check(z.toLowerCase())
    .check(z.refine((s) => SWITCH_WORDS.includes(s), 'expected true or false')),
  z.transform((s) => TRUE_WORDS.includes(s)),
);

/** A whole number in [min, max]; `message` says what was expected when it is not one. */
export function wholeNumberText(min: number, max: number = Number.MAX_SAFE_INTEGER, message?: string) {
  const expected = message ?? `expected a whole number ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}`;
  return z.pipe(
    z.pipe(z.string().check(z.trim()).check(z.regex(/^\d+$/, expected)), z.transform(Number)),
    z.int().check(z.minimum(min, expected)).check(z.maximum(max, expected)),
  );
}

/** Seconds, fractions allowed; `allowZero` for limits where 0 turns a clock off (as `timeout 0` does). */
export function secondsText(options: { allowZero?: boolean } = {}) {
  const what = options.allowZero ? 'expected a number of seconds (0: off)' : 'expected a positive number of seconds';
  return z.pipe(
    z.pipe(
      z
        .string()
        .check(z.trim())
        .check(z.regex(/^\d+(\.\d+)?$/, what)),
      z.transform(Number),
    ),
    options.allowZero ? z.number() : z.number().check(z.positive(what)),
  );
}
