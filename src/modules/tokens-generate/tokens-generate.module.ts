// /inference/v1/generate (registered with --enable-scale-out, and always with --tokens-only).

import { Module } from '@nestjs/common';
import { GenerateServing, generateServingOptions } from '../../serving/generate/generate-serving';
import { servingProvider } from '../engine/serving-provider';
import { GenerateController } from './generate.controller';

@Module({
  controllers: [GenerateController],
  providers: [servingProvider(GenerateServing, generateServingOptions)],
})
export class TokensGenerateModule {}
