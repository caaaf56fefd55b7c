import { remoteCommand } from '../cli/commands/remote.ts';
import { runMain } from '../cli/run-main.ts';

void runMain('mam-remote', remoteCommand);
