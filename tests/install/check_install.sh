#!/usr/bin/env bash
# usage: check_install.sh BUILD_DIR SOURCE_DIR LIBDIR PYTHON CC [FLAG...]
# Installs BUILD_DIR into a temporary prefix (cmake --install), checks the layout, then
# builds examples/c against the installed tree only, four ways: pkg-config (libkiln.so),
# pkg-config --static (libkiln.a), CMake find_package(kiln) with kiln::kiln and with
# kiln::kiln_static. Each program classifies one image with one model (both written by
# install_case.py: a small random-weight ONNX convnet and a PPM) and must print the top
# classes and probabilities that the installed `kiln run` gives for the same input.
# LIBDIR is CMAKE_INSTALL_LIBDIR; FLAGs (a sanitized build's -fsanitize=...) are added to
# every compile and link, since an instrumented libkiln needs its runtime in the program.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
libdir="$3"
python="$4"
cc="$5"
shift 5
extra=("$@")
here="$src/tests/install"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "cmake --install"; }
major=$(sed -n 's/^#define KILN_VERSION_MAJOR *\([0-9]*\).*/\1/p' "$src/include/kiln/kiln.h")
for f in include/kiln/kiln.h include/kiln/plugin.h include/kiln/plugin_v1.h bin/kiln \
         "$libdir/libkiln.so" "$libdir/libkiln.so.$major" "$libdir/libkiln.a" \
         "$libdir/pkgconfig/kiln.pc" "$libdir/cmake/kiln/kilnConfig.cmake" \
         "$libdir/cmake/kiln/kilnConfigVersion.cmake" \
         "$libdir/kiln/plugins/example.kiln-plugin.json" "$libdir/kiln/plugins/libkiln_example.so"; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
[ -L "$prefix/$libdir/libkiln.so" ] || fail "$libdir/libkiln.so is not a symlink"
# The installed tool finds the installed plugin through KILN_PLUGIN_PATH.
KILN_PLUGIN_PATH="$prefix/$libdir/kiln/plugins" "$prefix/bin/kiln" devices >"$tmp/devices.txt" 2>&1 ||
  { cat "$tmp/devices.txt" >&2; fail "installed kiln devices"; }
grep -q '^ *example\b' "$tmp/devices.txt" || { cat "$tmp/devices.txt" >&2; fail "installed plugin not listed by kiln devices"; }

step "model, image and the installed CLI's answer"
case="$tmp/case"
mkdir -p "$case"
"$python" "$here/install_case.py" make "$case"
"$prefix/bin/kiln" run "$case/model.onnx" -i "input=$case/input.npy" -o "$case/ref" >"$tmp/cli.log" 2>&1 ||
  { cat "$tmp/cli.log" >&2; fail "kiln run"; }
"$python" "$here/install_case.py" top "$case/ref/logits.npy" 5 >"$case/expected.txt"
cat "$case/expected.txt"

# The example is copied out of the source tree: nothing of the build or source tree is on
# any include or library path below.
cp -r "$src/examples/c" "$tmp/example"
cd "$tmp/example"
rm -rf build classify classify-static

# run_and_compare LABEL PROGRAM [ENV...]: PROGRAM must resolve libkiln (when it needs it)
# inside the prefix and print the CLI's top classes.
run_and_compare() {
  local label="$1" prog="$2"
  shift 2
  if readelf -d "$prog" | grep -q 'NEEDED.*libkiln'; then
    local where
    where=$(env "$@" ldd "$prog" | awk '/libkiln\.so/ { print $3 }')
    case "$where" in
      "$prefix"/*) ;;
      *) fail "$label: libkiln resolves to '$where', not inside $prefix" ;;
    esac
  fi
  env "$@" "$prog" "$case/model.onnx" "$case/image.ppm" >"$tmp/$label.txt" 2>"$tmp/$label.err" ||
    { cat "$tmp/$label.err" >&2; fail "$label: classify failed"; }
  "$python" "$here/install_case.py" compare "$case/expected.txt" "$tmp/$label.txt" "$label"
}

export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
[ "$(pkg-config --modversion kiln)" = "$(sed -n 's/^Version: //p' "$prefix/$libdir/pkgconfig/kiln.pc")" ] || fail "pkg-config kiln"
incdir=$(pkg-config --variable=includedir kiln)
[ "$(cd "$incdir" && pwd -P)" = "$(cd "$prefix/include" && pwd -P)" ] || fail "kiln.pc includedir $incdir is not $prefix/include"
cflags=(-std=c99 -O1 -Wall -Wextra -Werror "${extra[@]}")

step "pkg-config: libkiln.so"
# shellcheck disable=SC2046
"$cc" "${cflags[@]}" -o classify classify.c $(pkg-config --cflags --libs kiln) -lm
readelf -d classify | grep -q "NEEDED.*libkiln.so.$major\]" || fail "pkg-config build does not need libkiln.so.$major"
run_and_compare pkg-config-shared ./classify LD_LIBRARY_PATH="$prefix/$libdir"

step "pkg-config --static: libkiln.a"
static_libs=$(pkg-config --static --libs kiln | sed 's/-lkiln\b/-l:libkiln.a/')
# shellcheck disable=SC2046,SC2086
"$cc" "${cflags[@]}" -o classify-static classify.c $(pkg-config --cflags kiln) $static_libs -lm
! readelf -d classify-static | grep -q 'NEEDED.*libkiln' || fail "static build still needs libkiln.so"
run_and_compare pkg-config-static ./classify-static

for variant in shared static; do
  step "CMake find_package(kiln): kiln::kiln$([ $variant = static ] && echo _static)"
  bdir="$tmp/example/build-$variant"
  flags="${extra[*]}"
  cmake -S . -B "$bdir" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="-Wall -Werror $flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
        -DCLASSIFY_STATIC=$([ $variant = static ] && echo ON || echo OFF) >"$tmp/cmake-$variant.log" 2>&1 ||
    { cat "$tmp/cmake-$variant.log" >&2; fail "cmake configure ($variant)"; }
  found=$(sed -n 's/^kiln_DIR:PATH=//p' "$bdir/CMakeCache.txt")
  [ "$(cd "$found" && pwd -P)" = "$(cd "$prefix/$libdir/cmake/kiln" && pwd -P)" ] || fail "find_package(kiln) found $found"
  cmake --build "$bdir" >"$tmp/build-$variant.log" 2>&1 || { cat "$tmp/build-$variant.log" >&2; fail "cmake build ($variant)"; }
  if [ $variant = shared ]; then
    readelf -d "$bdir/classify" | grep -q "NEEDED.*libkiln.so.$major\]" || fail "kiln::kiln build does not need libkiln.so.$major"
  else
    ! readelf -d "$bdir/classify" | grep -q 'NEEDED.*libkiln' || fail "kiln::kiln_static build needs libkiln.so"
  fi
  run_and_compare "cmake-$variant" "$bdir/classify"   # the shared one through its RUNPATH
done
echo "install tree, pkg-config and CMake consumers: OK"
