import { Module } from '@nestjs/common';
import { CompletionServing } from '../../serving/completion-serving';
import { servingProvider } from '../engine/serving-provider';
import { CompletionsController } from './completions.controller';

@Module({ controllers: [CompletionsController], providers: [servingProvider(CompletionServing)] })
export class CompletionsModule {}
