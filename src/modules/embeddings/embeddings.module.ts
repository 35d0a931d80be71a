import { Module } from '@nestjs/common';
import { servingProvider } from '../engine/serving-provider';
import { EmbeddingServing } from '../../serving/pooling/embedding-serving';
import { EmbeddingsController } from './embeddings.controller';

@Module({ controllers: [EmbeddingsController], providers: [servingProvider(EmbeddingServing)] })
export class EmbeddingsModule {}
