import { pickCommand } from '../cli/commands/pick.ts';
import { runStandalone } from '../cli/program.ts';

void runStandalone('mam-pick', pickCommand);
