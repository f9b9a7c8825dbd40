/* classify: runs an image classifier through kiln's C API and prints the top classes.
 *
 *   classify MODEL IMAGE.ppm [K]
 *
 * MODEL is anything kiln loads (ONNX, TensorFlow GraphDef, TF.js model.json) that takes
 * one float32 image batch, NCHW or NHWC (the dimension that is 3 decides), and gives
 * class scores. IMAGE is a binary PPM (P6; `convert photo.jpg -depth 8 photo.ppm`),
 * resized (nearest neighbour) to the model's input size and normalised with the
 * ImageNet mean and standard deviation. Prints K (default 5) lines "CLASS_INDEX SCORE",
 * best first; the scores are probabilities (softmax applied unless the model already
 * outputs a distribution). */
#include <kiln/kiln.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                   \
  do {                                                                \
    kiln_status s_ = (call);                                          \
    if (s_) {                                                         \
      fprintf(stderr, "classify: %s\n", kiln_status_message(s_));     \
      kiln_status_free(s_);                                           \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

static void die(const char *what, const char *path) {
  fprintf(stderr, "classify: %s: %s\n", path, what);
  exit(1);
}

/* The next header number of a PPM file, skipping whitespace and # comments. */
static long ppm_number(FILE *f) {
  int c = fgetc(f);
  while (c == '#' || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
    if (c == '#') while (c != '\n' && c != EOF) c = fgetc(f);
    c = fgetc(f);
  }
  long v = -1;
  for (; c >= '0' && c <= '9' && v < 100000; c = fgetc(f)) v = (v < 0 ? 0 : v * 10) + (c - '0');
  return v; /* the one whitespace byte after the number is consumed */
}

/* Reads a binary PPM (P6, maxval <= 255): width * height RGB triples, row-major. */
static unsigned char *read_ppm(const char *path, long *w, long *h) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open", path);
  if (fgetc(f) != 'P' || fgetc(f) != '6') die("not a binary PPM (P6)", path);
  *w = ppm_number(f), *h = ppm_number(f);
  long maxval = ppm_number(f);
  if (*w <= 0 || *h <= 0 || maxval <= 0 || maxval > 255) die("unsupported PPM header", path);
  size_t n = (size_t)*w * (size_t)*h * 3;
  unsigned char *rgb = malloc(n);
  if (!rgb || fread(rgb, 1, n, f) != n) die("truncated pixel data", path);
  fclose(f);
  return rgb;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: classify MODEL IMAGE.ppm [K]\n");
    return 2;
  }
  int top_k = argc == 4 ? atoi(argv[3]) : 5;

  kiln_model *model;
  CHECK(kiln_model_load(argv[1], NULL, &model));

  /* What the model takes: [N, 3, H, W] or [N, H, W, 3]; a dynamic dim gets 1 or 224. */
  kiln_value in = KILN_VALUE_INIT;
  CHECK(kiln_model_input(model, 0, &in));
  if (in.rank != 4 || in.dtype != KILN_FLOAT32) die("expected one float32 input of rank 4", argv[1]);
  int nchw = in.dims[1] == 3;
  if (!nchw && in.dims[3] != 3) die("input has no dimension of 3 channels at 1 or 3", argv[1]);
  int64_t dims[4];
  for (int i = 0; i < 4; i++) dims[i] = in.dims[i] >= 0 ? in.dims[i] : i == 0 ? 1 : 224;
  if (dims[0] != 1) die("expected batch size 1", argv[1]);
  long oh = (long)(nchw ? dims[2] : dims[1]), ow = (long)(nchw ? dims[3] : dims[2]);

  /* The image: nearest-neighbour resize to oh x ow, then (x / 255 - mean) / std. */
  long iw, ih;
  unsigned char *rgb = read_ppm(argv[2], &iw, &ih);
  static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdev[3] = {0.229f, 0.224f, 0.225f};
  float *pixels = malloc((size_t)(oh * ow * 3) * sizeof *pixels);
  if (!pixels) die("out of memory", argv[2]);
  for (long y = 0; y < oh; y++) {
    long sy = (2 * y + 1) * ih / (2 * oh); /* the source pixel whose centre is nearest */
    for (long x = 0; x < ow; x++) {
      long sx = (2 * x + 1) * iw / (2 * ow);
      for (int c = 0; c < 3; c++) {
        float v = ((float)rgb[(sy * iw + sx) * 3 + c] / 255.0f - mean[c]) / stdev[c];
        pixels[nchw ? (c * oh + y) * ow + x : (y * ow + x) * 3 + c] = v;
      }
    }
  }
  free(rgb);
  in.dims = dims;
  in.data = pixels;
  in.byte_size = (size_t)(oh * ow * 3) * sizeof *pixels;

  /* Run; take the first output. */
  kiln_value out_info = KILN_VALUE_INIT;
  CHECK(kiln_model_output(model, 0, &out_info));
  kiln_tensor *out;
  CHECK(kiln_model_run(model, NULL, 1, &in, 1, &out_info.name, &out));
  if (kiln_tensor_dtype(out) != KILN_FLOAT32) die("expected float32 scores", argv[1]);
  const float *scores = kiln_tensor_data(out);
  int64_t n = kiln_tensor_element_count(out);

  /* Probabilities: softmax unless the scores already form a distribution. */
  double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  if (!p) die("out of memory", argv[1]);
  double sum = 0, max = -INFINITY;
  int is_distribution = n > 0;
  for (int64_t i = 0; i < n; i++) {
    sum += scores[i];
    if (scores[i] > max) max = scores[i];
    if (scores[i] < 0 || scores[i] > 1) is_distribution = 0;
  }
  if (fabs(sum - 1.0) > 1e-3) is_distribution = 0;
  double z = 0;
  for (int64_t i = 0; i < n; i++) z += p[i] = is_distribution ? scores[i] : exp(scores[i] - max);
  for (int64_t i = 0; i < n; i++) p[i] /= is_distribution ? 1.0 : z;

  /* The top K, best first (ties: lower index first). */
  for (int k = 0; k < top_k && k < n; k++) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++)
      if (p[i] >= 0 && (best < 0 || p[i] > p[best])) best = i;
    printf("%lld %.6f\n", (long long)best, p[best]);
    p[best] = -1;
  }

  free(p);
  free(pixels);
  kiln_tensor_free(out);
  kiln_model_free(model);
  return 0;
}
