/**
 * A table for people (`mam jobs`, `mam sessions`, `mam session list`, `mam agents`): columns two
 * spaces apart, each as wide as its widest cell, the last one left as it is (a brief, an attach
 * line); no trailing blanks. Scripts read `--json` instead.
 */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
