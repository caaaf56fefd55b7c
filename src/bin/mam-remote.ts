import { remoteCommand } from '../cli/commands/remote.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-remote', remoteCommand);
