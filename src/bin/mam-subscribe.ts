import { subscribeCommand } from '../cli/commands/subscribe.ts';
import { runMain } from '../cli/run-main.ts';

void runMain('mam-subscribe', subscribeCommand);
