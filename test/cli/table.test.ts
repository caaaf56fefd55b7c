import { describe, expect, it } from 'vitest';
import { formatTable } from '../../src/cli/table.ts';

describe('formatTable (mam jobs, mam sessions, mam session list, mam agents)', () => {
  it('columns as wide as their widest cell, two spaces apart; the last column as it is; no trailing blanks', () => {
    const text = formatTable(
      ['NAME', 'STATUS', 'JOB'],
      [
        ['ada', 'online', '-'],
        ['bartholomew', 'offline (will)', 'ab12cd34 (running)'],
        ['cy', '', ''],
      ],
    );
    expect(text.split('\n')).toEqual([
      'NAME         STATUS          JOB',
      'ada          online          -',
      'bartholomew  offline (will)  ab12cd34 (running)',
      'cy',
    ]);
  });

  it('a header alone when there are no rows', () => {
    expect(formatTable(['JOB', 'STATUS'], [])).toBe('JOB  STATUS');
  });
});
