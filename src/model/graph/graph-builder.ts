// A small imperative builder for ONNX graphs: names values, collects nodes and initializers,
// and encodes the model. Large initializers go to in-memory external data (one buffer per
// tensor, handed to InferenceSession.create) so weights are never protobuf-encoded and the
// 2 GB protobuf limit does not apply.
import { OnnxAttrType, OnnxDataType, OnnxDataTypeId, onnxModelType } from './onnx-proto';

export type AttrValue = { i: number } | { f: number } | { ints: number[] } | { s: string };
export const attrInt = (i: number): AttrValue => ({ i });
export const attrFloat = (f: number): AttrValue => ({ f });
export const attrInts = (ints: number[]): AttrValue => ({ ints });

/** Files to pass as `externalData` in InferenceSession.create's options. */
export interface ExternalDataFile {
  path: string;
  data: Uint8Array;
}

export interface BuiltModel {
  modelBytes: Uint8Array;
  externalData: ExternalDataFile[];
}

type Dim = number | string;

/** Initializers at or below this size are stored inline in the model proto. */
const INLINE_LIMIT_BYTES = 4096;

export class GraphBuilder {
  private readonly nodes: object[] = [];
  private readonly initializers: object[] = [];
  private readonly inputs: object[] = [];
  private readonly outputs: object[] = [];
  private readonly external: ExternalDataFile[] = [];
  private counter = 0;

  /** inlineLimitBytes: initializers above this size go to external data (Infinity: all inline, for writing a file). */
  constructor(
    private readonly graphName: string,
    private readonly inlineLimitBytes = INLINE_LIMIT_BYTES,
  ) {}

  /** A fresh value name with a readable prefix. */
  fresh(prefix: string): string {
    return `${prefix}_${this.counter++}`;
  }

  input(name: string, type: OnnxDataTypeId, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, type, dims));
    return name;
  }

  output(name: string, type: OnnxDataTypeId, dims: Dim[]): string {
    this.outputs.push(valueInfo(name, type, dims));
    return name;
  }

  initializer(name: string, type: OnnxDataTypeId, dims: number[], data: ArrayBufferView): string {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (bytes.byteLength <= this.inlineLimitBytes) {
      this.initializers.push({ name, dims, dataType: type, rawData: bytes });
      return name;
    }
    const path = `w${this.external.length}.bin`;
    this.external.push({ path, data: bytes });
    this.initializers.push({
      name,
      dims,
      dataType: type,
      dataLocation: 1,
      externalData: [
        { key: 'location', value: path },
        { key: 'offset', value: '0' },
        { key: 'length', value: String(bytes.byteLength) },
      ],
    });
    return name;
  }

  constInt64(values: number[], dims: number[] = [values.length]): string {
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    return this.initializer(this.fresh('c_i64'), OnnxDataType.INT64, dims, data);
  }

  constFloat(values: number[], dims: number[] = [values.length]): string {
    return this.initializer(this.fresh('c_f32'), OnnxDataType.FLOAT, dims, Float32Array.from(values));
  }

  /** Adds a node; returns its output names (fresh ones when given a count). */
  node(
    opType: string,
    inputs: string[],
    outputs: string[] | number = 1,
    attrs: Record<string, AttrValue> = {},
    domain = '',
  ): string[] {
    const outs =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, () => this.fresh(opType.toLowerCase()))
        : outputs;
    this.nodes.push({
      input: inputs,
      output: outs,
      name: this.fresh(`n_${opType}`),
      opType,
      domain,
      attribute: Object.entries(attrs).map(([name, v]) => encodeAttr(name, v)),
    });
    return outs;
  }

  /** Single-output shorthand. */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, domain = ''): string {
    return this.node(opType, inputs, 1, attrs, domain)[0];
  }

  build(opsets: Record<string, number>): BuiltModel {
    const type = onnxModelType();
    const model = type.fromObject({
      irVersion: 11,
      producerName: 'ortllm',
      opsetImport: Object.entries(opsets).map(([domain, version]) => ({ domain, version })),
      graph: {
        name: this.graphName,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      },
    });
    return { modelBytes: type.encode(model).finish(), externalData: this.external };
  }
}

function valueInfo(name: string, elemType: number, dims: Dim[]): object {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function encodeAttr(name: string, v: AttrValue): object {
  if ('i' in v) return { name, type: OnnxAttrType.INT, i: v.i };
  if ('f' in v) return { name, type: OnnxAttrType.FLOAT, f: v.f };
  if ('ints' in v) return { name, type: OnnxAttrType.INTS, ints: v.ints };
  return { name, type: OnnxAttrType.STRING, s: Buffer.from(v.s, 'utf8') };
}
