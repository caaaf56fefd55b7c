import type { PaneStarter } from '../core/delegate/delegation.ts';
import { UsageError } from '../core/errors.ts';

// Wired to src/core/panes/ once it lands.
export async function tmuxPaneStarter(): Promise<PaneStarter> {
  throw new UsageError('--pane tmux: not wired yet');
}
