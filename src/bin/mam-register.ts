import { registerCommand } from '../cli/commands/register.ts';
import { runStandalone } from '../cli/program.ts';

void runStandalone('mam-register', registerCommand);
