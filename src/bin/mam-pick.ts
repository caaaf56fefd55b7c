import { pickCommand } from '../cli/commands/pick.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-pick', pickCommand);
