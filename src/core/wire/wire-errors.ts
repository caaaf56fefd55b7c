import { MamError } from '../errors.ts';

/**
 * Bytes from the broker that are not a JSON document we can read (bad UTF-8, bad syntax, a duplicate
 * key, nesting too deep). Receivers catch it, audit `rejected`, and go on: input never crashes them.
 */
export class WireParseError extends MamError {
  constructor(readonly reason: string) {
    super(`unreadable payload: ${reason}`);
  }
}

/**
 * A value that has no spelling on the wire (NaN, Infinity, undefined in an array, a Date, a cycle, an
 * int too long for Python). Thrown before anything is signed, so nothing half-signed is ever sent.
 */
export class WireEncodeError extends MamError {
  constructor(readonly reason: string) {
    super(`cannot encode payload: ${reason}`);
  }
}
