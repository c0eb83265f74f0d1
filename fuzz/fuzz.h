/* fuzz/fuzz.h: helpers shared by the libFuzzer targets of fuzz/: a scratch
 * folder per process and plain (un-synced) file writes. Not part of the tool. */
#ifndef FUZZ_FUZZ_H
#define FUZZ_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The process's scratch folder ($TMPDIR or /tmp, made once; a static string).
 * Aborts when it cannot be made: a fuzzer without its folder is useless. */
static inline const char *fuzz_dir(void)
{
	static char dir[512];
	if (!dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/opreview-fuzz-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir)) {
			perror("fuzz: mkdtemp");
			abort();
		}
	}
	return dir;
}

/* Writes len bytes to dir/name (no fsync: speed over durability here). */
static inline void fuzz_write(const char *name, const void *data, size_t len)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) {
		perror(path);
		abort();
	}
}

/* Copies the file src into the scratch folder as name. */
static inline void fuzz_copy(const char *src, const char *name)
{
	static char buf[1 << 16];
	FILE *f = fopen(src, "rb");
	if (!f) {
		perror(src);
		abort();
	}
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	fuzz_write(name, buf, n);
}

#endif
