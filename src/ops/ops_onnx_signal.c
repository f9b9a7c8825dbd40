/* ONNX signal ops (opset 17/20): DFT, STFT, the HannWindow/HammingWindow/
 * BlackmanWindow generators and MelWeightMatrix, lowered to HLO.
 *
 * Windows depend only on their (compile-time) size, so they are constants computed on
 * the host in double precision; so is MelWeightMatrix (opset 17), from its five
 * constant inputs. STFT frames the signal with one constant-index gather,
 * applies the window, and takes each frame's DFT as two dots with constant cos/sin
 * matrices; DFT does the same along any axis, forward or inverse. A dense DFT
 * (O(N^2) per frame) rather than an FFT keeps the lowering plain HLO that every
 * backend runs; the frame lengths of audio front ends (a few hundred samples) keep it
 * cheap. The twiddle angles use (k*n mod N) so large k*n lose no precision. Output:
 * [batch, frames, bins, 2] (real, imaginary), bins = N/2+1 when onesided (real input
 * only), else N. DFT with onesided and inverse is IRFFT (numpy's irfft): the first
 * N/2+1 bins of a one-sided spectrum give N real samples, each interior bin counted
 * twice for its conjugate mirror, the imaginary parts of bins 0 and N/2 ignored. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/dtype.h"
#include "ops/ops.h"
#include "ops/ops_lib.h"

#define L(expr) OPLIB_TRY(ctx->node, expr)

static const double signal_pi = 3.14159265358979323846;

static kiln_status lower_window(op_lower_ctx *ctx) {
  const graph_tensor *size_t_in;
  double size_d;
  TRY(onnx_require_const(ctx, 0, "size", &size_t_in));
  L(oplib_tensor_scalar(size_t_in, "size", &size_d));
  if (!(size_d >= 0) || size_d > 1e8 || size_d != floor(size_d))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "size must be a non-negative integer, got %g", size_d);
  int64_t n = (int64_t)size_d;
  graph_dtype dt = GRAPH_DT_FLOAT;
  if (graph_node_attr(ctx->node, "output_datatype")) TRY(onnx_attr_dtype(ctx->node, "output_datatype", &dt));
  hlo_type ty;
  if (!graph_dtype_to_hlo(dt, &ty))
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "output_datatype has no HLO type");
  bool periodic = graph_node_attr_int_or(ctx->node, "periodic", 1) != 0;
  const char *op = graph_node_op_base(ctx->node);
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) abort();
  double denom = (double)(periodic ? n : n - 1);
  for (int64_t i = 0; i < n; i++) {
    double a = denom > 0 ? 2.0 * signal_pi * (double)i / denom : 0.0;
    if (strcmp(op, "HannWindow") == 0) {
      v[i] = 0.5 - 0.5 * cos(a);
    } else if (strcmp(op, "HammingWindow") == 0) {
      v[i] = 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * cos(a);
    } else {
      v[i] = 0.42 - 0.5 * cos(a) + 0.08 * cos(2.0 * a);
    }
  }
  hlo_instr *y;
  kiln_status st = oplib_const_f64s(ctx->comp, ty, 1, &n, v, &y);
  free(v);
  if (st) return oplib_wrap(ctx->node, st);
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* One int input of MelWeightMatrix, checked to lie in [lo, hi]. */
static kiln_status mel_int_input(op_lower_ctx *ctx, int pos, const char *what, double lo, double hi,
                                 int64_t *out) {
  const graph_tensor *t;
  double v;
  TRY(onnx_require_const(ctx, pos, what, &t));
  L(oplib_tensor_scalar(t, what, &v));
  if (!(v >= lo && v <= hi) || v != floor(v))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "%s must be an integer in [%g, %g], got %g", what, lo, hi, v);
  *out = (int64_t)v;
  return NULL;
}

/* MelWeightMatrix: a [dft_length/2 + 1, num_mel_bins] constant of triangular filters.
 * num_mel_bins + 2 edge points are spaced evenly on the mel scale
 * mel(f) = 2595 log10(1 + f/700) from lower_edge_hertz with step
 * (mel(upper) - mel(lower)) / (num_mel_bins + 2) (the spec's own spacing), and mapped
 * to bins floor((dft_length + 1) * f / sample_rate). Filter i rises linearly from edge
 * i to 1 at edge i+1 and falls to 0 at edge i+2 (a zero-width rise is a single 1). */
