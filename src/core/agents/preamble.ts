import { readFileSync } from 'node:fs';
import path from 'node:path';
import { findPackageRoot, publishCommandLine } from '../bin-path.ts';
import type { JobRecord } from '../registry/job-record.ts';

/** The template's version, from its first line; a change of wording that agents rely on bumps it. */
export const PREAMBLE_VERSION = 1;

let template: string | undefined;

/** `assets/agent-preamble.md`, shipped in the package (package.json `files`). */
export function preambleTemplate(): string {
  template ??= readFileSync(path.join(findPackageRoot(), 'assets', 'agent-preamble.md'), 'utf8');
  return template;
}

/**
 * What an agent is told before its brief (issue 13): the exact commands for each event, the job's
 * id and attempt fencing filled in. The fence (`--attempt-id`, `--expect-dispatch-token`) makes the
 * commands of a replaced attempt refused (exit 5) rather than counted for the new one.
 */
export function renderPreamble(record: Pick<JobRecord, 'job_id' | 'attempt_id' | 'dispatch_token' | 'heartbeat_sec'>, text = preambleTemplate()): string {
  const values: Record<string, string> = {
    job_id: record.job_id,
    attempt_id: String(record.attempt_id),
    publish: publishCommandLine(record.job_id),
    heartbeat_sec: String(record.heartbeat_sec),
    fence: `--attempt-id ${record.attempt_id} --expect-dispatch-token ${record.dispatch_token}`,
  };
  const firstLine = text.slice(0, text.indexOf('\n'));
  if (!firstLine.includes(`mam-preamble v${PREAMBLE_VERSION}`))
    throw new Error(`agent preamble: expected a mam-preamble v${PREAMBLE_VERSION} template, got ${JSON.stringify(firstLine)}`);
  // The version line is for people editing the file, not for the agent.
  const body = text.slice(firstLine.length + 1);
  return body.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`agent preamble: unknown placeholder ${whole}`);
    return value;
  });
}

/** The whole prompt an agent is handed: the preamble, then the brief as given. */
export function agentPrompt(record: Pick<JobRecord, 'job_id' | 'attempt_id' | 'dispatch_token' | 'heartbeat_sec' | 'brief'>): string {
  return `${renderPreamble(record)}${record.brief}\n`;
}
