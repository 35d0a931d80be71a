// /v1/completions/render and /v1/chat/completions/render: need a tokenizer (not with --tokens-only).

import { Module } from '@nestjs/common';
import { ChatServing } from '../../serving/chat-serving';
import { CompletionServing } from '../../serving/completion-serving';
import { servingProvider } from '../engine/serving-provider';
import { RenderController } from './render.controller';
import { RenderService } from './render.service';

@Module({
  controllers: [RenderController],
  providers: [servingProvider(CompletionServing), servingProvider(ChatServing), RenderService],
})
export class RenderModule {}
