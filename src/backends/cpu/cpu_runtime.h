/* Functions generated kernels call at run time, and the table that makes them (and the
 * libm functions the emitter names) resolvable by the JIT without the kiln binary
 * exporting anything.
 *
 * The helpers are the scalar conversions that are awkward to express in LLVM IR yet
 * must round exactly as the evaluator does: binary16 to and from float/double, 64-bit
 * integers to f16/bf16 with a single rounding, and the float8/float4 formats (the
 * format is base/minifloat.h's minifloat_format) both ways. Arguments and results are passed
 * as 32/64-bit integers (never i16) so no ABI question about narrow-argument extension
 * arises between LLVM's caller and the C compiler's callee. */
#ifndef KILN_BACKENDS_CPU_CPU_RUNTIME_H
#define KILN_BACKENDS_CPU_CPU_RUNTIME_H

#include <stdint.h>

typedef struct cpu_runtime_symbol {
  const char *name;
  void *address;
} cpu_runtime_symbol;

int cpu_runtime_symbol_count(void);
const cpu_runtime_symbol *cpu_runtime_symbol_at(int i);

float kiln_cpu_f16_to_f32(uint32_t h);
uint32_t kiln_cpu_f32_to_f16(float f);
uint32_t kiln_cpu_f64_to_f16(double d);
uint32_t kiln_cpu_f64_to_bf16(double d);
uint32_t kiln_cpu_s64_to_f16(int64_t v);
uint32_t kiln_cpu_u64_to_f16(uint64_t v);
uint32_t kiln_cpu_s64_to_bf16(int64_t v);
uint32_t kiln_cpu_u64_to_bf16(uint64_t v);
float kiln_cpu_minifloat_to_f32(uint32_t format, uint32_t bits);
uint32_t kiln_cpu_f64_to_minifloat(uint32_t format, double d);
uint32_t kiln_cpu_s64_to_minifloat(uint32_t format, int64_t v);
uint32_t kiln_cpu_u64_to_minifloat(uint32_t format, uint64_t v);
/* base^exp modulo 2^64 by squaring (integer power after the sign cases are handled). */
uint64_t kiln_cpu_ipow(uint64_t base, uint64_t exp);

#endif
