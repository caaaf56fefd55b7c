import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * `<registry>/agents/<name>.json`, written by `mam agent up`: this host's note of an agent's
 * declared capabilities, so that `mam inbox --agent N` knows them without a broker round trip.
 */
export function agentCardPath(registryDir: string, name: string): string {
  return path.join(registryDir, 'agents', `${name}.json`);
}

/** The capabilities `mam agent up` last declared for `name` on this registry; [] when it never ran here. */
export function readAgentCapabilities(registryDir: string, name: string): string[] {
  try {
    const card = JSON.parse(readFileSync(agentCardPath(registryDir, name), 'utf8')) as { capabilities?: unknown };
    return Array.isArray(card.capabilities) ? card.capabilities.filter((c): c is string => typeof c === 'string') : [];
  } catch {
    return [];
  }
}
