/* Run-time helpers of generated kernels and the JIT's symbol table (see cpu_runtime.h):
 * thin wrappers over base/half.h and base/minifloat.h, the conversions the evaluator
 * uses, so the two agree bit for bit. */
#include "backends/cpu/cpu_runtime.h"

#include <math.h>

#include "base/half.h"
#include "base/minifloat.h"

float kiln_cpu_f16_to_f32(uint32_t h) { return f16_to_f32((uint16_t)h); }
uint32_t kiln_cpu_f32_to_f16(float f) { return f32_to_f16(f); }
uint32_t kiln_cpu_f64_to_f16(double d) { return f64_to_f16(d); }
uint32_t kiln_cpu_f64_to_bf16(double d) { return f64_to_bf16(d); }

uint32_t kiln_cpu_s64_to_f16(int64_t v) { return s64_to_f16(v); }
uint32_t kiln_cpu_u64_to_f16(uint64_t v) { return u64_to_f16(v); }
uint32_t kiln_cpu_s64_to_bf16(int64_t v) { return s64_to_bf16(v); }
uint32_t kiln_cpu_u64_to_bf16(uint64_t v) { return u64_to_bf16(v); }

float kiln_cpu_minifloat_to_f32(uint32_t format, uint32_t bits) {
  return minifloat_to_f32((minifloat_format)format, (uint8_t)bits);
}
uint32_t kiln_cpu_f64_to_minifloat(uint32_t format, double d) { return minifloat_from_f64((minifloat_format)format, d); }
/* 64-bit integers through a round-to-odd double, as the evaluator's convert does. */
uint32_t kiln_cpu_s64_to_minifloat(uint32_t format, int64_t v) {
  return minifloat_from_f64((minifloat_format)format, half_s64_to_odd_double(v));
}
uint32_t kiln_cpu_u64_to_minifloat(uint32_t format, uint64_t v) {
  return minifloat_from_f64((minifloat_format)format, half_u64_to_odd_double(v));
}

uint64_t kiln_cpu_ipow(uint64_t base, uint64_t exp) {
  uint64_t r = 1;
  while (exp) {
    if (exp & 1) r *= base;
    base *= base;
    exp >>= 1;
  }
  return r;
}

#define SYM(f) {#f, (void *)(f)}
static const cpu_runtime_symbol symbols[] = {
    SYM(kiln_cpu_f16_to_f32), SYM(kiln_cpu_f32_to_f16), SYM(kiln_cpu_f64_to_f16), SYM(kiln_cpu_f64_to_bf16),
    SYM(kiln_cpu_s64_to_f16), SYM(kiln_cpu_u64_to_f16), SYM(kiln_cpu_s64_to_bf16), SYM(kiln_cpu_u64_to_bf16),
    SYM(kiln_cpu_minifloat_to_f32), SYM(kiln_cpu_f64_to_minifloat), SYM(kiln_cpu_s64_to_minifloat),
    SYM(kiln_cpu_u64_to_minifloat), SYM(kiln_cpu_ipow),
    SYM(expf), SYM(exp), SYM(expm1f), SYM(expm1), SYM(logf), SYM(log), SYM(log1pf), SYM(log1p),
    SYM(sinf), SYM(sin), SYM(cosf), SYM(cos), SYM(tanf), SYM(tan), SYM(tanhf), SYM(tanh),
    SYM(cbrtf), SYM(cbrt), SYM(erff), SYM(erf), SYM(powf), SYM(pow), SYM(fmodf), SYM(fmod),
    SYM(atan2f), SYM(atan2),
};
#undef SYM

int cpu_runtime_symbol_count(void) { return (int)(sizeof symbols / sizeof symbols[0]); }
const cpu_runtime_symbol *cpu_runtime_symbol_at(int i) { return &symbols[i]; }
