/**
 * Resolves with the first SIGINT or SIGTERM: long-running commands end through their own logic, not
 * by dying. Install it before the work starts, so none is missed; the handlers are one-shot, so a
 * second signal during a slow shutdown ends the process at once.
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}
