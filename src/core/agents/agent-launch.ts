import path from 'node:path';
import { binPath, publishCommandLine } from '../bin-path.ts';
import type { MamConfig } from '../config/config.ts';
import { formatServer } from '../mqtt/server-list.ts';
import type { JobRecord } from '../registry/job-record.ts';
import { ensureOwnDir, writePrivateFileSync } from '../registry/record-store.ts';
import type { Registry } from '../registry/registry.ts';
import { agentPrompt } from './preamble.ts';
import { type AgentName, type LaunchMode, type LaunchPaths, agentLaunch } from './presets.ts';

/** What to run: a preset (`--agent`) or the user's own command line (`--exec`). */
export type AgentChoice = { agent: AgentName; exec?: undefined } | { exec: string; agent?: undefined };

/** A launch ready to start, as a process or in a pane. */
export interface PreparedLaunch {
  command: string;
  env: NodeJS.ProcessEnv;
  /** The prompt file, when the agent reads its prompt from stdin. */
  stdinFile?: string | undefined;
  /** The prompt, when it is typed into a pane. */
  terminalPrompt?: string | undefined;
}

/**
 * Where an agent MAM starts publishes to: this host's registry (whatever folder the agent was started
 * in) and the broker, for a job's agent and a session's alike.
 */
export function reportingEnvironment(config: MamConfig, registry: Registry): Record<string, string> {
  return {
    MAM_REAL_ROOT: config.root,
    MAM_REGISTRY_DIR: registry.paths.registryDir,
    MAM_LOG_DIR: registry.paths.logDir,
    MQTT_BROKER: config.broker.host,
    MQTT_PORT: String(config.broker.port),
    // With a broker list the agent fails over along it too (docs/cluster.md); MQTT_BROKER is its first server.
    ...(config.broker.servers ? { MQTT_SERVERS: config.broker.servers.map(formatServer).join(',') } : {}),
    MAM_TOPIC_ROOT: config.topicRoot,
  };
}

/**
 * The variables every agent of a job gets (contract §1 and issue 13): where it reports, the job, its
 * attempt fence and the publish command.
 */
export function jobEnvironment(config: MamConfig, registry: Registry, record: JobRecord, promptFile?: string): Record<string, string> {
  return {
    ...reportingEnvironment(config, registry),
    JOB_ID: record.job_id,
    MAM_JOB_BRIEF: record.brief,
    MAM_PUBLISH_CMD: publishCommandLine(record.job_id),
    MAM_DISPATCH_TOKEN: record.dispatch_token,
    MAM_ATTEMPT_ID: String(record.attempt_id),
    MAM_HEARTBEAT_SEC: String(record.heartbeat_sec),
    ...(promptFile === undefined ? {} : { MAM_JOB_PROMPT_FILE: promptFile }),
  };
}

/** The job's launch files, in its audit folder (private to the user, like the rest of it). */
export function launchPaths(registry: Registry, jobId: string): LaunchPaths {
  const dir = path.join(registry.paths.jobLogDir(jobId), 'agent');
  return {
    promptFile: path.join(dir, 'prompt.md'),
    claudeSettingsFile: path.join(dir, 'claude-settings.json'),
    mcpConfigFile: path.join(dir, 'mcp.json'),
  };
}

/**
 * Writes the prompt (preamble + brief) and the preset's files, and returns what to start. A user's
 * `--exec` command gets the prompt on stdin (as the Python toolkit pre-seeded it) and in
 * `MAM_JOB_PROMPT_FILE`; in a pane, typed into the terminal.
 */
export function prepareLaunch(config: MamConfig, registry: Registry, record: JobRecord, choice: AgentChoice, mode: LaunchMode): PreparedLaunch {
  const paths = launchPaths(registry, record.job_id);
  const prompt = agentPrompt(record);
  ensureOwnDir(path.dirname(paths.promptFile));
  writePrivateFileSync(paths.promptFile, prompt);
  const vars = jobEnvironment(config, registry, record, paths.promptFile);
  const env = { ...(config.env ?? process.env), ...vars };
  if (choice.exec !== undefined) {
    return mode === 'pane' ? { command: choice.exec, env, terminalPrompt: prompt } : { command: choice.exec, env, stdinFile: paths.promptFile };
  }
  const launch = agentLaunch(choice.agent, {
    record,
    mode,
    prompt,
    paths,
    mam: [process.execPath, binPath('mam')],
    // Claude may start MCP servers with a reduced environment: the job's variables, never secrets
    // (those come from `<workspace>/.mam.env` or the inherited environment).
    serverEnv: Object.fromEntries(Object.entries(vars).filter(([name]) => name !== 'MAM_JOB_BRIEF')),
  });
  for (const file of launch.files) writePrivateFileSync(file.path, file.content);
  return { command: launch.command, env, stdinFile: launch.stdinFile, terminalPrompt: launch.terminalPrompt };
}
