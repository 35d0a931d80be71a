// The subset of onnx.proto (ONNX 1.18, IR 11) needed to emit a model, parsed with protobufjs.
// Field numbers follow onnx/onnx.proto; everything we do not emit is left out.
import * as protobuf from 'protobufjs';

const ONNX_SCHEMA = `
syntax = "proto3";
package onnx;
message AttributeProto {
  enum AttributeType { UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5;
    FLOATS = 6; INTS = 7; STRINGS = 8; TENSORS = 9; GRAPHS = 10; }
  string name = 1;
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  TensorProto t = 5;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
  AttributeType type = 20;
}
message ValueInfoProto { string name = 1; TypeProto type = 2; }
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  repeated AttributeProto attribute = 5;
  string domain = 7;
}
message StringStringEntryProto { string key = 1; string value = 2; }
message TensorProto {
  enum DataLocation { DEFAULT = 0; EXTERNAL = 1; }
  repeated int64 dims = 1;
  int32 data_type = 2;
  repeated float float_data = 4;
  repeated int64 int64_data = 7;
  string name = 8;
  bytes raw_data = 9;
  repeated StringStringEntryProto external_data = 13;
  DataLocation data_location = 14;
}
message TensorShapeProto {
  message Dimension { oneof value { int64 dim_value = 1; string dim_param = 2; } }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { int32 elem_type = 1; TensorShapeProto shape = 2; }
  oneof value { Tensor tensor_type = 1; }
}
message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message OperatorSetIdProto { string domain = 1; int64 version = 2; }
message ModelProto {
  int64 ir_version = 1;
  string producer_name = 2;
  GraphProto graph = 7;
  repeated OperatorSetIdProto opset_import = 8;
}
`;

let modelType: protobuf.Type | null = null;

/** The protobufjs type of onnx.ModelProto (parsed once). */
export function onnxModelType(): protobuf.Type {
  if (!modelType) modelType = protobuf.parse(ONNX_SCHEMA).root.lookupType('onnx.ModelProto');
  return modelType;
}

/** ONNX TensorProto.DataType values we use. */
export const OnnxDataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FLOAT16: 10,
} as const;
export type OnnxDataTypeId = (typeof OnnxDataType)[keyof typeof OnnxDataType];

/** AttributeProto.AttributeType values. */
export const OnnxAttrType = { FLOAT: 1, INT: 2, STRING: 3, FLOATS: 6, INTS: 7 } as const;
