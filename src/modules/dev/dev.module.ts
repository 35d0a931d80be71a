import { Module } from '@nestjs/common';
import { DevController } from './dev.controller';

/** The VLLM_SERVER_DEV_MODE=1 endpoints. */
@Module({ controllers: [DevController] })
export class DevModule {}