static kiln_status lower_mel_weight_matrix(op_lower_ctx *ctx) {
  int64_t n_mel = 0, dft_len = 0, rate = 0; /* set by mel_int_input (-O3 cannot see it) */
  TRY(mel_int_input(ctx, 0, "num_mel_bins", 1, 1e6, &n_mel));
  TRY(mel_int_input(ctx, 1, "dft_length", 1, 1e8, &dft_len));
  TRY(mel_int_input(ctx, 2, "sample_rate", 1, 1e12, &rate));
  const graph_tensor *tlo, *thi;
  double f_lo, f_hi;
  TRY(onnx_require_const(ctx, 3, "lower_edge_hertz", &tlo));
  TRY(onnx_require_const(ctx, 4, "upper_edge_hertz", &thi));
  L(oplib_tensor_scalar(tlo, "lower_edge_hertz", &f_lo));
  L(oplib_tensor_scalar(thi, "upper_edge_hertz", &f_hi));
  if (!(f_lo >= 0) || !(f_hi >= f_lo) || !isfinite(f_hi))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "need 0 <= lower_edge_hertz <= upper_edge_hertz, got %g and %g", f_lo, f_hi);
  graph_dtype dt = GRAPH_DT_FLOAT;
  if (graph_node_attr(ctx->node, "output_datatype")) TRY(onnx_attr_dtype(ctx->node, "output_datatype", &dt));
  hlo_type ty;
  if (!graph_dtype_to_hlo(dt, &ty) || ty == HLO_PRED)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "output_datatype %s is not supported", graph_dtype_name(dt));
  int64_t n_bins = dft_len / 2 + 1;
  if (n_bins * n_mel > 100000000)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "a [%lld, %lld] matrix is too large", (long long)n_bins,
                    (long long)n_mel);
  int64_t *edge = malloc((size_t)(n_mel + 2) * sizeof *edge);
  double *m = calloc((size_t)(n_bins * n_mel), sizeof *m);
  if (!edge || !m) abort();
  double mel_lo = 2595.0 * log10(1.0 + f_lo / 700.0), mel_hi = 2595.0 * log10(1.0 + f_hi / 700.0);
  double step = (mel_hi - mel_lo) / (double)(n_mel + 2);
  for (int64_t k = 0; k < n_mel + 2; k++) {
    double hz = 700.0 * (pow(10.0, (mel_lo + (double)k * step) / 2595.0) - 1.0);
    edge[k] = (int64_t)floor((double)(dft_len + 1) * hz / (double)rate);
  }
  kiln_status st = NULL;
  for (int64_t i = 0; i < n_mel && !st; i++) {
    int64_t a = edge[i], b = edge[i + 1], e = edge[i + 2];
    if (a < 0 || b >= n_bins || e > n_bins) { /* writes reach bins b and e - 1 */
      st = op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    "filter %lld reaches spectrogram bin %lld, beyond the %lld bins of dft_length %lld "
                    "(upper_edge_hertz %g above sample_rate/2?)",
                    (long long)i, (long long)(e > b ? e : b), (long long)n_bins, (long long)dft_len, f_hi);
      break;
    }
    if (b == a)
      m[b * n_mel + i] = 1.0;
    else
      for (int64_t j = a; j <= b; j++) m[j * n_mel + i] = (double)(j - a) / (double)(b - a);
    for (int64_t j = b; j < e; j++) m[j * n_mel + i] = (double)(e - j) / (double)(e - b);
  }
  hlo_instr *y = NULL;
  if (!st) {
    int64_t dims[2] = {n_bins, n_mel};
    st = oplib_const_f64s(ctx->comp, ty, 2, dims, m, &y);
    if (st) st = oplib_wrap(ctx->node, st);
  }
  free(edge);
  free(m);
  if (st) return st;
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* A [n_in, n_bins] constant: cos (or sin when `sine`) of 2*pi*k*n/N. */
static kiln_status dft_matrix(hlo_computation *c, hlo_type ty, int64_t n_fft, int64_t n_bins, bool sine,
                              hlo_instr **out) {
  double *m = malloc((size_t)(n_fft * n_bins) * sizeof *m);
  if (!m) abort();
  for (int64_t n = 0; n < n_fft; n++) {
    for (int64_t k = 0; k < n_bins; k++) {
      double a = 2.0 * signal_pi * (double)((n * k) % n_fft) / (double)n_fft;
      m[n * n_bins + k] = sine ? sin(a) : cos(a);
    }
  }
  int64_t dims[2] = {n_fft, n_bins};
  kiln_status st = oplib_const_f64s(c, ty, 2, dims, m, out);
  free(m);
  return st;
}

