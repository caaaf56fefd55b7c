import { remoteCommand } from '../cli/commands/remote.ts';
import { runStandalone } from '../cli/program.ts';

void runStandalone('mam-remote', remoteCommand);
