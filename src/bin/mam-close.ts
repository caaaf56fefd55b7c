import { closeCommand } from '../cli/commands/close.ts';
import { runMain } from '../cli/run-main.ts';

void runMain('mam-close', closeCommand);
