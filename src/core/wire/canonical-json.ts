import { isLosslessNumber, LosslessNumber, parse } from 'lossless-json';
import { WireEncodeError, WireParseError } from './wire-errors.ts';

/**
 * The wire's JSON, byte for byte what the Python toolkit writes and signs (contract §3):
 * - `canonicalJson`: the HMAC message, `json.dumps(obj, sort_keys=True, separators=(",", ":"))`;
 * - `wireJson`: the compact text we send, the same without sorting;
 * - `parseWireJson`: what receivers read, numbers kept as `LosslessNumber` lexemes;
 * - `pythonNumber` / `normalizeForSigning`: numbers spelled as Python spells them.
 *
 * Number rule of both writers: a `LosslessNumber` is written exactly as its lexeme stands (a Python
 * sender's `1.0` must stay `1.0` or its signature breaks); a JS number or bigint is written in
 * Python's spelling. Senders normalize first, so the lexemes they send are Python's too.
 */

/**
 * Bounds recursion in our writers and in lossless-json's parser. Python's own decoder gives up near
 * 1000; no payload of ours nests past a handful of levels.
 */
export const MAX_JSON_DEPTH = 256;

/**
 * Python 3.11+ refuses to turn a longer int into text or back (`sys.int_info.default_max_str_digits`):
 * a Python receiver could not even parse it, so we never write one.
 */
export const PYTHON_MAX_INT_DIGITS = 4300;

const NUMBER_LEXEME = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const INTEGER_LEXEME = /^-?\d+$/;

/**
 * How Python's `json.dumps` spells a number, so that what we sign is what a Python verifier rebuilds
 * after `json.loads`:
 * - an integer lexeme (no `.`, `e`, `E`) or a bigint is a Python int, any size (`-0` → `0`);
 * - any other lexeme is a Python float: `repr(float)`, the shortest digits that round-trip, in exponent
 *   form when the decimal exponent is below -4 or at least 16 (`1e-05`, `1e+16`), else positional with
 *   at least `.0` (`1.0`, `0.0001`, `-0.0`);
 * - a JS number is an int when it is a safe integer (so `seq: 3` stays `3`, and `-0` becomes `0`),
 *   else a float (`0.5`, `1e+300`): JS cannot tell `1` from `1.0`, and counters are what we send.
 * Infinity and NaN have no JSON spelling (Python would write the non-JSON `Infinity`): refused.
 */
export function pythonNumber(value: string | number | bigint | LosslessNumber): string {
  if (typeof value === 'bigint') return pythonInt(value.toString());
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new WireEncodeError(`${value} has no JSON spelling`);
    return Number.isSafeInteger(value) ? String(value) : pythonFloat(value);
  }
  const lexeme = isLosslessNumber(value) ? value.value : value;
  if (!NUMBER_LEXEME.test(lexeme)) throw new WireEncodeError(`"${lexeme}" is not a JSON number`);
  if (INTEGER_LEXEME.test(lexeme)) return pythonInt(lexeme);
  const float = Number(lexeme);
  if (!Number.isFinite(float)) throw new WireEncodeError(`${lexeme} overflows a double (Python reads it as inf)`);
  return pythonFloat(float);
}

function pythonInt(lexeme: string): string {
  const digits = lexeme.startsWith('-') ? lexeme.length - 1 : lexeme.length;
  if (digits > PYTHON_MAX_INT_DIGITS) {
    throw new WireEncodeError(`an integer of ${digits} digits is over Python's limit of ${PYTHON_MAX_INT_DIGITS}`);
  }
  return BigInt(lexeme).toString();
}

