// ServerLogger formats a line's timestamp once per second; the text must stay what Nest's
// ConsoleLogger writes for every instant.

import { ConsoleLogger } from '@nestjs/common';
import { ServerLogger } from '../../../src/common/logging';

describe('ServerLogger timestamps', () => {
  afterEach(() => jest.restoreAllMocks());

  it("equal Nest's ConsoleLogger's at every instant, across second, minute, day and year boundaries", () => {
    const ours = new ServerLogger() as unknown as { getTimestamp(): string };
    const nest = new ConsoleLogger() as unknown as { getTimestamp(): string };
    const now = jest.spyOn(Date, 'now');
    const starts = [Date.UTC(2026, 11, 1, 3, 8, 55), Date.UTC(2026, 11, 31, 23, 59, 59), Date.UTC(2027, 2, 28, 0, 59, 59), 1_700_000_000_000];
    let compared = 0;
    for (const start of starts) {
      for (let ms = -20; ms < 2400; ms += 7) {
        now.mockReturnValue(start + ms);
        expect(ours.getTimestamp()).toBe(nest.getTimestamp());
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});
