import type { PaneStarter } from '../core/delegate/delegation.ts';
import type { CommandContext } from './context.ts';

/**
 * `mam delegate --pane tmux`: the agent runs in a detached tmux session named after its job
 * (src/core/panes/). tmux is asked for its version first, so that a machine without it gets
 * TmuxMissing before anything is registered. The attach line goes to stderr: stdout carries the
 * job's events, and a wrapper piping them into jq still wants to know where to look.
 */
export async function tmuxPaneStarter(ctx: CommandContext): Promise<PaneStarter> {
  const { TmuxPane } = await import('../core/panes/tmux-pane.ts');
  const { runTmux } = await import('../core/panes/tmux-client.ts');
  await runTmux(['-V']);
  return async (jobId, launch) => {
    const pane = await TmuxPane.start({
      jobId,
      command: launch.command,
      env: launch.env,
      prompt: launch.terminalPrompt,
      cwd: ctx.cwd,
      server: { env: ctx.env },
    });
    ctx.io.err.write(`agent of job ${jobId} runs in tmux session ${pane.session}; watch it with: ${pane.attachCommand()}\n`);
    return pane;
  };
}
