// /v1/completions/derender and /v1/chat/completions/derender: need a tokenizer (not with --tokens-only).

import { Module } from '@nestjs/common';
import { DerenderServing } from '../../serving/derender/derender-serving';
import { DerenderStreamServing } from '../../serving/derender/derender-stream-serving';
import { servingProvider } from '../engine/serving-provider';
import { DerenderController } from './derender.controller';

@Module({ controllers: [DerenderController], providers: [servingProvider(DerenderServing), servingProvider(DerenderStreamServing)] })
export class DerenderModule {}
