import { Module } from '@nestjs/common';
import { ModelsController } from './models.controller';

/** GET /v1/models. */
@Module({ controllers: [ModelsController] })
export class ModelsModule {}
