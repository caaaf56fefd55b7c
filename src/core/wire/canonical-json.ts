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
  return writeObject(value, sortKeys, depth);
}

/**
 * `canonicalJson(value)` with the member `key` of the object `value[parent]` left out, as if deleted
 * from a copy first: the message a signature covers (its own `data.hmac_sig` left out), without
 * copying the payload each time a message is verified.
 */
export function canonicalJsonWithout(value: Record<string, unknown>, parent: string, key: string): string {
  if (!isPlainObject(value)) return canonicalJson(value);
  return writeObject(value, true, 0, undefined, { parent, key });
}

/**
 * An object's members: one string built in place, not an array of members joined, since both
 * writers run on every message a monitor verifies and prints. Undefined members are left out, as
 * JSON.stringify does; both writers agree, so signatures hold. `skip` is a member left out of this
 * object, `omit` one left out of one member object (as in `canonicalJsonWithout`).
 */
function writeObject(value: Record<string, unknown>, sortKeys: boolean, depth: number, skip?: string, omit?: { parent: string; key: string }): string {
  const keys = Object.keys(value);
  if (sortKeys) sortByCodePoint(keys);
  let out = '{';
  for (const key of keys) {
    if (key === skip) continue;
    const member = value[key];
    if (member === undefined) continue;
    if (out.length > 1) out += ',';
    const text =
      omit !== undefined && key === omit.parent && isPlainObject(member)
        ? writeObject(member, sortKeys, depth + 1, omit.key)
        : write(member, sortKeys, depth + 1);
    out += `${quote(key)}:${text}`;
  }
  return `${out}}`;
}

const SURROGATE = /[\ud800-\udfff]/;
/** Small key lists (a payload has 7 to 9 keys, its data 3 or so) are sorted by insertion, in place. */
const INSERTION_SORT_MAX = 24;

/**
 * Sorts keys as `compareCodePoints` does. Without a surrogate in any key every code point is one
 * UTF-16 unit, so the code-point order is the engine's own `<` on strings; and the keys of an object
 * are distinct, so any correct sort by `<` yields that one order.
 */
