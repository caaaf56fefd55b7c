import { registerCommand } from '../cli/commands/register.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-register', registerCommand);
