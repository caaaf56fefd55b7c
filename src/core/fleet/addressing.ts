/**
 * Addressing (docs/registry.md, docs/coordination-reference.md): a job's optional `to` is an
 * agent's name (`reviewer-1`) or a capability (`capability:typescript`). Absent or null, the job is
 * for anyone.
 */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const CAPABILITY_PREFIX = 'capability:';

export type Address = { kind: 'agent'; name: string } | { kind: 'capability'; capability: string };

/** The address `text` names, or a one-line reason it names none. */
export function parseAddress(text: string): Address | string {
  const capability = text.startsWith(CAPABILITY_PREFIX) ? text.slice(CAPABILITY_PREFIX.length) : undefined;
  const value = capability ?? text;
  if (!NAME.test(value)) return `${JSON.stringify(text)}: expected NAME or capability:NAME (letters, digits, "_" or "-")`;
  return capability === undefined ? { kind: 'agent', name: value } : { kind: 'capability', capability: value };
}

/**
 * True when a job addressed `to` may go to `session` with `capabilities`: addressed to nobody, to
 * the session by name, or to one of its capabilities. An address this version cannot read matches
 * nobody: a job is never handed to an agent it was not meant for.
 */
export function isAddressedTo(to: string | null | undefined, session: string, capabilities: readonly string[]): boolean {
  if (to === undefined || to === null) return true;
  const address = parseAddress(to);
  if (typeof address === 'string') return false;
  return address.kind === 'agent' ? address.name === session : capabilities.includes(address.capability);
}

/** Addressed to this agent in particular (by name or capability), not merely open to anyone: what an inbox lists. */
export function isAddressedToAgent(to: string | null | undefined, name: string, capabilities: readonly string[]): boolean {
  return to !== undefined && to !== null && isAddressedTo(to, name, capabilities);
}
