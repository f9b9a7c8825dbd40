/* Unit tests for the cpu backend's native kernels that are not sorts or scatters
 * (those have tests/hlo/test_cpu_sort.py and test_cpu_scatter.py): the cumulative
 * reduce-window scan (cpu_scan.c), dynamic-update-slice and dynamic-slice
 * (cpu_update_slice.c). Each module must run on cpu bit for bit like the evaluator on
 * pseudo-random inputs, and the profile says which thunks were native -- and which were
 * not (a reversed cumsum, which would associate its sums the other way, and a slice of
 * rows too short for memcpy stay generated kernels). */
#include <stdlib.h>

#include "check.h"
#include "check_util.h"

#define SUM_F32 "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"

static void test_cumsum_over_the_minor_dim_is_a_running_fold(void) {
  check_cpu_like_evaluator("HloModule cumsum\n\n" SUM_F32
                           "ENTRY main {\n  x = f32[3,50] parameter(0)\n  z = f32[] constant(0)\n"
                           "  ROOT r = f32[3,50] reduce-window(x, z), window={size=1x50 pad=0_0x49_0}, to_apply=add\n}\n",
                           (const char *const[]){"native r reduce-window", NULL});
}

/* A window longer than the dimension still covers exactly 0..j. */
static void test_cumsum_with_a_window_longer_than_the_dim(void) {
  check_cpu_like_evaluator("HloModule cumsum_long\n\n" SUM_F32
                           "ENTRY main {\n  x = f32[50] parameter(0)\n  z = f32[] constant(0)\n"
                           "  ROOT r = f32[50] reduce-window(x, z), window={size=64 pad=63_0}, to_apply=add\n}\n",
                           (const char *const[]){"native r reduce-window", NULL});
}

/* Scanning a major dim: the inner dims vectorise; max keeps NaN as the evaluator does. */
static void test_cummax_over_a_major_dim(void) {
  check_cpu_like_evaluator(
      "HloModule cummax\n\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n\n"
      "ENTRY main {\n  x = f32[20,3,7] parameter(0)\n  z = f32[] constant(-inf)\n"
      "  ROOT r = f32[20,3,7] reduce-window(x, z), window={size=20x1x1 pad=19_0x0_0x0_0}, to_apply=mx\n}\n",
      (const char *const[]){"native r reduce-window", NULL});
}

static void test_integer_cumprod_wraps_like_the_evaluator(void) {
  check_cpu_like_evaluator(
      "HloModule cumprod\n\nml {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT m = s32[] multiply(a, b)\n}\n\n"
      "ENTRY main {\n  x = s32[4,40] parameter(0)\n  one = s32[] constant(1)\n"
      "  ROOT r = s32[4,40] reduce-window(x, one), window={size=1x40 pad=0_0x39_0}, to_apply=ml\n}\n",
      (const char *const[]){"native r reduce-window", NULL});
}

static void test_reversed_cumsum_is_not_a_scan(void) {
  check_cpu_like_evaluator("HloModule rcumsum\n\n" SUM_F32
                           "ENTRY main {\n  x = f32[3,50] parameter(0)\n  z = f32[] constant(0)\n"
                           "  ROOT r = f32[3,50] reduce-window(x, z), window={size=1x50 pad=0_0x0_49}, to_apply=add\n}\n",
                           (const char *const[]){"kernel r reduce-window", "!native", NULL});
}

/* Start indices are clamped so the window fits; the update is copied in runs. */
static void test_update_slice_clamps_its_start_indices(void) {
  check_cpu_like_evaluator("HloModule dus\n\n"
                           "ENTRY main {\n  x = u8[6,5,8] parameter(0)\n  u = u8[2,5,8] parameter(1)\n"
                           "  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n  z = s32[] constant(0)\n"
                           "  x2 = u8[6,5,8] add(x, x)\n"
                           "  ROOT r = u8[6,5,8] dynamic-update-slice(x2, u, i, j, z)\n}\n",
                           (const char *const[]){"native r dynamic-update-slice", NULL});
}

/* A window narrower than the inner dims: one run per (row, middle) position. */
static void test_update_slice_of_a_strided_window(void) {
  check_cpu_like_evaluator("HloModule dus2\n\n"
                           "ENTRY main {\n  x = f32[4,6,9] parameter(0)\n  u = f32[2,3,4] parameter(1)\n"
                           "  i = s64[] parameter(2)\n  m = s64[] constant(3)\n  i3 = s64[] and(i, m)\n"
                           "  ROOT r = f32[4,6,9] dynamic-update-slice(x, u, i3, i3, i3)\n}\n",
                           (const char *const[]){"native r dynamic-update-slice", NULL});
}

/* Whole rows out of a bf16 matrix at a pseudo-random (so mostly clamped) row index. */
static void test_dynamic_slice_of_rows_clamps_its_start(void) {
  check_cpu_like_evaluator("HloModule ds\n\n"
                           "ENTRY main {\n  x = bf16[8,64] parameter(0)\n  i = s32[] parameter(1)\n"
                           "  z = s32[] constant(0)\n"
                           "  ROOT r = bf16[3,64] dynamic-slice(x, i, z), dynamic_slice_sizes={3,64}\n}\n",
                           (const char *const[]){"native r dynamic-slice", NULL});
}

/* A window narrower than the inner dims: one memcpy per (outer, middle) position, with
 * in-range starts too (the index masked to 0..3). */
static void test_dynamic_slice_of_a_strided_window(void) {
  check_cpu_like_evaluator("HloModule ds2\n\n"
                           "ENTRY main {\n  x = f32[4,6,40] parameter(0)\n  i = s64[] parameter(1)\n"
                           "  m = s64[] constant(3)\n  i3 = s64[] and(i, m)\n"
                           "  ROOT r = f32[2,3,20] dynamic-slice(x, i3, i3, i3), dynamic_slice_sizes={2,3,20}\n}\n",
                           (const char *const[]){"native r dynamic-slice", NULL});
}

/* Rows of 3 elements: the kernel copies them faster than a native call would. */
static void test_dynamic_slice_of_short_rows_stays_a_kernel(void) {
  check_cpu_like_evaluator("HloModule ds3\n\n"
                           "ENTRY main {\n  x = f32[20,3] parameter(0)\n  i = s32[] parameter(1)\n"
                           "  z = s32[] constant(0)\n"
                           "  ROOT r = f32[1,3] dynamic-slice(x, i, z), dynamic_slice_sizes={1,3}\n}\n",
                           (const char *const[]){"kernel r dynamic-slice", "!native", NULL});
}

TEST_MAIN(TEST(test_cumsum_over_the_minor_dim_is_a_running_fold), TEST(test_cumsum_with_a_window_longer_than_the_dim),
          TEST(test_cummax_over_a_major_dim), TEST(test_integer_cumprod_wraps_like_the_evaluator),
          TEST(test_reversed_cumsum_is_not_a_scan), TEST(test_update_slice_clamps_its_start_indices),
          TEST(test_update_slice_of_a_strided_window), TEST(test_dynamic_slice_of_rows_clamps_its_start),
          TEST(test_dynamic_slice_of_a_strided_window), TEST(test_dynamic_slice_of_short_rows_stays_a_kernel))
