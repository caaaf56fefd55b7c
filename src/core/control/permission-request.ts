import path from 'node:path';
import type { MamConfig } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { BrokerError } from '../mqtt/broker-errors.ts';
import { NotDelivered } from '../publisher/not-delivered.ts';
import { detailSecrets, publishEvent } from '../publisher/publisher.ts';
import type { Registry } from '../registry/registry.ts';
import { type ScrubOptions, scrubDetail } from '../wire/scrub.ts';
import { type Decision, DecisionWaiter } from './decision-waiter.ts';

export type { Decision, DecisionBy } from './decision-waiter.ts';
export { DecisionWaiter } from './decision-waiter.ts';

/** The summary of a tool's input carried in `data.permission.summary`: one line an operator reads before answering. */
export const MAX_SUMMARY_CHARS = 200;
/** Tool names are short (`Bash`, `mcp__server__tool`); anything longer is cut, not trusted. */
const MAX_TOOL_CHARS = 100;

export interface PermissionAsk {
  jobId: string;
  /** The tool the agent wants to run (Claude's `tool_name`). */
  tool: string;
  /** Its input as the agent gave it; only a scrubbed summary leaves this process. */
  input: Record<string, unknown>;
  /** How long to wait for an answer; 0 waits for ever. A request nobody answers is denied. */
  timeoutMs: number;
  /** Claude's `tool_use_id`, carried in the event so an operator can match it with the transcript. */
  toolUseId?: string | undefined;
  /** Attempt fencing of the request (as `mam-publish --expect-dispatch-token / --attempt-id`). */
  expectDispatchToken?: string | undefined;
  expectAttemptId?: number | undefined;
  /** Delivery tries of the `permission_required` event (default 3, as mam-publish). */
  attempts?: number | undefined;
  /** Aborted when the agent withdraws the request (an MCP cancellation): the wait ends with WaitWithdrawn. */
  signal?: AbortSignal | undefined;
  log?: Logger | undefined;
}

/** The input fields that say what a well-known tool is about to do, by Claude Code's tool names. */
const SUMMARY_FIELDS: Record<string, string[]> = {
  Bash: ['command'],
  Edit: ['file_path'],
  MultiEdit: ['file_path'],
  Write: ['file_path'],
  Read: ['file_path'],
  NotebookEdit: ['notebook_path'],
  WebFetch: ['url'],
  WebSearch: ['query'],
  Glob: ['pattern', 'path'],
  Grep: ['pattern', 'path'],
  Task: ['description'],
};
const PATH_FIELDS = new Set(['file_path', 'notebook_path', 'path']);

/**
 * What the tool is about to do, in at most `MAX_SUMMARY_CHARS` characters of one line: the command
 * for Bash, the file (relative to the workspace, else `<path>`) for edits, the compact JSON of the
 * input for any other tool. Scrubbed like a detail (contract §3) — the summary goes to a shared
 * broker — and cut after scrubbing, so that no secret is cut where the scrubber cannot see it.
 */
export function summarizeToolInput(tool: string, input: Record<string, unknown>, scrub: ScrubOptions): string {
  const fields = SUMMARY_FIELDS[tool]?.filter((f) => typeof input[f] === 'string' && input[f] !== '');
  let text: string;
  if (fields && fields.length > 0) {
    text = fields.map((f) => (PATH_FIELDS.has(f) ? workspaceRelative(input[f] as string, scrub.workspaceRoot) : (input[f] as string))).join(' ');
  } else {
    try {
      text = JSON.stringify(input) ?? '';
    } catch {
      text = '(input not serialisable)';
    }
  }
  return oneLine(scrubDetail(text, scrub), MAX_SUMMARY_CHARS);
}

