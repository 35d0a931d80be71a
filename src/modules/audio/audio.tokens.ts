// Injection tokens of the two speech-to-text serving instances (one class, two tasks).
export const TRANSCRIPTION_SERVING = Symbol('TRANSCRIPTION_SERVING');
export const TRANSLATION_SERVING = Symbol('TRANSLATION_SERVING');
