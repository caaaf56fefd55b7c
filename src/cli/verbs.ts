import type { Umbrella, Verbs } from './program.ts';

/** The umbrella's verbs. Each module is imported only when its verb is named, to keep start-up short. */
export const VERBS: Verbs = {
  register: { summary: 'create a pending job record', load: async () => (await import('./commands/register.ts')).registerCommand },
  pick: { summary: 'claim the oldest pickable job for an agent session', load: async () => (await import('./commands/pick.ts')).pickCommand },
  publish: { summary: 'record, sign and publish one lifecycle event', load: async () => (await import('./commands/publish.ts')).publishCommand },
  subscribe: {
    summary: 'watch jobs; print accepted events; exit with the outcome',
    load: async () => (await import('./commands/subscribe.ts')).subscribeCommand,
  },
  close: { summary: 'operator close of a job', load: async () => (await import('./commands/close.ts')).closeCommand },
  remote: { summary: 'dispatch a job to, or run jobs from, another host', load: async () => (await import('./commands/remote.ts')).remoteCommand },
  jobs: { summary: 'list jobs', load: async () => (await import('./commands/jobs.ts')).jobsCommand },
  show: { summary: "print one job's record", load: async () => (await import('./commands/show.ts')).showCommand },
  sessions: {
    summary: "list the tmux panes of MAM's one-job agents (--pane tmux)",
    load: async () => (await import('./commands/sessions.ts')).sessionsCommand,
  },
  session: {
    summary: 'named agent sessions that take job after job: create, stop, resume, list',
    load: async () => (await import('./commands/session.ts')).sessionCommand,
  },
  redispatch: { summary: 'make a job pending again as a new attempt', load: async () => (await import('./commands/redispatch.ts')).redispatchCommand },
  broker: { summary: 'run an embedded MQTT broker on this machine', load: async () => (await import('./commands/broker.ts')).brokerCommand },
  approve: { summary: 'allow a tool an agent asked permission for', load: async () => (await import('./commands/decide.ts')).approveCommand },
  deny: { summary: 'refuse a tool an agent asked permission for', load: async () => (await import('./commands/decide.ts')).denyCommand },
  'mcp-permission': {
    summary: "MCP stdio server answering Claude's permission prompts from the broker",
    load: async () => (await import('./commands/mcp-permission.ts')).mcpPermissionCommand,
  },
  dashboard: { summary: 'serve a live web page of every job', load: async () => (await import('./commands/dashboard.ts')).dashboardCommand },
  brief: { summary: "print a job's prompt: how to report, then the brief", load: async () => (await import('./commands/brief.ts')).briefCommand },
  hook: { summary: "publish what an agent's hook reports as a signed event", load: async () => (await import('./commands/hook.ts')).hookCommand },
  agent: { summary: "run a fleet agent's presence (mam agent up)", load: async () => (await import('./commands/agent.ts')).agentCommand },
  agents: { summary: 'list the fleet: presence, capabilities, current job', load: async () => (await import('./commands/agents.ts')).agentsCommand },
  claim: { summary: 'claim a turn: exit 0 for exactly one claimant, 4 for the others', load: async () => (await import('./commands/claim.ts')).claimCommand },
  mentions: {
    summary: 'apply the @mention rules to a chat message: respond, stay silent, or race for the turn',
    load: async () => (await import('./commands/mentions.ts')).mentionsCommand,
  },
  roundtable: {
    summary: 'ask the other agents for counsel on a turn you hold, and answer such a request',
    load: async () => (await import('./commands/roundtable.ts')).roundtableCommand,
  },
  inbox: { summary: 'what was addressed to an agent while it was away, once', load: async () => (await import('./commands/inbox.ts')).inboxCommand },
  doctor: {
    summary: 'check agent CLIs, broker and secrets; exit 0 only when all is well',
    load: async () => (await import('./commands/doctor.ts')).doctorCommand,
  },
  delegate: {
    summary: 'register, launch, watch and close a job in one command',
    load: async () => (await import('./commands/delegate.ts')).delegateCommand,
  },
};

/** `mam --help`: the whole life of a job in three lines a user would type. */
export const MAM: Umbrella = {
  summary: 'MAM: delegate jobs to AI coding agents and watch them through signed MQTT events',
  verbs: VERBS,
  examples: [
    ['give Claude Code a task and wait for its outcome (exit 0: completed)', 'delegate --agent claude --brief "Make the flaky login test deterministic"'],
    ['every job and its state', 'jobs'],
    ["answer an agent's permission request", 'approve --job 3f2a9c1d'],
  ],
};
