import { Module } from '@nestjs/common';
import { servingProvider } from '../engine/serving-provider';
import { TokenizeServing } from '../../serving/tokenize-serving';
import { TokenizeController } from './tokenize.controller';

@Module({ controllers: [TokenizeController], providers: [servingProvider(TokenizeServing)] })
export class TokenizeModule {}
