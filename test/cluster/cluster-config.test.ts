import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLUSTER_DIR, expandIncludes } from '../helpers/cluster-brokers.ts';
import { DOCKER_DIR, NATS_CONF } from '../helpers/docker-brokers.ts';

// The files of docker/nats-cluster and docker-compose.cluster.yaml themselves: the same accounts as
// the single server, nodes that differ only by name, three replicas, and a pinned image.

const read = (file: string) => readFileSync(file, 'utf8');
/** From `accounts {` to `system_account: …`, comments and blank lines left out. */
const accountsBlock = (text: string): string => {
  const code = text
    .split('\n')
    .filter((l) => !/^\s*(#|$)/.test(l))
    .join('\n');
  const m = /^accounts \{[\s\S]*?^system_account: \S+$/m.exec(code);
  if (!m) throw new Error('no accounts block');
  return m[0];
};
/** The `nats:<tag>` images a compose file runs. */
const natsImages = (compose: string): string[] => [...compose.matchAll(/^\s+image: (nats:\S+)$/gm)].map((m) => m[1]!);
/** 2.12.12 or later, as a full x.y.z version: NATS before 2.12.12 let retained and QoS 1 replays bypass subscribe-deny rules. */
const fixedRelease = (image: string): boolean => {
  const m = /^nats:(\d+)\.(\d+)\.(\d+)(-alpine)?$/.exec(image);
  if (!m) return false;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return major > 2 || (major === 2 && (minor > 12 || (minor === 12 && patch >= 12)));
};

describe('docker/nats-cluster', () => {
  const nodes = [1, 2, 3].map((i) => expandIncludes(path.join(CLUSTER_DIR, `node-${i}.conf`)));

  it('has the accounts and permissions of docker/nats/nats.conf, setting for setting', () => {
    expect(accountsBlock(read(path.join(CLUSTER_DIR, 'accounts.conf')))).toBe(accountsBlock(read(NATS_CONF)));
  });

  it('nodes differ only by a unique server_name', () => {
    const names = nodes.map((n) => /^server_name: (\S+)$/m.exec(n)?.[1]);
    expect(names).toEqual(['mam-nats-1', 'mam-nats-2', 'mam-nats-3']);
    const rest = nodes.map((n) => n.replace(/^server_name: .*$/m, '').replace(/^# Node \d.*$/m, ''));
    expect(new Set(rest).size).toBe(1);
  });

  it('clusters the three nodes with route credentials, and keeps every MQTT stream on three replicas', () => {
    const conf = nodes[0]!;
    expect(conf).toMatch(/^\s+routes: \[\$MAM_ROUTE_1, \$MAM_ROUTE_2, \$MAM_ROUTE_3\]$/m);
    expect(conf).toMatch(/^\s+password: \$MAM_ROUTE_PASSWORD$/m);
    expect(conf).toMatch(/^\s+stream_replicas: 3$/m);
  });
});

describe('compose files pin a fixed NATS release', () => {
  it.each(['docker-compose.yaml', 'docker-compose.cluster.yaml'])('%s', (file) => {
    const images = natsImages(read(path.join(DOCKER_DIR, file)));
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) expect(fixedRelease(image), `${file}: ${image} is not a 2.12.12+ x.y.z tag`).toBe(true);
  });

  it('the check itself: moving tags and older releases are refused', () => {
    expect(['nats:2.12-alpine', 'nats:latest', 'nats:2.12.11-alpine', 'nats:2.9.10', 'nats:2'].some(fixedRelease)).toBe(false);
    expect(['nats:2.12.12-alpine', 'nats:2.12.12', 'nats:2.13.0-alpine', 'nats:3.0.1'].every(fixedRelease)).toBe(true);
  });
});
