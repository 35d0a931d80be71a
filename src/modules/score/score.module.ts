import { Module } from '@nestjs/common';
import { servingProvider } from '../engine/serving-provider';
import { ScoreServing } from '../../serving/pooling/score-serving';
import { ScoreController } from './score.controller';

@Module({ controllers: [ScoreController], providers: [servingProvider(ScoreServing)] })
export class ScoreModule {}
