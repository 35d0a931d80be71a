// audio-type (a dependency of audio-decode) ships no typings: it sniffs a file's format from its first bytes.
declare module 'audio-type' {
  /** The format name ('wav', 'mp3', 'flac', 'oga', 'opus', 'm4a', 'webm', …), or undefined when unknown. */
  export default function audioType(bytes: Uint8Array): string | undefined;
}
