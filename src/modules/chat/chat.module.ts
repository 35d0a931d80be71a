import { Module } from '@nestjs/common';
import { ChatServing } from '../../serving/chat-serving';
import { servingProvider } from '../engine/serving-provider';
import { ChatController } from './chat.controller';

@Module({ controllers: [ChatController], providers: [servingProvider(ChatServing)] })
export class ChatModule {}
