// The length a file's container declares, read from its headers without decoding: a recording
// over the limit is refused in microseconds instead of after decoding hours of it. Only a fast
// path: a header may be absent or lie, so decoding still counts samples and stops at the limit.
// WAV data size, FLAC STREAMINFO, Ogg last granule (Vorbis, Opus), MP3 Xing/Info/VBRI frame
// count or the first frame's bitrate, MP4/M4A mvhd. Anything else (or a damaged header): null.

type Reader = (bytes: Uint8Array) => number | null;

const READERS: Record<string, Reader> = {
  wav: wavSeconds,
  flac: flacSeconds,
  oga: oggSeconds,
  opus: oggSeconds,
  mp3: mp3Seconds,
  m4a: mp4Seconds,
  mp4: mp4Seconds,
};

/** Seconds of audio the headers of a file in `format` (audio-type's name) declare, or null. */
export function declaredDurationSeconds(bytes: Uint8Array, format: string): number | null {
  const reader = READERS[format];
  if (!reader) return null;
  try {
    const seconds = reader(bytes);
    return seconds !== null && Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
  } catch {
    return null; // a truncated header reads past the end: no declared length
  }
}

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const ascii = (bytes: Uint8Array, at: number, length: number) => String.fromCharCode(...bytes.subarray(at, at + length));

function wavSeconds(bytes: Uint8Array): number | null {
  const dv = view(bytes);
  let byteRate = 0;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = ascii(bytes, at, 4);
    const size = dv.getUint32(at + 4, true);
    if (id === 'fmt ') byteRate = dv.getUint32(at + 16, true);
    // A streamed WAV declares 0 or 0xFFFFFFFF: the data runs to the end of the file.
    if (id === 'data') return byteRate > 0 ? Math.min(size, bytes.length - at - 8) / byteRate : null;
    at += 8 + size + (size & 1);
  }
  return null;
}

/** Bytes of an ID3v2 tag at the start (some FLAC and most MP3 files carry one). */
export function id3Length(bytes: Uint8Array): number {
  if (ascii(bytes, 0, 3) !== 'ID3') return 0;
  return 10 + ((bytes[6] << 21) | (bytes[7] << 14) | (bytes[8] << 7) | bytes[9]);
}

function flacSeconds(bytes: Uint8Array): number | null {
  const at = id3Length(bytes);
  if (ascii(bytes, at, 4) !== 'fLaC' || (bytes[at + 4] & 0x7f) !== 0) return null;
  const info = at + 8;
  const rate = (bytes[info + 10] << 12) | (bytes[info + 11] << 4) | (bytes[info + 12] >> 4);
  const total = (bytes[info + 13] & 0x0f) * 2 ** 32 + view(bytes).getUint32(info + 14);
  // 0 total samples: unknown (an encoder writing to a pipe).
  return rate > 0 && total > 0 ? total / rate : null;
}

function oggSeconds(bytes: Uint8Array): number | null {
  if (ascii(bytes, 0, 4) !== 'OggS') return null;
  const dv = view(bytes);
  const serial = dv.getUint32(14, true);
  const packet = 27 + bytes[26];
  let rate: number;
  let skip = 0;
  if (ascii(bytes, packet + 1, 6) === 'vorbis') rate = dv.getUint32(packet + 12, true);
  else if (ascii(bytes, packet, 8) === 'OpusHead') [rate, skip] = [48000, dv.getUint16(packet + 10, true)];
  else return null;
  // The last page of the first stream carries the stream's final sample position.
  for (let at = bytes.length - 27; at >= 0; at--) {
    if (bytes[at] !== 0x4f || ascii(bytes, at, 4) !== 'OggS' || dv.getUint32(at + 14, true) !== serial) continue;
    const granule = dv.getBigInt64(at + 6, true);
    if (granule >= 0n) return rate > 0 ? Math.max(0, Number(granule) - skip) / rate : null;
  }
  return null;
}

const MP3_BITRATES = {
  v1l3: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  v2l3: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MP3_RATES = [44100, 48000, 32000];

function mp3Seconds(bytes: Uint8Array): number | null {
  let at = id3Length(bytes);
  while (at + 4 <= bytes.length && !(bytes[at] === 0xff && (bytes[at + 1] & 0xe6) === 0xe2)) at++; // layer III sync
  if (at + 4 > bytes.length) return null;
  const version = (bytes[at + 1] >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
  const bitrateIndex = bytes[at + 2] >> 4;
  const rateIndex = (bytes[at + 2] >> 2) & 3;
  if (version === 1 || rateIndex === 3 || bitrateIndex === 0 || bitrateIndex === 15) return null;
  const rate = MP3_RATES[rateIndex] / (version === 3 ? 1 : version === 2 ? 2 : 4);
  const samplesPerFrame = version === 3 ? 1152 : 576;
  const mono = bytes[at + 3] >> 6 === 3;
  const sideInfo = version === 3 ? (mono ? 17 : 32) : mono ? 9 : 17;
  const dv = view(bytes);
  const xing = at + 4 + sideInfo;
  const tag = ascii(bytes, xing, 4);
  if ((tag === 'Xing' || tag === 'Info') && dv.getUint32(xing + 4) & 1) return (dv.getUint32(xing + 8) * samplesPerFrame) / rate;
  if (ascii(bytes, at + 36, 4) === 'VBRI') return (dv.getUint32(at + 36 + 14) * samplesPerFrame) / rate;
  const kbps = (version === 3 ? MP3_BITRATES.v1l3 : MP3_BITRATES.v2l3)[bitrateIndex];
  return ((bytes.length - at) * 8) / (kbps * 1000);
}

function mp4Seconds(bytes: Uint8Array): number | null {
  const dv = view(bytes);
  const moov = findBox(bytes, dv, 0, bytes.length, 'moov');
  const mvhd = moov && findBox(bytes, dv, moov.start, moov.end, 'mvhd');
  if (!mvhd) return null;
  const version = bytes[mvhd.start];
  const timescale = dv.getUint32(mvhd.start + (version === 1 ? 20 : 12));
  const duration = version === 1 ? Number(dv.getBigUint64(mvhd.start + 24)) : dv.getUint32(mvhd.start + 16);
  return timescale > 0 ? duration / timescale : null;
}

/** The content range of the first box named `type` among the boxes in [from, to). */
function findBox(bytes: Uint8Array, dv: DataView, from: number, to: number, type: string): { start: number; end: number } | null {
  for (let at = from; at + 8 <= to; ) {
    let size = dv.getUint32(at);
    let header = 8;
    if (size === 1) [size, header] = [Number(dv.getBigUint64(at + 8)), 16];
    else if (size === 0) size = to - at;
    if (size < header) return null;
    if (ascii(bytes, at + 4, 4) === type) return { start: at + header, end: Math.min(at + size, to) };
    at += size;
  }
  return null;
}