/** A path inside the workspace, as the operator knows it (`src/a.ts`); any other absolute path is left for the scrubber. */
function workspaceRelative(file: string, root: string | undefined): string {
  if (root === undefined || !path.isAbsolute(file)) return file;
  const rel = path.relative(root, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

/** Control characters and newlines become spaces; cut by code points, with an ellipsis when cut. */
function oneLine(text: string, max: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what a one-line summary must not hold.
  const chars = Array.from(text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim());
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

/** `Permission needed: <tool>`: the event's detail (the publisher scrubs it again, like any detail). */
export function permissionDetail(tool: string): string {
  return `Permission needed: ${tool}`;
}

/**
 * Publishes one `permission_required` event on a waiter that is already subscribed, then waits for
 * its answer. The waiter is held while the event is published, so that an answer arriving before its
 * seq is known is kept, not refused. An event recorded but not delivered is denied at once: nobody
 * saw the request.
 */
export async function requestPermission(config: MamConfig, registry: Registry, waiter: DecisionWaiter, ask: PermissionAsk): Promise<Decision> {
  const record = registry.read(ask.jobId);
  const scrub = { workspaceRoot: config.root, secrets: detailSecrets(config, record) };
  // Scrubbed, then cut: a cut first could leave half a secret the scrubber no longer recognises.
  const tool = oneLine(scrubDetail(ask.tool, scrub), MAX_TOOL_CHARS);
  // `awaits_decision` tells `mam approve` that someone waits on this request's answer; a
  // permission_required published by other means (a hook, `mam publish`) only informs.
  const permission: Record<string, unknown> = { tool, summary: summarizeToolInput(ask.tool, ask.input, scrub), awaits_decision: true };
  if (ask.toolUseId !== undefined) permission.tool_use_id = oneLine(scrubDetail(ask.toolUseId, scrub), MAX_TOOL_CHARS);
  const release = waiter.hold();
  let answer: Promise<Decision>;
  try {
    const published = await publishEvent(config, registry, {
      jobId: ask.jobId,
      event: 'permission_required',
      detail: permissionDetail(tool),
      data: { permission },
      attempts: ask.attempts ?? 3,
      expectDispatchToken: ask.expectDispatchToken,
      expectAttemptId: ask.expectAttemptId,
      source: 'agent',
    });
    answer = waiter.wait({ attemptId: published.record.attempt_id, seq: published.seq }, ask.timeoutMs, ask.signal);
  } catch (err) {
    if (!(err instanceof NotDelivered)) throw err;
    const reason = `permission request not delivered (${err.cause instanceof Error ? err.cause.message : 'broker unreachable'}): denied, MAM fails closed`;
    registry.audit.append(ask.jobId, { type: 'decision_defaulted', request_seq: err.result.seq, decision: 'deny', by: 'broker_unreachable', reason });
    return { decision: 'deny', reason, by: 'broker_unreachable' };
  } finally {
    release();
  }
  return answer;
}

/**
 * Asks the operator whether `ask.tool` may run, over the broker: subscribe the job's control topic,
 * publish `permission_required` (tool name and a scrubbed summary of its input), wait for a signed
 * decision (docs/permissions.md). Never allows by default: a timeout or a broker that cannot be
 * reached is a deny. A refusal of the event itself (a terminal job, a stale attempt) is thrown.
 * `waiterSource` shares one waiter between requests (the MCP server); without it one is opened and
 * closed for this request (a hook process).
 */
export async function askPermission(
  config: MamConfig,
  registry: Registry,
  ask: PermissionAsk,
  waiterSource?: () => Promise<DecisionWaiter>,
): Promise<Decision> {
  let waiter: DecisionWaiter;
  try {
    waiter = waiterSource ? await waiterSource() : await DecisionWaiter.open(config, registry, ask.jobId, { log: ask.log });
  } catch (err) {
    if (!(err instanceof BrokerError)) throw err;
    const reason = `cannot listen for a decision (${err.message}): denied, MAM fails closed`;
    // No request was published, so there is no request_seq: the line says why the agent was refused.
    registry.audit.append(ask.jobId, { type: 'decision_defaulted', decision: 'deny', by: 'broker_unreachable', reason });
    return { decision: 'deny', reason, by: 'broker_unreachable' };
  }
  try {
    return await requestPermission(config, registry, waiter, ask);
  } finally {
    if (!waiterSource) await waiter.close();
  }
}