/* DFT along the last axis of xr/xi ([M, N]; xi NULL for a real signal) into n_bins
 * bins: X[k] = sum x[n] e^{-+i a}, a = 2 pi k n / N (sign + for the inverse, which the
 * caller scales). re = xr cos +- xi sin, im = xi cos -+ xr sin. */
static kiln_status dft_dots(hlo_computation *c, hlo_instr *xr, hlo_instr *xi, int64_t n_fft, int64_t n_bins,
                            bool inverse, hlo_instr **re, hlo_instr **im) {
  hlo_type ty = xr->shape.type;
  hlo_instr *cosm, *sinm, *t;
  TRY(dft_matrix(c, ty, n_fft, n_bins, false, &cosm));
  TRY(dft_matrix(c, ty, n_fft, n_bins, true, &sinm));
  int64_t one = 1, zero = 0;
  hlo_dot_dnums dn = {.lhs_contracting = {1, &one}, .rhs_contracting = {1, &zero}};
  TRY(hlo_build_dot(c, xr, cosm, &dn, HLO_BUILD_DEFAULT_TYPE, re));
  TRY(hlo_build_dot(c, xr, sinm, &dn, HLO_BUILD_DEFAULT_TYPE, im));
  if (!inverse) TRY(hlo_build_unary(c, HLO_OP_NEGATE, *im, im));
  if (xi) {
    TRY(hlo_build_dot(c, xi, sinm, &dn, HLO_BUILD_DEFAULT_TYPE, &t));
    TRY(hlo_build_binary(c, inverse ? HLO_OP_SUBTRACT : HLO_OP_ADD, *re, t, re));
    TRY(hlo_build_dot(c, xi, cosm, &dn, HLO_BUILD_DEFAULT_TYPE, &t));
    TRY(hlo_build_binary(c, HLO_OP_ADD, *im, t, im));
  }
  return NULL;
}

/* IRFFT of the one-sided spectrum xr + i xi ([M, K], K = N/2+1; xi NULL for a real
 * one) into [M, N] real samples: x[n] = sum_k w_k (Re X_k cos a - Im X_k sin a) / N,
 * a = 2 pi k n / N, with w_k = 2 for the bins whose mirror N-k is not in the spectrum
 * and 1 for bin 0 and (N even) bin N/2. Those two bins get sin exactly 0, so their
 * imaginary parts drop out as numpy's irfft drops them, and the 1/N scaling lives in
 * the matrices. */
