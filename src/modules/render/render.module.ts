// /v1/completions/render and /v1/chat/completions/render: need a tokenizer (not with --tokens-only).

import { Module } from '@nestjs/common';
import { RenderServing } from '../../serving/render/render-serving';
import { servingProvider } from '../engine/serving-provider';
import { RenderController } from './render.controller';

@Module({ controllers: [RenderController], providers: [servingProvider(RenderServing)] })
export class RenderModule {}
