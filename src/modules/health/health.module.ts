import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { VersionController } from './version.controller';

/** /health, /ping, /version. */
@Module({ controllers: [HealthController, VersionController] })
export class HealthModule {}
