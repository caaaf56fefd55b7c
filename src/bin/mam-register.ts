import { registerCommand } from '../cli/commands/register.ts';
import { runMain } from '../cli/run-main.ts';

void runMain('mam-register', registerCommand);
