// Jest environment for tests that run onnxruntime-node. Jest's node environment gives each test
// file its own realm, so typed arrays made by the native binding (outer realm) fail the
// `instanceof Float32Array` checks onnxruntime-common makes inside the test realm. Sharing the
// outer realm's typed-array constructors fixes that. Use with the docblock
//   /** @jest-environment ./test/helpers/ort-environment.js */
const { TestEnvironment } = require('jest-environment-node');

const SHARED = [
  'ArrayBuffer', 'SharedArrayBuffer', 'DataView',
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
];

class OrtEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
  }
}

module.exports = OrtEnvironment;
