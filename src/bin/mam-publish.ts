import { publishCommand } from '../cli/commands/publish.ts';
import { runStandalone } from '../cli/program.ts';

void runStandalone('mam-publish', publishCommand);
