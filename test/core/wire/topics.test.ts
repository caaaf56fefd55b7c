import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  TOPIC_KINDS,
  type TopicKind,
  allDispatchTopic,
  allJobsFilter,
  dispatchTopic,
  eventsTopic,
  jobFilter,
  parseTopic,
  stateTopic,
} from '../../../src/core/wire/topics.ts';

const root = 'python/mqtt/jobs';

describe('topics', () => {
  it('name the three per-job topics and their wildcards', () => {
    expect(eventsTopic(root, '918b0612')).toBe('python/mqtt/jobs/918b0612/events');
    expect(stateTopic(root, '918b0612')).toBe('python/mqtt/jobs/918b0612/state');
    expect(dispatchTopic(root, '918b0612')).toBe('python/mqtt/jobs/918b0612/dispatch');
    expect(jobFilter(root, 'abcd1234')).toBe('python/mqtt/jobs/abcd1234/+');
    expect(allJobsFilter(root)).toBe('python/mqtt/jobs/+/+');
    expect(allDispatchTopic(root)).toBe('python/mqtt/jobs/+/dispatch');
  });

  it('parse a topic back into job and kind', () => {
    expect(parseTopic(root, eventsTopic(root, '918b0612'))).toEqual({ jobId: '918b0612', kind: 'events' });
    expect(parseTopic(root, stateTopic(root, 'abc'))).toEqual({ jobId: 'abc', kind: 'state' });
    expect(parseTopic(root, dispatchTopic(root, 'abc'))).toEqual({ jobId: 'abc', kind: 'dispatch' });
    expect(parseTopic('a', 'a/x/events')).toEqual({ jobId: 'x', kind: 'events' });
  });

  it.each([
    'python/mqtt/jobs/918b0612/other',
    'python/mqtt/jobs/918b0612',
    'python/mqtt/jobs//events',
    'python/mqtt/jobs/+/events',
    'python/mqtt/jobs/#/events',
    'python/mqtt/jobs/a/b/events',
    'python/mqtt/jobs/918b0612/events/',
    'python/mqtt/jobsX/918b0612/events',
    'other/root/918b0612/events',
    'python/mqtt/jobs',
    '',
  ])('return undefined for %j', (topic) => {
    expect(parseTopic(root, topic)).toBeUndefined();
  });
});

/** parseTopic as it was written first (split on '/'), the reference for the index arithmetic. */
function referenceParseTopic(root: string, topic: string): { jobId: string; kind: TopicKind } | undefined {
  if (!topic.startsWith(`${root}/`)) return undefined;
  const levels = topic.slice(root.length + 1).split('/');
  if (levels.length !== 2) return undefined;
  const [jobId = '', kind = ''] = levels;
  if (jobId === '' || /[+#]/.test(jobId)) return undefined;
  if (!(TOPIC_KINDS as readonly string[]).includes(kind)) return undefined;
  return { jobId, kind: kind as TopicKind };
}

describe('parseTopic', () => {
  it('reads any topic as the split-based reference does', () => {
    const level = fc.oneof(
      fc.constantFrom('', '+', '#', 'a+', 'a', 'b', '918b0612', 'events', 'state', 'dispatch', 'control', 'python', 'jobs'),
      fc.string({ maxLength: 4 }),
    );
    const topic = fc.oneof(
      fc.array(level, { maxLength: 6 }).map((l) => l.join('/')),
      fc
        .tuple(fc.constantFrom(root, 'a', 'a/b'), fc.constantFrom('', '/', '//'), fc.array(level, { maxLength: 3 }))
        .map(([r, sep, l]) => `${r}${sep}${l.join('/')}`),
    );
    fc.assert(
      fc.property(fc.constantFrom(root, 'a', 'a/b'), topic, (r, t) => {
        expect(parseTopic(r, t)).toEqual(referenceParseTopic(r, t));
      }),
      { numRuns: 5000 },
    );
  });
});
