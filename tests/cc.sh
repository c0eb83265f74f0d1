#!/bin/sh
# tests/cc.sh OUT FILE.c...: compiles and links a few files with the project's
# flags (for working on one module without building the others).
out=$1; shift
exec ${CC:-cc} -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow \
  -Wstrict-prototypes -Wmissing-prototypes -Werror -Wno-format-truncation -ffp-contract=off \
  -O2 -g $CCFLAGS $(pkg-config --cflags papi libfyaml jansson libcmark-gfm xlsxwriter libsodium) \
  -o "$out" "$@" $(pkg-config --libs papi libfyaml jansson libcmark-gfm xlsxwriter libsodium) \
  -lsde -lcmocka -lm -lpthread $CCLIBS
