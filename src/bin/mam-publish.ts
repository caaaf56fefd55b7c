import { publishCommand } from '../cli/commands/publish.ts';
import { runMain } from '../cli/run-main.ts';

void runMain('mam-publish', publishCommand);