static kiln_status irfft_dots(hlo_computation *c, hlo_instr *xr, hlo_instr *xi, int64_t n_fft, hlo_instr **y) {
  int64_t K = n_fft / 2 + 1;
  double *cm = malloc((size_t)(K * n_fft) * sizeof *cm), *sm = malloc((size_t)(K * n_fft) * sizeof *sm);
  if (!cm || !sm) abort();
  for (int64_t k = 0; k < K; k++) {
    bool self_mirror = k == 0 || 2 * k == n_fft;
    double w = (self_mirror ? 1.0 : 2.0) / (double)n_fft;
    for (int64_t n = 0; n < n_fft; n++) {
      double a = 2.0 * signal_pi * (double)((n * k) % n_fft) / (double)n_fft;
      cm[k * n_fft + n] = w * cos(a);
      sm[k * n_fft + n] = self_mirror ? 0.0 : -w * sin(a);
    }
  }
  hlo_type ty = xr->shape.type;
  int64_t dims[2] = {K, n_fft};
  hlo_instr *cosm = NULL, *sinm = NULL;
  kiln_status st = oplib_const_f64s(c, ty, 2, dims, cm, &cosm);
  if (!st && xi) st = oplib_const_f64s(c, ty, 2, dims, sm, &sinm);
  free(cm);
  free(sm);
  if (st) return st;
  int64_t one = 1, zero = 0;
  hlo_dot_dnums dn = {.lhs_contracting = {1, &one}, .rhs_contracting = {1, &zero}};
  TRY(hlo_build_dot(c, xr, cosm, &dn, HLO_BUILD_DEFAULT_TYPE, y));
  if (xi) {
    hlo_instr *t;
    TRY(hlo_build_dot(c, xi, sinm, &dn, HLO_BUILD_DEFAULT_TYPE, &t));
    TRY(hlo_build_binary(c, HLO_OP_ADD, *y, t, y));
  }
  return NULL;
}

