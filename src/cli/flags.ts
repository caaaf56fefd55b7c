import * as z from 'zod/mini';
import '../core/zod-messages.ts';
import { secondsText, wholeNumberText } from '../core/config/text-values.ts';
import { dispatchTokenSchema, jobIdSchema } from '../core/vocabulary.ts';

/** Zod pieces for flags (commander hands us strings), built on the same text readers as the configuration. */
export const jobIdFlag = jobIdSchema;
export const dispatchTokenFlag = dispatchTokenSchema;
export const secondsFlag = secondsText();
/** A limit where 0 turns a clock off, as `timeout 0` would. */
export const limitFlag = secondsText({ allowZero: true });
export const countFlag = wholeNumberText(1);
export const portFlag = wholeNumberText(0, 65535, 'expected a port number up to 65535');
export const nonEmptyFlag = z.string().check(z.trim()).check(z.minLength(1, 'expected a value'));
