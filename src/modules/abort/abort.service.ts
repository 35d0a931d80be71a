// Aborts in-flight /inference/v1/generate requests by id. The HTTP answer does not wait: the
// abort runs on the next tick, and each aborted request then ends with finish_reason "abort".

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EngineClient } from '../../engine/types';
import { ENGINE_CLIENT } from '../engine/engine.tokens';

@Injectable()
export class AbortService {
  private readonly logger = new Logger('AbortRequests');

  constructor(@Inject(ENGINE_CLIENT) private readonly engine: EngineClient) {}

  abortInBackground(requestIds: readonly string[]): void {
    const ids = [...requestIds];
    setImmediate(() => {
      try {
        this.engine.abort(ids);
      } catch (err) {
        this.logger.warn(`abort of ${ids.join(', ')} failed: ${(err as Error).message}`);
      }
    });
  }
}
