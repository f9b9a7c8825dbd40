/* HLO opcodes with their text names, as XLA spells them.
 *
 * The table covers every opcode the text parser accepts. Arity is the fixed operand
 * count, or -1 for variadic ops; the verifier checks it. Opcodes the evaluator does not
 * implement (collectives, infeed, rng…) still parse, print and verify so that XLA dumps
 * load; executing them is a clear UNIMPLEMENTED error. */
#ifndef KILN_HLO_OPCODE_H
#define KILN_HLO_OPCODE_H

#include <stdbool.h>
#include <stddef.h>

/* X(ENUM, "text", arity) */
#define HLO_OPCODE_LIST(X)                                    \
  X(ABS, "abs", 1)                                            \
  X(ADD, "add", 2)                                            \
  X(ADD_DEPENDENCY, "add-dependency", 2)                      \
  X(AFTER_ALL, "after-all", -1)                               \
  X(ALL_GATHER, "all-gather", -1)                             \
  X(ALL_REDUCE, "all-reduce", -1)                             \
  X(ALL_TO_ALL, "all-to-all", -1)                             \
  X(AND, "and", 2)                                            \
  X(ASYNC_START, "async-start", -1)                           \
  X(ASYNC_UPDATE, "async-update", 1)                          \
  X(ASYNC_DONE, "async-done", 1)                              \
  X(ATAN2, "atan2", 2)                                        \
  X(BATCH_NORM_GRAD, "batch-norm-grad", 5)                    \
  X(BATCH_NORM_INFERENCE, "batch-norm-inference", 5)          \
  X(BATCH_NORM_TRAINING, "batch-norm-training", 3)            \
  X(BITCAST, "bitcast", 1)                                    \
  X(BITCAST_CONVERT, "bitcast-convert", 1)                    \
  X(BROADCAST, "broadcast", 1)                                \
  X(CALL, "call", -1)                                         \
  X(CBRT, "cbrt", 1)                                          \
  X(CEIL, "ceil", 1)                                          \
  X(CHOLESKY, "cholesky", 1)                                  \
  X(CLAMP, "clamp", 3)                                        \
  X(CLZ, "count-leading-zeros", 1)                            \
  X(COLLECTIVE_PERMUTE, "collective-permute", -1)             \
  X(COMPARE, "compare", 2)                                    \
  X(CONCATENATE, "concatenate", -1)                           \
  X(CONDITIONAL, "conditional", -1)                           \
  X(CONSTANT, "constant", 0)                                  \
  X(CONVERT, "convert", 1)                                    \
  X(CONVOLUTION, "convolution", 2)                            \
  X(COPY, "copy", 1)                                          \
  X(COPY_START, "copy-start", 1)                              \
  X(COPY_DONE, "copy-done", 1)                                \
  X(COSINE, "cosine", 1)                                      \
  X(CUSTOM_CALL, "custom-call", -1)                           \
  X(DIVIDE, "divide", 2)                                      \
  X(DOMAIN, "domain", 1)                                      \
  X(DOT, "dot", 2)                                            \
  X(DYNAMIC_RESHAPE, "dynamic-reshape", -1)                   \
  X(DYNAMIC_SLICE, "dynamic-slice", -1)                       \
  X(DYNAMIC_UPDATE_SLICE, "dynamic-update-slice", -1)         \
  X(ERF, "erf", 1)                                            \
  X(EXP, "exponential", 1)                                    \
  X(EXPM1, "exponential-minus-one", 1)                        \
  X(FFT, "fft", 1)                                            \
  X(FLOOR, "floor", 1)                                        \
  X(FUSION, "fusion", -1)                                     \
  X(GATHER, "gather", 2)                                      \
  X(GET_DIMENSION_SIZE, "get-dimension-size", 1)              \
  X(GET_TUPLE_ELEMENT, "get-tuple-element", 1)                \
  X(INFEED, "infeed", 1)                                      \
  X(IOTA, "iota", 0)                                          \
  X(IS_FINITE, "is-finite", 1)                                \
  X(LOG, "log", 1)                                            \
  X(LOG1P, "log-plus-one", 1)                                 \
  X(LOGISTIC, "logistic", 1)                                  \
  X(MAP, "map", -1)                                           \
  X(MAXIMUM, "maximum", 2)                                    \
  X(MINIMUM, "minimum", 2)                                    \
  X(MULTIPLY, "multiply", 2)                                  \
  X(NEGATE, "negate", 1)                                      \
  X(NOT, "not", 1)                                            \
  X(OPTIMIZATION_BARRIER, "opt-barrier", 1)                   \
  X(OR, "or", 2)                                              \
  X(OUTFEED, "outfeed", 2)                                    \
  X(PAD, "pad", 2)                                            \
  X(PARAMETER, "parameter", 0)                                \
  X(PARTITION_ID, "partition-id", 0)                          \
  X(POPCNT, "popcnt", 1)                                      \
  X(POWER, "power", 2)                                        \
  X(RECV, "recv", 1)                                          \
  X(RECV_DONE, "recv-done", 1)                                \
  X(REDUCE, "reduce", -1)                                     \
  X(REDUCE_PRECISION, "reduce-precision", 1)                  \
  X(REDUCE_SCATTER, "reduce-scatter", -1)                     \
  X(REDUCE_WINDOW, "reduce-window", -1)                       \
  X(REMAINDER, "remainder", 2)                                \
  X(REPLICA_ID, "replica-id", 0)                              \
  X(RESHAPE, "reshape", 1)                                    \
  X(REVERSE, "reverse", 1)                                    \
  X(RNG, "rng", 2)                                            \
  X(RNG_BIT_GENERATOR, "rng-bit-generator", 1)                \
  X(RNG_GET_AND_UPDATE_STATE, "rng-get-and-update-state", 0)  \
  X(ROUND_NEAREST_AFZ, "round-nearest-afz", 1)                \
  X(ROUND_NEAREST_EVEN, "round-nearest-even", 1)              \
  X(RSQRT, "rsqrt", 1)                                        \
  X(SCATTER, "scatter", -1)                                   \
  X(SELECT, "select", 3)                                      \
  X(SELECT_AND_SCATTER, "select-and-scatter", 3)              \
  X(SEND, "send", 2)                                          \
  X(SEND_DONE, "send-done", 1)                                \
  X(SET_DIMENSION_SIZE, "set-dimension-size", 2)              \
  X(SHIFT_LEFT, "shift-left", 2)                              \
  X(SHIFT_RIGHT_ARITHMETIC, "shift-right-arithmetic", 2)      \
  X(SHIFT_RIGHT_LOGICAL, "shift-right-logical", 2)            \
  X(SIGN, "sign", 1)                                          \
  X(SINE, "sine", 1)                                          \
  X(SLICE, "slice", 1)                                        \
  X(SORT, "sort", -1)                                         \
  X(SQRT, "sqrt", 1)                                          \
  X(STOCHASTIC_CONVERT, "stochastic-convert", 2)              \
  X(SUBTRACT, "subtract", 2)                                  \
  X(TAN, "tan", 1)                                            \
  X(TANH, "tanh", 1)                                          \
  X(TOPK, "topk", 1)                                          \
  X(TRANSPOSE, "transpose", 1)                                \
  X(TRIANGULAR_SOLVE, "triangular-solve", 2)                  \
  X(TUPLE, "tuple", -1)                                       \
  X(WHILE, "while", 1)                                        \
  X(XOR, "xor", 2)

typedef enum hlo_opcode {
#define X(e, n, a) HLO_OP_##e,
  HLO_OPCODE_LIST(X)
#undef X
  HLO_OP_COUNT
} hlo_opcode;

const char *hlo_opcode_name(hlo_opcode op);
bool hlo_opcode_from_name(const char *name, size_t len, hlo_opcode *out);
/* Fixed operand count, or -1 when variadic. */
int hlo_opcode_arity(hlo_opcode op);
/* Elementwise ops whose output shape equals the (common) operand shape, element type
 * aside: unary math, binary arithmetic/logic, compare, select, clamp, convert… */
bool hlo_opcode_is_elementwise(hlo_opcode op);

#endif
