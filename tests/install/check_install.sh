#!/usr/bin/env bash
# ctest `install_consumer`: fusert consumed as an application consumes it. Installs the build
# into a fresh temporary prefix, checks that the installed headers are the public API alone
# (fusert/*.h, each compiling with nothing but the prefix on the include path), then builds
# examples/classify against the install twice: with CMake (find_package(fusert CONFIG REQUIRED),
# fusert::fusert) and with pkg-config; both binaries classify the bundled photo, whose top-1
# must be PyTorch's reference label (espresso, tests/models/test_zoo.cc).
#   check_install.sh <build dir> <source dir> <cmake>
set -euo pipefail
build=$1 src=$2 cmake=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/fusert-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_consumer: FAIL: $*" >&2; exit 1; }

echo "[install] $cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
ls "$prefix"/lib*/libfusert.so >/dev/null || fail "no libfusert.so under $prefix/lib*"
config=$(find "$prefix" -name fusertConfig.cmake | head -n1)
pc=$(find "$prefix" -name fusert.pc | head -n1)
[ -n "$config" ] || fail "no fusertConfig.cmake installed"
[ -n "$pc" ] || fail "no fusert.pc installed"

# The installed headers: only include/fusert/*.h, none including a header of the source tree.
others=$(cd "$prefix/include" && find . -type f ! -path './fusert/*.h')
[ -z "$others" ] || fail "headers outside include/fusert: $others"
if grep -nE '#include "(graph|runtime|kernels|apps)/' "$prefix"/include/fusert/*.h; then
  fail "an installed header includes an internal one"
fi
for h in "$prefix"/include/fusert/*.h; do
  echo "#include <fusert/$(basename "$h")>" | g++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only \
    -I"$prefix/include" -x c++ - || fail "fusert/$(basename "$h") does not compile on its own"
done
# The exported symbols: the public API only (the private constructor taking the pimpl aside).
lib=$(ls "$prefix"/lib*/libfusert.so | head -n1)
# (Instantiations of std templates over public types, e.g. std::map<std::string, Tensor>, are
# std:: symbols, weak, and filtered out.)
leaked=$(nm -DC --defined-only "$lib" | cut -d' ' -f3- | grep -E '^fusert::' | grep -vE '^[^(<]* std::' |
  grep -vE '^fusert::(Session|Tensor|Status)::' |
  grep -vE '^fusert::(status_code_name|dtype_name|parse_dtype|dtype_size|shape_numel|checked_numel|shape_str|relative_l2|max_abs_diff|version|devices)(\[abi:cxx11\])?\(' || true)
[ -z "$leaked" ] || fail "libfusert.so exports internals:
$(echo "$leaked" | head -n 20)"
echo "[install] libfusert.so exports $(nm -DC --defined-only "$lib" | cut -d' ' -f3- | grep -c '^fusert::') fusert symbols, all of the public API"
echo "[install] $(ls "$prefix"/include/fusert | tr '\n' ' ')- each compiles alone against the prefix"

check_run() {  # <label> <binary>
  "$2" "$src/models/efficientnet_lite0.yaml" "$src/models/data/coffee.png" --runs 3 >"$work/$1.out" 2>&1 ||
    { cat "$work/$1.out"; fail "$1: classify exited non-zero"; }
  cat "$work/$1.out"
  grep -qE '^  1\. espresso +0\.9[0-9]+ \(class 967\)' "$work/$1.out" || fail "$1: top-1 is not espresso (class 967)"
  grep -qE '^latency: warm median [0-9.]+ ms over 3 runs .*first run \(cold\)' "$work/$1.out" ||
    fail "$1: no warm latency line"
  # A bad image is an error naming the file, exit 1.
  if "$2" "$src/models/efficientnet_lite0.yaml" "$src/README.md" >"$work/$1.bad" 2>&1; then
    fail "$1: a non-image input succeeded"
  fi
  grep -q "README.md" "$work/$1.bad" || fail "$1: the error does not name the file: $(cat "$work/$1.bad")"
}

echo "[install] CMake consumer: examples/classify with -DCMAKE_PREFIX_PATH=$prefix"
"$cmake" -S "$src/examples/classify" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
"$cmake" --build "$work/cmake-build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
grep -q "$prefix" "$work/cmake-build/CMakeCache.txt" || fail "fusert_DIR is not the temporary prefix"
check_run cmake "$work/cmake-build/classify"

echo "[install] pkg-config consumer: g++ main.cc \$(pkg-config --cflags --libs fusert)"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs fusert) || fail "pkg-config fusert"
echo "  flags: $flags"
# shellcheck disable=SC2086
g++ -O2 "$src/examples/classify/main.cc" $flags -o "$work/classify-pc" || fail "pkg-config build"
check_run pkg-config "$work/classify-pc"
echo "[install] passed"