/** `repr(float)`: JS `toExponential()` already yields the shortest round-trip digits; only the layout differs. */
function pythonFloat(x: number): string {
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const [mantissa = '', exp = ''] = Math.abs(x).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const e = Number(exp);
  if (e < -4 || e >= 16) {
    return `${sign}${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
  return `${sign}${whole}.${digits.slice(e + 1) || '0'}`;
}

/** The HMAC message: keys sorted by code point at every depth, no spaces, ASCII only. */
export function canonicalJson(value: unknown): string {
  return write(value, true, 0);
}

/** The compact text we send: like `canonicalJson`, but keys stay in insertion order. */
export function wireJson(value: unknown): string {
  return write(value, false, 0);
}

function write(value: unknown, sortKeys: boolean, depth: number): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return quote(value);
    case 'number':
    case 'bigint':
      return pythonNumber(value);
    case 'object':
      break;
    default:
      throw new WireEncodeError(`a ${typeof value} has no JSON spelling`);
  }
  // The lexeme is valid JSON: LosslessNumber's constructor checks it.
  if (isLosslessNumber(value)) return value.value;
  if (depth >= MAX_JSON_DEPTH) throw new WireEncodeError(`nested deeper than ${MAX_JSON_DEPTH} levels (or circular)`);
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) => {
      if (item === undefined) throw new WireEncodeError('undefined in an array');
      return write(item, sortKeys, depth + 1);
    });
    return `[${items.join(',')}]`;
  }
  if (!isPlainObject(value)) throw new WireEncodeError(`a ${value.constructor?.name ?? 'exotic'} object has no JSON spelling`);
  // Undefined members are left out, as JSON.stringify does; both writers agree, so signatures hold.
  const keys = Object.keys(value).filter((key) => value[key] !== undefined);
  if (sortKeys) keys.sort(compareCodePoints);
  const members = keys.map((key) => `${quote(key)}:${write(value[key], sortKeys, depth + 1)}`);
  return `{${members.join(',')}}`;
}

/**
 * Python sorts str keys by code point; JS's default sort compares UTF-16 units, which puts an astral
 * key (a surrogate pair, 0xD800…) before U+E000–U+FFFF. Lone surrogates count as their own code point.
 */
export function compareCodePoints(a: string, b: string): number {
  for (let i = 0; i < a.length && i < b.length; ) {
    const ca = a.codePointAt(i) ?? 0;
    const cb = b.codePointAt(i) ?? 0;
    if (ca !== cb) return ca - cb;
    i += ca > 0xffff ? 2 : 1;
  }
  return a.length - b.length;
}

// Python's ensure_ascii escaper: `"` and `\`, the five short control escapes, and every other char
// outside space..tilde as \uXXXX of its UTF-16 units (so astral chars come out as surrogate pairs).
const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what must be escaped.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u007f-\uffff]/g;

function quote(s: string): string {
  const body = s.replace(NEEDS_ESCAPE, (ch) => SHORT_ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `"${body}"`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads a payload as receivers must: numbers stay `LosslessNumber` so their lexemes can be verified.
 * Throws only `WireParseError`. A duplicate key is refused (Python would keep the last value, other
 * parsers the first: a signature must not mean two things); duplicates with equal values are merged.
 */
export function parseWireJson(input: string | Uint8Array): unknown {
  let text: string;
  try {
    text = typeof input === 'string' ? input : utf8.decode(input);
  } catch {
    throw new WireParseError('not valid UTF-8');
  }
  assertDepth(text);
  try {
    return parse(text);
  } catch (err) {
    throw new WireParseError(err instanceof Error ? err.message : String(err));
  }
}

/** lossless-json recurses per level; a 256 KiB `[[[[…` would overflow the stack before it failed. */
function assertDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw new WireParseError(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
}

/**
 * A deep copy in which every number is a `LosslessNumber` holding Python's spelling, so that the
 * text we sign and the text we send agree, and a Python verifier rebuilds both. With
 * `keepJsNumbers`, plain JS numbers stay numbers (both writers spell them Python's way already), so
 * typed fields such as `seq` keep their type.
 */
export function normalizeForSigning(value: unknown, options: { keepJsNumbers?: boolean } = {}): unknown {
  return normalize(value, options.keepJsNumbers ?? false, 0);
}

function normalize(value: unknown, keepJsNumbers: boolean, depth: number): unknown {
  if (typeof value === 'number' && keepJsNumbers) {
    pythonNumber(value); // refuse NaN and Infinity here too
    return value;
  }
  if (typeof value === 'number' || typeof value === 'bigint' || isLosslessNumber(value)) {
    return new LosslessNumber(pythonNumber(value));
  }
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_JSON_DEPTH) throw new WireEncodeError(`nested deeper than ${MAX_JSON_DEPTH} levels (or circular)`);
  if (Array.isArray(value)) return value.map((item: unknown) => normalize(item, keepJsNumbers, depth + 1));
  if (!isPlainObject(value)) return value; // the writers refuse it with a clear message
  const copy: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    // defineProperty, not assignment: a "__proto__" key from the wire must stay a key.
    Object.defineProperty(copy, key, { value: normalize(member, keepJsNumbers, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}
