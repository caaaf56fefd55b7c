import { pickCommand } from '../cli/commands/pick.ts';
import { runMain } from '../cli/run-main.ts';

void runMain('mam-pick', pickCommand);
