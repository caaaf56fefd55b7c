import { closeCommand } from '../cli/commands/close.ts';
import { runStandalone } from '../cli/program.ts';

void runStandalone('mam-close', closeCommand);
