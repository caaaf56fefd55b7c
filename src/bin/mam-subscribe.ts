import { subscribeCommand } from '../cli/commands/subscribe.ts';
import { runStandalone } from '../cli/program.ts';

await runStandalone('mam-subscribe', subscribeCommand);
