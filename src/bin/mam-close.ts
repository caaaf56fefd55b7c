import { closeCommand } from '../cli/commands/close.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-close', closeCommand);
