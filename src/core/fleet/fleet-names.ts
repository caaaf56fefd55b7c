import * as z from 'zod/mini';
import '../zod-messages.ts';
import type { MamConfig } from '../config/config.ts';
import { ConfigError } from '../errors.ts';

/**
 * The fleet's words (docs/coordination.md; turn ids: docs/coordination-reference.md): agent names,
 * capabilities, turn ids, where their topics live and the secret that signs them. Names and turn
 * ids become topic levels and file names, so they are held to letters, digits, `_` and `-`: NATS
 * refuses `.` and spaces, MQTT gives `+`, `#` and `/` meanings, and a file name must not climb out
 * of its folder.
 */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TURN = /^[A-Za-z0-9_-]{1,200}$/;

export const agentNameSchema = z.string().check(z.regex(NAME, 'expected 1-64 letters, digits, "_" or "-"'));
export const capabilitySchema = z.string().check(z.regex(NAME, 'expected 1-64 letters, digits, "_" or "-"'));
export const turnIdSchema = z.string().check(z.regex(TURN, 'expected 1-200 letters, digits, "_" or "-" (see docs/coordination-reference.md#the-turn-id)'));

export function isAgentName(value: string): boolean {
  return NAME.test(value);
}

export function isTurnId(value: string): boolean {
  return TURN.test(value);
}

/**
 * `<channel>-<message>-<epoch>` from a chat message: every character a topic level cannot carry
 * becomes `_`, so two assistants that see the same message derive the same id without talking.
 */
export function turnIdOf(channel: string, message: string, epoch: number | string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9_]/g, '_');
  return `${clean(channel)}-${clean(message)}-${clean(String(epoch))}`.slice(0, 200);
}

/**
 * `MAM_AGENTS_ROOT`, else the topic root's sibling `agents` (`python/mqtt/jobs` → `python/mqtt/agents`):
 * outside the jobs' tree, so a monitor's `<root>/+/+` never sees presence or bids. A one-level root
 * (`jobs`) gets `jobs-agents`, never a root of its own that another deployment may share.
 */
export function agentsRoot(config: Pick<MamConfig, 'topicRoot' | 'agentsRoot'>): string {
  if (config.agentsRoot !== undefined) return config.agentsRoot;
  const cut = config.topicRoot.lastIndexOf('/');
  if (cut < 0) return `${config.topicRoot}-agents`;
  const sibling = `${config.topicRoot.slice(0, cut)}/agents`;
  return sibling === config.topicRoot ? `${config.topicRoot}-fleet` : sibling;
}

/** Presence and bids are worthless unsigned: without the secret a fleet command refuses to run (exit 1). */
export function requireFleetSecret(config: Pick<MamConfig, 'fleetSecret'>): string {
  if (config.fleetSecret === undefined)
    throw new ConfigError('MAM_FLEET_SECRET is not set: fleet presence and turn bids are signed with it (docs/coordination.md)');
  return config.fleetSecret;
}

/** `<agents root>/<name>`: one retained presence message per agent. */
export function presenceTopic(root: string, name: string): string {
  return `${root}/${name}`;
}

export function allPresenceFilter(root: string): string {
  return `${root}/+`;
}

/** `<agents root>/turns/<turn id>/<agent>`: one retained bid per claimant, so none overwrites another. */
export function bidTopic(root: string, turnId: string, agent: string): string {
  return `${root}/turns/${turnId}/${agent}`;
}

export function turnFilter(root: string, turnId: string): string {
  return `${root}/turns/${turnId}/+`;
}

/** The last level of a topic under `prefix/`, or undefined when the topic is not one level below it. */
export function levelBelow(prefix: string, topic: string): string | undefined {
  if (!topic.startsWith(`${prefix}/`)) return undefined;
  const rest = topic.slice(prefix.length + 1);
  return rest.length > 0 && !rest.includes('/') ? rest : undefined;
}

/** `a,b,,c ` → `['a','b','c']`, deduplicated, each checked. */
export function parseCapabilities(text: string | undefined): string[] | string {
  if (text === undefined) return [];
  const caps = [
    ...new Set(
      text
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    ),
  ];
  const bad = caps.find((c) => !NAME.test(c));
  return bad === undefined ? caps : `${JSON.stringify(bad)}: expected letters, digits, "_" or "-"`;
}
