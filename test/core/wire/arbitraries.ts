import fc from 'fast-check';

/** Full-range Unicode (astral included): the strings that break naive escaping and key sorting. */
export const unicodeString = fc.string({ unit: 'binary', maxLength: 12 });

/** Keys that tell code-point order from UTF-16 order, besides random ones. */
const key = fc.oneof(unicodeString, fc.constantFrom('\ue000', '\u{1f600}', 'a', 'B', '_', 'aa', '10', '__proto__'));

/** Numbers as a Python sender or our own --data produce them: ints of any size and finite doubles. */
export const number = fc.oneof(
  fc.integer(),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1e-7, 1e16, 1e22, 5e-324, -0, 0.1, 100000, 1.5e300),
);

const { json } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    unicodeString,
    number,
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(key, tie('json'), { maxKeys: 4, noNullPrototype: true }),
  ),
}));

/** A JSON value (numbers may be bigints). */
export const jsonValue = json;

/** The caller's `--data`: an object, reserved keys left out. */
export const userData = fc
  .dictionary(key, json, { maxKeys: 6, noNullPrototype: true })
  .map((data) => Object.fromEntries(Object.entries(data).filter(([k]) => !RESERVED.includes(k))));

const RESERVED = ['hmac_sig', 'dispatch_token', 'attempt_id'];

export const eventArgs = fc.record({
  jobId: fc.stringMatching(/^[0-9a-f]{8}$/),
  seq: fc.integer({ min: 1, max: 1_000_000 }),
  event: fc.constantFrom('started', 'progress', 'permission_required', 'completed', 'error') as fc.Arbitrary<
    'started' | 'progress' | 'permission_required' | 'completed' | 'error'
  >,
  detail: unicodeString,
  data: userData,
  dispatchToken: fc.stringMatching(/^[0-9a-f]{32}$/),
  attemptId: fc.integer({ min: 1, max: 50 }),
  now: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }),
});

export const token = fc.string({ unit: 'binary', minLength: 1, maxLength: 48 });
