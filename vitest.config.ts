import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Suites that need mosquitto/nats-server report what they skipped here (see test/helpers/brokers.ts).
    globalSetup: ['test/global-setup.ts'],
  },
});
