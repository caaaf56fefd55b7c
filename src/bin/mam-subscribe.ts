import { subscribeCommand } from '../cli/commands/subscribe.ts';
import { runStandalone } from '../cli/program.ts';

void runStandalone('mam-subscribe', subscribeCommand);
