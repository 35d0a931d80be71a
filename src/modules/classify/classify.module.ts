import { Module } from '@nestjs/common';
import { servingProvider } from '../engine/serving-provider';
import { ClassifyServing } from '../../serving/pooling/classify-serving';
import { ClassifyController } from './classify.controller';

@Module({ controllers: [ClassifyController], providers: [servingProvider(ClassifyServing)] })
export class ClassifyModule {}
