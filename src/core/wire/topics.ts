/**
 * Contract §3: per job `<root>/<job_id>/events`, `…/state` (retained) and `…/dispatch` (retained,
 * remote only). MAM adds `…/control` (not retained): signed answers to an agent's permission
 * requests (src/core/control/). The root comes validated from config (`topicRoot`: no wildcards, no empty level).
 */
export const TOPIC_KINDS = ['events', 'state', 'dispatch', 'control'] as const;
export type TopicKind = (typeof TOPIC_KINDS)[number];

export function eventsTopic(root: string, jobId: string): string {
  return `${root}/${jobId}/events`;
}

export function stateTopic(root: string, jobId: string): string {
  return `${root}/${jobId}/state`;
}

export function dispatchTopic(root: string, jobId: string): string {
  return `${root}/${jobId}/dispatch`;
}

export function controlTopic(root: string, jobId: string): string {
  return `${root}/${jobId}/control`;
}

/**
 * A watcher's filter for one job, `<root>/<id>/+`, or for every job, `<root>/+/+`: one filter per
 * job rather than one each for `events` and `state`, since NATS runs each QoS 1 subscription as its
 * own delivery stream, and with two of them a job's state overtook its own event in most
 * back-to-back pairs (the watch resolved on the state line and never printed the terminal event).
 * `dispatch` and `control` messages also match; watchers drop them unread.
 */
export function jobFilter(root: string, jobId: string): string {
  return `${root}/${jobId}/+`;
}

export function allJobsFilter(root: string): string {
  return `${root}/+/+`;
}

/** `mam-remote run` subscribes every job's dispatch. */
export function allDispatchTopic(root: string): string {
  return `${root}/+/dispatch`;
}

export interface ParsedTopic {
  jobId: string;
  kind: TopicKind;
}

/**
 * Which job and kind a received topic names, or undefined for anything else. Receivers check the
 * payload's `job_id` against this: a message is accepted only on its own job's topic (§4).
 */
export function parseTopic(root: string, topic: string): ParsedTopic | undefined {
  // Index arithmetic rather than a split: a monitor parses the topic of every message it reads.
  const start = root.length + 1;
  if (topic.charCodeAt(root.length) !== 0x2f || !topic.startsWith(root)) return undefined;
  const slash = topic.indexOf('/', start);
  if (slash === -1 || topic.indexOf('/', slash + 1) !== -1) return undefined;
  const jobId = topic.slice(start, slash);
  const kind = topic.slice(slash + 1);
  if (jobId === '' || jobId.includes('+') || jobId.includes('#')) return undefined;
  if (!(TOPIC_KINDS as readonly string[]).includes(kind)) return undefined;
  return { jobId, kind: kind as TopicKind };
}
