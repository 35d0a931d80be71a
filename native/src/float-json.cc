// float32Json(v: Float32Array): the JSON text JSON.stringify(Array.from(v)) writes, byte for byte,
// without building the array of doubles or V8's per-number formatting. Each value is widened to
// double (as Array.from does) and printed as ECMAScript's Number::toString prints it: the
// shortest digits that read back as the same double (std::to_chars' shortest form picks the same
// digits: the fewest, then the nearest to the value), laid out in plain or exponent form by the
// exponent's range; -0 prints as 0, NaN and the infinities as null (JSON has neither).
// Its own addon (ortllm_json.node) so the HTTP thread loads no kernels; serving/pooling/float-json.ts
// falls back to JSON.stringify without it. Figures in that file's header.
#include <node_api.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace {

// Appends Number::toString(x) for finite x (ECMA-262 Number::toString, radix 10).
char* writeNumber(char* p, double x) {
  if (x == 0) {
    *p++ = '0';
    return p;
  }
  if (x < 0) {
    *p++ = '-';
    x = -x;
  }
  char sci[32];
  char* end = std::to_chars(sci, sci + sizeof sci, x, std::chars_format::scientific).ptr;
  // sci is d[.ddd]e±XX: the k significant digits s and the exponent of the first, n - 1.
  char digits[20];
  int k = 0;
  const char* c = sci;
  for (; *c != 'e'; c++)
    if (*c != '.') digits[k++] = *c;
  int exponent = 0;
  std::from_chars(c + (c[1] == '+' ? 2 : 1), end, exponent);
  const int n = exponent + 1;
  if (k <= n && n <= 21) {
    std::memcpy(p, digits, k);
    p += k;
    for (int i = k; i < n; i++) *p++ = '0';
  } else if (0 < n && n <= 21) {
    std::memcpy(p, digits, n);
    p += n;
    *p++ = '.';
    std::memcpy(p, digits + n, k - n);
    p += k - n;
  } else if (-6 < n && n <= 0) {
    *p++ = '0';
    *p++ = '.';
    for (int i = 0; i < -n; i++) *p++ = '0';
    std::memcpy(p, digits, k);
    p += k;
  } else {
    *p++ = digits[0];
    if (k > 1) {
      *p++ = '.';
      std::memcpy(p, digits + 1, k - 1);
      p += k - 1;
    }
    *p++ = 'e';
    *p++ = n - 1 < 0 ? '-' : '+';
    p = std::to_chars(p, p + 4, n - 1 < 0 ? 1 - n : n - 1).ptr;
  }
  return p;
}

napi_value Float32Json(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  bool isTyped = false;
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 1 || napi_is_typedarray(env, argv[0], &isTyped) != napi_ok || !isTyped ||
      napi_get_typedarray_info(env, argv[0], &type, &length, &data, nullptr, nullptr) != napi_ok || type != napi_float32_array) {
    napi_throw_type_error(env, nullptr, "float32Json: expected a Float32Array");
    return nullptr;
  }
  const float* v = static_cast<const float*>(data);
  // A double's longest form: -d.dddddddddddddddde-XXX (24), or 0.00000ddddddddddddddddd (-6 < n <= 0: 25), plus the comma.
  std::string text(2 + length * 27, '\0');
  char* p = text.data();
  *p++ = '[';
  for (size_t i = 0; i < length; i++) {
    if (i > 0) *p++ = ',';
    const double x = v[i];
    if (std::isfinite(x)) {
      p = writeNumber(p, x);
    } else {
      std::memcpy(p, "null", 4);
      p += 4;
    }
  }
  *p++ = ']';
  napi_value out;
  if (napi_create_string_latin1(env, text.data(), p - text.data(), &out) != napi_ok) return nullptr;
  return out;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {{"float32Json", nullptr, Float32Json, nullptr, nullptr, nullptr, napi_default, nullptr}};
  napi_define_properties(env, exports, 1, props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
