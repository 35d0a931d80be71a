// /v1/completions/derender and /v1/chat/completions/derender: need a tokenizer (not with --tokens-only).

import { Module } from '@nestjs/common';
import { DerenderController } from './derender.controller';
import { DerenderStreamService } from './derender-stream.service';
import { DerenderService } from './derender.service';

@Module({
  controllers: [DerenderController],
  providers: [DerenderService, DerenderStreamService],
})
export class DerenderModule {}
