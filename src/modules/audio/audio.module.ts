// The speech-to-text routes, registered when the served model is a speech model. One audio front
// end (its worker thread decodes uploads) serves both tasks and stops with the app.

import { Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import type { ServerConfig } from '../../config/server-config';
import { WHISPER_FEATURES } from '../../model/audio/feature-config';
import type { EngineClient } from '../../engine/types';
import { AudioFrontend } from '../../serving/audio/audio-frontend';
import { servingOptionsFrom } from '../../serving/serving-options';
import { SpeechToTextServing } from '../../serving/speech/speech-to-text-serving';
import type { SpeechTask } from '../../serving/speech/speech-types';
import type { ServedModels } from '../../serving/lora/served-models';
import { ENGINE_CLIENT, SERVED_MODELS, SERVER_CONFIG } from '../engine/engine.tokens';
import { AudioController } from './audio.controller';
import { TRANSCRIPTION_SERVING, TRANSLATION_SERVING } from './audio.tokens';

const servingFor = (provide: symbol, task: SpeechTask) => ({
  provide,
  inject: [ENGINE_CLIENT, SERVER_CONFIG, AudioFrontend, SERVED_MODELS],
  useFactory: (engine: EngineClient, config: ServerConfig, frontend: AudioFrontend, models: ServedModels) =>
    new SpeechToTextServing(engine, servingOptionsFrom(config, models), task, frontend),
});

@Module({
  controllers: [AudioController],
  providers: [
    {
      provide: AudioFrontend,
      inject: [ENGINE_CLIENT, SERVER_CONFIG],
      // An engine without audio features never reaches the front end: the serving answers 400 first.
      useFactory: (engine: EngineClient, config: ServerConfig) => new AudioFrontend(engine.audioFeatures ?? WHISPER_FEATURES, { maxSeconds: config.maxAudioDurationSeconds }),
    },
    servingFor(TRANSCRIPTION_SERVING, 'transcribe'),
    servingFor(TRANSLATION_SERVING, 'translate'),
  ],
})
export class AudioModule implements OnApplicationShutdown {
  constructor(@Inject(AudioFrontend) private readonly frontend: AudioFrontend) {}

  async onApplicationShutdown(): Promise<void> {
    await this.frontend.close();
  }
}
