import { Module } from '@nestjs/common';
import { servingProvider } from '../engine/serving-provider';
import { PoolingServing } from '../../serving/pooling/pooling-serving';
import { PoolingController } from './pooling.controller';

@Module({ controllers: [PoolingController], providers: [servingProvider(PoolingServing)] })
export class PoolingModule {}
