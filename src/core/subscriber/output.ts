import { isPlainObject, wireJson } from '../wire/canonical-json.ts';

/**
 * One compact JSON line per accepted event (contract §4), numbers as they stood on the wire.
 * `wireText`, when given, is `wireJson(payload)` already (the wire carried the payload in that form,
 * see `WirePayload.compactText`): the line is that text, not a second serialization.
 */
export function jsonLine(payload: unknown, wireText?: string): string {
  return `${wireText ?? wireJson(payload)}\n`;
}

/** `--pretty`: a line for people. */
export function prettyLine(payload: unknown): string {
  if (!isPlainObject(payload)) return `${String(payload)}\n`;
  const str = (v: unknown) => (v === undefined || v === null ? '' : String(v));
  const event = str(payload.event);
  const what = event === 'state' ? `state ${str(payload.status)} (${str(payload.last_event)})` : event;
  return `${str(payload.timestamp)}  ${str(payload.job_id)}  #${str(payload.seq)}  ${what.padEnd(19)}  ${str(payload.detail)}\n`;
}