static kiln_status lower_stft(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x, *window = onnx_input(ctx, 2);
  TRY(onnx_require_input(ctx, 0, &x));
  /* The window's position is in the constant mask (frame_length may shift onto it), so
   * it may arrive by value only. */
  if (!window && onnx_const_input(ctx, 2)) L(oplib_const_tensor(c, onnx_const_input(ctx, 2), &window));
  const graph_tensor *step_t;
  double step_d;
  TRY(onnx_require_const(ctx, 1, "frame_step", &step_t));
  L(oplib_tensor_scalar(step_t, "frame_step", &step_d));
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "signal must be floating-point");
  if (x->shape.rank != 3 || (x->shape.dims[2] != 1 && x->shape.dims[2] != 2))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "signal must be [batch, length, 1 or 2]");
  int64_t B = x->shape.dims[0], len = x->shape.dims[1], C = x->shape.dims[2];
  int64_t n_fft = -1;
  if (onnx_has_input(ctx, 3)) {
    const graph_tensor *fl;
    double fl_d;
    TRY(onnx_require_const(ctx, 3, "frame_length", &fl));
    L(oplib_tensor_scalar(fl, "frame_length", &fl_d));
    if (!(fl_d >= 1) || fl_d > 1e8 || fl_d != floor(fl_d))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "frame_length must be a positive integer");
    n_fft = (int64_t)fl_d;
  }
  if (window) {
    if (window->shape.rank != 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "window must be 1-D");
    if (n_fft < 0) n_fft = window->shape.dims[0];
    if (window->shape.dims[0] != n_fft)
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "window has %lld entries, frame_length is %lld",
                      (long long)window->shape.dims[0], (long long)n_fft);
  }
  if (n_fft < 1) return op_error(ctx->node, KILN_INVALID_ARGUMENT, "needs a window or a frame_length");
  if (!(step_d >= 1) || step_d > 1e12 || step_d != floor(step_d))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "frame_step must be a positive integer");
  int64_t step = (int64_t)step_d;
  if (n_fft > len)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "frame_length %lld exceeds the signal length %lld",
                    (long long)n_fft, (long long)len);
  bool onesided = graph_node_attr_int_or(ctx->node, "onesided", 1) != 0;
  if (onesided && C == 2)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "onesided output needs a real signal");
  int64_t frames = (len - n_fft) / step + 1;
  int64_t bins = onesided ? n_fft / 2 + 1 : n_fft;
  if (frames > (int64_t)1 << 24 || frames * n_fft > (int64_t)1 << 28)
    return op_error(ctx->node, KILN_UNIMPLEMENTED, "too many frames");
  hlo_type ty = x->shape.type;

  /* Frames: x[:, f*step + n, :] gathered as [B, frames*n_fft, C] then [B, F, N, C]. */
  int64_t *idx = malloc((size_t)(frames * n_fft) * sizeof *idx);
  if (!idx) abort();
  for (int64_t f = 0; f < frames; f++)
    for (int64_t n = 0; n < n_fft; n++) idx[f * n_fft + n] = f * step + n;
  hlo_instr *fr;
  kiln_status st = oplib_take_constant(c, x, 1, frames * n_fft, idx, &fr);
  free(idx);
  if (st) return oplib_wrap(ctx->node, st);
  int64_t fdims[4] = {B, frames, n_fft, C};
  L(hlo_build_reshape(c, fr, 4, fdims, &fr));
  if (window) {
    hlo_instr *wb;
    int64_t wdim = 2;
    L(oplib_convert(c, window, ty, &window));
    L(hlo_build_broadcast(c, window, 4, fdims, &wdim, &wb));
    L(hlo_build_binary(c, HLO_OP_MULTIPLY, fr, wb, &fr));
  }
  int64_t flat[2] = {B * frames, n_fft};
  hlo_instr *xr, *xi = NULL;
  L(oplib_slice_axis(c, fr, 3, 0, 1, &xr));
  L(hlo_build_reshape(c, xr, 2, flat, &xr));
  if (C == 2) {
    L(oplib_slice_axis(c, fr, 3, 1, 2, &xi));
    L(hlo_build_reshape(c, xi, 2, flat, &xi));
  }
  hlo_instr *re, *im;
  L(dft_dots(c, xr, xi, n_fft, bins, false, &re, &im));
  int64_t odims[4] = {B, frames, bins, 1};
  L(hlo_build_reshape(c, re, 4, odims, &re));
  L(hlo_build_reshape(c, im, 4, odims, &im));
  hlo_instr *parts[2] = {re, im}, *y;
  L(hlo_build_concatenate(c, 2, parts, 3, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

/* DFT (opset 17: axis attribute, default 1; opset 20: axis input, default -2). The
 * signal is [..., N, 1 or 2] with the transformed axis anywhere but the last; it is
 * moved next to the complex axis, flattened to [M, N, C], cropped or zero-padded to
 * dft_length (IRFFT: to dft_length/2+1 bins, its default dft_length being
 * 2 * (bins - 1), as the spec and numpy's irfft say), transformed with dft_dots or
 * irfft_dots and moved back. Forward onesided takes the first N/2+1 bins of the full
 * transform, so a complex input works too (as onnx's reference runs it), and an IRFFT
 * of a real-only spectrum reads its imaginary parts as zeros. */
static kiln_status lower_dft(op_lower_ctx *ctx) {
  hlo_computation *c = ctx->comp;
  hlo_instr *x;
  TRY(onnx_require_input(ctx, 0, &x));
  int r = x->shape.rank;
  if (!hlo_type_is_float(x->shape.type))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be floating-point");
  if (r < 2 || (x->shape.dims[r - 1] != 1 && x->shape.dims[r - 1] != 2))
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "input must be [..., N, 1 or 2]");
  int64_t axis;
  if (ctx->opset >= 20) {
    axis = -2;
    if (onnx_has_input(ctx, 2)) {
      const graph_tensor *at;
      double ad;
      TRY(onnx_require_const(ctx, 2, "axis", &at));
      L(oplib_tensor_scalar(at, "axis", &ad));
      axis = (int64_t)ad;
    }
  } else {
    axis = graph_node_attr_int_or(ctx->node, "axis", 1);
  }
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r - 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT, "axis is out of range for a rank-%d input", r);
  bool inverse = graph_node_attr_int_or(ctx->node, "inverse", 0) != 0;
  bool onesided = graph_node_attr_int_or(ctx->node, "onesided", 0) != 0;
  bool irfft = inverse && onesided;
  int64_t n_sig = x->shape.dims[axis], n_fft = irfft ? 2 * (n_sig - 1) : n_sig;
  if (onnx_has_input(ctx, 1)) {
    const graph_tensor *lt;
    double ld;
    TRY(onnx_require_const(ctx, 1, "dft_length", &lt));
    L(oplib_tensor_scalar(lt, "dft_length", &ld));
    if (!(ld >= 1) || ld > 1e8 || ld != floor(ld))
      return op_error(ctx->node, KILN_INVALID_ARGUMENT, "dft_length must be a positive integer");
    n_fft = (int64_t)ld;
  }
  if (n_fft < 1)
    return op_error(ctx->node, KILN_INVALID_ARGUMENT,
                    irfft ? "an inverse onesided DFT of %lld bins needs a dft_length"
                          : "the transformed axis is empty (%lld entries)",
                    (long long)n_sig);
  int64_t C = x->shape.dims[r - 1];
  /* Entries of the input axis the transform reads, and of the output axis. */
  int64_t n_read = irfft ? n_fft / 2 + 1 : n_fft;
  int64_t bins = irfft ? n_fft : onesided ? n_fft / 2 + 1 : n_fft;
  /* Move axis to r-2. */
  int64_t perm[HLO_MAX_RANK], inv[HLO_MAX_RANK], dims[HLO_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[k++] = i;
  perm[k++] = axis;
  perm[k++] = r - 1;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  L(oplib_transpose(c, x, perm, &x));
  int64_t m = 1;
  for (int i = 0; i < r - 2; i++) m *= x->shape.dims[i];
  for (int i = 0; i < r; i++) dims[i] = x->shape.dims[i];
  int64_t flat3[3] = {m, n_sig, C};
  L(hlo_build_reshape(c, x, 3, flat3, &x));
  if (n_read != n_sig) { /* a negative high pad crops */
    hlo_instr *zero;
    int64_t lo[3] = {0, 0, 0}, hi[3] = {0, n_read - n_sig, 0};
    L(oplib_scalar(c, x->shape.type, 0, &zero));
    L(hlo_build_pad(c, x, zero, lo, hi, NULL, &x));
  }
  int64_t flat[2] = {m, n_read};
  hlo_instr *xr, *xi = NULL, *re, *im;
  L(oplib_slice_axis(c, x, 2, 0, 1, &xr));
  L(hlo_build_reshape(c, xr, 2, flat, &xr));
  if (C == 2) {
    L(oplib_slice_axis(c, x, 2, 1, 2, &xi));
    L(hlo_build_reshape(c, xi, 2, flat, &xi));
  }
  hlo_instr *y;
  int64_t o3[3] = {m, bins, 1};
  if (irfft) {
    L(irfft_dots(c, xr, xi, n_fft, &y));
    L(hlo_build_reshape(c, y, 3, o3, &y));
  } else {
    L(dft_dots(c, xr, xi, n_fft, bins, inverse, &re, &im));
    if (inverse) {
      L(oplib_binary_scalar(c, HLO_OP_DIVIDE, re, (double)n_fft, &re));
      L(oplib_binary_scalar(c, HLO_OP_DIVIDE, im, (double)n_fft, &im));
    }
    L(hlo_build_reshape(c, re, 3, o3, &re));
    L(hlo_build_reshape(c, im, 3, o3, &im));
    hlo_instr *parts[2] = {re, im};
    L(hlo_build_concatenate(c, 2, parts, 2, &y));
  }
  dims[r - 2] = bins;
  dims[r - 1] = irfft ? 1 : 2;
  L(hlo_build_reshape(c, y, r, dims, &y));
  L(oplib_transpose(c, y, inv, &y));
  if (ctx->n_outputs > 0) ctx->outputs[0] = y;
  return NULL;
}

static const op_def onnx_signal_defs[] = {
    {"onnx.BlackmanWindow", 0, 1, lower_window, NULL},
    /* dft_length and (opset 20) axis, which may shift down when dft_length is absent. */
    {"onnx.DFT", 0, 2 | 4, lower_dft, NULL},
    {"onnx.HammingWindow", 0, 1, lower_window, NULL},
    {"onnx.HannWindow", 0, 1, lower_window, NULL},
    {"onnx.MelWeightMatrix", 0, 0x1f, lower_mel_weight_matrix, NULL},
    /* frame_step, and frame_length (which may shift down when window is absent). */
    {"onnx.STFT", 0, 2 | 4 | 8, lower_stft, NULL},
};

const op_table onnx_signal_ops = {"onnx.signal", (int)(sizeof onnx_signal_defs / sizeof onnx_signal_defs[0]),
                                  onnx_signal_defs};
