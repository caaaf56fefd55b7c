/** Resolves on the first SIGINT or SIGTERM: long-running commands end through their own logic, not by dying. */
export function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}
