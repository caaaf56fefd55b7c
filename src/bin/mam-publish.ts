import { publishCommand } from '../cli/commands/publish.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-publish', publishCommand);