function sortByCodePoint(keys: string[]): void {
  for (const key of keys) {
    if (SURROGATE.test(key)) {
      keys.sort(compareCodePoints);
      return;
    }
  }
  if (keys.length > INSERTION_SORT_MAX) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
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
// The same class, to test (no `g`, so no lastIndex to carry between calls).
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const HAS_ESCAPE = /["\\\u0000-\u001f\u007f-\uffff]/;

function quote(s: string): string {
  // Most strings (keys, ids, tokens, timestamps) need no escape: replace() would copy them unchanged.
  if (!HAS_ESCAPE.test(s)) return `"${s}"`;
  const body = s.replace(NEEDS_ESCAPE, (ch) => SHORT_ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `"${body}"`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A payload read by `parseWirePayload`. */
export interface WirePayload {
  /** What `parseWireJson` returns: numbers as `LosslessNumber` lexemes. */
  value: unknown;
  /**
   * The text itself when it is already its own compact form (`wireJson(value) === compactText`, as
   * every payload a MAM sender writes is), so that a receiver can print it without writing it again;
   * undefined otherwise (spaces, escapes, non-ASCII, keys the engine reorders, duplicate keys).
   */
  compactText: string | undefined;
}

/**
 * Reads a payload as receivers must: numbers stay `LosslessNumber` so their lexemes can be verified.
 * Throws only `WireParseError`. A duplicate key is refused (Python would keep the last value, other
 * parsers the first: a signature must not mean two things); duplicates with equal values are merged.
 */
export function parseWireJson(input: string | Uint8Array): unknown {
  return parseWirePayload(input).value;
}

/** `parseWireJson`, and whether the text is already its own compact form (see `WirePayload`). */
export function parseWirePayload(input: string | Uint8Array): WirePayload {
  let text: string;
  try {
    text = typeof input === 'string' ? input : utf8.decode(input);
  } catch {
    throw new WireParseError('not valid UTF-8');
  }
  const scan = scanText(text);
  const fast = scan.indexKeys ? undefined : parseNative(text, scan);
  if (fast) return { value: fast.value, compactText: scan.compact ? text : undefined };
  try {
    return { value: parse(text), compactText: undefined };
  } catch (err) {
    throw new WireParseError(err instanceof Error ? err.message : String(err));
  }
}

/** What one pass over a text found; only meaningful when the text is valid JSON. */
interface TextScan {
  /** `:` outside strings: every member of every object, duplicates included. */
  members: number;
  /** The number tokens, in text order. */
  numbers: string[];
  /** Some key starts with a digit: an array-index key (`"0"`) is enumerated first, wherever it stands. */
  indexKeys: boolean;
  /**
   * No whitespace outside strings; only printable ASCII and no backslash inside them. Read by the
   * JSON.parse path (no index key, no duplicate), such a text is what wireJson writes back: members
   * in text order, strings that need no escape, lexemes as they stand, nothing between tokens.
   */
  compact: boolean;
}

function scanText(text: string): TextScan {
  let depth = 0;
  let members = 0;
  const numbers: string[] = [];
  let indexKeys = false;
  let compact = true;
  let lastString = -1;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      lastString = i;
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x22) break;
        if (d === 0x5c) {
          compact = false;
          i++;
        } else if (d < 0x20 || d > 0x7e) {
          compact = false;
        }
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw new WireParseError(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (c === 0x3a) {
      members++;
      const first = lastString >= 0 ? text.charCodeAt(lastString + 1) : 0;
      if (first >= 0x30 && first <= 0x39) indexKeys = true;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      while (i + 1 < n && isNumberChar(text.charCodeAt(i + 1))) i++;
      numbers.push(text.slice(start, i + 1));
    } else if (c <= 0x20 || c > 0x7e) {
      compact = false;
    }
  }
  return { members, numbers, indexKeys, compact };
}

/** Digits, sign, point and exponent: what a JSON number token is made of (no bracket or quote). */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
}

/**
 * lossless-json's result, computed by the engine's own JSON.parse (several times faster) where that
 * is provably the same:
 * - JSON.parse and lossless-json accept the same grammar (strings, escapes, whitespace, literals,
 *   number tokens); a text JSON.parse refuses goes to lossless-json, which words the refusal;
 * - both build plain objects member by member in text order (an own `__proto__` key included);
 * - no key starts with a digit, so no array-index key is enumerated out of text order, and a walk
 *   of the result in key order meets the values in text order: the k-th number it meets is the
 *   k-th number token, which becomes that `LosslessNumber` (`1.0`, `-0`, `1e400` and big integers
 *   keep their lexemes: the double JSON.parse made of them is dropped);
 * - a duplicate key, which lossless-json refuses or merges, leaves fewer members than the text has:
 *   then lossless-json decides. The walk also checks it met as many numbers as there are tokens.
 * Undefined when any of this does not hold.
 */
function parseNative(text: string, scan: TextScan): { value: unknown } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { numbers } = scan;
  if (typeof value === 'number') return numbers.length === 1 ? { value: new LosslessNumber(numbers[0]!) } : undefined;
  if (typeof value !== 'object' || value === null) return scan.members === 0 && numbers.length === 0 ? { value } : undefined;
  const walk = { numbers, next: 0, members: 0 };
  losslessNumbers(value as Record<string, unknown>, walk);
  return walk.members === scan.members && walk.next === numbers.length ? { value } : undefined;
}

/** Replaces every number under `container` by the next lexeme of `walk`, in place, counting object members. */
function losslessNumbers(container: Record<string, unknown> | unknown[], walk: { numbers: string[]; next: number; members: number }): void {
  if (Array.isArray(container)) {
    for (let i = 0; i < container.length; i++) {
      const item: unknown = container[i];
      if (typeof item === 'number') container[i] = lexeme(walk);
      else if (typeof item === 'object' && item !== null) losslessNumbers(item as Record<string, unknown>, walk);
    }
    return;
  }
  for (const key of Object.keys(container)) {
    walk.members++;
    const member = container[key];
    // An own "__proto__" member is a data property: assigning it sets its value, not the prototype.
    if (typeof member === 'number') container[key] = lexeme(walk);
    else if (typeof member === 'object' && member !== null) losslessNumbers(member as Record<string, unknown>, walk);
  }
}

function lexeme(walk: { numbers: string[]; next: number }): LosslessNumber {
  // Past the last token (which valid JSON cannot do) the count check in parseNative refuses the result.
  const token = walk.numbers[walk.next++];
  return new LosslessNumber(token ?? '0');
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
