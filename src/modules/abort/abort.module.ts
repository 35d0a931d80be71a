// Abort routes. AbortModule sits wherever /inference/v1/generate is; LegacyAbortModule adds the
// open POST /abort_requests and is registered only with --tokens-only.

import { Module } from '@nestjs/common';
import { AbortController } from './abort.controller';
import { AbortService } from './abort.service';
import { LegacyAbortController } from './legacy-abort.controller';

@Module({
  controllers: [AbortController],
  providers: [AbortService],
})
export class AbortModule {}

@Module({
  controllers: [LegacyAbortController],
  providers: [AbortService],
})
export class LegacyAbortModule {}
